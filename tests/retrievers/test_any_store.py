"""Retrievers and the hybrid ranker on a store that is not ours: Haystack's InMemoryDocumentStore."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from haystack import Document, Pipeline
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import FilterPolicy

from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder
from haystack_integrations.components.rankers.dpr.hybrid_ranker import HybridRanker
from haystack_integrations.components.retrievers.dpr.bm25_retriever import BM25Retriever
from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever

PASSAGES = {
    "hamlet": "Hamlet is a tragedy written by William Shakespeare around 1600.",
    "zebra": "Zebras are African equines with black and white striped coats.",
    "everest": "Mount Everest is the highest mountain above sea level, in the Himalayas.",
}


def _documents() -> list[Document]:
    return [
        Document(
            id=i, content=text, meta={"lang": "en" if i != "everest" else "de", "year": 2020 if i == "zebra" else 1999}
        )
        for i, text in PASSAGES.items()
    ]


@pytest.fixture
def text_store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    store.write_documents(_documents())
    return store


@pytest.fixture
def embedded_store(tiny_st_dir: Path) -> InMemoryDocumentStore:
    """Passages embedded by our PassageEmbedder, in a shared in-memory index a YAML pipeline can name."""
    store = InMemoryDocumentStore(index=f"any-store-{uuid.uuid4().hex}", embedding_similarity_function="dot_product")
    embedder = PassageEmbedder(model=str(tiny_st_dir))
    embedder.warm_up()
    store.write_documents(embedder.run(documents=_documents())["documents"])
    return store


def test_dense_retriever_on_in_memory_store(embedded_store: InMemoryDocumentStore, tiny_st_dir: Path) -> None:
    retriever = DenseRetriever(document_store=embedded_store, model=str(tiny_st_dir), top_k=2)
    retriever.warm_up()
    for doc_id, text in PASSAGES.items():
        result = retriever.run(query=text)
        assert result["documents"][0].id == doc_id
        assert len(result["documents"]) == 2 and len(result["query_embedding"]) == 32


def test_bm25_retriever_on_in_memory_store(text_store: InMemoryDocumentStore) -> None:
    retriever = BM25Retriever(document_store=text_store, top_k=3)
    assert retriever.run(query="striped zebras")["documents"][0].id == "zebra"
    assert retriever.run(query="Shakespeare tragedy", top_k=1)["documents"][0].id == "hamlet"
    scaled = BM25Retriever(document_store=text_store, scale_score=True).run(query="striped zebras")["documents"]
    raw = retriever.run(query="striped zebras")["documents"]
    assert 0.0 < scaled[0].score < 1.0 < raw[0].score


def test_filter_policy_replace_and_merge(text_store: InMemoryDocumentStore) -> None:
    english = {"field": "meta.lang", "operator": "==", "value": "en"}
    recent = {"field": "meta.year", "operator": "==", "value": 2020}
    german = {"field": "meta.lang", "operator": "==", "value": "de"}
    query = "Hamlet zebras Everest"
    replace = BM25Retriever(document_store=text_store, filters=english)
    assert {d.id for d in replace.run(query=query)["documents"]} == {"hamlet", "zebra"}
    assert {d.id for d in replace.run(query=query, filters=german)["documents"]} == {"everest"}
    merge = BM25Retriever(document_store=text_store, filters=english, filter_policy="merge")
    assert {d.id for d in merge.run(query=query, filters=recent)["documents"]} == {"zebra"}
    # Haystack's merge rule: a runtime condition on a field the init filters also test replaces theirs.
    assert {d.id for d in merge.run(query=query, filters=german)["documents"]} == {"everest"}
    assert merge.filter_policy is FilterPolicy.MERGE


def test_filter_policy_serialisation(text_store: InMemoryDocumentStore, tiny_st_dir: Path) -> None:
    for retriever in (
        BM25Retriever(document_store=text_store, filter_policy=FilterPolicy.MERGE, scale_score=True),
        DenseRetriever(document_store=text_store, model=str(tiny_st_dir), filter_policy="merge"),
    ):
        data = retriever.to_dict()
        assert data["init_parameters"]["filter_policy"] == "merge"
        again = type(retriever).from_dict(data)
        assert again.filter_policy is FilterPolicy.MERGE and again.to_dict() == retriever.to_dict()
        old = retriever.to_dict()
        del old["init_parameters"]["filter_policy"], old["init_parameters"]["scale_score"]
        assert type(retriever).from_dict(old).filter_policy is FilterPolicy.REPLACE
    with pytest.raises(ValueError, match="filter_policy must be 'replace' or 'merge', got 'both'"):
        BM25Retriever(document_store=text_store, filter_policy="both")


def test_hybrid_ranker_on_in_memory_store(embedded_store: InMemoryDocumentStore, tiny_st_dir: Path) -> None:
    with pytest.raises(ValueError, match=r"InMemoryDocumentStore cannot score given documents exactly.*use mode 'rrf'"):
        HybridRanker(document_store=embedded_store, mode="dpr")
    dense = DenseRetriever(document_store=embedded_store, model=str(tiny_st_dir), top_k=1)
    dense.warm_up()
    dense_documents = dense.run(query=PASSAGES["everest"])["documents"]
    bm25_documents = BM25Retriever(document_store=embedded_store, top_k=1).run(query="striped zebras")["documents"]
    assert [d.id for d in dense_documents] == ["everest"] and [d.id for d in bm25_documents] == ["zebra"]
    fused = HybridRanker(document_store=embedded_store, mode="rrf", rrf_k=1, top_k=3).run(
        bm25_documents, dense_documents
    )["documents"]
    assert {d.id for d in fused} == {"everest", "zebra"}
    assert all(d.score == pytest.approx(0.5) for d in fused)


def test_yaml_pipeline_with_in_memory_store(embedded_store: InMemoryDocumentStore, tiny_st_dir: Path) -> None:
    store = {
        "type": "haystack.document_stores.in_memory.document_store.InMemoryDocumentStore",
        "init_parameters": {"index": embedded_store.index, "embedding_similarity_function": "dot_product"},
    }
    pipeline = Pipeline()
    pipeline.add_component("bm25", BM25Retriever(document_store=embedded_store, top_k=2))
    pipeline.add_component("dense", DenseRetriever(document_store=embedded_store, model=str(tiny_st_dir), top_k=2))
    pipeline.add_component("ranker", HybridRanker(document_store=embedded_store, mode="rrf", top_k=3))
    pipeline.connect("bm25.documents", "ranker.bm25_documents")
    pipeline.connect("dense.documents", "ranker.dense_documents")
    text = pipeline.dumps()
    assert "InMemoryDocumentStore" in text and store["init_parameters"]["index"] in text
    loaded = Pipeline.loads(text, allowed_modules=["dpr_components"])
    question = PASSAGES["hamlet"]
    result = loaded.run({"bm25": {"query": question}, "dense": {"query": question}})
    assert result["ranker"]["documents"][0].id == "hamlet"


class NoSearchStore:
    def count_documents(self) -> int:
        return 0


class DenseOnlyStore(NoSearchStore):
    def embedding_retrieval(self, query_embedding: list[float], filters: Any = None, top_k: int = 10) -> list[Document]:
        return [Document(id="only", content="x", score=float(sum(query_embedding)))][:top_k]


def test_store_without_retrieval_methods_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="NoSearchStore cannot be searched: it has neither a public bm25_retrieval"):
        BM25Retriever(document_store=NoSearchStore())
    with pytest.raises(ValueError, match="NoSearchStore cannot be searched"):
        DenseRetriever(document_store=NoSearchStore())
    with pytest.raises(ValueError, match="NoSearchStore cannot be searched"):
        HybridRanker(document_store=NoSearchStore(), mode="rrf")
    with pytest.raises(ValueError, match="DenseOnlyStore has no public bm25_retrieval method"):
        BM25Retriever(document_store=DenseOnlyStore())


def test_any_store_with_public_methods(tiny_st_dir: Path) -> None:
    result = DenseRetriever(document_store=DenseOnlyStore(), model=str(tiny_st_dir)).run(query_embedding=[1.0, 2.0])
    assert [(d.id, d.score) for d in result["documents"]] == [("only", 3.0)]


def test_question_embedder_fits_haystacks_text_embedder_protocol(
    embedded_store: InMemoryDocumentStore, tiny_st_dir: Path
) -> None:
    """Our E_Q takes ``text`` like Haystack's text embedders, so it feeds Haystack's own retriever."""
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

    from haystack_integrations.components.embedders.dpr.question_embedder import QuestionEmbedder

    pipeline = Pipeline()
    pipeline.add_component("embedder", QuestionEmbedder(model=str(tiny_st_dir)))
    pipeline.add_component("retriever", InMemoryEmbeddingRetriever(document_store=embedded_store, top_k=1))
    pipeline.connect("embedder.embedding", "retriever.query_embedding")
    for doc_id, text in PASSAGES.items():
        assert pipeline.run({"embedder": {"text": text}})["retriever"]["documents"][0].id == doc_id
    embedder = QuestionEmbedder(model=str(tiny_st_dir))
    assert embedder.run(text="who wrote hamlet") == embedder.run(query="who wrote hamlet")
    with pytest.raises(ValueError, match="exactly one"):
        embedder.run()
    with pytest.raises(ValueError, match="exactly one"):
        embedder.run(text="a", query="b")


def test_return_embedding_on_ours_and_in_memory(
    embedded_store: InMemoryDocumentStore, tiny_st_dir: Path, tmp_path: Path
) -> None:
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    ours = EmbeddedDocumentStore(path=str(tmp_path / "store"))
    ours.write_documents(embedded_store.filter_documents())
    for store in (ours, embedded_store):
        retriever = DenseRetriever(document_store=store, model=str(tiny_st_dir), top_k=2)
        retriever.warm_up()
        assert all(d.embedding is None for d in retriever.run(query="zebras")["documents"])
        with_vectors = retriever.run(query="zebras", return_embedding=True)["documents"]
        assert [len(d.embedding or []) for d in with_vectors] == [32, 32]
        expected = {d.id: d.embedding for d in embedded_store.filter_documents()}
        assert all(d.embedding == pytest.approx(expected[d.id], abs=1e-6) for d in with_vectors)
        assert DenseRetriever.from_dict(
            DenseRetriever(document_store=store, model=str(tiny_st_dir), return_embedding=True).to_dict()
        ).return_embedding
