"""The stores the served pipelines read: whether each was indexed, how many passages it holds, and the
passages of one source document in order, read from the store without building a pipeline or loading
a model.

An embedded store (``EmbeddedDocumentStore``) is known by its folder (``--store`` or the pipeline file's
own): it is ready once that folder holds ``documents.sqlite``, and is opened from the pipeline file's
settings (handles on one folder share one backend in a process, so this reads what the pipelines read,
an index request's writes included). Another store (Elasticsearch) is the built pipeline's own."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack import Document

from dpr_components.pipeline_files.loading import STORE_FILE, embedded_store_folders, embedded_store_specs
from dpr_components.serving.store_folders import StoreFolders
from dpr_components.serving.wrappers import DeclaredPipelineWrapper

SOURCE_ID, PASSAGE_INDEX = "document_id", "passage_index"


def _built_store(wrapper: DeclaredPipelineWrapper) -> Any | None:
    """The document store of a built pipeline's first component that has one."""
    if wrapper.built is None:
        return None
    for _, component in wrapper.built.walk():
        store = getattr(component, "document_store", None)
        if store is not None:
            return store
    return None


@dataclass(frozen=True)
class ServedStore:
    """The store one served pipeline reads (or, for ``index``, writes)."""

    pipeline: str
    wrapper: DeclaredPipelineWrapper
    folder: str | None  # an embedded store's folder; None for another kind of store

    @property
    def embedded(self) -> bool:
        """Whether it is an embedded store (FAISS + SQLite in a folder)."""
        return self.folder is not None

    def ready(self) -> bool:
        """Whether something was indexed into it (a pipeline reading it can answer)."""
        if self.folder is None:
            return self.wrapper.built is not None
        return (Path(self.folder) / STORE_FILE).is_file()

    def handle(self) -> Any | None:
        """A handle on the store, ``None`` while it is not ready; opening it loads no model."""
        if not self.ready():
            return None
        if self.folder is None:
            return _built_store(self.wrapper)
        from dpr_components.document_stores.embedded import EmbeddedDocumentStore

        entry = copy.deepcopy(embedded_store_specs(self.wrapper.spec["components"])[0])  # a folder was found there
        entry["init_parameters"]["path"] = self.folder
        return EmbeddedDocumentStore.from_dict(entry)

    def passages(self) -> int | None:
        """How many passages it holds; ``None`` when it is not ready or cannot say."""
        store = self.handle()
        if store is None:
            return None
        try:
            return int(store.count_documents())
        except Exception:  # a remote store that does not answer now: not counted
            return None


def served_stores(
    wrappers: Mapping[str, DeclaredPipelineWrapper], stores: StoreFolders | None
) -> dict[str, ServedStore]:
    """The store of each served pipeline that has one, by pipeline name."""
    found = {}
    for name, wrapper in wrappers.items():
        folders = embedded_store_folders(wrapper.spec.get("components", {}))
        folder = ((stores or StoreFolders()).folder_for(name) or folders[0]) if folders else None
        if folder is not None or _built_store(wrapper) is not None:
            found[name] = ServedStore(name, wrapper, folder)
    return found


def _by_source(store: Any, source: str) -> list[Document]:
    return list(store.filter_documents({"field": f"meta.{SOURCE_ID}", "operator": "==", "value": source}))


def _position(document: Document) -> tuple[int, str]:
    index = (document.meta or {}).get(PASSAGE_INDEX)
    return (index if isinstance(index, int) else 0, document.id)


def source_passages(store: Any, wanted: str) -> list[Document]:
    """The passages of source document ``wanted`` in order; ``wanted`` may also be one of its passages'
    ids. Empty when the store holds neither."""
    passages = _by_source(store, wanted)
    if not passages:
        found = list(store.filter_documents({"field": "id", "operator": "==", "value": wanted}))
        source = (found[0].meta or {}).get(SOURCE_ID) if found else None
        passages = _by_source(store, source) if isinstance(source, str) and source else found
    return sorted(passages, key=_position)


def ready_names(found: Mapping[str, ServedStore]) -> Iterator[str]:
    """The pipelines whose store is ready, in serving order."""
    return (name for name, store in found.items() if store.ready())
