"""training/reader/fit_no_answer.py end to end on tiny models: both versions of each question read, a calibration
fitted and a threshold chosen within the answerable interval, the report rendered again from its JSON, and
the measuring mode that only applies a calibration."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpr_components.readers.no_answer import FEATURES, NoAnswerModel
from tests.helpers.serving import write_pipelines
from training.reader.fit_no_answer import THRESHOLDS, choose_threshold, main
from training.reader.no_answer_report import outcomes

QUESTIONS = [
    ("who wrote hamlet", ["William Shakespeare"], ["hamlet"]),
    ("what is the highest mountain on earth", ["Mount Everest"], ["everest"]),
    ("when did marie curie win the nobel prize in physics", ["1903"], ["curie"]),
    ("what do honey bees make from nectar", ["honey"], ["bees"]),
]


@pytest.fixture()
def qa_pipeline(
    tmp_path: Path, indexed_store: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path
) -> Path:
    folder = tmp_path / "pipelines"
    write_pipelines(folder, indexed_store, tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    return folder / "qa.yml"


def _questions(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    lines = [
        json.dumps({"id": str(i), "question": q, "answers": a, "gold_ids": g}) for i, (q, a, g) in enumerate(QUESTIONS)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_fit_then_measure(tmp_path: Path, qa_pipeline: Path, indexed_store: Path) -> None:
    questions = str(_questions(tmp_path))
    out = tmp_path / "fit"
    assert (
        main(
            ["--pipeline", str(qa_pipeline), "--store", str(indexed_store), "--questions", questions, "--out", str(out)]
        )
        == 0
    )
    summary = json.loads((out / "report.json").read_text(encoding="utf-8"))
    rows = summary["splits"][0]["questions"]
    assert [row["kind"] for row in rows] == ["answerable", "unanswerable"] * len(QUESTIONS)
    assert not any(row["holds_answer"] for row in rows if row["kind"] == "unanswerable")
    assert all(len(row["features"]) == len(FEATURES) for row in rows)
    NoAnswerModel.from_dict(summary["calibration"])
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "(chosen)" in markdown and "python -m training.reader.fit_no_answer" in markdown
    assert main(["--out", str(out), "--from-json", "--questions", questions]) == 0
    assert (out / "report.md").read_text(encoding="utf-8") == markdown

    measured = tmp_path / "measured"
    arguments = ["--pipeline", str(qa_pipeline), "--store", str(indexed_store), "--questions", questions]
    assert main([*arguments, "--calibration-from", str(out), "--out", str(measured)]) == 0
    again = json.loads((measured / "report.json").read_text(encoding="utf-8"))
    assert again["calibration"] == summary["calibration"] and again["threshold"] == summary["threshold"]
    assert "nothing chosen here" in (measured / "report.md").read_text(encoding="utf-8")

    # a stricter rule over the same readings, without reading again: the readings and who made them carry over
    refit = tmp_path / "refit"
    assert main(["--readings-from", str(out), "--max-em-drop", "0", "--out", str(refit)]) == 0
    stricter = json.loads((refit / "report.json").read_text(encoding="utf-8"))
    assert stricter["splits"] == summary["splits"] and stricter["read_by"] == summary["command"]
    assert stricter["threshold"] >= summary["threshold"] and stricter["max_em_drop"] == 0
    assert summary["command"] in (refit / "report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("max_em_drop", [0.0, 1.0, 5.0])
def test_threshold_costs_at_most_the_allowed_exact_match(max_em_drop: float) -> None:
    rng = np.random.default_rng(0)
    rows = []
    for index in range(400):
        answerable = index % 2 == 0
        logit = rng.normal(2.0 if answerable else -1.0)
        rows.append(
            {
                "kind": "answerable" if answerable else "unanswerable",
                "features": [logit, 5.0, float(np.log(0.5)), 0.0],
                "holds_answer": answerable,
                "em": float(answerable and rng.random() < 0.6),
            }
        )
    model = NoAnswerModel(weights=(-2.0, 0.0, 0.0, 0.0), bias=1.0)
    threshold = choose_threshold(rows, model, max_em_drop)
    always = outcomes(rows, model, 1.0)["em_always"].mean()
    chosen = outcomes(rows, model, threshold)
    assert 100 * (always - chosen["em"].mean()) <= max_em_drop
    # the most "no answer" within that cost: one step lower either costs more or says it no more often
    lower = [t for t in THRESHOLDS if t < threshold]
    if lower:
        step = outcomes(rows, model, lower[-1])
        cost = 100 * (always - step["em"].mean())
        assert cost > max_em_drop or step["abstains"].mean() <= chosen["abstains"].mean()
    if max_em_drop >= 5.0:
        assert chosen["abstains"].mean() > 0.5  # most unanswerable readings say so


@pytest.mark.parametrize(
    "pipeline, report",
    [("qa_fast.yml", "no-answer-qa"), ("qa.yml", "no-answer-qa-rerank"), ("qa_rerank.yml", "no-answer-qa-rerank")],
)
def test_packaged_pipelines_carry_the_chosen_calibration(pipeline: str, report: str) -> None:
    """The qa pipelines carry the "no answer" fitted and chosen on the selection splits (to 4 decimals), on."""
    import yaml

    repo = Path(__file__).resolve().parents[2]
    reader = yaml.safe_load((repo / "pipelines" / pipeline).read_text(encoding="utf-8"))["components"]["reader"]
    settings = reader["init_parameters"]
    chosen = json.loads((repo / "docs" / "training" / "selection" / report / "report.json").read_text(encoding="utf-8"))
    assert settings["no_answer"] is True  # on by default, the threshold costing at most a point (docs/no_answer.md)
    assert settings["no_answer_calibration"] == {name: round(value, 4) for name, value in chosen["calibration"].items()}
    assert settings["no_answer_threshold"] == chosen["threshold"]
