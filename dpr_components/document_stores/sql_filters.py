"""Translate Haystack filters into an SQLite WHERE clause over the documents table.

No text of a filter ever becomes SQL: field names are checked against a grammar, JSON paths
and values are bound parameters, and every malformed filter raises ``FilterError``.

Fields: ``id``, ``content``, or ``meta.<key>(.<key>)*`` for (nested) metadata; a bare ``<key>``
is read as ``meta.<key>`` (Haystack's legacy form). A key starts with a letter or ``_`` and
continues with letters, digits, ``_`` or ``-`` (Unicode letters included); a field name is at
most 200 characters.

Semantics follow Haystack's in-memory filtering: a missing field equals ``None``; ``!=`` and
``not in`` match documents that lack the field; ordering comparisons (``>``, ``>=``, ``<``,
``<=``) never match a missing field, compare numbers with numbers, and strings only as ISO 8601
dates (timezone-naive dates are read as UTC). An ordering comparison between a number and a
string, or on a list or object, raises ``FilterError``: at translation for the filter's value,
while the query runs for a stored value (through the SQL function ``dpr_filter_error``, which
:class:`~dpr_components.document_stores.document_table.DocumentTable` registers)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import dateutil.parser
from haystack.errors import FilterError

COMPARISONS = ("==", "!=", ">", ">=", "<", "<=", "in", "not in")
LOGICAL = ("AND", "OR", "NOT")
_ORDERING = {">", ">=", "<", "<="}
KEY_PATTERN = re.compile(r"[^\W\d][\w-]*")
MAX_FIELD_LENGTH = 200
MAX_DEPTH = 32
_SQLITE_INT = 2**63
_NOT_FILTERABLE = {"embedding", "sparse_embedding", "score", "blob", "meta"}
ERROR_FUNCTION = "dpr_filter_error"

# Meta fields with an expression index in the documents table (see document_table.py). Their
# SQL is a constant of this module: the planner only uses an index for the very expression it
# was built on, which a bound JSON path is not.
INDEXED_META_FIELDS = {"document_id": "json_extract(meta, '$.\"document_id\"')"}


@dataclass(frozen=True)
class _Field:
    """SQL for a field's value and its type name (``null``, ``integer``, ``real``, ``text``,
    ``true``, ``false``, ``array``, ``object``; SQL NULL when missing), with their parameters."""

    name: str
    value_sql: str
    type_sql: str
    params: tuple[Any, ...]  # bound once for value_sql and once for type_sql, in that order

    def value(self, params: list[Any]) -> str:
        params.extend(self.params)
        return self.value_sql

    def type(self, params: list[Any]) -> str:
        params.extend(self.params)
        return self.type_sql


def _field(field: Any) -> _Field:
    if not isinstance(field, str) or not field:
        raise FilterError(f"filter field must be a non-empty string, got {field!r}")
    if len(field) > MAX_FIELD_LENGTH:
        raise FilterError(f"filter field {field[:40]!r}... is longer than {MAX_FIELD_LENGTH} characters")
    if field in ("id", "content"):
        return _Field(field, field, f"typeof({field})", ())
    if field in _NOT_FILTERABLE:
        raise FilterError(f"cannot filter on field {field!r}: use id, content or meta.<key>")
    keys = field[len("meta.") :].split(".") if field.startswith("meta.") else [field]
    if not all(KEY_PATTERN.fullmatch(key) for key in keys):
        raise FilterError(
            f"invalid filter field {field!r}: use id, content or meta.<key>(.<key>)*, where a key starts with a "
            "letter or '_' and continues with letters, digits, '_' or '-'"
        )
    if len(keys) == 1 and keys[0] in INDEXED_META_FIELDS:
        value_sql = INDEXED_META_FIELDS[keys[0]]
        return _Field(field, value_sql, value_sql.replace("json_extract", "json_type", 1), ())
    path = "$" + "".join(f'."{key}"' for key in keys)
    return _Field(field, "json_extract(meta, ?)", "json_type(meta, ?)", (path,))


def _sql_value(field: str, value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if not -_SQLITE_INT <= value < _SQLITE_INT:
            raise FilterError(f"filter value {value} for {field!r} does not fit in 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FilterError(f"filter value {value} for {field!r} is not a finite number")
        return value
    if isinstance(value, str) or value is None:
        return value
    raise FilterError(
        f"filter value {value!r} for {field!r} has unsupported type {type(value).__name__}: "
        "use a string, number, boolean or null"
    )


def _equals(field: _Field, value: Any, params: list[Any]) -> str:
    """0/1 (never NULL): the field equals ``value``."""
    if value is None:
        return f"({field.value(params)} IS NULL)"
    bound = _sql_value(field.name, value)
    sql = f"{field.value(params)} IS NOT NULL AND {field.value(params)} = ?"
    params.append(bound)
    if isinstance(bound, str):  # a list or object reads as its JSON text: never equal to a string
        sql += f" AND {field.type(params)} NOT IN ('array', 'object')"
    return f"({sql})"


def _one_of(field: _Field, values: Any, operator: str, params: list[Any]) -> str:
    if not isinstance(values, list):
        raise FilterError(f"filter operator {operator!r} on {field.name!r} needs a list value, got {values!r}")
    bound = [_sql_value(field.name, v) for v in values]
    parts = []
    if None in bound:
        parts.append(f"({field.value(params)} IS NULL)")
    present = [v for v in bound if v is not None]
    if present:
        # One JSON array parameter, however long the list (SQLite limits the number of parameters).
        sql = f"{field.value(params)} IS NOT NULL AND {field.value(params)} IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(present))
        if any(isinstance(v, str) for v in present):
            sql += f" AND {field.type(params)} NOT IN ('array', 'object')"
        parts.append(f"({sql})")
    return _join(parts, "OR") if parts else "0"


def _parse_date(field: str, value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        try:
            return dateutil.parser.parse(value)
        except (ValueError, OverflowError):
            raise FilterError(
                f"filter on {field!r}: cannot compare with the string {value!r} using '>', '>=', '<', '<=': "
                "strings are only comparable as ISO formatted dates"
            ) from None  # the message is complete; the parser's own would replace it


def _ordering(field: _Field, operator: str, value: Any, params: list[Any]) -> str:
    if value is None:
        return "0"  # Haystack: nothing compares with None
    if isinstance(value, (list, dict)):
        raise FilterError(
            f"filter on {field.name!r}: operator {operator!r} cannot compare with a {type(value).__name__}"
        )
    if isinstance(value, str):
        date = _parse_date(field.name, value)
        comparable = f"{field.type(params)} = 'text' AND julianday({field.value(params)}) IS NOT NULL"
        comparable += f" AND {field.value(params)} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'"
        compare = f"julianday({field.value(params)}) {operator} julianday(?)"
        params.append(date.isoformat())
        expected = "ISO dates"
    else:
        bound = _sql_value(field.name, value)
        if field.name in ("id", "content"):
            raise FilterError(
                f"filter on {field.name!r}: operator {operator!r} cannot compare its text with the number {value!r}"
            )
        comparable = f"{field.type(params)} IN ('integer', 'real', 'true', 'false')"
        compare = f"{field.value(params)} {operator} ?"
        params.append(bound)
        expected = "numbers"
    missing = f"{field.type(params)} IS NULL OR {field.type(params)} = 'null'"
    message = (
        f"filter {{'field': {field.name!r}, 'operator': {operator!r}, 'value': {value!r}}}: a document holds a "
        f"{{stored_type}} value in {field.name!r}, which cannot be compared with {expected} using '>', '>=', '<', '<='"
    )
    params.append(message)
    error = f"{ERROR_FUNCTION}(?, {field.type(params)})"
    return f"(CASE WHEN {comparable} THEN COALESCE({compare}, 0) WHEN {missing} THEN 0 ELSE {error} END)"


def _comparison(condition: dict[str, Any], params: list[Any]) -> str:
    operator = condition["operator"]
    if "field" not in condition:
        raise FilterError(f"filter condition {condition!r} needs a 'field'")
    if "value" not in condition:
        raise FilterError(f"filter condition {condition!r} needs a 'value'")
    field, value = _field(condition["field"]), condition["value"]
    if operator == "==":
        return _equals(field, value, params)
    if operator == "!=":
        return f"(NOT {_equals(field, value, params)})"
    if operator == "in":
        return _one_of(field, value, operator, params)
    if operator == "not in":
        return f"(NOT {_one_of(field, value, operator, params)})"
    return _ordering(field, operator, value, params)


def _join(parts: list[str], operator: str) -> str:
    """``parts`` joined by AND/OR as a balanced tree (SQLite limits expression depth to 1000)."""
    if len(parts) == 1:
        return parts[0]
    middle = len(parts) // 2
    return f"({_join(parts[:middle], operator)} {operator} {_join(parts[middle:], operator)})"


def _translate(filters: Any, params: list[Any], depth: int) -> str:
    if not isinstance(filters, dict) or "operator" not in filters:
        raise FilterError(f"invalid filter {filters!r}: expected a dict with an 'operator'")
    if depth > MAX_DEPTH:
        raise FilterError(f"filter is nested more than {MAX_DEPTH} levels deep")
    operator = filters["operator"]
    if not isinstance(operator, str) or operator not in LOGICAL + COMPARISONS:
        raise FilterError(
            f"unknown filter operator {operator!r}: use one of {', '.join(COMPARISONS)} or {', '.join(LOGICAL)}"
        )
    if operator in LOGICAL:
        conditions = filters.get("conditions")
        if not isinstance(conditions, list) or not conditions:
            raise FilterError(f"logical filter {operator!r} needs a non-empty list of 'conditions'")
        joined = _join([_translate(c, params, depth + 1) for c in conditions], "AND" if operator == "NOT" else operator)
        return f"(NOT {joined})" if operator == "NOT" else joined
    return _comparison(filters, params)


def filter_to_sql(filters: dict[str, Any], params: list[Any]) -> str:
    """SQL boolean expression (0 or 1 for every row) for ``filters``; bound values are appended to ``params``."""
    return _translate(filters, params, 0)


def metadata_path(metadata_field: Any) -> str:
    """JSON path (a bound parameter, never SQL text) of a metadata field named ``key``,
    ``meta.key`` or ``meta.key.subkey``; a name outside the field grammar is a ``ValueError``."""
    if not isinstance(metadata_field, str) or not metadata_field:
        raise ValueError(f"metadata field must be a non-empty string, got {metadata_field!r}")
    if len(metadata_field) > MAX_FIELD_LENGTH:
        raise ValueError(f"metadata field {metadata_field[:40]!r}... is longer than {MAX_FIELD_LENGTH} characters")
    keys = metadata_field.removeprefix("meta.").split(".")
    if not all(KEY_PATTERN.fullmatch(key) for key in keys):
        raise ValueError(
            f"invalid metadata field {metadata_field!r}: use <key> or meta.<key>(.<key>)*, where a key starts "
            "with a letter or '_' and continues with letters, digits, '_' or '-'"
        )
    return "$" + "".join(f'."{key}"' for key in keys)
