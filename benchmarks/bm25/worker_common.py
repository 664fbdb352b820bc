"""Helpers shared by the benchmark workers. Standard library only: the Lucene worker runs
under the separate Pyserini virtual environment, which does not have the project installed."""

from __future__ import annotations

import json
import os
import resource
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

WARMUP_QUERIES = 100


def read_jsonl(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{line_number}: not valid JSON ({error})") from error


def rss_mb() -> float:
    """Current resident set size of this process in MiB."""
    return _status_kb("VmRSS") / 1024


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux ``VmHWM``)."""
    return _status_kb("VmHWM") / 1024


def children_peak_rss_mb() -> float:
    """Largest peak RSS among waited-for child processes, in MiB."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _status_kb(field: str) -> float:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return float(line.split()[1])
    raise RuntimeError(f"{field} not found in /proc/self/status")


def time_queries(
    questions: list[dict], search: Callable[[str], list[str]], repeats: int = 1
) -> tuple[dict[str, list[str]], list[float]]:
    """Run ``search`` on every question ``repeats`` times after an untimed warm-up; return the
    ranked ids (first pass) and the seconds each pass took."""
    for question in questions[:WARMUP_QUERIES]:
        search(question["question"])
    ranked: dict[str, list[str]] = {}
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for question in questions:
            ranked[question["qid"]] = search(question["question"])
        seconds.append(time.perf_counter() - start)
    return ranked, seconds


def write_json_atomic(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
