"""What every benchmark shares: the repository root, progress lines, timing, the machine's CPU,
thread settings, the command line a report names, and writing a report's JSON and markdown."""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from dpr_components.utils.atomic_files import atomic_write_text

REPO_ROOT = Path(__file__).resolve().parents[1]

T = TypeVar("T")


def log(message: str) -> None:
    """A progress line with the time of day."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def timed(action: Callable[[], T]) -> tuple[float, T]:
    """Seconds ``action`` took (``perf_counter``) and what it returned."""
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def latency_ms(seconds: Sequence[float]) -> dict[str, float]:
    """Median, 95th percentile (nearest rank) and mean of ``seconds``, in milliseconds."""
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * p95,
        "mean_ms": 1000 * statistics.fmean(ordered),
    }


def cpu_name() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (else what ``platform`` knows, else ``unknown``)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def set_threads(threads: int) -> None:
    """Use ``threads`` threads in FAISS and in torch (when torch is installed)."""
    import faiss

    faiss.omp_set_num_threads(threads)
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(threads)


def command_line(module: str, argv: Sequence[str]) -> str:
    """``python -m module ARGS``, the arguments quoted for a shell: the command a report names."""
    return f"python -m {module} {shlex.join(argv)}".rstrip()


def write_report(out: Path, summary: dict[str, Any], markdown: str) -> None:
    """``out``.json (``summary``, indented) and ``out``.md, each written atomically."""
    atomic_write_text(out.with_suffix(".json"), json.dumps(summary, indent=1) + "\n")
    atomic_write_text(out.with_suffix(".md"), markdown)


def json_worker(module: str, arguments: Sequence[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """``python -m module ARGUMENTS`` in a fresh process (``env``: its environment) from the repository root:
    the JSON of its last line of output; exits naming the module and the end of its standard error if it fails."""
    command = [sys.executable, "-m", module, *arguments]
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{module} {shlex.join(arguments)} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return dict(json.loads(lines[-1]))


def installed_versions(names: Sequence[str]) -> dict[str, str]:
    """The installed version of each distribution in ``names`` (those not installed left out)."""
    found = {}
    for name in names:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[name] = importlib.metadata.version(name)
    return found


def report_main(
    module: str,
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    measure: Callable[[argparse.Namespace], dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
    at_least_one: Sequence[str] = (),
) -> None:
    """The ``main`` of a benchmark writing one page at ``--out``: the options named in ``at_least_one`` checked,
    then ``measure`` (or, with ``--from-json``, the page's JSON read back), the command added, the page written
    and printed."""
    arguments = list(argv) if argv is not None else sys.argv[1:]
    args = parser.parse_args(arguments)
    for option in at_least_one:
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be at least 1")
    if args.from_json:
        summary = json.loads(args.out.with_suffix(".json").read_text(encoding="utf-8"))
    else:
        summary = {**measure(args), "command": command_line(module, arguments)}
    markdown = render(summary)
    write_report(args.out, summary, markdown)
    print(markdown)
