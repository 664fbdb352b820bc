"""The DPR paper's exact hybrid inside the store (Karpukhin et al. 2020, section 5.1): the union of
the BM25 and dense top-N lists, every member scored both ways, ``BM25 + λ·sim`` (the fusion rules
are :mod:`dpr_components.hybrid_fusion`'s, shared with ``HybridRanker`` and the λ fit).

Done on arrays of row ids and scores, with no document built until the final top k: passing
thousands of Documents between pipeline components costs far more than the search itself
(Haystack copies every component input)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dpr_components.document_stores.store_backend import bm25_positions_in
from dpr_components.hybrid_fusion import fused_order, fused_scores, union_rowids

if TYPE_CHECKING:
    from dpr_components.document_stores.store_backend import StoreBackend


@dataclass
class HybridCandidates:
    """A question's union of both lists in fusion order (dense list first, then BM25-only rows in
    BM25 order), with each row's exact BM25 score and dense score (``has_vector`` False: no vector, 0)."""

    rowids: np.ndarray
    bm25: np.ndarray
    dense: np.ndarray
    has_vector: np.ndarray

    def fused(self, weight: float) -> np.ndarray:
        """``BM25 + weight · sim`` per row, in float64 (a row without a vector ranks on BM25 alone)."""
        return fused_scores(self.bm25, self.dense, weight)

    def ranking(self, weight: float, top_k: int) -> np.ndarray:
        """Positions of the best ``top_k`` rows; equal scores keep the union order."""
        return fused_order(self.fused(weight), top_k)


def dense_similarities(vectors: np.ndarray, query: np.ndarray, similarity: str) -> np.ndarray:
    """``sim(q, p)`` of each row of ``vectors`` (float32): dot product, cosine or negative squared L2."""
    if len(vectors) == 0:
        return np.zeros(0, dtype=np.float32)
    if similarity == "l2":
        return -np.sum((vectors - query) ** 2, axis=1)
    # einsum, not ``vectors @ query``: numpy's BLAS starts its own thread pool for a product this
    # small, and on a busy machine those threads made it 50x slower than this loop.
    scores = np.einsum("ij,j->i", vectors, query)
    if similarity == "cosine":
        norms = np.maximum(np.linalg.norm(vectors, axis=1) * np.linalg.norm(query), 1e-12)
        scores = scores / norms
    return scores.astype(np.float32)


def exact_dense_scores(
    backend: StoreBackend, rowids: np.ndarray, query: np.ndarray, similarity: str
) -> tuple[np.ndarray, np.ndarray]:
    """Dense score of each row and whether it has a vector: from the FAISS index when it keeps exact
    vectors (no SQLite round trip), else from the stored vectors."""
    scores = np.zeros(len(rowids), dtype=np.float32)
    has_vector = np.zeros(len(rowids), dtype=np.bool_)
    if len(rowids) == 0 or backend.embedding_dim is None:
        return scores, has_vector
    index = backend.dense()
    if index is not None:
        try:
            vectors = index.stored_vectors(rowids)
        except RuntimeError:  # a row without a vector: read them all from the table instead
            vectors = None
        if vectors is not None:
            return dense_similarities(vectors, query, similarity), np.ones(len(rowids), dtype=np.bool_)
    found = backend.table.vectors_for(rowids.tolist())
    present = [i for i, r in enumerate(rowids.tolist()) if r in found]
    if present:
        matrix = np.stack([found[int(rowids[i])] for i in present]).astype(np.float32, copy=False)
        scores[present] = dense_similarities(matrix, query, similarity)
        has_vector[present] = True
    return scores, has_vector


def hybrid_candidates(
    backend: StoreBackend,
    query: str,
    query_vector: np.ndarray,
    candidates: int,
    similarity: str,
    allowed_rowids: np.ndarray | None = None,
    dense_rowids: np.ndarray | None = None,
) -> HybridCandidates:
    """Both top-``candidates`` lists, their union and its exact scores, from one BM25 pass.

    ``dense_rowids``: the dense list when already searched (batched search); else searched here."""
    bm25_index, bm25_rowids = backend.bm25()
    mask = np.isin(bm25_rowids, allowed_rowids) if allowed_rowids is not None else None
    positions, _, all_bm25 = bm25_index.search_and_scores(query, candidates, mask)
    bm25_list = bm25_rowids[positions]
    if dense_rowids is None:
        dense_index = backend.dense()
        dense_rowids = (
            dense_index.search(query_vector, candidates, allowed_rowids)[0]
            if dense_index is not None
            else np.zeros(0, dtype=np.int64)
        )
    union = union_rowids(dense_rowids, bm25_list)
    union_positions = bm25_positions_in(bm25_index, bm25_rowids, union)  # the same index as the scores
    bm25 = np.where(union_positions >= 0, all_bm25[np.maximum(union_positions, 0)], 0.0).astype(np.float64)
    dense, has_vector = exact_dense_scores(backend, union, query_vector, similarity)
    return HybridCandidates(union, bm25, dense.astype(np.float64) * has_vector, has_vector)
