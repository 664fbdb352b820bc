"""training.retriever.adapt_report: both encoders scored once (kept and read back), the paired comparison per
selection split with the run's report and the command, and a run folder without a report refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from training.retriever.adapt_report import main

RANKS = {"baseline": [None] * 60 + [1] * 40, "adapted": [1] * 70 + [None] * 30}


def _run(folder: Path) -> Path:
    folder.mkdir()
    report = {
        "passages": {"pseudo_queries": 100, "in_store": 120},
        "settings": {"query_method": "ict"},
        "training": {"steps": 4},
        "minutes": {"total": 1.5},
    }
    (folder / "adaptation.json").write_text(json.dumps(report))
    return folder


class FakeEvaluate:
    """``training.retriever.evaluate.evaluate`` on two question files, counting its calls."""

    def __init__(self, run: Path) -> None:
        self.calls: list[str] = []
        self.run = run

    def __call__(self, system: str, questions: list[str], passage_model: str, gold: bool) -> dict[str, Any]:
        assert gold and passage_model == "bundled:all-MiniLM-L6-v2"
        self.calls.append(system)
        ranks = RANKS["adapted" if system == str(self.run / "question_encoder") else "baseline"]
        return {"system": system, "datasets": {q: {"n_questions": 100, "first_hit_ranks": ranks} for q in questions}}


def test_the_report_pairs_the_adapted_encoder_with_the_baseline(tmp_path: Path) -> None:
    run = _run(tmp_path / "adapted")
    fake = FakeEvaluate(run)
    argv = ["--run", str(run), "--questions", "nq.jsonl,squad.jsonl", "--eval-dir", str(tmp_path / "eval")]
    argv += ["--out", str(tmp_path / "adaptation")]
    assert main(argv, evaluate=fake) == 0
    assert fake.calls == ["bundled:dpr-minilm-multi/question_encoder", str(run / "question_encoder")]
    data = json.loads((tmp_path / "adaptation.json").read_text())
    assert data["command"].startswith("python -m training.retriever.adapt_report --run ")
    top_1 = data["datasets"]["nq.jsonl"]["top_1"]
    assert (top_1["baseline"]["estimate"], top_1["adapted"]["estimate"]) == (40.0, 70.0)
    assert top_1["difference"]["estimate"] == pytest.approx(30.0) and top_1["difference"]["low"] > 0
    text = (tmp_path / "adaptation.md").read_text()
    assert "100 pseudo-queries (ict) from 120 passages, 4 training steps" in text
    assert "## squad.jsonl (100 questions, gold passage hits)" in text and "| adapted − baseline | +30.0 [" in text
    assert main(argv, evaluate=fake) == 0 and len(fake.calls) == 2  # both evaluations read back


def test_a_run_folder_without_a_report_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--run", str(tmp_path), "--eval-dir", str(tmp_path / "e"), "--out", str(tmp_path / "report")]
    assert main(args, evaluate=FakeEvaluate(tmp_path)) == 2
    assert "holds no adaptation.json: run haystack run adapt" in capsys.readouterr().err


def test_the_store_is_searched_as_it_is(indexed_store: Path, tiny_st_dir: Path, tmp_path: Path) -> None:
    """--store: the question encoder searches the store's own vectors, each question ranked by its gold document
    (the small store's passages all come back in the top 20, so the gold one has a rank)."""
    from training.retriever.adapt_report import store_evaluation

    questions = tmp_path / "selection.jsonl"
    record = {"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"], "gold_ids": ["hamlet"]}
    questions.write_text(json.dumps(record) + "\n", encoding="utf-8")
    result = store_evaluation(str(indexed_store))(str(tiny_st_dir), [str(questions)], str(tiny_st_dir), True)
    found = result["datasets"][str(questions)]
    assert found["n_questions"] == 1 and isinstance(found["first_hit_ranks"][0], int)


def test_answer_matching_is_asked_of_the_evaluation_and_named_in_the_report(tmp_path: Path) -> None:
    """--match answer (the dev files): the evaluation is asked for answer matching, its kept result is not reused
    for gold hits, and the report says how a hit was counted."""
    run = _run(tmp_path / "adapted")
    asked: list[bool] = []

    def evaluate(system: str, questions: list[str], passage_model: str, gold: bool) -> dict[str, Any]:
        asked.append(gold)
        ranks = RANKS["adapted" if system == str(run / "question_encoder") else "baseline"]
        return {"system": system, "datasets": {q: {"n_questions": 100, "first_hit_ranks": ranks} for q in questions}}

    argv = ["--run", str(run), "--questions", "nq/dev.jsonl", "--eval-dir", str(tmp_path / "eval")]
    argv += ["--out", str(tmp_path / "dev")]
    assert main([*argv, "--match", "answer"], evaluate=evaluate) == 0
    assert asked == [False, False]
    assert json.loads((tmp_path / "dev.json").read_text())["match"] == "answer"
    assert (
        "(100 questions, a passage holding an answer (the paper's top-k accuracy))" in (tmp_path / "dev.md").read_text()
    )
    assert main(argv, evaluate=evaluate) == 0 and asked == [False, False, True, True]  # gold: evaluated again


def test_the_store_is_searched_by_answer_matching(indexed_store: Path, tiny_st_dir: Path, tmp_path: Path) -> None:
    """--store with answer matching: questions need no gold_ids; a passage holding the answer is a hit."""
    from training.retriever.adapt_report import store_evaluation

    questions = tmp_path / "dev.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"]}) + "\n")
    result = store_evaluation(str(indexed_store))(str(tiny_st_dir), [str(questions)], str(tiny_st_dir), False)
    found = result["datasets"][str(questions)]
    assert found["match"] == "answer" and isinstance(found["first_hit_ranks"][0], int)
