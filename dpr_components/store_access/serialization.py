"""A component's ``document_store`` parameter to and from its ``{"type", "init_parameters"}`` dict."""

from __future__ import annotations

from typing import Any, TypeVar, cast

from haystack import default_from_dict
from haystack.core.serialization import import_class_by_name
from haystack.document_stores.types import DocumentStore

EMBEDDED_STORE_TYPE = "haystack_integrations.document_stores.dpr.document_store.EmbeddedDocumentStore"

T = TypeVar("T")


def is_embedded_store_type(type_path: Any) -> bool:
    """Whether a pipeline file's ``type`` names the embedded store."""
    return type_path == EMBEDDED_STORE_TYPE


def store_to_dict(store: Any) -> dict[str, Any]:
    return store.to_dict()


def store_from_dict(data: dict[str, Any]) -> Any:
    """Rebuild a document store from its ``{"type", "init_parameters"}`` dict."""
    if not isinstance(data, dict) or "type" not in data:
        raise ValueError(f"document_store must be a dict with a 'type', got {data!r}")
    if is_embedded_store_type(data["type"]):
        # Our own store needs no allowlist entry; any other class goes through Haystack's allowlist.
        from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

        return EmbeddedDocumentStore.from_dict(data)
    try:
        store_class = cast(type[DocumentStore], import_class_by_name(data["type"]))
    except ImportError as error:
        raise ValueError(f"cannot import document store class {data['type']!r}: {error}") from error
    return store_class.from_dict(data)


def replace_store_paths(node: Any, path: str) -> int:
    """Set the folder of every embedded store inside pipeline data ``node`` to ``path``; how many were set."""
    count = 0
    if isinstance(node, dict):
        if is_embedded_store_type(node.get("type")) and isinstance(node.get("init_parameters"), dict):
            node["init_parameters"]["path"] = path
            count += 1
        for value in node.values():
            count += replace_store_paths(value, path)
    elif isinstance(node, list):
        for value in node:
            count += replace_store_paths(value, path)
    return count


def from_dict_with_store(cls: type[T], data: dict[str, Any]) -> T:
    """A component of ``cls`` from its ``to_dict`` output, its ``document_store`` rebuilt first."""
    data["init_parameters"]["document_store"] = store_from_dict(data["init_parameters"]["document_store"])
    return default_from_dict(cls, data)
