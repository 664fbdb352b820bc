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

LOCK_FILE = "store.lock"


class StoreLock:
    """Shared/exclusive ``flock`` on ``<folder>/store.lock``, re-entrant within one process.

    In a read-only folder without a lock file nobody can save, so locking is skipped."""

    def __init__(self, folder: Path, writable: bool) -> None:
        self.path = folder / LOCK_FILE
        self._file: IO[bytes] | None = None  # a file object: closed (and unlocked) when the backend is collected
        self._mode = 0  # 0: unlocked, fcntl.LOCK_SH or fcntl.LOCK_EX
        self._depth = 0
        self._thread_lock = threading.RLock()
        with contextlib.suppress(OSError):
            if writable:
                self._file = open(self.path, "ab")  # noqa: SIM115 - held for the backend's lifetime
            elif self.path.exists():
                self._file = open(self.path, "rb")  # noqa: SIM115

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
                fcntl.flock(self._file, mode | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
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
