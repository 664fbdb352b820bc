"""Writes passages to any store with ``filter_documents``, ``delete_documents`` and
``write_documents``; a document's passages replace all its previously stored ones.
``run_async`` uses the store's ``*_async`` methods where it has them (else worker threads)."""

from __future__ import annotations

from typing import Any, cast

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.serialization import import_class_by_name
from haystack.document_stores.types import DocumentStore, DuplicatePolicy

from dpr_components.store_access.async_calls import call_store
from dpr_components.utils.validation import check_documents

_IDS_PER_FILTER = 500  # bounded filters, for any store (Elasticsearch limits terms queries)


DOCUMENT_ID = "document_id"


@component
class PassageWriter:
    """Writes passages to any store with ``filter_documents``, ``delete_documents`` and
    ``write_documents``; a document's passages replace all its previously stored ones.
    ``run_async`` uses the store's ``*_async`` methods where it has them (else worker threads).

    :param document_store: where to write.

    Usage example (the last step of ``pipelines/index.yml``):

    ```python
    from haystack import Document
    from haystack_integrations.document_stores.dpr import EmbeddedDocumentStore

    writer = PassageWriter(EmbeddedDocumentStore(path="indexes/example"))
    passage = Document(id="d1#0", content="Hamlet is a tragedy.", meta={"document_id": "d1"})
    writer.run(documents=[passage])["documents_written"]  # 1
    ```
    """

    def __init__(self, *, document_store: DocumentStore) -> None:
        for method in ("filter_documents", "delete_documents", "write_documents"):
            if not callable(getattr(document_store, method, None)):
                raise ValueError(
                    f"PassageWriter needs a document store with {method}(), got {type(document_store).__name__}"
                )
        self.document_store = document_store

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PassageWriter:
        store = data.get("init_parameters", {}).get("document_store")
        if not isinstance(store, dict) or "type" not in store:
            raise ValueError("PassageWriter needs init parameter 'document_store' with a 'type'")
        try:
            store_class = cast(type[DocumentStore], import_class_by_name(store["type"]))
        except ImportError as error:
            raise ValueError(f"PassageWriter: cannot import document store type {store['type']!r}: {error}") from error
        data["init_parameters"]["document_store"] = store_class.from_dict(store)
        return default_from_dict(cls, data)

    @component.output_types(documents_written=int)
    def run(self, documents: list[Document]) -> dict[str, int]:
        """Write the passages (overwriting), then delete the stored passages of their documents that they lack.

        :param documents: passages; those with ``meta["document_id"]`` replace all stored passages of
            that document, the others are only written.
        :returns: ``documents_written``: how many were written (stale passages deleted not counted).
        """
        store = self.document_store
        check_documents("documents", documents)
        written = store.write_documents(documents, policy=DuplicatePolicy.OVERWRITE) if documents else 0
        stored = [p.id for f in _passage_filters(documents) for p in store.filter_documents(f)]
        stale = _stale(stored, documents)
        if stale:
            store.delete_documents(stale)
        return {"documents_written": written}

    @component.output_types(documents_written=int)
    async def run_async(self, documents: list[Document]) -> dict[str, int]:
        """Asynchronous version of :meth:`run`, without blocking the event loop."""
        store = self.document_store
        written = (
            await call_store(store, "write_documents", documents, policy=DuplicatePolicy.OVERWRITE) if documents else 0
        )
        stored = [p.id for f in _passage_filters(documents) for p in await call_store(store, "filter_documents", f)]
        stale = _stale(stored, documents)
        if stale:
            await call_store(store, "delete_documents", stale)
        return {"documents_written": written}


def _passage_filters(documents: list[Document]) -> list[dict[str, Any]]:
    """Filters (a bounded number of ids each) selecting the stored passages of the source documents of ``documents``."""
    source_ids = list(dict.fromkeys(d.meta[DOCUMENT_ID] for d in documents if isinstance(d.meta.get(DOCUMENT_ID), str)))
    return [
        {"field": f"meta.{DOCUMENT_ID}", "operator": "in", "value": source_ids[start : start + _IDS_PER_FILTER]}
        for start in range(0, len(source_ids), _IDS_PER_FILTER)
    ]


def _stale(stored_ids: list[str], documents: list[Document]) -> list[str]:
    """The stored passages the new set of passages lacks."""
    new_ids = {d.id for d in documents}
    return [passage_id for passage_id in stored_ids if passage_id not in new_ids]
