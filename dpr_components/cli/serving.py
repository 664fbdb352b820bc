"""Serve every YAML pipeline of a folder over HTTP with hayhooks: ``POST /{name}/run``, and the ask page at ``/``.

Each file is built the way the command line builds it (checked parameters, local components only,
store folders that exist) and warmed up once. Its declared ``inputs:`` / ``outputs:`` say which kind it
is; each kind has a hayhooks wrapper with a typed ``run_api`` (serving_wrappers.py) from which hayhooks
derives the request and response models (search: query, top_k, filters, include_embeddings ->
documents; qa: query, top_k, filters -> answers; index: path or records -> documents_written;
evaluation; training, a background job: 202 and ``GET /jobs/{id}``).

The app serves a fixed set of routes and nothing else: ``POST /{name}/run``, ``GET /status``,
``GET /openapi.json``, the page (``GET /``, its script and style) and, with training on,
``GET /jobs/{id}``. hayhooks' own routes (deploy, undeploy, draw, the OpenAI-compatible chat and file
routes, traces, docs pages that load scripts from a CDN) are not mounted. A pipeline with a
``DPRTrainer`` is served only with ``enable_training``; otherwise its route answers 403 saying so.
Who may call the server and what a request may carry is a ``ServerPolicy`` (server_security.py),
enforced by the middlewares of server_guards.py.

A pipeline that fails on a user error (``ValueError``, ``FilterError``, ``DocumentStoreError``, a missing
file) answers HTTP 400 with that error's one-line message; inputs that are missing or of the wrong type
are 422 with a one-line message (both declared in the OpenAPI schema), and an unknown pipeline is 404.

Pipelines that need the network (Elasticsearch) are skipped unless ``ELASTICSEARCH_URL`` is set, which
then replaces the ``hosts`` of their Elasticsearch stores, or ``DPR_ALLOW_NETWORK=1``."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from haystack import Pipeline
from haystack.core.serialization import allow_deserialization_module

from dpr_components.cli.pipeline_runner import one_line
from dpr_components.cli.server_guards import OriginGuard, RequestGuard
from dpr_components.cli.server_security import (
    CORS_HEADERS,
    CORS_METHODS,
    ServerPolicy,
    configure_server_logs,
)
from dpr_components.cli.serving_jobs import TrainingJobs, TrainWrapper
from dpr_components.cli.serving_page import PAGE_PATHS, add_page_routes
from dpr_components.cli.serving_routes import (
    JOBS_PATH,
    OPENAPI_PATH,
    REQUEST_ERRORS,
    STATUS_PATH,
    TRAINING_OFF,
    add_jobs_route,
    add_run_route,
    add_status_route,
    add_training_off_route,
    request_error,
)
from dpr_components.cli.serving_wrappers import DeclaredPipelineWrapper, wrapper_kind
from dpr_components.pipeline_files.loading import load_pipeline, load_pipeline_spec
from dpr_components.pipeline_files.policy import (
    NetworkNotAllowedError,
    check_local_only,
    network_allowed_by_environment,
)
from dpr_components.utils.input_files import INPUT_ROOT_ENV
from dpr_components.utils.threads import default_concurrent_runs

__all__ = [
    "REQUEST_ERRORS",
    "ServedPipelines",
    "ServingError",
    "build_app",
    "network_overrides",
    "pipeline_files",
    "prepare_pipeline",
    "request_error",
    "validation_detail",
]

logger = logging.getLogger(__name__)

ELASTICSEARCH_URL_ENV = "ELASTICSEARCH_URL"
ELASTICSEARCH_STORE = "haystack_integrations.document_stores.elasticsearch.document_store.ElasticsearchDocumentStore"
KINDS = (
    "search: query -> documents; qa: query -> answers; index: path, records -> documents_written; "
    "evaluation: ground_truth_answers, ... -> scores; training: a DPRTrainer"
)


@dataclass
class ServedPipelines:
    """What ``build_app`` deployed, and why each other file was left out."""

    deployed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


class ServingError(ValueError):
    """The pipelines folder is missing, or none of its pipelines can be served."""


class TrainingNotEnabledError(ServingError):
    """A pipeline trains a model, and the server was not started with ``--enable-training``."""


def pipeline_files(folder: str | Path) -> list[Path]:
    """The YAML pipeline files of ``folder``, sorted by name."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ServingError(f"pipelines folder {folder} does not exist or is not a folder")
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".yml", ".yaml"))


def _elasticsearch_components(spec: dict[str, Any]) -> list[str]:
    """Components whose ``document_store`` is an Elasticsearch store."""
    names = []
    for name, data in spec["components"].items():
        store = (data.get("init_parameters") or {}).get("document_store")
        if isinstance(store, dict) and store.get("type") == ELASTICSEARCH_STORE:
            names.append(name)
    return names


def network_overrides(spec: dict[str, Any]) -> list[str] | None:
    """``--set`` style overrides for a pipeline that may be served, ``None`` when it must not be.

    A local pipeline needs none; one with Elasticsearch stores needs ``ELASTICSEARCH_URL`` (it becomes
    their ``hosts``); any other remote component needs ``DPR_ALLOW_NETWORK=1``."""
    try:
        check_local_only(spec["components"])
        return []
    except NetworkNotAllowedError:
        pass
    url = os.environ.get(ELASTICSEARCH_URL_ENV, "").strip()
    elastic = _elasticsearch_components(spec)
    if elastic and url:
        return [f"{name}.document_store.hosts={url}" for name in elastic]
    return [] if network_allowed_by_environment() else None


def _trains_a_model(pipeline: Pipeline) -> bool:
    from dpr_components.training.component import DPRTrainer

    return any(isinstance(instance, DPRTrainer) for _, instance in pipeline.walk())


def prepare_pipeline(
    path: Path, enable_training: bool = False, jobs: TrainingJobs | None = None
) -> DeclaredPipelineWrapper:
    """The set-up wrapper serving the file at ``path``, its pipeline built, checked and warmed up;
    ``ServingError`` says why the file cannot be served."""
    spec = load_pipeline_spec(path)
    overrides = network_overrides(spec)
    if overrides is None:
        hint = f"set {ELASTICSEARCH_URL_ENV}" if _elasticsearch_components(spec) else "set DPR_ALLOW_NETWORK=1"
        raise ServingError(f"{path}: it uses components that reach the network; {hint} to serve it")
    if not spec.get("inputs") or not spec.get("outputs"):
        raise ServingError(f"{path}: no 'inputs:'/'outputs:' sections, so it cannot be served")
    pipeline = load_pipeline(path, overrides=overrides, allow_network=bool(overrides), require_stores=True)
    trains = _trains_a_model(pipeline)
    if trains and not enable_training:
        raise TrainingNotEnabledError(TRAINING_OFF.format(name=path.stem))
    kind = None if trains else wrapper_kind(spec)
    if not trains and kind is None:
        raise ServingError(f"{path}: its inputs/outputs fit no served kind ({KINDS})")
    pipeline.warm_up()  # once, before concurrent requests could race to load the models
    wrapper = TrainWrapper(pipeline, spec, path.stem, jobs or TrainingJobs()) if trains else kind(pipeline, spec)  # type: ignore[misc]
    wrapper.setup()
    return wrapper


def validation_detail(errors: list[dict[str, Any]]) -> str:
    """pydantic's validation errors as one line: ``body.query: Input should be a valid string``."""
    if not errors:
        return "invalid request"
    where = ".".join(str(part) for part in errors[0].get("loc", ()))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return " ".join(f"{where}: {errors[0].get('msg', '')}{more}".split())


async def _one_line_422(request: Request, exc: Exception) -> Response:
    """A 422 whose detail names the field on one line (and never echoes the input back)."""
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


def _add_guards(app: FastAPI, policy: ServerPolicy) -> None:
    """hayhooks' CORS middleware (any origin) replaced by the policy's guards, outermost last."""
    from starlette.middleware.cors import CORSMiddleware

    app.user_middleware[:] = [m for m in app.user_middleware if m.cls is not CORSMiddleware]
    app.add_middleware(RequestGuard, policy=policy)
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
    app: FastAPI, files: list[Path], enable_training: bool, jobs: TrainingJobs, limiter: anyio.CapacityLimiter
) -> tuple[ServedPipelines, list[str], list[str]]:
    """Add the route of every file that can be served; also the names of those that train a model, left out
    (training off) and served (as background jobs)."""
    served, training_off, training_on = ServedPipelines(), [], []
    for path in files:
        try:
            wrapper = prepare_pipeline(path, enable_training=enable_training, jobs=jobs)
        except TrainingNotEnabledError as error:
            served.skipped[path.stem] = one_line(error)
            training_off.append(path.stem)
            continue
        except (ValueError, OSError) as error:  # PipelineFileError, ServingError, a component's check, a model folder
            served.skipped[path.stem] = one_line(error)
            logger.warning("not serving %s: %s", path.name, one_line(error))
            continue
        trains = isinstance(wrapper, TrainWrapper)
        add_run_route(app, path.stem, wrapper, limiter, status_code=202 if trains else 200)
        served.deployed.append(path.stem)
        if trains:
            training_on.append(path.stem)
    return served, training_off, training_on


def build_app(
    pipelines_dir: str | Path,
    input_root: str | Path | None = None,
    policy: ServerPolicy | None = None,
    concurrent_runs: int | None = None,
) -> tuple[FastAPI, ServedPipelines]:
    """The app serving every pipeline of ``pipelines_dir`` that can be served, and the ask page at ``/``,
    behind ``policy``.

    ``input_root`` becomes ``DPR_INPUT_ROOT``: input files named in requests must be inside it.
    ``concurrent_runs``: pipeline runs at once (default :func:`default_concurrent_runs`); more requests
    wait, first come first served."""
    policy = policy or ServerPolicy()
    if input_root is not None:
        os.environ[INPUT_ROOT_ENV] = str(input_root)  # as given: error messages show it, not an absolute path
    files = pipeline_files(pipelines_dir)
    allow_deserialization_module("dpr_components")
    app = _hayhooks_app()
    _keep_only(app, set())  # none of hayhooks' own routes: only those added below
    configure_server_logs(policy.log_queries)
    app.add_exception_handler(RequestValidationError, _one_line_422)
    jobs = TrainingJobs()
    limiter = anyio.CapacityLimiter(concurrent_runs or default_concurrent_runs())
    served, training_off, training_on = _deploy(app, files, policy.enable_training, jobs, limiter)
    if not served.deployed:
        jobs.shutdown()
        reasons = "; ".join(f"{name}: {why}" for name, why in served.skipped.items()) or "no YAML files"
        raise ServingError(f"no pipeline in {pipelines_dir} can be served ({reasons})")
    add_status_route(app, served.deployed)
    for name in training_off:
        add_training_off_route(app, name)
    paths = {STATUS_PATH, OPENAPI_PATH, *PAGE_PATHS, *(f"/{name}/run" for name in served.deployed + training_off)}
    if training_on:
        add_jobs_route(app, jobs)
        paths.add(JOBS_PATH)
    add_page_routes(app)
    app.openapi_schema = None
    app.setup()  # the one /openapi.json, of the routes above
    _keep_only(app, paths)
    _add_guards(app, policy)
    return app, served
