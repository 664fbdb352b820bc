"""DPR retrieval: encodes the question with E_Q and searches the passage vectors by inner product."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, NamedTuple

from haystack import Document, component
from haystack.document_stores.types import FilterPolicy
from haystack.utils import ComponentDevice

from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.encoders.encoder_settings import Pooling, Precision
from dpr_components.encoders.pairing import (
    META_FIELD,
    check_pairing,
    expected_passage_digest,
)
from dpr_components.retrievers.question_retrievers import question_retriever_dict
from dpr_components.store_access.filter_settings import effective_filters
from dpr_components.store_access.search_backend import VectorSearch
from dpr_components.store_access.serialization import from_dict_with_store
from dpr_components.store_access.store_retriever import StoreRetriever
from dpr_components.utils.devices import cpu_only_device
from dpr_components.utils.validation import check_positive_int, check_query
from dpr_components.utils.worker_threads import async_twin
from haystack_integrations.components.embedders.dpr.question_embedder import QuestionEmbedder


class _Search(NamedTuple):
    """A validated request: the question (None when its embedding is given) and search settings."""

    query: str | None
    query_embedding: list[float] | None
    top_k: int
    filters: dict[str, Any] | None
    scale_score: bool
    return_embedding: bool

    def vector_search(self, query_embedding: list[float]) -> VectorSearch:
        """The store search for ``query_embedding`` with these settings."""
        return VectorSearch(query_embedding, self.top_k, self.filters, self.scale_score, self.return_embedding)


@component
class DenseRetriever(StoreRetriever):
    """DPR retrieval: encodes the question with E_Q and searches the passage vectors by inner product.

    Takes question text (``query``) or a ready ``query_embedding``; also returns the embedding so
    a ``HybridRanker`` can score documents that only BM25 found. Works with ``EmbeddedDocumentStore``,
    ``ElasticsearchDocumentStore``, Haystack's ``InMemoryDocumentStore`` and any store with a public
    ``embedding_retrieval(query_embedding, filters, top_k)``.

    :param filter_policy: ``replace`` (runtime filters replace the init ones) or ``merge`` (both apply).
    :param scale_score: passed to stores that scale scores (InMemoryDocumentStore); ours and
        Elasticsearch return raw similarities.
    :param return_embedding: whether the returned documents carry their vectors (as Haystack's
        embedding retrievers; off by default, which keeps results small).
    :param device: Haystack's ``ComponentDevice`` for the question encoder; only the CPU (the default) is accepted.

    Usage example:
    ```python
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack_integrations.components.embedders.dpr import PassageEmbedder
    from haystack_integrations.components.retrievers.dpr import DenseRetriever

    store = InMemoryDocumentStore(embedding_similarity_function="dot_product")
    embedder = PassageEmbedder(model="bundled:all-MiniLM-L6-v2")
    embedder.warm_up()
    documents = [Document(content="Hamlet is a tragedy written by William Shakespeare.")]
    store.write_documents(embedder.run(documents=documents)["documents"])
    retriever = DenseRetriever(document_store=store, model="bundled:dpr-minilm-multi/question_encoder")
    retriever.warm_up()
    found = retriever.run(query="who wrote hamlet?")["documents"]
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any,
        model: str = BUNDLED_MINILM,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        pooling: Pooling = "auto",
        normalize: bool | None = None,
        max_length: int | None = None,
        precision: Precision = "auto",
        filter_policy: FilterPolicy | str = FilterPolicy.REPLACE,
        scale_score: bool = False,
        return_embedding: bool = False,
        device: ComponentDevice | None = None,
    ) -> None:
        self.return_embedding = bool(return_embedding)
        self._init_search(document_store, "embedding_retrieval", top_k, filters, filter_policy, scale_score)
        self.embedder = QuestionEmbedder(
            model=model,
            pooling=pooling,
            normalize=normalize,
            max_length=max_length,
            precision=precision,
            device=cpu_only_device("DenseRetriever", device),
        )

    def warm_up(self) -> None:
        self._check_store_once()
        self.embedder.warm_up()
        self.check_store_pairing()

    def to_dict(self) -> dict[str, Any]:
        return question_retriever_dict(self, self.embedder, "top_k filters scale_score return_embedding")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DenseRetriever:
        return from_dict_with_store(cls, data)

    @component.output_types(documents=list[Document], query_embedding=list[float])
    def run(
        self,
        query: str | None = None,
        query_embedding: list[float] | None = None,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        scale_score: bool | None = None,
        return_embedding: bool | None = None,
    ) -> dict[str, Any]:
        """Encode the question with E_Q and search the store's passage vectors.

        :param query: the question text; not needed (and not read) when ``query_embedding`` is given.
        :param query_embedding: a ready question vector, searched as is.
        :param top_k: documents returned; ``None`` keeps the init value.
        :param filters: filters on the documents, combined with the init filters by ``filter_policy``.
        :param scale_score: ``None`` keeps the init value.
        :param return_embedding: ``None`` keeps the init value.
        :returns: ``documents``: the best ``top_k`` documents with their similarity scores;
            ``query_embedding``: the question vector searched with.
        :raises ValueError: when neither ``query`` nor ``query_embedding`` is given, ``query`` is not
            text, has no visible character or is too long, ``top_k`` is not a positive integer, or the
            store's passages were embedded by a passage encoder not paired with this question encoder.
        """
        search = self._prepare(query, query_embedding, top_k, filters, scale_score, return_embedding)
        store_checked = self.check_store_pairing()
        embedding = search.query_embedding
        if embedding is None:
            embedding = self.embedder.run(query=search.query)["embedding"]
        documents = self._backend.embedding_retrieval(search.vector_search(embedding))
        return self._finish(documents, embedding, store_checked, search.return_embedding)

    def _prepare(
        self,
        query: str | None,
        query_embedding: list[float] | None,
        top_k: int | None,
        filters: dict[str, Any] | None,
        scale_score: bool | None,
        return_embedding: bool | None,
    ) -> _Search:
        top_k = check_positive_int("top_k", self.top_k if top_k is None else top_k)
        if query_embedding is None:
            if query is None:
                raise ValueError("DenseRetriever needs a query or a query_embedding")
            query = check_query(query)
        return _Search(
            query,
            query_embedding,
            top_k,
            effective_filters(self.filter_policy, self.filters, filters),
            self.scale_score if scale_score is None else scale_score,
            self.return_embedding if return_embedding is None else bool(return_embedding),
        )

    async def _search_async(self, search: _Search) -> dict[str, Any]:
        """The question is encoded in a worker thread and the store searched through its async API (or in
        a worker thread), so the event loop is never blocked."""
        store_checked = await asyncio.to_thread(self.check_store_pairing)  # reads the store, hashes weights once
        embedding = search.query_embedding
        if embedding is None:
            embedding = (await self.embedder.run_async(query=search.query))["embedding"]
        documents = await self._backend.embedding_retrieval_async(search.vector_search(embedding))
        return self._finish(documents, embedding, store_checked, search.return_embedding)

    run_async = async_twin(run, _prepare, _search_async)

    def _finish(
        self, documents: list[Document], query_embedding: list[float], store_checked: bool, return_embedding: bool
    ) -> dict[str, Any]:
        if not store_checked:
            # A store that does not record its passage encoder: check the stamps of what was found.
            recorded = {d.meta[META_FIELD] for d in documents if isinstance(d.meta.get(META_FIELD), str)}
            if recorded:
                check_pairing(self.embedder.model, self._expected_passage_digest(), recorded)
        if not return_embedding:  # stores that always send vectors back (Elasticsearch) included
            documents = [dataclasses.replace(d, embedding=None) if d.embedding is not None else d for d in documents]
        return {"documents": documents, "query_embedding": list(query_embedding)}

    def _expected_passage_digest(self) -> str | None:
        """Digest of the passage encoder paired with this question encoder (computed once); raises
        when the model is a passage encoder."""
        if not hasattr(self, "_passage_digest"):
            self._passage_digest = expected_passage_digest(self.embedder.model)
        return self._passage_digest

    def check_store_pairing(self) -> bool:
        """Compare the passage encoder the store records with this question encoder's partner.

        Checked once per recorded value, so a store re-indexed meanwhile is checked again.
        Returns False when the store records none (then the returned documents are checked)."""
        expected = self._expected_passage_digest()
        recorded = getattr(self.document_store, "passage_encoder", None)
        if not isinstance(recorded, str):
            return False
        if recorded != getattr(self, "_checked_store_encoder", None):
            check_pairing(self.embedder.model, expected, {recorded})
            self._checked_store_encoder = recorded
        return True
