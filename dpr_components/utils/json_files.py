"""Reading a small JSON file that may be absent (a record kept beside model weights), with the
caller's own error for a file that is there but cannot be read or parsed; and the whole lines of a
JSON-lines file that a killed writer was appending to."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def read_optional_json(path: Path, unreadable: Callable[[Exception], BaseException]) -> Any | None:
    """The JSON document in ``path``, None when there is no such file; raises ``unreadable(error)``
    when the file cannot be read, is not UTF-8 or is not JSON."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise unreadable(error) from error


def complete_lines(path: Path) -> bytes:
    """The whole lines of ``path``, which a writer appends to and a kill may cut mid-line: a last line
    cut short is removed from the file first (its record is then written again)."""
    with open(path, "rb+") as handle:
        data = handle.read()
        end = data.rfind(b"\n") + 1
        if end != len(data):
            handle.truncate(end)
    return data[:end]
