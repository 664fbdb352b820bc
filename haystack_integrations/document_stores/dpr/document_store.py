"""EmbeddedDocumentStore: one folder that answers BM25 and dense queries over the same documents.

Layout of ``path``:
- ``documents.sqlite``: documents, metadata and vectors (the source of truth, transactional);
- ``dense_index/``: the FAISS index (derived; caught up or rebuilt from SQLite when stale,
  rebuilt when its files do not match the checksums in its ``manifest.json``);
- ``dense_delta/``: the vectors written since ``dense_index/`` was last rewritten, as a small
  exact index, and the rows of ``dense_index/`` overwritten or removed since (dense_layers.py);
- ``bm25_index/``: the BM25 index (derived; rebuilt likewise);
- ``store.lock``: orders saving and loading of the derived indexes between processes.
Handles opened on the same folder in one process share a single backend, so a YAML pipeline
whose retrievers and ranker each name the store loads it once. Several processes may write
to and search one folder at once (see store_backend.py). A folder that is not writable is
opened read-only: it can be searched, and a write is an error.

A store creates nothing until it is used: constructing it, ``to_dict``/``from_dict`` and loading
a pipeline that names its folder touch no file. The first write creates the folder and its
database; the first read of a folder holding a database opens it. Reading a folder without a
database (missing, or never written to) behaves as reading an empty store and creates nothing.

A handle whose folder is removed, renamed or replaced by another at the same path after it opened it
refuses every call (``StoreFolderMovedError``, folder_identity.py) instead of reading or writing files no
longer there, and a write returns only once the database at ``path``, read again, holds it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, default_from_dict, default_to_dict
from haystack.dataclasses import ByteStream, SparseEmbedding
from haystack.document_stores.types import DuplicatePolicy

from dpr_components.document_stores.document_table import (
    ENCODER_KEY,
    DocumentRow,
    StoredDocument,
    VectorBatch,
    folder_is_writable,
)
from dpr_components.document_stores.hybrid_scoring import (
    exact_dense_scores,
    hybrid_candidates,
)
from dpr_components.document_stores.metadata_queries import MetadataQueries
from dpr_components.document_stores.store_backend import (
    DELTA_FRACTION,
    StoreBackend,
    StoreConfig,
    backend_for,
    bm25_positions_in,
    check_before_opening,
    holds_database,
)
from dpr_components.hybrid_fusion import ScoredUnion, source_document_id
from dpr_components.utils.fault_points import fault_point
from dpr_components.utils.init_parameters import init_parameters, named_values
from dpr_components.utils.similarity import Similarity, canonical_similarity
from dpr_components.utils.validation import check_positive_int, check_query
from dpr_components.utils.vector_checks import unusable_rows, vector_problem
from dpr_components.utils.worker_threads import in_worker_thread

# The init parameters kept as the store's settings (``StoreConfig`` fields of the same name), in to_dict's order.
STORE_SETTINGS = (
    "path embedding_dim similarity index_factory ef_search nprobe ef_construction memory_map "
    "bm25_k1 bm25_b bm25_method bm25_title_field"
)


class EmbeddedDocumentStore(MetadataQueries):
    """Documents in SQLite, vectors in FAISS (inner product, cosine or L2), a Lucene-style BM25 index.

    Implements Haystack's DocumentStore protocol and its extended API (delete/update/count by
    filter, metadata field queries), each method also as ``*_async``.

    :param path: folder to persist to; ``None`` keeps everything in memory. The folder is created
        by the first write, not before; until then reads see an empty store (see the module docstring).
    :param embedding_dim: vector size; taken from the first written vector when not given.
    :param similarity: ``dot_product`` (DPR's), ``cosine`` or ``l2``.
    :param index_factory: any FAISS factory string: ``Flat``, ``HNSW32``, ``IVF256,PQ32``...;
        indexes that need training are trained on the stored vectors.
    :param ef_search: HNSW search depth (higher: better recall, slower).
    :param nprobe: IVF lists visited per query.
    :param ef_construction: HNSW build depth (FAISS default 40; higher builds slower, searches better;
        see docs/benchmarks/vector_index/faiss.md).
    :param bm25_k1: BM25 term-frequency saturation (Lucene/Pyserini default 0.9).
    :param bm25_b: BM25 length normalisation (Lucene/Pyserini default 0.4).
    :param bm25_method: bm25s scoring variant (``lucene`` by default).
    :param bm25_title_field: meta field indexed for BM25 together with the content (None: content only).
    :param autosave: keep the indexes saved in ``path`` in step with the documents. Saving is lazy
        (a write costs what it writes): a search saves an index it rebuilt or caught up by more
        than 1% of its documents, and both are saved by :meth:`save`, when the last handle on
        the folder is dropped, and at interpreter exit. Off: only :meth:`save` writes them.
    :param memory_map: load saved indexes memory-mapped (FAISS Flat/HNSW vectors and graph, BM25
        postings): their bytes stay in the page cache instead of the heap (at 2M passages a Flat
        index takes 99 MiB of heap instead of 3 GiB), at the same speed while the files are
        cached. Writes go to the FAISS delta (below), so the mapped index is read into memory only
        when the delta is folded into it. IVF lists are never mapped (slower searches). Off:
        indexes are read into memory.
    :param dense_delta_fraction: vectors written after the FAISS index was saved go to a small
        exact delta index saved apart (with marks for the saved vectors overwritten or removed),
        so a write never rewrites nor re-reads the whole index; once the delta holds more than
        this fraction of the saved index's vectors, the next save folds it in (one full rewrite).
        :meth:`compact_dense_index` folds it now. See docs/scale.md.

    Usage example:

    ```python
    from haystack import Document

    store = EmbeddedDocumentStore(path="indexes/my-store")  # nothing is created yet
    store.write_documents([Document(id="d1", content="Hamlet is a tragedy.", embedding=[0.1] * 384)])
    store.bm25_retrieval("hamlet", top_k=5)
    store.embedding_retrieval([0.1] * 384, top_k=5, filters={"field": "id", "operator": "==", "value": "d1"})
    ```
    """

    def __init__(
        self,
        *,
        path: str | None = None,
        embedding_dim: int | None = None,
        similarity: Similarity = "dot_product",
        index_factory: str = "Flat",
        ef_search: int | None = None,
        nprobe: int | None = None,
        ef_construction: int | None = None,
        bm25_k1: float = 0.9,
        bm25_b: float = 0.4,
        bm25_method: str = "lucene",
        bm25_title_field: str | None = "title",
        autosave: bool = True,
        memory_map: bool = True,
        dense_delta_fraction: float = DELTA_FRACTION,
    ) -> None:
        similarity = canonical_similarity(similarity)
        if embedding_dim is not None and embedding_dim <= 0:
            raise ValueError(f"embedding_dim must be positive, got {embedding_dim}")
        if bm25_k1 < 0 or not 0 <= bm25_b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={bm25_k1}, b={bm25_b}")
        if not dense_delta_fraction >= 0:
            raise ValueError(f"dense_delta_fraction must be a number >= 0, got {dense_delta_fraction!r}")
        self.path = path
        self.autosave = autosave
        self._config = StoreConfig(
            **named_values(locals(), STORE_SETTINGS),
            delta_fraction=float(dense_delta_fraction),
        )
        # Opened on first use (creating nothing before); settings conflicts are reported now.
        check_before_opening(self._config)
        self._opened: StoreBackend | None = backend_for(self._config) if path is None else None
        self._empty: StoreBackend | None = None

    @property
    def _backend(self) -> StoreBackend:
        """The folder's backend, opened (and the folder created) on first use; for writes.
        :class:`StoreFolderMovedError` once the folder at ``path`` is no longer the one it opened."""
        if self._opened is None:
            self._opened = backend_for(self._config)
            self._empty = None
        self._opened.check_in_place()
        return self._opened

    @_backend.setter
    def _backend(self, backend: StoreBackend) -> None:
        self._opened = backend

    def _reader(self) -> StoreBackend:
        """The backend to read from: the folder's once it holds a database, else an empty one in
        memory, so reading a store nobody wrote creates no file."""
        if self._opened is None and self.path is not None and not holds_database(self.path):
            if self._empty is None:
                self._empty = StoreBackend(dataclasses.replace(self._config, path=None))
            return self._empty
        return self._backend

    def folder_problem(self) -> str | None:
        """Why the folder at ``path`` is no longer the one this handle opened (removed, renamed or replaced
        by another folder), or ``None``: in place, in memory, or not opened yet. While there is one, every
        call raises :class:`StoreFolderMovedError`, and a write is acknowledged only once the database at
        ``path``, read again, holds it."""
        return self._opened.folder_problem() if self._opened is not None else None

    def exists(self) -> bool:
        """Whether the store holds a database: in memory, or a folder something was written to."""
        return self._opened is not None or self.path is None or holds_database(self.path)

    @property
    def similarity(self) -> str:
        return self._config.similarity

    @property
    def embedding_dim(self) -> int | None:
        return self._reader().embedding_dim

    def to_dict(self) -> dict[str, Any]:
        c = self._config
        return default_to_dict(
            self, **init_parameters(c, STORE_SETTINGS), autosave=self.autosave, dense_delta_fraction=c.delta_fraction
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmbeddedDocumentStore:
        return default_from_dict(cls, data)

    # -- DocumentStore protocol ---------------------------------------------------------------
    def count_documents(self) -> int:
        return self._reader().table.count()

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        return [_to_document(d) for d in self._reader().table.documents(filters)]

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise ValueError("write_documents expects a list of haystack Document objects")
        rows = [self._row(doc) for doc in documents]
        vectors = _vector_batch(documents, rows)
        policy_name = {DuplicatePolicy.SKIP: "skip", DuplicatePolicy.OVERWRITE: "overwrite"}.get(policy, "fail")
        backend = self._backend
        with backend.lock:
            outcome = backend.table.write(rows, policy_name, vectors)
            fault_point("store.after_commit")
            self._mark_unsaved(outcome.written)
        backend.confirm_written(outcome.generation)
        return outcome.written

    def delete_documents(self, document_ids: list[str]) -> None:
        backend = self._backend
        with backend.lock:
            self._mark_unsaved(backend.table.delete(list(document_ids)))
        backend.confirm_written(backend.table.generation)

    def delete_all_documents(self, recreate_index: bool = False) -> None:
        """Remove every document; the store can be written to again.

        :param recreate_index: also forget the vector dimension and passage encoder the store
            recorded from its vectors, so vectors of another encoder can be written next
            (``embedding_dim`` and ``similarity`` given here stay)."""
        c = self._config
        settings = {"similarity": c.similarity, "embedding_dim": c.embedding_dim} if recreate_index else None
        backend = self._backend
        with backend.lock:
            self._mark_unsaved(backend.table.delete_all(settings))
        backend.confirm_written(backend.table.generation)

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Remove the documents matching ``filters`` (a non-empty Haystack filter); the number removed."""
        _check_filters(filters, "delete_by_filter", "delete_all_documents()")
        backend = self._backend
        with backend.lock:
            deleted = backend.table.delete_where(filters)
            self._mark_unsaved(deleted)
        backend.confirm_written(backend.table.generation)
        return deleted

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """Merge ``meta`` into the metadata of the documents matching ``filters`` (its keys replace
        the same keys, other keys stay); the number of documents updated."""
        _check_filters(filters, "update_by_filter", "a filter matching every document")
        if not isinstance(meta, dict) or not all(isinstance(key, str) for key in meta):
            raise ValueError(f"update_by_filter needs meta as a dict with string keys, got {meta!r}")
        _meta_json(meta, "update_by_filter")
        backend = self._backend
        with backend.lock:
            updated = backend.table.update_meta_where(filters, meta)
            self._mark_unsaved(updated)
        backend.confirm_written(backend.table.generation)
        return updated

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """Number of documents matching ``filters`` (all documents for empty filters)."""
        return self._reader().table.count(filters)

    @property
    def passage_encoder(self) -> str | None:
        """Digest of the passage encoder whose stamped vectors the store holds (None: no stamped vector yet)."""
        return self._reader().table.info(ENCODER_KEY)

    @property
    def read_only(self) -> bool:
        """True when the store folder is not writable: it can be searched, not written to."""
        if self._opened is None and self.path is not None and not holds_database(self.path):
            return not folder_is_writable(Path(self.path))
        return self._backend.read_only

    @staticmethod
    def _row(doc: Document) -> DocumentRow:
        meta = _meta_json(doc.meta or {}, f"document {doc.id!r}")
        vector_bytes = None
        if doc.embedding is not None:
            vector = np.asarray(doc.embedding, dtype=np.float32)
            if vector.ndim != 1:
                raise ValueError(f"document {doc.id!r}: embedding must be a finite 1-D vector")
            vector_bytes = vector.tobytes()  # its values are checked with the whole batch (_vector_batch)
        blob_data = blob_info = sparse = None
        if doc.blob is not None:
            blob_data = bytes(doc.blob.data)
            blob_info = _meta_json(
                {"mime_type": doc.blob.mime_type, "meta": doc.blob.meta}, f"document {doc.id!r}: blob"
            )
        if doc.sparse_embedding is not None:
            sparse_values = doc.sparse_embedding.to_dict()
            if not all(np.isfinite(v) for v in sparse_values["values"]):
                raise ValueError(f"document {doc.id!r}: sparse_embedding values must be finite numbers")
            sparse = json.dumps(sparse_values)
        return DocumentRow(doc.id, doc.content, meta, vector_bytes, blob_data, blob_info, sparse)

    # -- retrieval ----------------------------------------------------------------------------
    def embedding_retrieval(
        self,
        query_embedding: Sequence[float] | np.ndarray,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = False,
    ) -> list[Document]:
        """Documents whose vectors score highest against ``query_embedding`` (scores: dot product,
        cosine, or negative squared L2); with ``return_embedding`` they carry their vectors."""
        _check_top_k(top_k)
        query = np.asarray(query_embedding, dtype=np.float32)
        if query.ndim != 1 or not np.all(np.isfinite(query)):
            raise ValueError("query_embedding must be a finite 1-D vector")
        backend = self._reader()
        allowed = backend.table.rowids(filters) if filters else None  # a bad filter fails even on an empty store
        index = backend.dense()
        if index is None:
            return []
        self._save_searched(backend)
        if query.shape[0] != index.dim:
            raise ValueError(
                f"query embedding has dimension {query.shape[0]} but the store holds {index.dim}-dimensional "
                "vectors: the question encoder does not match the passage encoder used for indexing"
            )
        rowids, scores = index.search(query, top_k, allowed)
        return _documents(backend, rowids, scores, with_vectors=return_embedding)

    def bm25_retrieval(self, query: str, top_k: int = 10, filters: dict[str, Any] | None = None) -> list[Document]:
        """Documents ranked by BM25 against ``query``; only documents sharing a term are returned."""
        _check_top_k(top_k)
        _check_query(query)
        backend = self._reader()
        index, rowids = backend.bm25()
        self._save_searched(backend)
        mask = None
        if filters:
            mask = np.isin(rowids, backend.table.rowids(filters))
        positions, scores = index.search(query, top_k, mask)
        return _documents(backend, rowids[positions], scores)

    def score_documents(
        self, document_ids: Sequence[str], query: str | None = None, query_embedding: Sequence[float] | None = None
    ) -> dict[str, tuple[float | None, float | None]]:
        """Exact BM25 and dense scores of the given documents: ``id -> (bm25, dense)``.

        The exact hybrid of the DPR paper needs both scores for every document of the union of
        the two result lists, including those only one retriever found. A score is None when it
        was not asked for or the document has no vector."""
        backend = self._reader()
        table = backend.table
        rowid_of = table.rowids_for_ids(list(document_ids))
        rowids = [rowid_of[i] for i in document_ids if i in rowid_of]
        bm25_scores: dict[int, float] = {}
        if query is not None:
            _check_query(query)
            index, indexed_rowids = backend.bm25()
            self._save_searched(backend)
            all_scores = index.scores(query)
            positions = bm25_positions_in(index, indexed_rowids, rowids)  # the index the scores came from
            bm25_scores = {r: float(all_scores[p]) if p >= 0 else 0.0 for r, p in zip(rowids, positions, strict=True)}
        dense_scores: dict[int, float] = {}
        if query_embedding is not None:
            dim = backend.embedding_dim
            query_vec = np.asarray(query_embedding, dtype=np.float32)
            if dim is not None and query_vec.shape != (dim,):
                raise ValueError(
                    f"query embedding has shape {query_vec.shape}, the store holds {dim}-dimensional vectors"
                )
            rowid_array = np.asarray(rowids, dtype=np.int64)
            scores, has_vector = exact_dense_scores(backend, rowid_array, query_vec, self.similarity)
            dense_scores = {int(r): float(s) for r, s, v in zip(rowid_array, scores, has_vector, strict=True) if v}
        return {
            doc_id: (bm25_scores.get(rowid_of[doc_id]), dense_scores.get(rowid_of[doc_id]))
            for doc_id in document_ids
            if doc_id in rowid_of
        }

    def hybrid_search(
        self,
        query: str,
        query_embedding: Sequence[float] | np.ndarray,
        weight: float,
        top_k: int = 10,
        candidates: int = 2000,
        filters: dict[str, Any] | None = None,
    ) -> list[Document]:
        """The DPR paper's exact hybrid: the union of the BM25 and dense top-``candidates`` lists,
        each member scored ``BM25 + weight · sim`` exactly, best ``top_k`` first. The same ranking
        as ``HybridRanker`` mode ``dpr`` over both retrievers, computed on arrays (only the top k
        become Documents). Each document carries ``meta["bm25_score"]`` and ``meta["dense_score"]``."""
        return self.hybrid_search_batch([query], [query_embedding], weight, top_k, candidates, filters)[0]

    def hybrid_union(
        self,
        query: str,
        query_embedding: Sequence[float] | np.ndarray,
        candidates: int = 2000,
        filters: dict[str, Any] | None = None,
    ) -> ScoredUnion:
        """The union :meth:`hybrid_search` ranks, in its order, each member with its exact BM25 score
        and dense score (0 without a vector), for fitting λ without re-searching."""
        check_positive_int("candidates", candidates)
        _check_query(query)
        vector = np.asarray(query_embedding, dtype=np.float32)
        backend = self._reader()
        allowed = backend.table.rowids(filters) if filters else None
        found = hybrid_candidates(backend, query, vector, candidates, self.similarity, allowed)
        stored = backend.table.documents_by_rowid(found.rowids.tolist(), False)
        keep = np.array([int(r) in stored for r in found.rowids], dtype=np.bool_)
        members = [stored[int(r)] for r in found.rowids[keep]]
        contents = [d.content or "" for d in members]
        return ScoredUnion(contents, [source_document_id(d) for d in members], found.bm25[keep], found.dense[keep])

    def hybrid_search_batch(
        self,
        queries: Sequence[str],
        query_embeddings: Sequence[Sequence[float] | np.ndarray] | np.ndarray,
        weight: float,
        top_k: int = 10,
        candidates: int = 2000,
        filters: dict[str, Any] | None = None,
    ) -> list[list[Document]]:
        """:meth:`hybrid_search` for many questions: one dense search over all of them, one read of
        the documents, the same results as question by question."""
        _check_top_k(top_k)
        check_positive_int("candidates", candidates)
        if len(queries) != len(query_embeddings):
            raise ValueError(f"got {len(queries)} queries but {len(query_embeddings)} query embeddings")
        for query in queries:
            _check_query(query)
        vectors = np.asarray(query_embeddings, dtype=np.float32).reshape(len(queries), -1)
        if not np.all(np.isfinite(vectors)):
            raise ValueError("query embeddings must be finite")
        backend = self._reader()
        allowed = backend.table.rowids(filters) if filters else None
        dense_index = backend.dense()
        if dense_index is not None and vectors.shape[1] != dense_index.dim:
            raise ValueError(
                f"query embedding has dimension {vectors.shape[1]} but the store holds {dense_index.dim}-dimensional "
                "vectors: the question encoder does not match the passage encoder used for indexing"
            )
        dense_lists = dense_index.search_many(vectors, candidates, allowed) if dense_index is not None else None
        per_query = [
            hybrid_candidates(
                backend,
                query,
                vector,
                candidates,
                self.similarity,
                allowed,
                dense_lists[i] if dense_lists is not None else np.zeros(0, dtype=np.int64),
            )
            for i, (query, vector) in enumerate(zip(queries, vectors, strict=True))
        ]
        self._save_searched(backend)
        chosen = [(found, found.ranking(weight, top_k)) for found in per_query]
        wanted = sorted({int(r) for found, order in chosen for r in found.rowids[order]})
        stored = backend.table.documents_by_rowid(wanted, False)
        results = []
        for found, order in chosen:
            fused = found.fused(weight)
            documents = []
            for position in order:
                row = stored.get(int(found.rowids[position]))
                if row is None:
                    continue
                dense_score = float(found.dense[position]) if found.has_vector[position] else None
                scored = dataclasses.replace(
                    row, meta={**row.meta, "bm25_score": float(found.bm25[position]), "dense_score": dense_score}
                )
                documents.append(_to_document(scored, float(fused[position])))
            results.append(documents)
        return results

    def get_documents_by_id(self, document_ids: Sequence[str]) -> list[Document]:
        table = self._reader().table
        rowid_of = table.rowids_for_ids(list(document_ids))
        found = table.documents_by_rowid(list(rowid_of.values()))
        return [_to_document(found[rowid_of[i]]) for i in document_ids if i in rowid_of]

    def save(self) -> None:
        """Bring both indexes up to date with the documents and write them to ``path`` now
        (nothing to do, and nothing created, for a store never written to)."""
        self._reader().save()

    def compact_dense_index(self) -> None:
        """Fold the FAISS delta (vectors written since the index was last rewritten) into the
        main index and rewrite it now, instead of at the save that finds the delta too large."""
        self._reader().compact_dense()

    # -- the async API: each method in a worker thread ----------------------------------------
    # Safe: the SQLite connection and the indexes are guarded by locks, and a worker thread sees the same store.
    count_documents_async = in_worker_thread(count_documents)
    filter_documents_async = in_worker_thread(filter_documents)
    write_documents_async = in_worker_thread(write_documents)
    delete_documents_async = in_worker_thread(delete_documents)
    delete_all_documents_async = in_worker_thread(delete_all_documents)
    delete_by_filter_async = in_worker_thread(delete_by_filter)
    update_by_filter_async = in_worker_thread(update_by_filter)
    count_documents_by_filter_async = in_worker_thread(count_documents_by_filter)
    count_unique_metadata_by_filter_async = in_worker_thread(MetadataQueries.count_unique_metadata_by_filter)
    get_metadata_fields_info_async = in_worker_thread(MetadataQueries.get_metadata_fields_info)
    get_metadata_field_min_max_async = in_worker_thread(MetadataQueries.get_metadata_field_min_max)
    get_metadata_field_unique_values_async = in_worker_thread(MetadataQueries.get_metadata_field_unique_values)
    get_documents_by_id_async = in_worker_thread(get_documents_by_id)
    embedding_retrieval_async = in_worker_thread(embedding_retrieval)
    bm25_retrieval_async = in_worker_thread(bm25_retrieval)
    score_documents_async = in_worker_thread(score_documents)
    save_async = in_worker_thread(save)

    def _mark_unsaved(self, changed: int) -> None:
        if changed and self.autosave and self._opened is not None:  # opened by the write
            self._opened.unsaved_writes = True

    def _save_searched(self, backend: StoreBackend) -> None:
        if self.autosave:
            backend.save_searched()


def _documents(
    backend: StoreBackend, rowids: np.ndarray, scores: np.ndarray, with_vectors: bool = False
) -> list[Document]:
    """The found documents (with their vectors only if asked), scored, in the order of ``rowids``."""
    found = backend.table.documents_by_rowid(rowids.tolist(), with_vectors)
    return [_to_document(found[int(r)], float(s)) for r, s in zip(rowids, scores, strict=True) if int(r) in found]


def _vector_batch(documents: list[Document], rows: list[DocumentRow]) -> VectorBatch | None:
    """The dimension and passage encoder shared by the vectors of ``documents`` (None: no vector);
    an error naming the first vector that is all zeros or not finite (``rows``: their stored form)."""
    with_vectors = [d for d in documents if d.embedding is not None]
    if not with_vectors:
        return None
    first = with_vectors[0]
    dim = len(first.embedding)  # type: ignore[arg-type]
    for doc in with_vectors:
        if len(doc.embedding) != dim:  # type: ignore[arg-type]
            raise ValueError(
                f"document {doc.id!r}: embedding has dimension {len(doc.embedding)} but document "  # type: ignore[arg-type]
                f"{first.id!r} in the same write has {dim}"
            )
    stored = b"".join(r.embedding for r in rows if r.embedding is not None)
    matrix = np.frombuffer(stored, dtype=np.float32).reshape(len(with_vectors), dim)
    bad = unusable_rows(matrix)
    if bad.size:
        raise ValueError(
            f"document {with_vectors[int(bad[0])].id!r}: its embedding {vector_problem(matrix[bad[0]])}, "
            "which no search can use; nothing of this write was stored"
        )
    stamps = {stamp for d in with_vectors if isinstance(stamp := d.meta.get(ENCODER_KEY), str)}
    if len(stamps) > 1:
        raise ValueError(f"one write mixes vectors of passage encoders {sorted(stamps)}: index with one encoder")
    return VectorBatch(dim=dim, first_id=first.id, encoder=stamps.pop() if stamps else None)


def _meta_json(meta: dict[str, Any], what: str) -> str:
    try:
        return json.dumps(meta, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what}: meta is not JSON-serialisable ({error})") from None


def _check_filters(filters: Any, method: str, instead: str) -> None:
    """A filter that selects documents to change must be given: an empty one would change every document."""
    if not isinstance(filters, dict) or not filters:
        raise ValueError(
            f"{method} needs a non-empty Haystack filter, got {filters!r}; to change every document use {instead}"
        )


def _check_top_k(top_k: int) -> None:
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k <= 0:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")


def _check_query(query: str) -> None:
    check_query(query)


def _to_document(stored: StoredDocument, score: float | None = None) -> Document:
    embedding = stored.embedding.tolist() if stored.embedding is not None else None
    blob = None
    if stored.blob_data is not None:
        info = stored.blob_info or {}
        blob = ByteStream(data=stored.blob_data, meta=info.get("meta") or {}, mime_type=info.get("mime_type"))
    sparse = SparseEmbedding.from_dict(stored.sparse_embedding) if stored.sparse_embedding is not None else None
    return Document(
        id=stored.id,
        content=stored.content,
        meta=stored.meta,
        embedding=embedding,
        score=score,
        blob=blob,
        sparse_embedding=sparse,
    )
