"""Retriever components: DPR dense retrieval, BM25 and their exact hybrid, over the embedded store, Elasticsearch or any
Haystack store with public ``embedding_retrieval`` / ``bm25_retrieval`` methods."""

from dpr_components.legacy_paths import register_legacy_paths
from dpr_components.retrievers.bm25 import BM25Retriever
from dpr_components.retrievers.dense import DenseRetriever
from dpr_components.retrievers.hybrid import HybridRetriever

__all__ = ["BM25Retriever", "DenseRetriever", "HybridRetriever"]

# This package is also the old module path dpr_components.retrievers.<Class> of pipeline files.
register_legacy_paths(BM25Retriever, DenseRetriever)
