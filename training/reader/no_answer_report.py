"""The report of training/reader/fit_no_answer.py: tables computed from its summary, then filled into a template."""

from __future__ import annotations

from string import Template
from typing import Any

import numpy as np

from dpr_components.evaluation.intervals import score_interval
from dpr_components.evaluation.metric_intervals import interval_cell, wilson_cells_note
from dpr_components.evaluation.tables import markdown_table, produced_by
from dpr_components.readers.no_answer import FEATURES, NoAnswerModel

CURVE_THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
CALIBRATION_BINS = np.linspace(0.0, 1.0, 6)

TEMPLATE = Template(
    """# "No answer" for `$pipeline`

$purpose

Each question is asked twice: as it is (answerable) and with every passage that holds an answer removed
from what the first stage retrieved (unanswerable). "No answer" comes first when P(no answer) reaches
the threshold. Answerable exact match counts "no answer" as wrong; unanswerable accuracy is the share of
"no answer"; a threshold of 1 never says it (but where no passage is left to read).

## Calibration and threshold

P(no answer) = σ($formula); "no answer" first from P(no answer) ≥ **$threshold**.

$summary_table

$wilson_note

## Accuracy and coverage by threshold (all questions)

$curve_table

## Is P(no answer) calibrated?

Readings grouped by their P(no answer), against how often their passages really held no answer
(Brier score $brier).

$calibration_table

$produced_by"""
)


def decisions(rows: list[dict[str, Any]], model: NoAnswerModel, threshold: float) -> dict[str, np.ndarray]:
    """Per reading: P(no answer), and whether the pipeline answers (P(no answer) below ``threshold``, so its top
    answer comes first); a reading without features (no passage left to read) has P(no answer) 1."""
    read = np.array([row["features"] is not None for row in rows])
    features = np.array([row["features"] or [0.0] * len(FEATURES) for row in rows], dtype=np.float64)
    no_answer = np.where(read, model.probability(features), 1.0)
    return {"no_answer": no_answer, "answers": (no_answer < threshold) & read}


def outcomes(rows: list[dict[str, Any]], model: NoAnswerModel, threshold: float) -> dict[str, np.ndarray]:
    """Per-question 0/1 outcomes: answerable EM (no answer counts as wrong), unanswerable accuracy."""
    decided = decisions(rows, model, threshold)
    kinds = np.array([row["kind"] for row in rows])
    em = np.array([row["em"] for row in rows], dtype=np.float64)
    answerable = kinds == "answerable"
    return {
        "em": np.where(decided["answers"], em, 0.0)[answerable],
        "em_always": em[answerable],
        "abstains": (~decided["answers"])[~answerable].astype(np.float64),
        "coverage": decided["answers"].astype(np.float64),
    }


def _model(summary: dict[str, Any]) -> NoAnswerModel:
    return NoAnswerModel.from_dict(summary["calibration"])


def _cells(rows: list[dict[str, Any]], model: NoAnswerModel, threshold: float) -> list[str]:
    measured = outcomes(rows, model, threshold)
    answerable = int(measured["em"].size)
    return [
        f"{answerable:,}",
        interval_cell(score_interval(measured["em_always"]).scaled(100), name_method=True),
        interval_cell(score_interval(measured["em"]).scaled(100), name_method=True),
        interval_cell(score_interval(measured["abstains"]).scaled(100), name_method=True),
        f"{100 * measured['coverage'].mean():.1f}",
    ]


def summary_table(summary: dict[str, Any]) -> str:
    model, threshold = _model(summary), float(summary["threshold"])
    rows = [[str(split["file"]), *_cells(split["questions"], model, threshold)] for split in summary["splits"]]
    everything = [row for split in summary["splits"] for row in split["questions"]]
    rows.append(["all", *_cells(everything, model, threshold)])
    columns = [
        "questions",
        "asked",
        "EM, always answering",
        "EM, with no answer",
        "unanswerable: no answer",
        "answered %",
    ]
    return "\n".join(markdown_table(columns, rows, "lrrrrr"))


def curve_table(summary: dict[str, Any]) -> str:
    model = _model(summary)
    everything = [row for split in summary["splits"] for row in split["questions"]]
    thresholds = sorted({*CURVE_THRESHOLDS, float(summary["threshold"])})
    rows = []
    for threshold in thresholds:
        measured = outcomes(everything, model, threshold)
        mark = " (chosen)" if threshold == float(summary["threshold"]) else ""
        rows.append(
            [
                f"{threshold:.3g}{mark}",
                f"{100 * measured['em'].mean():.1f}",
                f"{100 * measured['abstains'].mean():.1f}",
                f"{100 * measured['coverage'].mean():.1f}",
            ]
        )
    columns = ["threshold", "answerable EM", "unanswerable: no answer", "answered %"]
    return "\n".join(markdown_table(columns, rows, "lrrr"))


def calibration_table(summary: dict[str, Any]) -> tuple[str, str]:
    """Reliability bins of P(no answer) and the Brier score."""
    everything = [row for split in summary["splits"] for row in split["questions"]]
    predicted = decisions(everything, _model(summary), 0.0)["no_answer"]
    observed = np.array([not row["holds_answer"] for row in everything], dtype=np.float64)
    bins = np.clip(np.digitize(predicted, CALIBRATION_BINS[1:-1]), 0, len(CALIBRATION_BINS) - 2)
    rows = []
    for index in range(len(CALIBRATION_BINS) - 1):
        chosen = bins == index
        if chosen.any():
            low, high = CALIBRATION_BINS[index], CALIBRATION_BINS[index + 1]
            mean_predicted, mean_observed = predicted[chosen].mean(), observed[chosen].mean()
            rows.append(
                [f"{low:.1f}–{high:.1f}", f"{int(chosen.sum()):,}", f"{mean_predicted:.2f}", f"{mean_observed:.2f}"]
            )
    table = "\n".join(markdown_table(["P(no answer)", "readings", "mean predicted", "observed"], rows, "lrrr"))
    return table, f"{float(np.mean((predicted - observed) ** 2)):.3f}"


def render(summary: dict[str, Any]) -> str:
    model = _model(summary)
    formula = " ".join(
        [f"{model.bias:.3f}", *(f"{w:+.3f}·{name}" for w, name in zip(model.weights, FEATURES, strict=True))]
    )
    purpose = (
        'Fitted and chosen on these questions (held aside from training): the threshold says "no answer" to the '
        f"most unanswerable questions at a cost of at most {summary.get('max_em_drop', 1.0):g} exact-match points on the answerable "
        "ones."
        if summary["fitted_here"]
        else "Measured once with the calibration and threshold chosen on the selection splits; nothing chosen here."
    )
    if summary.get("read_by"):
        purpose += f" The readings were made by `{summary['read_by']}`."
    calibration, brier = calibration_table(summary)
    return TEMPLATE.substitute(
        pipeline=summary["pipeline"],
        purpose=purpose,
        formula=formula,
        threshold=f"{float(summary['threshold']):.3g}",
        summary_table=summary_table(summary),
        wilson_note=wilson_cells_note(),
        curve_table=curve_table(summary),
        brier=brier,
        calibration_table=calibration,
        produced_by="\n".join(produced_by(summary["command"])),
    )
