"""Write the report of an evaluation-pipeline run: our report.md / report.json / topk_accuracy.png
plus Haystack's ``EvaluationRunResult`` reports (aggregated and per question) in
``evaluation_runs.json``. All writes are atomic."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpr_components.evaluation.pipeline_eval import SystemEvaluation
from dpr_components.evaluation.report import ReportTable, write_retrieval_report
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


def _tables(evaluations: Sequence[SystemEvaluation]) -> list[ReportTable]:
    tables = []
    answered = [e for e in evaluations if e.answer_scores]
    if answered:
        tables.append(ReportTable(
            "Answers", ["system", "exact match", "F1"],
            [[e.name, e.answer_scores["exact_match"], e.answer_scores["f1"]] for e in answered],
            note="SQuAD v1.1 exact match and token F1 of each system's top answer, in percent.",
        ))
    tables.append(ReportTable(
        "Time per question", ["system", "ms / question"],
        [[e.name, f"{e.seconds_per_question * 1000:.1f}"] for e in evaluations], note="whole pipeline, one process",
    ))
    return tables


def write_evaluation_report(
    out_dir: str | os.PathLike[str],
    evaluations: Sequence[SystemEvaluation],
    title: str,
    command: str,
    dataset_name: str,
) -> dict[str, Path]:
    """Write every report file into ``out_dir``; returns the paths by kind."""
    if not evaluations:
        raise ValueError("nothing was evaluated")
    out = Path(out_dir)
    prepare_output_folder(out, "report folder")
    runs_path = out / RUNS_JSON
    with reporting_write_errors(runs_path):
        text = json.dumps(_haystack_reports(evaluations), indent=1, ensure_ascii=False, allow_nan=False)
        atomic_write_text(runs_path, text + "\n")
    retrieval = {e.name: e.retrieval for e in evaluations if e.retrieval is not None}
    paths = write_retrieval_report(out, retrieval, title=title, command=command, dataset_name=dataset_name,
                                   extra_tables=_tables(evaluations))
    return {**paths, "haystack": runs_path}
