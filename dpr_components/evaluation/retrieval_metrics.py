"""Retrieval metrics over answer hits: DPR's top-k accuracy (Karpukhin et al. 2020, section 5.1:
the share of questions with an answer-containing passage among the top k) and MRR."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from dpr_components.evaluation.answer_matching import (
    MatchMode,
    answer_matcher,
    joined_tokens,
)

DEFAULT_MAX_K = 100


@lru_cache(maxsize=131072)  # holds a 55k-passage pool
def _cached_joined_tokens(text: str) -> str:
    return joined_tokens(text)


def _hit_stream(answers: Sequence[str], passage_texts: Iterable[str], mode: MatchMode) -> Iterator[bool]:
    # Evaluation matches the same passages against many questions: their tokens are cached.
    matches = answer_matcher(answers, mode, _cached_joined_tokens)
    return (matches(text) for text in passage_texts)


def answer_hits(answers: Sequence[str], passage_texts: Sequence[str], mode: MatchMode = "string") -> list[bool]:
    """For each passage, whether it contains any of ``answers`` (``has_answer``'s rule)."""
    return list(_hit_stream(answers, passage_texts, mode))


def first_hit_rank(hits: Iterable[bool]) -> int | None:
    """1-based rank of the first hit, or None if no passage hits."""
    for rank, hit in enumerate(hits, start=1):
        if hit:
            return rank
    return None


def gold_document_rank(gold_ids: Iterable[str], document_ids: Iterable[str]) -> int | None:
    """1-based rank of the first passage cut from a gold document, or None (the selection splits'
    rule for NQ train, whose answers are long spans: gold-passage hits, not answer matching)."""
    gold = set(gold_ids)
    return first_hit_rank(document_id in gold for document_id in document_ids)


def validate_ks(ks: Iterable[int]) -> list[int]:
    """Sorted, de-duplicated ks; each must be a positive integer."""
    checked = sorted(set(ks))
    if not checked:
        raise ValueError("ks must contain at least one k")
    for k in checked:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"every k must be a positive integer, got {k!r}")
    return checked


def top_k_accuracy_from_ranks(ranks: Sequence[int | None], ks: Sequence[int]) -> dict[int, float]:
    """Top-k accuracy in percent for each k, from first-hit ranks (None means no hit)."""
    if not ranks:
        raise ValueError("cannot compute accuracy over zero questions")
    found = sorted(rank for rank in ranks if rank is not None)
    accuracy: dict[int, float] = {}
    position = 0
    for k in sorted(ks):  # with ks sorted, one pass over the sorted ranks suffices
        while position < len(found) and found[position] <= k:
            position += 1
        accuracy[k] = 100.0 * position / len(ranks)
    return accuracy


def top_k_accuracy(hits_per_question: Sequence[Sequence[bool]], ks: Iterable[int]) -> dict[int, float]:
    """Percent of questions with a hit among their first k passages, for each k.

    A question with fewer than k retrieved passages is judged on the ones it has."""
    return top_k_accuracy_from_ranks([first_hit_rank(hits) for hits in hits_per_question], validate_ks(ks))


def mrr_from_ranks(ranks: Sequence[int | None], cutoff: int) -> float:
    """MRR@cutoff from first-hit ranks (None means no hit)."""
    if not ranks:
        raise ValueError("cannot compute MRR over zero questions")
    if cutoff < 1:
        raise ValueError(f"cutoff must be a positive integer, got {cutoff!r}")
    return sum(1.0 / rank for rank in ranks if rank is not None and rank <= cutoff) / len(ranks)


def mean_reciprocal_rank(hits_per_question: Sequence[Sequence[bool]], cutoff: int = DEFAULT_MAX_K) -> float:
    """Mean of 1/rank of the first hit within ``cutoff`` (0 when none); a value in [0, 1]."""
    return mrr_from_ranks([first_hit_rank(hits) for hits in hits_per_question], cutoff)


@dataclass
class RetrievalResult:
    """Top-k accuracy (percent) for k = 1..max_k, MRR@max_k and each question's first-hit rank."""

    top_k: dict[int, float]
    mrr: float
    n_questions: int
    first_hit_ranks: list[int | None]
    question_ids: list[str] | None = None
    max_k: int = DEFAULT_MAX_K
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_ranks(
        cls, ranks: Sequence[int | None], max_k: int = DEFAULT_MAX_K, question_ids: Sequence[str] | None = None
    ) -> RetrievalResult:
        """Build from first-hit ranks (None for questions without a hit)."""
        if question_ids is not None and len(question_ids) != len(ranks):
            raise ValueError(f"got {len(question_ids)} question ids for {len(ranks)} questions")
        return cls(
            top_k=top_k_accuracy_from_ranks(ranks, validate_ks(range(1, max_k + 1))),
            mrr=mrr_from_ranks(ranks, max_k),
            n_questions=len(ranks),
            first_hit_ranks=list(ranks),
            question_ids=list(question_ids) if question_ids is not None else None,
            max_k=max_k,
        )

    @classmethod
    def from_hits(
        cls,
        hits_per_question: Sequence[Sequence[bool]],
        max_k: int = DEFAULT_MAX_K,
        question_ids: Sequence[str] | None = None,
    ) -> RetrievalResult:
        """Build from a hits matrix (one row of booleans per question, in rank order)."""
        return cls.from_ranks([first_hit_rank(hits) for hits in hits_per_question], max_k, question_ids)

    def accuracy(self, k: int) -> float:
        """Top-k accuracy in percent; a k beyond ``max_k`` is an error rather than a guess."""
        if k not in self.top_k:
            raise KeyError(f"top-{k} accuracy not computed (k runs from 1 to {self.max_k})")
        return self.top_k[k]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (k keys become strings)."""
        return {
            "n_questions": self.n_questions,
            "max_k": self.max_k,
            "mrr": self.mrr,
            "top_k_accuracy": {str(k): v for k, v in sorted(self.top_k.items())},
            "first_hit_ranks": self.first_hit_ranks,
            "question_ids": self.question_ids,
            "extra": self.extra,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetrievalResult:
        """Inverse of :meth:`to_dict`."""
        return cls(
            top_k={int(k): float(v) for k, v in data["top_k_accuracy"].items()},
            mrr=float(data["mrr"]),
            n_questions=int(data["n_questions"]),
            first_hit_ranks=list(data["first_hit_ranks"]),
            question_ids=data.get("question_ids"),
            max_k=int(data.get("max_k", DEFAULT_MAX_K)),
            extra=dict(data.get("extra") or {}),
        )


def first_hit_rank_for(answers: Sequence[str], passage_texts: Iterable[str], mode: MatchMode = "string") -> int | None:
    """Rank of the first passage containing an answer, stopping at the first hit."""
    return first_hit_rank(_hit_stream(answers, passage_texts, mode))


def evaluate_retrieval(
    answers_per_question: Sequence[Sequence[str]],
    passages_per_question: Sequence[Sequence[str]],
    mode: MatchMode = "string",
    max_k: int = DEFAULT_MAX_K,
    question_ids: Sequence[str] | None = None,
) -> RetrievalResult:
    """Match each question's top ``max_k`` passage texts against its answers and summarise."""
    if len(answers_per_question) != len(passages_per_question):
        raise ValueError(
            f"got answers for {len(answers_per_question)} questions but passages for {len(passages_per_question)}"
        )
    ranks = [
        first_hit_rank_for(answers, itertools.islice(passages, max_k), mode)
        for answers, passages in zip(answers_per_question, passages_per_question, strict=True)
    ]
    return RetrievalResult.from_ranks(ranks, max_k=max_k, question_ids=question_ids)
