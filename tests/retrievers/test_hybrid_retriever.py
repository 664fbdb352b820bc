"""HybridRetriever: the same ranking as BM25Retriever + DenseRetriever -> HybridRanker, computed in the store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.document_stores.in_memory import InMemoryDocumentStore

from dpr_components.rankers.hybrid_fit import union_from_lists
from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder
from haystack_integrations.components.rankers.dpr.hybrid_ranker import HybridRanker
from haystack_integrations.components.retrievers.dpr.bm25_retriever import BM25Retriever
from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
from haystack_integrations.components.retrievers.dpr.hybrid_retriever import HybridRetriever
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

WORDS = "river mountain honey bee zebra stripe king queen castle ocean island tragedy comedy war peace".split()
QUESTIONS = ["honey bee river", "zebra stripe", "tragedy king castle", "ocean island peace war", "queen"]


def _corpus(n: int, seed: int = 0) -> list[Document]:
    rng = np.random.default_rng(seed)
    return [
        Document(
            id=f"d{i}",
            content=" ".join(rng.choice(WORDS, size=int(rng.integers(3, 12)))),
            meta={"title": f"T{i % 7}", "group": int(i % 3)},
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def embedded_documents(tiny_st_dir: Path) -> list[Document]:
    embedder = PassageEmbedder(model=str(tiny_st_dir), progress_bar=False)
    embedder.warm_up()
    return embedder.run(documents=_corpus(60))["documents"]


def _store(tmp_path: Path, documents: list[Document], **settings: object) -> EmbeddedDocumentStore:
    store = EmbeddedDocumentStore(path=str(tmp_path / "store"), **settings)
    store.write_documents(documents)
    return store


def _composed(store: EmbeddedDocumentStore, model: Path, candidates: int, weight: float, top_k: int) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("bm25", BM25Retriever(document_store=store, top_k=candidates))
    pipeline.add_component("dense", DenseRetriever(document_store=store, model=str(model), top_k=candidates))
    pipeline.add_component("ranker", HybridRanker(document_store=store, weight=weight, top_k=top_k))
    pipeline.connect("bm25.documents", "ranker.bm25_documents")
    pipeline.connect("dense.documents", "ranker.dense_documents")
    pipeline.connect("dense.query_embedding", "ranker.query_embedding")
    return pipeline


def _ranked(documents: list[Document]) -> list[tuple[str, float, float, float | None]]:
    return [(d.id, d.score, d.meta["bm25_score"], d.meta["dense_score"]) for d in documents]


@pytest.mark.parametrize("factory", ["Flat", "HNSW16", "IVF4,PQ4x4"])
@pytest.mark.parametrize("weight", [0.0, 0.7, 30.0])
def test_same_ranking_as_the_composed_pipeline(
    tmp_path: Path, tiny_st_dir: Path, embedded_documents: list[Document], factory: str, weight: float
) -> None:
    """Exact scores, same order (ties included) for every index type: lossy indexes read vectors from SQLite."""
    store = _store(tmp_path, embedded_documents, index_factory=factory)
    composed = _composed(store, tiny_st_dir, candidates=8, weight=weight, top_k=6)
    retriever = HybridRetriever(document_store=store, model=str(tiny_st_dir), candidates=8, weight=weight, top_k=6)
    retriever.warm_up()
    for question in QUESTIONS:
        expected = composed.run(
            {"bm25": {"query": question}, "dense": {"query": question}, "ranker": {"query": question}},
            include_outputs_from={"dense"},
        )
        got = retriever.run(query=question)
        assert _ranked(got["documents"]) == _ranked(expected["ranker"]["documents"]), question
        assert got["query_embedding"] == expected["dense"]["query_embedding"]


def test_filters_batch_async_and_serialisation(
    tmp_path: Path, tiny_st_dir: Path, embedded_documents: list[Document]
) -> None:
    store = _store(tmp_path, embedded_documents)
    retriever = HybridRetriever(
        document_store=store,
        model=str(tiny_st_dir),
        candidates=10,
        weight=2.0,
        top_k=5,
        filters={"field": "meta.group", "operator": "==", "value": 1},
    )
    retriever.warm_up()
    one_by_one = [retriever.run(query=q)["documents"] for q in QUESTIONS]
    assert all(d.meta["group"] == 1 for documents in one_by_one for d in documents)
    assert [_ranked(d) for d in retriever.search_batch(QUESTIONS, batch_size=2)] == [_ranked(d) for d in one_by_one]
    assert _ranked(asyncio.run(retriever.run_async(query=QUESTIONS[0]))["documents"]) == _ranked(one_by_one[0])
    rebuilt = HybridRetriever.from_dict(retriever.to_dict())
    assert (rebuilt.candidates, rebuilt.weight, rebuilt.top_k, rebuilt.filters) == (10, 2.0, 5, retriever.filters)


def test_union_for_fitting_equals_the_ranker_path(
    tmp_path: Path, tiny_st_dir: Path, embedded_documents: list[Document]
) -> None:
    store = _store(tmp_path, embedded_documents)
    retriever = HybridRetriever(document_store=store, model=str(tiny_st_dir), candidates=7)
    retriever.warm_up()
    for question in QUESTIONS:
        union = retriever.union_scores(question)
        embedding = retriever.dense.embedder.run(query=question)["embedding"]
        expected = union_from_lists(
            HybridRanker(document_store=store).scoring_backend,
            question,
            embedding,
            store.bm25_retrieval(question, 7),
            store.embedding_retrieval(embedding, 7),
        )
        assert union.contents == expected.contents and union.document_ids == expected.document_ids
        assert union.bm25.tolist() == expected.bm25.tolist() and union.dense.tolist() == expected.dense.tolist()


def test_documents_without_vectors_rank_on_bm25(
    tmp_path: Path, tiny_st_dir: Path, embedded_documents: list[Document]
) -> None:
    plain = [Document(id="plain", content="zebra stripe zebra stripe zebra", meta={"title": "Z"})]
    store = _store(tmp_path, embedded_documents + plain)
    retriever = HybridRetriever(document_store=store, model=str(tiny_st_dir), candidates=20, weight=1.0, top_k=20)
    retriever.warm_up()
    composed = _composed(store, tiny_st_dir, candidates=20, weight=1.0, top_k=20)
    q = "zebra stripe"
    got = retriever.run(query=q)["documents"]
    assert _ranked(got) == _ranked(
        composed.run({"bm25": {"query": q}, "dense": {"query": q}, "ranker": {"query": q}})["ranker"]["documents"]
    )
    plain_doc = next(d for d in got if d.id == "plain")
    assert plain_doc.meta["dense_score"] is None and plain_doc.score == pytest.approx(plain_doc.meta["bm25_score"])


def test_stores_without_exact_scoring_are_refused(tiny_st_dir: Path) -> None:
    with pytest.raises(ValueError, match="cannot score given documents exactly"):
        HybridRetriever(document_store=InMemoryDocumentStore(), model=str(tiny_st_dir))


def test_bad_settings_are_clear_errors(tmp_path: Path, tiny_st_dir: Path, embedded_documents: list[Document]) -> None:
    store = _store(tmp_path, embedded_documents)
    with pytest.raises(ValueError, match="candidates must be a positive integer"):
        HybridRetriever(document_store=store, model=str(tiny_st_dir), candidates=0)
    with pytest.raises(ValueError, match="weight"):
        HybridRetriever(document_store=store, model=str(tiny_st_dir), weight=float("nan"))
    retriever = HybridRetriever(document_store=store, model=str(tiny_st_dir))
    retriever.warm_up()
    with pytest.raises(ValueError, match="query"):
        retriever.run(query="   ")
    with pytest.raises(ValueError, match="dimension"):
        retriever.run(query="zebra", query_embedding=[0.1, 0.2])
