"""Markdown for the reports: tables, and the block naming the command that produced a report.

>>> print("\\n".join(markdown_table(["system", "top-1"], [["BM25", "22.1"]], align="lr")))
| system | top-1 |
|---|---:|
| BM25 | 22.1 |
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

_SEPARATORS = {"l": "---", "r": "---:"}


def table_row(cells: Iterable[object]) -> str:
    """One row: ``| a | b |`` (cells as ``str`` gives them)."""
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def table_header(columns: Sequence[object], align: str = "") -> list[str]:
    """The header row and the separator row. ``align`` has one letter per column, ``l`` (left) or
    ``r`` (right); columns past its end are left-aligned."""
    letters = align.ljust(len(columns), "l")
    if len(letters) != len(columns) or set(letters) - set(_SEPARATORS):
        raise ValueError(f"align {align!r}: one letter l or r per column ({len(columns)} columns)")
    return [table_row(columns), "|" + "".join(_SEPARATORS[letter] + "|" for letter in letters)]


def markdown_table(columns: Sequence[object], rows: Iterable[Iterable[object]], align: str = "") -> list[str]:
    """A whole table as lines: header, separator, then one line per row."""
    return [*table_header(columns, align), *(table_row(row) for row in rows)]


def produced_by(command: str) -> list[str]:
    """The closing block of a report: the command that produced it, in a code fence."""
    return ["Produced by:", "", "```", command, "```", ""]
