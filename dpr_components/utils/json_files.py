"""Reading a small JSON file that may be absent (a record kept beside model weights), with the
caller's own error for a file that is there but cannot be read or parsed."""

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
