"""Report folders of ``haystack eval`` and ``fit-lambda``: checked before the work, write failures named.

An evaluation can run for hours; a ``--out`` that names a file or a folder that cannot be
created must be refused before it starts, and a full disk at the end must say which file
could not be written instead of ending in a traceback."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from dpr_components.utils.output_folders import OutputFolderError, check_report_folder


class OutputError(ValueError):
    """An output folder or file cannot be written; the message names it."""


def describe_os_error(error: OSError, path: str | os.PathLike[str] | None = None) -> str:
    """One line for a failed write or read: ``disk full while writing X``, ``X: permission denied``."""
    target = path if path is not None else error.filename
    if error.errno == errno.ENOSPC:
        return f"disk full while writing {target}" if target else "disk full"
    reason = (error.strerror or str(error)).lower()
    return f"{target}: {reason}" if target else reason


def prepare_output_folder(folder: str | os.PathLike[str], option: str = "--out") -> Path:
    """Create ``folder`` (or accept an existing folder) and check that files can be written in it."""
    path = Path(folder)
    try:
        check_report_folder(path, option)
    except OutputFolderError as error:
        raise OutputError(str(error)) from None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(
            f"{option} {path}: cannot create the folder ({describe_os_error(error, error.filename)})"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {path}: the folder is not writable")
    return path


@contextlib.contextmanager
def reporting_write_errors(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn an ``OSError`` raised while writing ``path`` into an ``OutputError`` naming it."""
    try:
        yield
    except OutputError:
        raise
    except OSError as error:
        raise OutputError(describe_os_error(error, path)) from None
