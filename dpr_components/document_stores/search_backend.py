"""One search interface over the embedded store and Elasticsearch, so retrievers and the
hybrid ranker work with either."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from haystack import Document

from dpr_components.document_stores.embedded import EmbeddedDocumentStore

logger = logging.getLogger(__name__)


class SearchBackend(Protocol):
    def bm25_retrieval(self, query: str, top_k: int, filters: dict[str, Any] | None) -> list[Document]: ...

    def embedding_retrieval(
        self, query_embedding: Sequence[float], top_k: int, filters: dict[str, Any] | None
    ) -> list[Document]: ...

    def score_documents(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> dict[str, tuple[float | None, float | None]]: ...


ES_MAX_KNN_CANDIDATES = 10_000


class ElasticsearchSearch:
    """Adapter for ``ElasticsearchDocumentStore`` (elasticsearch-haystack).

    BM25 runs without fuzziness (plain BM25, as in the paper); dense scores for the hybrid are
    recomputed from the stored vectors because Elasticsearch rescales kNN scores."""

    def __init__(self, store: Any, similarity: str = "dot_product") -> None:
        self.store = store
        self.similarity = similarity

    def bm25_retrieval(self, query: str, top_k: int, filters: dict[str, Any] | None) -> list[Document]:
        return self.store._bm25_retrieval(query, filters=filters, fuzziness="0", top_k=top_k)

    def embedding_retrieval(
        self, query_embedding: Sequence[float], top_k: int, filters: dict[str, Any] | None
    ) -> list[Document]:
        if top_k > ES_MAX_KNN_CANDIDATES:
            raise ValueError(f"Elasticsearch kNN returns at most {ES_MAX_KNN_CANDIDATES} documents, got top_k={top_k}")
        # Elasticsearch caps num_candidates at 10,000; the store's default (10 x top_k) would exceed it.
        return self.store._embedding_retrieval(
            list(map(float, query_embedding)), filters=filters, top_k=top_k,
            num_candidates=min(ES_MAX_KNN_CANDIDATES, top_k * 10),
        )

    def score_documents(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> dict[str, tuple[float | None, float | None]]:
        ids = list(document_ids)
        only_these = {"field": "id", "operator": "in", "value": ids}
        bm25: dict[str, float] = {}
        if query is not None:
            bm25 = {d.id: float(d.score or 0.0) for d in self.bm25_retrieval(query, len(ids), only_these)}
        dense: dict[str, float] = {}
        if query_embedding is not None:
            q = np.asarray(query_embedding, dtype=np.float32)
            for doc in self.store.filter_documents(only_these):
                if doc.embedding is not None:
                    v = np.asarray(doc.embedding, dtype=np.float32)
                    dense[doc.id] = -float(np.sum((q - v) ** 2)) if self.similarity == "l2" else float(q @ v)
        return {
            i: (bm25.get(i, 0.0) if query is not None else None, dense.get(i)) for i in ids
        }


def warn_if_empty(store: Any) -> None:
    """An empty embedded store almost always means the index was never built (or a wrong path)."""
    if isinstance(store, EmbeddedDocumentStore) and store.count_documents() == 0:
        logger.warning(
            "document store %s is empty: index a corpus first, e.g. "
            "haystack run pipelines/index.yml --input path=examples/corpus.jsonl",
            store.path or "(in memory)",
        )


def search_backend(store: Any) -> SearchBackend:
    """The search interface of a document store, or a clear error for an unsupported one."""
    if isinstance(store, EmbeddedDocumentStore):
        return store
    if type(store).__name__ == "ElasticsearchDocumentStore":
        similarity = getattr(store, "_embedding_similarity_function", "dot_product")
        return ElasticsearchSearch(store, "l2" if similarity == "l2_norm" else "dot_product")
    raise TypeError(
        f"unsupported document store {type(store).__name__}: use EmbeddedDocumentStore or "
        "ElasticsearchDocumentStore (elasticsearch-haystack)"
    )
