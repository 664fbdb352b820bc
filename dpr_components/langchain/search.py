"""One query through a Haystack retriever component or a pipeline: the documents it returns.

Both sources take a query, an optional ``top_k`` and optional Haystack filters, and have a
synchronous and a native asynchronous search (the component's or pipeline's ``run_async``). A failure
the user is told (the one rule of every front end, ``pipeline_requests/errors.py``) is raised in place
of the wrappers around it."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

from haystack import Document
from haystack.dataclasses import ExtractedAnswer

from dpr_components.pipeline_requests.errors import user_errors_unwrapped
from dpr_components.pipeline_requests.inputs import request_inputs
from dpr_components.utils.pipeline_graph import leaf_components

RESULT_SOCKETS = ("documents", "answers")


def answer_document(answer: ExtractedAnswer) -> Document:
    """An answer as a document: ``content`` is the answer text ("" for "no answer"), ``score`` its score,
    ``meta`` says whether it is "no answer" and where the answer was found (title, passage, offsets)."""
    found_in = answer.document
    meta: dict[str, Any] = {"answer": answer.data, "no_answer": answer.data is None}
    if found_in is not None:
        meta.update(title=found_in.meta.get("title", ""), source_id=found_in.id, context=found_in.content)
    if answer.document_offset is not None:
        meta["offsets"] = [answer.document_offset.start, answer.document_offset.end]
    return Document(content=answer.data or "", meta=meta, score=answer.score)


def _documents(result: Any, name: str) -> list[Document]:
    """The ``documents`` of a component's result, or its ``answers`` as documents (:func:`answer_document`)."""
    documents = result.get("documents") if isinstance(result, dict) else None
    if isinstance(documents, list):
        return documents
    answers = result.get("answers") if isinstance(result, dict) else None
    if isinstance(answers, list):
        return [answer_document(answer) for answer in answers]
    raise ValueError(f"{name} returned no 'documents' or 'answers' output")


class ComponentSearch:
    """A retriever component (``run(query=..., top_k=..., filters=...)`` returning ``documents``)."""

    def __init__(self, component: Any) -> None:
        run = getattr(component, "run", None)
        if not callable(run):
            raise TypeError(f"expected a Haystack retriever component, got {type(component).__name__}")
        parameters = inspect.signature(run).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        if "query" not in parameters and not takes_any:
            raise ValueError(f"{type(component).__name__}.run takes no query: give a retriever that searches by text")
        self.component = component
        self.name = type(component).__name__
        self.takes_top_k = "top_k" in parameters or takes_any
        self.takes_filters = "filters" in parameters or takes_any
        self._warmed_up = False
        self._lock = threading.Lock()

    def _warm_up(self) -> None:
        """The component's ``warm_up`` (models, store checks), once."""
        with self._lock:
            if not self._warmed_up:
                warm_up = getattr(self.component, "warm_up", None)
                if callable(warm_up):
                    warm_up()
                self._warmed_up = True

    def _arguments(self, query: str, top_k: int | None, filters: dict[str, Any] | None) -> dict[str, Any]:
        arguments: dict[str, Any] = {"query": query}
        if top_k is not None and self.takes_top_k:
            arguments["top_k"] = top_k
        if filters is not None:
            if not self.takes_filters:
                raise ValueError(f"{self.name} takes no filters")
            arguments["filters"] = filters
        return arguments

    def search(self, query: str, top_k: int | None, filters: dict[str, Any] | None) -> list[Document]:
        arguments = self._arguments(query, top_k, filters)
        self._warm_up()
        with user_errors_unwrapped():  # a component may wrap a library's error, as Haystack wraps the component's
            result = self.component.run(**arguments)
        return _documents(result, self.name)[:top_k]

    async def search_async(self, query: str, top_k: int | None, filters: dict[str, Any] | None) -> list[Document]:
        arguments = self._arguments(query, top_k, filters)
        if not self._warmed_up:
            await asyncio.to_thread(self._warm_up)
        run_async = getattr(self.component, "run_async", None)
        with user_errors_unwrapped():
            if callable(run_async):
                result = await run_async(**arguments)
            else:
                result = await asyncio.to_thread(self.component.run, **arguments)
        return _documents(result, self.name)[:top_k]


class PipelineSearch:
    """A pipeline: the documents of the ``output`` component (by default the one result component with a
    documents or answers output; answers come as documents, "no answer" included); the query, ``top_k`` and filters placed as every front end places them
    (:func:`~dpr_components.pipeline_requests.inputs.request_inputs`, ``output`` as the result component):
    the query to every input named ``query``, ``top_k`` to ``output``, filters to every component that
    takes them (the retrievers before a re-ranking stage among them)."""

    def __init__(self, pipeline: Any, output: str | None = None) -> None:
        inputs = pipeline.inputs()
        self.receivers = [name for name, sockets in inputs.items() if "query" in sockets]
        if not self.receivers:
            raise ValueError("the pipeline has no input named 'query'")
        outputs = pipeline.outputs(include_components_with_connected_outputs=True)
        with_results = [name for name, sockets in outputs.items() if any(s in sockets for s in RESULT_SOCKETS)]
        if output is None:
            leaves = [name for name in leaf_components(pipeline) if name in with_results]
            if len(leaves) != 1:
                raise ValueError(f"name the component whose results to return (output=...), one of {with_results}")
            output = leaves[0]
        elif output not in with_results:
            raise ValueError(
                f"output {output!r} is not a component with a documents or answers output; give one of {with_results}"
            )
        self.pipeline = pipeline
        self.output = output
        self.name = f"pipeline component {output!r}"
        self._extra_outputs = None if output in leaf_components(pipeline) else {output}

    def _inputs(self, query: str, top_k: int | None, filters: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
        return request_inputs(self.pipeline, query=query, top_k=top_k, filters=filters, results=[self.output])

    def search(self, query: str, top_k: int | None, filters: dict[str, Any] | None) -> list[Document]:
        data = self._inputs(query, top_k, filters)
        with user_errors_unwrapped():
            result = self.pipeline.run(data, include_outputs_from=self._extra_outputs)
        return _documents(result.get(self.output), self.name)[:top_k]

    async def search_async(self, query: str, top_k: int | None, filters: dict[str, Any] | None) -> list[Document]:
        data = self._inputs(query, top_k, filters)
        with user_errors_unwrapped():
            result = await self.pipeline.run_async(data, include_outputs_from=self._extra_outputs)
        return _documents(result.get(self.output), self.name)[:top_k]
