"""Thread counts that fit the work: few threads for a question, many for a batch of passages.

torch and FAISS both fan out over OpenMP. A question is a one-row product that gains little from
it, and on a busy machine (concurrent requests, other processes) the fan-out makes every question
wait for cores. So an encode of at most ``SMALL_BATCH`` texts and a search of at most ``SMALL_BATCH``
queries run on ``DPR_QUERY_THREADS`` threads (default 1); a larger encode runs on
``DPR_ENCODE_THREADS`` (default: the calling thread's torch count, unchanged). Reading one question's
passages (``SpanReader``, ``PassageRanker``) is a question's work too: ``DPR_READ_THREADS`` threads,
default the query count. The count is set for the calling thread around the call and restored after
it (docs/threads.md). Each variable takes a whole number from 1 to the usable cores; any other value
is refused on one line, by every command at start (``check_thread_variables``) and at each read.

Both libraries keep the setting per thread, which tests/utils/test_threads.py checks on the installed
builds: FAISS's ``omp_set_num_threads`` changes the calling thread's OpenMP setting only; torch's
``set_num_threads`` (OpenMP backend) changes the calling thread's OpenMP and MKL settings, and is
also the starting count of threads that run their first torch operation later: a thread whose
first torch work falls inside a question's encoding starts with the question's count (set
``DPR_ENCODE_THREADS`` to pin batch encoding). A torch build with another backend keeps one
process-wide count: there torch's setting is left alone.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from functools import cache

from dpr_components.utils.knobs import Bound, check_value, read_variable

QUERY_THREADS_ENV = "DPR_QUERY_THREADS"
ENCODE_THREADS_ENV = "DPR_ENCODE_THREADS"
READ_THREADS_ENV = "DPR_READ_THREADS"
THREAD_VARIABLES = (QUERY_THREADS_ENV, ENCODE_THREADS_ENV, READ_THREADS_ENV)
DEFAULT_QUERY_THREADS = 1
SMALL_BATCH = 8  # at most this many texts or queries count as a question's work
WAIT_POLICY_ENV = "OMP_WAIT_POLICY"
# the libraries that load OpenMP, which reads its wait policy once, when it is loaded
OPENMP_MODULES = ("torch", "faiss")


def thread_bound() -> Bound:
    """The thread counts a setting may take: 1 to the usable cores. More threads than cores only take
    turns on them (10,000 read threads made every question 150 times slower), so more is refused."""
    return Bound(1, usable_cores(), "the usable cores")


def check_thread_count(label: str, value: object) -> int:
    """A thread count given as a setting or option (``label``: ``--threads`` or ``training setting 'threads'``),
    from 1 to the usable cores; a one-line ``ValueError`` otherwise."""
    return check_value(f"{label} {value!r}", value, thread_bound())


def thread_count_option(text: str) -> int:
    """``argparse`` type of a ``--threads`` option: the message of :func:`check_thread_count` as the usage error."""
    try:
        return check_thread_count("--threads", text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix(f"--threads {text!r}: ")) from None


def parse_threads(name: str, value: str | None) -> int | None:
    """``value`` (variable ``name``'s text) as a thread count from 1 to the usable cores, None when unset
    or empty; a one-line ``ValueError`` otherwise."""
    return read_variable(name, thread_bound(), {} if value is None else {name: value})


def check_thread_variables(environ: Mapping[str, str] = os.environ) -> None:
    """Refuse a bad ``DPR_QUERY_THREADS``, ``DPR_ENCODE_THREADS`` or ``DPR_READ_THREADS`` now: every
    command calls this at start, before it loads a model, so a bad value never waits for the first
    batch large enough to read it."""
    for name in THREAD_VARIABLES:
        read_variable(name, thread_bound(), environ)


def query_threads() -> int:
    """Threads for a question's encoding and a single-query search: ``$DPR_QUERY_THREADS``, default 1."""
    return parse_threads(QUERY_THREADS_ENV, os.environ.get(QUERY_THREADS_ENV)) or DEFAULT_QUERY_THREADS


def encode_threads() -> int | None:
    """Threads for encoding a batch of passages: ``$DPR_ENCODE_THREADS``, None (torch's count) when unset."""
    return parse_threads(ENCODE_THREADS_ENV, os.environ.get(ENCODE_THREADS_ENV))


def read_threads() -> int:
    """Threads for reading one question's passages: ``$DPR_READ_THREADS``, default the query count."""
    return parse_threads(READ_THREADS_ENV, os.environ.get(READ_THREADS_ENV)) or query_threads()


def prefer_passive_waiting(
    environ: MutableMapping[str, str] = os.environ, loaded: Mapping[str, object] = sys.modules
) -> bool:
    """Let idle OpenMP threads sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``) unless the user
    chose a policy. OpenMP (GNU libgomp, under torch and FAISS) spins a thread for milliseconds after
    each parallel region by default; beside batch work in the same process (a training job in a
    server) those spinning threads take the core a question needs (docs/threads.md). Effective only
    before torch or FAISS is imported; returns whether the policy was set."""
    if WAIT_POLICY_ENV in environ or any(name in loaded for name in OPENMP_MODULES):
        return False
    environ[WAIT_POLICY_ENV] = "PASSIVE"
    return True


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it, else all of them)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def default_concurrent_runs() -> int:
    """Requests a server runs at once: as many as the cores hold at the query count of threads each.
    Running more at once only shares the same cores, so every request would finish late."""
    return max(1, usable_cores() // query_threads())


@cache
def torch_threads_per_thread() -> bool:
    """Whether this torch build keeps its intra-op count per thread (its OpenMP backend)."""
    import torch

    return "parallel backend: OpenMP" in torch.__config__.parallel_info()


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run the block with ``threads`` torch intra-op threads in the calling thread, then restore its
    count; None, an equal count or a build without per-thread counts changes nothing."""
    if threads is None or not torch_threads_per_thread():
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == threads:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextmanager
def faiss_threads(threads: int | None) -> Iterator[None]:
    """Run the block with ``threads`` FAISS OpenMP threads in the calling thread, then restore its count."""
    if threads is None:
        yield
        return
    import faiss

    before = faiss.omp_get_max_threads()
    if before == threads:
        yield
        return
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def encoding_threads(texts: int) -> int | None:
    """The torch count for encoding ``texts`` inputs: the query count for a small batch, else
    ``$DPR_ENCODE_THREADS`` (None, unchanged, when unset)."""
    return query_threads() if texts <= SMALL_BATCH else encode_threads()


def search_threads(queries: int) -> int | None:
    """The FAISS count for searching ``queries`` vectors: the query count for a few, else unchanged."""
    return query_threads() if queries <= SMALL_BATCH else None
