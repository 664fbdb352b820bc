"""EmbeddedDocumentStore: SQLite documents with FAISS and BM25 indexes in one folder. Loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "document_store": ["EmbeddedDocumentStore"],
}

if TYPE_CHECKING:
    from .document_store import EmbeddedDocumentStore as EmbeddedDocumentStore
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
