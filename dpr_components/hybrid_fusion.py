"""The DPR paper's hybrid score (Karpukhin et al. 2020, section 5.1) in one place, shared by the
store's array path (``HybridRetriever``), ``HybridRanker`` mode ``dpr`` and the λ fit.

The rules:

- the union: the dense list first, then the documents only BM25 found, in BM25 order;
- the score: ``BM25 + λ·sim`` in float64, each side exact;
- a missing score counts 0: a document BM25 cannot score adds nothing, and a document without a
  vector ranks on BM25 alone;
- ties: equal fused scores keep the union order (a stable sort);
- the first-hit rank used to fit λ breaks ties against the hit, so a fitted accuracy is never optimistic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

import numpy as np

if TYPE_CHECKING:
    from haystack import Document


class ScoredUnion(NamedTuple):
    """The union the hybrid ranks, in fusion order: each member's content, the id of the document it
    was cut from (``meta["document_id"]``, else its own id), its exact BM25 score and dense score."""

    contents: list[str]
    document_ids: list[str]
    bm25: np.ndarray
    dense: np.ndarray


class IdentifiedPassage(Protocol):
    """A stored or retrieved passage: its id and meta."""

    id: str
    meta: dict[str, Any]


def source_document_id(document: IdentifiedPassage) -> str:
    """The id of the document a passage was cut from (the passage splitter's ``meta["document_id"]``),
    else the passage's own id."""
    return str(document.meta.get("document_id", document.id))


def union_rowids(dense_rowids: np.ndarray, bm25_rowids: np.ndarray) -> np.ndarray:
    """The union of two lists of row ids in fusion order (int64)."""
    return np.concatenate([dense_rowids, bm25_rowids[~np.isin(bm25_rowids, dense_rowids)]]).astype(np.int64)


def union_by_id(dense_documents: Sequence[Document], bm25_documents: Sequence[Document]) -> dict[str, Document]:
    """The union of two lists of Documents by id, in fusion order (the first copy of an id is kept)."""
    by_id: dict[str, Document] = {}
    for doc in [*dense_documents, *bm25_documents]:
        by_id.setdefault(doc.id, doc)
    return by_id


def scores_or_zero(scores: Iterable[float | None]) -> np.ndarray:
    """One side's scores as float64, a missing score (None) as 0."""
    return np.array([score or 0.0 for score in scores], dtype=np.float64)


def fused_scores(bm25: np.ndarray, dense: np.ndarray, weight: float) -> np.ndarray:
    """``BM25 + weight · sim`` of each union member."""
    return bm25 + weight * dense


def fused_order(fused: np.ndarray, top_k: int) -> np.ndarray:
    """Positions of the best ``top_k`` fused scores, best first; equal scores keep the union order."""
    return np.argsort(-fused, kind="stable")[:top_k]


def fused_first_hit_rank(fused: np.ndarray, hits: np.ndarray, max_k: int) -> int | None:
    """1-based rank of the first hit in the fused ranking, None when no hit is within ``max_k``.

    Ties are broken against the hit: the rank a stable sort would give if every non-hit came
    before the hits of the same score. Counted rather than sorted: fitting λ re-ranks every
    question at every weight of the grid."""
    if not hits.any():
        return None
    best_hit = fused[hits].max()
    rank = int((fused > best_hit).sum() + (fused[~hits] == best_hit).sum() + 1)
    return rank if rank <= max_k else None


FusionMode = Literal["dpr", "rrf"]
# each document id -> its (BM25, dense) scores, None where a side has none
Scores = dict[str, tuple[float | None, float | None]]


def rrf_scores(rankings: list[list[str]], k: int) -> dict[str, float]:
    """Reciprocal rank fusion (Cormack et al. 2009): ``Σ 1 / (k + rank)`` of each id over ``rankings``."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (k + rank)
    return scores
