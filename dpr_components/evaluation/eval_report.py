"""Write the report of an evaluation-pipeline run: our report.md / report.json / topk_accuracy.png
plus Haystack's ``EvaluationRunResult`` reports (aggregated and per question) in
``evaluation_runs.json``. All writes are atomic."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpr_components.evaluation.metric_intervals import (
    IntervalSettings,
    ReportIntervals,
    per_question_values,
    report_intervals,
)
from dpr_components.evaluation.pipeline_eval import SystemEvaluation
from dpr_components.evaluation.report import (
    TABLE_KS,
    ReportTable,
    write_retrieval_report,
)
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.output_files import (
    prepare_output_folder,
    reporting_write_errors,
)

RUNS_JSON = "evaluation_runs.json"


def _haystack_reports(evaluations: Sequence[SystemEvaluation]) -> dict[str, Any]:
    return {
        e.name: {
            "aggregated_report": e.run_result.aggregated_report(output_format="json"),
            "detailed_report": e.run_result.detailed_report(output_format="json"),
        }
        for e in evaluations
    }


def _intervals(evaluations: Sequence[SystemEvaluation], settings: IntervalSettings) -> ReportIntervals:
    """Intervals from the per-question values each evaluation already holds (ranks, EM / F1)."""
    values = {}
    for e in evaluations:
        answers = {key: e.run_result.results[key]["individual_scores"] for key in e.answer_scores}
        ranks, max_k = (e.retrieval.first_hit_ranks, e.retrieval.max_k) if e.retrieval is not None else (None, 0)
        values[e.name] = per_question_values(ranks, max_k, answers, TABLE_KS)
    return report_intervals(values, settings)


def differences_table(intervals: ReportIntervals) -> ReportTable:
    """The report's "Differences" table: each system minus the reference, with its paired interval."""
    columns, rows = intervals.differences_table()
    note = (
        f"Each system minus {intervals.reference} on the same questions (top-k, exact match and F1 in points). "
        f"Interval: {intervals.settings.confidence:.0%} paired bootstrap (the same resampled questions for both); "
        "p (bootstrap): share of resamples with a difference ≤ 0. McNemar p: exact two-sided test on the questions "
        "where exactly one of the two hits. A gain is supported only when its interval excludes zero."
    )
    return ReportTable("Differences", columns, rows, note=note)


def _tables(evaluations: Sequence[SystemEvaluation], intervals: ReportIntervals | None = None) -> list[ReportTable]:
    tables = []
    answered = [e for e in evaluations if e.answer_scores]
    if answered:
        note = "SQuAD v1.1 exact match and token F1 of each system's top answer, in percent."
        tables.append(
            ReportTable(
                "Answers",
                ["system", "exact match", "F1"],
                [
                    [e.name, e.answer_scores["exact_match"], e.answer_scores["f1"]]
                    if intervals is None
                    else [e.name, intervals.cell(e.name, "exact_match"), intervals.cell(e.name, "f1")]
                    for e in answered
                ],
                note=note if intervals is None else f"{note} {intervals.note()}",
            )
        )
    if intervals is not None and intervals.differences:
        tables.append(differences_table(intervals))
    tables.append(
        ReportTable(
            "Time per question",
            ["system", "ms / question"],
            [[e.name, f"{e.seconds_per_question * 1000:.1f}"] for e in evaluations],
            note="whole pipeline, one process",
        )
    )
    return tables


def write_evaluation_report(
    out_dir: str | os.PathLike[str],
    evaluations: Sequence[SystemEvaluation],
    title: str,
    command: str,
    dataset_name: str,
    intervals: IntervalSettings | None = None,
) -> dict[str, Path]:
    """Write every report file into ``out_dir``; returns the paths by kind. With ``intervals``,
    every metric gets its bootstrap interval and later systems their differences from the first."""
    if not evaluations:
        raise ValueError("nothing was evaluated")
    out = Path(out_dir)
    prepare_output_folder(out, "report folder")
    runs_path = out / RUNS_JSON
    with reporting_write_errors(runs_path):
        text = json.dumps(_haystack_reports(evaluations), indent=1, ensure_ascii=False, allow_nan=False)
        atomic_write_text(runs_path, text + "\n")
    retrieval = {e.name: e.retrieval for e in evaluations if e.retrieval is not None}
    found = _intervals(evaluations, intervals) if intervals is not None else None
    paths = write_retrieval_report(
        out,
        retrieval,
        title=title,
        command=command,
        dataset_name=dataset_name,
        extra_tables=_tables(evaluations, found),
        intervals=found,
    )
    return {**paths, "haystack": runs_path}
