"""Reader training passages as the re-ranking pipeline hands them to its reader.

A teacher file (``training/retriever/teacher_scores.py``: each question's hybrid candidates scored by
``PassageRanker``) gives, per question, its candidates re-ranked by the teacher's score, the best
first: what ``qa_rerank.yml`` reads. Mining from it (``--negatives-from ranking:FILE``) makes the
positives and hard negatives of reader training the passages the reader meets at query time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from dpr_components.dpr_data.teacher_file import read_teacher_file
from dpr_components.reader_training.data import SourceQuestion

RANKING_PREFIX = "ranking:"


def teacher_rankings(path: str | Path) -> dict[str, list[str]]:
    """Question text -> its candidates' ids, the teacher's best first (ties keep the retrieval order)."""
    rankings = {}
    for record in read_teacher_file(path):
        order = sorted(range(len(record.passage_ids)), key=lambda i: -record.teacher[i])
        rankings[record.question] = [record.passage_ids[i] for i in order]
    if not rankings:
        raise ValueError(f"{path}: the teacher file holds no question")
    return rankings


def ranking_retriever(
    store: Any, questions: Sequence[SourceQuestion], rankings: dict[str, list[str]], depth: int
) -> Callable[[int], list[Any]]:
    """A mining retriever: question index -> the store's documents of its ranking (none for a question
    the ranking does not have)."""

    def retrieve(index: int) -> list[Any]:
        ids = rankings.get(questions[index].question, [])[:depth]
        found = {document.id: document for document in store.get_documents_by_id(ids)} if ids else {}
        missing = [i for i in ids if i not in found]
        if missing:
            raise ValueError(f"{len(missing)} ranked passages are not in the store, e.g. {missing[:3]}")
        return [found[i] for i in ids]

    return retrieve


def with_short_answers(questions: list[SourceQuestion], max_words: int) -> list[SourceQuestion]:
    """The questions with their answers of at most ``max_words`` words (NQ-open's short-answer style), those
    left without an answer dropped."""
    kept = []
    for question in questions:
        answers = [answer for answer in question.answers if len(answer.split()) <= max_words]
        if answers:
            kept.append(replace(question, answers=answers))
    return kept
