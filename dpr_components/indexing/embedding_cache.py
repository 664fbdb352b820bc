"""A persistent cache of passage vectors, keyed by encoder fingerprint and passage text.

Encoding a large corpus takes long on a CPU: with the cache, an interrupted run resumes
where it stopped, and a re-index with the same encoder costs nothing."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def passage_key(title: str | None, text: str) -> str:
    return hashlib.sha1(f"{title or ''}\x1f{text}".encode()).hexdigest()


class EmbeddingCache:
    """SQLite file of ``key -> float32 vector``; every :meth:`put` is committed at once."""

    def __init__(self, path: str | Path, dim: int) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self._db.commit()

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 900):
            chunk = list(keys[start : start + 900])
            marks = ",".join("?" * len(chunk))
            for key, blob in self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                vector = np.frombuffer(blob, dtype=np.float32)
                if vector.shape[0] == self.dim:
                    found[key] = vector
        return found

    def put(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        rows = [(key, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for key, v in zip(keys, vectors)]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)", rows)

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        self._db.close()
