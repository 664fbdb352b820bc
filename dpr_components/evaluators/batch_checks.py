"""Checks shared by the evaluators: one entry per question on both sides, passages with text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haystack import Document


def check_batch(ground_truth_answers: Sequence[Sequence[str]], other: Sequence[Any], other_name: str) -> None:
    """One non-empty list of gold answers per question, and as many entries in ``other``."""
    if not ground_truth_answers or not other:
        raise ValueError(f"ground_truth_answers and {other_name} must both be non-empty")
    if len(ground_truth_answers) != len(other):
        raise ValueError(
            f"ground_truth_answers has {len(ground_truth_answers)} entries but {other_name} has {len(other)}"
        )
    for index, answers in enumerate(ground_truth_answers):
        if isinstance(answers, str) or not answers:
            raise ValueError(f"ground_truth_answers[{index}] must be a non-empty list of answer strings")


def check_gold_ids(gold_ids: Sequence[Sequence[str]], questions: int) -> None:
    """One non-empty list of gold document ids per question."""
    if len(gold_ids) != questions:
        raise ValueError(f"ground_truth_document_ids has {len(gold_ids)} entries for {questions} questions")
    for index, ids in enumerate(gold_ids):
        if isinstance(ids, str) or not ids:
            raise ValueError(f"ground_truth_document_ids[{index}] must be a non-empty list of document ids")


def passage_texts(documents: Sequence[Document], question_index: int) -> list[str]:
    """The text of each retrieved document; a document without text is an error naming it."""
    texts = []
    for rank, document in enumerate(documents):
        if document.content is None:
            raise ValueError(
                f"retrieved_documents[{question_index}][{rank}] (id {document.id}) has no content; "
                "answer matching needs the passage text"
            )
        texts.append(document.content)
    return texts
