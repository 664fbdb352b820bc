"""Fit λ of the DPR hybrid (BM25 + λ·sim) on dev questions: candidate scores, the accuracy curve, the best λ.

For each question the union of both retrievers' top-N is scored once both ways; every λ of
the grid then only re-sorts those arrays, so a fine grid costs little."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from haystack import Document

from dpr_components.evaluation.retrieval_metrics import answer_hits, top_k_accuracy_from_ranks

DEFAULT_GRID = tuple([0.0] + [float(x) for x in np.round(np.logspace(-2, 3, 51), 4)])


@dataclass
class Candidates:
    """One question's union of candidates: BM25 score, dense score and answer hit of each."""

    bm25: np.ndarray
    dense: np.ndarray
    hits: np.ndarray


def collect_candidates(
    backend: Any,
    query: str,
    query_embedding: Sequence[float],
    bm25_documents: list[Document],
    dense_documents: list[Document],
    answers: Sequence[str],
    match_mode: str = "string",
) -> Candidates:
    """Score the union of both lists exactly (as HybridRanker mode ``dpr`` does) and mark answer hits."""
    by_id: dict[str, Document] = {}
    for doc in [*dense_documents, *bm25_documents]:
        by_id.setdefault(doc.id, doc)
    ids = list(by_id)
    scores = backend.score_documents(ids, query, query_embedding)
    ids = [i for i in ids if i in scores]
    bm25 = np.array([scores[i][0] or 0.0 for i in ids], dtype=np.float64)
    dense = np.array([scores[i][1] or 0.0 for i in ids], dtype=np.float64)
    hits = np.array(answer_hits(answers, [by_id[i].content or "" for i in ids], match_mode), dtype=bool)
    return Candidates(bm25=bm25, dense=dense, hits=hits)


def first_hit_rank(candidates: Candidates, weight: float, max_k: int = 100) -> int | None:
    """1-based rank of the first answer-bearing passage under BM25 + weight·sim, or None within max_k."""
    if not candidates.hits.any():
        return None
    fused = candidates.bm25 + weight * candidates.dense
    best_hit = fused[candidates.hits].max()
    # Ties are broken against the hit, so a reported accuracy is never optimistic.
    rank = int((fused > best_hit).sum() + (fused[~candidates.hits] == best_hit).sum() + 1)
    return rank if rank <= max_k else None


def lambda_curve(
    questions: Sequence[Candidates], weights: Sequence[float] = DEFAULT_GRID, ks: Sequence[int] = (1, 5, 20, 100)
) -> list[dict[str, Any]]:
    """Top-k accuracy (percent) at every weight of the grid."""
    curve = []
    for weight in weights:
        ranks = [first_hit_rank(c, weight, max(ks)) for c in questions]
        curve.append({"weight": float(weight), "top_k": top_k_accuracy_from_ranks(ranks, list(ks))})
    return curve


def best_weight(curve: list[dict[str, Any]], objective_ks: Sequence[int] = (1, 5, 20)) -> float:
    """The weight with the highest mean top-k accuracy over ``objective_ks`` (smallest weight on ties)."""

    def objective(point: dict[str, Any]) -> float:
        return float(np.mean([point["top_k"][k] for k in objective_ks]))

    return max(curve, key=lambda p: (objective(p), -p["weight"]))["weight"]
