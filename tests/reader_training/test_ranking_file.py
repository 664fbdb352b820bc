"""Reader training passages from a teacher file: the candidates re-ranked as qa_rerank hands them to its reader."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from haystack import Document

from dpr_components.dpr_data.teacher_file import TeacherRecord
from dpr_components.reader_training.data import ReaderMiningSettings, SourceQuestion, mine
from dpr_components.reader_training.ranking_file import ranking_retriever, teacher_rankings, with_short_answers
from training.reader.train_reader import mined_questions

PASSAGES = {
    "a#0": "Hamlet is a play.",
    "b#0": "Hamlet was written by William Shakespeare.",
    "c#0": "Paris is the capital of France.",
}


class FakeStore:
    """The one store method mining from a ranking uses; it answers in its own order, not the asked one."""

    def get_documents_by_id(self, ids: Sequence[str]) -> list[Document]:
        return [Document(id=i, content=text) for i, text in sorted(PASSAGES.items()) if i in ids]


def _teacher_file(path: Path) -> Path:
    record = TeacherRecord(
        id="q0",
        question="who wrote hamlet",
        answers=["William Shakespeare", "the English playwright William Shakespeare of Stratford"],
        source="nq",
        passage_ids=["a#0", "c#0", "b#0"],
        retrieval=[3.0, 2.0, 1.0],
        dense=[0.5, 0.4, 0.3],
        teacher=[1.0, -2.0, 5.0],
        has_answer=[False, False, True],
        gold=[False, False, True],
    )
    path.write_text(record.to_json() + "\n", encoding="utf-8")
    return path


def _questions() -> list[SourceQuestion]:
    return [
        SourceQuestion("q0", "who wrote hamlet", ["William Shakespeare"], None),
        SourceQuestion("q1", "a question the file lacks", ["x"], None),
    ]


def test_rankings_put_the_teachers_best_first(tmp_path: Path) -> None:
    assert teacher_rankings(_teacher_file(tmp_path / "t.jsonl")) == {"who wrote hamlet": ["b#0", "a#0", "c#0"]}


def test_an_empty_teacher_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no question"):
        teacher_rankings(tmp_path / "t.jsonl")


def test_the_retriever_keeps_the_ranking_order_and_depth(tmp_path: Path) -> None:
    rankings = teacher_rankings(_teacher_file(tmp_path / "t.jsonl"))
    retrieve = ranking_retriever(FakeStore(), _questions(), rankings, depth=2)
    assert [d.id for d in retrieve(0)] == ["b#0", "a#0"]
    assert retrieve(1) == []


def test_a_ranked_passage_missing_from_the_store_is_named() -> None:
    retrieve = ranking_retriever(FakeStore(), _questions(), {"who wrote hamlet": ["b#0", "z#9"]}, depth=5)
    with pytest.raises(ValueError, match=r"1 ranked passages are not in the store, e\.g\. \['z#9'\]"):
        retrieve(0)


def test_mining_from_the_ranking_gives_its_positives_and_hard_negatives(tmp_path: Path) -> None:
    rankings = teacher_rankings(_teacher_file(tmp_path / "t.jsonl"))
    questions = _questions()
    mined = mine(questions, "retrieved", [ranking_retriever(FakeStore(), questions, rankings, 50)], progress=False)
    assert len(mined) == 1  # the question the file lacks has no positive
    assert (mined[0].positive_ids, mined[0].negative_ids) == (["b#0"], ["a#0", "c#0"])


def test_short_answers_keep_answers_of_few_words() -> None:
    questions = [
        SourceQuestion(
            "q0", "who", ["William Shakespeare", "the English playwright William Shakespeare of Stratford"], None
        ),
        SourceQuestion("q1", "what", ["a very long answer of more than five words"], None),
    ]
    kept = with_short_answers(questions, 5)
    assert [(q.id, q.answers) for q in kept] == [("q0", ["William Shakespeare"])]


def test_the_recipe_mines_from_a_teacher_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPR_CACHE_DIR", str(tmp_path / "cache"))
    teacher = _teacher_file(tmp_path / "teacher.jsonl")
    questions = tmp_path / "questions.jsonl"
    records = [{"id": "q0", "question": "who wrote hamlet", "answers": ["William Shakespeare", "a b c d e f"]}]
    questions.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    mined = mined_questions(
        questions,
        FakeStore(),
        tmp_path / "store",
        [f"ranking:{teacher}"],
        ReaderMiningSettings(),
        None,
        "unused",
        False,
        short_answer_words=5,
    )
    assert [(m.answers, m.positive_ids, m.negative_ids) for m in mined] == [
        (["William Shakespeare"], ["b#0"], ["a#0", "c#0"])
    ]
