"""One lock per loaded model, held while it runs.

Components with the same model settings share one model and one fast tokenizer per process,
and async pipelines run components in worker threads. A fast tokenizer is not safe to call
from two threads at once (it fails with "Already borrowed" while another call changes its
padding or truncation), so calls on one model's tokenizer take turns. The reader and the passage
ranker hold the lock only while tokenising: the model itself is read only, and concurrent requests
run it at once on their own threads (docs/threads.md)."""

from __future__ import annotations

import threading
from collections.abc import Hashable

_LOCKS: dict[Hashable, threading.RLock] = {}
_GUARD = threading.Lock()


def model_lock(key: Hashable) -> threading.RLock:
    """The lock of the model identified by ``key`` (the key its weights are shared under)."""
    with _GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = threading.RLock()
        return lock
