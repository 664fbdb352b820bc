"""Fuses ``bm25_documents`` and ``dense_documents`` into one ranking."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, cast

from haystack import Document, component, default_from_dict, default_to_dict

from dpr_components.hybrid_fusion import (
    FusionMode,
    Scores,
    fused_order,
    fused_scores,
    rrf_scores,
    scores_or_zero,
    union_by_id,
)
from dpr_components.store_access.search_backend import (
    ScoringSearchBackend,
    search_backend,
)
from dpr_components.store_access.serialization import store_from_dict, store_to_dict
from dpr_components.utils.validation import check_documents, check_finite, check_positive_int
from dpr_components.utils.worker_threads import async_twin


class _Fusion(NamedTuple):
    """A validated request: the union of both lists by id, and what mode ``dpr`` scores it with."""

    by_id: dict[str, Document]
    bm25_documents: list[Document]
    dense_documents: list[Document]
    query: str | None
    query_embedding: list[float] | None
    top_k: int
    weight: float
    needs_scores: bool  # mode dpr with documents to fuse: both scores of each are asked from the store


@component
class HybridRanker:
    """Fuses ``bm25_documents`` and ``dense_documents`` into one ranking.

    :param document_store: the store both retrievers searched; mode ``dpr`` scores the union through it.
        Mode ``rrf`` works with any store (or none).
    :param mode: ``dpr`` (BM25 + λ·sim over the union, exact) or ``rrf``.
    :param weight: λ of mode ``dpr``. The paper used 1.1 for its BERT encoders; the right value
        depends on the encoder's score scale, so fit it on dev questions (``haystack fit-lambda``).
    :param rrf_k: the constant of reciprocal rank fusion.
    :param top_k: documents returned.
    Each returned document carries ``meta["bm25_score"]`` and ``meta["dense_score"]``.

    Mode ``dpr`` needs a store that scores given documents exactly: ``EmbeddedDocumentStore`` and
    ``ElasticsearchDocumentStore``. Other stores (Haystack's ``InMemoryDocumentStore``, ...) can
    retrieve but cannot give the BM25 score of a document their BM25 search did not return, and
    BM25 recomputed over the union alone would use other collection statistics than the store's,
    mixing incomparable scores; so mode ``dpr`` refuses such a store with a ``ValueError`` and
    mode ``rrf`` is the fusion to use with it.

    Usage example:
    ```python
    from haystack import Pipeline
    from haystack_integrations.document_stores.dpr import EmbeddedDocumentStore
    from haystack_integrations.components.rankers.dpr import HybridRanker
    from haystack_integrations.components.retrievers.dpr import BM25Retriever, DenseRetriever

    store = EmbeddedDocumentStore(path="indexes/example")
    pipeline = Pipeline()
    pipeline.add_component("bm25", BM25Retriever(document_store=store, top_k=100))
    pipeline.add_component("dense", DenseRetriever(document_store=store, top_k=100))
    pipeline.add_component("hybrid", HybridRanker(document_store=store, mode="dpr", top_k=10))
    pipeline.connect("bm25.documents", "hybrid.bm25_documents")
    pipeline.connect("dense.documents", "hybrid.dense_documents")
    pipeline.connect("dense.query_embedding", "hybrid.query_embedding")
    question = "who wrote hamlet?"
    result = pipeline.run({"bm25": {"query": question}, "dense": {"query": question}, "hybrid": {"query": question}})
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any = None,
        mode: FusionMode = "dpr",
        weight: float = 1.1,
        rrf_k: int = 60,
        top_k: int = 10,
    ) -> None:
        if mode not in ("dpr", "rrf"):
            raise ValueError(f"mode must be 'dpr' or 'rrf', got {mode!r}")
        if mode == "dpr" and document_store is None:
            raise ValueError("mode 'dpr' needs the document_store to score documents found by one retriever only")
        check_positive_int("rrf_k", rrf_k)
        self.document_store = document_store
        self.mode = mode
        self.weight = check_finite("weight", weight)
        self.rrf_k = rrf_k
        self.top_k = check_positive_int("top_k", top_k)
        required = ("score_documents",) if mode == "dpr" else ()
        backend = search_backend(document_store, required=required) if document_store is not None else None
        # In mode "dpr" search_backend has checked that the backend scores documents.
        self._backend = cast(ScoringSearchBackend | None, backend)

    @property
    def scoring_backend(self) -> ScoringSearchBackend | None:
        """The store's search interface that scores given documents (mode ``dpr``), else None."""
        return self._backend if self.mode == "dpr" else None

    def to_dict(self) -> dict[str, Any]:
        store = store_to_dict(self.document_store) if self.document_store is not None else None
        return default_to_dict(
            self, document_store=store, mode=self.mode, weight=self.weight, rrf_k=self.rrf_k, top_k=self.top_k
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HybridRanker:
        params = data["init_parameters"]
        if params.get("document_store") is not None:
            params["document_store"] = store_from_dict(params["document_store"])
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self,
        bm25_documents: list[Document],
        dense_documents: list[Document],
        query: str | None = None,
        query_embedding: list[float] | None = None,
        top_k: int | None = None,
        weight: float | None = None,
    ) -> dict[str, Any]:
        """Fuse the two retrievers' lists into one ranking.

        :param bm25_documents: the BM25 retriever's documents, best first.
        :param dense_documents: the dense retriever's documents, best first.
        :param query: the question text; mode ``dpr`` needs it to score the union by BM25.
        :param query_embedding: the question vector; mode ``dpr`` needs it to score the union by similarity.
        :param top_k: documents returned; ``None`` keeps the init value.
        :param weight: λ of mode ``dpr``; ``None`` keeps the init value (mode ``rrf`` ignores it).
        :returns: ``documents``: the best ``top_k`` of the union, scored by the fused score, with
            ``meta["bm25_score"]`` and ``meta["dense_score"]`` (in mode ``rrf`` the retrievers' own
            scores, ``None`` for a document the other list lacks).
        :raises ValueError: when ``top_k`` is not a positive integer, or in mode ``dpr`` with documents
            to fuse, when ``query`` or ``query_embedding`` is missing or ``weight`` is not a finite number.
        """
        fusion = self._prepare(bm25_documents, dense_documents, query, query_embedding, top_k, weight)
        scores = None
        if fusion.needs_scores:
            assert self._backend is not None
            scores = self._backend.score_documents(list(fusion.by_id), fusion.query, fusion.query_embedding)
        return self._finish(fusion, scores)

    def _prepare(
        self,
        bm25_documents: list[Document],
        dense_documents: list[Document],
        query: str | None,
        query_embedding: list[float] | None,
        top_k: int | None,
        weight: float | None,
    ) -> _Fusion:
        top_k = check_positive_int("top_k", self.top_k if top_k is None else top_k)
        by_id = union_by_id(
            check_documents("dense_documents", dense_documents), check_documents("bm25_documents", bm25_documents)
        )
        needs_scores = self.mode == "dpr" and bool(by_id)
        lam = self.weight
        if needs_scores:
            if query is None or query_embedding is None:
                raise ValueError("HybridRanker mode 'dpr' needs the query text and the query_embedding")
            lam = lam if weight is None else check_finite("weight", weight)
        return _Fusion(by_id, bm25_documents, dense_documents, query, query_embedding, top_k, lam, needs_scores)

    async def _fuse_async(self, fusion: _Fusion) -> dict[str, Any]:
        """Mode ``dpr`` scores the union through the store's async API (or a worker thread)."""
        scores = None
        if fusion.needs_scores:
            assert self._backend is not None
            scores = await self._backend.score_documents_async(list(fusion.by_id), fusion.query, fusion.query_embedding)
        return self._finish(fusion, scores)

    run_async = async_twin(run, _prepare, _fuse_async)

    def _finish(self, fusion: _Fusion, scores: Scores | None) -> dict[str, Any]:
        if not fusion.by_id:
            return {"documents": []}
        if not fusion.needs_scores:
            return {"documents": self._rrf(fusion)}
        assert scores is not None
        ids = [i for i in fusion.by_id if i in scores]
        bm25_of = {i: scores[i][0] for i in ids}
        dense_of = {i: scores[i][1] for i in ids}
        fused = fused_scores(scores_or_zero(bm25_of.values()), scores_or_zero(dense_of.values()), fusion.weight)
        ranked = [(ids[p], float(fused[p])) for p in fused_order(fused, fusion.top_k)]
        return {"documents": _with_scores(fusion.by_id, ranked, bm25_of, dense_of)}

    def _rrf(self, fusion: _Fusion) -> list[Document]:
        fused = rrf_scores([[d.id for d in fusion.bm25_documents], [d.id for d in fusion.dense_documents]], self.rrf_k)
        ranked = [(i, fused[i]) for i in sorted(fused, key=lambda i: fused[i], reverse=True)[: fusion.top_k]]
        bm25_of = {d.id: d.score for d in fusion.bm25_documents}
        dense_of = {d.id: d.score for d in fusion.dense_documents}
        return _with_scores(fusion.by_id, ranked, bm25_of, dense_of)


def _with_scores(
    by_id: dict[str, Document],
    ranked: list[tuple[str, float]],
    bm25_of: dict[str, float | None],
    dense_of: dict[str, float | None],
) -> list[Document]:
    """The ranked documents carrying their fused score and both retrievers' scores in ``meta``."""
    return [
        dataclasses.replace(
            by_id[i], score=score, meta={**by_id[i].meta, "bm25_score": bm25_of.get(i), "dense_score": dense_of.get(i)}
        )
        for i, score in ranked
    ]
