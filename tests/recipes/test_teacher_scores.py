"""The teacher-scoring recipe's questions: NQ and a SQuAD sample without their selection questions,
with gold ids from the pool, and a changed setting refused when a file is resumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpr_components.dpr_data.selection_split import NQ_SELECTION, SQUAD_SELECTION, in_selection
from dpr_components.dpr_data.teacher_file import TeacherRecord
from training.retriever.teacher_scores import check_settings, describe, teacher_questions

NQ_QUESTIONS = [f"who wrote the book number {n}" for n in range(40)]
SQUAD_QUESTIONS = [f"what happened in the year {n}" for n in range(1500, 1700)]


def _data(folder: Path) -> Path:
    (folder / "nq").mkdir(parents=True)
    (folder / "squad").mkdir()
    (folder / "wiki").mkdir()
    nq = [
        {"id": f"n{n}", "question": q, "answers": ["x"], "positive_ctxs": [{"title": "T", "text": f"gold {n}"}]}
        for n, q in enumerate(NQ_QUESTIONS)
    ]
    (folder / "nq" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in nq))
    qas = [
        {"id": f"s{n}", "question": q, "answers": [{"text": "y", "answer_start": 0}]}
        for n, q in enumerate(SQUAD_QUESTIONS)
    ]
    squad = {"data": [{"title": "A", "paragraphs": [{"context": "y is the context", "qas": qas}]}]}
    (folder / "squad" / "train-v1.1.json").write_text(json.dumps(squad))
    pool = [
        {"id": "doc-gold-3", "title": "T", "text": "gold 3"},
        {"id": "squad-doc", "title": "A", "text": "y is the context"},
    ]
    (folder / "wiki" / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in pool))
    return folder


def test_selection_questions_are_left_out_and_gold_ids_found(tmp_path: Path) -> None:
    questions = teacher_questions(_data(tmp_path), squad=500)
    nq_kept = [q for q in NQ_QUESTIONS if not in_selection(q, NQ_SELECTION.fraction)]
    squad_kept = [q for q in SQUAD_QUESTIONS if not in_selection(q, SQUAD_SELECTION.fraction)]
    assert len(nq_kept) < len(NQ_QUESTIONS) and len(squad_kept) < len(SQUAD_QUESTIONS)  # both splits bite here
    assert sorted(q.question for q in questions if q.source == "nq") == sorted(nq_kept)
    assert sorted(q.question for q in questions if q.source == "squad") == sorted(squad_kept)
    by_id = {q.id: q for q in questions}
    assert by_id["nq:n3"].gold_ids == ["doc-gold-3"] and by_id["squad:s0"].gold_ids == ["squad-doc"]
    assert [q.id for q in teacher_questions(tmp_path, squad=500)] == [q.id for q in questions]  # a fixed order


def test_a_sample_of_squad_and_a_changed_setting_refused(tmp_path: Path) -> None:
    questions = teacher_questions(_data(tmp_path), squad=10)
    assert sum(q.source == "squad" for q in questions) == 10
    out = tmp_path / "teacher.jsonl"
    check_settings(out, {"top_k": 20})
    check_settings(out, {"top_k": 20})
    with pytest.raises(ValueError, match="other settings"):
        check_settings(out, {"top_k": 30})


def test_describe_counts_the_gold_first_by_source() -> None:
    def record(n: int, source: str, teacher: list[float], gold: list[bool]) -> TeacherRecord:
        return TeacherRecord(
            f"{source}{n}", "q", ["a"], source, ["p0", "p1"], [2.0, 1.0], [0.5, 0.4], teacher, gold, gold
        )

    records = [
        record(0, "nq", [0.0, 1.0], [False, True]),
        record(1, "nq", [1.0, 0.0], [True, False]),
        record(2, "nq", [1.0, 0.0], [False, False]),
        record(0, "squad", [0.0, 1.0], [True, False]),
    ]
    assert describe(records).splitlines() == [
        "nq: 3 questions, 2 with a gold passage among the candidates; gold first: first stage 1, teacher 2",
        "squad: 1 questions, 1 with a gold passage among the candidates; gold first: first stage 1, teacher 0",
    ]
