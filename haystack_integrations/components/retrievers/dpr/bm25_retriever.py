"""BM25Retriever: BM25 over any store that offers it (ours, Elasticsearch, Haystack's InMemoryDocumentStore, ...)."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_to_dict
from haystack.document_stores.types import FilterPolicy

from dpr_components.store_access.filter_settings import effective_filters
from dpr_components.store_access.serialization import from_dict_with_store, store_to_dict
from dpr_components.store_access.store_retriever import StoreRetriever
from dpr_components.utils.validation import check_positive_int, check_query
from dpr_components.utils.worker_threads import async_twin

# The search backend's bm25_retrieval arguments: query, top_k, filters, scale_score.
_Arguments = tuple[str, int, dict[str, Any] | None, bool]


@component
class BM25Retriever(StoreRetriever):
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
    from haystack_integrations.components.retrievers.dpr import BM25Retriever

    store = InMemoryDocumentStore()
    store.write_documents([Document(content="Paris is the capital of France.")])
    retriever = BM25Retriever(document_store=store, top_k=5)
    documents = retriever.run(query="capital of France")["documents"]
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        filter_policy: FilterPolicy | str = FilterPolicy.REPLACE,
        scale_score: bool = False,
    ) -> None:
        self._init_search(document_store, "bm25_retrieval", top_k, filters, filter_policy, scale_score)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            document_store=store_to_dict(self.document_store),
            top_k=self.top_k,
            filters=self.filters,
            filter_policy=self.filter_policy.value,
            scale_score=self.scale_score,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BM25Retriever:
        return from_dict_with_store(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        scale_score: bool | None = None,
    ) -> dict[str, Any]:
        """Search the store by BM25.

        :param query: the search text.
        :param top_k: documents returned; ``None`` keeps the init value.
        :param filters: filters on the documents, combined with the init filters by ``filter_policy``.
        :param scale_score: ``None`` keeps the init value.
        :returns: ``documents``: the best ``top_k`` documents with their BM25 scores.
        :raises ValueError: when ``query`` is not text, has no visible character or is too long, or
            ``top_k`` is not a positive integer.
        """
        return {"documents": self._backend.bm25_retrieval(*self._prepare(query, top_k, filters, scale_score))}

    def _prepare(
        self, query: str, top_k: int | None, filters: dict[str, Any] | None, scale_score: bool | None
    ) -> _Arguments:
        """The search backend's arguments: query, top_k, filters, scale_score."""
        top_k = check_positive_int("top_k", self.top_k if top_k is None else top_k)
        return (
            check_query(query),
            top_k,
            effective_filters(self.filter_policy, self.filters, filters),
            self.scale_score if scale_score is None else scale_score,
        )

    async def _search_async(self, arguments: _Arguments) -> dict[str, Any]:
        """The search goes through the store's async API (or a worker thread)."""
        return {"documents": await self._backend.bm25_retrieval_async(*arguments)}

    run_async = async_twin(run, _prepare, _search_async)
