"""Haystack evaluator components for DPR's retrieval accuracy and SQuAD-style EM/F1.

Following Haystack's evaluators, ``score`` is a fraction in [0, 1] and ``individual_scores``
has one value per question; the DPR-style summaries (``top_k_accuracy``, ``exact_match``,
``f1``) are percentages, as the DPR paper reports them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from dpr_components.evaluation.answer_matching import MatchMode
from dpr_components.evaluation.answer_metrics import exact_match, f1
from dpr_components.evaluation.retrieval_metrics import (
    DEFAULT_MAX_K,
    top_k_accuracy_from_ranks,
    validate_ks,
    mrr_from_ranks,
    first_hit_rank_for,
)


def _check_batch(ground_truth_answers: Sequence[Sequence[str]], other: Sequence[Any], other_name: str) -> None:
    if not ground_truth_answers or not other:
        raise ValueError(f"ground_truth_answers and {other_name} must both be non-empty")
    if len(ground_truth_answers) != len(other):
        raise ValueError(
            f"ground_truth_answers has {len(ground_truth_answers)} entries but {other_name} has {len(other)}"
        )
    for index, answers in enumerate(ground_truth_answers):
        if isinstance(answers, str) or not answers:
            raise ValueError(f"ground_truth_answers[{index}] must be a non-empty list of answer strings")


def _passage_texts(documents: Sequence[Document], question_index: int) -> list[str]:
    texts = []
    for rank, document in enumerate(documents):
        if document.content is None:
            raise ValueError(
                f"retrieved_documents[{question_index}][{rank}] (id {document.id}) has no content; "
                "answer matching needs the passage text"
            )
        texts.append(document.content)
    return texts


@component
class RetrievalAccuracyEvaluator:
    """DPR's top-k retrieval accuracy: a question counts at k if one of its first k documents
    contains a gold answer. Matching uses ``Document.content`` only, never ``meta["title"]``.

    Outputs: ``score`` (fraction of questions with a hit within the largest k),
    ``individual_scores`` (1.0/0.0 per question at the largest k), ``top_k_accuracy``
    ({k: percent}), ``mrr`` (MRR@``mrr_cutoff``, in [0, 1]) and ``first_hit_ranks``
    (1-based rank of the first answer-containing document, None if no retrieved one has an answer)."""

    def __init__(
        self, ks: Sequence[int] = (1, 5, 20, 100), match_mode: MatchMode = "string", mrr_cutoff: int = DEFAULT_MAX_K
    ) -> None:
        """``match_mode="regex"`` treats the gold answers as regular expressions (CuratedTREC)."""
        if match_mode not in ("string", "regex"):
            raise ValueError(f"match_mode must be 'string' or 'regex', got {match_mode!r}")
        if isinstance(mrr_cutoff, bool) or not isinstance(mrr_cutoff, int) or mrr_cutoff < 1:
            raise ValueError(f"mrr_cutoff must be a positive integer, got {mrr_cutoff!r}")
        self.ks = validate_ks(ks)
        self.match_mode: MatchMode = match_mode
        self.mrr_cutoff = mrr_cutoff

    @component.output_types(
        score=float,
        individual_scores=list[float],
        top_k_accuracy=dict[int, float],
        mrr=float,
        first_hit_ranks=list[int | None],
    )
    def run(self, ground_truth_answers: list[list[str]], retrieved_documents: list[list[Document]]) -> dict[str, Any]:
        """Score each question's ranked documents against its gold answers."""
        _check_batch(ground_truth_answers, retrieved_documents, "retrieved_documents")
        ranks = [
            first_hit_rank_for(answers, _passage_texts(documents, index), self.match_mode)
            for index, (answers, documents) in enumerate(zip(ground_truth_answers, retrieved_documents, strict=True))
        ]
        largest_k = self.ks[-1]
        individual = [1.0 if rank is not None and rank <= largest_k else 0.0 for rank in ranks]
        return {
            "score": sum(individual) / len(individual),
            "individual_scores": individual,
            "top_k_accuracy": top_k_accuracy_from_ranks(ranks, self.ks),
            "mrr": mrr_from_ranks(ranks, self.mrr_cutoff),
            "first_hit_ranks": ranks,
        }

    def to_dict(self) -> dict[str, Any]:
        """Serialise the init parameters."""
        return default_to_dict(self, ks=list(self.ks), match_mode=self.match_mode, mrr_cutoff=self.mrr_cutoff)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetrievalAccuracyEvaluator:
        """Rebuild from :meth:`to_dict` output."""
        return default_from_dict(cls, data)


@component
class AnswerExactMatchF1Evaluator:
    """SQuAD v1.1 exact match and token F1 of one predicted answer per question, each the
    maximum over that question's gold answers. A None or blank prediction scores 0.

    Outputs: ``exact_match`` and ``f1`` (percent), ``score`` (exact-match fraction),
    ``individual_scores`` (exact match 1.0/0.0 per question) and ``individual_f1``
    (F1 in [0, 1] per question)."""

    @component.output_types(
        exact_match=float, f1=float, score=float, individual_scores=list[float], individual_f1=list[float]
    )
    def run(self, ground_truth_answers: list[list[str]], predicted_answers: list[str | None]) -> dict[str, Any]:
        """Score each prediction against its gold answers."""
        _check_batch(ground_truth_answers, predicted_answers, "predicted_answers")
        ems: list[float] = []
        f1s: list[float] = []
        for golds, prediction in zip(ground_truth_answers, predicted_answers, strict=True):
            # SQuAD's normalisation maps e.g. "the" to "", which would equal an all-article gold.
            if prediction is None or not prediction.strip():
                ems.append(0.0)
                f1s.append(0.0)
                continue
            ems.append(exact_match(prediction, golds))
            f1s.append(f1(prediction, golds))
        n = len(ems)
        return {
            "exact_match": 100.0 * sum(ems) / n,
            "f1": 100.0 * sum(f1s) / n,
            "score": sum(ems) / n,
            "individual_scores": ems,
            "individual_f1": f1s,
        }

    def to_dict(self) -> dict[str, Any]:
        """Serialise (no init parameters)."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerExactMatchF1Evaluator:
        """Rebuild from :meth:`to_dict` output."""
        return default_from_dict(cls, data)
