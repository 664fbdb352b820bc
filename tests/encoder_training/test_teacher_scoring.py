"""Teacher scoring: what a record holds, appending in batches, and resuming after an interruption
(a killed run loses at most its current batch; a line cut short is dropped and written again)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from haystack import Document

from dpr_components.dpr_data.teacher_file import read_teacher_file, resume_ids
from dpr_components.encoder_training.teacher_scoring import TeacherQuestion, score_question, score_to_file

PASSAGES = [
    Document(
        id="a#0", content="Paris is the capital of France.", score=3.0, meta={"document_id": "a", "dense_score": 0.7}
    ),
    Document(id="b#0", content="Berlin is in Germany.", score=2.0, meta={"document_id": "b", "dense_score": 0.5}),
    Document(id="c#1", content="France borders Spain.", score=1.0, meta={"document_id": "c", "dense_score": 0.4}),
]


class FakeFirstStage:
    """Returns the passages above, at most ``top_k``."""

    def run(self, query: str, top_k: int | None = None) -> dict[str, Any]:
        return {"documents": PASSAGES[:top_k]}


class FakeTeacher:
    """Scores a passage by its length; raises on the ``fail_on``-th question, as a kill would stop it."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.calls = 0
        self.fail_on = fail_on

    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, Any]:
        self.calls += 1
        if self.calls == self.fail_on:
            raise KeyboardInterrupt
        scored = [Document(id=d.id, content=d.content, score=float(len(d.content or ""))) for d in documents]
        return {"documents": sorted(scored, key=lambda d: -(d.score or 0.0))}


def _questions(count: int) -> list[TeacherQuestion]:
    return [
        TeacherQuestion(f"q{n}", f"what is the capital of France {n}", ["Paris"], "nq", gold_ids=["a"])
        for n in range(count)
    ]


def test_a_record_keeps_the_first_stage_order_with_teacher_scores_and_labels() -> None:
    record = score_question(_questions(1)[0], FakeFirstStage(), FakeTeacher(), top_k=3)
    assert record.passage_ids == ["a#0", "b#0", "c#1"]
    assert record.retrieval == [3.0, 2.0, 1.0] and record.dense == [0.7, 0.5, 0.4]
    assert record.teacher == [float(len(d.content or "")) for d in PASSAGES]
    assert record.has_answer == [True, False, False] and record.gold == [True, False, False]


def test_an_interrupted_run_loses_at_most_its_batch_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "teacher.jsonl"
    questions = _questions(7)
    with pytest.raises(KeyboardInterrupt):
        score_to_file(
            questions, FakeFirstStage(), FakeTeacher(fail_on=6), out, top_k=2, batch_size=2, show_progress=False
        )
    assert [r.id for r in read_teacher_file(out)] == ["q0", "q1", "q2", "q3"]  # the batch of q4, q5 was lost
    teacher = FakeTeacher()
    resumed, written = score_to_file(
        questions, FakeFirstStage(), teacher, out, top_k=2, batch_size=2, show_progress=False
    )
    assert (resumed, written, teacher.calls) == (4, 3, 3)
    assert [r.id for r in read_teacher_file(out)] == [f"q{n}" for n in range(7)]


def test_a_line_cut_short_is_dropped_and_scored_again(tmp_path: Path) -> None:
    out = tmp_path / "teacher.jsonl"
    score_to_file(_questions(2), FakeFirstStage(), FakeTeacher(), out, top_k=2, show_progress=False)
    whole = out.read_text(encoding="utf-8")
    out.write_text(whole + whole.splitlines()[0][:40], encoding="utf-8")  # a kill in the middle of a write
    assert resume_ids(out) == {"q0", "q1"}
    assert out.read_text(encoding="utf-8") == whole
    assert score_to_file(_questions(3), FakeFirstStage(), FakeTeacher(), out, top_k=2, show_progress=False) == (2, 1)


def test_duplicate_ids_and_bad_lines_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="occurs twice"):
        score_to_file(_questions(1) * 2, FakeFirstStage(), FakeTeacher(), tmp_path / "t.jsonl", show_progress=False)
    bad = tmp_path / "bad.jsonl"
    record = json.loads(score_question(_questions(1)[0], FakeFirstStage(), FakeTeacher(), 3).to_json())
    bad.write_text(json.dumps({**record, "teacher": [1.0]}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: field 'teacher'"):
        read_teacher_file(bad)
