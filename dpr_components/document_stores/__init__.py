"""Document stores: the embedded store (SQLite documents, FAISS vectors, BM25 index in one folder)."""

from dpr_components.document_stores.embedded import EmbeddedDocumentStore

__all__ = ["EmbeddedDocumentStore"]
