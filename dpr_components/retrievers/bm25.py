"""BM25Retriever: BM25 over any store that offers it (ours, Elasticsearch, Haystack's InMemoryDocumentStore, ...)."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_to_dict
from haystack.document_stores.types import FilterPolicy

from dpr_components.legacy.type_paths import from_dict_any_path
from dpr_components.store_access.filter_settings import (
    effective_filters,
    parse_filter_policy,
)
from dpr_components.store_access.search_backend import search_backend, warn_if_empty
from dpr_components.store_access.serialization import store_from_dict, store_to_dict
from dpr_components.utils.validation import check_positive_int, check_query


@component
class BM25Retriever:
    """Ranks documents by BM25 in any document store with BM25 retrieval: ``EmbeddedDocumentStore``
    (Lucene-style), ``ElasticsearchDocumentStore``, Haystack's ``InMemoryDocumentStore`` or any
    store with a public ``bm25_retrieval(query, filters, top_k)``.

    :param filter_policy: ``replace`` (runtime filters replace the init ones) or ``merge`` (both apply).
    :param scale_score: passed to stores that scale scores (InMemoryDocumentStore); ours and
        Elasticsearch return raw BM25 scores.

    Usage example:
    ```python
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack import Document
    from dpr_components.retrievers import BM25Retriever

    store = InMemoryDocumentStore()
    store.write_documents([Document(content="Paris is the capital of France.")])
    retriever = BM25Retriever(document_store=store, top_k=5)
    documents = retriever.run(query="capital of France")["documents"]
    ```
    """

    def __init__(
        self,
        document_store: Any,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        filter_policy: FilterPolicy | str = FilterPolicy.REPLACE,
        scale_score: bool = False,
    ) -> None:
        self.document_store = document_store
        self.top_k = check_positive_int("top_k", top_k)
        self.filters = filters
        self.filter_policy = parse_filter_policy(filter_policy)
        self.scale_score = bool(scale_score)
        self._backend = search_backend(document_store, required=("bm25_retrieval",))
        self._warmed_up = False

    def warm_up(self) -> None:
        if not self._warmed_up:
            warn_if_empty(self.document_store)
            self._warmed_up = True

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, document_store=store_to_dict(self.document_store), top_k=self.top_k, filters=self.filters,
            filter_policy=self.filter_policy.value, scale_score=self.scale_score,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BM25Retriever:
        data["init_parameters"]["document_store"] = store_from_dict(data["init_parameters"]["document_store"])
        return from_dict_any_path(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        scale_score: bool | None = None,
    ) -> dict[str, Any]:
        return {"documents": self._backend.bm25_retrieval(*self._prepare(query, top_k, filters, scale_score))}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        scale_score: bool | None = None,
    ) -> dict[str, Any]:
        """As :meth:`run`, through the store's async API (or a worker thread)."""
        return {"documents": await self._backend.bm25_retrieval_async(*self._prepare(query, top_k, filters, scale_score))}

    def _prepare(
        self, query: str, top_k: int | None, filters: dict[str, Any] | None, scale_score: bool | None
    ) -> tuple[str, int, dict[str, Any] | None, bool]:
        """The search backend's arguments: query, top_k, filters, scale_score."""
        top_k = check_positive_int("top_k", self.top_k if top_k is None else top_k)
        return (
            check_query(query), top_k, effective_filters(self.filter_policy, self.filters, filters),
            self.scale_score if scale_score is None else scale_score,
        )
