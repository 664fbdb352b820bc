"""The hybrid's fusion rules on hand-made arrays: union order, missing scores, ties, λ = 0, the top-k cut
and the first-hit rank the λ fit uses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from dpr_components.evaluation.retrieval_metrics import first_hit_rank
from dpr_components.hybrid_fusion import (
    fused_first_hit_rank,
    fused_order,
    fused_scores,
    scores_or_zero,
    union_by_id,
    union_rowids,
)
from haystack_integrations.components.rankers.dpr.hybrid_ranker import HybridRanker
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore


def test_union_is_the_dense_list_then_bm25_only_rows() -> None:
    union = union_rowids(np.array([7, 3, 5]), np.array([5, 9, 7, 1]))
    assert union.tolist() == [7, 3, 5, 9, 1]
    assert union.dtype == np.int64


def test_document_union_keeps_the_same_order_and_the_first_copy() -> None:
    dense = [Document(id="7", content="dense copy"), Document(id="3")]
    bm25 = [Document(id="9"), Document(id="7", content="bm25 copy")]
    by_id = union_by_id(dense, bm25)
    assert list(by_id) == ["7", "3", "9"]
    assert by_id["7"].content == "dense copy"


def test_a_missing_score_counts_zero() -> None:
    bm25 = scores_or_zero([2.0, None, 1.5])  # the middle document: BM25 cannot score it
    dense = scores_or_zero([None, 0.5, 0.25])  # the first: no vector
    assert bm25.dtype == dense.dtype == np.float64
    assert fused_scores(bm25, dense, 2.0).tolist() == [2.0, 1.0, 2.0]


def test_equal_scores_keep_the_union_order() -> None:
    fused = np.array([1.0, 3.0, 1.0, 3.0, 2.0])
    assert fused_order(fused, 5).tolist() == [1, 3, 4, 0, 2]


def test_weight_zero_ranks_on_bm25_alone() -> None:
    bm25, dense = np.array([1.0, 2.0, 2.0]), np.array([9.0, -1.0, 5.0])
    fused = fused_scores(bm25, dense, 0.0)
    assert fused.tolist() == bm25.tolist()
    assert fused_order(fused, 3).tolist() == [1, 2, 0]  # the tie stays in union order


def test_top_k_cuts_the_ranking() -> None:
    fused = np.array([0.5, 4.0, 2.0, 3.0])
    assert fused_order(fused, 2).tolist() == [1, 3]
    assert fused_order(fused, 10).tolist() == [1, 3, 2, 0]


def test_first_hit_rank_breaks_ties_against_the_hit() -> None:
    fused = np.array([3.0, 2.0, 2.0, 1.0])
    assert fused_first_hit_rank(fused, np.array([False, True, False, False]), 100) == 3
    assert fused_first_hit_rank(fused, np.array([False, True, True, False]), 100) == 2
    assert fused_first_hit_rank(fused, np.array([False, False, False, True]), 3) is None  # beyond max_k
    assert fused_first_hit_rank(fused, np.zeros(4, dtype=bool), 100) is None


@pytest.mark.parametrize("seed", range(20))
def test_first_hit_rank_is_the_rank_of_the_pessimistic_ranking(seed: int) -> None:
    """The counted rank equals ``first_hit_rank`` of the ranking with non-hits first among equals."""
    rng = np.random.default_rng(seed)
    fused = rng.integers(0, 4, size=12).astype(np.float64)  # few values: many ties
    hits = rng.random(12) < 0.3
    pessimistic = np.lexsort((hits, -fused))
    expected = first_hit_rank(hits[pessimistic][:5].tolist())
    assert fused_first_hit_rank(fused, hits, 5) == expected


def test_the_store_and_the_ranker_rank_alike_ties_included(tmp_path: Path) -> None:
    """``HybridRetriever``'s array path in the store and ``HybridRanker`` fuse with the same functions."""
    documents = [
        Document(id="twin1", content="honey bee river", embedding=[1.0, 0.0]),
        Document(id="twin2", content="honey bee river", embedding=[1.0, 0.0]),  # ties twin1 on both sides
        Document(id="bee", content="bee", embedding=[0.5, 0.5]),
        Document(id="vectorless", content="honey honey river"),  # ranks on BM25 alone
        Document(id="far", content="zebra stripe", embedding=[0.0, 1.0]),
    ]
    store = EmbeddedDocumentStore(path=str(tmp_path / "store"))
    store.write_documents(documents)
    query, embedding = "honey bee", [1.0, 0.2]
    ranker = HybridRanker(document_store=store, weight=0.7, top_k=4)
    for candidates in (2, 5):
        bm25 = store.bm25_retrieval(query, candidates)
        dense = store.embedding_retrieval(embedding, candidates)
        composed = ranker.run(bm25, dense, query=query, query_embedding=embedding)["documents"]
        in_store = store.hybrid_search(query, embedding, 0.7, 4, candidates)
        assert [(d.id, d.score, d.meta["bm25_score"], d.meta["dense_score"]) for d in in_store] == [
            (d.id, d.score, d.meta["bm25_score"], d.meta["dense_score"]) for d in composed
        ]
    assert [d.id for d in in_store][:2] == [d.id for d in dense if d.id.startswith("twin")]  # the tie: union order
