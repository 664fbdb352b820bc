"""One rule for the files that run-time inputs name: with ``DPR_INPUT_ROOT`` set, only files inside it.

A served pipeline takes its inputs from HTTP clients; a ``path`` input would otherwise let any
client make the server read any file it can (keys, other users' data). The server sets the root
(``haystack serve --input-root``); the command line leaves it unset and reads what the user names.

The guard is :func:`open_input_file`: it opens the file, then checks the file it opened (not the
name again), so a symlink swapped between a check and the open cannot lead out of the root.
:func:`check_input_path` only gives the same answer early, before any work starts."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

INPUT_ROOT_ENV = "DPR_INPUT_ROOT"


def input_root() -> Path | None:
    """The folder every run-time input file must be in, or ``None`` when any file may be read."""
    root = os.environ.get(INPUT_ROOT_ENV, "").strip()
    return Path(os.path.realpath(root)) if root else None


def _outside_root(text: str, what: str) -> ValueError:
    # The root as configured, not resolved: an HTTP client learns no absolute server path.
    return ValueError(
        f"{what} {text!r} is outside the input root {os.environ[INPUT_ROOT_ENV].strip()!r} ({INPUT_ROOT_ENV}); "
        f"put the file inside that folder and give its path"
    )


def _inside(resolved: Path, root: Path) -> bool:
    return resolved == root or root in resolved.parents


def check_input_path(path: str | os.PathLike[str], what: str) -> str:
    """``path`` itself when it may be read; ``ValueError`` naming ``what``, the path and the root otherwise.

    The path is resolved the way it will be opened (relative to the working folder, every symlink
    followed), so neither ``..`` nor a symlink inside the root leads out of it. This is an early
    answer for a clear message before any work; the file is checked again once opened."""
    text = os.fspath(path)
    root = input_root()
    if root is not None and not _inside(Path(os.path.realpath(text)), root):
        raise _outside_root(text, what)
    return text


def open_input_file(path: str | os.PathLike[str], what: str) -> BinaryIO:
    """``path`` opened for binary reading; under an input root, only when the opened file is inside it.

    The file is opened first, then its identity (device and inode, from the open descriptor) must
    equal that of the path's resolution inside the root: whatever a symlink pointed to at the moment
    of opening, the bytes read come from a regular file inside the root. ``OSError`` when the file
    cannot be opened; ``ValueError`` when it may not be read."""
    text = os.fspath(path)
    handle = open(text, "rb")
    root = input_root()
    if root is None:
        return handle
    try:
        opened = os.fstat(handle.fileno())
        if not stat.S_ISREG(opened.st_mode):
            raise ValueError(f"{what} {text!r} is not a regular file")
        resolved = Path(os.path.realpath(text))
        try:
            named = os.stat(resolved)
        except OSError:
            named = None
        same_file = named is not None and (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)
        if not (_inside(resolved, root) and same_file):
            raise _outside_root(text, what)
    except BaseException:
        handle.close()
        raise
    return handle
