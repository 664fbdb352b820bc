"""Keep the server's resident memory to what its data takes: glibc's thresholds held, freed memory released.

glibc's allocator keeps memory a process frees for its next allocations, in one heap per thread that
allocated it (up to 8 per core), and returns it to the system only from the top of a heap. A server that
indexes while it searches frees the temporary arrays of every write and search from many threads, so its
resident memory climbs past what its data takes (measured: docs/benchmarks/store/store_memory.md and
load/server_memory.md). Two things keep it down:

- **The thresholds held** (:func:`hold_malloc_thresholds`). glibc serves a block above its mmap threshold
  (128 KiB at start) with a mapping of its own, returned to the system when freed. But each time such a
  block is freed it raises the threshold to that block's size (up to 32 MiB), so after the first batch of
  vectors, every array of a search or a write comes from the heaps, where it fragments them. Setting the
  thresholds once (``mallopt``) turns that adjustment off: large arrays stay mappings of their own.
- **The release** (:func:`start_memory_release`): ``malloc_trim(0)`` hands the free pages of every heap back,
  every ``DPR_RELEASE_MEMORY_SECONDS`` seconds; one call costs nothing a request would notice.

``DPR_HOLD_MALLOC_THRESHOLDS=0`` leaves glibc's dynamic thresholds. A user's own glibc settings win: with
``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or a ``glibc.malloc.`` tunable in ``GLIBC_TUNABLES``
the thresholds are left as they say. On a C library without these calls (musl, macOS) both are off."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from dpr_components.utils.knobs import Bound, read_variable

RELEASE_SECONDS_ENV = "DPR_RELEASE_MEMORY_SECONDS"
DEFAULT_RELEASE_SECONDS = 10
RELEASE_SECONDS = Bound(0, 86_400, "0 turns it off")

# mallopt's parameter numbers (glibc's malloc.h) and the value held: glibc's own starting mmap threshold.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
HELD_THRESHOLD_BYTES = 128 * 1024
GLIBC_MALLOC_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
GLIBC_TUNABLES_ENV = "GLIBC_TUNABLES"
HOLD_THRESHOLDS_ENV = "DPR_HOLD_MALLOC_THRESHOLDS"
HOLD_THRESHOLDS = Bound(0, 1, "1 holds them, 0 leaves glibc's dynamic thresholds")

logger = logging.getLogger(__name__)


def _libc_function(name: str) -> Any | None:
    """The C library's function ``name``, or None where the library or the function is missing."""
    library = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(library), name) if library else None
    except (OSError, AttributeError):
        return None


def malloc_trim() -> Callable[[], object] | None:
    """glibc's ``malloc_trim(0)`` as a call, or None where the C library has none."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)


def hold_malloc_thresholds(environ: Mapping[str, str] = os.environ) -> bool:
    """Hold glibc's mmap and trim thresholds at 128 KiB (its dynamic raising off); whether they were set.

    Not set with ``DPR_HOLD_MALLOC_THRESHOLDS=0``, where the user's environment gives glibc settings of its own,
    or where there is no ``mallopt``."""
    if read_variable(HOLD_THRESHOLDS_ENV, HOLD_THRESHOLDS, environ) == 0:
        logger.info("malloc thresholds left to glibc (%s=0)", HOLD_THRESHOLDS_ENV)
        return False
    given = [name for name in GLIBC_MALLOC_SETTINGS if environ.get(name)]
    if "glibc.malloc." in environ.get(GLIBC_TUNABLES_ENV, ""):
        given.append(GLIBC_TUNABLES_ENV)
    mallopt = _libc_function("mallopt")
    if given or mallopt is None:
        logger.info("malloc thresholds left as they are (%s)", ", ".join(given) or "no mallopt")
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all(mallopt(parameter, HELD_THRESHOLD_BYTES) == 1 for parameter in (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD))


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
