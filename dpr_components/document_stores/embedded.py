"""EmbeddedDocumentStore: one folder that answers BM25 and dense queries over the same documents.

Layout of ``path``:
- ``documents.sqlite``: documents, metadata and vectors (the source of truth, transactional);
- ``dense_index/``: the FAISS index (derived; rebuilt from SQLite when stale or missing);
- ``bm25_index/``: the BM25 index (derived; rebuilt likewise).
Handles opened on the same folder in one process share a single backend, so a YAML pipeline
whose retrievers and ranker each name the store loads it once.
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, default_from_dict, default_to_dict
from haystack.document_stores.types import DuplicatePolicy

from dpr_components.document_stores.bm25_index import BM25Index
from dpr_components.document_stores.dense_index import SIMILARITIES, DenseIndex, DenseIndexError, Similarity
from dpr_components.document_stores.document_table import DocumentTable, StoredDocument

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoreConfig:
    path: str | None
    embedding_dim: int | None
    similarity: str
    index_factory: str
    ef_search: int | None
    nprobe: int | None
    ef_construction: int | None
    bm25_k1: float
    bm25_b: float
    bm25_method: str
    bm25_title_field: str | None


class _Backend:
    """The shared state of one store folder: SQLite table plus lazily (re)built indexes."""

    def __init__(self, config: StoreConfig) -> None:
        self.config = config
        self.root = Path(config.path) if config.path else None
        self.table = DocumentTable(self.root / "documents.sqlite" if self.root else None)
        self.lock = threading.RLock()
        self._check_settings()
        self._dense: DenseIndex | None = None
        self._dense_stale = True
        self._bm25: BM25Index | None = None
        self._bm25_rowids: np.ndarray = np.zeros(0, dtype=np.int64)
        self._bm25_positions: dict[int, int] = {}
        self._bm25_generation = -1

    def _check_settings(self) -> None:
        """A folder remembers the vector settings it was built with; a mismatch is an error, not a silent mix."""
        recorded = self.table.info("dense_settings")
        wanted = {"similarity": self.config.similarity, "embedding_dim": self.config.embedding_dim}
        if recorded is None:
            self.table.set_info("dense_settings", wanted)
            return
        if recorded["similarity"] != wanted["similarity"]:
            raise ValueError(
                f"document store {self.root} was built with similarity {recorded['similarity']!r}, "
                f"not {wanted['similarity']!r}"
            )
        if wanted["embedding_dim"] and recorded.get("embedding_dim") and recorded["embedding_dim"] != wanted["embedding_dim"]:
            raise ValueError(
                f"document store {self.root} holds {recorded['embedding_dim']}-dimensional vectors, "
                f"not {wanted['embedding_dim']}"
            )

    @property
    def embedding_dim(self) -> int | None:
        return self.table.info("dense_settings", {}).get("embedding_dim") or self.config.embedding_dim

    # -- dense ------------------------------------------------------------------------------
    def dense(self) -> DenseIndex | None:
        """The FAISS index, up to date with the table; None if no document has a vector."""
        with self.lock:
            dim = self.embedding_dim
            if dim is None:
                return None
            if self._dense is not None and not self._dense_stale:
                return self._dense
            generation = self.table.generation
            if self._dense is None and self.root is not None and (self.root / "dense_index").exists():
                try:
                    loaded = DenseIndex.load(self.root / "dense_index", self.config.ef_search, self.config.nprobe)
                    if loaded.generation == generation and loaded.factory == self.config.index_factory:
                        self._dense, self._dense_stale = loaded, False
                        return loaded
                    logger.info("FAISS index in %s is out of date: rebuilding it", self.root)
                except DenseIndexError as error:
                    logger.warning("%s: rebuilding it from the documents", error)
            c = self.config
            index = DenseIndex(dim, c.similarity, c.index_factory, c.ef_search, c.nprobe, c.ef_construction)  # type: ignore[arg-type]
            rowids, vectors = self.table.vectors(dim)
            index.rebuild(rowids, vectors)
            index.generation = generation
            self._dense, self._dense_stale = index, False
            return index

    def on_write(self, added_rowids: list[int], replaced: bool) -> None:
        with self.lock:
            if self._dense is not None and not self._dense_stale and not replaced and self._dense.is_trained:
                if added_rowids:
                    vectors = self.table.vectors_for(added_rowids, self._dense.dim)
                    self._dense.add(np.array(added_rowids, dtype=np.int64), np.stack([vectors[r] for r in added_rowids]))
                self._dense.generation = self.table.generation
            else:
                self._dense_stale = True

    def on_delete(self) -> None:
        with self.lock:
            self._dense_stale = True

    # -- bm25 -------------------------------------------------------------------------------
    def bm25(self) -> tuple[BM25Index, np.ndarray]:
        """The BM25 index and the rowid of each of its positions, up to date with the table."""
        with self.lock:
            generation = self.table.generation
            if self._bm25 is not None and self._bm25_generation == generation:
                return self._bm25, self._bm25_rowids
            if self._bm25 is None and self.root is not None and (self.root / "bm25_index").exists():
                try:
                    index = BM25Index.load(self.root / "bm25_index")
                    state = json.loads((self.root / "bm25_index" / "store_state.json").read_text(encoding="utf-8"))
                    if state["generation"] == generation and _params_match(index.params, self._bm25_params()):
                        self._set_bm25(index, np.array(state["rowids"], dtype=np.int64), generation)
                        return index, self._bm25_rowids
                    logger.info("BM25 index in %s is out of date: rebuilding it", self.root)
                except (OSError, ValueError, KeyError) as error:
                    logger.warning("BM25 index in %s unreadable (%s): rebuilding it", self.root, error)
            rows = list(self.table.iter_texts(self.config.bm25_title_field))
            index = BM25Index(**self._bm25_params())
            index.build([text for _, text in rows], show_progress=len(rows) > 20000)
            self._set_bm25(index, np.array([r for r, _ in rows], dtype=np.int64), generation)
            return index, self._bm25_rowids

    def _bm25_params(self) -> dict[str, Any]:
        return {"k1": self.config.bm25_k1, "b": self.config.bm25_b, "method": self.config.bm25_method}

    def _set_bm25(self, index: BM25Index, rowids: np.ndarray, generation: int) -> None:
        self._bm25, self._bm25_rowids, self._bm25_generation = index, rowids, generation
        self._bm25_positions = {int(r): i for i, r in enumerate(rowids)}

    def bm25_positions(self, rowids: Sequence[int]) -> np.ndarray:
        self.bm25()
        return np.array([self._bm25_positions.get(int(r), -1) for r in rowids], dtype=np.int64)

    # -- persistence ------------------------------------------------------------------------
    def save(self) -> None:
        """Bring both indexes up to date and write them atomically next to the documents."""
        if self.root is None:
            return
        with self.lock:
            generation = self.table.generation
            dense = self.dense()
            if dense is not None and not self._saved(self.root / "dense_index", generation):
                dense.save(self.root / "dense_index", generation)
            bm25, rowids = self.bm25()
            if not self._saved(self.root / "bm25_index", generation):
                bm25.save(self.root / "bm25_index")
                state = {"generation": generation, "rowids": rowids.tolist()}
                # Written after the index: a crash in between leaves an old state, so a rebuild, never a mismatch.
                from dpr_components.io_utils import atomic_write_text

                atomic_write_text(self.root / "bm25_index" / "store_state.json", json.dumps(state))

    @staticmethod
    def _saved(directory: Path, generation: int) -> bool:
        for name in ("settings.json", "store_state.json"):
            file = directory / name
            if file.is_file():
                try:
                    return json.loads(file.read_text(encoding="utf-8")).get("generation") == generation
                except (OSError, ValueError):
                    return False
        return False


_BACKENDS: "weakref.WeakValueDictionary[str, _Backend]" = weakref.WeakValueDictionary()
_BACKENDS_LOCK = threading.Lock()


def _backend_for(config: StoreConfig) -> _Backend:
    if config.path is None:
        return _Backend(config)
    key = str(Path(config.path).resolve())
    with _BACKENDS_LOCK:
        backend = _BACKENDS.get(key)
        if backend is None:
            backend = _Backend(config)
            _BACKENDS[key] = backend
        elif backend.config != config:
            raise ValueError(
                f"document store {config.path} is already open in this process with other settings "
                f"({backend.config}); open it with the same settings"
            )
        return backend


class EmbeddedDocumentStore:
    """Documents in SQLite, vectors in FAISS (inner product, cosine or L2), a Lucene-style BM25 index.

    :param path: folder to persist to; ``None`` keeps everything in memory.
    :param embedding_dim: vector size; taken from the first written vector when not given.
    :param similarity: ``dot_product`` (DPR's), ``cosine`` or ``l2``.
    :param index_factory: any FAISS factory string: ``Flat``, ``HNSW32``, ``IVF256,PQ32``...;
        indexes that need training are trained on the stored vectors.
    :param ef_search: HNSW search depth (higher: better recall, slower).
    :param nprobe: IVF lists visited per query.
    :param ef_construction: HNSW build depth (FAISS default 40; higher builds slower, searches better;
        see docs/benchmarks/faiss.md).
    :param bm25_k1: BM25 term-frequency saturation (Lucene/Pyserini default 0.9).
    :param bm25_b: BM25 length normalisation (Lucene/Pyserini default 0.4).
    :param bm25_method: bm25s scoring variant (``lucene`` by default).
    :param bm25_title_field: meta field indexed for BM25 together with the content (None: content only).
    :param autosave: write the indexes to ``path`` after every write or delete.
    """

    def __init__(
        self,
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
    ) -> None:
        if similarity not in SIMILARITIES:
            raise ValueError(f"similarity must be one of {SIMILARITIES}, got {similarity!r}")
        if embedding_dim is not None and embedding_dim <= 0:
            raise ValueError(f"embedding_dim must be positive, got {embedding_dim}")
        if bm25_k1 < 0 or not 0 <= bm25_b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={bm25_k1}, b={bm25_b}")
        self.path = path
        self.autosave = autosave
        self._config = StoreConfig(
            path=path, embedding_dim=embedding_dim, similarity=similarity, index_factory=index_factory,
            ef_search=ef_search, nprobe=nprobe, ef_construction=ef_construction, bm25_k1=bm25_k1, bm25_b=bm25_b, bm25_method=bm25_method,
            bm25_title_field=bm25_title_field,
        )
        self._backend = _backend_for(self._config)

    @property
    def similarity(self) -> str:
        return self._config.similarity

    @property
    def embedding_dim(self) -> int | None:
        return self._backend.embedding_dim

    def to_dict(self) -> dict[str, Any]:
        c = self._config
        return default_to_dict(
            self, path=c.path, embedding_dim=c.embedding_dim, similarity=c.similarity, index_factory=c.index_factory,
            ef_search=c.ef_search, nprobe=c.nprobe, ef_construction=c.ef_construction, bm25_k1=c.bm25_k1, bm25_b=c.bm25_b, bm25_method=c.bm25_method,
            bm25_title_field=c.bm25_title_field, autosave=self.autosave,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmbeddedDocumentStore:
        return default_from_dict(cls, data)

    # -- DocumentStore protocol ---------------------------------------------------------------
    def count_documents(self) -> int:
        return self._backend.table.count()

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        return [_to_document(d) for d in self._backend.table.documents(filters)]

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise ValueError("write_documents expects a list of haystack Document objects")
        rows = [self._row(doc) for doc in documents]
        policy_name = {DuplicatePolicy.SKIP: "skip", DuplicatePolicy.OVERWRITE: "overwrite"}.get(policy, "fail")
        backend = self._backend
        with backend.lock:
            outcome = backend.table.write(rows, policy_name)
            backend.on_write(outcome.added_rowids, outcome.replaced_vectors)
            if self.autosave and outcome.written:
                backend.save()
        return outcome.written

    def delete_documents(self, document_ids: list[str]) -> None:
        backend = self._backend
        with backend.lock:
            if backend.table.delete(list(document_ids)):
                backend.on_delete()
                if self.autosave:
                    backend.save()

    def _row(self, doc: Document) -> tuple[str, str | None, str, bytes | None]:
        try:
            meta = json.dumps(doc.meta or {}, ensure_ascii=False)
        except (TypeError, ValueError) as error:
            raise ValueError(f"document {doc.id!r}: meta is not JSON-serialisable ({error})") from error
        blob = None
        if doc.embedding is not None:
            vector = np.asarray(doc.embedding, dtype=np.float32)
            if vector.ndim != 1 or not np.all(np.isfinite(vector)):
                raise ValueError(f"document {doc.id!r}: embedding must be a finite 1-D vector")
            self._ensure_dim(vector.shape[0], f"document {doc.id!r}")
            blob = vector.tobytes()
        return doc.id, doc.content, meta, blob

    def _ensure_dim(self, dim: int, what: str) -> None:
        table = self._backend.table
        settings = table.info("dense_settings", {})
        recorded = settings.get("embedding_dim")
        if recorded is None:
            table.set_info("dense_settings", {**settings, "embedding_dim": dim})
        elif recorded != dim:
            raise ValueError(
                f"{what}: embedding has dimension {dim} but the store {self.path or '(in memory)'} holds "
                f"{recorded}-dimensional vectors; use the encoder the store was indexed with"
            )

    # -- retrieval ----------------------------------------------------------------------------
    def embedding_retrieval(
        self, query_embedding: Sequence[float] | np.ndarray, top_k: int = 10, filters: dict[str, Any] | None = None
    ) -> list[Document]:
        """Documents whose vectors score highest against ``query_embedding`` (scores: dot product,
        cosine, or negative squared L2)."""
        _check_top_k(top_k)
        query = np.asarray(query_embedding, dtype=np.float32)
        if query.ndim != 1 or not np.all(np.isfinite(query)):
            raise ValueError("query_embedding must be a finite 1-D vector")
        index = self._backend.dense()
        if index is None:
            return []
        if query.shape[0] != index.dim:
            raise ValueError(
                f"query embedding has dimension {query.shape[0]} but the store holds {index.dim}-dimensional "
                "vectors: the question encoder does not match the passage encoder used for indexing"
            )
        allowed = self._backend.table.rowids(filters) if filters else None
        rowids, scores = index.search(query, top_k, allowed)
        return self._documents(rowids, scores, with_embeddings=False)

    def bm25_retrieval(self, query: str, top_k: int = 10, filters: dict[str, Any] | None = None) -> list[Document]:
        """Documents ranked by BM25 against ``query``; only documents sharing a term are returned."""
        _check_top_k(top_k)
        _check_query(query)
        index, rowids = self._backend.bm25()
        mask = None
        if filters:
            mask = np.isin(rowids, self._backend.table.rowids(filters))
        positions, scores = index.search(query, top_k, mask)
        return self._documents(rowids[positions], scores, with_embeddings=False)

    def score_documents(
        self, document_ids: Sequence[str], query: str | None = None, query_embedding: Sequence[float] | None = None
    ) -> dict[str, tuple[float | None, float | None]]:
        """Exact BM25 and dense scores of the given documents: ``id -> (bm25, dense)``.

        The exact hybrid of the DPR paper needs both scores for every document of the union of
        the two result lists, including those only one retriever found. A score is None when it
        was not asked for or the document has no vector."""
        table = self._backend.table
        rowid_of = table.rowids_for_ids(list(document_ids))
        rowids = [rowid_of[i] for i in document_ids if i in rowid_of]
        bm25_scores: dict[int, float] = {}
        if query is not None:
            _check_query(query)
            index, _ = self._backend.bm25()
            all_scores = index.scores(query)
            positions = self._backend.bm25_positions(rowids)
            bm25_scores = {r: float(all_scores[p]) if p >= 0 else 0.0 for r, p in zip(rowids, positions)}
        dense_scores: dict[int, float] = {}
        if query_embedding is not None:
            dim = self.embedding_dim
            query_vec = np.asarray(query_embedding, dtype=np.float32)
            if dim is not None and query_vec.shape != (dim,):
                raise ValueError(f"query embedding has shape {query_vec.shape}, the store holds {dim}-dimensional vectors")
            vectors = table.vectors_for(rowids, dim or 0)
            dense_scores = {r: _similarity(query_vec, v, self.similarity) for r, v in vectors.items()}
        return {
            doc_id: (bm25_scores.get(rowid_of[doc_id]), dense_scores.get(rowid_of[doc_id]))
            for doc_id in document_ids
            if doc_id in rowid_of
        }

    def get_documents_by_id(self, document_ids: Sequence[str]) -> list[Document]:
        rowid_of = self._backend.table.rowids_for_ids(list(document_ids))
        found = self._backend.table.documents_by_rowid(list(rowid_of.values()))
        return [_to_document(found[rowid_of[i]]) for i in document_ids if i in rowid_of]

    def save(self) -> None:
        """Write the indexes now (writes and deletes already do this when ``autosave`` is on)."""
        self._backend.save()

    def _documents(self, rowids: np.ndarray, scores: np.ndarray, with_embeddings: bool) -> list[Document]:
        found = self._backend.table.documents_by_rowid(rowids.tolist(), with_embeddings)
        return [_to_document(found[int(r)], float(s)) for r, s in zip(rowids, scores) if int(r) in found]


def _params_match(actual: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return all(actual.get(key) == value for key, value in wanted.items())


def _similarity(query: np.ndarray, vector: np.ndarray, similarity: str) -> float:
    if similarity == "l2":
        return -float(np.sum((query - vector) ** 2))
    if similarity == "cosine":
        return float(query @ vector / max(np.linalg.norm(query) * np.linalg.norm(vector), 1e-12))
    return float(query @ vector)


def _check_top_k(top_k: int) -> None:
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k <= 0:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")


def _check_query(query: str) -> None:
    if not isinstance(query, str) or not query.strip():
        raise ValueError("the query is empty: give a question or search text")


def _to_document(stored: StoredDocument, score: float | None = None) -> Document:
    embedding = stored.embedding.tolist() if stored.embedding is not None else None
    return Document(id=stored.id, content=stored.content, meta=stored.meta, embedding=embedding, score=score)
