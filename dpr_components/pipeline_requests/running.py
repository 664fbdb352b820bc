"""Run a loaded pipeline: inputs placed (:func:`~dpr_components.pipeline_requests.inputs.request_inputs`)
and type-checked first, the component's own error surfaced instead of Haystack's wrapper
(:func:`~dpr_components.pipeline_requests.errors.user_errors_unwrapped`)."""

from __future__ import annotations

from typing import Any

from dpr_components.pipeline_requests.errors import user_errors_unwrapped
from dpr_components.pipeline_requests.inputs import request_inputs
from dpr_components.utils.type_checks import type_mismatch


def check_inputs(pipeline: Any, nested: dict[str, dict[str, Any]]) -> None:
    """Every input value against the type of the socket it goes to (Haystack does not check them)."""
    sockets = pipeline.inputs(include_components_with_connected_inputs=True)
    for component, values in nested.items():
        for name, value in values.items():
            socket = sockets.get(component, {}).get(name)
            problem = type_mismatch(value, socket["type"], check_classes=True) if socket else None
            if problem:
                raise ValueError(f"input {component}.{name}: {problem}")


def run_pipeline(pipeline: Any, data: dict[str, Any], **options: Any) -> dict[str, Any]:
    """``Pipeline.run`` with ``data`` (flat names and ``{component: {name: value}}``, placed as
    :func:`request_inputs` places them) checked first and the component's own error surfaced instead of
    Haystack's wrapper."""
    nested = request_inputs(pipeline, other=data)
    check_inputs(pipeline, nested)
    with user_errors_unwrapped():
        return pipeline.run(nested, **options)
