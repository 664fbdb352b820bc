"""``run_async`` of the components and the YAML pipelines run with ``Pipeline.run_async``
(Haystack 3's async execution; it replaced ``AsyncPipeline``): same results as ``run``, model
work off the event loop, store calls through the stores' async methods."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from haystack import Document, Pipeline
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder
from haystack_integrations.components.embedders.dpr.question_embedder import QuestionEmbedder
from haystack_integrations.components.rankers.dpr.hybrid_ranker import HybridRanker
from haystack_integrations.components.rankers.dpr.passage_ranker import PassageRanker
from haystack_integrations.components.readers.dpr import span_reader
from haystack_integrations.components.readers.dpr.span_reader import SpanReader
from haystack_integrations.components.retrievers.dpr.bm25_retriever import BM25Retriever
from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
from haystack_integrations.components.writers.dpr.passage_writer import PassageWriter
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.corpora import SMALL_CORPUS, write_jsonl
from tests.helpers.documents import lexical_and_semantic_store
from tests.helpers.paths import PIPELINES

pytestmark = pytest.mark.usefixtures("one_thread")

# Each shares words with several passages, so every retriever returns a ranked list.
QUESTIONS = [
    "who wrote the tragedy hamlet in denmark, the highest mountain or the largest planet",
    "nobel prize in physics and chemistry for the queen of honey bees",
    "the largest gas giant of the solar system and the highest mountain on earth",
    "honey bees make honey in colonies above sea level",
    "is jupiter a planet or a mountain",
    "william shakespeare and marie curie won a prize",
    "the solar system is the largest, the colony has a single queen",
    "metres above sea level in 1600 and 1903",
]
OUR_COMPONENTS = (
    BM25Retriever,
    DenseRetriever,
    HybridRanker,
    QuestionEmbedder,
    PassageEmbedder,
    SpanReader,
    PassageWriter,
)


def _yaml(name: str, store: Path, encoder: Path, reader: Path | None = None) -> str:
    """A pipeline file with its store, models and cache pointed at test fixtures."""
    text = (PIPELINES / name).read_text(encoding="utf-8")
    replacements = {
        "indexes/example": str(store),
        "bundled:dpr-minilm-multi/question_encoder": str(encoder),
        "model: bundled:all-MiniLM-L6-v2": f"model: {encoder}",
        "bundled:reader-minilm": str(reader),
        "bundled:rerank-reader-minilm": str(reader),
        "bundled:ranker-minilm": str(reader),
        "cache_dir: .cache/embeddings": "cache_dir: null",
        "progress_bar: true": "progress_bar: false",
    }
    for old, new in replacements.items():
        text = text.replace(old, new)
    assert not re.search(r"^\s*(model|path): (models|indexes)/", text, re.MULTILINE), "a path was left unreplaced"
    return text


def _load(name: str, store: Path, encoder: Path, reader: Path | None = None) -> Pipeline:
    return Pipeline.loads(_yaml(name, store, encoder, reader), allowed_modules=["dpr_components"])


def _query_inputs(pipeline: Pipeline, question: str) -> dict[str, dict[str, Any]]:
    """The question for every component of ``pipeline`` that takes a ``query``."""
    sockets = pipeline.inputs(include_components_with_connected_inputs=True)
    return {name: {"query": question} for name, inputs in sockets.items() if "query" in inputs}


def _summary(result: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """Ids and scores of every document list, texts, offsets and scores of every answer list."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for component, outputs in result.items():
        if "documents" in outputs:
            out[component] = [
                (d.id, d.score, d.meta.get("bm25_score"), d.meta.get("dense_score")) for d in outputs["documents"]
            ]
        if "answers" in outputs:
            out[component] = [
                (a.data, a.score, a.document and a.document.id, a.document_offset and a.document_offset.start)
                for a in outputs["answers"]  # a reader's "no answer" has neither document nor offsets
            ]
    return out


def _assert_same(got: dict[str, list[tuple[Any, ...]]], expected: dict[str, list[tuple[Any, ...]]]) -> None:
    assert got.keys() == expected.keys()
    for component, rows in expected.items():
        assert len(got[component]) == len(rows), component
        for got_row, row in zip(got[component], rows, strict=True):
            assert got_row == pytest.approx(row), component


def _forbid_sync_runs(pipeline: Pipeline) -> None:
    """Make ``run`` of our components fail, so an async run proves it used their ``run_async``."""
    for name in pipeline.graph.nodes:
        instance = pipeline.get_component(name)
        if isinstance(instance, OUR_COMPONENTS):
            instance.run = _fail  # type: ignore[method-assign]


def _fail(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("the async pipeline called a synchronous run")


@pytest.fixture(scope="module")
def indexed_store(tmp_path_factory: pytest.TempPathFactory, tiny_st_dir: Path) -> Path:
    folder = tmp_path_factory.mktemp("async_store")
    corpus = write_jsonl(folder / "corpus.jsonl", SMALL_CORPUS)
    store = folder / "index"
    _load("index.yml", store, tiny_st_dir).run({"reader": {"path": str(corpus)}})
    return store


def test_our_components_support_async() -> None:
    store = EmbeddedDocumentStore()
    components = [
        BM25Retriever(document_store=store),
        DenseRetriever(document_store=store),
        HybridRanker(document_store=store),
        QuestionEmbedder(),
        PassageEmbedder(),
        SpanReader(),
        PassageRanker(),
        PassageWriter(document_store=store),
    ]
    for instance in components:
        assert instance.__haystack_supports_async__, type(instance).__name__


def test_index_pipeline_async_writes_the_same_store(tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path) -> None:
    sync_folder, async_folder = tmp_path / "sync", tmp_path / "async"
    _load("index.yml", sync_folder, tiny_st_dir).run({"reader": {"path": str(small_corpus_file)}})
    pipeline = _load("index.yml", async_folder, tiny_st_dir)
    _forbid_sync_runs(pipeline)
    result = asyncio.run(pipeline.run_async({"reader": {"path": str(small_corpus_file)}}))
    assert result["writer"]["documents_written"] == 6

    def stored(folder: Path) -> list[tuple[Any, ...]]:
        documents = EmbeddedDocumentStore(path=str(folder)).filter_documents()
        return sorted((d.id, d.content, d.meta, d.embedding) for d in documents)

    assert stored(async_folder) == stored(sync_folder) and len(stored(sync_folder)) == 6


@pytest.mark.parametrize("name", ["bm25.yml", "dense.yml", "search.yml", "qa.yml"])
def test_search_pipelines_async_equal_sync(
    name: str, indexed_store: Path, tiny_st_dir: Path, tiny_reader_dir: Path
) -> None:
    sync = _load(name, indexed_store, tiny_st_dir, tiny_reader_dir)
    asynchronous = _load(name, indexed_store, tiny_st_dir, tiny_reader_dir)
    _forbid_sync_runs(asynchronous)
    for question in QUESTIONS[:3]:
        everything = set(sync.graph.nodes)
        expected = _summary(sync.run(_query_inputs(sync, question), include_outputs_from=everything))
        got = _summary(
            asyncio.run(asynchronous.run_async(_query_inputs(asynchronous, question), include_outputs_from=everything))
        )
        _assert_same(got, expected)
        assert all(len(rows) > 1 for rows in expected.values()), f"{name}: a list too short to compare orders"


def test_concurrent_async_runs_of_one_pipeline(indexed_store: Path, tiny_st_dir: Path) -> None:
    pipeline = _load("search.yml", indexed_store, tiny_st_dir)
    everything = set(pipeline.graph.nodes)
    serial = [_summary(pipeline.run(_query_inputs(pipeline, q), include_outputs_from=everything)) for q in QUESTIONS]

    async def all_at_once() -> list[dict[str, Any]]:
        runs = (pipeline.run_async(_query_inputs(pipeline, q), include_outputs_from=everything) for q in QUESTIONS)
        return list(await asyncio.gather(*runs))

    concurrent = [_summary(result) for result in asyncio.run(all_at_once())]
    assert len(concurrent) == 8
    for got, expected in zip(concurrent, serial, strict=True):
        _assert_same(got, expected)


def _threads_of(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Record the thread each call of ``owner.name`` runs in."""
    seen: list[int] = []
    original = getattr(owner, name)

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, recording)
    return seen


async def _run_and_loop_thread(coroutine: Any) -> tuple[Any, int]:
    return await coroutine, threading.get_ident()


def test_model_work_runs_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch, tiny_st_dir: Path, tiny_reader_dir: Path
) -> None:
    questions = QuestionEmbedder(model=str(tiny_st_dir))
    passages = PassageEmbedder(model=str(tiny_st_dir), progress_bar=False)
    reader = SpanReader(model=str(tiny_reader_dir), precision="fp32")
    question_threads = _threads_of(monkeypatch, questions.encoder, "encode_questions")
    passage_threads = _threads_of(monkeypatch, passages.encoder, "encode_passages")
    reader_threads = _threads_of(monkeypatch, span_reader, "read_input")
    document = Document(id="h", content="Hamlet is a tragedy written by William Shakespeare.", meta={"title": "Hamlet"})

    embedding, loop_thread = asyncio.run(_run_and_loop_thread(questions.run_async(text="who wrote hamlet")))
    assert embedding == questions.run(text="who wrote hamlet")
    assert question_threads[0] != loop_thread
    embedded, loop_thread = asyncio.run(_run_and_loop_thread(passages.run_async(documents=[document])))
    assert embedded["documents"][0].embedding == passages.run(documents=[document])["documents"][0].embedding
    assert passage_threads[0] != loop_thread
    answers, loop_thread = asyncio.run(
        _run_and_loop_thread(reader.run_async(query="who wrote hamlet", documents=[document]))
    )
    expected = reader.run(query="who wrote hamlet", documents=[document])["answers"]
    assert [(a.data, a.score) for a in answers["answers"]] == [(a.data, a.score) for a in expected]
    assert reader_threads[0] != loop_thread


def test_bad_input_fails_the_same_in_run_async(tiny_st_dir: Path) -> None:
    store = EmbeddedDocumentStore()
    with pytest.raises(ValueError, match="needs a query"):
        asyncio.run(DenseRetriever(document_store=store, model=str(tiny_st_dir)).run_async())
    with pytest.raises(ValueError, match="top_k"):
        asyncio.run(BM25Retriever(document_store=store).run_async(query="x", top_k=0))
    with pytest.raises(ValueError, match="exactly one"):
        asyncio.run(QuestionEmbedder(model=str(tiny_st_dir)).run_async())
    with pytest.raises(ValueError, match="query text and the query_embedding"):
        asyncio.run(HybridRanker(document_store=store).run_async([Document(id="a", content="a")], [], query="a"))
    with pytest.raises(TypeError, match="list of Documents"):
        asyncio.run(PassageEmbedder(model=str(tiny_st_dir)).run_async(documents="nope"))  # type: ignore[arg-type]


def test_hybrid_ranker_async_equals_sync() -> None:
    store = lexical_and_semantic_store()
    bm25 = store.bm25_retrieval("zebra", top_k=2)
    dense = store.embedding_retrieval([1.0, 0.0], top_k=2)
    for ranker in (HybridRanker(document_store=store, weight=3.0, top_k=3), HybridRanker(mode="rrf", top_k=3)):
        inputs = {"bm25_documents": bm25, "dense_documents": dense, "query": "zebra", "query_embedding": [1.0, 0.0]}
        expected = ranker.run(**inputs)["documents"]
        got = asyncio.run(ranker.run_async(**inputs))["documents"]
        assert [(d.id, d.score, d.meta) for d in got] == [(d.id, d.score, d.meta) for d in expected]
        assert asyncio.run(ranker.run_async([], []))["documents"] == []


@pytest.mark.parametrize("store_kind", ["embedded", "in_memory"])
def test_passage_writer_async_replaces_stale_passages(store_kind: str) -> None:
    store: Any = EmbeddedDocumentStore() if store_kind == "embedded" else InMemoryDocumentStore()
    writer = PassageWriter(document_store=store)

    def passages(n: int) -> list[Document]:
        return [Document(id=f"d#{i}", content=f"passage {i}", meta={"document_id": "d"}) for i in range(n)]

    assert asyncio.run(writer.run_async(passages(3)))["documents_written"] == 3
    assert asyncio.run(writer.run_async(passages(2)))["documents_written"] == 2
    assert sorted(d.id for d in store.filter_documents()) == ["d#0", "d#1"]
    assert asyncio.run(writer.run_async([]))["documents_written"] == 0


class _RecordingStore(InMemoryDocumentStore):
    """Haystack's in-memory store, recording which retrieval methods were awaited or called."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def bm25_retrieval_async(self, *args: Any, **kwargs: Any) -> list[Document]:
        self.calls.append("bm25_retrieval_async")
        return await super().bm25_retrieval_async(*args, **kwargs)

    async def write_documents_async(self, *args: Any, **kwargs: Any) -> int:
        self.calls.append("write_documents_async")
        return await super().write_documents_async(*args, **kwargs)


class _SyncOnlyStore:
    """A store with synchronous methods only: async callers must run them in a worker thread."""

    def __init__(self) -> None:
        self.inner = InMemoryDocumentStore()
        self.threads: list[int] = []

    def bm25_retrieval(self, query: str, filters: Any = None, top_k: int = 10) -> list[Document]:
        self.threads.append(threading.get_ident())
        return self.inner.bm25_retrieval(query=query, filters=filters, top_k=top_k)


def test_store_async_methods_are_used_or_sync_ones_run_in_a_thread() -> None:
    documents = [Document(id="z", content="zebras are striped"), Document(id="h", content="hamlet is a play")]
    recording = _RecordingStore()
    asyncio.run(PassageWriter(document_store=recording).run_async(documents))
    found = asyncio.run(BM25Retriever(document_store=recording).run_async(query="zebras"))["documents"]
    assert found[0].id == "z"
    assert recording.calls == ["write_documents_async", "bm25_retrieval_async"]

    sync_only = _SyncOnlyStore()
    sync_only.inner.write_documents(documents)
    result, loop_thread = asyncio.run(
        _run_and_loop_thread(BM25Retriever(document_store=sync_only).run_async(query="hamlet"))
    )
    assert result["documents"][0].id == "h"
    assert sync_only.threads and sync_only.threads[0] != loop_thread


class ElasticsearchDocumentStore:
    """Stands in for elasticsearch-haystack's store (chosen by class name): async retrieval only recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def _bm25_retrieval_async(self, query: str, **kwargs: Any) -> list[Document]:
        self.calls.append(("bm25", {"query": query, **kwargs}))
        return [Document(id="es", content=query)]

    async def _embedding_retrieval_async(self, query_embedding: list[float], **kwargs: Any) -> list[Document]:
        self.calls.append(("knn", kwargs))
        return [Document(id="es", content="x")]


def test_elasticsearch_adapter_awaits_the_store() -> None:
    store = ElasticsearchDocumentStore()
    assert asyncio.run(BM25Retriever(document_store=store, top_k=3).run_async(query="q"))["documents"][0].id == "es"
    assert (
        asyncio.run(DenseRetriever(document_store=store, top_k=4).run_async(query_embedding=[1.0, 0.0]))["documents"][
            0
        ].id
        == "es"
    )
    assert store.calls == [
        ("bm25", {"query": "q", "filters": None, "fuzziness": "0", "top_k": 3}),
        ("knn", {"filters": None, "top_k": 4, "num_candidates": 40}),
    ]
