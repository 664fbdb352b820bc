"""Document stores: the embedded store (SQLite documents, FAISS vectors, BM25 index in one folder).
The store loads on first use."""

from typing import TYPE_CHECKING

from dpr_components.utils.lazy_package import make_lazy

_import_structure = {
    "embedded": ["EmbeddedDocumentStore"],
}

if TYPE_CHECKING:
    from dpr_components.document_stores.embedded import (
        EmbeddedDocumentStore as EmbeddedDocumentStore,
    )
else:
    make_lazy(__name__, __file__, _import_structure)
