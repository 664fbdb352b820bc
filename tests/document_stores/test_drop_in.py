"""The drop-in matrix: each of our components on each document store, and Haystack's own
store-taking components on our store (with InMemoryDocumentStore as the reference).

One test per row, parametrised by the store column; ``python -m benchmarks.conformance.haystack_conformance``
runs this file and turns the outcomes into the "Drop-in matrix" of docs/haystack_conformance.md,
labelled by ``ROWS``, ``COLUMNS`` and ``REFUSED`` below. Pipelines are built from YAML text (or
dumped and loaded again), so every cell also goes through serialisation. The Elasticsearch
column runs only against a real server: set ELASTICSEARCH_URL (see tests/document_stores/test_elasticsearch.py).
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from haystack import Document, Pipeline
from haystack.core.errors import PipelineRuntimeError
from haystack.document_stores.errors import DuplicateDocumentError

from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder

pytestmark = pytest.mark.usefixtures("one_thread")

URL = os.environ.get("ELASTICSEARCH_URL")
NO_SERVER = "no Elasticsearch server"

EMBEDDED = "EmbeddedDocumentStore"
IN_MEMORY = "InMemoryDocumentStore"
ELASTICSEARCH = "ElasticsearchDocumentStore"
COLUMNS = (EMBEDDED, IN_MEMORY, ELASTICSEARCH)

# Row label of each test (a parametrised test: one row per parameter, "name[param]").
ROWS: dict[str, str] = {
    "test_dense_retriever": "DenseRetriever",
    "test_bm25_retriever": "BM25Retriever",
    "test_hybrid_retriever": "HybridRetriever",
    "test_hybrid_ranker_dpr": "HybridRanker (mode dpr)",
    "test_hybrid_ranker_rrf": "HybridRanker (mode rrf)",
    "test_question_embedder": "QuestionEmbedder (`run(text=)`) → the store's embedding retriever",
    "test_passage_embedder": "PassageEmbedder (`run(documents=)`) → Haystack DocumentWriter",
    "test_passage_writer": "PassageWriter",
    "test_span_reader_after_bm25_retriever": "SpanReader ← our BM25Retriever",
    "test_span_reader_after_haystack_retriever": "SpanReader ← Haystack retriever of the store",
    "test_haystack_document_writer[NONE]": "Haystack DocumentWriter (policy NONE)",
    "test_haystack_document_writer[FAIL]": "Haystack DocumentWriter (policy FAIL)",
    "test_haystack_document_writer[SKIP]": "Haystack DocumentWriter (policy SKIP)",
    "test_haystack_document_writer[OVERWRITE]": "Haystack DocumentWriter (policy OVERWRITE)",
    "test_haystack_filter_retriever": "Haystack FilterRetriever",
    "test_haystack_sentence_window_retriever": "Haystack SentenceWindowRetriever ← our BM25Retriever",
    "test_haystack_auto_merging_retriever": "Haystack AutoMergingRetriever",
    "test_haystack_cache_checker": "Haystack CacheChecker",
    "test_haystack_in_memory_embedding_retriever": "Haystack InMemoryEmbeddingRetriever ← our QuestionEmbedder",
}

# Combinations refused by design: the test asserts the clear error, the matrix gives the reason.
REFUSED: dict[tuple[str, str], str] = {
    ("test_hybrid_retriever", IN_MEMORY): "the store cannot score given documents exactly; use HybridRanker mode rrf",
    ("test_hybrid_ranker_dpr", IN_MEMORY): "the store cannot score given documents exactly; use mode rrf",
    (
        "test_haystack_in_memory_embedding_retriever",
        EMBEDDED,
    ): "Haystack's retriever takes only an InMemoryDocumentStore",
    (
        "test_haystack_in_memory_embedding_retriever",
        ELASTICSEARCH,
    ): "Haystack's retriever takes only an InMemoryDocumentStore",
}

PASSAGES = {
    "hamlet": "Hamlet is a tragedy written by William Shakespeare around 1600.",
    "zebra": "Zebras are African equines with black and white striped coats.",
    "everest": "Mount Everest is the highest mountain above sea level, in the Himalayas.",
}
LANG = {"hamlet": "en", "zebra": "en", "everest": "de"}
ALLOWED = ["dpr_components"]
STORE_TYPES = {
    EMBEDDED: "haystack_integrations.document_stores.dpr.document_store.EmbeddedDocumentStore",
    IN_MEMORY: "haystack.document_stores.in_memory.document_store.InMemoryDocumentStore",
    ELASTICSEARCH: "haystack_integrations.document_stores.elasticsearch.document_store.ElasticsearchDocumentStore",
}


@dataclass(frozen=True)
class StoreSpec:
    """One store of the matrix, as a pipeline file names it; every handle sees the same documents
    (one folder, one in-memory index name, one Elasticsearch index)."""

    column: str
    data: dict[str, Any]

    def make(self) -> Any:
        module, _, name = self.data["type"].rpartition(".")
        return getattr(importlib.import_module(module), name).from_dict(copy.deepcopy(self.data))


@pytest.fixture(params=COLUMNS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    """A fresh, empty store of the column."""
    column = request.param
    name = f"drop-in-{uuid.uuid4().hex[:12]}"
    if column == EMBEDDED:
        params: dict[str, Any] = {"path": str(tmp_path / "store")}
    elif column == IN_MEMORY:
        params = {"index": name, "embedding_similarity_function": "dot_product"}
    else:
        if not URL:
            pytest.skip(NO_SERVER)
        # max_inner_product keeps DPR's inner-product ranking (see pipelines/index_elasticsearch.yml).
        params = {"hosts": URL, "index": name, "embedding_similarity_function": "max_inner_product"}
    spec = StoreSpec(column, {"type": STORE_TYPES[column], "init_parameters": params})
    yield spec
    handle = spec.make()
    if column == ELASTICSEARCH:
        handle.client.indices.delete(index=name, ignore_unavailable=True)
    else:
        handle.delete_all_documents()


# -- helpers --------------------------------------------------------------------------------
def _documents() -> list[Document]:
    return [Document(id=i, content=text, meta={"lang": LANG[i]}) for i, text in PASSAGES.items()]


def _node(type_path: str, **init_parameters: Any) -> dict[str, Any]:
    return {"type": type_path, "init_parameters": init_parameters}


def _load(components: dict[str, dict[str, Any]], connections: list[tuple[str, str]] = ()) -> Pipeline:
    """A pipeline from YAML text."""
    text = yaml.safe_dump(
        {"components": components, "connections": [{"sender": s, "receiver": r} for s, r in connections]}
    )
    return Pipeline.loads(text, allowed_modules=ALLOWED)


def _round_trip(pipeline: Pipeline) -> Pipeline:
    return Pipeline.loads(pipeline.dumps(), allowed_modules=ALLOWED)


def _fill_text(store: StoreSpec) -> Any:
    handle = store.make()
    handle.write_documents(_documents())
    return handle


def _fill_embedded(store: StoreSpec, model: Path) -> Any:
    """The passages with our PassageEmbedder's vectors."""
    embedder = PassageEmbedder(model=str(model), progress_bar=False)
    embedder.warm_up()
    handle = store.make()
    handle.write_documents(embedder.run(documents=_documents())["documents"])
    return handle


def _ids(documents: list[Document]) -> list[str]:
    return [d.id for d in documents]


def _run_both(pipeline: Pipeline, data: dict[str, Any]) -> dict[str, Any]:
    """Run sync and async; both must give the same result."""
    result = pipeline.run(data)
    assert asyncio.run(pipeline.run_async(data)) == result
    return result


HAYSTACK_RETRIEVERS = {  # the Haystack retrievers made for each store (ours has FilterRetriever only)
    ("bm25", EMBEDDED): "haystack.components.retrievers.filter_retriever.FilterRetriever",
    ("bm25", IN_MEMORY): "haystack.components.retrievers.in_memory.bm25_retriever.InMemoryBM25Retriever",
    (
        "bm25",
        ELASTICSEARCH,
    ): "haystack_integrations.components.retrievers.elasticsearch.bm25_retriever.ElasticsearchBM25Retriever",
    ("embedding", IN_MEMORY): "haystack.components.retrievers.in_memory.embedding_retriever.InMemoryEmbeddingRetriever",
    ("embedding", ELASTICSEARCH): (
        "haystack_integrations.components.retrievers.elasticsearch.embedding_retriever.ElasticsearchEmbeddingRetriever"
    ),
}


# -- our components on every store ----------------------------------------------------------
def test_dense_retriever(store: StoreSpec, tiny_st_dir: Path) -> None:
    from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever

    handle = _fill_embedded(store, tiny_st_dir)
    pipeline = Pipeline()
    pipeline.add_component("dense", DenseRetriever(document_store=handle, model=str(tiny_st_dir), top_k=2))
    pipeline = _round_trip(pipeline)
    for doc_id, text in PASSAGES.items():
        result = pipeline.run({"dense": {"query": text}})["dense"]
        assert result["documents"][0].id == doc_id and len(result["documents"]) == 2
    german = {"field": "meta.lang", "operator": "==", "value": "de"}
    assert _ids(pipeline.run({"dense": {"query": PASSAGES["hamlet"], "filters": german}})["dense"]["documents"]) == [
        "everest"
    ]


def test_bm25_retriever(store: StoreSpec) -> None:
    from haystack_integrations.components.retrievers.dpr.bm25_retriever import BM25Retriever

    handle = _fill_text(store)
    pipeline = Pipeline()
    pipeline.add_component("bm25", BM25Retriever(document_store=handle, top_k=3))
    pipeline = _round_trip(pipeline)
    assert pipeline.run({"bm25": {"query": "striped zebras"}})["bm25"]["documents"][0].id == "zebra"
    english = {"field": "meta.lang", "operator": "==", "value": "en"}
    found = pipeline.run({"bm25": {"query": "Shakespeare highest mountain", "filters": english}})["bm25"]["documents"]
    assert _ids(found) == ["hamlet"]


def _hybrid(store: Any, model: Path, mode: str) -> Pipeline:
    from haystack_integrations.components.rankers.dpr.hybrid_ranker import HybridRanker
    from haystack_integrations.components.retrievers.dpr.bm25_retriever import BM25Retriever
    from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever

    pipeline = Pipeline()
    pipeline.add_component("bm25", BM25Retriever(document_store=store, top_k=2))
    pipeline.add_component("dense", DenseRetriever(document_store=store, model=str(model), top_k=2))
    pipeline.add_component("ranker", HybridRanker(document_store=store, mode=mode, rrf_k=1, top_k=3))
    pipeline.connect("bm25.documents", "ranker.bm25_documents")
    pipeline.connect("dense.documents", "ranker.dense_documents")
    if mode == "dpr":
        pipeline.connect("dense.query_embedding", "ranker.query_embedding")
    return _round_trip(pipeline)


def test_hybrid_ranker_dpr(store: StoreSpec, tiny_st_dir: Path) -> None:
    from haystack_integrations.components.rankers.dpr.hybrid_ranker import HybridRanker

    handle = _fill_embedded(store, tiny_st_dir)
    if store.column == IN_MEMORY:
        with pytest.raises(ValueError, match=r"cannot score given documents exactly.*use mode 'rrf'"):
            HybridRanker(document_store=handle, mode="dpr")
        return
    pipeline = _hybrid(handle, tiny_st_dir, "dpr")
    question = PASSAGES["hamlet"]
    ranked = pipeline.run({"bm25": {"query": question}, "dense": {"query": question}, "ranker": {"query": question}})
    top = ranked["ranker"]["documents"][0]
    assert top.id == "hamlet"
    assert top.meta["bm25_score"] > 0 and top.meta["dense_score"] == pytest.approx(1.0, abs=0.02)


def test_hybrid_retriever(store: StoreSpec, tiny_st_dir: Path) -> None:
    from haystack_integrations.components.retrievers.dpr.hybrid_retriever import HybridRetriever

    handle = _fill_embedded(store, tiny_st_dir)
    if store.column == IN_MEMORY:
        with pytest.raises(ValueError, match=r"cannot score given documents exactly.*use mode 'rrf'"):
            HybridRetriever(document_store=handle, model=str(tiny_st_dir))
        return
    pipeline = Pipeline()
    pipeline.add_component(
        "hybrid", HybridRetriever(document_store=handle, model=str(tiny_st_dir), candidates=2, top_k=3)
    )
    pipeline = _round_trip(pipeline)
    question = PASSAGES["hamlet"]
    expected = _hybrid(handle, tiny_st_dir, "dpr").run(
        {"bm25": {"query": question}, "dense": {"query": question}, "ranker": {"query": question}}
    )["ranker"]["documents"]
    found = pipeline.run({"hybrid": {"query": question}})["hybrid"]["documents"]
    assert [(d.id, d.score) for d in found] == [(d.id, d.score) for d in expected]
    assert found[0].id == "hamlet"


def test_hybrid_ranker_rrf(store: StoreSpec, tiny_st_dir: Path) -> None:
    handle = _fill_embedded(store, tiny_st_dir)
    question = PASSAGES["everest"]
    ranked = _hybrid(handle, tiny_st_dir, "rrf").run({"bm25": {"query": question}, "dense": {"query": question}})
    top = ranked["ranker"]["documents"][0]
    assert top.id == "everest" and top.score == pytest.approx(1.0)  # rank 1 in both lists, k = 1


def test_question_embedder(store: StoreSpec, tiny_st_dir: Path) -> None:
    _fill_embedded(store, tiny_st_dir)
    embedder = _node(
        "haystack_integrations.components.embedders.dpr.question_embedder.QuestionEmbedder", model=str(tiny_st_dir)
    )
    if store.column == EMBEDDED:
        retriever = _node(
            "haystack_integrations.components.retrievers.dpr.dense_retriever.DenseRetriever",
            document_store=store.data,
            model=str(tiny_st_dir),
            top_k=1,
        )
    else:
        retriever = _node(HAYSTACK_RETRIEVERS["embedding", store.column], document_store=store.data, top_k=1)
    pipeline = _load(
        {"embedder": embedder, "retriever": retriever}, [("embedder.embedding", "retriever.query_embedding")]
    )
    for doc_id, text in PASSAGES.items():
        assert _ids(pipeline.run({"embedder": {"text": text}})["retriever"]["documents"]) == [doc_id]


def test_passage_embedder(store: StoreSpec, tiny_st_dir: Path) -> None:
    from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever

    embedder = _node(
        "haystack_integrations.components.embedders.dpr.passage_embedder.PassageEmbedder",
        model=str(tiny_st_dir),
        progress_bar=False,
    )
    writer = _node(
        "haystack.components.writers.document_writer.DocumentWriter", document_store=store.data, policy="OVERWRITE"
    )
    pipeline = _load({"embedder": embedder, "writer": writer}, [("embedder.documents", "writer.documents")])
    assert pipeline.run({"embedder": {"documents": _documents()}})["writer"]["documents_written"] == 3
    handle = store.make()
    assert all(len(d.embedding or []) == 32 for d in handle.filter_documents())
    retriever = DenseRetriever(document_store=handle, model=str(tiny_st_dir), top_k=1)
    retriever.warm_up()
    for doc_id, text in PASSAGES.items():
        assert _ids(retriever.run(query=text)["documents"]) == [doc_id]


def test_passage_writer(store: StoreSpec) -> None:
    def passages(texts: list[str], source: str) -> list[Document]:
        return [Document(id=f"{source}#{i}", content=t, meta={"document_id": source}) for i, t in enumerate(texts)]

    pipeline = _load(
        {
            "writer": _node(
                "haystack_integrations.components.writers.dpr.passage_writer.PassageWriter", document_store=store.data
            )
        }
    )
    first = passages(["one", "two", "three"], "doc") + passages(["other text"], "other")
    assert pipeline.run({"writer": {"documents": first}})["writer"]["documents_written"] == 4
    # The document shrank to two passages: its third one must go, the other document stays.
    assert (
        pipeline.run({"writer": {"documents": passages(["one again", "two"], "doc")}})["writer"]["documents_written"]
        == 2
    )
    stored = {d.id: d.content for d in store.make().filter_documents()}
    assert stored == {"doc#0": "one again", "doc#1": "two", "other#0": "other text"}


def _check_answers(answers: list[Any], doc_ids: set[str]) -> None:
    assert answers
    for answer in answers:
        assert answer.document.id in doc_ids
        assert answer.document.content[answer.document_offset.start : answer.document_offset.end] == answer.data


def test_span_reader_after_bm25_retriever(store: StoreSpec, tiny_reader_dir: Path) -> None:
    _fill_text(store)
    bm25 = _node(
        "haystack_integrations.components.retrievers.dpr.bm25_retriever.BM25Retriever",
        document_store=store.data,
        top_k=1,
    )
    reader = _node(
        "haystack_integrations.components.readers.dpr.span_reader.SpanReader", model=str(tiny_reader_dir), top_k=2
    )
    pipeline = _load({"bm25": bm25, "reader": reader}, [("bm25.documents", "reader.documents")])
    question = "who wrote the tragedy Hamlet"
    result = pipeline.run({"bm25": {"query": question}, "reader": {"query": question}})
    _check_answers(result["reader"]["answers"], {"hamlet"})


def test_span_reader_after_haystack_retriever(store: StoreSpec, tiny_reader_dir: Path) -> None:
    _fill_text(store)
    question = "who wrote the tragedy Hamlet"
    if store.column == EMBEDDED:
        retriever = _node(
            HAYSTACK_RETRIEVERS["bm25", store.column],
            document_store=store.data,
            filters={"field": "id", "operator": "==", "value": "hamlet"},
        )
        inputs: dict[str, Any] = {}
    else:
        retriever = _node(HAYSTACK_RETRIEVERS["bm25", store.column], document_store=store.data, top_k=1)
        inputs = {"query": question}
    reader = _node(
        "haystack_integrations.components.readers.dpr.span_reader.SpanReader", model=str(tiny_reader_dir), top_k=2
    )
    pipeline = _load({"retriever": retriever, "reader": reader}, [("retriever.documents", "reader.documents")])
    result = pipeline.run({"retriever": inputs, "reader": {"query": question}})
    _check_answers(result["reader"]["answers"], {"hamlet"})


# -- Haystack's components on our store (and the others) ------------------------------------
WRITER = "haystack.components.writers.document_writer.DocumentWriter"


@pytest.mark.parametrize("policy", ["NONE", "FAIL", "SKIP", "OVERWRITE"])
def test_haystack_document_writer(store: StoreSpec, policy: str) -> None:
    pipeline = _load({"writer": _node(WRITER, document_store=store.data, policy=policy)})
    assert pipeline.run({"writer": {"documents": _documents()}})["writer"]["documents_written"] == 3
    again = [Document(id="hamlet", content="changed", meta={"lang": "en"}), Document(id="new", content="new text")]
    handle = store.make()
    if policy in ("NONE", "FAIL"):  # NONE is the store's default: FAIL for all three stores
        for run in (
            lambda: pipeline.run({"writer": {"documents": again}}),
            lambda: asyncio.run(pipeline.run_async({"writer": {"documents": again}})),
        ):
            with pytest.raises(PipelineRuntimeError) as error:
                run()
            assert isinstance(error.value.__cause__, DuplicateDocumentError)
        assert (
            handle.filter_documents({"field": "id", "operator": "==", "value": "hamlet"})[0].content
            == PASSAGES["hamlet"]
        )
        return
    written = asyncio.run(pipeline.run_async({"writer": {"documents": again}}))["writer"]["documents_written"]
    stored = {d.id: d.content for d in handle.filter_documents()}
    assert written == (1 if policy == "SKIP" else 2)
    assert stored["hamlet"] == (PASSAGES["hamlet"] if policy == "SKIP" else "changed")
    assert stored["new"] == "new text" and len(stored) == 4


def test_haystack_filter_retriever(store: StoreSpec) -> None:
    _fill_text(store)
    english = {"field": "meta.lang", "operator": "==", "value": "en"}
    pipeline = _load(
        {
            "filter": _node(
                "haystack.components.retrievers.filter_retriever.FilterRetriever",
                document_store=store.data,
                filters=english,
            )
        }
    )
    assert sorted(_ids(_run_both(pipeline, {"filter": {}})["filter"]["documents"])) == ["hamlet", "zebra"]
    german = {"field": "meta.lang", "operator": "==", "value": "de"}
    assert _ids(_run_both(pipeline, {"filter": {"filters": german}})["filter"]["documents"]) == ["everest"]


def test_haystack_sentence_window_retriever(store: StoreSpec) -> None:
    splitter = _node(
        "haystack.components.preprocessors.document_splitter.DocumentSplitter",
        split_by="word",
        split_length=4,
        split_overlap=0,
    )
    indexing = _load(
        {"splitter": splitter, "writer": _node(WRITER, document_store=store.data)},
        [("splitter.documents", "writer.documents")],
    )
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu omicron pi rho sigma"
    assert indexing.run({"splitter": {"documents": [Document(content=text)]}})["writer"]["documents_written"] == 4
    bm25 = _node(
        "haystack_integrations.components.retrievers.dpr.bm25_retriever.BM25Retriever",
        document_store=store.data,
        top_k=1,
    )
    window = _node(
        "haystack.components.retrievers.sentence_window_retriever.SentenceWindowRetriever",
        document_store=store.data,
        window_size=1,
    )
    pipeline = _load({"bm25": bm25, "window": window}, [("bm25.documents", "window.retrieved_documents")])
    result = _run_both(pipeline, {"bm25": {"query": "kappa"}})["window"]
    assert [d.meta["split_id"] for d in result["context_documents"]] == [1, 2, 3]
    assert result["context_windows"] == ["epsilon zeta eta theta iota kappa lambda mu omicron pi rho sigma"]


def test_haystack_auto_merging_retriever(store: StoreSpec) -> None:
    from haystack.components.preprocessors import HierarchicalDocumentSplitter

    text = "one two three four five six seven eight nine ten eleven twelve"
    documents = HierarchicalDocumentSplitter(block_sizes={6, 3}).run([Document(content=text)])["documents"]
    store.make().write_documents(documents)
    leaves = sorted((d for d in documents if d.meta["__level"] == 2), key=lambda d: d.content)
    block = next(d for d in documents if d.meta["__level"] == 1 and "seven" in d.content)
    children = [d for d in leaves if d.id in block.meta["__children_ids"]]
    pipeline = _load(
        {
            "merge": _node(
                "haystack.components.retrievers.auto_merging_retriever.AutoMergingRetriever",
                document_store=store.data,
                threshold=0.5,
            )
        }
    )
    # Both children of a block: the block replaces them; one of its parent's two blocks is not enough.
    assert _ids(_run_both(pipeline, {"merge": {"documents": children}})["merge"]["documents"]) == [block.id]
    assert _ids(_run_both(pipeline, {"merge": {"documents": children[:1]}})["merge"]["documents"]) == [children[0].id]


def test_haystack_cache_checker(store: StoreSpec) -> None:
    store.make().write_documents(
        [Document(id=f"page{i}", content=f"page {i}", meta={"url": f"https://example.com/{i}"}) for i in range(3)]
    )
    pipeline = _load(
        {
            "cache": _node(
                "haystack.components.caching.cache_checker.CacheChecker", document_store=store.data, cache_field="url"
            )
        }
    )
    result = _run_both(pipeline, {"cache": {"items": ["https://example.com/1", "https://example.com/9"]}})["cache"]
    assert _ids(result["hits"]) == ["page1"] and result["misses"] == ["https://example.com/9"]


def test_haystack_in_memory_embedding_retriever(store: StoreSpec, tiny_st_dir: Path) -> None:
    """Our QuestionEmbedder's vectors feed Haystack's embedding retriever over our PassageEmbedder's."""
    from haystack.core.errors import DeserializationError

    _fill_embedded(store, tiny_st_dir)
    components = {
        "embedder": _node(
            "haystack_integrations.components.embedders.dpr.question_embedder.QuestionEmbedder", model=str(tiny_st_dir)
        ),
        "retriever": _node(HAYSTACK_RETRIEVERS["embedding", IN_MEMORY], document_store=store.data, top_k=1),
    }
    connections = [("embedder.embedding", "retriever.query_embedding")]
    if store.column != IN_MEMORY:
        with pytest.raises(DeserializationError) as error:
            _load(components, connections)
        assert "document_store must be an instance of InMemoryDocumentStore" in str(
            error.value.__cause__ or error.value
        )
        return
    pipeline = _load(components, connections)
    for doc_id, text in PASSAGES.items():
        assert _ids(pipeline.run({"embedder": {"text": text}})["retriever"]["documents"]) == [doc_id]
