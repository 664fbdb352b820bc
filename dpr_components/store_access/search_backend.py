"""One search interface over any document store, so retrievers and the hybrid ranker work with
our embedded store, Elasticsearch, Haystack's ``InMemoryDocumentStore`` or any store exposing
public ``bm25_retrieval`` / ``embedding_retrieval`` methods.

Every method has an ``*_async`` twin for async pipelines: it awaits the store's own async
method where the store has one, and otherwise runs the synchronous call in a worker thread."""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from haystack import Document, logging
from haystack.document_stores.errors import DocumentStoreError

from dpr_components.store_access.async_calls import async_method

if TYPE_CHECKING:
    from dpr_components.document_stores.embedded import EmbeddedDocumentStore

EMBEDDED_STORE_MODULE = "dpr_components.document_stores.embedded"

logger = logging.getLogger(__name__)

RETRIEVAL_METHODS = ("bm25_retrieval", "embedding_retrieval")


class SearchBackend(Protocol):
    def bm25_retrieval(
        self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool = False
    ) -> list[Document]: ...

    def embedding_retrieval(
        self,
        query_embedding: Sequence[float],
        top_k: int,
        filters: dict[str, Any] | None,
        scale_score: bool = False,
        return_embedding: bool = False,
    ) -> list[Document]: ...

    async def bm25_retrieval_async(
        self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool = False
    ) -> list[Document]: ...

    async def embedding_retrieval_async(
        self,
        query_embedding: Sequence[float],
        top_k: int,
        filters: dict[str, Any] | None,
        scale_score: bool = False,
        return_embedding: bool = False,
    ) -> list[Document]: ...


class ScoringSearchBackend(SearchBackend, Protocol):
    """A backend that also scores given documents exactly (what HybridRanker mode ``dpr`` needs)."""

    def score_documents(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> dict[str, tuple[float | None, float | None]]: ...

    async def score_documents_async(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> dict[str, tuple[float | None, float | None]]: ...


class EmbeddedSearch:
    """Adapter for ``EmbeddedDocumentStore``: its scores are raw (BM25, dot product, cosine or
    negative squared L2), so ``scale_score`` is ignored."""

    def __init__(self, store: EmbeddedDocumentStore) -> None:
        self.store = store

    def bm25_retrieval(
        self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool = False
    ) -> list[Document]:
        return self.store.bm25_retrieval(query, top_k, filters)

    def embedding_retrieval(
        self,
        query_embedding: Sequence[float],
        top_k: int,
        filters: dict[str, Any] | None,
        scale_score: bool = False,
        return_embedding: bool = False,
    ) -> list[Document]:
        return self.store.embedding_retrieval(query_embedding, top_k, filters, return_embedding=return_embedding)

    def score_documents(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> dict[str, tuple[float | None, float | None]]:
        return self.store.score_documents(document_ids, query, query_embedding)

    async def bm25_retrieval_async(
        self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool = False
    ) -> list[Document]:
        return await self.store.bm25_retrieval_async(query, top_k, filters)

    async def embedding_retrieval_async(
        self,
        query_embedding: Sequence[float],
        top_k: int,
        filters: dict[str, Any] | None,
        scale_score: bool = False,
        return_embedding: bool = False,
    ) -> list[Document]:
        return await self.store.embedding_retrieval_async(
            query_embedding, top_k, filters, return_embedding=return_embedding
        )

    async def score_documents_async(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> dict[str, tuple[float | None, float | None]]:
        return await self.store.score_documents_async(document_ids, query, query_embedding)


ES_MAX_KNN_CANDIDATES = 10_000


class ElasticsearchSearch:
    """Adapter for ``ElasticsearchDocumentStore`` (elasticsearch-haystack).

    BM25 runs without fuzziness (plain BM25, as in the paper); dense scores for the hybrid are
    recomputed from the stored vectors because Elasticsearch rescales kNN scores; ``scale_score``
    is ignored."""

    def __init__(self, store: Any, similarity: str = "dot_product") -> None:
        self.store = store
        self.similarity = similarity

    def bm25_retrieval(
        self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool = False
    ) -> list[Document]:
        return self.store._bm25_retrieval(query, filters=filters, fuzziness="0", top_k=top_k)

    def embedding_retrieval(
        self,
        query_embedding: Sequence[float],
        top_k: int,
        filters: dict[str, Any] | None,
        scale_score: bool = False,
        return_embedding: bool = False,
    ) -> list[Document]:
        # Elasticsearch returns the stored vectors; DenseRetriever drops them unless asked.
        return self.store._embedding_retrieval(**_knn_arguments(query_embedding, top_k, filters))

    async def bm25_retrieval_async(
        self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool = False
    ) -> list[Document]:
        method = async_method(self.store, "_bm25_retrieval")
        if method is None:
            return await asyncio.to_thread(self.bm25_retrieval, query, top_k, filters)
        return await method(query, filters=filters, fuzziness="0", top_k=top_k)

    async def embedding_retrieval_async(
        self,
        query_embedding: Sequence[float],
        top_k: int,
        filters: dict[str, Any] | None,
        scale_score: bool = False,
        return_embedding: bool = False,
    ) -> list[Document]:
        method = async_method(self.store, "_embedding_retrieval")
        if method is None:
            return await asyncio.to_thread(self.embedding_retrieval, query_embedding, top_k, filters)
        return await method(**_knn_arguments(query_embedding, top_k, filters))

    async def score_documents_async(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> dict[str, tuple[float | None, float | None]]:
        return await asyncio.to_thread(self.score_documents, document_ids, query, query_embedding)

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
        return {i: (bm25.get(i, 0.0) if query is not None else None, dense.get(i)) for i in ids}


def _knn_arguments(query_embedding: Sequence[float], top_k: int, filters: dict[str, Any] | None) -> dict[str, Any]:
    if top_k > ES_MAX_KNN_CANDIDATES:
        raise ValueError(f"Elasticsearch kNN returns at most {ES_MAX_KNN_CANDIDATES} documents, got top_k={top_k}")
    # Elasticsearch caps num_candidates at 10,000; the store's default (10 x top_k) would exceed it.
    return {
        "query_embedding": list(map(float, query_embedding)),
        "filters": filters,
        "top_k": top_k,
        "num_candidates": min(ES_MAX_KNN_CANDIDATES, top_k * 10),
    }


class PublicMethodsSearch:
    """Adapter for a store with public ``bm25_retrieval(query, filters, top_k[, scale_score])``
    and/or ``embedding_retrieval(query_embedding, filters, top_k[, scale_score])``, as Haystack's
    ``InMemoryDocumentStore`` has. Arguments are passed by name; ``scale_score`` only to a method
    that accepts it. The async twins use the store's ``bm25_retrieval_async`` /
    ``embedding_retrieval_async`` when it has them. It offers no exact per-document scoring
    (``score_documents``)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def bm25_retrieval(
        self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool = False
    ) -> list[Document]:
        return self._call("bm25_retrieval", query=query, filters=filters, top_k=top_k, scale_score=scale_score)

    def embedding_retrieval(
        self,
        query_embedding: Sequence[float],
        top_k: int,
        filters: dict[str, Any] | None,
        scale_score: bool = False,
        return_embedding: bool = False,
    ) -> list[Document]:
        embedding = [float(x) for x in query_embedding]
        return self._call(
            "embedding_retrieval",
            query_embedding=embedding,
            filters=filters,
            top_k=top_k,
            scale_score=scale_score,
            return_embedding=return_embedding,
        )

    async def bm25_retrieval_async(
        self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool = False
    ) -> list[Document]:
        return await self._call_async(
            "bm25_retrieval", query=query, filters=filters, top_k=top_k, scale_score=scale_score
        )

    async def embedding_retrieval_async(
        self,
        query_embedding: Sequence[float],
        top_k: int,
        filters: dict[str, Any] | None,
        scale_score: bool = False,
        return_embedding: bool = False,
    ) -> list[Document]:
        embedding = [float(x) for x in query_embedding]
        return await self._call_async(
            "embedding_retrieval",
            query_embedding=embedding,
            filters=filters,
            top_k=top_k,
            scale_score=scale_score,
            return_embedding=return_embedding,
        )

    def _call(self, name: str, **arguments: Any) -> list[Document]:
        method = getattr(self.store, name, None)
        if not callable(method):
            raise ValueError(f"document store {type(self.store).__name__} has no public {name} method")
        return method(**_accepted(method, arguments))

    async def _call_async(self, name: str, **arguments: Any) -> list[Document]:
        method = async_method(self.store, name)
        if method is None:
            return await asyncio.to_thread(self._call, name, **arguments)
        return await method(**_accepted(method, arguments))


_OPTIONAL_ARGUMENTS = ("scale_score", "return_embedding")


def _accepted(method: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` without the optional ones ``method`` does not take."""
    return {k: v for k, v in arguments.items() if k not in _OPTIONAL_ARGUMENTS or _accepts(method, k)}


def _accepts(method: Any, parameter: str) -> bool:
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
    return parameter in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def is_embedded_store(store: Any) -> bool:
    """Whether ``store`` is an ``EmbeddedDocumentStore``, without importing the store (and FAISS) when
    no such store was ever built: then ``store`` cannot be one."""
    module = sys.modules.get(EMBEDDED_STORE_MODULE)
    return module is not None and isinstance(store, module.EmbeddedDocumentStore)


class MissingStoreError(DocumentStoreError):
    """A search pipeline names an embedded store folder that holds no store."""


def check_store_is_built(store: Any) -> None:
    """A search over an embedded store folder that was never indexed is an error, not an empty answer
    (a mistyped path would otherwise look like a corpus with no match); an existing store without
    documents is only warned about."""
    if not is_embedded_store(store):
        return
    if store.path is not None and not store.exists():
        raise MissingStoreError(
            f"no document store at {str(store.path)!r}: index a corpus there first, e.g. "
            f"haystack run index --input path=corpus.jsonl --store {store.path}"
        )
    if store.count_documents() == 0:
        logger.warning(
            "document store {store} is empty: index a corpus first, e.g. haystack run index --input path=corpus.jsonl --store DIR",
            store=store.path or "(in memory)",
        )


def search_backend(store: Any, required: Sequence[str] = ()) -> SearchBackend:
    """The search interface of a document store, chosen by what the store offers.

    :param required: methods the caller needs (``bm25_retrieval``, ``embedding_retrieval``,
        ``score_documents``); without any, the store must offer at least one retrieval method.
    :raises ValueError: naming the store class and what it lacks.
    """
    backend: SearchBackend
    if is_embedded_store(store):
        backend = EmbeddedSearch(store)
    elif type(store).__name__ == "ElasticsearchDocumentStore":
        similarity = getattr(store, "_embedding_similarity_function", "dot_product")
        backend = ElasticsearchSearch(store, "l2" if similarity == "l2_norm" else "dot_product")
    else:
        offered = [name for name in RETRIEVAL_METHODS if callable(getattr(store, name, None))]
        if not offered:
            raise ValueError(
                f"document store {type(store).__name__} cannot be searched: it has neither a public "
                "bm25_retrieval nor an embedding_retrieval method"
            )
        backend = PublicMethodsSearch(store)
        missing = [name for name in required if name in RETRIEVAL_METHODS and name not in offered]
        if missing:
            raise ValueError(f"document store {type(store).__name__} has no public {' or '.join(missing)} method")
    if "score_documents" in required and not hasattr(backend, "score_documents"):
        raise ValueError(
            f"document store {type(store).__name__} cannot score given documents exactly (BM25 and dense "
            "score of each document of the union), which HybridRanker mode 'dpr' needs: use mode 'rrf'"
        )
    return backend
