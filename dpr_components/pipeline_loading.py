"""Load Haystack YAML pipelines that use dpr_components, with command-line overrides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from haystack import Pipeline

ALLOWED_MODULES = ["dpr_components", "haystack_integrations.document_stores.elasticsearch"]
STORE_TYPE = "dpr_components.document_stores.embedded.EmbeddedDocumentStore"


class PipelineFileError(ValueError):
    """A pipeline file is missing, is not valid YAML, or cannot be built."""


def parse_value(text: str) -> Any:
    """Command-line values: JSON when it parses (numbers, booleans, lists), otherwise the string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _set_store_path(node: Any, path: str) -> int:
    count = 0
    if isinstance(node, dict):
        if node.get("type") == STORE_TYPE and isinstance(node.get("init_parameters"), dict):
            node["init_parameters"]["path"] = path
            count += 1
        for value in node.values():
            count += _set_store_path(value, path)
    elif isinstance(node, list):
        for value in node:
            count += _set_store_path(value, path)
    return count


def _apply_override(spec: dict[str, Any], assignment: str) -> None:
    """``component.param=value`` or ``component.param.sub=value`` sets an init parameter."""
    if "=" not in assignment:
        raise PipelineFileError(f"--set expects component.parameter=value, got {assignment!r}")
    key, raw = assignment.split("=", 1)
    parts = key.split(".")
    components = spec.get("components", {})
    if len(parts) < 2 or parts[0] not in components:
        raise PipelineFileError(f"--set {key}: no component {parts[0]!r} (components: {sorted(components)})")
    node = components[parts[0]].setdefault("init_parameters", {})
    for part in parts[1:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise PipelineFileError(f"--set {key}: {part!r} is not a nested parameter")
        # A nested serialised object (e.g. a document store) keeps its parameters one level down.
        node = child["init_parameters"] if "init_parameters" in child else child
    node[parts[-1]] = parse_value(raw)


def load_pipeline_spec(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise PipelineFileError(f"pipeline file {path} does not exist")
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise PipelineFileError(f"{path}: not valid YAML: {error}") from error
    if not isinstance(spec, dict) or not isinstance(spec.get("components"), dict):
        raise PipelineFileError(f"{path}: a pipeline file needs a 'components' mapping")
    return spec


def load_pipeline(path: str | Path, store: str | None = None, overrides: list[str] | None = None) -> Pipeline:
    """Build the pipeline in ``path``; ``store`` replaces every embedded store's folder."""
    spec = load_pipeline_spec(path)
    if store is not None and _set_store_path(spec, store) == 0:
        raise PipelineFileError(f"{path}: --store given but the pipeline uses no EmbeddedDocumentStore")
    for assignment in overrides or []:
        _apply_override(spec, assignment)
    try:
        return Pipeline.from_dict(spec, allowed_modules=ALLOWED_MODULES)
    except Exception as error:  # Haystack wraps component errors in several types
        cause = error.__cause__ or error
        raise PipelineFileError(f"{path}: cannot build the pipeline: {cause}") from error
