"""BM25Retriever: Lucene-style BM25 over the embedded store or Elasticsearch."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_to_dict

from dpr_components.document_stores.search_backend import search_backend, warn_if_empty
from dpr_components.legacy_paths import from_dict_any_path
from dpr_components.retrievers.store_serialization import store_from_dict, store_to_dict
from dpr_components.validation import check_positive_int, check_query


@component
class BM25Retriever:
    """Ranks documents by BM25 (Lucene-style) in an ``EmbeddedDocumentStore`` or ``ElasticsearchDocumentStore``."""

    def __init__(self, document_store: Any, top_k: int = 10, filters: dict[str, Any] | None = None) -> None:
        self.document_store = document_store
        self.top_k = check_positive_int("top_k", top_k)
        self.filters = filters
        self._backend = search_backend(document_store)
        self._warmed_up = False

    def warm_up(self) -> None:
        if not self._warmed_up:
            warn_if_empty(self.document_store)
            self._warmed_up = True

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=store_to_dict(self.document_store), top_k=self.top_k, filters=self.filters)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BM25Retriever:
        data["init_parameters"]["document_store"] = store_from_dict(data["init_parameters"]["document_store"])
        return from_dict_any_path(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None) -> dict[str, Any]:
        top_k = check_positive_int("top_k", self.top_k if top_k is None else top_k)
        documents = self._backend.bm25_retrieval(check_query(query), top_k, filters or self.filters)
        return {"documents": documents}
