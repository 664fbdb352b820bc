"""hayhooks pipeline wrappers with typed ``run_api`` signatures, one per kind of served pipeline.

hayhooks turns a wrapper's ``run_api`` parameters into the request model and its return annotation
into the response model. Each wrapper hands its request fields to
:func:`~dpr_components.pipeline_requests.inputs.request_inputs`, as the command line and the LangChain
retriever do, with the YAML file's ``inputs:`` section as the declared targets and the components its
``outputs:`` section names as the results: ``query`` to its declared sockets, ``top_k`` to the
component whose output is returned (the retriever, or the reader of a QA pipeline), ``filters`` to
every component that takes filters."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Collection, Mapping
from typing import Annotated, Any

from hayhooks import BasePipelineWrapper
from haystack import Document, Pipeline
from haystack.dataclasses import ByteStream, ExtractedAnswer
from pydantic import BeforeValidator, Field

from dpr_components.document_stores.folder_identity import StoreFolderMovedError
from dpr_components.pipeline_files.loading import StoreNotIndexedError, writes_documents
from dpr_components.pipeline_requests.errors import cause_of_kind, one_line
from dpr_components.pipeline_requests.inputs import check_request_field, components_taking, request_inputs
from dpr_components.serving.models import (
    AnswerOut,
    AnswerResult,
    DocumentIn,
    DocumentOut,
    EvalResult,
    FileIndexed,
    IndexResult,
    Offsets,
    SearchResult,
)

MAX_TOP_K = 1000


def _checked(name: str) -> BeforeValidator:
    """The request field ``name`` checked as every front end checks it, before its type: a 422 with the
    same line as the command line's and the LangChain retriever's."""
    return BeforeValidator(functools.partial(check_request_field, name))


Query = Annotated[str, _checked("query")]
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K, description=f"how many results, 1 to {MAX_TOP_K}"), _checked("top_k")]
Filters = Annotated[dict[str, Any], _checked("filters")]


class StoreUnavailableError(RuntimeError):
    """A served pipeline's store cannot be read or written now (the server answers 503 with the reason)."""


class StoreNotReadyError(StoreUnavailableError):
    """A served pipeline reads a store that nothing was indexed into yet (the server answers 503)."""


RESTART = "restart haystack serve to serve the folder now at that path"


def pipeline_stores(pipeline: Pipeline) -> list[Any]:
    """The document stores of ``pipeline``'s components, once each."""
    found: dict[int, Any] = {}
    for _, component in pipeline.walk():
        store = getattr(component, "document_store", None)
        if store is not None:
            found.setdefault(id(store), store)
    return list(found.values())


class DeclaredPipelineWrapper(BasePipelineWrapper):
    """A pipeline run with the inputs its YAML file declares: built and warmed up by the server, or, when
    its store was not indexed yet, built by ``builder`` at the first request that finds the store."""

    def __init__(
        self, pipeline: Pipeline | None, spec: dict[str, Any], builder: Callable[[], Pipeline] | None = None
    ) -> None:
        super().__init__()
        self.built = pipeline
        self.spec = spec
        self._builder = builder
        self._building = threading.Lock()
        # The folder of the embedded store it reads or writes, as served (``--store`` or the file's own).
        self.store_folder: str | None = None
        # Why the store the server opened for this pipeline cannot be used now (served_stores.py), if any.
        self.store_problem: Callable[[], str | None] = lambda: None

    def setup(self) -> None:
        """The pipeline was built and warmed up by the server; nothing is loaded twice."""
        self.pipeline = self.built

    def ready(self) -> Pipeline:
        """The built pipeline; built now (once, whatever the concurrent requests) when its store has been
        indexed since the server started; :class:`StoreNotReadyError` while it has not, and
        :class:`StoreUnavailableError` once its folder was removed or replaced (:meth:`check_store`)."""
        self.check_store()
        if self.built is not None:
            return self.built
        with self._building:
            if self.built is None:
                assert self._builder is not None  # a wrapper without a pipeline always has its builder
                try:
                    self.built = self._builder()
                except StoreNotIndexedError as error:
                    raise StoreNotReadyError(f"{error}, or POST /index/run") from None
                self.pipeline = self.built
        return self.built

    def check_store(self, after_run: bool = False) -> None:
        """:class:`StoreUnavailableError` when the folder of a store this pipeline reads or writes was
        removed, renamed or replaced since the server opened it; after a run, the run's writes are not in it."""
        problem = self.store_problem()
        if problem is None and self.built is not None:
            problem = next(filter(None, (_folder_problem(store) for store in pipeline_stores(self.built))), None)
        if problem is None:
            return
        if after_run and writes_documents(self.spec["components"]):
            raise StoreUnavailableError(f"{problem}: what this request wrote is not in it; {RESTART}, then index again")
        raise StoreUnavailableError(f"{problem}; nothing was read or written: {RESTART}")

    def _run(self, pipeline: Pipeline, data: dict[str, Any], returning: list[str]) -> dict[str, Any]:
        """``pipeline.run``, a store whose folder moved during it a :class:`StoreUnavailableError`; the
        store checked again after it, so no answer or write is acknowledged from a folder no longer there."""
        try:
            result = pipeline.run(data, include_outputs_from=set(returning))
        except Exception as error:
            moved = cause_of_kind(error, (StoreFolderMovedError,))
            if moved is None:
                raise
            self.check_store(after_run=True)  # the folder moved during the run: says how
            raise StoreUnavailableError(f"{one_line(moved)}; {RESTART}") from None
        self.check_store(after_run=True)
        return result

    def run_declared(
        self,
        values: Mapping[str, Any] | None = None,
        *,
        query: str | None = None,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        per_component: Mapping[str, dict[str, Any]] | None = None,
        also_from: Collection[str] = (),
    ) -> dict[str, Any]:
        """Run with the request's fields placed by :func:`request_inputs` (``values``: other inputs by
        declared name, ``None`` left out; ``per_component``: inputs of one component each); the outputs by
        declared name, plus the raw result (with the outputs of the components ``also_from``)."""
        other = {name: value for name, value in (values or {}).items() if value is not None}
        declared = {name: str(path).split(".", 1) for name, path in self.spec["outputs"].items()}
        pipeline = self.ready()
        returning = [component for component, _ in declared.values()]
        returning += [name for name in also_from if name not in returning]
        data = request_inputs(
            pipeline,
            query=query,
            top_k=top_k,
            filters=filters,
            other={**other, **(per_component or {})},
            results=returning,
            declared=self.spec.get("inputs"),
        )
        result = self._run(pipeline, data, returning)
        outputs = {name: result.get(component, {}).get(socket) for name, (component, socket) in declared.items()}
        return {"outputs": outputs, "raw": result}


def _folder_problem(store: Any) -> str | None:
    """An embedded store's :meth:`folder_problem`; ``None`` for a store of another kind."""
    problem = getattr(store, "folder_problem", None)
    return problem() if callable(problem) else None


def document_out(document: Document, include_embedding: bool) -> DocumentOut:
    """``document`` as the API returns it."""
    meta = dict(document.meta or {})
    title = meta.pop("title", "") or ""
    embedding = [float(x) for x in document.embedding] if include_embedding and document.embedding is not None else None
    return DocumentOut(
        id=document.id, content=document.content, title=str(title), score=document.score, meta=meta, embedding=embedding
    )


def answer_out(answer: ExtractedAnswer) -> AnswerOut:
    """An extracted answer with its passage as context and the span's offsets in it."""
    document, span = answer.document, answer.document_offset
    return AnswerOut(
        data=answer.data,
        score=float(answer.score),
        document_id=document.id if document else None,
        document_title=str((document.meta or {}).get("title", "")) if document else "",
        context=document.content if document else None,
        offsets_in_context=Offsets(start=span.start, end=span.end) if span is not None else None,
        meta=dict(answer.meta or {}),
    )


class SearchWrapper(DeclaredPipelineWrapper):
    """A retrieval pipeline (BM25, dense, hybrid): ranked passages for a question."""

    def run_api(
        self,
        query: Query,
        top_k: TopK | None = None,
        filters: Filters | None = None,
        include_embeddings: bool = False,
    ) -> SearchResult:
        """Search the store.

        Args:
            query: the question or keywords
            top_k: how many passages to return (default: the pipeline's top_k)
            filters: a Haystack metadata filter, e.g. {"field": "meta.title", "operator": "==", "value": "Hamlet"}
            include_embeddings: also return the query vector and the passage vectors (from the
                retrievers that can return them: dense ones)

        Returns:
            the passages, best first
        """
        vectors = {name: {"return_embedding": True} for name in components_taking(self.ready(), "return_embedding")}
        ran = self.run_declared(
            query=query, top_k=top_k, filters=filters, per_component=vectors if include_embeddings else None
        )
        documents = ran["outputs"]["documents"] or []
        query_embedding = None
        if include_embeddings:
            found = [out["query_embedding"] for out in ran["raw"].values() if out.get("query_embedding") is not None]
            query_embedding = [float(x) for x in found[0]] if found else None
        return SearchResult(
            documents=[document_out(d, include_embeddings) for d in documents], query_embedding=query_embedding
        )


class AnswerWrapper(DeclaredPipelineWrapper):
    """A retrieval + reader pipeline: answer spans inside the retrieved passages."""

    def run_api(self, query: Query, top_k: TopK | None = None, filters: Filters | None = None) -> AnswerResult:
        """Answer a question with spans of the retrieved passages.

        Args:
            query: the question
            top_k: how many answers to return (default: the reader's top_k)
            filters: a Haystack metadata filter on the passages the reader reads

        Returns:
            the answers, best first, each with its passage as context
        """
        ran = self.run_declared(query=query, top_k=top_k, filters=filters)
        return AnswerResult(answers=[answer_out(a) for a in ran["outputs"]["answers"] or []])


class IndexWrapper(DeclaredPipelineWrapper):
    """An indexing pipeline: a corpus file or records in, passages written to the store."""

    def run_api(self, path: str | None = None, records: list[dict[str, Any]] | None = None) -> IndexResult:
        """Index a corpus file inside the server's input root, or the records sent.

        Args:
            path: a JSONL/TSV corpus file inside the server's input root
            records: the documents themselves, [{"id", "title", "text"}, ...]

        Returns:
            how many passages were written
        """
        ran = self.run_declared({"path": path, "records": records})
        return IndexResult(documents_written=int(ran["outputs"]["documents_written"] or 0))

    def run_files(self, uploads: list[ByteStream]) -> IndexResult:
        """Index files sent to the server (each a ByteStream with ``meta["file_name"]``) through this
        pipeline's ``FolderFetcher`` and ``FolderSync``: each file, by its name, new or changed is indexed
        (a changed one's old passages removed first), unchanged is left, refused is skipped with its reason;
        no other file of the store is touched. ``ValueError`` when not one file could be indexed."""
        from dpr_components.index_runs.folder_run import FolderRunOutcome, add_step_result, component_of
        from haystack_integrations.components.fetchers.dpr.folder_fetcher import FolderFetcher
        from haystack_integrations.components.writers.dpr.folder_sync import FolderSync

        pipeline = self.ready()
        (fetcher, _), (sync, _) = component_of(pipeline, FolderFetcher), component_of(pipeline, FolderSync)
        names = [str((upload.meta or {}).get("file_name") or "") for upload in uploads]
        ran = self.run_declared(per_component={fetcher: {"uploads": uploads}, sync: {"files": names}}, also_from=[sync])
        outcome = FolderRunOutcome("uploads")
        add_step_result(outcome, ran["raw"], sync)
        files = [FileIndexed(path=s.path, status="skipped", reason=s.reason) for s in outcome.skipped]
        files += [FileIndexed(path=path, status="indexed") for path in outcome.indexed]
        files += [FileIndexed(path=path, status="unchanged") for path in outcome.unchanged]
        if not outcome.indexed and not outcome.unchanged:
            reasons = "; ".join(f"{f.path}: {f.reason}" for f in files) or "no file was sent"
            raise ValueError(f"nothing was indexed: {reasons}")
        return IndexResult(documents_written=outcome.documents_written, files=sorted(files, key=lambda f: f.path))


def takes_uploads(spec: dict[str, Any]) -> bool:
    """Whether a pipeline file indexes files sent to it: it has a ``FolderFetcher`` and a ``FolderSync``."""
    kinds = [str(data.get("type", "")).rsplit(".", 1)[-1] for data in spec.get("components", {}).values()]
    return kinds.count("FolderFetcher") == 1 and kinds.count("FolderSync") == 1


def _document(document: DocumentIn | dict[str, Any]) -> Document:
    data = document.model_dump() if isinstance(document, DocumentIn) else dict(document)
    meta = {**data.get("meta", {}), "title": data.get("title", "")}
    return Document(id=data["id"], content=data.get("content"), meta=meta, score=data.get("score"))


class EvalWrapper(DeclaredPipelineWrapper):
    """An evaluation pipeline: scores of retrieved passages and predicted answers against gold answers."""

    def run_api(
        self,
        ground_truth_answers: list[list[str]],
        retrieved_documents: list[list[DocumentIn]] | None = None,
        predicted_answers: list[str | None] | None = None,
    ) -> EvalResult:
        """Score a batch of questions.

        Args:
            ground_truth_answers: the gold answers of each question
            retrieved_documents: the passages retrieved for each question (as a search returns them)
            predicted_answers: the answer predicted for each question, or null

        Returns:
            top-k accuracy and MRR of the passages, exact match and F1 of the answers
        """
        documents = (
            None if retrieved_documents is None else [[_document(d) for d in docs] for docs in retrieved_documents]
        )
        ran = self.run_declared(
            {
                "ground_truth_answers": ground_truth_answers,
                "retrieved_documents": documents,
                "predicted_answers": predicted_answers,
            }
        )
        outputs = ran["outputs"]
        accuracy = outputs.get("top_k_accuracy")
        return EvalResult(
            top_k_accuracy={str(k): float(v) for k, v in accuracy.items()} if accuracy is not None else None,
            mrr=outputs.get("mrr"),
            exact_match=outputs.get("exact_match"),
            f1=outputs.get("f1"),
        )


def wrapper_kind(spec: dict[str, Any]) -> type[DeclaredPipelineWrapper] | None:
    """The wrapper class for a pipeline by its declared inputs and outputs, ``None`` if none fits."""
    inputs, outputs = set(spec.get("inputs") or {}), set(spec.get("outputs") or {})
    if "query" in inputs and outputs == {"documents"}:
        return SearchWrapper
    if "query" in inputs and outputs == {"answers"}:
        return AnswerWrapper
    if outputs == {"documents_written"} and inputs <= {"path", "records"}:
        return IndexWrapper
    if "ground_truth_answers" in inputs and inputs <= {
        "ground_truth_answers",
        "retrieved_documents",
        "predicted_answers",
    }:
        return EvalWrapper
    return None
