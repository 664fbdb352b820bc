"""Atomic file writes: write to a temporary sibling, fsync, then rename over the target.

A crash mid-write leaves the previous version of the file intact."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from dpr_components.utils.fault_points import fault_point


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; on success it replaces ``target`` atomically."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; the target should read like any other file
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def atomic_write_bytes(target: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(target: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(target, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_directory(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temporary directory; on success it replaces the directory ``target``.

    The old directory is moved aside before the new one is renamed in, then deleted, so at
    every moment either the old or the new complete directory exists under a known name."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    os.chmod(tmp, 0o755)  # mkdtemp makes 0700 folders; the target should read like any other folder
    old = target.parent / f".{target.name}.old"
    try:
        yield tmp
        if old.exists():
            shutil.rmtree(old)
        if target.exists():
            os.replace(target, old)
        fault_point("atomic_directory.between_renames")
        os.replace(tmp, target)
        _fsync_dir(target.parent)
        if old.exists():
            shutil.rmtree(old)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def recover_directory(target: str | os.PathLike[str]) -> None:
    """If a crash happened between the two renames of :func:`atomic_directory`, put the old copy back."""
    target = Path(target)
    old = target.parent / f".{target.name}.old"
    if not target.exists() and old.exists():
        os.replace(old, target)


def remove_stale_temporaries(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete the ``.<name>.*.tmp`` and ``.<name>.old`` leftovers of interrupted atomic writes in
    ``folder`` (after putting back an old directory whose replacement never arrived).

    Only call this while no writer can be between the two steps of an atomic write (the store
    holds its exclusive lock); returns what was removed."""
    folder = Path(folder)
    removed = []
    for old in folder.glob(".*.old"):
        recover_directory(folder / old.name[1 : -len(".old")])
    for leftover in [*folder.glob(".*.tmp"), *folder.glob(".*.old")]:
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
        removed.append(leftover)
    return removed
