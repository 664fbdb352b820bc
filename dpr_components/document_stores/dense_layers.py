"""A saved FAISS index plus a small delta: writes cost what they write, not what the store holds.

The main index (any factory, memory-mapped when loaded) is written once and then left alone;
vectors written after it go to an exact ``Flat`` delta index with its own id map, and rows of
main whose vector was overwritten or removed are marked removed (tombstones): FAISS cannot
remove from a memory-mapped index, and HNSW cannot remove at all. Saving writes only the
delta and the tombstones, as a small folder of their own (``dense_delta/``) bound to the main
folder by the checksum its manifest records for ``index.faiss``; the main folder, and so the
memory map of every reader, stays untouched. Folding the delta into main (a full rewrite) is
the caller's decision: see :meth:`LayeredDenseIndex.fold` and the store's ``delta_fraction``.

Searches ask main for the ``top_k`` best rows that are not tombstones (a FAISS id filter, so
the list is still ``top_k`` long) and the delta for its exact ``top_k``, and merge the two by
score. With a Flat main the merged list is exactly what one index over all the vectors gives;
with a lossy main (HNSW, IVF-PQ) it is what main gives (filtered) plus the exact delta hits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dpr_components.document_stores.dense_index import DenseIndex, DenseIndexError
from dpr_components.document_stores.index_files import recorded_files, recorded_state
from dpr_components.utils.read_write_lock import ReadWriteLock
from dpr_components.utils.similarity import Similarity

DELTA_FACTORY = "Flat"
REMOVED = "removed"  # the tombstones' file in the delta folder (removed.npy)


def main_key(directory: Path) -> str | None:
    """What binds a delta to the main folder it was made for: the checksum of its index file."""
    files = recorded_files(directory)
    entry = files.get("index.faiss") if files else None
    return entry.get("blake2b") if isinstance(entry, dict) else None


class LayeredDenseIndex:
    """A main :class:`DenseIndex` minus tombstoned rows plus an exact delta; the same search
    interface as :class:`DenseIndex`.

    Searches may run in many threads while a write adds to the delta or folds it: FAISS gives no
    such guarantee (an add may move the vectors a search is reading), so reads share a lock that
    changes take alone."""

    def __init__(self, main: DenseIndex, main_key: str | None = None) -> None:
        self.main = main
        self.main_key = main_key  # None: main is not saved as it is in memory
        self.delta = DenseIndex(main.dim, main.similarity, DELTA_FACTORY)
        self.removed = np.zeros(0, dtype=np.int64)  # sorted rowids of main's vectors no longer valid
        self.generation = main.generation
        self._main_ids: np.ndarray | None = None  # sorted rowids held by main, read when first needed
        self._access = ReadWriteLock()

    # -- what DenseIndex offers -------------------------------------------------------------
    @property
    def dim(self) -> int:
        return self.main.dim

    @property
    def similarity(self) -> Similarity:
        return self.main.similarity

    @property
    def factory(self) -> str:
        return self.main.factory

    @property
    def is_trained(self) -> bool:
        return self.main.is_trained

    @property
    def is_mapped(self) -> bool:
        return self.main.is_mapped

    def __len__(self) -> int:
        return len(self.main) - len(self.removed) + len(self.delta)

    @property
    def delta_size(self) -> int:
        """Vectors held apart from main: delta vectors plus tombstones."""
        return len(self.delta) + len(self.removed)

    def rebuild(self, rowids: np.ndarray, vectors: np.ndarray) -> None:
        """Replace everything by a new main over these vectors (not saved yet)."""
        with self._access.writing():
            self.main.rebuild(rowids, vectors)
            self._reset_main(None)

    def _reset_main(self, key: str | None) -> None:
        self.main_key = key
        self.delta = DenseIndex(self.dim, self.similarity, DELTA_FACTORY)
        self.removed = np.zeros(0, dtype=np.int64)
        self._main_ids = None

    def add(self, rowids: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors of rowids not held (call :meth:`remove` first for rows being replaced)."""
        if len(rowids):
            with self._access.writing():
                self.delta.add(rowids, vectors)

    def remove(self, rowids: np.ndarray) -> None:
        """Forget the vectors of these rowids (those not held are ignored)."""
        rowids = np.unique(np.asarray(rowids, dtype=np.int64))
        if len(rowids) == 0:
            return
        with self._access.writing():
            self.delta.remove(rowids[np.isin(rowids, self.delta.ids())])
            self.removed = np.union1d(self.removed, rowids[self._in_main(rowids)])

    def _in_main(self, rowids: np.ndarray) -> np.ndarray:
        """Which of these rowids main holds (binary search: no pass over main's ids)."""
        if self._main_ids is None:
            self._main_ids = np.sort(self.main.ids())  # 8 bytes per vector, kept while main is
        held = self._main_ids
        positions = np.minimum(np.searchsorted(held, rowids), max(len(held) - 1, 0))
        return held[positions] == rowids if len(held) else np.zeros(len(rowids), dtype=np.bool_)

    def search(
        self, query: np.ndarray, top_k: int, allowed_rowids: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rowids and scores of the ``top_k`` nearest vectors (only ``allowed_rowids`` if given)."""
        with self._access.reading():
            main = self.main.search(query, top_k, allowed_rowids, self.removed)
            if len(self.delta) == 0:
                return main
            return _merge(main, self.delta.search(query, top_k, allowed_rowids), top_k)

    def search_many(
        self, queries: np.ndarray, top_k: int, allowed_rowids: np.ndarray | None = None
    ) -> list[np.ndarray]:
        """The rowids :meth:`search` finds for each row of ``queries``."""
        with self._access.reading():
            main = self.main.search_many_scored(queries, top_k, allowed_rowids, self.removed)
            if len(self.delta) == 0:
                return [rowids for rowids, _ in main]
            delta = self.delta.search_many_scored(queries, top_k, allowed_rowids)
        return [_merge(m, d, top_k)[0] for m, d in zip(main, delta, strict=True)]

    def reconstruct(self, rowid: int) -> np.ndarray:
        with self._access.reading():
            if rowid in self.delta.ids():
                return self.delta.reconstruct(rowid)
            if np.isin(rowid, self.removed):
                raise RuntimeError(f"row {rowid} has no vector in the index")
            return self.main.reconstruct(rowid)

    def stored_vectors(self, rowids: np.ndarray) -> np.ndarray | None:
        """The vectors of ``rowids`` (all indexed) as written, when both layers keep them exactly;
        else None (also when one of them is a tombstone: the table has the truth)."""
        with self._access.reading():
            return self._stored_vectors(np.asarray(rowids, dtype=np.int64))

    def _stored_vectors(self, rowids: np.ndarray) -> np.ndarray | None:
        in_delta = np.isin(rowids, self.delta.ids()) if len(self.delta) else np.zeros(len(rowids), dtype=np.bool_)
        from_main = rowids[~in_delta]
        if len(self.removed) and np.isin(from_main, self.removed).any():
            return None
        main_vectors = self.main.stored_vectors(from_main)
        if main_vectors is None:
            return None
        if not in_delta.any():
            return main_vectors
        delta_vectors = self.delta.stored_vectors(rowids[in_delta])
        if delta_vectors is None:
            return None
        out = np.empty((len(rowids), self.dim), dtype=np.float32)
        out[~in_delta], out[in_delta] = main_vectors, delta_vectors
        return out

    # -- folding and persistence ------------------------------------------------------------
    def fold(self) -> None:
        """Move the delta into main and apply the tombstones (main is then read into memory and
        is unsaved).

        :raises DenseIndexError: when main cannot remove vectors (HNSW) and there are tombstones:
            rebuild it from the documents instead."""
        with self._access.writing():
            self.main.remove(self.removed)
            rowids, vectors = self.delta.contents()
            if len(rowids):
                self.main.add(rowids, vectors, prepared=True)
            self.main.generation = self.generation
            self._reset_main(None)

    def save_main(self, directory: Path, **state: Any) -> None:
        """Write main (call :meth:`fold` first if the delta is not empty) and bind to it."""
        if self.delta_size:
            raise DenseIndexError("fold the delta into the main index before saving it")
        self.main.save(directory, self.generation, **state)
        self.main_key = main_key(directory)

    def save_delta(self, directory: Path, **state: Any) -> None:
        """Write the delta and the tombstones, bound to the saved main."""
        if self.main_key is None:
            raise DenseIndexError("the main index is not saved: save it before a delta")
        self.delta.save(directory, self.generation, arrays={REMOVED: self.removed}, main_key=self.main_key, **state)

    def load_delta(self, directory: Path, newest_generation: int) -> dict[str, Any] | None:
        """Take the delta and tombstones saved in ``directory`` for this main, if any (checked
        against their checksums); the state recorded with them, or None when there is no delta
        for this main at a generation from main's to ``newest_generation``.

        :raises DenseIndexError: when the delta folder is damaged or does not fit main."""
        recorded = recorded_state(directory) if directory.is_dir() else None
        if recorded is None or self.main_key is None or recorded.get("main_key") != self.main_key:
            return None  # no delta, or one made for another main (folded since): ignored
        generation = recorded.get("generation")
        if not isinstance(generation, int) or not self.main.generation <= generation <= newest_generation:
            return None
        delta = DenseIndex.load(directory)  # checks every file of the folder, the tombstones' too
        if (delta.dim, delta.similarity, delta.factory) != (self.dim, self.similarity, DELTA_FACTORY):
            raise DenseIndexError(f"delta index in {directory} does not match the main index")
        try:
            removed = np.load(directory / f"{REMOVED}.npy", allow_pickle=False)
        except (OSError, ValueError) as error:
            raise DenseIndexError(f"tombstones in {directory} unreadable: {error}") from error
        if removed.ndim != 1 or not np.issubdtype(removed.dtype, np.integer):
            raise DenseIndexError(f"tombstones in {directory} are not a list of rowids")
        removed = np.unique(removed.astype(np.int64))
        if len(removed) and not self._in_main(removed).all():
            raise DenseIndexError(f"tombstones in {directory} name rows the main index does not hold")
        self.delta, self.removed, self.generation = delta, removed, delta.generation
        return dict(delta.state)


def _merge(
    first: tuple[np.ndarray, np.ndarray], second: tuple[np.ndarray, np.ndarray], top_k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``top_k`` best of two (rowids, scores) lists with no rowid in common."""
    rowids = np.concatenate([first[0], second[0]])
    scores = np.concatenate([first[1], second[1]])
    order = np.argsort(-scores, kind="stable")[:top_k]
    return rowids[order], scores[order]
