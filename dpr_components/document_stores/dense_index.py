"""A FAISS vector index keyed by document rowid, for any factory string and metric.

faiss-haystack's store only does L2 with a flat index; DPR ranks by inner product and needs
HNSW or IVF-PQ at scale, so this wraps FAISS directly: inner product, cosine (inner product
of unit vectors) or L2; indexes that need training are trained on the stored vectors.

A saved index can be loaded memory-mapped (``IO_FLAG_MMAP_IFC``: the vectors of Flat indexes,
HNSW's vectors and graph, SQ codes), so its bytes live in the page cache, not the heap (2M 384-d
passages: Flat 3,028 -> 99 MiB of heap, HNSW32 3,547 -> 122 MiB, same speed with a warm cache:
docs/benchmarks/scale/scale.md). IVF lists stay in memory (mapped, they searched 2-10x slower). FAISS
cannot add to a mapped index (Flat/HNSW abort the process), so the first :meth:`add` or
:meth:`remove` reads it again, unmapped, from the file it was mapped from (kept open: a folder
saved since by another process does not swap the index). The store adds to a separate delta
instead (dense_layers.py), so that happens only when the delta is folded in."""

from __future__ import annotations

import json
import weakref
from pathlib import Path
from typing import Any, BinaryIO, cast

import faiss
import numpy as np

from dpr_components.document_stores.index_files import (
    verified_state,
    write_index_directory,
)
from dpr_components.utils.fault_points import fault_point
from dpr_components.utils.similarity import Similarity, canonical_similarity
from dpr_components.utils.threads import faiss_threads, search_threads


class DenseIndexError(ValueError):
    """Bad index settings, a dimension mismatch, or a missing or corrupt index file."""


def _metric(similarity: str) -> int:
    try:
        return faiss.METRIC_L2 if canonical_similarity(similarity) == "l2" else faiss.METRIC_INNER_PRODUCT
    except ValueError as error:
        raise DenseIndexError(str(error)) from None


def _negated(selector: faiss.IDSelector) -> faiss.IDSelector:
    negated = faiss.IDSelectorNot(selector)
    # the C++ object holds a raw pointer: keep the Python owner alive (setattr: FAISS's types lack the attribute)
    setattr(negated, "_keep", selector)  # noqa: B010
    return negated


def _find_hnsw(index: faiss.Index) -> faiss.IndexHNSW | None:
    """The HNSW index inside ``index`` (itself, or below a pre-transform or refine wrapper)."""
    index = faiss.downcast_index(index)
    if isinstance(index, faiss.IndexHNSW):
        return index
    for attribute in ("index", "base_index"):
        inner = getattr(index, attribute, None)
        if isinstance(inner, faiss.Index):
            return _find_hnsw(inner)
    return None


class DenseIndex:
    """Vectors searchable by similarity; scores are higher-is-better (negative squared L2 for ``l2``)."""

    def __init__(
        self,
        dim: int,
        similarity: Similarity = "dot_product",
        factory: str = "Flat",
        ef_search: int | None = None,
        nprobe: int | None = None,
        ef_construction: int | None = None,
    ) -> None:
        self.dim = dim
        self.similarity = similarity
        self.factory = factory
        self.ef_search = ef_search
        self.nprobe = nprobe
        self.ef_construction = ef_construction
        self.generation = -1
        self.state: dict[str, Any] = {}  # what was saved with the index (see save)
        self._index: faiss.IndexIDMap2 = self._new_index()
        self._mapped_file: BinaryIO | None = None  # the open file a memory-mapped index was read from

    def _new_index(self) -> faiss.IndexIDMap2:
        try:
            inner = faiss.index_factory(self.dim, self.factory, _metric(self.similarity))
        except RuntimeError as error:
            raise DenseIndexError(f"invalid FAISS factory string {self.factory!r}: {error}") from error
        if self.ef_construction:
            # Not expressible in a factory string; it only matters while vectors are added.
            hnsw = _find_hnsw(inner)
            if hnsw is None:
                raise DenseIndexError(f"ef_construction needs an HNSW index, not {self.factory!r}")
            hnsw.hnsw.efConstruction = self.ef_construction
        return faiss.IndexIDMap2(inner)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def is_trained(self) -> bool:
        return bool(self._index.is_trained)

    def _prepare(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise DenseIndexError(f"expected vectors of dimension {self.dim}, got shape {vectors.shape}")
        if self.similarity == "cosine":
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors

    def rebuild(self, rowids: np.ndarray, vectors: np.ndarray) -> None:
        """Replace the contents with these vectors, training the index first if it needs it."""
        index = self._new_index()
        vectors = self._prepare(vectors)
        if not index.is_trained and len(vectors):
            self._check_trainable(index, len(vectors))
            try:
                index.train(vectors)
            except RuntimeError as error:
                raise DenseIndexError(
                    f"cannot train FAISS index {self.factory!r} on {len(vectors)} vectors: {error}. "
                    "Index more documents or choose a smaller index (fewer IVF lists, or 'Flat')."
                ) from error
        if self._mapped_file is not None:
            self._mapped_file.close()
            self._mapped_file = None
        self._index = index
        if len(vectors):
            self.add(rowids, vectors, prepared=True)

    def _check_trainable(self, index: faiss.Index, n: int) -> None:
        try:
            ivf = faiss.extract_index_ivf(index)
        except RuntimeError:
            return
        if n < ivf.nlist:
            raise DenseIndexError(
                f"cannot train FAISS index {self.factory!r}: it has {ivf.nlist} IVF lists but the store holds only "
                f"{n} vectors (FAISS recommends at least 39 per list). Index more documents or use fewer lists."
            )

    def add(self, rowids: np.ndarray, vectors: np.ndarray, prepared: bool = False) -> None:
        if not self._index.is_trained:
            raise DenseIndexError(f"FAISS index {self.factory!r} is not trained yet: rebuild it")
        vectors = vectors if prepared else self._prepare(vectors)
        self._unmap()
        self._index.add_with_ids(vectors, np.ascontiguousarray(rowids, dtype=np.int64))

    @property
    def is_mapped(self) -> bool:
        return self._mapped_file is not None

    def _unmap(self) -> None:
        """Replace a memory-mapped index by the same index read into memory (FAISS cannot add to it)."""
        handle = self._mapped_file
        if handle is None:
            return
        try:
            handle.seek(0)
            reader = faiss.PyCallbackIOReader(handle.read, 1 << 24)  # type: ignore[attr-defined]  # missing from faiss's stubs
            self._index = cast(faiss.IndexIDMap2, faiss.read_index(reader))
        except (OSError, RuntimeError) as error:
            raise DenseIndexError(f"cannot read the FAISS index {handle.name} into memory: {error}") from error
        handle.close()
        self._mapped_file = None

    def search(
        self,
        query: np.ndarray,
        top_k: int,
        allowed_rowids: np.ndarray | None = None,
        excluded_rowids: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rowids and scores of the ``top_k`` nearest vectors (only ``allowed_rowids`` if given,
        never ``excluded_rowids``)."""
        queries = self._prepare(np.asarray(query, dtype=np.float32).reshape(1, -1))
        return self._search(queries, top_k, allowed_rowids, excluded_rowids)[0]

    def search_many(
        self, queries: np.ndarray, top_k: int, allowed_rowids: np.ndarray | None = None
    ) -> list[np.ndarray]:
        """The rowids :meth:`search` finds for each row of ``queries``, from one FAISS call when unfiltered."""
        return [rowids for rowids, _ in self.search_many_scored(queries, top_k, allowed_rowids)]

    def search_many_scored(
        self,
        queries: np.ndarray,
        top_k: int,
        allowed_rowids: np.ndarray | None = None,
        excluded_rowids: np.ndarray | None = None,
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Rowids and scores for each row of ``queries`` (one FAISS call for all of them)."""
        prepared = self._prepare(np.asarray(queries, dtype=np.float32).reshape(-1, self.dim))
        if allowed_rowids is not None:
            # A filtered search per query: the selector of a wrapped index is built per call anyway.
            return [self._search(q[None, :], top_k, allowed_rowids, excluded_rowids)[0] for q in prepared]
        return self._search(prepared, top_k, None, excluded_rowids)

    def _search(
        self, queries: np.ndarray, top_k: int, allowed: np.ndarray | None, excluded: np.ndarray | None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
        if allowed is not None and excluded is not None and len(excluded):
            allowed = np.setdiff1d(allowed, excluded)
            excluded = None
        if excluded is not None and len(excluded) == 0:
            excluded = None
        if len(self) == 0 or top_k <= 0 or (allowed is not None and len(allowed) == 0):
            return [empty for _ in queries]
        outer, inner = self._selectors(allowed, excluded)
        params = self._search_parameters(self._index.index, outer, inner)
        with faiss_threads(search_threads(len(queries))):  # one question: one OpenMP thread
            distances, labels = self._index.search(queries, min(top_k, len(self)), params=params)
        found = []
        for row_labels, row_distances in zip(labels, distances, strict=True):
            keep = row_labels >= 0
            scores = row_distances[keep]
            found.append((row_labels[keep], (-scores if self.similarity == "l2" else scores).astype(np.float32)))
        return found

    def _selectors(
        self, allowed: np.ndarray | None, excluded: np.ndarray | None
    ) -> tuple[faiss.IDSelector | None, faiss.IDSelector | None]:
        """The id filter on rowids (outer) and, for wrapped indexes, on internal positions (inner)."""
        chosen = allowed if allowed is not None else excluded
        if chosen is None:
            return None, None
        ids = np.ascontiguousarray(chosen, dtype=np.int64)
        outer: faiss.IDSelector = faiss.IDSelectorBatch(ids)
        inner: faiss.IDSelector | None = None
        if self._wrapped():
            # IndexIDMap translates only the outermost selector; wrapped indexes need theirs
            # in internal positions already.
            positions = np.flatnonzero(np.isin(self.ids(), ids))
            inner = faiss.IDSelectorBatch(positions.astype(np.int64))
        if allowed is None:
            outer, inner = _negated(outer), (_negated(inner) if inner is not None else None)
        return outer, inner

    def ids(self) -> np.ndarray:
        """The rowid of each stored vector, in storage order."""
        return faiss.vector_to_array(self._index.id_map).astype(np.int64, copy=False)

    def remove(self, rowids: np.ndarray) -> None:
        """Remove these rowids' vectors (rowids not held are ignored).

        :raises DenseIndexError: when the index type cannot remove vectors (HNSW)."""
        if len(rowids) == 0:
            return
        if _find_hnsw(self._index.index) is not None:  # before reading a mapped index into memory for nothing
            raise DenseIndexError(f"FAISS index {self.factory!r} cannot remove vectors (HNSW)")
        self._unmap()
        try:
            self._index.remove_ids(faiss.IDSelectorBatch(np.ascontiguousarray(rowids, dtype=np.int64)))
        except RuntimeError as error:
            raise DenseIndexError(f"FAISS index {self.factory!r} cannot remove vectors: {error}") from error

    def contents(self) -> tuple[np.ndarray, np.ndarray]:
        """Every rowid and its vector as stored (cosine: normalised); a Flat index only."""
        if not isinstance(faiss.downcast_index(self._index.index), faiss.IndexFlat):
            raise DenseIndexError(f"only a Flat index can list its vectors, not {self.factory!r}")
        rowids = self.ids()
        if len(rowids) == 0:
            return rowids, np.zeros((0, self.dim), dtype=np.float32)
        return rowids, self._index.reconstruct_batch(rowids)

    def _wrapped(self) -> bool:
        return isinstance(faiss.downcast_index(self._index.index), (faiss.IndexPreTransform, faiss.IndexRefine))

    def _search_parameters(
        self, index: faiss.Index, selector: faiss.IDSelector | None, inner_selector: faiss.IDSelector | None
    ) -> faiss.SearchParameters | None:
        """Search parameters for ``index``: efSearch/nprobe where they apply, and the id filter."""
        index = faiss.downcast_index(index)
        if isinstance(index, (faiss.IndexPreTransform, faiss.IndexRefine)):
            wrapped = index.index if isinstance(index, faiss.IndexPreTransform) else index.base_index
            nested = self._search_parameters(wrapped, inner_selector, inner_selector)
            if nested is None:
                return None
            params: faiss.SearchParameters
            if isinstance(index, faiss.IndexPreTransform):
                pre_params = faiss.SearchParametersPreTransform()
                pre_params.index_params = nested
                params = pre_params
            else:
                refine_params = faiss.IndexRefineSearchParameters()
                refine_params.k_factor = index.k_factor
                refine_params.base_index_params = nested
                params = refine_params
            # the C++ object holds a raw pointer: keep the Python owner alive (setattr: as in _negated)
            setattr(params, "_keep", nested)  # noqa: B010
            return params
        if isinstance(index, faiss.IndexHNSW) and (self.ef_search or selector):
            hnsw_params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # missing from faiss's stubs
            hnsw_params.efSearch = self.ef_search or index.hnsw.efSearch
            params = hnsw_params
        elif isinstance(index, faiss.IndexIVF) and (self.nprobe or selector):
            ivf_params = faiss.SearchParametersIVF()
            ivf_params.nprobe = self.nprobe or index.nprobe
            params = ivf_params
        elif selector is not None:
            params = faiss.SearchParameters()
        else:
            return None
        if selector is not None:
            params.sel = selector
            setattr(params, "_keep_sel", selector)  # noqa: B010 - as in _negated
        return params

    def reconstruct(self, rowid: int) -> np.ndarray:
        # faiss's stubs list the torch overload first; without faiss.contrib.torch_utils it returns an array
        return cast(np.ndarray, self._index.reconstruct(int(rowid)))

    def stored_vectors(self, rowids: np.ndarray) -> np.ndarray | None:
        """The vectors of ``rowids`` (all indexed) as written, when the index keeps them exactly (a flat
        index, or HNSW over flat storage, and not cosine, whose vectors are stored normalised); else None."""
        if self.similarity == "cosine" or not self._stores_exact_vectors():
            return None
        return self._index.reconstruct_batch(np.ascontiguousarray(rowids, dtype=np.int64))

    def _stores_exact_vectors(self) -> bool:
        inner = faiss.downcast_index(self._index.index)
        if isinstance(inner, faiss.IndexHNSW):
            inner = faiss.downcast_index(inner.storage)
        return isinstance(inner, faiss.IndexFlat)

    # -- persistence ------------------------------------------------------------------------
    def save(self, directory: Path, generation: int, arrays: dict[str, np.ndarray] | None = None, **state: Any) -> None:
        """Write the index, its settings, ``arrays`` (``name.npy`` files) and a checksum manifest
        (with ``generation`` and ``state``) together, atomically."""
        with write_index_directory(directory, {"generation": generation, **state}) as tmp:
            faiss.write_index(self._index, str(tmp / "index.faiss"))
            for name, array in (arrays or {}).items():
                np.save(tmp / f"{name}.npy", array, allow_pickle=False)
            fault_point("dense_index.saving")
            settings = {"dim": self.dim, "similarity": self.similarity, "factory": self.factory}
            (tmp / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        self.generation = generation

    @classmethod
    def load(
        cls, directory: Path, ef_search: int | None = None, nprobe: int | None = None, memory_map: bool = False
    ) -> DenseIndex:
        """Read an index written by :meth:`save`, after checking its files against their checksums
        (memory-mapped with ``memory_map``, see the module docstring); ``state`` holds what was
        saved with it."""
        settings_file, index_file = directory / "settings.json", directory / "index.faiss"
        if not settings_file.is_file() or not index_file.is_file():
            raise DenseIndexError(f"no FAISS index in {directory}")
        handle = None
        try:
            # Opened before the check: a reload for writing reads these very bytes.
            handle = open(index_file, "rb") if memory_map else None  # noqa: SIM115 - kept open until the first add
            state = verified_state(directory)
            settings = json.loads(settings_file.read_text(encoding="utf-8"))
            index = cls(settings["dim"], settings["similarity"], settings["factory"], ef_search, nprobe)
            loaded = faiss.read_index(str(index_file), faiss.IO_FLAG_MMAP_IFC if memory_map else 0)
            index._index = cast(faiss.IndexIDMap2, loaded)  # checked below
            index._mapped_file = handle
            if handle is not None:
                weakref.finalize(index, handle.close)  # closing twice (after _unmap) is harmless
            index.generation = int(state["generation"])
        except (OSError, KeyError, ValueError, TypeError, RuntimeError) as error:
            if handle is not None:
                handle.close()
            raise DenseIndexError(f"FAISS index in {directory} is corrupt: {error}") from error
        if index._index.d != index.dim:
            raise DenseIndexError(
                f"FAISS index in {directory} has dimension {index._index.d}, settings say {index.dim}"
            )
        if not isinstance(faiss.downcast_index(index._index), faiss.IndexIDMap2):
            raise DenseIndexError(f"FAISS index in {directory} is not keyed by document rowids")
        index.state = state
        return index
