"""One search interface over any document store, so retrievers and the hybrid ranker work with
our embedded store, Elasticsearch, Haystack's ``InMemoryDocumentStore`` or any store exposing
public ``bm25_retrieval`` / ``embedding_retrieval`` methods.

Every method has an ``*_async`` twin for async pipelines: it awaits the store's own async
method where the store has one, and otherwise runs the synchronous call in a worker thread."""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from haystack import Document, logging
from haystack.document_stores.errors import DocumentStoreError

from dpr_components.hybrid_fusion import Scores
from dpr_components.store_access.async_calls import async_method

if TYPE_CHECKING:
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

EMBEDDED_STORE_MODULE = "haystack_integrations.document_stores.dpr.document_store"

logger = logging.getLogger(__name__)

RETRIEVAL_METHODS = ("bm25_retrieval", "embedding_retrieval")


class StoreCall(NamedTuple):
    """One call of a document store method: its name and its arguments by name."""

    method: str
    arguments: dict[str, Any]


class VectorSearch(NamedTuple):
    """The arguments of one embedding retrieval."""

    query_embedding: Sequence[float]
    top_k: int
    filters: dict[str, Any] | None
    scale_score: bool
    return_embedding: bool


class SearchBackend:
    """The search interface of one kind of store. Each search is one call of a store method, which a
    subclass names with its arguments (``_bm25_call``, ``_embedding_call``); the sync methods make the
    call, their ``*_async`` twins await the store's ``<method>_async`` when it has one and otherwise
    run the sync call in a worker thread. Optional arguments (``scale_score``, ``return_embedding``)
    reach only a store method that accepts them."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def _bm25_call(self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool) -> StoreCall:
        raise NotImplementedError

    def _embedding_call(self, search: VectorSearch) -> StoreCall:
        raise NotImplementedError

    def bm25_retrieval(
        self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool = False
    ) -> list[Document]:
        return self._call(self._bm25_call(query, top_k, filters, scale_score))

    def embedding_retrieval(self, search: VectorSearch) -> list[Document]:
        return self._call(self._embedding_call(search))

    async def bm25_retrieval_async(
        self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool = False
    ) -> list[Document]:
        return await self._call_async(self._bm25_call(query, top_k, filters, scale_score))

    async def embedding_retrieval_async(self, search: VectorSearch) -> list[Document]:
        return await self._call_async(self._embedding_call(search))

    def _call(self, call: StoreCall) -> list[Document]:
        method = getattr(self.store, call.method, None)
        if not callable(method):
            raise ValueError(f"document store {type(self.store).__name__} has no public {call.method} method")
        return method(**_accepted(method, call.arguments))

    async def _call_async(self, call: StoreCall) -> list[Document]:
        method = async_method(self.store, call.method)
        if method is None:
            return await asyncio.to_thread(self._call, call)
        return await method(**_accepted(method, call.arguments))


class ScoringSearchBackend(SearchBackend):
    """A backend that also scores given documents exactly (what HybridRanker mode ``dpr`` needs)."""

    def score_documents(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> Scores:
        raise NotImplementedError

    async def score_documents_async(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> Scores:
        return await asyncio.to_thread(self.score_documents, document_ids, query, query_embedding)


class EmbeddedSearch(ScoringSearchBackend):
    """Adapter for ``EmbeddedDocumentStore``: its scores are raw (BM25, dot product, cosine or
    negative squared L2), so ``scale_score`` is ignored."""

    store: EmbeddedDocumentStore

    # scale_score is ignored (the class docstring)
    def _bm25_call(self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool) -> StoreCall:  # noqa: ARG002
        return StoreCall("bm25_retrieval", {"query": query, "top_k": top_k, "filters": filters})

    def _embedding_call(self, search: VectorSearch) -> StoreCall:
        return StoreCall("embedding_retrieval", search._asdict())

    def score_documents(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> Scores:
        return self.store.score_documents(document_ids, query, query_embedding)

    async def score_documents_async(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> Scores:
        return await self.store.score_documents_async(document_ids, query, query_embedding)


ES_MAX_KNN_CANDIDATES = 10_000


class ElasticsearchSearch(ScoringSearchBackend):
    """Adapter for ``ElasticsearchDocumentStore`` (elasticsearch-haystack).

    BM25 runs without fuzziness (plain BM25, as in the paper); dense scores for the hybrid are
    recomputed from the stored vectors because Elasticsearch rescales kNN scores; ``scale_score``
    is ignored. Elasticsearch returns the stored vectors; DenseRetriever drops them unless asked."""

    def __init__(self, store: Any, similarity: str = "dot_product") -> None:
        super().__init__(store)
        self.similarity = similarity

    # scale_score is ignored (the class docstring)
    def _bm25_call(self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool) -> StoreCall:  # noqa: ARG002
        return StoreCall("_bm25_retrieval", {"query": query, "filters": filters, "fuzziness": "0", "top_k": top_k})

    def _embedding_call(self, search: VectorSearch) -> StoreCall:
        if search.top_k > ES_MAX_KNN_CANDIDATES:
            raise ValueError(
                f"Elasticsearch kNN returns at most {ES_MAX_KNN_CANDIDATES} documents, got top_k={search.top_k}"
            )
        # Elasticsearch caps num_candidates at 10,000; the store's default (10 x top_k) would exceed it.
        candidates = min(ES_MAX_KNN_CANDIDATES, search.top_k * 10)
        embedding = [float(x) for x in search.query_embedding]
        arguments = {"filters": search.filters, "top_k": search.top_k, "num_candidates": candidates}
        return StoreCall("_embedding_retrieval", {"query_embedding": embedding, **arguments})

    def score_documents(
        self, document_ids: Sequence[str], query: str | None, query_embedding: Sequence[float] | None
    ) -> Scores:
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


class PublicMethodsSearch(SearchBackend):
    """Adapter for a store with public ``bm25_retrieval(query, filters, top_k[, scale_score])``
    and/or ``embedding_retrieval(query_embedding, filters, top_k[, scale_score])``, as Haystack's
    ``InMemoryDocumentStore`` has. The async twins use the store's ``bm25_retrieval_async`` /
    ``embedding_retrieval_async`` when it has them. It offers no exact per-document scoring
    (``score_documents``)."""

    def _bm25_call(self, query: str, top_k: int, filters: dict[str, Any] | None, scale_score: bool) -> StoreCall:
        return StoreCall(
            "bm25_retrieval", {"query": query, "filters": filters, "top_k": top_k, "scale_score": scale_score}
        )

    def _embedding_call(self, search: VectorSearch) -> StoreCall:
        embedding = [float(x) for x in search.query_embedding]
        return StoreCall("embedding_retrieval", {**search._asdict(), "query_embedding": embedding})


_OPTIONAL_ARGUMENTS = ("scale_score", "return_embedding")


def _accepted(method: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` without the optional ones ``method`` does not take."""
    return {k: v for k, v in arguments.items() if k not in _OPTIONAL_ARGUMENTS or _accepts(method, k)}


def _accepts(method: Any, parameter: str) -> bool:
    # A bound method is a new object at each lookup; its function is not, so the signature is read once.
    function = getattr(method, "__func__", method)
    try:
        return _function_accepts(function, parameter)
    except TypeError:  # an unhashable callable: read its signature each time
        return _function_accepts.__wrapped__(function, parameter)


@functools.lru_cache(maxsize=256)
def _function_accepts(function: Any, parameter: str) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return parameter in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def is_embedded_store(store: Any) -> bool:
    """Whether ``store`` is an ``EmbeddedDocumentStore``, without importing the store (and FAISS) when
    no such store was ever built: then ``store`` cannot be one."""
    module = sys.modules.get(EMBEDDED_STORE_MODULE)
    return module is not None and isinstance(store, module.EmbeddedDocumentStore)


def runs_hybrid_itself(store: Any) -> bool:
    """Whether ``store`` computes the paper's hybrid in one call (``hybrid_search``, ``hybrid_search_batch``,
    ``hybrid_union``: the embedded store, over its own arrays); any other store is fused from its public
    retrieval and scoring methods."""
    return is_embedded_store(store)


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
