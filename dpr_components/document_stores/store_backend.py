"""The shared state of one store folder: the SQLite table and the FAISS and BM25 indexes derived
from it, kept in step with the table and persisted next to it.

SQLite is the source of truth; an index is used only while it provably matches it:
- each index records the table generation it was built at, the store's id, and (FAISS) the
  highest rowid it has seen; saved folders also carry checksums of their files;
- every search reads the table's generation (one SELECT): when another handle or process has
  written since, both indexes catch up with the rows added, overwritten or removed since (the
  table's change log): FAISS in its delta (new vectors in a small exact index, overwritten or
  removed rows of the saved main index marked removed: dense_layers.py), BM25 on a copy so
  searches in flight keep a consistent index; an index is rebuilt only when that is impossible
  (a change log that no longer reaches back, damage);
- a loaded index whose files do not match their checksums, that belongs to another store, or
  whose size disagrees with the table, is rebuilt from the table with a warning.
Saving takes the folder's exclusive lock and loading its shared lock (:class:`StoreLock`).
A folder that is not writable is opened read-only: indexes are kept in memory, never saved.
With ``memory_map`` (the default) saved indexes are loaded memory-mapped (FAISS Flat/HNSW
storage, BM25 postings), so a large store opens without copying them into the heap.

Saving is lazy, so a write costs what it writes: a write only marks the indexes unsaved; they
catch up on the next search, which saves the index it used (FAISS: only its delta, in
``dense_delta/``, until the delta passes ``delta_fraction`` of the main index, when the save
folds it in and rewrites ``dense_index/``; BM25: only once it has caught up with more than
BM25_SAVE_FRACTION of its documents since its saved copy, which the next opener can catch up
from), and both are saved by ``save()``, when the backend is garbage-collected, and at
interpreter exit. A process killed before that loses no document: the next opener
catches up or rebuilds the indexes from SQLite."""

from __future__ import annotations

import atexit
import contextlib
import json
import shutil
import sqlite3
import threading
import urllib.parse
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from haystack import logging

from dpr_components.document_stores.bm25_index import BM25Index
from dpr_components.document_stores.dense_index import DenseIndex, DenseIndexError
from dpr_components.document_stores.dense_layers import LayeredDenseIndex, main_key
from dpr_components.document_stores.document_table import (
    DocumentTable,
    folder_is_writable,
)
from dpr_components.document_stores.folder_identity import (
    StoreFolderMovedError,
    folder_identity,
    moved_problem,
)
from dpr_components.document_stores.index_files import (
    recorded_state,
    write_index_directory,
)
from dpr_components.document_stores.store_lock import StoreLock
from dpr_components.utils.atomic_files import remove_stale_temporaries
from dpr_components.utils.output_folders import STORE, check_output_folder

logger = logging.getLogger(__name__)

DATABASE = "documents.sqlite"
DENSE_DIR = "dense_index"
DELTA_DIR = "dense_delta"
DELTA_FRACTION = 0.05
BM25_DIR = "bm25_index"
BM25_ROWIDS = "rowids.npy"
BM25_SAVE_FRACTION = 0.01


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
    memory_map: bool = True
    delta_fraction: float = DELTA_FRACTION


class StoreBackend:
    """The table of one folder (or of memory) plus lazily synchronised indexes."""

    def __init__(self, config: StoreConfig) -> None:
        self.unsaved_writes = False  # written through this backend since its last save(); first: __del__ reads it
        self.config = config
        self.root = Path(config.path) if config.path else None
        self.read_only = self.root is not None and not folder_is_writable(self.root)
        self.table = DocumentTable(self.root / DATABASE if self.root else None, read_only=self.read_only)
        self.lock = threading.RLock()
        self.files = StoreLock(self.root, writable=not self.read_only) if self.root else None
        self.store_id = self.table.info("store_id")
        self._check_settings()
        if self.root is not None and not self.read_only:
            self._remove_interrupted_saves()
        self._dense: LayeredDenseIndex | None = None
        self._dense_max_rowid = 0
        self._bm25: BM25Index | None = None
        self._bm25_rowids: np.ndarray = np.zeros(0, dtype=np.int64)
        self._bm25_generation = -1
        self._bm25_unsaved = 0  # rows caught up since the saved copy (or -1: no saved copy to catch up from)
        # Saved folders found untrustworthy: written again at the next save even if current.
        self._rewrite: set[str] = set()
        # Generation of each index this backend saved or loaded (skips re-saving on every search).
        self._saved_at: dict[str, int] = {}
        # The folder and database opened (folder_identity.py): each use checks the path still holds them.
        self.opened = folder_identity(self.root, DATABASE) if self.root is not None else None

    def _check_settings(self) -> None:
        """A folder remembers the vector settings it was built with; a mismatch is an error, not a silent mix."""
        wanted = {"similarity": self.config.similarity, "embedding_dim": self.config.embedding_dim}
        recorded = self.table.info("dense_settings")
        if recorded is None and not self.read_only:
            recorded = self.table.set_info_if_missing("dense_settings", wanted)
        _check_recorded_settings(self.root, self.config, recorded)

    def _remove_interrupted_saves(self) -> None:
        """Temporary folders of saves killed midway; only when no live process is saving."""
        assert self.root is not None and self.files is not None
        with self.files.exclusive(blocking=False) as acquired:
            if acquired:
                for leftover in remove_stale_temporaries(self.root):
                    logger.info("removed {path}, left by an interrupted save", path=leftover)

    @property
    def embedding_dim(self) -> int | None:
        return self.table.info("dense_settings", {}).get("embedding_dim") or self.config.embedding_dim

    def folder_problem(self) -> str | None:
        """Why the folder at the store's path is no longer the one this backend opened (removed, renamed,
        replaced by another), or ``None``: in place, or in memory."""
        if self.root is None or self.opened is None:
            return None
        return moved_problem(self.root, DATABASE, self.opened)

    def check_in_place(self) -> None:
        """Raise :class:`StoreFolderMovedError` unless the folder at the path is the one opened."""
        problem = self.folder_problem()
        if problem is not None:
            raise StoreFolderMovedError(f"{problem}: its handles no longer read or write it; open the store again")

    def confirm_written(self, generation: int) -> None:
        """After a write that committed ``generation``: raise :class:`StoreFolderMovedError` unless the
        folder at the path is still the one written into and its database, read afresh, holds the write."""
        if self.root is None:
            return
        problem = self.folder_problem()
        if problem is None and generation > 0:  # generation 0: nothing was ever written, nothing to find
            held = _peek_info(self.root / DATABASE, "generation")
            if not isinstance(held, int) or held < generation:
                problem = f"the database {self.root / DATABASE}, read again, does not hold the write"
        if problem is not None:
            raise StoreFolderMovedError(
                f"{problem}: the write went into the files opened before and is not in {self.root}"
            )

    # -- dense ------------------------------------------------------------------------------
    def dense(self) -> LayeredDenseIndex | None:
        """The FAISS index, up to date with the table; None if no document has a vector."""
        with self.lock:
            dim = self.embedding_dim
            if dim is None:
                return None
            index = self._dense
            if index is not None and (index.generation == self.table.generation or self._catch_up(index)):
                return index
            loaded = self._load_dense()
            if loaded is not None:
                return loaded
            index = self._rebuild_dense(dim)
            self._save_dense()  # rebuilt from scratch: worth keeping for the next opening
            return index

    def _catch_up(self, index: LayeredDenseIndex) -> bool:
        """Apply the vectors written, overwritten or removed since ``index`` was built (in its
        delta); False if the change log cannot tell what changed or the index needs training."""
        if not index.is_trained:
            return False
        changes = self.table.vector_changes(index.generation, self._dense_max_rowid, index.dim)
        if changes is None:
            return False
        index.remove(changes.touched_rowids)
        index.add(changes.rowids, changes.vectors)
        index.generation, self._dense_max_rowid = changes.state.generation, changes.state.max_rowid
        self._dense = index
        if (self.root is None or self.read_only) and self._delta_too_large(index):
            self._fold(index)  # never saved, so never folded by a save
        return True

    def _delta_too_large(self, index: LayeredDenseIndex) -> bool:
        return index.delta_size > self.config.delta_fraction * len(index.main)

    def _fold(self, index: LayeredDenseIndex) -> LayeredDenseIndex:
        """``index`` with its delta folded into main; rebuilt from the table when main cannot
        remove the vectors the delta replaced (HNSW)."""
        if index.delta_size == 0:
            return index
        try:
            index.fold()
            return index
        except DenseIndexError as error:
            logger.info("{error}: rebuilding the FAISS index from the documents", error=str(error))
            dim = self.embedding_dim
            assert dim is not None
            return self._rebuild_dense(dim)

    def _rebuild_dense(self, dim: int) -> LayeredDenseIndex:
        c = self.config
        main = DenseIndex(dim, c.similarity, c.index_factory, c.ef_search, c.nprobe, c.ef_construction)  # type: ignore[arg-type]
        index = LayeredDenseIndex(main)
        rowids, vectors, state = self.table.vectors(dim)
        index.rebuild(rowids, vectors)
        index.generation = state.generation
        self._dense, self._dense_max_rowid = index, state.max_rowid
        return index

    def _load_dense(self) -> LayeredDenseIndex | None:
        """The saved FAISS index (main plus delta) caught up with the table, if it can be trusted."""
        directory = self._usable_folder(DENSE_DIR, exact_generation=False, oldest_generation=0)
        if directory is None:
            return None
        assert self.files is not None and self.root is not None
        with self.files.shared():
            try:
                main = DenseIndex.load(directory, self.config.ef_search, self.config.nprobe, self.config.memory_map)
            except DenseIndexError as error:
                logger.warning(
                    "{error}: rebuilding it from the documents", error=str(error)
                )  # a string: no frames kept alive
                self._rewrite.add(DENSE_DIR)
                return None
            loaded, state = LayeredDenseIndex(main, main_key(directory)), main.state
            try:
                state = loaded.load_delta(self.root / DELTA_DIR, self.table.generation) or state
            except DenseIndexError as error:
                logger.warning("{error}: catching up from the main FAISS index instead", error=str(error))
                loaded = LayeredDenseIndex(main, loaded.main_key)
                self._rewrite.add(DELTA_DIR)
        c = self.config
        if (loaded.factory, loaded.similarity, loaded.dim) != (c.index_factory, c.similarity, self.embedding_dim):
            logger.info(
                "FAISS index in {directory} was built with other settings: rebuilding it",
                directory=directory,
            )
            self._rewrite.add(DENSE_DIR)
            return None
        saved_generation = loaded.generation
        previous = self._dense_max_rowid
        self._dense_max_rowid = int(state.get("max_rowid", 0))
        if not self._catch_up(loaded):
            self._dense_max_rowid = previous
            return None
        self._saved_at[DENSE_DIR] = saved_generation
        count, table_state = self.table.vector_count()
        if table_state.generation == loaded.generation and count != len(loaded):
            logger.warning(
                "FAISS index in {directory} holds {vectors} vectors but the documents have {count}: rebuilding it from the documents",
                directory=directory,
                vectors=len(loaded),
                count=count,
            )
            self._rewrite.add(DENSE_DIR)
            return None
        return loaded

    # -- bm25 -------------------------------------------------------------------------------
    def bm25(self) -> tuple[BM25Index, np.ndarray]:
        """The BM25 index and the rowid of each of its positions (increasing; the rowids of
        removed positions stay until the index is compacted at saving), up to date with the table."""
        with self.lock:
            index = self._bm25
            if index is not None and self._bm25_generation == self.table.generation:
                return index, self._bm25_rowids
            if index is not None and self._catch_up_bm25(index.copy(), self._bm25_rowids, self._bm25_generation):
                assert self._bm25 is not None  # the caught-up copy
                return self._bm25, self._bm25_rowids
            if not self._load_bm25():
                rowids, texts, generation = self.table.texts(self.config.bm25_title_field)
                index = BM25Index(**self._bm25_params())
                index.build(texts, show_progress=len(texts) > 20000)
                self._set_bm25(index, rowids, generation)
                self._bm25_unsaved = -1
                self._save_bm25()
            assert self._bm25 is not None
            return self._bm25, self._bm25_rowids

    def _catch_up_bm25(self, index: BM25Index, rowids: np.ndarray, generation: int) -> bool:
        """Bring ``index`` (a copy no search uses; rowids per position, at ``generation``) up to
        date with the rows written since; False if the table's change log cannot tell what changed."""
        max_rowid = int(rowids[-1]) if len(rowids) else 0
        changes = self.table.text_changes(generation, max_rowid, self.config.bm25_title_field)
        if changes is None:
            return False
        removed = self._live_positions(index, rowids, changes.removed_rowids)
        changed = self._live_positions(index, rowids, changes.changed_rowids)
        if removed is None or changed is None:
            logger.warning("BM25 index misses rows the documents changed: rebuilding it from the documents")
            return False
        index.remove(removed)
        index.replace(changed, changes.changed_texts)
        index.add(changes.new_texts)
        if len(changes.new_rowids):
            rowids = np.concatenate([rowids, changes.new_rowids])
        self._set_bm25(index, rowids, changes.state.generation)
        if self._bm25_unsaved >= 0:
            self._bm25_unsaved += changes.size
        return True

    @staticmethod
    def _live_positions(index: BM25Index, rowids: np.ndarray, wanted: np.ndarray) -> np.ndarray | None:
        """Positions of ``wanted`` rowids in the index; None if one is missing or was removed."""
        positions = np.searchsorted(rowids, wanted)
        if len(positions) and (
            positions.max() >= len(rowids)
            or not np.array_equal(rowids[positions], wanted)
            or not index.is_live(positions).all()
        ):
            return None
        return positions

    def _load_bm25(self) -> bool:
        """Use the saved BM25 index, caught up with the table, if it can be trusted."""
        directory = self._usable_folder(BM25_DIR, exact_generation=False, oldest_generation=0)
        if directory is None:
            return False
        assert self.files is not None
        with self.files.shared():
            try:
                index = BM25Index.load(directory, memory_map=self.config.memory_map)
                rowids = np.load(directory / BM25_ROWIDS, allow_pickle=False)
            except (OSError, ValueError) as error:
                logger.warning(
                    "BM25 index in {directory} unreadable ({error}): rebuilding it from the documents",
                    directory=directory,
                    error=str(error),
                )
                self._rewrite.add(BM25_DIR)
                return False
        if not _params_match(index.params, self._bm25_params()):
            logger.info(
                "BM25 index in {directory} was built with other parameters: rebuilding it",
                directory=directory,
            )
            self._rewrite.add(BM25_DIR)
            return False
        generation = int(index.state["generation"])
        if (
            rowids.ndim != 1
            or len(rowids) != len(index)
            or not np.issubdtype(rowids.dtype, np.integer)
            or (len(rowids) > 1 and not np.all(np.diff(rowids) > 0))
        ):
            logger.warning(
                "BM25 index in {directory} has unusable row ids: rebuilding it from the documents",
                directory=directory,
            )
            self._rewrite.add(BM25_DIR)
            return False
        count = self.table.count()
        if generation == self.table.generation and count != index.live_count:
            logger.warning(
                "BM25 index in {directory} holds {indexed} documents but the store has {count}: rebuilding it from the documents",
                directory=directory,
                indexed=index.live_count,
                count=count,
            )
            self._rewrite.add(BM25_DIR)
            return False
        self._bm25_unsaved = 0
        if not self._catch_up_bm25(index, rowids.astype(np.int64), generation):
            logger.info(
                "BM25 index in {directory} is too old to catch up with the documents: rebuilding it",
                directory=directory,
            )
            return False
        self._saved_at[BM25_DIR] = generation
        return True

    def _bm25_params(self) -> dict[str, Any]:
        return {"k1": self.config.bm25_k1, "b": self.config.bm25_b, "method": self.config.bm25_method}

    def _set_bm25(self, index: BM25Index, rowids: np.ndarray, generation: int) -> None:
        self._bm25, self._bm25_rowids, self._bm25_generation = index, rowids, generation

    # -- saved folders ----------------------------------------------------------------------
    def _usable_folder(self, name: str, exact_generation: bool, oldest_generation: int | None = None) -> Path | None:
        """``root/name`` if its manifest says it was saved for this store at a generation it can
        be used from (its files are checked when it is loaded); None otherwise. Without an exact
        generation, saves from ``oldest_generation`` on are usable (default: the last generation
        that changed or removed a vector)."""
        if self.root is None:
            return None
        directory = self.root / name
        if not directory.exists():
            return None
        recorded = recorded_state(directory)
        state = self.table.state()
        generation = None if recorded is None else recorded.get("generation")
        problem = None
        if recorded is None:
            problem = "has no readable checksum manifest"
        elif recorded.get("store_id") != self.store_id:
            problem = "belongs to another store"
        elif not isinstance(generation, int) or generation > state.generation:
            problem = f"claims generation {generation!r} but the documents are at generation {state.generation}"
        if problem is not None:
            logger.warning(
                "index folder {directory} {problem}: rebuilding it from the documents",
                directory=directory,
                problem=problem,
            )
            self._rewrite.add(name)
            return None
        assert isinstance(generation, int)
        oldest = state.vectors_reset_at if oldest_generation is None else oldest_generation
        usable = generation == state.generation or (not exact_generation and oldest <= generation)
        if not usable:
            logger.info("index folder {directory} is out of date: rebuilding it", directory=directory)
            return None
        return directory

    def _saved_generation(self, name: str) -> int:
        assert self.root is not None
        recorded = recorded_state(self.root / name)
        if (
            recorded is None
            or recorded.get("store_id") != self.store_id
            or not isinstance(recorded.get("generation"), int)
        ):
            return -1
        if name == DENSE_DIR:
            delta = recorded_state(self.root / DELTA_DIR)
            key = main_key(self.root / DENSE_DIR)
            if delta is not None and key is not None and delta.get("main_key") == key:
                return max(int(recorded["generation"]), int(delta.get("generation", -1)))
        return int(recorded["generation"])

    def save(self) -> None:
        """Bring both indexes up to date and write them atomically next to the documents
        (in memory only for a read-only folder)."""
        if self.root is None or self.read_only or not self._in_place_to_save():
            return
        with self.lock:
            self.dense()
            self.bm25()
            self._save_dense()
            self._save_bm25()
            self.unsaved_writes = False

    def save_searched(self) -> None:
        """Save the indexes held in memory that are newer than their saved copy (after a search
        caught them up); an index no search needed stays unbuilt."""
        if self.root is None or self.read_only or not self._in_place_to_save():
            return
        with self.lock:
            if self._dense is not None and self._dense.generation > self._saved_at.get(DENSE_DIR, -1):
                self._save_dense()
            if (
                self._bm25 is not None
                and self._bm25_generation > self._saved_at.get(BM25_DIR, -1)
                and self._bm25_worth_saving()
            ):
                self._save_bm25()

    def _in_place_to_save(self) -> bool:
        """Whether the folder at the path is the one opened: another one must not get this store's indexes
        (nor a removed one be created again with them)."""
        problem = self.folder_problem()
        if problem is not None:
            logger.warning("not saving the indexes of {store}: {problem}", store=self.root, problem=problem)
        return problem is None

    def _bm25_worth_saving(self) -> bool:
        """Whether the saved BM25 copy is missing or further behind than the next opener should
        catch up (a small write is caught up again from SQLite rather than rewriting the index)."""
        assert self._bm25 is not None
        return self._bm25_unsaved < 0 or self._bm25_unsaved > BM25_SAVE_FRACTION * self._bm25.live_count

    def save_pending(self) -> None:
        """``save()`` if documents were written through this backend since it last saved."""
        if self.unsaved_writes:
            self.save()

    def __del__(self) -> None:
        try:
            self.save_pending()
        except Exception as error:  # noqa: BLE001 - a finaliser must not raise; the documents are safe in SQLite
            logger.warning(
                "could not save the indexes of {store} ({error}): the next opening rebuilds them",
                store=self.root,
                error=error,
            )

    def _save_dense(self, fold: bool = False) -> None:
        """Save the FAISS index: only its delta while it is small and made for the saved main;
        else (or with ``fold``) the delta folded into main and main rewritten."""
        dense = self._dense
        if self.root is None or self.read_only or dense is None:
            return
        assert self.files is not None
        with self.lock, self.files.exclusive():
            # Another process may have saved the same or a newer generation meanwhile.
            saved_main = None if DENSE_DIR in self._rewrite else main_key(self.root / DENSE_DIR)
            current = dense.main_key is not None and dense.main_key == saved_main
            if fold and current and dense.delta_size == 0 and not self._needs_saving(DENSE_DIR, dense.generation):
                fold = False  # already compact and saved
            if fold or DELTA_DIR in self._rewrite or self._needs_saving(DENSE_DIR, dense.generation):
                if fold or not current or self._delta_too_large(dense):
                    dense = self._fold(dense)  # may rebuild from a newer table state: max_rowid read after
                    # The old delta goes first: a crash then leaves the old main, caught up from the table.
                    shutil.rmtree(self.root / DELTA_DIR, ignore_errors=True)
                    dense.save_main(self.root / DENSE_DIR, max_rowid=self._dense_max_rowid, store_id=self.store_id)
                else:
                    dense.save_delta(self.root / DELTA_DIR, max_rowid=self._dense_max_rowid, store_id=self.store_id)
                self._rewrite.discard(DENSE_DIR)
                self._rewrite.discard(DELTA_DIR)
            self._saved_at[DENSE_DIR] = dense.generation

    def compact_dense(self) -> None:
        """Fold the FAISS delta into the main index and rewrite it (in memory only for a store
        without a writable folder)."""
        with self.lock:
            dense = self.dense()
            if dense is None:
                return
            if self.root is None or self.read_only:
                self._fold(dense)
            else:
                self._save_dense(fold=True)

    def _save_bm25(self) -> None:
        if self.root is None or self.read_only or self._bm25 is None:
            return
        assert self.files is not None
        with self.lock, self.files.exclusive():
            if self._needs_saving(BM25_DIR, self._bm25_generation):
                # Removed positions are dropped on saving; searches in flight keep the old pair.
                index, kept = self._bm25.compacted()
                if index is not self._bm25:
                    self._set_bm25(index, self._bm25_rowids[kept], self._bm25_generation)
                state = {"generation": self._bm25_generation, "store_id": self.store_id}
                with write_index_directory(self.root / BM25_DIR, state) as tmp:
                    index.write_files(tmp)
                    np.save(tmp / BM25_ROWIDS, self._bm25_rowids)
                self._rewrite.discard(BM25_DIR)
            self._saved_at[BM25_DIR] = self._bm25_generation
            self._bm25_unsaved = 0

    def _needs_saving(self, name: str, generation: int) -> bool:
        return name in self._rewrite or self._saved_generation(name) < generation


def _check_recorded_settings(root: Path | None, config: StoreConfig, recorded: Any) -> None:
    """Raise when the vector settings a folder recorded differ from ``config``'s."""
    if not isinstance(recorded, dict):
        return
    if recorded.get("similarity", config.similarity) != config.similarity:
        raise ValueError(
            f"document store {root} was built with similarity {recorded['similarity']!r}, not {config.similarity!r}"
        )
    if config.embedding_dim and recorded.get("embedding_dim") and recorded["embedding_dim"] != config.embedding_dim:
        raise ValueError(
            f"document store {root} holds {recorded['embedding_dim']}-dimensional vectors, not {config.embedding_dim}"
        )


def bm25_positions_in(index: BM25Index, indexed_rowids: np.ndarray, rowids: Sequence[int] | np.ndarray) -> np.ndarray:
    """The position of each rowid in ``index`` (whose positions hold ``indexed_rowids``, as
    :meth:`StoreBackend.bm25` returns them); -1 for rows it does not hold or removed."""
    wanted = np.asarray(rowids, dtype=np.int64)
    positions = np.searchsorted(indexed_rowids, wanted)
    found = positions < len(indexed_rowids)
    found[found] = (indexed_rowids[positions[found]] == wanted[found]) & index.is_live(positions[found])
    return np.where(found, positions, -1).astype(np.int64)


def _params_match(actual: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return all(actual.get(key) == value for key, value in wanted.items())


_BACKENDS: weakref.WeakValueDictionary[str, StoreBackend] = weakref.WeakValueDictionary()
_BACKENDS_LOCK = threading.Lock()


@atexit.register
def _save_at_exit() -> None:
    """Save the indexes of every folder written to in this process and not saved since."""
    for backend in list(_BACKENDS.values()):
        try:
            backend.save_pending()
        except Exception as error:  # noqa: BLE001 - one folder's failure must not keep the others unsaved
            logger.warning(
                "could not save the indexes of {store} ({error}): the next opening rebuilds them",
                store=backend.root,
                error=error,
            )


def backend_for(config: StoreConfig) -> StoreBackend:
    """The backend of ``config``'s folder, shared by every handle on it in this process; opening
    it creates the folder and its database when they do not exist. A folder removed or replaced since
    its backend opened gets a new one; the handles on the old one refuse to be used (folder_identity.py)."""
    if config.path is None:
        return StoreBackend(config)
    key = _folder_key(config.path)
    with _BACKENDS_LOCK:
        backend = _BACKENDS.get(key)
        if backend is None or backend.folder_problem() is not None:  # a folder replaced: the new one's own backend
            backend = StoreBackend(config)
            _BACKENDS[key] = backend
        else:
            _check_same_config(backend, config)
        return backend


def check_before_opening(config: StoreConfig) -> None:
    """Report now what opening ``config``'s folder would refuse: other settings than a handle open
    on it in this process, or than the folder's database records. Reads only; creates nothing."""
    if config.path is None:
        return
    check_output_folder(config.path, STORE, replace=False, hint="give the folder of a store or a new folder")
    with _BACKENDS_LOCK:
        backend = _BACKENDS.get(_folder_key(config.path))
    if backend is not None and backend.folder_problem() is None:
        _check_same_config(backend, config)
        return
    root = Path(config.path)
    if holds_database(root):
        _check_recorded_settings(root, config, _peek_info(root / DATABASE, "dense_settings"))


def holds_database(folder: str | Path) -> bool:
    """Whether ``folder`` holds a store's database (a store was written there)."""
    return (Path(folder) / DATABASE).is_file()


def _folder_key(path: str) -> str:
    return str(Path(path).resolve())


def _check_same_config(backend: StoreBackend, config: StoreConfig) -> None:
    if backend.config != config:
        raise ValueError(
            f"document store {config.path} is already open in this process with other settings "
            f"({backend.config}); open it with the same settings"
        )


def _peek_info(database: Path, key: str) -> Any:
    """A ``store_info`` value read without writing anything or creating any file.

    :raises ValueError: when the file is not an SQLite database. Any other problem (no table
        yet, a page caught mid-write by another process) gives None: opening the store handles it.
    """
    wal, shm = (database.with_name(database.name + suffix) for suffix in ("-wal", "-shm"))
    if wal.is_file() and wal.stat().st_size:
        if not shm.is_file():
            return None  # reading the log would create its index file
        mode = "mode=ro"  # recent writes may still be in the write-ahead log
    else:
        mode = "immutable=1"
    uri = f"file:{urllib.parse.quote(str(database))}?{mode}"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            row = db.execute("SELECT value FROM store_info WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None
    except sqlite3.DatabaseError as error:
        if getattr(error, "sqlite_errorname", None) == "SQLITE_NOTADB":
            raise ValueError(f"document database {database} is corrupt or not an SQLite file: {error}") from None
        return None
    except (sqlite3.Error, ValueError, TypeError):
        return None
