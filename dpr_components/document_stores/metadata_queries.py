"""Questions about the metadata of stored documents, answered in SQL over the documents table:
which fields exist and their types, a field's range, its distinct values and how many there are.
They are the :class:`EmbeddedDocumentStore` methods of Haystack's metadata API, mixed into the store.

A metadata field is named ``key`` or ``meta.key`` (``meta.key.subkey`` for nested values) and
is read through a bound JSON path. A missing field and a JSON ``null`` count as no value.
Values keep their JSON type: the integer 1, the float 1.0, the string "1" and ``true`` are four
distinct values."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from dpr_components.document_stores.sql_filters import metadata_path

if TYPE_CHECKING:
    from dpr_components.document_stores.store_backend import StoreBackend

# SQLite's json_type names -> the type names Haystack's InMemoryDocumentStore reports.
_FIELD_TYPES = {"integer": "int", "real": "float", "true": "boolean", "false": "boolean", "text": "keyword"}
_PRESENT = "{t} IS NOT NULL AND {t} != 'null'"


class MetadataQueries:
    """Mixed into :class:`EmbeddedDocumentStore`: Haystack's metadata API over the store's documents table."""

    if TYPE_CHECKING:
        # The store's method; the mixin does not import the store (no cycle).
        def _reader(self) -> StoreBackend: ...

    def get_metadata_fields_info(self) -> dict[str, dict[str, str]]:
        """Each top-level metadata field of the stored documents -> ``{"type": ...}`` (``int``,
        ``float``, ``boolean``, ``keyword``; ``float`` for a mix of numbers, ``keyword`` for other mixes)."""
        rows = self._reader().table.select(
            "SELECT j.key, j.type FROM documents, json_each(documents.meta) AS j WHERE j.type != 'null' GROUP BY j.key, j.type",
            None,
        )
        types: dict[str, set[str]] = {}
        for key, json_type in rows:
            types.setdefault(key, set()).add(_FIELD_TYPES.get(json_type, "keyword"))
        return {key: {"type": _common_type(found)} for key, found in types.items()}

    def get_metadata_field_min_max(self, metadata_field: str) -> dict[str, Any]:
        """``{"min": ..., "max": ...}`` of a field's numbers (or, when it holds no number, of its
        strings); both None when the field has no such value or mixes numbers and strings."""
        path = metadata_path(metadata_field)
        rows = self._reader().table.select(
            "SELECT CASE WHEN t IN ('integer', 'real') THEN 'number' ELSE t END AS kind, MIN(v), MAX(v) FROM "
            "(SELECT json_type(meta, ?) AS t, json_extract(meta, ?) AS v FROM documents) "
            "WHERE t IN ('integer', 'real', 'text') GROUP BY kind",
            None,
            (path, path),
        )
        if len(rows) != 1:
            return {"min": None, "max": None}
        _, smallest, largest = rows[0]
        return {"min": smallest, "max": largest}

    def count_unique_metadata_by_filter(self, filters: dict[str, Any], metadata_fields: list[str]) -> dict[str, int]:
        """Number of distinct values of each of ``metadata_fields`` (``key`` or ``meta.key``) among
        the documents matching ``filters``, by field name without ``meta.``."""
        if not isinstance(metadata_fields, list) or not metadata_fields:
            raise ValueError(f"metadata_fields must be a non-empty list of field names, got {metadata_fields!r}")
        paths = [metadata_path(field) for field in metadata_fields]
        counts = ", ".join(
            f"COUNT(DISTINCT CASE WHEN {_PRESENT.format(t='json_type(meta, ?)')} "
            "THEN json_type(meta, ?) || ':' || json_extract(meta, ?) END)"
            for _ in paths
        )
        params = [path for path in paths for _ in range(4)]
        row = self._reader().table.select(f"SELECT {counts} FROM documents {{where}}", filters, params)[0]
        return {field.removeprefix("meta."): int(count) for field, count in zip(metadata_fields, row, strict=True)}

    def get_metadata_field_unique_values(
        self,
        metadata_field: str,
        search_term: str | None = None,
        from_: int = 0,
        size: int = 10,
        filters: dict[str, Any] | None = None,
    ) -> tuple[list[Any], int]:
        """One page of a field's distinct values among the documents matching ``filters``, ordered by
        their text, and the number of distinct values; ``search_term`` keeps the values containing it
        (case-insensitive)."""
        for name, number in (("from_", from_), ("size", size)):
            if not isinstance(number, int) or isinstance(number, bool) or number < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {number!r}")
        if search_term is not None and not isinstance(search_term, str):
            raise ValueError(f"search_term must be a string, got {search_term!r}")
        path = metadata_path(metadata_field)
        rows = self._reader().table.select(
            "SELECT DISTINCT t, v FROM (SELECT json_type(meta, ?) AS t, json_extract(meta, ?) AS v FROM documents {where}) "
            f"WHERE {_PRESENT.format(t='t')}",
            filters,
            (path, path),
        )
        values = [(json_type, _python_value(json_type, value)) for json_type, value in rows]
        if search_term:
            wanted = search_term.lower()
            values = [(t, v) for t, v in values if wanted in str(v).lower()]
        values.sort(key=lambda typed: (str(typed[1]), typed[0]))
        return [value for _, value in values[from_ : from_ + size]], len(values)


def _common_type(types: set[str]) -> str:
    if len(types) == 1:
        return next(iter(types))
    return "float" if types <= {"int", "float"} else "keyword"


def _python_value(json_type: str, value: Any) -> Any:
    """A value read by ``json_extract`` in its JSON type (SQLite gives booleans as 0/1, lists and objects as text)."""
    if json_type in ("true", "false"):
        return json_type == "true"
    if json_type in ("array", "object"):
        return json.loads(value)
    return value
