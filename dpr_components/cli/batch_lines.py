"""The ``--batch`` file of ``haystack run``: one query per line, as text or a JSON object of inputs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dpr_components.utils.line_files import numbered_lines
from dpr_components.utils.validation import load_json_text


def _batch_item(text: str, where: str) -> dict[str, Any]:
    """One batch line as pipeline inputs: JSON (an object of inputs, or a quoted query) or plain query text."""
    if not text.startswith(("{", "[", '"')):
        return {"query": text}
    item = load_json_text(text, where)
    if isinstance(item, str):
        return {"query": item}
    if not isinstance(item, dict):
        raise ValueError(f"{where}: expected query text or a JSON object of inputs, got a JSON {type(item).__name__}")
    return item


def batch_queries(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Numbered lines of a batch file; a line starting with ``{``, ``[`` or ``"`` is JSON, any other is query text."""
    for number, line in numbered_lines(path, "--batch file"):
        text = line.strip()
        if text:
            yield number, _batch_item(text, f"{path}:{number}")
