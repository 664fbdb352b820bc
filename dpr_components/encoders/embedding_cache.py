"""A persistent cache of passage vectors, keyed by encoder fingerprint and passage text.

Encoding a large corpus takes long on a CPU: with the cache, an interrupted run resumes
where it stopped, and a re-index with the same encoder costs nothing.

The cache only ever saves work: a file that is not a cache (damaged, or another SQLite file) is
set aside as ``<name>.damaged`` with a warning and the passages are encoded again, and a vector
of the wrong size is never returned."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from haystack import logging

logger = logging.getLogger(__name__)

_COLUMNS = ["key", "vector"]


def passage_key(title: str | None, text: str) -> str:
    return hashlib.sha1(f"{title or ''}\x1f{text}".encode()).hexdigest()


class EmbeddingCache:
    """SQLite file of ``key -> float32 vector``; every :meth:`put` is committed at once."""

    def __init__(self, path: str | Path, dim: int) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as error:
            self._set_aside(error)
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # WAL with synchronous=NORMAL survives a killed process; a power cut may lose the last batches.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            db.commit()
            columns = [row[1] for row in db.execute("PRAGMA table_info(vectors)")]
            if columns != _COLUMNS:
                raise sqlite3.DatabaseError(f"its table 'vectors' has columns {columns}, expected {_COLUMNS}")
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _set_aside(self, error: sqlite3.DatabaseError) -> None:
        damaged = self.path.with_name(self.path.name + ".damaged")
        logger.warning(
            "vector cache {path} is not a usable cache ({error}): moved to {moved_to}; its passages are encoded again",
            path=self.path,
            error=error,
            moved_to=damaged,
        )
        for suffix in ("", "-wal", "-shm"):
            source = Path(f"{self.path}{suffix}")
            if source.exists():
                os.replace(source, Path(f"{damaged}{suffix}"))

    def _failed(self, error: sqlite3.Error) -> ValueError:
        return ValueError(
            f"vector cache {self.path} is damaged ({error}): delete it (the passages will be encoded again)"
        )

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors of ``keys`` (vectors of another size than ``dim`` are left out)."""
        found: dict[str, np.ndarray] = {}
        wrong_size = 0
        try:
            for start in range(0, len(keys), 900):
                chunk = list(keys[start : start + 900])
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                    vector = (
                        np.frombuffer(blob, dtype=np.float32)
                        if isinstance(blob, bytes) and len(blob) % 4 == 0
                        else None
                    )
                    if vector is not None and vector.shape[0] == self.dim and np.isfinite(vector).all():
                        found[key] = vector
                    else:
                        wrong_size += 1
        except sqlite3.Error as error:
            raise self._failed(error) from error
        if wrong_size:
            logger.warning(
                "vector cache {path} holds {wrong} vectors that are not {dim} finite floats: those passages are encoded again",
                path=self.path,
                wrong=wrong_size,
                dim=self.dim,
            )
        return found

    def put(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        rows = [
            (key, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for key, v in zip(keys, vectors, strict=True)
        ]
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)", rows)
        except sqlite3.Error as error:
            raise self._failed(error) from error

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        self._db.close()
