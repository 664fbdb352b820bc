"""The parts of the embedded document store (SQLite documents, FAISS vectors and a BM25 index in one folder);
the store itself is ``haystack_integrations/document_stores/dpr/document_store.py``."""
