"""Score training questions' first-stage candidates with a teacher (a re-ranker), into a teacher file.

For each question the first stage (the hybrid retriever of ``pipelines/qa_rerank.yml``) returns its
top K; the teacher (``PassageRanker``, weight 0: its logit alone) scores every one of them. Records
are appended in batches of questions (:mod:`dpr_components.dpr_data.teacher_file`), and a
question already in the file is skipped, so a killed run loses at most its current batch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from haystack import Document
from tqdm.auto import tqdm

from dpr_components.dpr_data.teacher_file import TeacherRecord, TeacherWriter, iter_batches, resume_ids
from dpr_components.evaluation.answer_matching import answer_matcher
from dpr_components.runs.deadline import Deadline


@dataclass
class TeacherQuestion:
    """A training question to score: its id (unique in the file), text, answers, where it comes from
    and the pool documents holding its gold paragraph."""

    id: str
    question: str
    answers: list[str]
    source: str
    gold_ids: list[str] = field(default_factory=list)


class FirstStage(Protocol):
    """A retriever as Haystack runs it (``HybridRetriever``)."""

    def run(self, query: str, top_k: int | None = None) -> dict[str, Any]: ...


class Teacher(Protocol):
    """A re-ranker as Haystack runs it (``PassageRanker``)."""

    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, Any]: ...


def score_question(question: TeacherQuestion, first_stage: FirstStage, teacher: Teacher, top_k: int) -> TeacherRecord:
    """The first stage's top ``top_k`` for ``question``, each with the teacher's score."""
    documents = [d for d in first_stage.run(query=question.question, top_k=top_k)["documents"] if d.content]
    scored = teacher.run(query=question.question, documents=documents, top_k=len(documents))["documents"]
    logits = {d.id: float(d.score if d.score is not None else 0.0) for d in scored}
    matches = answer_matcher(question.answers)
    gold = set(question.gold_ids)
    return TeacherRecord(
        id=question.id,
        question=question.question,
        answers=list(question.answers),
        source=question.source,
        gold_ids=list(question.gold_ids),
        passage_ids=[d.id for d in documents],
        retrieval=[float(d.score or 0.0) for d in documents],
        dense=[float(d.meta.get("dense_score", 0.0)) for d in documents],
        teacher=[logits[d.id] for d in documents],
        has_answer=[matches(d.content or "") for d in documents],
        gold=[d.meta.get("document_id", d.id) in gold for d in documents],
    )


def score_to_file(
    questions: Sequence[TeacherQuestion],
    first_stage: FirstStage,
    teacher: Teacher,
    out: Path,
    top_k: int = 20,
    batch_size: int = 8,
    show_progress: bool = True,
    deadline: Deadline | None = None,
    desc: str | None = None,
) -> tuple[int, int]:
    """Score every question of ``questions`` not yet in ``out`` and append it; returns (resumed, written).

    Question ids must be unique. With ``deadline``, scoring stops before the first batch after it passed
    (the questions left are scored when the same call is made again)."""
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"question id {duplicate!r} occurs twice: ids must be unique to resume scoring")
    done = resume_ids(out)
    todo = [q for q in questions if q.id not in done]
    written = 0
    bar = tqdm(total=len(todo), desc=desc or f"teacher scores -> {out.name}", unit="q", disable=not show_progress)
    with TeacherWriter(out) as writer:
        for batch in iter_batches(todo, batch_size):
            if deadline is not None and deadline.passed():
                break
            writer.write([score_question(q, first_stage, teacher, top_k) for q in batch])
            written += len(batch)
            bar.update(len(batch))
    bar.close()
    return len(done & set(ids)), written
