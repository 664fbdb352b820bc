"""What the BM25 and dense retrievers share: the store they search, the search settings given at
init and the check, on warm-up, that the store was ever indexed."""

from __future__ import annotations

from typing import Any

from haystack.document_stores.types import FilterPolicy

from dpr_components.store_access.filter_settings import parse_filter_policy
from dpr_components.store_access.search_backend import check_store_is_built, search_backend
from dpr_components.utils.validation import check_positive_int


class StoreRetriever:
    """Base of the retriever components that search a store through one retrieval method."""

    def _init_search(
        self,
        document_store: Any,
        method: str,
        top_k: int,
        filters: dict[str, Any] | None,
        filter_policy: FilterPolicy | str,
        scale_score: bool,
    ) -> None:
        """Keep the validated init settings and the store's search interface, which must offer ``method``."""
        self.document_store = document_store
        self.top_k = check_positive_int("top_k", top_k)
        self.filters = filters
        self.filter_policy = parse_filter_policy(filter_policy)
        self.scale_score = bool(scale_score)
        self._backend = search_backend(document_store, required=(method,))
        self._warmed_up = False

    def warm_up(self) -> None:
        self._check_store_once()

    def _check_store_once(self) -> None:
        # Called by name, not through super(): @component rebuilds the class, so super() would not find it.
        if not self._warmed_up:
            check_store_is_built(self.document_store)
            self._warmed_up = True
