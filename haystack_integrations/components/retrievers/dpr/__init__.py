"""DPR dense retrieval, BM25 and their exact hybrid (§5.1 of the DPR paper), over the embedded store,
Elasticsearch or any store with public retrieval methods. Each class loads on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "bm25_retriever": ["BM25Retriever"],
    "dense_retriever": ["DenseRetriever"],
    "hybrid_retriever": ["HybridRetriever"],
}

if TYPE_CHECKING:
    from .bm25_retriever import BM25Retriever as BM25Retriever
    from .dense_retriever import DenseRetriever as DenseRetriever
    from .hybrid_retriever import HybridRetriever as HybridRetriever
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
