"""EmbeddedDocumentStore: SQLite documents with FAISS and BM25 indexes in one folder. Loaded on first use."""

from dpr_components.utils.published import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__)
