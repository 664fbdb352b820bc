"""One indexing process against two shard processes running at once, plus the merge.

    python -m benchmarks.sharding.sharding_benchmark [--limit 2000] [--precision fp32] [--work DIR]
    python -m benchmarks.sharding.sharding_benchmark --ray --limit 0   # the whole pool, on Ray

The first ``limit`` passages of the pool are written as a corpus (one 100-word passage a
document) and indexed with ``pipelines/index.yml`` (its passage encoder, no vector cache):
once by one process (2 torch threads, then 1), once by shards 1/2 and 2/2 started together
with 1 thread each, then merged with ``haystack merge-shards``. Wall times include starting
Python and loading the encoder, as a real run would. The merged store is compared with the
one-process store. Prints a Markdown table (docs/sharding.md quotes it).

With ``--ray`` (needs the ``ray`` extra) the corpus is indexed by one process on 2 threads,
then by ``haystack index-ray`` with 1 worker of 2 threads and with 2 workers of 1 thread (two
shards each time, merge included), and each Ray store is compared with the one-process store.
``--limit 0`` takes the whole pool."""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import REPO_ROOT
from dpr_components.evaluation.pool import pool_passages
from dpr_components.evaluation.tables import markdown_table
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

INDEX = str(REPO_ROOT / "pipelines" / "index.yml")
QUIET = ["--set", "embedder.cache_dir=null", "--set", "embedder.progress_bar=false"]


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "dpr_components.cli", *args]


def _environment(threads: int) -> dict[str, str]:
    return {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "TOKENIZERS_PARALLELISM": "false",
    }


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(commands: list[list[str]], threads: int) -> tuple[float, float]:
    """Start ``commands`` together; the wall time until the last one ends and their CPU time."""
    start, cpu = time.perf_counter(), _cpu_seconds()
    processes = [
        subprocess.Popen(c, cwd=REPO_ROOT, env=_environment(threads), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for c in commands
    ]
    for process, command in zip(processes, commands, strict=True):
        _, err = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{err.decode()}")
    return time.perf_counter() - start, _cpu_seconds() - cpu


def _compare(expected: Path, actual: Path) -> dict[str, object]:
    want, got = (
        EmbeddedDocumentStore(path=str(expected)).filter_documents(),
        EmbeddedDocumentStore(path=str(actual)).filter_documents(),
    )
    same_order = [d.id for d in want] == [d.id for d in got]
    same_text = [(d.content, d.meta) for d in want] == [(d.content, d.meta) for d in got]
    diff = (
        float(np.abs(np.array([d.embedding for d in want]) - np.array([d.embedding for d in got])).max())
        if same_order
        else None
    )
    return {
        "passages": len(got),
        "same_ids_in_order": same_order,
        "same_content_and_meta": same_text,
        "max_vector_difference": diff,
    }


def _write_corpus(path: Path, limit: int) -> int:
    """The first ``limit`` pool passages (all with 0) as a corpus file, one passage a document."""
    passages = pool_passages(limit or None)
    with open(path, "w", encoding="utf-8") as handle:
        for p in passages:
            handle.write(json.dumps({"id": f"{p.document_id}-{p.index}", "title": p.title, "text": p.text}) + "\n")
    return len(passages)


def _shard_times(index: list[str], work: Path) -> dict[str, tuple[float, float]]:
    """One process on 2 and on 1 thread, then 2 shard processes at once and their merge."""
    times = {
        "one process, 2 threads": _timed([_command(*index, "--store", str(work / "one"))], threads=2),
        "one process, 1 thread": _timed([_command(*index, "--store", str(work / "one_1t"))], threads=1),
        "2 shards at once, 1 thread each": _timed(
            [_command(*index, "--shard", f"{i}/2", "--shard-dir", str(work / "shards")) for i in (1, 2)], threads=1
        ),
    }
    times["merge (2 shards into one store)"] = _timed(
        [_command("merge-shards", INDEX, str(work / "shards"), "--store", str(work / "merged"))], threads=1
    )
    return times


def _ray_times(index: list[str], work: Path) -> dict[str, tuple[float, float]]:
    """One process on 2 threads, then ``index-ray`` (2 shards, merge included) with 1 and 2 workers."""
    times = {"one process, 2 threads": _timed([_command(*index, "--store", str(work / "one"))], threads=2)}
    for workers, threads in ((1, 2), (2, 1)):
        name = f"index-ray, {workers} worker(s) x {threads} thread(s)"
        ray = ["index-ray", *index[1:], "--shards", "2", "--shard-dir", str(work / f"ray{workers}-shards")]
        options = ["--workers", str(workers), "--threads", str(threads), "--store", str(work / f"ray{workers}")]
        wall, _ = _timed([_command(*ray, *options)], threads=threads)
        times[name] = (wall, float("nan"))  # Ray's workers are not this process's children: no CPU time
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=2000, help="pool passages to index (0: all of them)")
    parser.add_argument(
        "--precision", choices=["auto", "fp32", "bf16"], help="encoder precision (default: the pipeline's)"
    )
    parser.add_argument("--ray", action="store_true", help="compare index-ray with 1 and 2 workers instead")
    parser.add_argument("--work", help="working folder (default: a temporary one)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="sharding-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus.jsonl"
    count = _write_corpus(corpus, args.limit)
    precision = ["--set", f"embedder.precision={args.precision}"] if args.precision else []
    index = ["run", INDEX, "--input", f"path={corpus}", *QUIET, *precision]
    load = os.getloadavg()[0]
    times = _ray_times(index, work) if args.ray else _shard_times(index, work)
    checks = ["ray1", "ray2"] if args.ray else ["merged"]
    print(
        f"{count} passages, precision {args.precision or 'of the pipeline'}, load average before the runs {load:.1f}, "
        f"after {os.getloadavg()[0]:.1f}, on {os.cpu_count()} cores\n"
    )
    rows = [
        [name, f"{seconds:.1f}", f"{count / seconds:.0f}", "n/a" if math.isnan(cpu) else f"{cpu:.1f}"]
        for name, (seconds, cpu) in times.items()
    ]
    print("\n".join(markdown_table(["run", "wall time (s)", "passages/s", "CPU time (s)"], rows, "lrrr")))
    for folder in checks:
        print(f"\n{folder} store vs one process: {json.dumps(_compare(work / 'one', work / folder))}")


if __name__ == "__main__":
    main()
