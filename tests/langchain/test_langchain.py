"""HaystackRetriever: LangChain's standard retriever tests, plus conversion, filters, async and errors."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_tests")

from haystack import Document, Pipeline
from langchain_core.documents import Document as LangChainDocument
from langchain_tests.integration_tests import RetrieversIntegrationTests

from dpr_components.langchain import HaystackRetriever
from dpr_components.langchain.documents import to_langchain_document
from haystack_integrations.components.retrievers.dpr.bm25_retriever import BM25Retriever
from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.models import bundled_tokenizer, save_tiny_bert
from tests.helpers.paths import PIPELINES, REPO

# Strict pytest-asyncio runs an async test only when it is marked: mark the standard suite's async test.
pytest.mark.asyncio(RetrieversIntegrationTests.test_ainvoke_returns_documents)


PASSAGES = [
    ("hamlet", "Hamlet", "Hamlet is a tragedy written by William Shakespeare, set in Denmark."),
    ("macbeth", "Macbeth", "Macbeth is a tragedy by William Shakespeare about a Scottish general."),
    ("everest", "Mount Everest", "Mount Everest is the highest mountain on Earth, in the Himalaya."),
    ("curie", "Marie Curie", "Marie Curie won the Nobel Prize in Physics and in Chemistry."),
    ("globe", "Globe Theatre", "The Globe Theatre in London staged plays by William Shakespeare."),
    ("bees", "Honey bee", "Honey bees live in colonies with a single queen and make honey."),
]
QUERY = "plays by William Shakespeare"
ONLY_MACBETH = {"field": "meta.title", "operator": "==", "value": "Macbeth"}


def _documents() -> list[Document]:
    return [Document(id=id_, content=text, meta={"title": title, "kind": "passage"}) for id_, title, text in PASSAGES]


@pytest.fixture(scope="module")
def bm25_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedded store folder holding the passages (BM25 only: no vectors)."""
    path = tmp_path_factory.mktemp("langchain_bm25") / "store"
    EmbeddedDocumentStore(path=str(path)).write_documents(_documents())
    return path


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain BERT folder with random weights and a real WordPiece vocabulary (CLS pooling)."""
    return save_tiny_bert(tmp_path_factory.mktemp("langchain_tiny_bert"), bundled_tokenizer(), seed=0)


@pytest.fixture(scope="module")
def dense_store(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    """An embedded store folder holding the passages with vectors from the tiny model."""
    from haystack_integrations.components.embedders.dpr.passage_embedder import PassageEmbedder

    embedder = PassageEmbedder(model=str(tiny_model), progress_bar=False)
    embedder.warm_up()
    path = tmp_path_factory.mktemp("langchain_dense") / "store"
    EmbeddedDocumentStore(path=str(path)).write_documents(embedder.run(documents=_documents())["documents"])
    return path


class TestComponentRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard retriever tests over a BM25Retriever on an embedded store."""

    @pytest.fixture(autouse=True)
    def _store(self, bm25_store: Path) -> None:
        self.store_path = bm25_store

    @property
    def retriever_constructor(self) -> type[HaystackRetriever]:
        return HaystackRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"component": BM25Retriever(document_store=EmbeddedDocumentStore(path=str(self.store_path))), "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class TestPipelineFileRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard retriever tests over pipelines/bm25.yml, its store replaced by the test store."""

    @pytest.fixture(autouse=True)
    def _store(self, bm25_store: Path) -> None:
        self.store_path = bm25_store

    @property
    def retriever_constructor(self) -> Any:
        return HaystackRetriever.from_pipeline

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"path": PIPELINES / "bm25.yml", "store": str(self.store_path)}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


def test_documents_carry_content_meta_id_and_score() -> None:
    scored = to_langchain_document(Document(id="a", content="text", meta={"title": "T", "n": 1}, score=2.5))
    assert isinstance(scored, LangChainDocument)
    assert scored.page_content == "text"
    assert scored.id == "a"
    assert scored.metadata == {"title": "T", "n": 1, "id": "a", "score": 2.5}
    unscored = to_langchain_document(Document(id="b", content=None, embedding=[0.1, 0.2]))
    assert (unscored.page_content, unscored.metadata) == ("", {"id": "b"})


def test_retrieved_documents_are_the_components(bm25_store: Path) -> None:
    component = BM25Retriever(document_store=EmbeddedDocumentStore(path=str(bm25_store)), top_k=3)
    expected = component.run(query=QUERY)["documents"]
    found = HaystackRetriever(component=component).invoke(QUERY)
    assert [d.id for d in found] == [d.id for d in expected]
    assert [d.metadata["score"] for d in found] == [d.score for d in expected]
    assert found[0].metadata["title"] == expected[0].meta["title"]
    assert all(d.metadata["kind"] == "passage" for d in found)


def test_filters_are_honoured(bm25_store: Path) -> None:
    component = BM25Retriever(document_store=EmbeddedDocumentStore(path=str(bm25_store)))
    filtered = HaystackRetriever(component=component, filters=ONLY_MACBETH)
    assert [d.id for d in filtered.invoke(QUERY)] == ["macbeth"]
    # Per call, filters replace the retriever's.
    only_globe = {"field": "meta.title", "operator": "==", "value": "Globe Theatre"}
    assert [d.id for d in filtered.invoke(QUERY, filters=only_globe)] == ["globe"]
    from_file = HaystackRetriever.from_pipeline(PIPELINES / "bm25.yml", store=str(bm25_store))
    assert [d.id for d in from_file.invoke(QUERY, filters=ONLY_MACBETH)] == ["macbeth"]
    assert [d.id for d in asyncio.run(from_file.ainvoke(QUERY, filters=ONLY_MACBETH))] == ["macbeth"]


def _summary(documents: list[LangChainDocument]) -> list[tuple[Any, ...]]:
    return [(d.id, d.page_content, d.metadata) for d in documents]


def test_async_equals_sync_for_components_and_pipelines(bm25_store: Path, dense_store: Path, tiny_model: Path) -> None:
    retrievers = [
        HaystackRetriever(component=BM25Retriever(document_store=EmbeddedDocumentStore(path=str(bm25_store))), k=2),
        HaystackRetriever(
            component=DenseRetriever(document_store=EmbeddedDocumentStore(path=str(dense_store)), model=str(tiny_model))
        ),
        HaystackRetriever.from_pipeline(
            PIPELINES / "search.yml", store=str(dense_store), overrides=[f"hybrid.model={tiny_model}"], k=3
        ),
        HaystackRetriever.from_pipeline(
            PIPELINES / "dense.yml", store=str(dense_store), overrides=[f"dense.model={tiny_model}"]
        ),
    ]
    for retriever in retrievers:
        expected = retriever.invoke(QUERY)
        assert expected and all("score" in d.metadata for d in expected)
        assert _summary(asyncio.run(retriever.ainvoke(QUERY))) == _summary(expected)
    assert [len(r.invoke(QUERY)) for r in retrievers] == [2, len(PASSAGES), 3, len(PASSAGES)]


def test_async_awaits_the_components_run_async(bm25_store: Path) -> None:
    class Recording(BM25Retriever):
        calls: ClassVar[list[str]] = []

        def run(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            self.calls.append("run")
            return super().run(*args, **kwargs)

        async def run_async(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            self.calls.append("run_async")
            return await super().run_async(*args, **kwargs)

    retriever = HaystackRetriever(component=Recording(document_store=EmbeddedDocumentStore(path=str(bm25_store))), k=1)
    assert len(asyncio.run(retriever.ainvoke(QUERY))) == 1
    assert Recording.calls == ["run_async"]


def test_pipeline_output_component(bm25_store: Path) -> None:
    store = EmbeddedDocumentStore(path=str(bm25_store))
    pipeline = Pipeline()
    pipeline.add_component("all", BM25Retriever(document_store=store))
    pipeline.add_component("filtered", BM25Retriever(document_store=store, filters=ONLY_MACBETH))
    with pytest.raises(ValueError, match=r"name the component whose results to return \(output=...\)"):
        HaystackRetriever(pipeline=pipeline)
    assert [d.id for d in HaystackRetriever(pipeline=pipeline, output="filtered").invoke(QUERY)] == ["macbeth"]
    with pytest.raises(ValueError, match="output 'nope' is not a component with a documents or answers output"):
        HaystackRetriever(pipeline=pipeline, output="nope")


def test_missing_pipeline_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yml"
    with pytest.raises(ValueError, match=f"^pipeline file {missing} does not exist$"):
        HaystackRetriever.from_pipeline(missing)
    with pytest.raises(ValueError, match=r"store folder .* does not exist"):
        HaystackRetriever.from_pipeline(PIPELINES / "bm25.yml", store=str(tmp_path / "no_store"))


def test_bad_settings_and_queries_are_one_line_errors(bm25_store: Path) -> None:
    component = BM25Retriever(document_store=EmbeddedDocumentStore(path=str(bm25_store)))
    cases = [
        (HaystackRetriever, ValueError, "give either a retriever component"),
        (lambda: HaystackRetriever(component=component, pipeline=Pipeline()), ValueError, "not both"),
        (lambda: HaystackRetriever(component=component, k=0), ValueError, "k must be a positive integer, got 0"),
        (lambda: HaystackRetriever(component=component, k="3"), ValueError, "k must be a positive integer"),
        (lambda: HaystackRetriever(component=component, filters="x"), ValueError, "filters must be a Haystack filter"),
        (lambda: HaystackRetriever(component=component, top_k=3), TypeError, "has no setting 'top_k'"),
        (lambda: HaystackRetriever(component=component, output="x"), ValueError, "output names a pipeline component"),
        (lambda: HaystackRetriever(component=object()), TypeError, "expected a Haystack retriever component"),
        (lambda: HaystackRetriever(component=component).invoke("  "), ValueError, "the query is empty"),
        (lambda: HaystackRetriever(component=component).invoke(QUERY, k=-1), ValueError, "k must be a positive"),
    ]
    for build, kind, message in cases:
        with pytest.raises(kind, match=message) as caught:
            build()
        assert "\n" not in str(caught.value)
    from_file = HaystackRetriever.from_pipeline(PIPELINES / "bm25.yml", store=str(bm25_store))
    with pytest.raises(ValueError, match="the query is empty"):  # the component's error, not Haystack's wrapper
        from_file.invoke("\u200b")


def test_the_library_does_not_import_langchain() -> None:
    check = (
        "import sys; import dpr_components, dpr_components.retrievers, dpr_components.document_stores; "
        "from haystack_integrations.components.retrievers.dpr import BM25Retriever, DenseRetriever, HybridRetriever; "
        "sys.exit(1 if any(m.startswith('langchain') for m in sys.modules) else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("threshold, says_no_answer", [(0.0, True), (1.0, False)])
def test_a_qa_pipeline_returns_its_answers_no_answer_included(
    dense_store: Path, tiny_model: Path, tiny_reader_dir: Path, threshold: float, says_no_answer: bool
) -> None:
    overrides = [
        f"hybrid.model={tiny_model}",
        f"reranker.model={tiny_reader_dir}",
        f"reader.model={tiny_reader_dir}",
        f"reader.no_answer_threshold={threshold}",
    ]
    retriever = HaystackRetriever.from_pipeline("qa", store=str(dense_store), overrides=overrides, k=3)
    answers = retriever.invoke(QUERY)
    assert 1 <= len(answers) <= 3 and all("score" in a.metadata for a in answers)
    first = answers[0]
    assert first.metadata["no_answer"] is says_no_answer
    if says_no_answer:
        assert first.page_content == "" and first.metadata["answer"] is None
    else:
        assert first.page_content and first.page_content == first.metadata["answer"]
        assert first.page_content in first.metadata["context"] and first.metadata["title"]
    passages = HaystackRetriever.from_pipeline("qa", store=str(dense_store), overrides=overrides, output="hybrid", k=2)
    assert [d.metadata["id"] for d in passages.invoke(QUERY)] and "no_answer" not in passages.invoke(QUERY)[0].metadata
