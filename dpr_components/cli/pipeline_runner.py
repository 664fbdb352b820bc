"""Run a loaded pipeline from the command line: inputs nested and type-checked first, user errors surfaced."""

from __future__ import annotations

import logging
from typing import Any

from haystack.document_stores.errors import DocumentStoreError
from haystack.errors import FilterError

from dpr_components.utils.output_files import describe_os_error
from dpr_components.utils.pipeline_graph import leaf_components
from dpr_components.utils.type_checks import type_mismatch


def check_top_k_option(top_k: int) -> int:
    """The value of ``--top-k`` when it is positive."""
    if top_k <= 0:
        raise ValueError(f"--top-k must be positive, got {top_k}")
    return top_k


def top_k_inputs(pipeline: Any, top_k: int) -> dict[str, dict[str, int]]:
    """``top_k`` (from ``--top-k``) for every result component that takes one."""
    check_top_k_option(top_k)
    return {leaf: {"top_k": top_k} for leaf in leaf_components(pipeline) if "top_k" in pipeline.inputs().get(leaf, {})}


def nest_inputs(pipeline: Any, data: dict[str, Any]) -> dict[str, Any]:
    """Haystack takes inputs either all flat or all per component; accept a mix, flat names
    going to every component with an open input of that name."""
    inputs = pipeline.inputs()
    nested: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if key in inputs and isinstance(value, dict):
            nested.setdefault(key, {}).update(value)
            continue
        receivers = [component for component, sockets in inputs.items() if key in sockets]
        if not receivers:
            open_inputs = sorted({name for sockets in inputs.values() for name in sockets})
            raise ValueError(f"the pipeline has no input named {key!r}; its inputs are {open_inputs}")
        for component in receivers:
            nested.setdefault(component, {}).setdefault(key, value)
    return nested


class ServerUnreachableError(ConnectionError):
    """A server the pipeline talks to (Elasticsearch) did not answer; the message names it and the fix."""


def user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that describe a mistake in the input, printed as one line; anything else is a bug and surfaces."""
    return (ValueError, FilterError, DocumentStoreError, OSError)


def quiet_retry_logs(verbose: bool) -> None:
    """Elasticsearch's client logs every retry with a traceback at WARNING; the command's error line says
    what failed once, so those logs show only with ``--verbose``."""
    logging.getLogger("elastic_transport").setLevel(logging.INFO if verbose else logging.ERROR)


def unreachable_server(error: BaseException) -> ServerUnreachableError | None:
    """One line for a connection that failed in ``error``'s chain (urllib3 keeps the address on ``conn``)."""
    cause: BaseException | None = error
    while cause is not None:
        connection = getattr(cause, "conn", None)
        host, port = getattr(connection, "host", None), getattr(connection, "port", None)
        if host is not None:
            reason = cause.__cause__ or cause.__context__
            why = (getattr(reason, "strerror", None) or type(reason or cause).__name__).lower()
            return ServerUnreachableError(
                f"cannot reach the server at {host}:{port} ({why}); start it, or point the pipeline's store at "
                "another one (--set COMPONENT.document_store.hosts=URL)"
            )
        cause = cause.__cause__
    return None


def user_error_cause(
    error: BaseException, kinds: tuple[type[BaseException], ...] | None = None
) -> BaseException | None:
    """The outermost user error (of ``kinds``, default :func:`user_errors`) in ``error``'s chain of
    causes, ``error`` itself included, if any: Haystack wraps a component's exception in its own,
    and components wrap a library's."""
    kinds = kinds or user_errors()
    unreachable = unreachable_server(error)
    if unreachable is not None and isinstance(unreachable, kinds):
        return unreachable
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, kinds):
        cause = cause.__cause__
    return cause


def one_line(error: BaseException) -> str:
    """The message of a user error on one line (an ``OSError`` says which file)."""
    if isinstance(error, OSError) and not isinstance(error, ServerUnreachableError):
        return describe_os_error(error)
    return " ".join(str(error).split()) or type(error).__name__


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
    """``Pipeline.run`` with inputs checked first and the component's own error surfaced instead of Haystack's wrapper."""
    nested = nest_inputs(pipeline, data)
    check_inputs(pipeline, nested)
    try:
        return pipeline.run(nested, **options)
    except Exception as error:
        cause = user_error_cause(error)
        if cause is not None and cause is not error:
            raise cause from None
        raise
