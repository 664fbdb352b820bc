"""The ranges of the ``haystack`` options that set threads, counts and sizes, checked by every command at
start with the thread variables (``DPR_*_THREADS``), before anything heavy loads (docs/threads.md, "Bounds").

Options are parsed with :func:`option_number`, so a value that is not a whole number reaches the same
check as one out of range and gets the same one-line message."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from dpr_components.encoders.backend_choice import env_backend
from dpr_components.index_runs.shard_spec import MAX_SHARDS
from dpr_components.utils.input_files import hard_links_allowed
from dpr_components.utils.knobs import Bound, check_option, whole_number
from dpr_components.utils.threads import QUERY_THREADS_ENV, check_thread_variables, thread_bound, usable_cores

MAX_TOP_K_OPTION = 10_000  # results or passages per question; FAISS allocates top_k slots per query
MAX_QUESTIONS = 10_000_000  # --limit: more questions than any question set holds
MAX_BODY_BYTES_LIMIT = 1 << 30  # a body is held in memory and parsed to several times its size
MAX_BATCH_PASSAGES = 100_000  # passages per write: each batch is held in memory with its vectors
MAX_RETRIES_LIMIT = 100  # retries of a shard task: each one is a whole shard encoded again
RUNS_PER_CORE = 8  # more runs at once than this only wait longer for the same cores
PORT_BOUND = Bound(1, 65_535)
BODY_BOUND = Bound(1, MAX_BODY_BYTES_LIMIT, "1 GiB")


def concurrent_runs_bound() -> Bound:
    """``--concurrent-runs``: 1 to ``RUNS_PER_CORE`` per usable core."""
    return Bound(1, RUNS_PER_CORE * usable_cores(), f"{RUNS_PER_CORE} per usable core")


def _ray_bound(local: Callable[[], Bound], cluster: Bound) -> Callable[[argparse.Namespace], Bound]:
    """A bound of ``index-ray``: this machine's with no ``--address`` (Ray starts here), else the cluster's."""
    return lambda args: local() if getattr(args, "address", None) is None else cluster


# dest -> (option, its bound for these arguments)
OPTION_BOUNDS: dict[str, tuple[str, Callable[[argparse.Namespace], Bound]]] = {
    "top_k": ("--top-k", lambda _: Bound(1, MAX_TOP_K_OPTION)),
    "limit": ("--limit", lambda _: Bound(1, MAX_QUESTIONS)),
    "port": ("--port", lambda _: PORT_BOUND),
    "max_body_bytes": ("--max-body-bytes", lambda _: BODY_BOUND),
    "max_upload_bytes": ("--max-upload-bytes", lambda _: BODY_BOUND),
    "query_threads": ("--query-threads", lambda _: thread_bound()),
    "concurrent_runs": ("--concurrent-runs", lambda _: concurrent_runs_bound()),
    "batch_size": ("--batch-size", lambda _: Bound(1, MAX_BATCH_PASSAGES)),
    "shards": ("--shards", lambda _: Bound(1, MAX_SHARDS)),
    "workers": ("--workers", _ray_bound(thread_bound, Bound(1, MAX_SHARDS))),
    "threads": ("--threads", _ray_bound(thread_bound, Bound(1, 1_024, "CPUs per task"))),
    "max_retries": ("--max-retries", lambda _: Bound(0, MAX_RETRIES_LIMIT)),
    "max_passages": ("--max-passages", lambda _: Bound(1, MAX_QUESTIONS)),
}
# options that stand for a thread variable: the variable is checked as the option sets it
THREAD_OPTIONS = {"query_threads": QUERY_THREADS_ENV}
UNCHECKED_COMMANDS = frozenset({"export-st", "export-qa"})


def option_number(text: str) -> int | str:
    """argparse ``type`` of a bounded option: an int when ``text`` is a whole number, else the text,
    refused with the others by :func:`check_settings`."""
    number = whole_number(text)
    return text if number is None else number


def check_settings(args: argparse.Namespace) -> None:
    """Check every bounded option of ``args`` (replacing its value by the int) and the thread variables;
    a one-line ``ValueError`` names the first one out of range."""
    if getattr(args, "command", None) in UNCHECKED_COMMANDS:
        return
    for dest, (option, bound) in OPTION_BOUNDS.items():
        value = getattr(args, dest, None)
        if value is not None:
            setattr(args, dest, check_option(option, value, bound(args)))
    given = {THREAD_OPTIONS[dest]: str(getattr(args, dest)) for dest in THREAD_OPTIONS if getattr(args, dest, None)}
    check_thread_variables({**os.environ, **given})
    hard_links_allowed()  # DPR_INPUT_HARD_LINKS: 'allow' or 'refuse'; a typo is refused now, not at the first request
    env_backend()  # DPR_ENCODE_BACKEND: likewise, not at the first encoding
