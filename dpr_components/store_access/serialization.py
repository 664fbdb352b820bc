"""A component's ``document_store`` parameter to and from its ``{"type", "init_parameters"}`` dict."""

from __future__ import annotations

from typing import Any

from haystack.core.serialization import import_class_by_name


def store_to_dict(store: Any) -> dict[str, Any]:
    return store.to_dict()


def store_from_dict(data: dict[str, Any]) -> Any:
    """Rebuild a document store from its ``{"type", "init_parameters"}`` dict."""
    if not isinstance(data, dict) or "type" not in data:
        raise ValueError(f"document_store must be a dict with a 'type', got {data!r}")
    if data["type"] == "dpr_components.document_stores.embedded.EmbeddedDocumentStore":
        # Our own store needs no allowlist entry; any other class goes through Haystack's allowlist.
        from dpr_components.document_stores.embedded import EmbeddedDocumentStore

        return EmbeddedDocumentStore.from_dict(data)
    try:
        store_class = import_class_by_name(data["type"])
    except ImportError as error:
        raise ValueError(f"cannot import document store class {data['type']!r}: {error}") from error
    return store_class.from_dict(data)
