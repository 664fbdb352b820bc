"""The stores the served pipelines read: whether each was indexed, how many passages it holds, and the
passages of one source document in order, read from the store without building a pipeline or loading
a model.

An embedded store (``EmbeddedDocumentStore``) is known by its folder (``--store`` or the pipeline file's
own): it is ready once that folder holds ``documents.sqlite``, and is opened from the pipeline file's
settings (handles on one folder share one backend in a process, so this reads what the pipelines read,
an index request's writes included). Another store (Elasticsearch) is the built pipeline's own.

The server keeps its handle on each embedded store from the moment the folder holds a store (at start,
or after the first index request): the folder and database it opened are the ones the server serves.
Once the folder at that path is removed, renamed or replaced by another, :meth:`ServedStore.problem`
says so, and the pipelines reading or writing it answer 503 with that reason until a restart."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Document

from dpr_components.corpus.record_ids import split_passage_id
from dpr_components.pipeline_files.loading import STORE_FILE, embedded_store_folders, embedded_store_specs
from dpr_components.pipeline_requests.errors import one_line
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


@dataclass
class OpenedFolder:
    """The server's handle on one store folder, shared by every served pipeline on that folder: opened by
    the first that finds a store there (at start, or after the first index request), then kept."""

    store: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class ServedStore:
    """The store one served pipeline reads (or, for ``index``, writes)."""

    pipeline: str
    wrapper: DeclaredPipelineWrapper
    folder: str | None  # an embedded store's folder; None for another kind of store
    opened: OpenedFolder = field(default_factory=OpenedFolder, repr=False, compare=False)

    @property
    def embedded(self) -> bool:
        """Whether it is an embedded store (FAISS + SQLite in a folder)."""
        return self.folder is not None

    def ready(self) -> bool:
        """Whether something was indexed into it and it can be used (a pipeline reading it can answer)."""
        if self.folder is None:
            return self.wrapper.built is not None
        return self.problem() is None and self._embedded() is not None

    def problem(self) -> str | None:
        """Why the store cannot be used though it holds one: its folder removed, renamed or replaced since
        the server opened it, or a store the server cannot open (one line naming it); ``None`` otherwise,
        a store not indexed yet included."""
        try:
            store = self._embedded()
        except (ValueError, OSError) as error:  # a damaged database, settings another handle opened it with
            return f"cannot open the store in {self.folder}: {one_line(error)}"
        return store.folder_problem() if store is not None else None

    def _embedded(self) -> Any | None:
        """The server's handle on the embedded store, opened once the folder holds a store, then kept (its
        backend remembers the folder it opened); ``None`` before."""
        opened = self.opened
        if opened.store is not None or self.folder is None or not (Path(self.folder) / STORE_FILE).is_file():
            return opened.store
        from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

        with opened.lock:
            if opened.store is None:
                entry = copy.deepcopy(embedded_store_specs(self.wrapper.spec["components"])[0])  # it has a folder
                entry["init_parameters"]["path"] = self.folder
                store = EmbeddedDocumentStore.from_dict(entry)
                store.get_documents_by_id([])  # opens the folder's backend, shared with the pipelines
                opened.store = store
        return opened.store

    def handle(self) -> Any | None:
        """A handle on the store, ``None`` while it is not ready; opening it loads no model."""
        if not self.ready():
            return None
        return _built_store(self.wrapper) if self.folder is None else self._embedded()

    def passages(self) -> int | None:
        """How many passages it holds; ``None`` when it is not ready or cannot say."""
        store = self.handle()
        if store is None:
            return None
        try:
            return int(store.count_documents())
        except Exception:  # noqa: BLE001 - a remote store that does not answer now: not counted
            return None


def served_stores(
    wrappers: Mapping[str, DeclaredPipelineWrapper], stores: StoreFolders | None
) -> dict[str, ServedStore]:
    """The store of each served pipeline that has one, by pipeline name; those on one folder share the
    server's handle on it."""
    found: dict[str, ServedStore] = {}
    by_folder: dict[str, OpenedFolder] = {}
    for name, wrapper in wrappers.items():
        folders = embedded_store_folders(wrapper.spec.get("components", {}))
        folder = ((stores or StoreFolders()).folder_for(name) or folders[0]) if folders else None
        if folder is not None or _built_store(wrapper) is not None:
            opened = by_folder.setdefault(str(Path(folder).resolve()), OpenedFolder()) if folder else OpenedFolder()
            found[name] = ServedStore(name, wrapper, folder, opened)
            wrapper.store_problem = found[name].problem
            found[name].problem()  # a store indexed already: opened now, the folder the server serves
    return found


def _by_source(store: Any, source: str) -> list[Document]:
    return list(store.filter_documents({"field": f"meta.{SOURCE_ID}", "operator": "==", "value": source}))


def _position(document: Document) -> tuple[int, str]:
    index = (document.meta or {}).get(PASSAGE_INDEX)
    return (index if isinstance(index, int) else 0, document.id)


def _by_passage(store: Any, wanted: str) -> list[Document]:
    """The passages of the source document of passage ``wanted`` (the passage alone when it names none)."""
    found = list(store.filter_documents({"field": "id", "operator": "==", "value": wanted}))
    source = (found[0].meta or {}).get(SOURCE_ID) if found else None
    return _by_source(store, source) if isinstance(source, str) and source else found


def source_passages(store: Any, wanted: str) -> list[Document]:
    """The passages of source document ``wanted`` in order; ``wanted`` may also be one of its passages'
    ids. Empty when the store holds neither.

    An id of the form of a passage id (``hamlet#0``) is looked up as a passage first: no record id the index
    accepts has that form, so it names a passage, and a record indexed under such an id before the rule
    (``corpus/record_ids.py``) does not hide the document of the passage; it is still found when no passage
    has the id, and by its own passages' ids (``hamlet#0#0``)."""
    lookups = (_by_passage, _by_source) if split_passage_id(wanted) else (_by_source, _by_passage)
    for lookup in lookups:
        passages = lookup(store, wanted)
        if passages:
            return sorted(passages, key=_position)
    return []


def ready_names(found: Mapping[str, ServedStore]) -> Iterator[str]:
    """The pipelines whose store is ready, in serving order."""
    return (name for name, store in found.items() if store.ready())
