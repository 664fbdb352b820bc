"""Serve every YAML pipeline of a folder over HTTP with hayhooks: ``POST /{name}/run``.

Each file is built the way the command line builds it (checked parameters, local components only,
store folders that exist), warmed up once, and deployed with the inputs and outputs its ``inputs:`` /
``outputs:`` sections declare. An input whose sockets are all optional with a ``None`` default (the
index pipeline's ``path`` and ``records``) may be left out of a request.

The app serves a fixed set of pipelines and nothing else: ``POST /{name}/run``, ``GET /status`` and
``GET /openapi.json``. hayhooks' other routes (deploy, undeploy, draw, the OpenAI-compatible chat and
file routes, traces, docs pages that load scripts from a CDN) are not mounted. A pipeline with a
``DPRTrainer`` is served only with ``enable_training``; otherwise its route answers 403 saying so.
Who may call the server and what a request may carry is a ``ServerPolicy`` (server_security.py),
enforced by the middlewares of server_guards.py.

A pipeline that fails on a user error (``ValueError``, ``FilterError``, ``DocumentStoreError``, a missing
file) answers HTTP 400 with that error's one-line message instead of hayhooks' 500; inputs that are
missing or of the wrong type are 422 with a one-line message, and an unknown pipeline is 404.

Pipelines that need the network (Elasticsearch) are skipped unless ``ELASTICSEARCH_URL`` is set, which
then replaces the ``hosts`` of their Elasticsearch stores, or ``DPR_ALLOW_NETWORK=1``."""

from __future__ import annotations

import inspect
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from haystack import Pipeline
from haystack.core.serialization import allow_deserialization_module
from haystack.document_stores.errors import DocumentStoreError
from haystack.errors import FilterError
from pydantic import TypeAdapter

from dpr_components.cli.pipeline_loading import load_pipeline, load_pipeline_spec
from dpr_components.cli.pipeline_policy import (
    NetworkNotAllowedError,
    check_local_only,
    network_allowed_by_environment,
)
from dpr_components.cli.pipeline_runner import one_line, user_error_cause
from dpr_components.cli.server_guards import OriginGuard, RequestGuard
from dpr_components.cli.server_security import (
    CORS_HEADERS,
    CORS_METHODS,
    ServerPolicy,
    configure_server_logs,
)
from dpr_components.utils.input_files import INPUT_ROOT_ENV

logger = logging.getLogger(__name__)

ELASTICSEARCH_URL_ENV = "ELASTICSEARCH_URL"
ELASTICSEARCH_STORE = "haystack_integrations.document_stores.elasticsearch.document_store.ElasticsearchDocumentStore"
# Errors that describe a bad request; any other failure stays a 500 (a server fault).
REQUEST_ERRORS: tuple[type[BaseException], ...] = (ValueError, FilterError, DocumentStoreError, FileNotFoundError)
STATUS_PATH, OPENAPI_PATH = "/status", "/openapi.json"
TRAINING_OFF = "training over HTTP is off: start haystack serve with --enable-training to serve {name}"


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


def _optional_inputs(wrapper: Any, pipeline: Pipeline) -> dict[str, Any]:
    """The wrapper's input resolutions, optional in requests when every socket an input feeds is
    optional with a ``None`` default (hayhooks makes every declared input required)."""
    sockets = pipeline.inputs()
    relaxed = {}
    for name, resolution in wrapper.input_resolutions.items():
        metas = [sockets.get(target.split(".", 1)[0], {}).get(target.split(".", 1)[1]) for target in resolution.targets]
        optional = all(m is not None and not m["is_mandatory"] and m.get("default_value") is None for m in metas)
        relaxed[name] = resolution.model_copy(update={"required": not optional})
    return relaxed


def _with_typed_inputs(wrapper: Any) -> None:
    """Give the pipeline its inputs as the sockets' types again (``Document`` objects, not dicts),
    and answer a failure caused by the request with 400 and its one-line message.

    hayhooks validates a request into its pydantic model, then passes ``model_dump()``, which turns
    dataclasses such as ``Document`` back into dicts. It makes any other exception a 500 and logs it
    with its traceback; an ``HTTPException`` passes through as it is."""
    adapters = {
        name: TypeAdapter(resolution.type)
        for name, resolution in wrapper.input_resolutions.items() if resolution.type is not None
    }
    declared_run = wrapper.run_api_async

    async def run_api_async(**inputs: Any) -> dict:
        try:
            for name, value in inputs.items():
                if value is not None and name in adapters:
                    inputs[name] = adapters[name].validate_python(value)
            return await declared_run(**inputs)
        except Exception as error:
            cause = request_error(error)
            if cause is None:
                raise
            raise HTTPException(status_code=400, detail=one_line(cause)) from None

    run_api_async.__signature__ = inspect.signature(declared_run)  # type: ignore[attr-defined]
    run_api_async.__doc__ = declared_run.__doc__
    wrapper.run_api_async = run_api_async


def _served_wrapper(declared: Any, source: str, pipeline: Pipeline) -> Any:
    """The hayhooks wrapper that runs ``pipeline`` (already built and warmed up) for ``source``'s declared inputs."""
    from hayhooks.server.utils.yaml_pipeline_wrapper import YAMLPipelineWrapper

    wrapper = YAMLPipelineWrapper(
        yaml_source=source,
        input_resolutions=_optional_inputs(declared, pipeline),
        output_resolutions=declared.output_resolutions,
        include_outputs_from=declared.include_outputs_from,
        streaming_components=declared.streaming_components,
        description=declared.description,
    )
    _with_typed_inputs(wrapper)
    wrapper.pipeline = pipeline  # setup() then keeps it instead of loading the YAML again
    return wrapper


def _trains_a_model(pipeline: Pipeline) -> bool:
    from dpr_components.training.component import DPRTrainer

    return any(isinstance(instance, DPRTrainer) for _, instance in pipeline.walk())


def prepare_pipeline(path: Path, enable_training: bool = False) -> Any:
    """A hayhooks ``PreparedPipeline`` for the file at ``path``, built, checked and warmed up;
    ``ServingError`` says why the file cannot be served."""
    from hayhooks.server.utils.models import PreparedPipeline
    from hayhooks.server.utils.yaml_pipeline_wrapper import YAMLPipelineWrapper

    spec = load_pipeline_spec(path)
    overrides = network_overrides(spec)
    if overrides is None:
        hint = f"set {ELASTICSEARCH_URL_ENV}" if _elasticsearch_components(spec) else "set DPR_ALLOW_NETWORK=1"
        raise ServingError(f"{path}: it uses components that reach the network; {hint} to serve it")
    if not spec.get("inputs") and not spec.get("outputs"):
        raise ServingError(f"{path}: no 'inputs:'/'outputs:' sections, so hayhooks cannot serve it")
    pipeline = load_pipeline(path, overrides=overrides, allow_network=bool(overrides), require_stores=True)
    if not enable_training and _trains_a_model(pipeline):
        raise TrainingNotEnabledError(TRAINING_OFF.format(name=path.stem))
    source = path.read_text(encoding="utf-8")
    try:
        declared = YAMLPipelineWrapper.from_yaml(source)
    except Exception as error:  # hayhooks' InvalidYamlIOError, or Haystack's errors while resolving the sections
        raise ServingError(f"{path}: inputs/outputs: {one_line(error)}") from error
    pipeline.warm_up()  # once, before concurrent requests could race to load the models
    wrapper = _served_wrapper(declared, source, pipeline)
    metadata = {
        "description": path.stem,
        "streaming_components": wrapper.streaming_components,
        "include_outputs_from": wrapper.include_outputs_from,
        "input_resolutions": wrapper.input_resolutions,
    }
    return PreparedPipeline(name=path.stem, wrapper=wrapper, extra_metadata=metadata)


def request_error(error: BaseException) -> BaseException | None:
    """The outermost error caused by the request in the chain of ``error`` and its causes, if any."""
    return user_error_cause(error, REQUEST_ERRORS)


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


def _add_status_route(app: FastAPI, served: ServedPipelines) -> None:
    async def status() -> dict[str, Any]:
        """Whether the server is up, and the pipelines it serves."""
        return {"status": "Up!", "pipelines": list(served.deployed)}

    app.add_api_route(STATUS_PATH, status, methods=["GET"], tags=["status"])


def _add_training_off_route(app: FastAPI, name: str) -> None:
    """``POST /{name}/run`` answering 403 with how to turn training on."""
    async def training_off() -> None:
        raise HTTPException(status_code=403, detail=TRAINING_OFF.format(name=name))

    app.add_api_route(f"/{name}/run", training_off, methods=["POST"], include_in_schema=False)


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
        app.add_middleware(CORSMiddleware, allow_origins=list(policy.cors_origins), allow_methods=list(CORS_METHODS),
                           allow_headers=list(CORS_HEADERS), allow_credentials=False, max_age=600)
    app.add_middleware(OriginGuard, policy=policy)


def _hayhooks_app() -> FastAPI:
    """hayhooks' app with its optional parts off, whatever ``HAYHOOKS_*`` variables say."""
    from hayhooks.server.pipelines.registry import registry
    from hayhooks.settings import settings

    registry.clear()  # a new app replaces what an earlier one in this process registered
    # Our own deployment below replaces hayhooks' startup deploy; no traces, dashboards, chat UI or extra imports.
    settings.pipelines_dir = ""
    settings.durable_mode = False
    settings.tracing_enabled = False
    settings.tracing_include_haystack_spans = False
    settings.monitoring_enabled = False
    settings.chainlit_enabled = False
    settings.show_tracebacks = False
    settings.additional_python_path = ""
    settings.cors_allow_origins = []  # replaced by _add_guards; also keeps hayhooks from warning about "*"
    from hayhooks.server.app import create_app

    return create_app()


def _deploy(app: FastAPI, files: list[Path], enable_training: bool) -> tuple[ServedPipelines, list[str]]:
    """Deploy every file that can be served; also the names of those left out because they train a model."""
    from hayhooks.server.utils.deploy_utils import commit_prepared_pipeline

    served, training_off = ServedPipelines(), []
    for path in files:
        try:
            prepared = prepare_pipeline(path, enable_training=enable_training)
        except TrainingNotEnabledError as error:
            served.skipped[path.stem] = one_line(error)
            training_off.append(path.stem)
            continue
        except (ValueError, OSError) as error:  # PipelineFileError, ServingError, a component's check, a model folder
            served.skipped[path.stem] = one_line(error)
            logger.warning("not serving %s: %s", path.name, one_line(error))
            continue
        commit_prepared_pipeline(prepared, app=app, _defer_openapi_rebuild=True)
        served.deployed.append(path.stem)
    return served, training_off


def build_app(pipelines_dir: str | Path, input_root: str | Path | None = None,
              policy: ServerPolicy | None = None) -> tuple[FastAPI, ServedPipelines]:
    """The hayhooks app serving every pipeline of ``pipelines_dir`` that can be served, behind ``policy``.

    ``input_root`` becomes ``DPR_INPUT_ROOT``: input files named in requests must be inside it.
    hayhooks keeps pipelines in a process-wide registry: building an app clears it."""
    from hayhooks.server.utils.deploy_utils import rebuild_openapi

    policy = policy or ServerPolicy()
    if input_root is not None:
        os.environ[INPUT_ROOT_ENV] = str(input_root)  # as given: error messages show it, not an absolute path
    files = pipeline_files(pipelines_dir)
    allow_deserialization_module("dpr_components")
    app = _hayhooks_app()
    configure_server_logs(policy.log_queries)
    app.add_exception_handler(RequestValidationError, _one_line_422)
    served, training_off = _deploy(app, files, policy.enable_training)
    if not served.deployed:
        reasons = "; ".join(f"{name}: {why}" for name, why in served.skipped.items()) or "no YAML files"
        raise ServingError(f"no pipeline in {pipelines_dir} can be served ({reasons})")
    _add_status_route(app, served)
    for name in training_off:
        _add_training_off_route(app, name)
    rebuild_openapi(app)
    _keep_only(app, {STATUS_PATH, OPENAPI_PATH, *(f"/{name}/run" for name in served.deployed + training_off)})
    _add_guards(app, policy)
    return app, served
