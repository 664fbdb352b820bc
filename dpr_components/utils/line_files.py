"""Read a text file line by line with every problem named by file and line.

Lines are read with a length cap, so a file with one gigantic line (a 50 MB word, a binary
file) is refused before the line is held in memory, and bytes that are not UTF-8 are
reported with their line instead of as a decoding traceback. Files are opened through
:func:`~dpr_components.utils.input_files.open_input_file`, so a server's input root holds here too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from dpr_components.utils.input_files import open_input_file

MAX_LINE_BYTES = 8 * 1024 * 1024


def existing_file(path: str | Path, what: str = "file", error: type[ValueError] = ValueError) -> Path:
    """``path`` as a Path; raise ``error`` naming ``what`` when it is a directory or does not exist."""
    path = Path(path)
    if path.is_dir():
        raise error(f"{what} {path} is a directory, not a file")
    if not path.is_file():
        raise error(f"{what} {path} does not exist")
    return path


def numbered_lines(
    path: str | Path, what: str = "file", max_line_bytes: int = MAX_LINE_BYTES, error: type[ValueError] = ValueError
) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)``; raise ``error`` naming ``what`` and the file, or ``file:line``."""
    path = existing_file(path, what, error)
    try:
        handle = open_input_file(path, what)
    except OSError as failure:
        raise error(f"{what} {path}: cannot read it ({(failure.strerror or str(failure)).lower()})") from None
    with handle:
        yield from lines_of(handle, path, max_line_bytes, error)


def lines_of(
    handle: BinaryIO, name: str | Path, max_line_bytes: int = MAX_LINE_BYTES, error: type[ValueError] = ValueError
) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` of an open binary file; raise ``error`` naming ``name:line``."""
    number = 0
    while raw := handle.readline(max_line_bytes + 1):
        number += 1
        if len(raw) > max_line_bytes:
            raise error(f"{name}:{number}: the line is longer than {max_line_bytes:,} bytes")
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as failure:
            raise error(f"{name}:{number}: not valid UTF-8 ({failure.reason} at byte {failure.start})") from None
