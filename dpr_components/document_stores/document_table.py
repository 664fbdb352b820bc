"""Documents, their metadata and their vectors in one SQLite file: the store's source of truth.

Every write is one ``BEGIN IMMEDIATE`` transaction, so a crash loses nothing committed before
it and concurrent writers (threads or processes) are serialised. A ``generation`` counter goes
up with every change; ``vectors_reset_at`` is the last generation that changed or removed a
stored vector (anything but appending new rows). The derived FAISS and BM25 indexes record the
generation they were built from, so a stale index is caught up or rebuilt instead of trusted:
catching up means adding the rows whose rowid is above the highest one the index has seen
(rowids only grow) and redoing the rows the change log (``row_changes``) lists as overwritten
or removed since its generation (:meth:`DocumentTable.vector_changes`; text indexes also redo
re-titled rows: :meth:`DocumentTable.text_changes`). While no vector was changed or removed
since an index's generation, the log is not even read."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import threading
import urllib.parse
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from haystack.errors import FilterError

from dpr_components.document_stores.sql_filters import (
    ERROR_FUNCTION,
    INDEXED_META_FIELDS,
    filter_to_sql,
)
from dpr_components.utils.fault_points import fault_point

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    content TEXT,
    meta TEXT NOT NULL DEFAULT '{}',
    embedding BLOB,
    blob_data BLOB,
    blob_info TEXT,
    sparse_embedding TEXT
);
CREATE TABLE IF NOT EXISTS store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS row_changes (generation INTEGER NOT NULL, kind INTEGER NOT NULL, row INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS row_changes_by_generation ON row_changes (generation);
""" + "".join(
    f"CREATE INDEX IF NOT EXISTS documents_by_{name} ON documents ({sql});\n"
    for name, sql in INDEXED_META_FIELDS.items()
)
# How many documents have a vector, kept by triggers in the transaction of every write (whatever
# code writes: write, overwrite, delete, delete_all...), so checking a loaded FAISS index needs
# no scan of the table (reading every row to test ``embedding IS NOT NULL`` took 3.3 s at 2M
# passages). A database written before the counter gets it at the first count (one scan).
VECTOR_COUNT_KEY = "vector_count"
COUNTER_TRIGGERS = {
    "count_vectors_inserted": ("AFTER INSERT ON documents WHEN NEW.embedding IS NOT NULL", "1"),
    "count_vectors_deleted": ("AFTER DELETE ON documents WHEN OLD.embedding IS NOT NULL", "-1"),
    "count_vectors_updated": (
        "AFTER UPDATE OF embedding ON documents WHEN (OLD.embedding IS NULL) != (NEW.embedding IS NULL)",
        "(NEW.embedding IS NOT NULL) - (OLD.embedding IS NOT NULL)",
    ),
}
# Columns added after the first release: older databases get them at opening (see _migrate).
_ADDED_COLUMNS = {"blob_data": "BLOB", "blob_info": "TEXT", "sparse_embedding": "TEXT"}
ENCODER_KEY = "passage_encoder"
_CHUNK = 900  # ids per IN (...) list, below SQLite's parameter limit
_BUSY_TIMEOUT_SECONDS = 60.0
_SQLITE_FULL = 13  # SQLITE_FULL: the disk (or the database's page limit) is full; nothing of the transaction is kept
# The change log (``row_changes``): which existing rows each generation overwrote, removed or
# gave new metadata (new rows need no entry: their rowids are above every older one). It is
# complete for generations above CHANGES_FROM_KEY; past CHANGE_LOG_LIMIT entries, the older
# half is dropped (an index older than what remains is rebuilt instead of caught up).
CHANGED, REMOVED, META_CHANGED = 0, 1, 2
CHANGES_FROM_KEY = "changes_logged_from"
_LOG_SIZE_KEY = "change_log_size"
CHANGE_LOG_LIMIT = 2_000_000
# Errors of a statement that a (huge) filter made too large for SQLite.
_TOO_LARGE = ("too many SQL variables", "Expression tree is too large", "parser stack overflow", "too many terms")


class ReadOnlyStoreError(ValueError):
    """A write to a store opened read-only (its folder is not writable)."""


class EncoderMismatchError(ValueError):
    """Vectors from another passage encoder than the one that made the store's vectors."""


@dataclass
class StoredDocument:
    rowid: int
    id: str
    content: str | None
    meta: dict[str, Any]
    embedding: np.ndarray | None
    blob_data: bytes | None = None
    blob_info: dict[str, Any] | None = None  # the blob's mime_type and meta
    sparse_embedding: dict[str, Any] | None = None  # {"indices": [...], "values": [...]}


class DocumentRow(NamedTuple):
    """One document as written to the table (JSON columns already serialised)."""

    id: str
    content: str | None
    meta: str
    embedding: bytes | None
    blob_data: bytes | None = None
    blob_info: str | None = None
    sparse_embedding: str | None = None


@dataclass(frozen=True)
class TableState:
    generation: int
    vectors_reset_at: int  # last generation that changed or removed a stored vector
    max_rowid: int  # highest rowid ever assigned


@dataclass(frozen=True)
class TextChanges:
    """What a text index built at an older generation must redo to match the table."""

    state: TableState
    changed_rowids: np.ndarray  # rows it holds whose text may have changed, with their texts now
    changed_texts: list[str]
    removed_rowids: np.ndarray  # rows it holds that are gone
    new_rowids: np.ndarray  # rows above the highest it holds, with their texts
    new_texts: list[str]

    @property
    def size(self) -> int:
        return len(self.changed_rowids) + len(self.removed_rowids) + len(self.new_rowids)


@dataclass(frozen=True)
class VectorChanges:
    """What a vector index built at an older generation must redo to match the table."""

    state: TableState
    touched_rowids: np.ndarray  # rows it may hold whose vector changed or is gone: remove them
    rowids: np.ndarray  # then add these: touched rows that have a vector now, and new rows
    vectors: np.ndarray


@dataclass(frozen=True)
class WriteOutcome:
    written: int
    generation: int  # after the write


@dataclass(frozen=True)
class VectorBatch:
    """What a write's vectors must agree with: the store's dimension and passage encoder."""

    dim: int
    first_id: str  # for messages
    encoder: str | None  # the digest stamped by PassageEmbedder, if any


class _FilterValueError(Exception):
    pass


_pending_filter_error = threading.local()


def _raise_filter_error(message: str, stored_type: str) -> None:
    """SQL function ``dpr_filter_error``: SQLite hides a Python function's exception, so the
    message waits in a thread-local for :meth:`DocumentTable.select` to raise it."""
    _pending_filter_error.message = message.replace("{stored_type}", stored_type)
    raise _FilterValueError(_pending_filter_error.message)


def _connect(path: Path | None, read_only: bool) -> sqlite3.Connection:
    if path is None:
        return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    if not read_only:
        return sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=_BUSY_TIMEOUT_SECONDS)
    if not path.is_file():
        raise ReadOnlyStoreError(f"document database {path} does not exist and its folder is not writable")
    # A read-only folder cannot hold the WAL index (-shm) SQLite needs; with no pending WAL the
    # file cannot change under us (nobody can write to the folder), so it is opened immutable.
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.is_file() and wal.stat().st_size else "immutable=1"
    uri = f"file:{urllib.parse.quote(str(path))}?{mode}"
    return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None, timeout=_BUSY_TIMEOUT_SECONDS)


def _is_disk_full(error: BaseException) -> bool:
    if not isinstance(error, sqlite3.Error):
        return False
    code = getattr(error, "sqlite_errorcode", None)  # Python 3.11+; before it, only the message tells
    return (code & 0xFF) == _SQLITE_FULL if code is not None else "database or disk is full" in str(error)


class DocumentTable:
    """Thread-safe access to the documents SQLite database (a file, or memory when ``path`` is None).

    ``read_only`` opens an existing file without ever writing to it or its folder."""

    def __init__(self, path: Path | None, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self.name = str(path.parent) if path is not None else "(in memory)"
        self._lock = threading.RLock()
        if path is not None and not read_only:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise ValueError(f"cannot create the document store folder {path.parent}: {error}") from error
        try:
            self._db = _connect(path, read_only)
            self._db.create_function(ERROR_FUNCTION, 2, _raise_filter_error)
            if read_only:
                tables = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not {"documents", "store_info"} <= tables:
                    raise ReadOnlyStoreError(f"{path} holds no document store and its folder is not writable")
            else:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                had_log = self._has_table("row_changes")
                self._db.executescript(_SCHEMA)
                self._migrate()
                if not had_log:
                    # Writes before the log existed are unknown: it is complete from now on.
                    with self._transaction():
                        self._set_info(CHANGES_FROM_KEY, int(self._info("generation", 0)))
                if (
                    not self._has_vector_counter()
                    and self._db.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is None
                ):
                    self._add_vector_counter()  # an empty table: free now (else at the first count)
                if path is not None and self.info("store_id") is None:
                    with self._transaction():
                        if self._info("store_id") is None:
                            self._set_info("store_id", uuid.uuid4().hex)
            columns = self._columns()
            # A read-only database of an older release lacks the added columns: they read as NULL.
            self._extra_columns = ", ".join(name if name in columns else "NULL" for name in _ADDED_COLUMNS)
        except sqlite3.DatabaseError as error:
            if _is_disk_full(error):
                raise OSError(errno.ENOSPC, "No space left on device", str(path)) from error
            raise ValueError(f"document database {path} is corrupt or not an SQLite file: {error}") from error

    def _has_table(self, name: str) -> bool:
        return (
            self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
            is not None
        )

    def _columns(self) -> set[str]:
        return {row[1] for row in self._db.execute("PRAGMA table_info(documents)")}

    def _migrate(self) -> None:
        """Add the columns of later releases to a database created before them."""
        if set(_ADDED_COLUMNS) <= self._columns():
            return
        with self._transaction():
            present = self._columns()  # another process may have migrated meanwhile
            for name, sql_type in _ADDED_COLUMNS.items():
                if name not in present:
                    self._db.execute(f"ALTER TABLE documents ADD COLUMN {name} {sql_type}")

    def _has_vector_counter(self) -> bool:
        names = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        return set(COUNTER_TRIGGERS) <= names

    def _add_vector_counter(self) -> None:
        """Count the vectors once and create the triggers that keep the count from now on."""
        with self._transaction():
            if self._has_vector_counter():  # another process added it meanwhile
                return
            count = self._db.execute("SELECT COUNT(*) FROM documents WHERE embedding IS NOT NULL").fetchone()[0]
            self._set_info(VECTOR_COUNT_KEY, int(count))
            self._create_counter_triggers()

    def _create_counter_triggers(self) -> None:
        for name, (event, delta) in COUNTER_TRIGGERS.items():
            self._db.execute(
                f"CREATE TRIGGER IF NOT EXISTS {name} {event} BEGIN UPDATE store_info "
                f"SET value = CAST(value AS INTEGER) + {delta} WHERE key = '{VECTOR_COUNT_KEY}'; END"
            )

    # -- transactions -----------------------------------------------------------------------
    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """A write transaction: takes SQLite's write lock first, so reads inside it are current."""
        if self.read_only:
            raise ReadOnlyStoreError(
                f"document store {self.name} is read-only (its folder is not writable): it can be searched, "
                "not written to; make the folder writable or index into another folder"
            )
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
                self._db.execute("COMMIT")
            except BaseException as error:
                if self._db.in_transaction:  # SQLite may have rolled back already (a full disk)
                    self._db.execute("ROLLBACK")
                if _is_disk_full(error):
                    raise OSError(errno.ENOSPC, "No space left on device", str(self.path)) from error
                raise

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        """A read transaction: every SELECT inside sees the same committed state."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield
            finally:
                self._db.execute("COMMIT")

    # -- store info -------------------------------------------------------------------------
    def _info(self, key: str, default: Any = None) -> Any:
        row = self._db.execute("SELECT value FROM store_info WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def info(self, key: str, default: Any = None) -> Any:
        with self._lock:
            return self._info(key, default)

    def _set_info(self, key: str, value: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO store_info (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def set_info_if_missing(self, key: str, value: Any) -> Any:
        """Record ``value`` unless ``key`` is already set; return what is recorded."""
        with self._transaction():
            recorded = self._info(key)
            if recorded is None:
                self._set_info(key, value)
                return value
            return recorded

    @property
    def generation(self) -> int:
        """The current generation: one cheap SELECT, made before every search."""
        return int(self.info("generation", 0))

    def _state(self) -> TableState:
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'documents'").fetchone()
        return TableState(
            int(self._info("generation", 0)), int(self._info("vectors_reset_at", 0)), int(row[0]) if row else 0
        )

    def state(self) -> TableState:
        with self._snapshot():
            return self._state()

    # -- writes -----------------------------------------------------------------------------
    def write(self, rows: Sequence[DocumentRow], policy: str, vectors: VectorBatch | None = None) -> WriteOutcome:
        """Insert rows under a duplicate policy
        (``fail``, ``skip`` or ``overwrite``) in one transaction; ``vectors`` describes the rows' vectors."""
        ids = [row[0] for row in rows]
        if len(set(ids)) != len(ids):
            seen: set[str] = set()
            duplicate = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
            raise ValueError(f"document id {duplicate!r} appears twice in one write")
        with self._transaction():
            if vectors is not None:
                self._check_vectors(vectors)
            old_vectors = self._old_vectors(ids)
            if old_vectors and policy == "fail":
                from haystack.document_stores.errors import DuplicateDocumentError

                raise DuplicateDocumentError(f"documents with ids {sorted(old_vectors)[:5]} already exist in the store")
            new_rows = [row for row in rows if row[0] not in old_vectors]
            updates = [row for row in rows if row[0] in old_vectors] if policy == "overwrite" else []
            if updates:
                next_generation = int(self._info("generation", 0)) + 1
                self._log_changes(CHANGED, next_generation, "WHERE id = ?", [(row.id,) for row in updates])
            self._db.executemany(
                "UPDATE documents SET content = ?, meta = ?, embedding = ?, blob_data = ?, blob_info = ?, "
                "sparse_embedding = ? WHERE id = ?",
                [(*row[1:], row.id) for row in updates],
            )
            self._db.executemany(
                "INSERT INTO documents (id, content, meta, embedding, blob_data, blob_info, sparse_embedding) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                new_rows,
            )
            written = len(new_rows) + len(updates)
            generation = int(self._info("generation", 0))
            if written:
                generation += 1
                self._set_info("generation", generation)
                # Any vector changed, removed or added to an old row: vector indexes cannot just append.
                if any(old_vectors[row.id] != row.embedding for row in updates):
                    self._set_info("vectors_reset_at", generation)
            fault_point("document_table.before_commit")
        return WriteOutcome(written=written, generation=generation)

    def _check_vectors(self, batch: VectorBatch) -> None:
        """Inside the write transaction, so two writers cannot record different settings."""
        settings = self._info("dense_settings", {})
        recorded_dim = settings.get("embedding_dim")
        if recorded_dim is None:
            self._set_info("dense_settings", {**settings, "embedding_dim": batch.dim})
        elif recorded_dim != batch.dim:
            raise ValueError(
                f"document {batch.first_id!r}: embedding has dimension {batch.dim} but the store {self.name} holds "
                f"{recorded_dim}-dimensional vectors; use the encoder the store was indexed with"
            )
        if batch.encoder is None:
            return
        recorded = self._info(ENCODER_KEY)
        if recorded == batch.encoder:
            return
        if recorded is None:
            # Once per store (a store written before encoders were recorded): afterwards the record answers.
            recorded = self._stamped_other_than(batch.encoder)
        elif not self._db.execute("SELECT 1 FROM documents WHERE embedding IS NOT NULL LIMIT 1").fetchone():
            recorded = None  # no vector left: the store starts over with this encoder
        if recorded is not None:
            raise EncoderMismatchError(
                f"document store {self.name} was indexed with passage encoder {recorded} (weights digest), but "
                f"these passages were embedded by passage encoder {batch.encoder}: vectors of two encoders cannot "
                "be searched together. Index with the store's encoder, or index into a new folder (--store) or "
                "delete this one to re-index everything with the new encoder"
            )
        self._set_info(ENCODER_KEY, batch.encoder)

    def _stamped_other_than(self, encoder: str) -> str | None:
        path = f"$.{ENCODER_KEY}"
        row = self._db.execute(
            "SELECT json_extract(meta, ?) FROM documents WHERE embedding IS NOT NULL "
            "AND json_type(meta, ?) = 'text' AND json_extract(meta, ?) != ? LIMIT 1",
            (path, path, path, encoder),
        ).fetchone()
        return row[0] if row else None

    def delete(self, ids: Sequence[str]) -> int:
        with self._transaction():
            deleted = 0
            next_generation = int(self._info("generation", 0)) + 1
            for chunk in _chunks(ids):
                self._log_changes(REMOVED, next_generation, f"WHERE id IN ({','.join('?' * len(chunk))})", [chunk])
                deleted += self._db.execute(
                    f"DELETE FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk
                ).rowcount
            if deleted:
                generation = int(self._info("generation", 0)) + 1
                self._set_info("generation", generation)
                self._set_info("vectors_reset_at", generation)
        return deleted

    def delete_all(self, dense_settings: dict[str, Any] | None = None) -> int:
        """Remove every document; the number removed. The store keeps its id, and its recorded
        vector settings unless ``dense_settings`` replaces them (the passage encoder is then forgotten)."""
        with self._transaction():
            counted = self._has_vector_counter()
            if counted:
                # A table with triggers is emptied row by row (SQLite's truncate optimisation is off):
                # 2.4x slower at 100k rows (docs/benchmarks/scale/scale_delete_all.md). Dropped and
                # recreated in this transaction, the count reset with them.
                for name in COUNTER_TRIGGERS:
                    self._db.execute(f"DROP TRIGGER {name}")
            deleted = self._db.execute("DELETE FROM documents").rowcount
            if counted:
                self._create_counter_triggers()
                self._set_info(VECTOR_COUNT_KEY, 0)
            if deleted:
                # Every row is gone: nothing older than this generation can be caught up.
                self._db.execute("DELETE FROM row_changes")
                self._set_info(_LOG_SIZE_KEY, 0)
                self._set_info(CHANGES_FROM_KEY, int(self._info("generation", 0)) + 1)
            if dense_settings is not None:
                self._set_info("dense_settings", dense_settings)
                self._db.execute("DELETE FROM store_info WHERE key = ?", (ENCODER_KEY,))
            if deleted or dense_settings is not None:
                self._bump_generation(vectors_changed=True)
        return deleted

    def delete_where(self, filters: dict[str, Any]) -> int:
        """Remove the documents matching ``filters``; the number removed."""
        where, params = _where(filters)
        with self._filter_errors(), self._transaction():
            self._log_changes(REMOVED, int(self._info("generation", 0)) + 1, where, [params])
            deleted = self._db.execute(f"DELETE FROM documents {where}", params).rowcount
            if deleted:
                self._bump_generation(vectors_changed=True)
        return deleted

    def update_meta_where(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """Merge ``meta`` into the metadata of the documents matching ``filters`` (keys of ``meta``
        replace the same keys); the number updated. Vectors are untouched."""
        where, params = _where(filters)
        with self._filter_errors(), self._transaction():
            rows = self._db.execute(f"SELECT rowid, meta FROM documents {where}", params).fetchall()
            if rows:
                self._log_rowids(META_CHANGED, int(self._info("generation", 0)) + 1, [rowid for rowid, _ in rows])
            self._db.executemany(
                "UPDATE documents SET meta = ? WHERE rowid = ?",
                [(json.dumps({**json.loads(old), **meta}, ensure_ascii=False), rowid) for rowid, old in rows],
            )
            if rows:
                self._bump_generation(vectors_changed=False)
        return len(rows)

    def _log_changes(self, kind: int, generation: int, where: str, params: Sequence[Sequence[Any]]) -> None:
        """Log the rows ``where`` selects (once per parameter set) as changed at ``generation``."""
        logged = 0
        for row_params in params:
            logged += self._db.execute(
                f"INSERT INTO row_changes (generation, kind, row) SELECT ?, ?, rowid FROM documents {where}",
                [generation, kind, *row_params],
            ).rowcount
        self._grow_log(logged)

    def _log_rowids(self, kind: int, generation: int, rowids: Sequence[int]) -> None:
        self._db.executemany(
            "INSERT INTO row_changes (generation, kind, row) VALUES (?, ?, ?)", [(generation, kind, r) for r in rowids]
        )
        self._grow_log(len(rowids))

    def _grow_log(self, logged: int) -> None:
        if not logged:
            return
        size = int(self._info(_LOG_SIZE_KEY, 0)) + logged
        if size > CHANGE_LOG_LIMIT:
            row = self._db.execute(
                "SELECT generation FROM row_changes ORDER BY generation LIMIT 1 OFFSET ?", (size // 2,)
            ).fetchone()
            if row is not None:
                self._db.execute("DELETE FROM row_changes WHERE generation <= ?", (row[0],))
                self._set_info(CHANGES_FROM_KEY, max(int(row[0]), int(self._info(CHANGES_FROM_KEY, 0))))
                size = int(self._db.execute("SELECT COUNT(*) FROM row_changes").fetchone()[0])
        self._set_info(_LOG_SIZE_KEY, size)

    def _bump_generation(self, vectors_changed: bool) -> None:
        generation = int(self._info("generation", 0)) + 1
        self._set_info("generation", generation)
        if vectors_changed:
            self._set_info("vectors_reset_at", generation)

    # -- reads ------------------------------------------------------------------------------
    def _old_vectors(self, ids: Sequence[str]) -> dict[str, bytes | None]:
        found: dict[str, bytes | None] = {}
        for chunk in _chunks(ids):
            found.update(
                self._db.execute(
                    f"SELECT id, embedding FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk
                )
            )
        return found

    def select(
        self, sql: str, filters: dict[str, Any] | None, leading_params: Sequence[Any] = ()
    ) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` (with ``{where}`` for the filter; ``leading_params`` bind the ``?`` before
        it), with SQLite's errors about the filter turned into ``FilterError``."""
        where, params = _where(filters)
        with self._filter_errors(), self._lock:
            return self._db.execute(sql.format(where=where), [*leading_params, *params]).fetchall()

    @contextlib.contextmanager
    def _filter_errors(self) -> Iterator[None]:
        """SQLite's errors caused by a filter (a stored value it cannot compare, a filter too
        large for SQLite) as ``FilterError``."""
        _pending_filter_error.message = None
        try:
            yield
        except sqlite3.OperationalError as error:
            message = getattr(_pending_filter_error, "message", None)
            _pending_filter_error.message = None
            if message:
                raise FilterError(message) from None
            if any(text in str(error) for text in _TOO_LARGE):
                raise FilterError(f"filter is too large for the document store: {error}") from error
            raise

    def count(self, filters: dict[str, Any] | None = None) -> int:
        return int(self.select("SELECT COUNT(*) FROM documents {where}", filters)[0][0])

    def rowids(self, filters: dict[str, Any] | None = None) -> np.ndarray:
        rows = self.select("SELECT rowid FROM documents {where} ORDER BY rowid", filters)
        return np.fromiter((r for (r,) in rows), dtype=np.int64, count=len(rows))

    def rowids_for_ids(self, ids: Sequence[str]) -> dict[str, int]:
        with self._lock:
            out: dict[str, int] = {}
            for chunk in _chunks(ids):
                out.update(
                    self._db.execute(
                        f"SELECT id, rowid FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk
                    ).fetchall()
                )
        return out

    def _document_columns(self, with_embeddings: bool) -> str:
        return f"rowid, id, content, meta, {'embedding' if with_embeddings else 'NULL'}, {self._extra_columns}"

    def documents(self, filters: dict[str, Any] | None = None, with_embeddings: bool = True) -> list[StoredDocument]:
        columns = self._document_columns(with_embeddings)
        # The filter picks row ids alone: with every column asked for at once, SQLite plans an OR of
        # thousands of conditions as a multi-index OR that takes seconds (5,000 conditions: ~25 s).
        matching = "WHERE rowid IN (SELECT rowid FROM documents {where})" if filters else ""
        rows = self.select(f"SELECT {columns} FROM documents {matching} ORDER BY rowid", filters)
        return [self._stored(row) for row in rows]

    def documents_by_rowid(self, rowids: Sequence[int], with_embeddings: bool = False) -> dict[int, StoredDocument]:
        columns = self._document_columns(with_embeddings)
        out: dict[int, StoredDocument] = {}
        with self._lock:
            for chunk in _chunks([int(r) for r in rowids]):
                for row in self._db.execute(
                    f"SELECT {columns} FROM documents WHERE rowid IN ({','.join('?' * len(chunk))})", chunk
                ):
                    out[row[0]] = self._stored(row)
        return out

    def texts(self, title_field: str | None) -> tuple[np.ndarray, list[str], int]:
        """Rowids and texts to index for BM25 of every document, in rowid order, and their generation."""
        with self._snapshot():
            generation = self._state().generation
            rows = self._db.execute("SELECT rowid, content, meta FROM documents ORDER BY rowid").fetchall()
        return _rowids(rows), [_text(content, meta, title_field) for _, content, meta in rows], generation

    def text_changes(self, since: int, max_rowid: int, title_field: str | None) -> TextChanges | None:
        """The rows whose BM25 text changed since generation ``since`` for an index holding rows up
        to ``max_rowid``: cost in proportion to the changes. None when the change log does not go
        back that far (the index must be rebuilt)."""
        kinds = (CHANGED, REMOVED, META_CHANGED) if title_field else (CHANGED, REMOVED)
        with self._snapshot():
            state = self._state()
            if since > state.generation or not self._has_table("row_changes"):
                return None
            if since < int(self._info(CHANGES_FROM_KEY, 0)):
                return None
            touched = [
                r
                for (r,) in self._db.execute(
                    f"SELECT DISTINCT row FROM row_changes WHERE generation > ? AND row <= ? "
                    f"AND kind IN ({','.join('?' * len(kinds))}) ORDER BY row",
                    (since, max_rowid, *kinds),
                )
            ]
            changed: list[tuple[int, str | None, str]] = []
            for chunk in _chunks(touched):
                changed += self._db.execute(
                    f"SELECT rowid, content, meta FROM documents WHERE rowid IN ({','.join('?' * len(chunk))}) ORDER BY rowid",
                    chunk,
                ).fetchall()
            new = self._db.execute(
                "SELECT rowid, content, meta FROM documents WHERE rowid > ? ORDER BY rowid", (max_rowid,)
            ).fetchall()
        changed_rowids = _rowids(changed)
        return TextChanges(
            state=state,
            changed_rowids=changed_rowids,
            changed_texts=[_text(content, meta, title_field) for _, content, meta in changed],
            removed_rowids=np.setdiff1d(np.array(touched, dtype=np.int64), changed_rowids),
            new_rowids=_rowids(new),
            new_texts=[_text(content, meta, title_field) for _, content, meta in new],
        )

    def vectors(self, dim: int, above_rowid: int = 0) -> tuple[np.ndarray, np.ndarray, TableState]:
        """The stored vectors of rows above ``above_rowid`` (all by default), their rowids, and
        the state they were read at."""
        with self._snapshot():
            state = self._state()
            rows = self._db.execute(
                "SELECT rowid, embedding FROM documents WHERE rowid > ? AND embedding IS NOT NULL ORDER BY rowid",
                (above_rowid,),
            ).fetchall()
        rowids, matrix = _vector_rows(rows, dim)
        return rowids, matrix, state

    def vector_changes(self, since: int, max_rowid: int, dim: int) -> VectorChanges | None:
        """The vectors changed, removed or added since generation ``since`` for an index holding
        rows up to ``max_rowid``: cost in proportion to the changes. None when the change log
        does not go back that far (the index must be rebuilt)."""
        with self._snapshot():
            state = self._state()
            if since > state.generation:
                return None
            touched: list[int] = []
            if state.vectors_reset_at > since:  # else no stored vector changed: only new rows
                if not self._has_table("row_changes") or since < int(self._info(CHANGES_FROM_KEY, 0)):
                    return None
                touched = [
                    r
                    for (r,) in self._db.execute(
                        "SELECT DISTINCT row FROM row_changes WHERE generation > ? AND row <= ? AND kind IN (?, ?) "
                        "ORDER BY row",
                        (since, max_rowid, CHANGED, REMOVED),
                    )
                ]
            rows: list[tuple[int, bytes]] = []
            for chunk in _chunks(touched):
                rows += self._db.execute(
                    f"SELECT rowid, embedding FROM documents WHERE rowid IN ({','.join('?' * len(chunk))}) "
                    "AND embedding IS NOT NULL ORDER BY rowid",
                    chunk,
                ).fetchall()
            rows += self._db.execute(
                "SELECT rowid, embedding FROM documents WHERE rowid > ? AND embedding IS NOT NULL ORDER BY rowid",
                (max_rowid,),
            ).fetchall()
        rowids, matrix = _vector_rows(rows, dim)
        return VectorChanges(state, np.array(touched, dtype=np.int64), rowids, matrix)

    def vector_count(self) -> tuple[int, TableState]:
        """How many documents have a vector, and the state: read from the counter the triggers
        keep (a database without it gets it now; read-only, it is counted by a scan)."""
        with self._lock:
            if not self.read_only and not self._has_vector_counter():
                self._add_vector_counter()
            with self._snapshot():
                if self._has_vector_counter():
                    count = self._info(VECTOR_COUNT_KEY)
                else:
                    count = self._db.execute("SELECT COUNT(*) FROM documents WHERE embedding IS NOT NULL").fetchone()[0]
                return int(count), self._state()

    def vectors_for(self, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        found = self.documents_by_rowid(rowids, with_embeddings=True)
        return {r: d.embedding for r, d in found.items() if d.embedding is not None}

    @staticmethod
    def _stored(row: tuple[Any, ...]) -> StoredDocument:
        rowid, doc_id, content, meta, vector, blob_data, blob_info, sparse = row
        return StoredDocument(
            rowid=rowid,
            id=doc_id,
            content=content,
            meta=json.loads(meta),
            embedding=np.frombuffer(vector, dtype=np.float32).copy() if vector is not None else None,
            blob_data=blob_data,
            blob_info=json.loads(blob_info) if blob_info is not None else None,
            sparse_embedding=json.loads(sparse) if sparse is not None else None,
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _vector_rows(rows: Sequence[tuple[int, bytes]], dim: int) -> tuple[np.ndarray, np.ndarray]:
    rowids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
    matrix = np.empty((len(rows), dim), dtype=np.float32)
    for i, (_, blob) in enumerate(rows):
        matrix[i] = np.frombuffer(blob, dtype=np.float32)
    return rowids, matrix


def _rowids(rows: Sequence[tuple[Any, ...]]) -> np.ndarray:
    return np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))


def _text(content: str | None, meta: str, title_field: str | None) -> str:
    """What BM25 indexes of a row: its content, after its title when ``title_field`` names one."""
    title = json.loads(meta).get(title_field) if title_field else None
    text = content or ""
    return f"{title}\n{text}" if isinstance(title, str) and title else text


def _where(filters: dict[str, Any] | None) -> tuple[str, list[Any]]:
    """``WHERE ...`` for ``filters`` (empty without filters) and its bound parameters."""
    params: list[Any] = []
    return (f"WHERE {filter_to_sql(filters, params)}" if filters else ""), params


def _chunks(items: Sequence[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield list(items[start : start + _CHUNK])


def folder_is_writable(folder: Path) -> bool:
    """Whether the store can write in ``folder`` (and to its database, if there is one)."""
    database = folder / "documents.sqlite"
    if not folder.exists():
        return True  # created on open
    return os.access(folder, os.W_OK) and (not database.exists() or os.access(database, os.W_OK))
