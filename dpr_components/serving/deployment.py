"""Which pipeline files ``haystack serve`` serves, and each one built, checked and warmed up behind the
wrapper of its kind.

Each file is built the way the command line builds it (checked parameters, local components only,
store folders that exist) and warmed up once. Its declared ``inputs:`` / ``outputs:`` say which kind
it is (wrappers.py). A pipeline with a ``DPRTrainer`` or a ``QuestionEncoderAdapter`` is served only with ``enable_training``.
Pipelines that need the network (Elasticsearch) are skipped unless ``ELASTICSEARCH_URL`` is set, which
then replaces the ``hosts`` of their Elasticsearch stores, or ``DPR_ALLOW_NETWORK=1``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from haystack import Pipeline

from dpr_components.pipeline_files.loading import (
    StoreNotIndexedError,
    embedded_store_folders,
    load_pipeline,
    load_pipeline_spec,
)
from dpr_components.pipeline_files.policy import (
    NetworkNotAllowedError,
    check_local_only,
    network_allowed_by_environment,
)
from dpr_components.serving.jobs import TrainingJobs, TrainWrapper
from dpr_components.serving.routes import TRAINING_OFF
from dpr_components.serving.store_folders import StoreFolders
from dpr_components.serving.wrappers import DeclaredPipelineWrapper, wrapper_kind
from dpr_components.utils.extras import check_pipeline_extras

ELASTICSEARCH_URL_ENV = "ELASTICSEARCH_URL"
ELASTICSEARCH_STORE = "haystack_integrations.document_stores.elasticsearch.document_store.ElasticsearchDocumentStore"
KINDS = (
    "search: query -> documents; qa: query -> answers; index: path, records -> documents_written; "
    "evaluation: ground_truth_answers, ... -> scores; training: a DPRTrainer"
)


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


def _names_a_trainer(spec: dict[str, Any]) -> bool:
    """Whether the file names a training component (``DPRTrainer``, ``QuestionEncoderAdapter``) by its type."""
    kinds = {str(data.get("type", "")).rsplit(".", 1)[-1] for data in spec["components"].values()}
    return bool(kinds & {"DPRTrainer", "QuestionEncoderAdapter"})


def _built(path: Path, store: str | None, overrides: list[str]) -> Pipeline:
    pipeline = load_pipeline(path, store, overrides=overrides, allow_network=bool(overrides), require_stores=True)
    pipeline.warm_up()  # once, before concurrent requests could race to load the models
    return pipeline


def prepare_pipeline(
    path: Path, enable_training: bool = False, jobs: TrainingJobs | None = None, stores: StoreFolders | None = None
) -> DeclaredPipelineWrapper:
    """The set-up wrapper serving the file at ``path``, its pipeline built, checked and warmed up; a search or
    QA pipeline whose store was not indexed yet is served too, built at its first request after an index
    (until then its route answers 503). ``ServingError`` says why the file cannot be served."""
    spec = load_pipeline_spec(path)
    check_pipeline_extras(spec["components"], str(path))  # the install first: ELASTICSEARCH_URL would not help
    overrides = network_overrides(spec)
    if overrides is None:
        hint = f"set {ELASTICSEARCH_URL_ENV}" if _elasticsearch_components(spec) else "set DPR_ALLOW_NETWORK=1"
        raise ServingError(f"{path}: it uses components that reach the network; {hint} to serve it")
    if not spec.get("inputs") or not spec.get("outputs"):
        raise ServingError(f"{path}: no 'inputs:'/'outputs:' sections, so it cannot be served")
    trains = _names_a_trainer(spec)
    if trains and not enable_training:  # before the store: a training pipeline is off whatever it reads
        raise TrainingNotEnabledError(TRAINING_OFF.format(name=path.stem))
    store = (stores or StoreFolders()).folder_for(path.stem) if embedded_store_folders(spec["components"]) else None
    try:
        pipeline = load_pipeline(path, store, overrides=overrides, allow_network=bool(overrides), require_stores=True)
    except StoreNotIndexedError:
        kind = wrapper_kind(spec)
        if kind is None:
            raise
        wrapper = kind(None, spec, builder=lambda: _built(path, store, overrides))
        wrapper.setup()
        wrapper.store_folder = _store_folder(spec, store)
        return wrapper
    kind = None if trains else wrapper_kind(spec)
    if not trains and kind is None:
        raise ServingError(f"{path}: its inputs/outputs fit no served kind ({KINDS})")
    pipeline.warm_up()  # once, before concurrent requests could race to load the models
    wrapper = TrainWrapper(pipeline, spec, path.stem, jobs or TrainingJobs()) if trains else kind(pipeline, spec)  # type: ignore[misc]
    wrapper.setup()
    wrapper.store_folder = _store_folder(spec, store)
    return wrapper


def _store_folder(spec: dict[str, Any], store: str | None) -> str | None:
    """The folder of the embedded store a served pipeline uses: ``--store``'s, else its file's first."""
    return store or next(iter(embedded_store_folders(spec["components"])), None)
