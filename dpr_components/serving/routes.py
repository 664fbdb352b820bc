"""The routes of ``haystack serve``: ``POST /{name}/run`` from a wrapper's typed ``run_api``, the
training jobs, the status, the served stores (``GET /stores``: their passage counts; ``GET
/documents/{id}``: one source document's passages in order) and the training-off answer.

hayhooks builds the request model from ``run_api``'s parameters and the response model
(``{"result": ...}``) from its return annotation; each route declares the 400 and 422 answers
(``{"detail": "one line"}``) in the OpenAPI schema."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import docstring_parser
from fastapi import FastAPI, HTTPException, Request
from hayhooks import BasePipelineWrapper, log
from hayhooks.server.pipelines.models import create_request_model_from_callable, create_response_model_from_callable
from haystack import Document
from pydantic import BaseModel
from starlette.convertors import Convertor, register_url_convertor

from dpr_components.corpus.record_ids import lookup_id_problem
from dpr_components.pipeline_requests.errors import Blame, one_line, user_error
from dpr_components.serving.guards import carries_api_key
from dpr_components.serving.jobs import TrainingJobs
from dpr_components.serving.models import (
    ERROR_RESPONSES,
    ErrorDetail,
    ServerStatus,
    SourceDocument,
    StoreReady,
    StoresStatus,
    StoreState,
    TrainingJob,
    strict_request,
)
from dpr_components.serving.served_stores import ServedStore, ready_names, source_passages
from dpr_components.serving.wrappers import RESTART, DeclaredPipelineWrapper, StoreUnavailableError, document_out
from dpr_components.utils.validation import short_repr

# The status of each failure the user is told (a file this machine cannot read or write is a server fault: 500).
STATUS_OF = {Blame.REQUEST: 400, Blame.UNREACHABLE: 503, Blame.REMOTE: 502}
STATUS_PATH, OPENAPI_PATH, JOBS_PATH = "/status", "/openapi.json", "/jobs/{job_id}"
STORES_PATH, DOCUMENTS_PATH = "/stores", "/documents/{document_id:any_text}"
TRAINING_OFF = "training over HTTP is off: start haystack serve with --enable-training to serve {name}"


class _AnyText(Convertor[str]):
    """A path parameter of any characters, a newline included (Starlette's ``path`` stops before one), so
    that every id reaches the documents route, which refuses those the record id rule does not allow."""

    regex = "(?s:.*)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("any_text", _AnyText())


def run_models(name: str, wrapper: BasePipelineWrapper) -> tuple[type[BaseModel], type[BaseModel]]:
    """The request and response models hayhooks derives from ``wrapper.run_api``, the request made strict."""
    run = wrapper.run_api
    docstring = docstring_parser.parse(inspect.getdoc(run) or "")
    response = create_response_model_from_callable(run, f"{name}Run", docstring)
    assert response is not None  # run_api returns a model, never a stream
    return strict_request(create_request_model_from_callable(run, f"{name}Run", docstring)), response


async def run_in_worker(name: str, call: Callable[[], Any], limiter: anyio.CapacityLimiter) -> Any:
    """``call()`` in a worker thread, at most ``limiter``'s count at once; a failure as an ``HTTPException``
    (see :func:`_endpoint`)."""
    try:
        return await anyio.to_thread.run_sync(call, limiter=limiter)
    except HTTPException:
        raise
    except Exception as error:  # noqa: BLE001 - every failure becomes an HTTP status with its one line
        if isinstance(error, StoreUnavailableError):  # not indexed yet, or its folder removed or replaced
            raise HTTPException(status_code=503, detail=one_line(error)) from None
        found = user_error(error)
        if found is not None and found.blame in STATUS_OF:
            raise HTTPException(status_code=STATUS_OF[found.blame], detail=found.line) from None
        log.opt(exception=True).error("Pipeline '{}' failed: {}", name, type(error).__name__)
        line = found.line if found is not None else one_line(error)  # a local file's, without the wrappers
        raise HTTPException(status_code=500, detail=f"pipeline {name} failed: {line}") from None


def _endpoint(
    name: str,
    wrapper: BasePipelineWrapper,
    models: tuple[type[BaseModel], type[BaseModel]],
    limiter: anyio.CapacityLimiter,
) -> Callable[..., Awaitable[BaseModel]]:
    """The route handler: the request's fields to ``run_api`` in a worker thread, at most ``limiter``'s
    count at once (the others wait their turn, first come first served); a failure is told by the one rule
    (:func:`~dpr_components.pipeline_requests.errors.user_error`), its line as the detail: the request's
    mistake a 400, a store that cannot be used now or a server it needs that does not answer a 503, a
    remote server's error status a 502, any other a 500 (logged without variables' values)."""
    request_model, response_model = models
    fields = list(request_model.model_fields)

    async def run(body: BaseModel) -> BaseModel:
        log.bind(params=body.model_dump()).info("Running pipeline '{}'", name)
        call = functools.partial(wrapper.run_api, **{field: getattr(body, field) for field in fields})
        return response_model(result=await run_in_worker(name, call, limiter))

    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("body", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=request_model)],
        return_annotation=response_model,
    )
    run.__doc__ = inspect.getdoc(wrapper.run_api)
    return run


def add_run_route(
    app: FastAPI, name: str, wrapper: BasePipelineWrapper, limiter: anyio.CapacityLimiter, status_code: int = 200
) -> None:
    """``POST /{name}/run`` for ``wrapper`` (already set up); runs share ``limiter``. The wrapper is kept
    in :func:`served_wrappers` for the store routes."""
    request_model, response_model = run_models(name, wrapper)
    if isinstance(wrapper, DeclaredPipelineWrapper):
        served_wrappers(app)[name] = wrapper
    summary = docstring_parser.parse(inspect.getdoc(wrapper.run_api) or "").short_description
    app.add_api_route(
        f"/{name}/run",
        _endpoint(name, wrapper, (request_model, response_model), limiter),
        methods=["POST"],
        response_model=response_model,
        status_code=status_code,
        responses=ERROR_RESPONSES,
        name=f"{name}_run",
        summary=summary,
        tags=["pipelines"],
    )


def add_jobs_route(app: FastAPI, jobs: TrainingJobs) -> None:
    """``GET /jobs/{job_id}``: a training job's status and, once done, its checkpoint."""

    async def job_status(job_id: str) -> TrainingJob:
        """A training job's status."""
        job = jobs.get(job_id)
        if job is None:
            raise HTTPException(status_code=404, detail=f"no training job {job_id[:40]!r} on this server")
        return job

    app.add_api_route(
        JOBS_PATH,
        job_status,
        methods=["GET"],
        response_model=TrainingJob,
        tags=["training"],
        responses={404: {"model": ErrorDetail, "description": "No such job"}},
    )


def served_wrappers(app: FastAPI) -> dict[str, DeclaredPipelineWrapper]:
    """The wrappers of the pipelines ``app`` serves, by name (filled by :func:`add_run_route`)."""
    if not hasattr(app.state, "served_wrappers"):
        app.state.served_wrappers = {}
    wrappers: dict[str, DeclaredPipelineWrapper] = app.state.served_wrappers
    return wrappers


def add_status_route(
    app: FastAPI,
    deployed: list[str],
    stores: dict[str, ServedStore] | None = None,
    unavailable: dict[str, str] | None = None,
    api_key: str | None = None,
    uploads: list[str] | None = None,
) -> None:
    """``GET /status``: whether the server is up, the pipelines it serves, whether their stores are ready,
    which index routes take file uploads (``uploads``), and why each pipeline it cannot serve answers 503
    (``unavailable``: the pipelines left out at start,
    and those whose store folder was removed or replaced since). Public, so no passage counts, no data, and
    with an API key the reasons (which name folders) only to a request that sends it."""

    async def status(request: Request) -> ServerStatus:
        """Whether the server is up, the pipelines it serves, which of their stores were indexed, and why
        the pipelines it cannot serve answer 503."""
        found = stores or {}
        problems = {name: store.problem() for name, store in found.items()}
        reasons = {**(unavailable or {}), **{name: why for name, why in problems.items() if why is not None}}
        if not carries_api_key(request.headers, api_key):
            reasons = dict.fromkeys(reasons, "cannot be served now; the reason is given with the API key")
        return ServerStatus(
            pipelines=list(deployed),
            stores={name: StoreReady(ready=store.ready()) for name, store in found.items()},
            unavailable=reasons,
            uploads=list(uploads or []),
        )

    app.add_api_route(STATUS_PATH, status, methods=["GET"], response_model=ServerStatus, tags=["status"])


def add_store_routes(app: FastAPI, stores: dict[str, ServedStore], unavailable: dict[str, str] | None = None) -> None:
    """``GET /stores`` (each store: ready, passages) and ``GET /documents/{id}`` (a source document's
    passages in order); both behind the API key, as the pipelines' routes are. ``unavailable``: the
    pipelines the server could not serve, with the reason ``?pipeline=`` of one of them answers (503)."""

    async def store_states() -> StoresStatus:
        """Each served pipeline's store: whether it was indexed and how many passages it holds."""

        def count() -> StoresStatus:
            return StoresStatus(
                stores={
                    name: StoreState(ready=s.ready(), passages=s.passages(), problem=s.problem())
                    for name, s in stores.items()
                }
            )

        return await anyio.to_thread.run_sync(count)

    app.add_api_route(STORES_PATH, store_states, methods=["GET"], response_model=StoresStatus, tags=["status"])
    app.add_api_route(
        DOCUMENTS_PATH,
        _document_endpoint(stores, unavailable or {}),
        methods=["GET"],
        response_model=SourceDocument,
        tags=["status"],
        responses={
            404: {"model": ErrorDetail, "description": "No such document, or no such pipeline with a store"},
            422: {"model": ErrorDetail, "description": "An id no document or passage can have (the record id rule)"},
            501: {"model": ErrorDetail, "description": "The pipeline's store is not an embedded store"},
            503: {
                "model": ErrorDetail,
                "description": "The pipeline's store was not indexed yet (index first), its folder was removed "
                "or replaced while served, or the server could not serve the pipeline (the reason)",
            },
        },
    )


def _store_for(stores: dict[str, ServedStore], pipeline: str | None, unavailable: dict[str, str]) -> ServedStore:
    """The store of ``pipeline`` (default: the first ready one), or the HTTP error saying why none."""
    if pipeline in unavailable:
        raise HTTPException(status_code=503, detail=f"pipeline {pipeline} cannot be served: {unavailable[pipeline]}")
    name = pipeline if pipeline is not None else next(ready_names(stores), next(iter(stores), None))
    if name is None or name not in stores:
        raise HTTPException(status_code=404, detail=f"no served pipeline {str(name)[:100]!r} with a store")
    store = stores[name]
    if not store.embedded:
        raise HTTPException(
            status_code=501, detail=f"pipeline {name}'s store is not an embedded store: search it with filters"
        )
    problem = store.problem()
    if problem is not None:
        raise HTTPException(status_code=503, detail=f"pipeline {name}'s store: {problem}; {RESTART}")
    if not store.ready():
        raise HTTPException(status_code=503, detail=f"pipeline {name}'s store was not indexed yet: index first")
    return store


def _document_endpoint(
    stores: dict[str, ServedStore], unavailable: dict[str, str]
) -> Callable[..., Awaitable[SourceDocument]]:
    async def source_document(document_id: str, pipeline: str | None = None) -> SourceDocument:
        """A source document's passages in order, by its id or one of its passages' ids.

        Args:
            document_id: the source document's id (``meta.document_id``) or a passage id (``hamlet#0``),
                URL-encoded; any id the index accepts (the record id rule of ``corpus/record_ids.py``)
            pipeline: the served pipeline whose store to read (default: the first one indexed)
        """
        problem = lookup_id_problem(document_id)
        if problem is not None:  # no record or passage can have it: say why instead of "no document"
            raise HTTPException(status_code=422, detail=f"path.document_id {problem}")
        store = _store_for(stores, pipeline, unavailable)
        found: list[Document] = await anyio.to_thread.run_sync(lambda: source_passages(store.handle(), document_id))
        if not found:
            raise HTTPException(
                status_code=404,
                detail=f"no document {short_repr(document_id, 100)} in the store of pipeline {store.pipeline}",
            )
        first = found[0].meta or {}
        return SourceDocument(
            id=str(first.get("document_id") or found[0].id),
            title=str(first.get("title", "") or ""),
            pipeline=store.pipeline,
            passages=[document_out(d, include_embedding=False) for d in found],
        )

    return source_document


def add_unavailable_route(app: FastAPI, name: str, reason: str) -> None:
    """``POST /{name}/run`` for a pipeline the server could not serve: 503 with the reason, not a bare 404."""

    async def unavailable() -> None:
        raise HTTPException(status_code=503, detail=f"pipeline {name} cannot be served: {reason}")

    app.add_api_route(f"/{name}/run", unavailable, methods=["POST"], include_in_schema=False)


def add_training_off_route(app: FastAPI, name: str) -> None:
    """``POST /{name}/run`` answering 403 with how to turn training on."""

    async def training_off() -> None:
        raise HTTPException(status_code=403, detail=TRAINING_OFF.format(name=name))

    app.add_api_route(f"/{name}/run", training_off, methods=["POST"], include_in_schema=False)
