"""Retriever components: DPR dense retrieval, BM25 and their exact hybrid, over the embedded store, Elasticsearch or any
Haystack store with public ``embedding_retrieval`` / ``bm25_retrieval`` methods. Classes load on first use."""

from typing import TYPE_CHECKING

from dpr_components.utils.lazy_package import make_lazy

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
    # This package is also the old module path dpr_components.retrievers.<Class> of pipeline files.
    make_lazy(__name__, __file__, _import_structure, legacy_paths=True)
