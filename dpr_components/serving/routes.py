"""The routes of ``haystack serve``: ``POST /{name}/run`` from a wrapper's typed ``run_api``, the
training jobs, the status and the training-off answer.

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
from fastapi import FastAPI, HTTPException
from hayhooks import BasePipelineWrapper, log
from hayhooks.server.pipelines.models import create_request_model_from_callable, create_response_model_from_callable
from haystack.document_stores.errors import DocumentStoreError
from haystack.errors import FilterError
from pydantic import BaseModel

from dpr_components.pipeline_requests.errors import one_line, unreachable_server, user_error_cause
from dpr_components.serving.jobs import TrainingJobs
from dpr_components.serving.models import ERROR_RESPONSES, ErrorDetail, TrainingJob, strict_request
from dpr_components.serving.wrappers import StoreNotReadyError

# Errors that describe a bad request; any other failure stays a 500 (a server fault).
REQUEST_ERRORS: tuple[type[BaseException], ...] = (ValueError, FilterError, DocumentStoreError, FileNotFoundError)
STATUS_PATH, OPENAPI_PATH, JOBS_PATH = "/status", "/openapi.json", "/jobs/{job_id}"
TRAINING_OFF = "training over HTTP is off: start haystack serve with --enable-training to serve {name}"


def request_error(error: BaseException) -> BaseException | None:
    """The outermost error caused by the request in the chain of ``error`` and its causes, if any."""
    return user_error_cause(error, REQUEST_ERRORS)


def run_models(name: str, wrapper: BasePipelineWrapper) -> tuple[type[BaseModel], type[BaseModel]]:
    """The request and response models hayhooks derives from ``wrapper.run_api``, the request made strict."""
    run = wrapper.run_api
    docstring = docstring_parser.parse(inspect.getdoc(run) or "")
    response = create_response_model_from_callable(run, f"{name}Run", docstring)
    assert response is not None  # run_api returns a model, never a stream
    return strict_request(create_request_model_from_callable(run, f"{name}Run", docstring)), response


def _endpoint(
    name: str,
    wrapper: BasePipelineWrapper,
    models: tuple[type[BaseModel], type[BaseModel]],
    limiter: anyio.CapacityLimiter,
) -> Callable[..., Awaitable[BaseModel]]:
    """The route handler: the request's fields to ``run_api`` in a worker thread, at most ``limiter``'s
    count at once (the others wait their turn, first come first served); a failure the request caused is
    a 400 with its one-line message, a server the store needs that does not answer a 503, any other a 500
    (logged without variables' values)."""
    request_model, response_model = models
    fields = list(request_model.model_fields)

    async def run(body: BaseModel) -> BaseModel:
        log.bind(params=body.model_dump()).info("Running pipeline '{}'", name)
        call = functools.partial(wrapper.run_api, **{field: getattr(body, field) for field in fields})
        try:
            result = await anyio.to_thread.run_sync(call, limiter=limiter)
        except HTTPException:
            raise
        except Exception as error:
            cause = request_error(error)
            if cause is not None:
                raise HTTPException(status_code=400, detail=one_line(cause)) from None
            if isinstance(error, StoreNotReadyError):  # served before its store was indexed: index first
                raise HTTPException(status_code=503, detail=one_line(error)) from None
            unreachable = unreachable_server(error)
            if unreachable is not None:  # the store's server is down: the request may succeed later
                raise HTTPException(status_code=503, detail=one_line(unreachable)) from None
            log.opt(exception=True).error("Pipeline '{}' failed: {}", name, type(error).__name__)
            raise HTTPException(status_code=500, detail=f"pipeline {name} failed: {one_line(error)}") from None
        return response_model(result=result)

    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("body", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=request_model)],
        return_annotation=response_model,
    )
    run.__doc__ = inspect.getdoc(wrapper.run_api)
    return run


def add_run_route(
    app: FastAPI, name: str, wrapper: BasePipelineWrapper, limiter: anyio.CapacityLimiter, status_code: int = 200
) -> None:
    """``POST /{name}/run`` for ``wrapper`` (already set up); runs share ``limiter``."""
    request_model, response_model = run_models(name, wrapper)
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


def add_status_route(app: FastAPI, deployed: list[str]) -> None:
    """``GET /status``: whether the server is up, and the pipelines it serves."""

    async def status() -> dict[str, Any]:
        """Whether the server is up, and the pipelines it serves."""
        return {"status": "Up!", "pipelines": list(deployed)}

    app.add_api_route(STATUS_PATH, status, methods=["GET"], tags=["status"])


def add_training_off_route(app: FastAPI, name: str) -> None:
    """``POST /{name}/run`` answering 403 with how to turn training on."""

    async def training_off() -> None:
        raise HTTPException(status_code=403, detail=TRAINING_OFF.format(name=name))

    app.add_api_route(f"/{name}/run", training_off, methods=["POST"], include_in_schema=False)
