"""What a YAML pipeline may build when the command line loads it: components that stay on this machine.

A pipeline file names classes that get built, and Haystack trusts every class under its own
namespace, some of which send data elsewhere: a fetcher downloads any URL, a generator posts
the query to ``api_base_url``, a ``Secret`` reads an environment variable (an API key) to send
it, a remote document store ships every passage to its host. So the command line builds, by
default, only classes known to stay local: this package's own and a short list of Haystack's
in-memory ones. Anything else, and any ``Secret`` read from the environment, needs
``--allow-network`` (or ``DPR_ALLOW_NETWORK=1``) from a user who trusts the file."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

ALLOW_NETWORK_ENV = "DPR_ALLOW_NETWORK"
LOCAL_PACKAGE = "dpr_components."
# this package's classes: haystack_integrations.components.<role>.dpr.<module>.<Class> and the store's
PUBLISHED_FACE = re.compile(r"haystack_integrations\.(components\.\w+|document_stores)\.dpr\.\w+\.\w+")
LOCAL_HAYSTACK_TYPES = frozenset(
    {
        "haystack.components.writers.document_writer.DocumentWriter",
        "haystack.document_stores.in_memory.document_store.InMemoryDocumentStore",
        "haystack.components.retrievers.in_memory.bm25_retriever.InMemoryBM25Retriever",
        "haystack.components.retrievers.in_memory.embedding_retriever.InMemoryEmbeddingRetriever",
        "haystack.components.joiners.document_joiner.DocumentJoiner",
        "haystack.components.joiners.answer_joiner.AnswerJoiner",
        "haystack.components.joiners.list_joiner.ListJoiner",
        "haystack.components.joiners.string_joiner.StringJoiner",
        # a folder's files into documents (pipelines/index_files.yml): routing, converting and cleaning, all in memory
        "haystack.components.routers.file_type_router.FileTypeRouter",
        "haystack.components.converters.txt.TextFileToDocument",
        "haystack.components.converters.markdown.MarkdownToDocument",
        "haystack.components.converters.html.HTMLToDocument",
        "haystack.components.converters.pypdf.PyPDFToDocument",
        "haystack.components.converters.docx.DOCXToDocument",
        "haystack.components.preprocessors.document_cleaner.DocumentCleaner",
    }
)
SECRET_TYPES = ("env_var", "token")
_HOW_TO_ALLOW = f"pass --allow-network (or set {ALLOW_NETWORK_ENV}=1) to build it from a pipeline file you trust"


class NetworkNotAllowedError(ValueError):
    """A pipeline names a class that may reach the network, or reads a secret, without permission."""


def network_allowed_by_environment() -> bool:
    return os.environ.get(ALLOW_NETWORK_ENV, "").strip().lower() in ("1", "true", "yes")


def is_local_type(type_name: str) -> bool:
    """Whether instances of the class named ``type_name`` are known to stay on this machine."""
    return (
        type_name.startswith(LOCAL_PACKAGE)
        or PUBLISHED_FACE.fullmatch(type_name) is not None
        or type_name in LOCAL_HAYSTACK_TYPES
    )


def _is_secret(node: dict[str, Any]) -> bool:
    return node.get("type") in SECRET_TYPES and ("env_vars" in node or "token" in node)


def _nested_objects(value: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every mapping with a ``type`` inside an init parameter value, with the parameter path leading to it."""
    if isinstance(value, dict):
        if isinstance(value.get("type"), str):
            yield where, value
        for key, child in value.items():
            if key != "type":
                yield from _nested_objects(child, f"{where}.{key}" if key != "init_parameters" else where)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _nested_objects(child, f"{where}[{index}]")


def check_local_only(components: dict[str, Any]) -> None:
    """Refuse any component, nested object (e.g. a document store) or environment secret that is not known to stay local."""
    for name, data in components.items():
        type_name = data.get("type") if isinstance(data, dict) else None
        if not isinstance(type_name, str):
            continue  # the loader reports the missing type
        if not is_local_type(type_name):
            raise NetworkNotAllowedError(
                f"component {name!r} has type {type_name}, which is not known to stay on this machine "
                f"(it may send data over the network); {_HOW_TO_ALLOW}"
            )
        for where, node in _nested_objects(data.get("init_parameters") or {}, name):
            if _is_secret(node):
                names = node.get("env_vars") or []
                raise NetworkNotAllowedError(
                    f"{where} reads a secret from the environment ({', '.join(map(str, names)) or 'token'}); {_HOW_TO_ALLOW}"
                )
            if "." in node["type"] and not is_local_type(node["type"]):  # a dotted type names a class
                raise NetworkNotAllowedError(
                    f"{where} has type {node['type']}, which is not known to stay on this machine "
                    f"(it may send data over the network); {_HOW_TO_ALLOW}"
                )
