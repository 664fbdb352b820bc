"""``*_async`` twins of the EmbeddedDocumentStore methods, for async Haystack pipelines.

Each one runs its synchronous method in a worker thread (``asyncio.to_thread``), so the event
loop never waits on SQLite, FAISS or BM25. That is safe: the store's SQLite connection and its
indexes are guarded by locks, and a worker thread sees the same store as the caller."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

if TYPE_CHECKING:
    import numpy as np


class AsyncStoreMethods:
    """Mixed into :class:`EmbeddedDocumentStore`: the async API, one method per sync method."""

    if TYPE_CHECKING:
        # The sync methods called below are the store's; the mixin does not import the store (no cycle).
        def __getattr__(self, name: str) -> Any: ...

    async def count_documents_async(self) -> int:
        return await asyncio.to_thread(self.count_documents)

    async def filter_documents_async(self, filters: dict[str, Any] | None = None) -> list[Document]:
        return await asyncio.to_thread(self.filter_documents, filters)

    async def write_documents_async(
        self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        return await asyncio.to_thread(self.write_documents, documents, policy)

    async def delete_documents_async(self, document_ids: list[str]) -> None:
        await asyncio.to_thread(self.delete_documents, document_ids)

    async def delete_all_documents_async(self, recreate_index: bool = False) -> None:
        await asyncio.to_thread(self.delete_all_documents, recreate_index)

    async def delete_by_filter_async(self, filters: dict[str, Any]) -> int:
        return await asyncio.to_thread(self.delete_by_filter, filters)

    async def update_by_filter_async(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        return await asyncio.to_thread(self.update_by_filter, filters, meta)

    async def count_documents_by_filter_async(self, filters: dict[str, Any]) -> int:
        return await asyncio.to_thread(self.count_documents_by_filter, filters)

    async def count_unique_metadata_by_filter_async(
        self, filters: dict[str, Any], metadata_fields: list[str]
    ) -> dict[str, int]:
        return await asyncio.to_thread(self.count_unique_metadata_by_filter, filters, metadata_fields)

    async def get_metadata_fields_info_async(self) -> dict[str, dict[str, str]]:
        return await asyncio.to_thread(self.get_metadata_fields_info)

    async def get_metadata_field_min_max_async(self, metadata_field: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.get_metadata_field_min_max, metadata_field)

    async def get_metadata_field_unique_values_async(
        self,
        metadata_field: str,
        search_term: str | None = None,
        from_: int = 0,
        size: int = 10,
        filters: dict[str, Any] | None = None,
    ) -> tuple[list[Any], int]:
        return await asyncio.to_thread(self.get_metadata_field_unique_values, metadata_field, search_term, from_, size, filters)

    async def get_documents_by_id_async(self, document_ids: Sequence[str]) -> list[Document]:
        return await asyncio.to_thread(self.get_documents_by_id, document_ids)

    async def embedding_retrieval_async(
        self,
        query_embedding: Sequence[float] | np.ndarray,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
    ) -> list[Document]:
        return await asyncio.to_thread(self.embedding_retrieval, query_embedding, top_k, filters, return_embedding)

    async def bm25_retrieval_async(
        self, query: str, top_k: int = 10, filters: dict[str, Any] | None = None
    ) -> list[Document]:
        return await asyncio.to_thread(self.bm25_retrieval, query, top_k, filters)

    async def score_documents_async(
        self,
        document_ids: Sequence[str],
        query: str | None = None,
        query_embedding: Sequence[float] | None = None,
    ) -> dict[str, tuple[float | None, float | None]]:
        return await asyncio.to_thread(self.score_documents, document_ids, query, query_embedding)

    async def save_async(self) -> None:
        await asyncio.to_thread(self.save)
