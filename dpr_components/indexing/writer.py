"""PassageWriter: writes the passages of re-indexed documents as a whole.

``DPRPassageSplitter`` gives passage ``i`` of a document the id ``<document id>#<i>`` and
``meta["document_id"]``. Writing passages one by one (Haystack's ``DocumentWriter``) keeps the
old ``doc#2`` when a document shrinks to two passages, so a search still finds text the corpus
no longer has. This writer replaces, for every document of the batch, its stored passages
by the new ones: it writes them (overwriting) and then deletes the stored passages of those
documents that the new set lacks. Written first, deleted second: a crash in between leaves a
stale passage until the same command is run again, never a document without its passages."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.serialization import import_class_by_name
from haystack.document_stores.types import DocumentStore, DuplicatePolicy

DOCUMENT_ID = "document_id"
_IDS_PER_FILTER = 500  # bounded filters, for any store (Elasticsearch limits terms queries)


@component
class PassageWriter:
    """Writes passages to any store with ``filter_documents``, ``delete_documents`` and
    ``write_documents``; a document's passages replace all its previously stored ones.

    :param document_store: where to write.
    """

    def __init__(self, document_store: DocumentStore) -> None:
        for method in ("filter_documents", "delete_documents", "write_documents"):
            if not callable(getattr(document_store, method, None)):
                raise ValueError(f"PassageWriter needs a document store with {method}(), got {type(document_store).__name__}")
        self.document_store = document_store

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PassageWriter:
        store = data.get("init_parameters", {}).get("document_store")
        if not isinstance(store, dict) or "type" not in store:
            raise ValueError("PassageWriter needs init parameter 'document_store' with a 'type'")
        try:
            store_class = import_class_by_name(store["type"])
        except ImportError as error:
            raise ValueError(f"PassageWriter: cannot import document store type {store['type']!r}: {error}") from error
        data["init_parameters"]["document_store"] = store_class.from_dict(store)
        return default_from_dict(cls, data)

    @component.output_types(documents_written=int)
    def run(self, documents: list[Document]) -> dict[str, int]:
        """Write ``documents``; return how many were written (stale passages deleted not counted)."""
        new_ids = {d.id for d in documents}
        source_ids = list(dict.fromkeys(d.meta[DOCUMENT_ID] for d in documents if isinstance(d.meta.get(DOCUMENT_ID), str)))
        written = self.document_store.write_documents(documents, policy=DuplicatePolicy.OVERWRITE) if documents else 0
        stale = [passage_id for passage_id in self._stored_passage_ids(source_ids) if passage_id not in new_ids]
        if stale:
            self.document_store.delete_documents(stale)
        return {"documents_written": written}

    def _stored_passage_ids(self, source_ids: list[str]) -> list[str]:
        found = []
        for start in range(0, len(source_ids), _IDS_PER_FILTER):
            chunk = source_ids[start : start + _IDS_PER_FILTER]
            passages = self.document_store.filter_documents({"field": f"meta.{DOCUMENT_ID}", "operator": "in", "value": chunk})
            found += [p.id for p in passages]
        return found
