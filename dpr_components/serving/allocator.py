"""Give the memory the server freed back to the system, every ``DPR_RELEASE_MEMORY_SECONDS`` seconds.

glibc's allocator keeps memory a process frees for its next allocations, in one heap per thread that
allocated it (up to 8 per core), and returns it to the system only from the top of a heap. A server that
indexes while it searches frees the temporary arrays of every write and search from many threads, so its
resident memory climbs past what its data takes (measured: docs/benchmarks/store/store_memory.md and
load/server_memory.md). ``malloc_trim(0)`` hands the free pages of every heap back; one call every few seconds
costs nothing a request would notice. On a C library without it (musl, macOS) the release is off."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
from collections.abc import Callable

from dpr_components.utils.knobs import Bound, read_variable

RELEASE_SECONDS_ENV = "DPR_RELEASE_MEMORY_SECONDS"
DEFAULT_RELEASE_SECONDS = 10
RELEASE_SECONDS = Bound(0, 86_400, "0 turns it off")

logger = logging.getLogger(__name__)


def malloc_trim() -> Callable[[], object] | None:
    """glibc's ``malloc_trim(0)`` as a call, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None
    if trim is None:
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)


def release_seconds() -> int:
    """Seconds between releases (``DPR_RELEASE_MEMORY_SECONDS``, default 10; 0: never)."""
    value = read_variable(RELEASE_SECONDS_ENV, RELEASE_SECONDS)
    return DEFAULT_RELEASE_SECONDS if value is None else value


def start_memory_release(every: int | None = None) -> threading.Event | None:
    """A daemon thread that releases the freed memory every ``every`` seconds (default
    :func:`release_seconds`); the event that stops it, or None when it is off or unavailable."""
    every = release_seconds() if every is None else every
    trim = malloc_trim()
    if every == 0 or trim is None:
        logger.info("freed memory is not released to the system (%s)", "off" if every == 0 else "no malloc_trim")
        return None
    stop = threading.Event()

    def release() -> None:
        while not stop.wait(every):
            trim()

    threading.Thread(target=release, name="memory-release", daemon=True).start()
    return stop
