"""Where each field of a request goes in a loaded pipeline: the one rule of the ``haystack`` command,
the HTTP server and the LangChain retriever, so a pipeline accepts the same request through each.

- A name the pipeline file declares (its ``inputs:`` section, given as ``declared``) goes to the
  sockets declared for it.
- ``query``, ``filters`` and any other flat name go to every component with an open input of that
  name: ``filters`` to every retriever, the first stage of a re-ranking pipeline among them. A name
  no component takes is refused.
- ``top_k`` goes to the result components (``results``; default: those no other component reads
  from) that take one; when none of them does, to every component that takes one; when no component
  does, nowhere (a front end may still cut the results).
- ``{component: {name: value}}`` goes to that component as given.

Per-component values win over flat ones, and the request's own fields (``query``, ``top_k``,
``filters``) over the same inputs given among ``other``; a field that is ``None`` is left out.

The request's own fields are checked here, given flat or by name, with the messages every front end
gives (:func:`check_request_field`; the server's request models call it too): the query is text,
``top_k`` a positive integer, the filters a dict (their operators and fields are the store's to check)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from dpr_components.utils.pipeline_graph import leaf_components
from dpr_components.utils.validation import check_positive_int, check_query_is_text, short_repr

Declared = Mapping[str, str | Sequence[str]]
Nested = dict[str, dict[str, Any]]


def check_filters(filters: Any) -> dict[str, Any] | None:
    """``filters`` itself when it is a Haystack filter dict or ``None``."""
    if filters is not None and not isinstance(filters, dict):
        raise ValueError(f"filters must be a Haystack filter dict, got {short_repr(filters)}")
    return filters


FIELD_CHECKS: dict[str, Callable[[Any], Any]] = {
    "query": check_query_is_text,
    "top_k": lambda value: check_positive_int("top_k", value),
    "filters": check_filters,
}


def check_request_field(name: str, value: Any) -> Any:
    """``value`` itself when the request field ``name`` may hold it (``None`` always: not given), else a
    one-line ``ValueError``; a field other than the request's own (``FIELD_CHECKS``) is the socket's to check."""
    check = FIELD_CHECKS.get(name)
    return value if value is None or check is None else check(value)


def unknown_input(name: str, inputs: Iterable[str], owner: str = "the pipeline") -> str:
    """The one line for a request field that ``owner`` (whose inputs are ``inputs``) does not take."""
    return f"{owner} has no input named {name!r}; its inputs are {sorted(set(inputs))}"


def components_taking(pipeline: Any, name: str) -> list[str]:
    """Components with an open input (one no other component feeds) called ``name``."""
    return [component for component, sockets in pipeline.inputs().items() if name in sockets]


def top_k_receivers(pipeline: Any, results: Iterable[str] | None = None) -> list[str]:
    """The components a request's ``top_k`` goes to (see the module docstring)."""
    takers = components_taking(pipeline, "top_k")
    chosen = [name for name in (leaf_components(pipeline) if results is None else results) if name in takers]
    return chosen or takers


def _socket(target: str) -> tuple[str, str]:
    """``component.socket`` as a pair."""
    component, _, socket = str(target).partition(".")
    return component, socket


def _targets(pipeline: Any, name: str, declared: Declared | None) -> list[tuple[str, str]]:
    """The ``(component, socket)`` pairs a flat input ``name`` goes to."""
    if declared and name in declared:
        given = declared[name]
        return [_socket(target) for target in ([given] if isinstance(given, str) else given)]
    receivers = components_taking(pipeline, name)
    if not receivers:
        raise ValueError(unknown_input(name, (socket for sockets in pipeline.inputs().values() for socket in sockets)))
    return [(component, name) for component in receivers]


def _place(nested: Nested, targets: list[tuple[str, str]], value: Any, replace: bool) -> None:
    for component, socket in targets:
        values = nested.setdefault(component, {})
        if replace or socket not in values:
            values[socket] = value


def request_inputs(
    pipeline: Any,
    query: str | None = None,
    top_k: int | None = None,
    filters: dict[str, Any] | None = None,
    *,
    other: Mapping[str, Any] | None = None,
    results: Iterable[str] | None = None,
    declared: Declared | None = None,
) -> Nested:
    """The per-component inputs of ``pipeline.run`` for a request (the rule is the module docstring's):
    ``other`` holds its other inputs, flat or per component; ``results`` names the components whose
    outputs the front end returns; ``declared`` is the pipeline file's ``inputs:`` section."""
    components = pipeline.inputs()
    nested: Nested = {}
    flat = []
    for key, value in (other or {}).items():
        if key in components and isinstance(value, dict) and not (declared and key in declared):
            nested.setdefault(key, {}).update(value)
        else:
            flat.append((key, value))
    for key, value in flat:
        check_request_field(key, value)
        _place(nested, _targets(pipeline, key, declared), value, replace=False)
    for key, value in (("query", query), ("filters", filters)):
        if check_request_field(key, value) is not None:
            _place(nested, _targets(pipeline, key, declared), value, replace=True)
    if check_request_field("top_k", top_k) is not None:
        if declared and "top_k" in declared:
            targets = _targets(pipeline, "top_k", declared)
        else:
            targets = [(name, "top_k") for name in top_k_receivers(pipeline, results)]
        _place(nested, targets, top_k, replace=True)
    return nested
