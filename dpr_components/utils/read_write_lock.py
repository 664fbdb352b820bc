"""Many readers at once or one writer: for an index that searches read while writes change it in place.

A writer that is waiting goes before readers that come after it, so a steady stream of searches
cannot hold a write back for ever."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    """Shared (:meth:`reading`) and exclusive (:meth:`writing`) holds; not re-entrant."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Hold the lock shared with other readers while inside."""
        with self._changed:
            while self._writing or self._writers_waiting:
                self._changed.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._changed:
                self._readers -= 1
                if self._readers == 0:
                    self._changed.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the lock alone while inside: readers already in finish first."""
        with self._changed:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers:
                    self._changed.wait()
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._changed:
                self._writing = False
                self._changed.notify_all()
