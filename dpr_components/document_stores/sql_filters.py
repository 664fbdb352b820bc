"""Translate Haystack filters into an SQLite WHERE clause over the documents table.

Fields: ``id``, ``content``, ``meta.<key>`` (or a bare ``<key>``, read as meta). Semantics follow
Haystack's in-memory filtering: a missing field equals ``None``; ``!=`` and ``not in`` match
documents that lack the field; ordering comparisons never match a missing field."""

from __future__ import annotations

from typing import Any

from haystack.errors import FilterError

_COMPARISONS = {"==", "!=", ">", ">=", "<", "<=", "in", "not in"}
_LOGICAL = {"AND", "OR", "NOT"}


def _column(field: str) -> str:
    if field in ("id", "content"):
        return field
    key = field[len("meta.") :] if field.startswith("meta.") else field
    if not key or '"' in key:
        raise FilterError(f"invalid filter field {field!r}")
    return f"json_extract(meta, '$.\"{key}\"')"


def _sql_value(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, str)) or value is None:
        return value
    raise FilterError(f"filter value {value!r} has unsupported type {type(value).__name__}")


def _comparison(condition: dict[str, Any], params: list[Any]) -> str:
    field, operator = condition.get("field"), condition["operator"]
    if not isinstance(field, str):
        raise FilterError(f"filter condition {condition!r} needs a 'field'")
    if "value" not in condition:
        raise FilterError(f"filter condition {condition!r} needs a 'value'")
    column, value = _column(field), condition["value"]
    if operator in ("in", "not in"):
        if not isinstance(value, list):
            raise FilterError(f"filter operator {operator!r} needs a list value, got {value!r}")
        if not value:
            return "0" if operator == "in" else "1"
        params.extend(_sql_value(v) for v in value)
        marks = ",".join("?" * len(value))
        if operator == "in":
            return f"({column} IN ({marks}))"
        return f"({column} IS NULL OR {column} NOT IN ({marks}))"
    if value is None:
        if operator == "==":
            return f"({column} IS NULL)"
        if operator == "!=":
            return f"({column} IS NOT NULL)"
        return "0"
    params.append(_sql_value(value))
    if operator == "==":
        return f"({column} = ?)"
    if operator == "!=":
        return f"({column} IS NULL OR {column} != ?)"
    return f"({column} IS NOT NULL AND {column} {operator} ?)"


def filter_to_sql(filters: dict[str, Any], params: list[Any]) -> str:
    """SQL boolean expression for ``filters``; bound values are appended to ``params``."""
    if not isinstance(filters, dict) or "operator" not in filters:
        raise FilterError(f"invalid filter {filters!r}: expected a dict with an 'operator'")
    operator = filters["operator"]
    if operator in _LOGICAL:
        conditions = filters.get("conditions")
        if not isinstance(conditions, list) or not conditions:
            raise FilterError(f"logical filter {operator!r} needs a non-empty list of 'conditions'")
        parts = [filter_to_sql(c, params) for c in conditions]
        if operator == "NOT":
            return f"(NOT ({' AND '.join(parts)}))"
        return "(" + f" {operator} ".join(parts) + ")"
    if operator in _COMPARISONS:
        # SQL comparisons with NULL give NULL, and NOT NULL is NULL: force a strict 0/1.
        return f"COALESCE({_comparison(filters, params)}, 0)"
    raise FilterError(f"unknown filter operator {operator!r}")
