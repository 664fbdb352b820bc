"""The ``haystack serve`` app: every servable YAML pipeline of a folder at ``POST /{name}/run`` (hayhooks),
and the ask page at ``/``.

Which files are served and how each is built is deployment.py; each kind has a hayhooks wrapper
with a typed ``run_api`` (wrappers.py) from which hayhooks derives the request and response models
(search: query, top_k, filters, include_embeddings -> documents; qa: query, top_k, filters ->
answers; index: path or records, or files uploaded (multipart/form-data, uploads.py) -> documents_written;
evaluation; training, a background job: 202
and ``GET /jobs/{id}``, jobs.py).

The app serves a fixed set of routes and nothing else: ``POST /{name}/run``, ``GET /status``,
``GET /stores``, ``GET /documents/{id}``, ``GET /openapi.json``, the page (``GET /``, its script and style) and, with training on,
``GET /jobs/{id}``. hayhooks' own routes (deploy, undeploy, draw, the OpenAI-compatible chat and file
routes, traces, docs pages that load scripts from a CDN) are not mounted. A pipeline with a
``DPRTrainer`` is served only with ``enable_training``; otherwise its route answers 403 saying so.
Who may call the server and what a request may carry is a ``ServerPolicy`` (security.py),
enforced by the middlewares of guards.py.

A pipeline that fails on a user error (``ValueError``, ``FilterError``, ``DocumentStoreError``, a missing
file) answers HTTP 400 with that error's one-line message; inputs that are missing or of the wrong type
are 422 with a one-line message (both declared in the OpenAPI schema), and an unknown pipeline is 404.
A pipeline file the server could not serve (a model missing, a store of another passage encoder...) answers
503 with its reason, which ``GET /status`` gives too (``unavailable``), as it does for a pipeline whose store
folder was removed or replaced while served (served_stores.py)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from haystack.core.serialization import allow_deserialization_module

import dpr_components
from dpr_components.pipeline_requests.errors import one_line
from dpr_components.serving.ask_page import PAGE_PATHS, add_page_routes
from dpr_components.serving.deployment import (
    ServingError,
    TrainingNotEnabledError,
    pipeline_files,
    prepare_pipeline,
)
from dpr_components.serving.guards import OriginGuard, RequestGuard
from dpr_components.serving.jobs import TrainingJobs, TrainWrapper
from dpr_components.serving.routes import (
    DOCUMENTS_PATH,
    JOBS_PATH,
    OPENAPI_PATH,
    STATUS_PATH,
    STORES_PATH,
    add_jobs_route,
    add_run_route,
    add_status_route,
    add_store_routes,
    add_training_off_route,
    add_unavailable_route,
    served_wrappers,
)
from dpr_components.serving.run_queues import RunQueues, WriteQueue
from dpr_components.serving.security import (
    CORS_HEADERS,
    CORS_METHODS,
    ServerPolicy,
    configure_server_logs,
)
from dpr_components.serving.served_stores import served_stores
from dpr_components.serving.store_folders import StoreFolders
from dpr_components.serving.uploads import add_upload_routes, upload_targets
from dpr_components.utils.input_files import INPUT_ROOT_ENV
from dpr_components.utils.threads import default_concurrent_runs

logger = logging.getLogger(__name__)


@dataclass
class ServedPipelines:
    """What ``build_app`` deployed, and why each other file was left out."""

    deployed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def validation_detail(errors: list[dict[str, Any]]) -> str:
    """pydantic's validation errors as one line: ``body.query: Field required``; a check of the request's
    own (``ValueError``) without pydantic's "Value error, " before it: ``body.top_k: top_k must be a
    positive integer, got 0``, the line of the command line and the LangChain retriever."""
    if not errors:
        return "invalid request"
    where = ".".join(str(part) for part in errors[0].get("loc", ()))
    message = str(errors[0].get("msg", ""))
    if errors[0].get("type") == "value_error":
        message = message.removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return " ".join(f"{where}: {message}{more}".split())


async def _one_line_422(request: Request, exc: Exception) -> Response:  # noqa: ARG001 - Starlette's handler signature
    """A 422 whose detail names the field on one line (never pydantic's copy of the input; a check of the
    request's own names at most a short repr of the value, as a 400 does)."""
    assert isinstance(exc, RequestValidationError)
    return JSONResponse(status_code=422, content={"detail": validation_detail(list(exc.errors()))})


def _keep_only(app: FastAPI, paths: set[str]) -> None:
    """Unmount every route whose path is not in ``paths`` (hayhooks' routers, mounts, docs pages), and
    the copies of ``/openapi.json`` that each ``app.setup()`` adds."""
    kept, seen = [], set()
    for route in app.router.routes:
        key = (getattr(route, "path", None), frozenset(getattr(route, "methods", None) or ()))
        if key[0] in paths and key not in seen:
            kept.append(route)
            seen.add(key)
    app.router.routes[:] = kept


def _add_guards(app: FastAPI, policy: ServerPolicy, upload_paths: frozenset[str]) -> None:
    """hayhooks' CORS middleware (any origin) replaced by the policy's guards, outermost last; the routes
    ``upload_paths`` take file uploads."""
    from starlette.middleware.cors import CORSMiddleware

    app.user_middleware[:] = [m for m in app.user_middleware if m.cls is not CORSMiddleware]
    app.add_middleware(RequestGuard, policy=policy, upload_paths=upload_paths)
    if policy.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(policy.cors_origins),
            allow_methods=list(CORS_METHODS),
            allow_headers=list(CORS_HEADERS),
            allow_credentials=False,
            max_age=600,
        )
    app.add_middleware(OriginGuard, policy=policy)


# Our own routes replace hayhooks' startup deploy; no traces, dashboards, chat UI or extra imports.
# CORS is replaced by _add_guards (an empty list also keeps hayhooks from warning about "*").
HAYHOOKS_SETTINGS: dict[str, Any] = {
    "pipelines_dir": "",
    "durable_mode": False,
    "tracing_enabled": False,
    "tracing_include_haystack_spans": False,
    "monitoring_enabled": False,
    "chainlit_enabled": False,
    "show_tracebacks": False,
    "additional_python_path": "",
    "cors_allow_origins": [],
}


def _hayhooks_app() -> FastAPI:
    """hayhooks' app (its logging, request ids) with its optional parts off, whatever ``HAYHOOKS_*`` variables say."""
    from hayhooks.settings import settings

    for name, value in HAYHOOKS_SETTINGS.items():
        setattr(settings, name, value)
    from hayhooks import create_app

    return create_app()


def _deploy(
    app: FastAPI,
    files: list[Path],
    enable_training: bool,
    jobs: TrainingJobs,
    queues: RunQueues,
    stores: StoreFolders | None = None,
) -> tuple[ServedPipelines, list[str], list[str]]:
    """Add the route of every file that can be served, its runs in the reads' or the writes' queue; also the
    names of those that train a model, left out (training off) and served (as background jobs)."""
    served, training_off, training_on = ServedPipelines(), [], []
    for path in files:
        try:
            wrapper = prepare_pipeline(path, enable_training=enable_training, jobs=jobs, stores=stores)
        except TrainingNotEnabledError as error:
            served.skipped[path.stem] = one_line(error)
            training_off.append(path.stem)
            continue
        except (ValueError, OSError) as error:  # PipelineFileError, ServingError, a component's check, a model folder
            served.skipped[path.stem] = one_line(error)
            logger.warning("not serving %s: %s", path.name, one_line(error))
            continue
        trains = isinstance(wrapper, TrainWrapper)
        limiter = queues.for_spec(getattr(wrapper, "spec", None))
        add_run_route(app, path.stem, wrapper, limiter, status_code=202 if trains else 200)
        served.deployed.append(path.stem)
        if trains:
            training_on.append(path.stem)
    return served, training_off, training_on


def _add_left_out_routes(app: FastAPI, served: ServedPipelines, training_off: list[str]) -> None:
    """``POST /{name}/run`` of each file left out: 403 for training while it is off, else 503 with the reason."""
    for name in training_off:
        add_training_off_route(app, name)
    for name, reason in served.skipped.items():
        if name not in training_off:
            add_unavailable_route(app, name, reason)


def build_app(
    pipelines_dir: str | Path,
    input_root: str | Path | None = None,
    policy: ServerPolicy | None = None,
    concurrent_runs: int | None = None,
    stores: StoreFolders | None = None,
    write_queue: WriteQueue = "own",
) -> tuple[FastAPI, ServedPipelines]:
    """The app serving every pipeline of ``pipelines_dir`` that can be served, and the ask page at ``/``,
    behind ``policy``.

    ``input_root`` becomes ``DPR_INPUT_ROOT``: input files named in requests must be inside it.
    ``concurrent_runs``: pipeline runs at once (default :func:`default_concurrent_runs`); more requests
    wait, first come first served; the index route's runs wait in a queue of their own, one at a time
    (``write_queue="shared"``: in the same queue, run_queues.py). ``stores``: the store folders that replace the pipelines' own
    (``haystack serve --store``), checked first (a name that is no pipeline with a store, a folder of another
    program: ``ValueError``)."""
    policy = policy or ServerPolicy()
    files = pipeline_files(pipelines_dir)
    if stores is not None:
        stores.check(files)  # before anything is built: a mistyped name or a folder of another program
    if input_root is not None:
        os.environ[INPUT_ROOT_ENV] = str(input_root)  # as given: error messages show it, not an absolute path
    allow_deserialization_module("dpr_components")
    app = _hayhooks_app()
    _keep_only(app, set())  # none of hayhooks' own routes: only those added below
    configure_server_logs(policy.log_queries)
    app.add_exception_handler(RequestValidationError, _one_line_422)
    jobs = TrainingJobs()
    queues = RunQueues.create(concurrent_runs or default_concurrent_runs(), write_queue)
    served, training_off, training_on = _deploy(app, files, policy.enable_training, jobs, queues, stores)
    if not served.deployed:
        jobs.shutdown()
        reasons = "; ".join(f"{name}: {why}" for name, why in served.skipped.items()) or "no YAML files"
        raise ServingError(f"no pipeline in {pipelines_dir} can be served ({reasons})")
    found_stores = served_stores(served_wrappers(app), stores)
    uploads = upload_targets(served_wrappers(app))
    add_status_route(app, served.deployed, found_stores, served.skipped, policy.api_key, sorted(uploads))
    add_store_routes(app, found_stores, served.skipped)
    _add_left_out_routes(app, served, training_off)
    paths = {STATUS_PATH, OPENAPI_PATH, STORES_PATH, DOCUMENTS_PATH, *PAGE_PATHS}
    paths.update(f"/{name}/run" for name in [*served.deployed, *served.skipped])
    if training_on:
        add_jobs_route(app, jobs)
        paths.add(JOBS_PATH)
    add_page_routes(app)
    app.title, app.version = "dpr-components", dpr_components.__version__  # OpenAPI names this project, not hayhooks
    app.description = "Dense Passage Retrieval pipelines served by haystack serve"
    app.openapi_schema = None
    app.setup()  # the one /openapi.json, of the routes above
    _keep_only(app, paths)
    upload_paths = add_upload_routes(
        app, served_wrappers(app), uploads, queues
    )  # after: _keep_only keeps one route a path
    _add_guards(app, policy, frozenset(upload_paths))
    return app, served
