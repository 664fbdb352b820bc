"""HybridRetriever: the DPR paper's exact hybrid (BM25 + λ·sim over the union of both top-N lists) as one retriever."""

from __future__ import annotations

from typing import Any, NamedTuple

from haystack import Document, component
from haystack.document_stores.types import FilterPolicy
from haystack.utils import ComponentDevice

from dpr_components.embedders.encoder_component import QUERY_ENCODER_SETTINGS
from dpr_components.encoders.bundled import BUNDLED_MINILM
from dpr_components.encoders.encoder_settings import Pooling, Precision
from dpr_components.hybrid_fusion import ScoredUnion
from dpr_components.rankers.hybrid_fit import union_from_lists
from dpr_components.retrievers.question_retrievers import question_retriever_dict
from dpr_components.store_access.filter_settings import (
    effective_filters,
    parse_filter_policy,
)
from dpr_components.store_access.search_backend import runs_hybrid_itself
from dpr_components.store_access.serialization import from_dict_with_store
from dpr_components.utils.devices import cpu_only_device
from dpr_components.utils.init_parameters import named_values
from dpr_components.utils.validation import (
    check_finite,
    check_positive_int,
    check_query,
)
from dpr_components.utils.worker_threads import in_worker_thread
from haystack_integrations.components.rankers.dpr.hybrid_ranker import HybridRanker
from haystack_integrations.components.retrievers.dpr.bm25_retriever import BM25Retriever
from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever


class _Request(NamedTuple):
    query: str
    query_embedding: list[float] | None
    top_k: int
    weight: float
    filters: dict[str, Any] | None


@component
class HybridRetriever:
    """BM25 and DPR retrieval fused as in the paper (Karpukhin et al. 2020, section 5.1): the union
    of both top-``candidates`` lists, every member scored ``BM25(q, p) + weight · sim(q, p)``
    exactly, best ``top_k`` returned with ``meta["bm25_score"]`` and ``meta["dense_score"]``.

    It ranks exactly as ``BM25Retriever`` + ``DenseRetriever`` → ``HybridRanker`` (mode ``dpr``)
    with ``top_k=candidates`` on both retrievers. On ``EmbeddedDocumentStore`` the whole fusion runs
    inside the store on arrays, and only the final ``top_k`` become Documents: thousands of
    Documents passed between pipeline components cost far more than the searches (see
    docs/benchmarks/retrieval/hybrid_speed.md). On other stores that score given documents
    (``ElasticsearchDocumentStore``) it runs the two retrievers and the ranker itself; stores that
    cannot score given documents are refused (use ``HybridRanker`` mode ``rrf``).

    :param model: the question encoder E_Q (paired with the store's passage encoder).
    :param candidates: N of each top-N list (``pipelines/search.yml`` uses 2,000).
    :param weight: λ; fit it on dev questions with ``haystack fit-lambda``.
    :param device: Haystack's ``ComponentDevice`` for the question encoder; only the CPU (the default) is accepted.

    Usage example:
    ```python
    from haystack_integrations.document_stores.dpr import EmbeddedDocumentStore
    from haystack_integrations.components.retrievers.dpr import HybridRetriever

    retriever = HybridRetriever(
        EmbeddedDocumentStore(path="indexes/example"), model="bundled:dpr-minilm-multi/question_encoder", weight=31.6
    )
    retriever.warm_up()
    documents = retriever.run(query="who wrote hamlet?")["documents"]
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any,
        model: str = BUNDLED_MINILM,
        candidates: int = 2000,
        weight: float = 1.1,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        filter_policy: FilterPolicy | str = FilterPolicy.REPLACE,
        pooling: Pooling = "auto",
        normalize: bool | None = None,
        max_length: int | None = None,
        precision: Precision = "auto",
        device: ComponentDevice | None = None,
    ) -> None:
        self.document_store = document_store
        self.candidates = check_positive_int("candidates", candidates)
        self.weight = check_finite("weight", weight)
        self.top_k = check_positive_int("top_k", top_k)
        self.filters = filters
        self.filter_policy = parse_filter_policy(filter_policy)
        # The dense side (question encoding, pairing checks, the store's vector search) is a DenseRetriever.
        self.dense = DenseRetriever(
            document_store=document_store,
            top_k=candidates,
            device=cpu_only_device("HybridRetriever", device),
            **named_values(locals(), QUERY_ENCODER_SETTINGS),
        )
        self._in_store = runs_hybrid_itself(document_store)
        if not self._in_store:  # the paper's hybrid from public retrieval and scoring methods
            self.bm25 = BM25Retriever(document_store=document_store, top_k=candidates)
            self.ranker = HybridRanker(document_store=document_store, mode="dpr", weight=weight, top_k=top_k)

    def warm_up(self) -> None:
        self.dense.warm_up()

    def to_dict(self) -> dict[str, Any]:
        return question_retriever_dict(self, self.dense.embedder, "candidates weight top_k filters")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HybridRetriever:
        return from_dict_with_store(cls, data)

    @component.output_types(documents=list[Document], query_embedding=list[float])
    def run(
        self,
        query: str,
        query_embedding: list[float] | None = None,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        weight: float | None = None,
    ) -> dict[str, Any]:
        """Search by BM25 and DPR and rank the union of both lists by ``BM25 + weight · sim``.

        :param query: the question text (BM25 needs it even when ``query_embedding`` is given).
        :param query_embedding: a ready question vector; ``None`` encodes ``query`` with E_Q.
        :param top_k: documents returned; ``None`` keeps the init value.
        :param filters: filters on the documents, combined with the init filters by ``filter_policy``.
        :param weight: λ; ``None`` keeps the init value.
        :returns: ``documents``: the best ``top_k`` documents, scored by the fused score, with
            ``meta["bm25_score"]`` and ``meta["dense_score"]``; ``query_embedding``: the question vector.
        :raises ValueError: when ``query`` is not text, has no visible character or is too long,
            ``top_k`` is not a positive integer, ``weight`` is not a finite number, or the store's
            passages were embedded by a passage encoder not paired with this question encoder.
        """
        request = self._prepare(query, query_embedding, top_k, filters, weight)
        embedding = request.query_embedding or self.dense.embedder.run(query=request.query)["embedding"]
        if self._in_store:
            self.dense.check_store_pairing()
            documents = self.document_store.hybrid_search(
                request.query, embedding, request.weight, request.top_k, self.candidates, request.filters
            )
            return {"documents": documents, "query_embedding": embedding}
        dense = self.dense.run(query_embedding=embedding, filters=request.filters)["documents"]
        bm25 = self.bm25.run(query=request.query, filters=request.filters)["documents"]
        fused = self.ranker.run(
            bm25_documents=bm25,
            dense_documents=dense,
            query=request.query,
            query_embedding=embedding,
            top_k=request.top_k,
            weight=request.weight,
        )
        return {"documents": fused["documents"], "query_embedding": embedding}

    # Encoding and array work, no I/O to await: the whole run goes to a worker thread.
    run_async = in_worker_thread(run)

    def search_batch(
        self,
        queries: list[str],
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        weight: float | None = None,
        batch_size: int = 64,
    ) -> list[list[Document]]:
        """Many questions at once (evaluation): on our store one dense search and one document read per
        ``batch_size`` questions; the same documents as :meth:`run` question by question (FAISS's
        batched rounding could only move a list's last candidates, whose fused scores are exact)."""
        check_positive_int("batch_size", batch_size)
        settings = self._prepare(queries[0] if queries else "-", None, top_k, filters, weight)
        results: list[list[Document]] = []
        for start in range(0, len(queries), batch_size):
            chunk = queries[start : start + batch_size]
            # One question at a time: a padded batch gives slightly different vectors, and so rankings
            # that differ from run()'s; the batch gain is in the search (one FAISS call, one SQL read).
            embeddings = [self.dense.embedder.run(query=q)["embedding"] for q in chunk]
            if self._in_store:
                self.dense.check_store_pairing()
                results += self.document_store.hybrid_search_batch(
                    chunk, embeddings, settings.weight, settings.top_k, self.candidates, settings.filters
                )
            else:
                results += [
                    self.run(query=q, query_embedding=e, top_k=top_k, filters=filters, weight=weight)["documents"]
                    for q, e in zip(chunk, embeddings, strict=True)
                ]
        return results

    def union_scores(self, query: str, filters: dict[str, Any] | None = None) -> ScoredUnion:
        """The union this retriever fuses, with exact BM25 and dense scores (``haystack fit-lambda``)."""
        request = self._prepare(query, None, None, filters, None)
        embedding = self.dense.embedder.run(query=request.query)["embedding"]
        if self._in_store:
            return self.document_store.hybrid_union(request.query, embedding, self.candidates, request.filters)
        dense = self.dense.run(query_embedding=embedding, filters=request.filters)["documents"]
        bm25 = self.bm25.run(query=request.query, filters=request.filters)["documents"]
        return union_from_lists(self.ranker.scoring_backend, request.query, embedding, bm25, dense)

    def _prepare(
        self,
        query: str,
        query_embedding: list[float] | None,
        top_k: int | None,
        filters: dict[str, Any] | None,
        weight: float | None,
    ) -> _Request:
        return _Request(
            check_query(query),
            list(query_embedding) if query_embedding is not None else None,
            check_positive_int("top_k", self.top_k if top_k is None else top_k),
            self.weight if weight is None else check_finite("weight", weight),
            effective_filters(self.filter_policy, self.filters, filters),
        )
