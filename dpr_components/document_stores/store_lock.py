"""A lock file in a store folder that orders writers and readers of its derived indexes.

Saving an index (and cleaning up after interrupted saves) takes the lock exclusively; loading
one takes it shared, so a reader never sees half of one save and half of another. ``flock``
locks belong to the open file and vanish when the process dies, so a killed writer never
leaves the folder locked. SQLite has its own locking; this lock only covers the index folders."""

from __future__ import annotations

import contextlib
import fcntl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from haystack import logging

LOCK_FILE = "store.lock"

logger = logging.getLogger(__name__)


class StoreLock:
    """Shared/exclusive ``flock`` on ``<folder>/store.lock``, re-entrant within one process.

    In a read-only folder without a lock file nobody can save, so locking is skipped; a lock file
    that cannot be opened otherwise is an error, not a store without a lock. Waiting for another
    process's lock is said once in a warning, so a search that waits does not look hung."""

    def __init__(self, folder: Path, writable: bool) -> None:
        self.path = folder / LOCK_FILE
        self._file: IO[bytes] | None = None  # a file object: closed (and unlocked) when the backend is collected
        self._mode = 0  # 0: unlocked, fcntl.LOCK_SH or fcntl.LOCK_EX
        self._depth = 0
        self._thread_lock = threading.RLock()
        if not writable and not self.path.exists():
            return
        try:
            # Held for the backend's lifetime.
            self._file = open(self.path, "ab" if writable else "rb")  # noqa: SIM115
        except OSError as error:
            # Without the lock, a search could read an index half written by another process.
            reason = (error.strerror or str(error)).lower()
            raise ValueError(
                f"cannot open the store's lock file {self.path} ({reason}); it must be a readable file "
                "(remove whatever is in its place, or fix its permissions)"
            ) from None

    @contextlib.contextmanager
    def _held(self, mode: int, blocking: bool = True) -> Iterator[bool]:
        with self._thread_lock:
            if self._file is None:
                yield True
                return
            # Already held at least as strongly (a nested call): keep the lock as it is.
            if self._depth and (self._mode == fcntl.LOCK_EX or mode == fcntl.LOCK_SH):
                self._depth += 1
                try:
                    yield True
                finally:
                    self._depth -= 1
                return
            if self._depth:
                raise RuntimeError(f"{self.path}: cannot upgrade a shared lock to an exclusive one")
            try:
                fcntl.flock(self._file, mode | fcntl.LOCK_NB)
            except BlockingIOError:
                if not blocking:
                    yield False
                    return
                logger.warning(
                    "waiting for another process that holds {path} (saving or loading the store's indexes)",
                    path=self.path,
                )
                fcntl.flock(self._file, mode)
            self._mode, self._depth = mode, 1
            try:
                yield True
            finally:
                self._depth = 0
                self._mode = 0
                fcntl.flock(self._file, fcntl.LOCK_UN)

    def shared(self) -> contextlib.AbstractContextManager[bool]:
        """Held while reading index folders."""
        return self._held(fcntl.LOCK_SH)

    def exclusive(self, blocking: bool = True) -> contextlib.AbstractContextManager[bool]:
        """Held while writing index folders; with ``blocking=False`` yields False if another holds it."""
        return self._held(fcntl.LOCK_EX, blocking)

    def close(self) -> None:
        with self._thread_lock:
            if self._file is not None:
                self._file.close()
                self._file = None
