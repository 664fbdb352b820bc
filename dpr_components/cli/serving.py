"""Serve every YAML pipeline of a folder over HTTP with hayhooks: ``POST /{name}/run``.

Each file is built the way the command line builds it (checked parameters, local components only,
store folders that exist), warmed up once, and deployed with the inputs and outputs its ``inputs:`` /
``outputs:`` sections declare. An input whose sockets are all optional with a ``None`` default (the
index pipeline's ``path`` and ``records``) may be left out of a request.

The app serves a fixed set of pipelines: hayhooks' deploy, undeploy and draw routes are removed (a
client could otherwise deploy its own code, or make the server fetch a drawing from the web). A
pipeline that fails on a user error (``ValueError``, ``FilterError``, ``DocumentStoreError``, a missing
file) answers HTTP 400 with that error's one-line message instead of hayhooks' 500; inputs that are
missing or of the wrong type are 422 (pydantic) and an unknown pipeline is 404.

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
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse, Response
from haystack import Pipeline
from haystack.core.serialization import allow_deserialization_module
from haystack.document_stores.errors import DocumentStoreError
from haystack.errors import FilterError
from pydantic import TypeAdapter

from dpr_components.cli.pipeline_loading import load_pipeline, load_pipeline_spec
from dpr_components.cli.pipeline_policy import NetworkNotAllowedError, check_local_only, network_allowed_by_environment
from dpr_components.cli.pipeline_runner import one_line
from dpr_components.input_files import INPUT_ROOT_ENV

logger = logging.getLogger(__name__)

ELASTICSEARCH_URL_ENV = "ELASTICSEARCH_URL"
ELASTICSEARCH_STORE = "haystack_integrations.document_stores.elasticsearch.document_store.ElasticsearchDocumentStore"
# Errors that describe a bad request; any other failure stays a 500 (a server fault).
REQUEST_ERRORS: tuple[type[BaseException], ...] = (ValueError, FilterError, DocumentStoreError, FileNotFoundError)


@dataclass
class ServedPipelines:
    """What ``build_app`` deployed, and why each other file was left out."""

    deployed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


class ServingError(ValueError):
    """The pipelines folder is missing, or none of its pipelines can be served."""


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
    """Give the pipeline its inputs as the sockets' types again (``Document`` objects, not dicts).

    hayhooks validates a request into its pydantic model, then passes ``model_dump()``, which turns
    dataclasses such as ``Document`` back into dicts."""
    adapters = {
        name: TypeAdapter(resolution.type)
        for name, resolution in wrapper.input_resolutions.items() if resolution.type is not None
    }
    declared_run = wrapper.run_api_async

    async def run_api_async(**inputs: Any) -> dict:
        for name, value in inputs.items():
            if value is not None and name in adapters:
                inputs[name] = adapters[name].validate_python(value)
        return await declared_run(**inputs)

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


def prepare_pipeline(path: Path) -> Any:
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
    """The outermost user error in the chain of causes of ``error``, if any."""
    cause: BaseException | None = error.__cause__
    while cause is not None and not isinstance(cause, REQUEST_ERRORS):
        cause = cause.__cause__
    return cause


async def _request_errors_as_400(request: Request, exc: Exception) -> Response:
    """hayhooks turns every pipeline failure into a 500; one caused by the request becomes a 400."""
    assert isinstance(exc, HTTPException)
    cause = request_error(exc) if exc.status_code == 500 else None
    if cause is not None:
        return JSONResponse(status_code=400, content={"detail": one_line(cause)})
    return await http_exception_handler(request, exc)


def _remove_mutating_routes(app: FastAPI) -> None:
    """Drop the routers that deploy, undeploy or draw pipelines (see the module docstring)."""
    from hayhooks.server.routers import deploy_router, draw_router, undeploy_router

    unwanted = {id(deploy_router), id(undeploy_router), id(draw_router)}
    app.router.routes[:] = [r for r in app.router.routes if id(getattr(r, "original_router", None)) not in unwanted]


def build_app(pipelines_dir: str | Path, input_root: str | Path | None = None) -> tuple[FastAPI, ServedPipelines]:
    """The hayhooks app serving every pipeline of ``pipelines_dir`` that can be served.

    ``input_root`` becomes ``DPR_INPUT_ROOT``: input files named in requests must be inside it.
    Build one app per process: hayhooks keeps its pipelines in a process-wide registry."""
    from hayhooks.settings import settings

    if input_root is not None:
        os.environ[INPUT_ROOT_ENV] = str(input_root)  # as given: error messages show it, not an absolute path
    files = pipeline_files(pipelines_dir)
    allow_deserialization_module("dpr_components")
    # Our own deployment below replaces hayhooks' startup deploy; its trace routes and files are not needed.
    settings.pipelines_dir = ""
    settings.tracing_enabled = False
    settings.monitoring_enabled = False
    from hayhooks.server.app import create_app
    from hayhooks.server.utils.deploy_utils import commit_prepared_pipeline, rebuild_openapi

    app = create_app()
    _remove_mutating_routes(app)
    app.add_exception_handler(HTTPException, _request_errors_as_400)
    served = ServedPipelines()
    for path in files:
        try:
            prepared = prepare_pipeline(path)
        except (ValueError, OSError) as error:  # PipelineFileError, ServingError, a component's check, a model folder
            served.skipped[path.stem] = one_line(error)
            logger.warning("not serving %s: %s", path.name, one_line(error))
            continue
        commit_prepared_pipeline(prepared, app=app, _defer_openapi_rebuild=True)
        served.deployed.append(path.stem)
    if not served.deployed:
        reasons = "; ".join(f"{name}: {why}" for name, why in served.skipped.items()) or "no YAML files"
        raise ServingError(f"no pipeline in {pipelines_dir} can be served ({reasons})")
    rebuild_openapi(app)
    return app, served
