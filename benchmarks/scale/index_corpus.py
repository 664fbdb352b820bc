"""``haystack run index`` end to end on a corpus of N passages made from the pool.

From the corpus file to a searchable store: reading, splitting, encoding, writing and the index builds,
as a user runs it (the packaged ``index`` pipeline, a fresh store and a fresh vector cache). Reports
passages per second, the streamed pass (reading, splitting, encoding, writing: the run's ``Indexing`` bar)
and the BM25 build (its bar), the peak memory of the process, and what DPR's 21M passages would take at
that rate. Beyond the pool's 55,350 passages the
corpus repeats them with the copy number in the title, so that no vector comes from the cache.

``--kill-after S`` kills the run (SIGKILL) after S seconds and starts the same command again: the
second run must encode only what the first had not cached. ``--continue`` starts from the vector cache
an earlier measurement of the same corpus left (its store is still new): the run then measures reading,
writing and the index builds at that size, and its row gives no rate.

One run per call, written to ``--out`` (JSON); ``--report RUN.json ...`` renders the runs as
docs/benchmarks/scale/index_corpus.md.

    python -m benchmarks.scale.index_corpus --passages 55350 --out docs/benchmarks/scale/index_corpus_runs/pool.json
    python -m benchmarks.scale.index_corpus --report docs/benchmarks/scale/index_corpus_runs/*.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import command_line, cpu_name, log, write_report
from benchmarks.encoding.backends import AVX2_ENVIRONMENT, DPR_WIKIPEDIA_PASSAGES
from dpr_components.evaluation.pool import pool_passages
from dpr_components.evaluation.tables import markdown_table
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.settings import cache_dir

MODULE = "benchmarks.scale.index_corpus"
BAR_DONE = re.compile(
    r"(?P<name>Indexing|Encoding passages|BM25 index): +100%\|[^|]*\| *(?P<done>\d+)/\d+ \[(?P<elapsed>[\d:]+)<"
)


def corpus_records(passages: int) -> Iterator[dict[str, str]]:
    """``passages`` records of one pool passage each: the pool in order, then again with ``(copy n)`` titles."""
    pool = pool_passages()
    for number in range(passages):
        copy, passage = divmod(number, len(pool))
        title = pool[passage].title or ""
        if copy:
            title = f"{title} (copy {copy + 1})"
        yield {"id": f"pool-{copy}-{passage}", "title": title, "text": pool[passage].text}


def corpus_file(passages: int, folder: Path) -> Path:
    """The corpus of ``passages`` records in ``folder`` (written once, reused after)."""
    path = folder / f"corpus-{passages}.jsonl"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, "".join(json.dumps(record) + "\n" for record in corpus_records(passages)))
    return path


def elapsed_seconds(text: str) -> int:
    """tqdm's ``[H:]MM:SS`` as seconds."""
    seconds = 0
    for part in text.split(":"):
        seconds = seconds * 60 + int(part)
    return seconds


def finished_bars(progress: str) -> dict[str, dict[str, int]]:
    """Each finished progress bar of a run's error stream: its count and elapsed seconds (the last of each name)."""
    bars = {}
    for line in re.split(r"[\r\n]", progress):
        match = BAR_DONE.search(line)
        if match:
            bars[match["name"]] = {"count": int(match["done"]), "seconds": elapsed_seconds(match["elapsed"])}
    return bars


def cached_vectors(cache: Path) -> int:
    """Vectors in the cache folder's files (0 when there are none yet)."""
    total = 0
    for path in cache.glob("*.sqlite"):
        with sqlite3.connect(path) as db:
            total += int(db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
    return total


def run_index(command: list[str], log_file: Path, env: dict[str, str], kill_after: float | None) -> dict[str, Any]:
    """Run ``command``: wall seconds, peak memory (MiB), exit status, its output, and whether it was killed."""
    with open(log_file, "w", encoding="utf-8") as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
        timer = threading.Timer(kill_after, process.send_signal, (signal.SIGKILL,)) if kill_after else None
        if timer:
            timer.start()
        output = process.stdout.read() if process.stdout else ""
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        if timer:
            timer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "seconds": round(seconds, 1),
        "peak_mib": round(usage.ru_maxrss / 1024),  # kilobytes on Linux
        "exit": process.returncode,
        "killed": process.returncode == -signal.SIGKILL,
        "output": output.strip().splitlines()[-3:],
        "bars": finished_bars(log_file.read_text(encoding="utf-8", errors="replace")),
    }


def measure(passages: int, work: Path, isa: str, kill_after: float | None, resume: bool = False) -> dict[str, Any]:
    """Index a corpus of ``passages`` into a fresh store under ``work`` (killed once and resumed when asked;
    from the vector cache of an earlier measurement with ``resume``)."""
    corpus = corpus_file(passages, work / "corpus")
    store, cache = work / f"store-{passages}-{isa}", work / f"vectors-{passages}-{isa}"
    for folder in (store,) if resume else (store, cache):
        if folder.exists():
            raise SystemExit(f"{folder} exists: remove it, the benchmark starts from nothing")
    cached_before = cached_vectors(cache) if resume else 0
    if resume and not cached_before:
        raise SystemExit(f"--continue: {cache} holds no vectors of an earlier measurement")
    haystack = str(Path(sys.executable).with_name("haystack"))
    command = [haystack, "run", "index", "--input", f"path={corpus}", "--set", f"writer.document_store.path={store}"]
    command += ["--set", f"embedder.cache_dir={cache}"]
    env = {**os.environ, **(AVX2_ENVIRONMENT if isa == "avx2" else {})}
    runs = []
    for attempt, limit in enumerate((kill_after, None) if kill_after else (None,)):
        log(f"run {attempt + 1}: {' '.join(command)}")
        run = run_index(command, work / f"index-{passages}-{isa}-{attempt + 1}.log", env, limit)
        run["vectors_cached_after"] = cached_vectors(cache)
        runs.append(run)
        log(
            f"run {attempt + 1}: {run['seconds']} s, exit {run['exit']}, {run['vectors_cached_after']:,} vectors cached"
        )
    return {
        "passages": passages,
        "cached_before": cached_before,
        "completed": runs[-1]["exit"] == 0,
        "isa": isa,
        "runs": runs,
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count()},
    }


def summary_row(result: dict[str, Any]) -> list[str]:
    """A table row: passages, runs, seconds, rate, phases, peak memory, 21M estimate (rates only for a
    completed run)."""
    runs = result["runs"]
    peak = f"{max(run['peak_mib'] for run in runs):,}"
    if not result.get("completed", True):  # runs recorded before failures were kept had all completed
        seconds = sum(run["seconds"] for run in runs)
        failed = f"failed: exit {runs[-1]['exit']} after {seconds:,.0f} s in all"
        return [f"{result['passages']:,}", result["isa"], failed, "–", "–", "–", "–", "–", peak, "–"]
    seconds = sum(run["seconds"] for run in runs)
    streamed = sum(run["bars"].get("Indexing", {}).get("seconds", 0) for run in runs)
    # runs made before the corpus was streamed have the encoder's bar instead of the run's
    encoding = sum(run["bars"].get("Encoding passages", {}).get("seconds", 0) for run in runs)
    bm25 = sum(run["bars"].get("BM25 index", {}).get("seconds", 0) for run in runs)
    cached = result.get("cached_before", 0)
    if cached:
        how = f"from {cached:,} cached vectors"
    else:
        how = "one run" if len(runs) == 1 else f"killed at {runs[0]['seconds']:,.0f} s, resumed"
    rate = None if cached else result["passages"] / seconds
    return [
        f"{result['passages']:,}",
        result["isa"],
        how,
        f"{seconds:,.0f} ({seconds / 60:.1f} min)",
        "–" if rate is None else f"{rate:.1f}",
        f"{streamed:,}" if streamed or not encoding else f"encoding only: {encoding:,}",
        f"{bm25:,}",
        f"{seconds - (streamed or encoding) - bm25:,.0f}",
        peak,
        "–" if rate is None else f"{DPR_WIKIPEDIA_PASSAGES / rate / 3600:.0f} h",
    ]


def resume_line(result: dict[str, Any]) -> str:
    """What the resumed run of a killed one did: vectors it found cached, passages it encoded."""
    first, second = result["runs"][0], result["runs"][1]
    encoded = second["vectors_cached_after"] - first["vectors_cached_after"]
    return (
        f"- {result['passages']:,} passages: the first run was killed after {first['seconds']:,.0f} s with "
        f"{first['vectors_cached_after']:,} vectors cached; the second run encoded the other {encoded:,} "
        f"passages in {second['seconds']:,.0f} s and wrote {written(second):,} passages to the store."
    )


def written(run: dict[str, Any]) -> int:
    """The passages a finished run wrote (its ``writer.documents_written`` line; 0 without one)."""
    for line in run["output"]:
        name, _, value = line.partition(":")
        if name.strip() == "writer.documents_written":
            return int(value)
    return 0


def render(results: Sequence[dict[str, Any]], command: str) -> str:
    header = [
        "run",
        "passages",
        "instruction set",
        "runs",
        "seconds in all",
        "passages/s",
        "streamed pass (s)",
        "BM25 index (s)",
        "the rest (s)",
        "peak memory (MiB)",
        "21M passages",
    ]
    resumes = [resume_line(result) for result in results if len(result["runs"]) > 1 and result.get("completed", True)]
    values = {
        "table": "\n".join(
            markdown_table(header, [[r.get("file", ""), *summary_row(r)] for r in results], align="lrllrrrrrrr")
        ),
        "cpu": results[0]["machine"]["cpu"] if results else "unknown",
        "cores": results[0]["machine"]["cores"] if results else 0,
        "resumes": "\n".join(resumes) or "- No run was interrupted.",
        "runs": "\n".join(f"    {result['command']}" for result in results),
        "command": command,
    }
    return fill_template(sibling_template(__file__, "index_corpus.md.template"), values)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=55_350, help="passages in the corpus")
    parser.add_argument("--isa", choices=["native", "avx2"], default="native", help="limit oneDNN and MKL to AVX2")
    parser.add_argument("--kill-after", type=float, help="kill the first run after this many seconds, then resume")
    parser.add_argument(
        "--continue",
        dest="resume",
        action="store_true",
        help="start from the vector cache an earlier measurement of this corpus left (the store is still new)",
    )
    parser.add_argument("--work", type=Path, default=None, help="corpus, stores and caches (default: the cache folder)")
    parser.add_argument("--out", type=Path, help="the run's JSON file")
    parser.add_argument("--report", type=Path, nargs="+", help="render these runs' JSON files instead of measuring")
    parser.add_argument("--report-out", type=Path, default=Path("docs/benchmarks/scale/index_corpus"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    command = command_line(MODULE, argv)
    if args.report:
        # Each row is named by its file, so that runs of one command on different hours stay apart.
        results = [{**json.loads(path.read_text(encoding="utf-8")), "file": path.stem} for path in args.report]
        markdown = render(results, command)
        write_report(args.report_out, {"runs": results, "command": command}, markdown)
        print(markdown)
        return 0
    if args.out is None:
        raise SystemExit("give --out RUN.json (or --report RUN.json ... to render runs)")
    result = {
        **measure(args.passages, args.work or cache_dir() / "index_corpus", args.isa, args.kill_after, args.resume)
    }
    result["command"] = command
    atomic_write_text(args.out, json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}))
    return 0 if result["completed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
