"""A retriever's ``filter_policy``: how runtime filters combine with the filters given at init."""

from __future__ import annotations

from typing import Any

from haystack.document_stores.types import FilterPolicy, apply_filter_policy


def parse_filter_policy(value: FilterPolicy | str) -> FilterPolicy:
    """A ``FilterPolicy`` from the enum or its name (``replace``/``merge``), else a clear error."""
    if isinstance(value, FilterPolicy):
        return value
    if isinstance(value, str):
        try:
            return FilterPolicy.from_str(value)
        except ValueError:
            pass
    raise ValueError(f"filter_policy must be 'replace' or 'merge', got {value!r}")


def effective_filters(
    policy: FilterPolicy, init_filters: dict[str, Any] | None, runtime_filters: dict[str, Any] | None
) -> dict[str, Any] | None:
    """REPLACE: runtime filters, else the init ones. MERGE: both, joined by AND (Haystack's
    ``apply_filter_policy``: a runtime condition on a field an init condition also tests replaces it)."""
    return apply_filter_policy(policy, init_filters, runtime_filters)
