"""How long a cold ``haystack`` command takes against what it cannot avoid: importing Haystack and
answering the question once warm.

Each repeat starts fresh processes, one after the other: ``python -c "import haystack"``,
``haystack --help``, and the whole ``haystack run qa --store STORE -q QUESTION --top-k 1``. One more
process loads the pipeline, answers the question once to warm up, then times it again ``--warm``
times (the warm query). The target: a cold ``haystack run qa`` within 1.5 times the median import plus
the median warm query. Writes docs/benchmarks/cli/cold_start.md/json.

    python -m benchmarks.cli.cold_start --store indexes/example
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import command_line, cpu_name, write_report
from dpr_components.evaluation.templates import fill_template, sibling_template

QUESTION = "who wrote hamlet"
TARGET = 1.5
WARM = r"""
import sys, time, json
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.pipeline_requests.inputs import request_inputs
from dpr_components.pipeline_requests.running import run_pipeline
pipeline = load_pipeline("qa", store=sys.argv[1], require_stores=True)
inputs = request_inputs(pipeline, query=sys.argv[2], top_k=1)
run_pipeline(pipeline, inputs)
times = []
for _ in range(int(sys.argv[3])):
    start = time.perf_counter()
    run_pipeline(pipeline, inputs)
    times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


def wall_seconds(command: list[str]) -> float:
    """The wall time of one fresh process running ``command`` (which must succeed)."""
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=os.environ)
    return time.perf_counter() - start


def measure(store: str, repeats: int, warm: int) -> dict[str, Any]:
    """Per kind of cold process, its wall times over ``repeats`` (interleaved), and the warm query's."""
    haystack = str(Path(sys.executable).with_name("haystack"))
    commands = {
        "import haystack": [sys.executable, "-c", "import haystack"],
        "haystack --help": [haystack, "--help"],
        "haystack run qa": [haystack, "run", "qa", "--store", store, "-q", QUESTION, "--top-k", "1"],
    }
    cold: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            cold[name].append(round(wall_seconds(command), 3))
    done = subprocess.run(
        [sys.executable, "-c", WARM, store, QUESTION, str(warm)], check=True, capture_output=True, text=True
    )
    warm_times = [round(t, 4) for t in json.loads(done.stdout.strip().splitlines()[-1])]
    return {
        "cold": cold,
        "warm_query": warm_times,
        "store": store,
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count()},
    }


def report_values(summary: dict[str, Any]) -> dict[str, object]:
    """What the template shows: a row per cold process, the warm query, and the target's verdict."""
    cold, warm = summary["cold"], summary["warm_query"]
    rows = []
    for name, times in cold.items():
        rows.append(
            f"| `{name}` | {statistics.median(times):.2f} | {min(times):.2f} | {max(times):.2f} | {len(times)} |"
        )
    floor = statistics.median(cold["import haystack"]) + statistics.median(warm)
    ratio = statistics.median(cold["haystack run qa"]) / floor
    return {
        "rows": "\n".join(rows),
        "warm": f"{statistics.median(warm):.3f}",
        "warm_min": f"{min(warm):.3f}",
        "warm_max": f"{max(warm):.3f}",
        "warm_count": len(warm),
        "floor": f"{floor:.2f}",
        "ratio": f"{ratio:.2f}",
        "verdict": "met" if ratio <= TARGET else "not met",
        "target": TARGET,
        "cpu": summary["machine"]["cpu"],
        "cores": summary["machine"]["cores"],
        "store": summary["store"],
        "command": summary["command"],
    }


def render(summary: dict[str, Any]) -> str:
    return fill_template(sibling_template(__file__, "cold_start.md.template"), report_values(summary))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default="indexes/example", help="an indexed store (haystack run index)")
    parser.add_argument("--repeats", type=int, default=7, help="fresh processes of each kind")
    parser.add_argument("--warm", type=int, default=20, help="timed warm queries")
    parser.add_argument("--out", default="docs/benchmarks/cli/cold_start", help="report path without suffix")
    args = parser.parse_args(argv)
    summary = {
        **measure(args.store, args.repeats, args.warm),
        "command": command_line("benchmarks.cli.cold_start", argv or sys.argv[1:]),
    }
    markdown = render(summary)
    write_report(Path(args.out), summary, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
