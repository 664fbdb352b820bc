"""Document stores: the embedded store (SQLite documents, FAISS vectors, BM25 index in one folder).
The store loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "embedded": ["EmbeddedDocumentStore"],
}

if TYPE_CHECKING:
    from dpr_components.document_stores.embedded import (
        EmbeddedDocumentStore as EmbeddedDocumentStore,
    )
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
