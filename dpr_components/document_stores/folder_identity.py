"""Which folder a store opened, so that a handle whose folder was removed, renamed or replaced by another
one at the same path says so instead of reading and writing files no longer at that path.

An open SQLite connection keeps reading and writing its file after the file is unlinked or moved: left
alone, searches would answer from a deleted store and writes would go into files nobody will open again.
A backend records the identity (device and inode) of its folder and database when it opens them; each
use compares them with what the path holds now (two ``stat`` calls), and each write is acknowledged only
once the database at the path, read afresh, holds it."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path


class StoreFolderMovedError(RuntimeError):
    """The folder at a store's path is no longer the one its handle opened (removed, renamed or replaced by
    another); the handle no longer reads or writes it. Not a user error of the call: open the store again."""


@dataclass(frozen=True)
class FolderIdentity:
    """The device and inode of a store's folder and of its database file."""

    folder: tuple[int, int]
    database: tuple[int, int]


def _identity(status: os.stat_result) -> tuple[int, int]:
    return status.st_dev, status.st_ino


def folder_identity(root: Path, database: str) -> FolderIdentity | None:
    """The identity of ``root`` and ``root/database`` now; ``None`` when either is missing."""
    try:
        return FolderIdentity(_identity(os.stat(root)), _identity(os.stat(root / database)))
    except OSError:
        return None


def moved_problem(root: Path, database: str, opened: FolderIdentity) -> str | None:
    """Why ``root`` is no longer the folder whose identity was ``opened`` (one line naming it), or ``None``."""
    try:
        now = os.stat(root)
    except OSError:
        return f"store folder {root} was removed or renamed after it was opened"
    if not stat.S_ISDIR(now.st_mode):
        return f"store folder {root} was replaced by a file after it was opened"
    if _identity(now) != opened.folder:
        return f"store folder {root} was replaced by another folder after it was opened"
    try:
        held = os.stat(root / database)
    except OSError:
        return f"the database {root / database} was removed after the store was opened"
    if _identity(held) != opened.database:
        return f"the database {root / database} was replaced by another file after the store was opened"
    return None
