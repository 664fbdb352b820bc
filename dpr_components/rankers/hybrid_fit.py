"""Fit λ of the DPR hybrid (BM25 + λ·sim) on dev questions: candidate scores, the accuracy curve, the best λ.

For each question the union of both retrievers' top-N is scored once both ways; every λ of
the grid then only re-sorts those arrays, so a fine grid costs little."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from haystack import Document

from dpr_components.evaluation.answer_matching import MatchMode
from dpr_components.evaluation.retrieval_metrics import (
    answer_hits,
    top_k_accuracy_from_ranks,
)
from dpr_components.hybrid_fusion import (
    ScoredUnion,
    fused_first_hit_rank,
    fused_scores,
    scores_or_zero,
    source_document_id,
    union_by_id,
)

DEFAULT_GRID = tuple([0.0] + [float(x) for x in np.round(np.logspace(-2, 3, 51), 4)])


@dataclass
class Candidates:
    """One question's union of candidates: BM25 score, dense score and answer hit of each."""

    bm25: np.ndarray
    dense: np.ndarray
    hits: np.ndarray


def union_from_lists(
    backend: Any,
    query: str,
    query_embedding: Sequence[float],
    bm25_documents: list[Document],
    dense_documents: list[Document],
) -> ScoredUnion:
    """The union of both lists (dense first, as HybridRanker fuses it), scored exactly both ways
    (0 for a document without a vector)."""
    by_id = union_by_id(dense_documents, bm25_documents)
    scores = backend.score_documents(list(by_id), query, query_embedding)
    ids = [i for i in by_id if i in scores]
    bm25 = scores_or_zero(scores[i][0] for i in ids)
    dense = scores_or_zero(scores[i][1] for i in ids)
    sources = [source_document_id(by_id[i]) for i in ids]
    return ScoredUnion([by_id[i].content or "" for i in ids], sources, bm25, dense)


def collect_candidates(
    union: ScoredUnion,
    answers: Sequence[str],
    match_mode: MatchMode = "string",
    gold_ids: Sequence[str] = (),
) -> Candidates:
    """A question's scored union with the hit of each member: a passage of one of the ``gold_ids``
    documents when given (the selection splits), else a passage holding an answer."""
    if gold_ids:
        gold = set(gold_ids)
        hits = np.array([document_id in gold for document_id in union.document_ids], dtype=np.bool_)
    else:
        hits = np.array(answer_hits(answers, list(union.contents), match_mode), dtype=np.bool_)
    return Candidates(np.asarray(union.bm25, dtype=np.float64), np.asarray(union.dense, dtype=np.float64), hits)


def hybrid_first_hit_rank(candidates: Candidates, weight: float, max_k: int = 100) -> int | None:
    """1-based rank of the first answer-bearing passage under BM25 + weight·sim, or None within max_k
    (ties broken against the answer)."""
    return fused_first_hit_rank(fused_scores(candidates.bm25, candidates.dense, weight), candidates.hits, max_k)


def lambda_curve(
    questions: Sequence[Candidates], weights: Sequence[float] = DEFAULT_GRID, ks: Sequence[int] = (1, 5, 20, 100)
) -> list[dict[str, Any]]:
    """Top-k accuracy (percent) at every weight of the grid."""
    curve = []
    for weight in weights:
        ranks = [hybrid_first_hit_rank(c, weight, max(ks)) for c in questions]
        curve.append({"weight": float(weight), "top_k": top_k_accuracy_from_ranks(ranks, list(ks))})
    return curve


def best_weight(curve: list[dict[str, Any]], objective_ks: Sequence[int] = (1, 5, 20)) -> float:
    """The weight with the highest mean top-k accuracy over ``objective_ks`` (smallest weight on ties)."""

    def objective(point: dict[str, Any]) -> float:
        return float(np.mean([point["top_k"][k] for k in objective_ks]))

    return max(curve, key=lambda p: (objective(p), -p["weight"]))["weight"]
