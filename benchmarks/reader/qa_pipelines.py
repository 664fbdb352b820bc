"""The packaged QA pipelines (and variants) as one table: exact match and F1 with 95% intervals on
questions held aside from training, and milliseconds per question on one and on two threads, measured
in the same run (the pipelines take turns question by question, so that load changes hit all alike).

A variant is ``LABEL=PIPELINE`` followed by ``;COMPONENT.PARAM=VALUE`` overrides, e.g.
``qa_rerank_10=qa_rerank;ranker.top_k=10``. Exact match counts a first answer of "no answer" as wrong,
as ``haystack eval`` does. NQ train's answers are long spans: only its questions with an answer of at
most five words are asked (NQ-open's rule, as training/reader/fit_qa_rerank.py does). The budget: the best
exact match whose median stays within ``--budget-ms`` per question on two threads (of equal exact
matches, the fastest). Writes
docs/benchmarks/reader/qa_pipelines.{md,json}.

    python -m benchmarks.reader.qa_pipelines --store indexes/pool --limit 250 \\
        --pipeline qa --pipeline qa_rerank
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from benchmarks.common import REPO_ROOT, command_line, cpu_name, write_report
from dpr_components.evaluation.answer_metrics import exact_match, f1
from dpr_components.evaluation.intervals import paired_bootstrap_difference, score_interval
from dpr_components.evaluation.metric_intervals import difference_cell, interval_cell
from dpr_components.evaluation.questions import load_questions
from dpr_components.evaluation.tables import markdown_table
from dpr_components.evaluation.templates import fill_template, sibling_template
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.pipeline_requests.inputs import request_inputs
from dpr_components.pipeline_requests.running import run_pipeline
from dpr_components.utils.sources import resolve_data_source
from training.reader.fit_qa_rerank import SHORT_ANSWER_WORDS, short_answers

MODULE = "benchmarks.reader.qa_pipelines"
TEMPLATE = sibling_template(__file__, "qa_pipelines.md.template")
SELECTION = "data/selection/nq-train-selection.jsonl,data/selection/squad-train-selection.jsonl"
THREAD_COUNTS = (1, 2)


def parse_variant(text: str) -> tuple[str, str, list[str]]:
    """``LABEL=PIPELINE;C.P=V;...`` (or a bare pipeline name) as (label, pipeline, overrides)."""
    head, *overrides = text.split(";")
    label, _, pipeline = head.partition("=")
    pipeline = pipeline or label
    if not label or any("=" not in o or "." not in o.split("=", 1)[0] for o in overrides):
        raise argparse.ArgumentTypeError(f"a variant is LABEL=PIPELINE;COMPONENT.PARAM=VALUE..., got {text!r}")
    return label, pipeline, overrides


def answer_component(pipeline: Any) -> str:
    """The one component whose output holds ``answers``."""
    names = [name for name, sockets in pipeline.outputs().items() if "answers" in sockets]
    if len(names) != 1:
        raise ValueError(f"expected one component with an answers output, found {names}")
    return names[0]


def asked_questions(paths: str, limit: int | None) -> list[tuple[str, str, list[str]]]:
    """(file, question, gold answers) of each file's first ``limit`` questions with a short enough answer."""
    asked: list[tuple[str, str, list[str]]] = []
    for path in paths.split(","):
        kept = 0
        for example in load_questions(resolve_data_source(path)):
            golds = short_answers(list(example.answers), SHORT_ANSWER_WORDS)
            if golds and (limit is None or kept < limit):
                asked.append((path, example.question, golds))
                kept += 1
    return asked


def first_answer(pipeline: Any, answers_from: str, question: str) -> tuple[str | None, float]:
    """The pipeline's first answer to ``question`` (None: "no answer") and the seconds it took."""
    inputs = request_inputs(pipeline, query=question)
    start = time.perf_counter()
    result = run_pipeline(pipeline, inputs)
    seconds = time.perf_counter() - start
    answers = result[answers_from]["answers"]
    return (answers[0].data if answers else None), seconds


def measure(pipelines: dict[str, Any], asked: list[tuple[str, str, list[str]]], warmup: int) -> dict[str, Any]:
    """Per pipeline: each question's exact match and F1 (on two threads) and seconds on each thread count."""
    answers_from = {label: answer_component(p) for label, p in pipelines.items()}
    labels = list(pipelines)
    runs: dict[str, Any] = {
        label: {"em": [], "f1": [], "seconds": {str(t): [] for t in THREAD_COUNTS}} for label in labels
    }
    for threads in THREAD_COUNTS:
        os.environ["DPR_QUERY_THREADS"] = str(threads)
        for _, question, _ in asked[:warmup]:
            for label in labels:
                first_answer(pipelines[label], answers_from[label], question)
        for index, (_, question, golds) in enumerate(tqdm(asked, desc=f"{threads} thread(s)", unit="question")):
            for label in labels[index % len(labels) :] + labels[: index % len(labels)]:
                answer, seconds = first_answer(pipelines[label], answers_from[label], question)
                runs[label]["seconds"][str(threads)].append(round(seconds, 5))
                if threads == THREAD_COUNTS[-1]:
                    for metric, value in scores(answer, golds).items():
                        runs[label][metric].append(value)
    return runs


def scores(answer: str | None, golds: list[str]) -> dict[str, float]:
    """Exact match and F1 of one first answer ("no answer" scores 0): the report keeps these numbers, never
    the questions' or answers' text."""
    if answer is None:
        return {"em": 0.0, "f1": 0.0}
    return {"em": exact_match(answer, golds), "f1": f1(answer, golds)}


def percentile_ms(seconds: Sequence[float], share: float) -> float:
    """The nearest-rank percentile ``share`` of ``seconds``, in milliseconds."""
    ordered = sorted(seconds)
    return 1000 * ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def table_rows(summary: dict[str, Any]) -> tuple[list[list[str]], str | None]:
    """The table's rows and the label of the best exact match within the budget (None when none is)."""
    runs, budget = summary["runs"], summary["budget_ms"]
    measured = {label: {"em": run["em"], "f1": run["f1"]} for label, run in runs.items()}
    baseline = next(iter(measured))
    median_ms = {label: 1000 * statistics.median(run["seconds"][str(THREAD_COUNTS[-1])]) for label, run in runs.items()}
    within = {label: statistics.fmean(measured[label]["em"]) for label in runs if median_ms[label] <= budget}
    # the best exact match; of equal ones, the fastest
    chosen = max(within, key=lambda label: (within[label], -median_ms[label])) if within else None
    rows = []
    for label, run in runs.items():
        em, f1_scores = measured[label]["em"], measured[label]["f1"]
        difference = paired_bootstrap_difference(em, measured[baseline]["em"]).scaled(100)
        timing = [
            f"{1000 * statistics.median(run['seconds'][str(t)]):.0f} / {percentile_ms(run['seconds'][str(t)], 0.9):.0f}"
            for t in THREAD_COUNTS
        ]
        rows.append(
            [
                f"`{label}`" + (" (chosen)" if label == chosen else ""),
                interval_cell(score_interval(em).scaled(100)),
                interval_cell(score_interval(f1_scores).scaled(100)),
                "—" if label == baseline else difference_cell(difference),
                *timing,
            ]
        )
    return rows, chosen


def render(summary: dict[str, Any]) -> str:
    rows, chosen = table_rows(summary)
    columns = [
        "pipeline",
        "EM",
        "F1",
        f"EM − `{next(iter(summary['runs']))}`",
        "ms p50 / p90, 1 thread",
        "ms p50 / p90, 2 threads",
    ]
    variants = "\n".join(f"- `{label}`: {spec}" for label, spec in summary["variants"].items())
    return fill_template(
        TEMPLATE,
        {
            "questions": summary["questions"],
            "asked": sum(summary["asked"].values()),
            "cpu": summary["machine"]["cpu"],
            "cores": summary["machine"]["cores"],
            "store": summary["store"],
            "variants": variants,
            "table": "\n".join(markdown_table(columns, rows, "lrrrrr")),
            "budget": summary["budget_ms"],
            "chosen": f"`{chosen}`" if chosen else "none",
            "command": summary["command"],
        },
    )


def pipeline_parser(description: str, report: str) -> argparse.ArgumentParser:
    """The options every pipeline benchmark here takes; ``report``: the name of its page under docs/benchmarks/reader."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--store", default="indexes/pool")
    parser.add_argument("--questions", default=SELECTION, help="comma-separated question files")
    parser.add_argument("--limit", type=int, default=250, help="questions per file")
    parser.add_argument("--pipeline", dest="variants", type=parse_variant, action="append", help="repeatable")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "benchmarks" / "reader" / report)
    parser.add_argument("--from-json", action="store_true", help="render the report again from its JSON")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = pipeline_parser(__doc__.split("\n\n")[0], "qa_pipelines")
    parser.add_argument("--warmup", type=int, default=5, help="questions asked untimed on each thread count")
    parser.add_argument("--budget-ms", type=float, default=400.0, help="median ms per question on two threads")
    return parser


def run_report(
    module: str,
    argv: Sequence[str] | None,
    parser: argparse.ArgumentParser,
    render_summary: Callable[[dict[str, Any]], str],
    measured: Callable[[argparse.Namespace, dict[str, Any], list[tuple[str, str, list[str]]]], dict[str, Any]],
) -> None:
    """A pipeline benchmark's command: re-render its JSON (``--from-json``), or load the variants' pipelines,
    ask the questions, and write the summary with ``measured(args, pipelines, asked)``'s fields and the machine."""
    arguments = list(argv) if argv is not None else None
    args = parser.parse_args(arguments)
    if args.from_json:
        summary = json.loads(args.out.with_suffix(".json").read_text(encoding="utf-8"))
        write_report(args.out, summary, render_summary(summary))
        return
    variants = args.variants or [parse_variant(name) for name in ("qa_fast", "qa", "qa_rerank")]
    pipelines = {label: load_pipeline(name, store=args.store, overrides=o) for label, name, o in variants}
    asked = asked_questions(args.questions, args.limit)
    summary = {
        "questions": args.questions,
        "store": args.store,
        "variants": {label: ";".join([name, *o]) for label, name, o in variants},
        "asked": {path: sum(1 for q in asked if q[0] == path) for path in args.questions.split(",")},
        **measured(args, pipelines, asked),
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count()},
        "command": command_line(module, arguments if arguments is not None else sys.argv[1:]),
    }
    write_report(args.out, summary, render_summary(summary))
    print(render_summary(summary))


def report_fields(
    args: argparse.Namespace, pipelines: dict[str, Any], asked: list[tuple[str, str, list[str]]]
) -> dict[str, Any]:
    """What this benchmark adds to the summary: the latency budget and the measured runs."""
    return {"budget_ms": args.budget_ms, "runs": measure(pipelines, asked, args.warmup)}


def main(argv: Sequence[str] | None = None) -> None:
    run_report(MODULE, argv, build_parser(), render, report_fields)


if __name__ == "__main__":
    main()
