"""Documents, their metadata and their vectors in one SQLite file: the store's source of truth.

Every write is one transaction, so a crash loses nothing committed before it. A ``generation``
counter goes up with every change; the derived FAISS and BM25 indexes record the generation
they were built from, so a stale index is detected and rebuilt instead of trusted."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpr_components.document_stores.sql_filters import filter_to_sql

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    content TEXT,
    meta TEXT NOT NULL DEFAULT '{}',
    embedding BLOB
);
CREATE TABLE IF NOT EXISTS store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass
class StoredDocument:
    rowid: int
    id: str
    content: str | None
    meta: dict[str, Any]
    embedding: np.ndarray | None


@dataclass
class WriteOutcome:
    written: int
    added_rowids: list[int]
    replaced_vectors: bool  # an existing vector changed or vanished: vector indexes need a rebuild


class DocumentTable:
    """Thread-safe access to the documents SQLite database (a file, or memory when ``path`` is None)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(path) if path else ":memory:", check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as error:
            raise ValueError(f"document database {path} is corrupt or not an SQLite file: {error}") from error
        self._lock = threading.RLock()

    # -- store info -------------------------------------------------------------------------
    def info(self, key: str, default: Any = None) -> Any:
        with self._lock:
            row = self._db.execute("SELECT value FROM store_info WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def _set_info(self, key: str, value: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO store_info (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def set_info(self, key: str, value: Any) -> None:
        with self._lock, self._db:
            self._set_info(key, value)

    @property
    def generation(self) -> int:
        return int(self.info("generation", 0))

    # -- writes -----------------------------------------------------------------------------
    def write(
        self, rows: Sequence[tuple[str, str | None, str, bytes | None]], policy: str
    ) -> WriteOutcome:
        """Insert ``(id, content, meta_json, embedding_bytes)`` rows under a duplicate policy
        (``fail``, ``skip`` or ``overwrite``) in one transaction."""
        ids = [row[0] for row in rows]
        if len(set(ids)) != len(ids):
            seen: set[str] = set()
            duplicate = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
            raise ValueError(f"document id {duplicate!r} appears twice in one write")
        with self._lock, self._db:
            existing = self._existing(ids)
            if existing and policy == "fail":
                from haystack.document_stores.errors import DuplicateDocumentError

                raise DuplicateDocumentError(f"documents with ids {sorted(existing)[:5]} already exist in the store")
            new_rows = [row for row in rows if row[0] not in existing]
            replaced = False
            written = len(new_rows)
            if policy == "overwrite" and existing:
                old_vectors = dict(
                    self._db.execute(
                        f"SELECT id, embedding FROM documents WHERE id IN ({','.join('?' * len(existing))})",
                        list(existing),
                    ).fetchall()
                )
                updates = [row for row in rows if row[0] in existing]
                replaced = any(old_vectors.get(row[0]) is not None and old_vectors[row[0]] != row[3] for row in updates)
                self._db.executemany(
                    "UPDATE documents SET content = ?, meta = ?, embedding = ? WHERE id = ?",
                    [(content, meta, emb, doc_id) for doc_id, content, meta, emb in updates],
                )
                written += len(updates)
                # A vector added to a document that had none is new to the vector index, not a replacement.
                added_to_old = [row[0] for row in updates if old_vectors.get(row[0]) is None and row[3] is not None]
            else:
                added_to_old = []
            cursor = self._db.cursor()
            added_rowids = []
            for row in new_rows:
                cursor.execute("INSERT INTO documents (id, content, meta, embedding) VALUES (?, ?, ?, ?)", row)
                if row[3] is not None:
                    added_rowids.append(int(cursor.lastrowid))
            if added_to_old:
                added_rowids += [r for (r,) in self._select_rowids(added_to_old)]
            if written:
                self._set_info("generation", self.generation + 1)
        return WriteOutcome(written=written, added_rowids=added_rowids, replaced_vectors=replaced)

    def delete(self, ids: Sequence[str]) -> int:
        with self._lock, self._db:
            deleted = 0
            for start in range(0, len(ids), 900):
                chunk = list(ids[start : start + 900])
                deleted += self._db.execute(
                    f"DELETE FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk
                ).rowcount
            if deleted:
                self._set_info("generation", self.generation + 1)
        return deleted

    # -- reads ------------------------------------------------------------------------------
    def _existing(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), 900):
            chunk = list(ids[start : start + 900])
            found.update(
                r for (r,) in self._db.execute(f"SELECT id FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            )
        return found

    def _select_rowids(self, ids: Sequence[str]) -> list[tuple[int]]:
        out: list[tuple[int]] = []
        for start in range(0, len(ids), 900):
            chunk = list(ids[start : start + 900])
            out += self._db.execute(
                f"SELECT rowid FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk
            ).fetchall()
        return out

    def count(self, filters: dict[str, Any] | None = None) -> int:
        where, params = self._where(filters)
        with self._lock:
            return int(self._db.execute(f"SELECT COUNT(*) FROM documents {where}", params).fetchone()[0])

    def rowids(self, filters: dict[str, Any] | None = None) -> np.ndarray:
        where, params = self._where(filters)
        with self._lock:
            rows = self._db.execute(f"SELECT rowid FROM documents {where} ORDER BY rowid", params).fetchall()
        return np.fromiter((r for (r,) in rows), dtype=np.int64, count=len(rows))

    def rowids_for_ids(self, ids: Sequence[str]) -> dict[str, int]:
        with self._lock:
            out: dict[str, int] = {}
            for start in range(0, len(ids), 900):
                chunk = list(ids[start : start + 900])
                out.update(
                    self._db.execute(
                        f"SELECT id, rowid FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk
                    ).fetchall()
                )
        return out

    def documents(self, filters: dict[str, Any] | None = None, with_embeddings: bool = True) -> list[StoredDocument]:
        where, params = self._where(filters)
        columns = "rowid, id, content, meta, " + ("embedding" if with_embeddings else "NULL")
        with self._lock:
            rows = self._db.execute(f"SELECT {columns} FROM documents {where} ORDER BY rowid", params).fetchall()
        return [self._stored(row) for row in rows]

    def documents_by_rowid(self, rowids: Sequence[int], with_embeddings: bool = False) -> dict[int, StoredDocument]:
        columns = "rowid, id, content, meta, " + ("embedding" if with_embeddings else "NULL")
        out: dict[int, StoredDocument] = {}
        with self._lock:
            for start in range(0, len(rowids), 900):
                chunk = [int(r) for r in rowids[start : start + 900]]
                for row in self._db.execute(
                    f"SELECT {columns} FROM documents WHERE rowid IN ({','.join('?' * len(chunk))})", chunk
                ):
                    out[row[0]] = self._stored(row)
        return out

    def iter_texts(self, title_field: str | None) -> Iterator[tuple[int, str]]:
        """``(rowid, text to index for BM25)`` for every document, in rowid order."""
        with self._lock:
            rows = self._db.execute("SELECT rowid, content, meta FROM documents ORDER BY rowid").fetchall()
        for rowid, content, meta in rows:
            title = json.loads(meta).get(title_field) if title_field else None
            text = content or ""
            yield rowid, f"{title}\n{text}" if isinstance(title, str) and title else text

    def vectors(self, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """All stored vectors and their rowids."""
        with self._lock:
            rows = self._db.execute(
                "SELECT rowid, embedding FROM documents WHERE embedding IS NOT NULL ORDER BY rowid"
            ).fetchall()
        rowids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
        matrix = np.empty((len(rows), dim), dtype=np.float32)
        for i, (_, blob) in enumerate(rows):
            matrix[i] = np.frombuffer(blob, dtype=np.float32)
        return rowids, matrix

    def vectors_for(self, rowids: Sequence[int], dim: int) -> dict[int, np.ndarray]:
        found = self.documents_by_rowid(rowids, with_embeddings=True)
        return {r: d.embedding for r, d in found.items() if d.embedding is not None}

    def _where(self, filters: dict[str, Any] | None) -> tuple[str, list[Any]]:
        if not filters:
            return "", []
        params: list[Any] = []
        return f"WHERE {filter_to_sql(filters, params)}", params

    @staticmethod
    def _stored(row: tuple[Any, ...]) -> StoredDocument:
        rowid, doc_id, content, meta, blob = row
        embedding = np.frombuffer(blob, dtype=np.float32).copy() if blob is not None else None
        return StoredDocument(rowid=rowid, id=doc_id, content=content, meta=json.loads(meta), embedding=embedding)

    def close(self) -> None:
        with self._lock:
            self._db.close()
