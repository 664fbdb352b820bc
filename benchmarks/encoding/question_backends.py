"""Which back end should encode questions: start-up against time per question, torch against OpenVINO.

A question encoder serves one question at a time, so what a user waits for is the start-up (a command
answering one question, a server's first request) plus a few milliseconds per question. For each back
end: ``--repeats`` fresh processes (taking turns) each time importing the embedder, loading it and
encoding one question; then one process holding both encoders times every question on each, the
back ends taking turns question by question. The break-even is the number of questions after which
the back end with the slower start has caught up. Writes docs/benchmarks/encoding/question_backends.{md,json}.

    python -m benchmarks.encoding.question_backends --questions data/selection/nq-train-selection.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import command_line, cpu_name, latency_ms, write_report
from dpr_components.evaluation.questions import load_questions
from dpr_components.evaluation.templates import fill_template, sibling_template

MODULE = "benchmarks.encoding.question_backends"
BACKENDS = ("torch", "openvino")
# The packaged question encoder's architecture and size, in its own layout.
DEFAULT_MODEL = "bundled:all-MiniLM-L6-v2"
START_UP = r"""
import sys, time
start = time.perf_counter()
from haystack_integrations.components.embedders.dpr import QuestionEmbedder
embedder = QuestionEmbedder(model=sys.argv[1], backend=sys.argv[2])
embedder.warm_up()
embedder.run(text="who wrote the first opera")
print(time.perf_counter() - start)
"""


def start_up_seconds(model: str, backend: str) -> float:
    """Seconds a fresh process takes to import, load ``model`` on ``backend`` and encode one question."""
    done = subprocess.run(
        [sys.executable, "-c", START_UP, model, backend], check=True, capture_output=True, text=True, env=os.environ
    )
    return float(done.stdout.strip().splitlines()[-1])


def per_question_seconds(model: str, questions: Sequence[str]) -> dict[str, list[float]]:
    """Each back end's seconds per question, in one process, the back ends taking turns."""
    from haystack_integrations.components.embedders.dpr.question_embedder import QuestionEmbedder

    embedders = {backend: QuestionEmbedder(model=model, backend=backend) for backend in BACKENDS}  # type: ignore[arg-type]
    for embedder in embedders.values():
        embedder.warm_up()
        embedder.run(text=questions[0])
    times: dict[str, list[float]] = {backend: [] for backend in BACKENDS}
    for question in questions:
        for backend, embedder in embedders.items():
            start = time.perf_counter()
            embedder.run(text=question)
            times[backend].append(time.perf_counter() - start)
    return times


def break_even(start_up: dict[str, float], per_question_ms: dict[str, float]) -> float | None:
    """Questions after which the back end that starts slower has caught up (None: it never does)."""
    slow, fast = sorted(BACKENDS, key=lambda backend: start_up[backend], reverse=True)
    saving_ms = per_question_ms[fast] - per_question_ms[slow]
    if saving_ms <= 0:
        return None
    return 1000 * (start_up[slow] - start_up[fast]) / saving_ms


def measure(model: str, questions: Sequence[str], repeats: int) -> dict[str, Any]:
    """Start-up times per back end (interleaved fresh processes) and per-question latencies."""
    start_up: dict[str, list[float]] = {backend: [] for backend in BACKENDS}
    for _ in range(repeats):
        for backend in BACKENDS:
            start_up[backend].append(round(start_up_seconds(model, backend), 3))
    latencies = {backend: latency_ms(times) for backend, times in per_question_seconds(model, questions).items()}
    medians = {backend: statistics.median(times) for backend, times in start_up.items()}
    p50 = {backend: latencies[backend]["p50_ms"] for backend in BACKENDS}
    return {
        "model": model,
        "questions": len(questions),
        "start_up_s": start_up,
        "latency_ms": latencies,
        "break_even_questions": break_even(medians, p50),
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "query_threads": os.environ.get("DPR_QUERY_THREADS")},
    }


def render(summary: dict[str, Any]) -> str:
    rows = []
    for backend in BACKENDS:
        start_up, latency = summary["start_up_s"][backend], summary["latency_ms"][backend]
        rows.append(
            f"| {backend} | {statistics.median(start_up):.2f} | {min(start_up):.2f}–{max(start_up):.2f} | "
            f"{latency['p50_ms']:.2f} | {latency['p95_ms']:.2f} |"
        )
    questions = summary["break_even_questions"]
    threads = summary["machine"]["query_threads"]
    values = {
        "rows": "\n".join(rows),
        "break_even": "never" if questions is None else f"after {questions:,.0f} questions",
        "model": summary["model"],
        "questions": f"{summary['questions']:,}",
        "repeats": len(summary["start_up_s"][BACKENDS[0]]),
        "cpu": summary["machine"]["cpu"],
        "cores": summary["machine"]["cores"],
        "threads": f"DPR_QUERY_THREADS={threads}" if threads else "the default query threads",
        "command": summary["command"],
    }
    return fill_template(sibling_template(__file__, "question_backends.md.template"), values)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL, help="the question encoder")
    parser.add_argument("--questions", help="a question file (JSONL with 'question'); needed unless --from-json")
    parser.add_argument("--limit", type=int, default=200, help="questions timed per back end")
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per back end")
    parser.add_argument(
        "--out", default="docs/benchmarks/encoding/question_backends", help="report path without suffix"
    )
    parser.add_argument(
        "--from-json", action="store_true", help="render the report again from its JSON, measure nothing"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.from_json:
        summary = json.loads(Path(args.out).with_suffix(".json").read_text(encoding="utf-8"))
        write_report(Path(args.out), summary, render(summary))
        return 0
    if not args.questions:
        raise SystemExit("give --questions FILE (or --from-json to render the last run again)")
    questions = [example.question for example in load_questions(args.questions, limit=args.limit)]
    summary = {
        **measure(args.model, questions, args.repeats),
        "command": command_line(MODULE, list(argv) if argv is not None else sys.argv[1:]),
    }
    markdown = render(summary)
    write_report(Path(args.out), summary, markdown)
    print(markdown)
    print(json.dumps(summary["break_even_questions"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
