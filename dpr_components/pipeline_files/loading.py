"""Load Haystack YAML pipelines that use dpr_components, with command-line overrides.

Before anything is built the specification is checked, so a mistake is reported as one line
naming the file or ``--set``, the component and the parameter: the YAML is read with bounded
cost (:mod:`dpr_components.pipeline_files.safe_yaml`), only local classes are allowed unless the user allows
the network (:mod:`dpr_components.pipeline_files.policy`), init parameters are checked against the
component's type hints, connections must name existing components, and a pipeline that only
reads needs its store folders to exist."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haystack import Pipeline

from dpr_components.packaged import is_packaged_name, packaged_pipeline_path
from dpr_components.pipeline_files.policy import (
    check_local_only,
    is_local_type,
    network_allowed_by_environment,
)
from dpr_components.pipeline_files.removed_paths import removed_path_problem
from dpr_components.pipeline_files.safe_yaml import read_yaml_file
from dpr_components.store_access.serialization import is_embedded_store_type, replace_store_paths
from dpr_components.utils.extras import check_pipeline_extras
from dpr_components.utils.type_checks import init_hints, type_mismatch
from dpr_components.utils.validation import short_repr, strict_json_loads

ALLOWED_MODULES = ["dpr_components", "haystack_integrations.document_stores.elasticsearch"]
STORE_FILE = "documents.sqlite"


class PipelineFileError(ValueError):
    """A pipeline file is missing, is not valid YAML, or cannot be built."""


def parse_value(text: str, name: str = "value") -> Any:
    """Command-line values: JSON when it parses (numbers, booleans, lists), otherwise the string.

    ``NaN`` and ``Infinity``, which Python's JSON reader accepts, are refused: no parameter
    means anything sensible with them and they make ``--json`` output invalid."""
    try:
        return strict_json_loads(text)
    except json.JSONDecodeError:
        return text
    except ValueError as error:  # NaN or Infinity
        raise PipelineFileError(f"{name}: {error}") from None


def apply_override(spec: dict[str, Any], assignment: str) -> tuple[str, ...]:
    """``component.param=value`` or ``component.param.sub=value`` sets an init parameter; returns its path."""
    if "=" not in assignment:
        raise PipelineFileError(f"--set expects component.parameter=value, got {assignment!r}")
    key, raw = assignment.split("=", 1)
    parts = key.split(".")
    components = spec["components"]
    if parts[0] not in components:
        raise PipelineFileError(f"--set {key}: no component {parts[0]!r} (components: {sorted(components)})")
    if len(parts) < 2 or not all(parts):
        raise PipelineFileError(
            f"--set {key}: name a parameter of the component, as in --set {parts[0]}.PARAMETER=VALUE"
        )
    node = components[parts[0]].setdefault("init_parameters", {})
    for part in parts[1:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise PipelineFileError(f"--set {key}: {part!r} is not a nested parameter")
        # A nested serialised object (e.g. a document store) keeps its parameters one level down.
        node = child.get("init_parameters", child)
    node[parts[-1]] = parse_value(raw, f"--set {key}")
    return tuple(parts)


def resolve_pipeline_file(path: str | Path) -> Path:
    """A pipeline file: an existing path, or the name of a pipeline shipped with the package (``qa``)."""
    if Path(path).exists() or not is_packaged_name(str(path)):
        return Path(path)
    try:
        return packaged_pipeline_path(str(path))
    except KeyError as error:
        raise PipelineFileError(f"pipeline file {path} does not exist, {error.args[0]}") from None


def load_pipeline_spec(path: str | Path) -> dict[str, Any]:
    """The pipeline file as data, checked to be a mapping with a ``components`` mapping of typed entries."""
    path = resolve_pipeline_file(path)
    if not path.exists():
        raise PipelineFileError(f"pipeline file {path} does not exist")
    spec = read_yaml_file(path)
    if spec is None:
        raise PipelineFileError(f"{path}: the pipeline file is empty")
    if not isinstance(spec, dict) or not isinstance(spec.get("components"), dict):
        raise PipelineFileError(f"{path}: a pipeline file needs a 'components' mapping, got {type(spec).__name__}")
    for name, data in spec["components"].items():
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            raise PipelineFileError(f"{path}: component {name!r} needs a 'type' naming its class")
        if not isinstance(data.get("init_parameters", {}), dict):
            raise PipelineFileError(f"{path}: component {name!r}: 'init_parameters' must be a mapping")
        removed = removed_path_problem(name, data)
        if removed is not None:
            raise PipelineFileError(f"{path}: {removed}")
    return spec


def _import_class(type_name: str, where: str) -> type:
    module_name, _, class_name = type_name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), class_name, None) if module_name else None
    except ImportError:
        cls = None
    if not isinstance(cls, type):
        raise PipelineFileError(f"{where}: unknown type {type_name!r} (no such class)")
    return cls


def _check_parameters(type_name: str, params: dict[str, Any], where: str, source: Callable[[str], str]) -> None:
    """Parameter names and value types of one local class; nested local objects (stores) recursively."""
    cls = _import_class(type_name, where)
    hints, names, takes_any = init_hints(cls)
    for key, value in params.items():
        path = f"{where}.{key}"
        if key not in names and not takes_any:
            raise PipelineFileError(
                f"{source(path)}{path}: {cls.__name__} has no parameter {key!r}; its parameters are {sorted(names)}"
            )
        if isinstance(value, dict) and isinstance(value.get("type"), str) and is_local_type(value["type"]):
            nested = value.get("init_parameters") or {}
            if not isinstance(nested, dict):
                raise PipelineFileError(f"{source(path)}{path}: 'init_parameters' must be a mapping")
            _check_parameters(value["type"], nested, path, source)
            continue
        problem = type_mismatch(value, hints[key]) if key in hints else None
        if problem:
            raise PipelineFileError(f"{source(path)}{path}: {problem}")


def _check_connections(path: Path, spec: dict[str, Any]) -> None:
    connections = spec.get("connections") or []
    if not isinstance(connections, list):
        raise PipelineFileError(f"{path}: 'connections' must be a list of sender/receiver pairs")
    components = spec["components"]
    for number, connection in enumerate(connections, start=1):
        if not isinstance(connection, dict) or not all(
            isinstance(connection.get(k), str) for k in ("sender", "receiver")
        ):
            raise PipelineFileError(
                f"{path}: connection {number} needs 'sender' and 'receiver' (component.socket), got {short_repr(connection)}"
            )
        for role in ("sender", "receiver"):
            name = connection[role].split(".", 1)[0]
            if name not in components:
                raise PipelineFileError(
                    f"{path}: connection {number}: {role} {connection[role]!r} names no component {name!r} (components: {sorted(components)})"
                )


def writes_documents(components: dict[str, Any]) -> bool:
    """Whether a component writes to a store: by convention its class name ends in ``Writer``."""
    return any(data["type"].rsplit(".", 1)[-1].endswith("Writer") for data in components.values())


class StoreNotIndexedError(PipelineFileError):
    """A pipeline that only reads names a store folder that nothing was indexed into yet."""


def embedded_store_specs(node: Any) -> list[dict[str, Any]]:
    """Every embedded store entry (``type`` and ``init_parameters``) of a specification, in file order."""
    found = []
    if isinstance(node, dict):
        if is_embedded_store_type(node.get("type")) and isinstance(node.get("init_parameters"), dict):
            found.append(node)
        for value in node.values():
            found += embedded_store_specs(value)
    elif isinstance(node, list):
        for value in node:
            found += embedded_store_specs(value)
    return found


def embedded_store_folders(node: Any) -> list[str]:
    """The folders of every embedded store in the specification (in-memory stores have none)."""
    paths = (spec["init_parameters"].get("path") for spec in embedded_store_specs(node))
    return [str(path) for path in paths if path is not None]


def _check_store_paths(path: Path, spec: dict[str, Any]) -> None:
    """An empty store folder would silently mean the working folder: refused, for readers and writers alike."""
    for folder in embedded_store_folders(spec["components"]):
        if not folder.strip():
            raise PipelineFileError(
                f"{path}: an EmbeddedDocumentStore's path is empty; give the store's folder (--store DIR)"
            )


def _check_stores_exist(spec: dict[str, Any]) -> None:
    """A pipeline that only reads must not open (and so create) an empty store in a mistyped folder."""
    for folder in dict.fromkeys(embedded_store_folders(spec["components"])):
        hint = f"index into it first: haystack run index --store {folder} --input path=CORPUS"
        if Path(folder).exists() and not Path(folder).is_dir():
            raise PipelineFileError(f"store folder {folder} is a file, not a folder; give the folder of a store")
        if not Path(folder).is_dir():
            raise StoreNotIndexedError(f"store folder {folder} does not exist; {hint}")
        if not (Path(folder) / STORE_FILE).is_file():
            raise StoreNotIndexedError(f"store folder {folder} holds no document store (no {STORE_FILE}); {hint}")


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def _build(path: Path, spec: dict[str, Any]) -> Pipeline:
    """Build each component on its own, so a failure names it, then connect them."""
    instances = {}
    for name, data in spec["components"].items():
        try:
            single = Pipeline.from_dict(
                {"components": {name: data}, "connections": []}, allowed_modules=ALLOWED_MODULES
            )
        except Exception as error:  # Haystack wraps component errors in several types
            cause = error.__cause__ or error
            raise PipelineFileError(
                f"{path}: component {name!r} ({data['type'].rsplit('.', 1)[-1]}): {_one_line(cause)}"
            ) from error
        instances[name] = single.remove_component(name)
    try:
        return Pipeline.from_dict(spec, allowed_modules=ALLOWED_MODULES, components=instances)
    except Exception as error:
        raise PipelineFileError(f"{path}: cannot connect the components: {_one_line(error)}") from error


def load_pipeline(
    path: str | Path,
    store: str | None = None,
    overrides: list[str] | None = None,
    allow_network: bool = False,
    require_stores: bool = False,
) -> Pipeline:
    """Build the pipeline in ``path``; ``store`` replaces every embedded store's folder.

    Classes not known to stay on this machine (and secrets read from the environment) are
    refused unless ``allow_network`` or ``DPR_ALLOW_NETWORK=1``. With ``require_stores`` (the
    command line), a pipeline without a writer needs every embedded store folder to hold a
    store already, so a mistyped folder is an error instead of a new, empty store."""
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path).strip():
        raise PipelineFileError(f"pipeline must be a YAML file's path or a packaged pipeline's name, got {path!r}")
    path = resolve_pipeline_file(path)
    spec = load_pipeline_spec(path)
    if store is not None and replace_store_paths(spec, store) == 0:
        raise PipelineFileError(f"{path}: --store given but the pipeline uses no EmbeddedDocumentStore")
    overridden = {apply_override(spec, assignment) for assignment in overrides or []}
    components = spec["components"]
    check_pipeline_extras(components, str(path))  # before the network check: the install is the first fix
    if not (allow_network or network_allowed_by_environment()):
        check_local_only(components)

    def source(parameter_path: str) -> str:
        return "--set " if tuple(parameter_path.split(".")) in overridden else f"{path}: "

    for name, data in components.items():
        if is_local_type(data["type"]):
            _check_parameters(data["type"], data.get("init_parameters") or {}, name, source)
    _check_connections(path, spec)
    _check_store_paths(path, spec)
    if require_stores and not writes_documents(components):
        _check_stores_exist(spec)
    return _build(path, spec)
