"""Retriever components: DPR dense retrieval, BM25 and their exact hybrid, over the embedded store, Elasticsearch or any
Haystack store with public ``embedding_retrieval`` / ``bm25_retrieval`` methods. Classes load on first use."""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

from dpr_components.legacy.type_paths import register_legacy_paths

_import_structure = {
    "bm25": ["BM25Retriever"],
    "dense": ["DenseRetriever"],
    "hybrid": ["HybridRetriever"],
}

if TYPE_CHECKING:
    from dpr_components.retrievers.bm25 import BM25Retriever as BM25Retriever
    from dpr_components.retrievers.dense import DenseRetriever as DenseRetriever
    from dpr_components.retrievers.hybrid import HybridRetriever as HybridRetriever
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)

# This package is also the old module path dpr_components.retrievers.<Class> of pipeline files.
register_legacy_paths(__name__)
