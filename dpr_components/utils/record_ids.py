"""Record ids read from a file, each allowed once."""

from __future__ import annotations


class LineIds:
    """The line each record id was read on; an id read again is refused with ``error``."""

    def __init__(self, error: type[ValueError] = ValueError) -> None:
        self.error = error
        self.lines: dict[str, int] = {}

    def add(self, record_id: str, number: int, where: str) -> None:
        """Record ``record_id`` as read on line ``number``; ``where`` names that line in the error."""
        if record_id in self.lines:
            raise self.error(f"{where}: field 'id': {record_id!r} already used on line {self.lines[record_id]}")
        self.lines[record_id] = number
