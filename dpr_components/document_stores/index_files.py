"""Derived index folders with a checksum manifest: written atomically, verified before use.

A derived index (FAISS, BM25) is a folder of files that still parse when their bytes are
damaged, or when another store's index is copied in, and then silently rank garbage. So every
folder is written through :func:`write_index_directory`, which records the size and a blake2b
digest of each file, plus the owner's state (generation, store id...), in ``manifest.json``;
:func:`verified_state` refuses a folder whose files do not match it.

Hashing is linear in the size of the files (about 1.3 GB/s on one core here: a minute for the
~65 GB of a flat FAISS index over 21M 768-d passages), so it is done once per file, not at
every opening: ``verified.json`` in the folder records, for each file hashed on this machine
(by the save that wrote it, or by an opening that checked it), the file's identity and change
stamps ``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)`` with the digest it matched. An
opening re-hashes only the files whose stamps differ. Why this keeps the protection:

- any change of a file's bytes, size, owner or permissions sets its ``st_ctime`` to the current
  time, and no user can set ``st_ctime`` back (``os.utime`` sets only atime and mtime, and itself
  moves ctime), so a file edited in place, even with its size and mtime restored, is re-hashed;
- a copied, extracted or downloaded folder is made of new files (new inode and ctime), so the
  record it carries matches nothing and every file is hashed, as before;
- a replaced manifest lists other digests than the recorded ones, so the files are re-hashed.

What it does not see: bytes that change without a write through the file system (media
corruption below it), and a write in the same clock tick (1-10 ms) as the stamps were taken
(a file stamped less than a second after it changed is not recorded, as git does for racily
clean files; a save records the files it has just written in its private temporary folder).
A folder that cannot be written to (read-only store) is hashed at every opening."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from haystack import logging

from dpr_components.utils.atomic_files import atomic_directory, atomic_write_text

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
VERIFIED = "verified.json"
VERIFIED_FORMAT = 1
_CHUNK = 1 << 20
# A file whose ctime is this recent may still change within the same timestamp tick: not recorded.
RACY_SECONDS = 1.0


class IndexFilesError(ValueError):
    """A derived index folder is missing, incomplete, or its files do not match their checksums."""


def file_checksum(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp(stat: os.stat_result) -> list[int]:
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


@contextlib.contextmanager
def write_index_directory(directory: Path, state: dict[str, Any]) -> Iterator[Path]:
    """Yield a temporary folder to write index files into; on success a manifest of their
    checksums and ``state`` is added and the folder replaces ``directory`` atomically."""
    with atomic_directory(directory) as tmp:
        yield tmp
        files, verified = {}, {}
        for f in sorted(tmp.iterdir()):
            if f.is_file() and f.name not in (MANIFEST, VERIFIED):
                stat = f.stat()
                digest = file_checksum(f)
                files[f.name] = {"size": stat.st_size, "blake2b": digest}
                verified[f.name] = [*_stamp(stat), digest]
        manifest = {"format": MANIFEST_FORMAT, "state": state, "files": files}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        # Renaming the folder changes neither the inodes nor the ctimes of the files inside.
        (tmp / VERIFIED).write_text(json.dumps({"format": VERIFIED_FORMAT, "files": verified}), encoding="utf-8")


def _manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.is_file():
        raise IndexFilesError(f"{directory} has no {MANIFEST} (missing, or written by an older version)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        files, state = manifest["files"], manifest["state"]
        if manifest.get("format") != MANIFEST_FORMAT or not isinstance(files, dict) or not isinstance(state, dict):
            raise ValueError(f"unsupported format {manifest.get('format')!r}")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise IndexFilesError(f"{path} is unreadable: {error}") from error
    return manifest


def recorded_state(directory: Path) -> dict[str, Any] | None:
    """The state recorded with the folder, without checking its files (cheap); None if unreadable."""
    try:
        return _manifest(Path(directory))["state"]
    except IndexFilesError:
        return None


def recorded_files(directory: Path) -> dict[str, Any] | None:
    """The files (name -> size and digest) recorded in the folder's manifest, unchecked; None if unreadable."""
    try:
        return _manifest(Path(directory))["files"]
    except IndexFilesError:
        return None


def _verified_record(directory: Path) -> dict[str, list[Any]]:
    """The files of ``directory`` hashed on this machine, with their stamps; {} if none or unreadable."""
    try:
        record = json.loads((directory / VERIFIED).read_text(encoding="utf-8"))
        files = record["files"] if record.get("format") == VERIFIED_FORMAT else {}
        return files if isinstance(files, dict) else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def verified_state(directory: Path, rehash: bool = False) -> dict[str, Any]:
    """The recorded state, after checking every file of the manifest against its size and digest
    (hashing only files changed since this machine last hashed them; all with ``rehash``)."""
    directory = Path(directory)
    manifest = _manifest(directory)
    record = {} if rehash else _verified_record(directory)
    checked: dict[str, list[Any]] = {}
    for name, expected in manifest["files"].items():
        path = directory / name
        if Path(name).name != name or not path.is_file():
            raise IndexFilesError(f"{path} is missing")
        try:
            stat = path.stat()
            if stat.st_size != expected["size"]:
                raise IndexFilesError(
                    f"{path} does not match the checksum recorded when it was saved (size {stat.st_size}, not {expected['size']})"
                )
            entry = [*_stamp(stat), expected["blake2b"]]
            if record.get(name) == entry:
                checked[name] = entry
                continue
            if file_checksum(path) != expected["blake2b"]:
                raise IndexFilesError(f"{path} does not match the checksum recorded when it was saved")
            if path.stat().st_ctime_ns == stat.st_ctime_ns and time.time_ns() - stat.st_ctime_ns > RACY_SECONDS * 1e9:
                checked[name] = entry
        except (OSError, KeyError, TypeError) as error:
            raise IndexFilesError(f"{path} cannot be checked: {error}") from error
    if checked != record:
        _write_record(directory, checked)
    return manifest["state"]


def _write_record(directory: Path, files: dict[str, list[Any]]) -> None:
    """Best effort: a folder that cannot be written to is hashed again at the next opening."""
    try:
        if not directory.stat().st_mode & 0o222:  # read-only by its permissions, which do not stop root
            return
        atomic_write_text(directory / VERIFIED, json.dumps({"format": VERIFIED_FORMAT, "files": files}))
    except OSError as error:
        logger.debug(
            "cannot record the verified files of {directory} ({error}): they are hashed again next time",
            directory=directory,
            error=error,
        )
