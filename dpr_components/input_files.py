"""One rule for the files that run-time inputs name: with ``DPR_INPUT_ROOT`` set, only files inside it.

A served pipeline takes its inputs from HTTP clients; a ``path`` input would otherwise let any
client make the server read any file it can (keys, other users' data). The server sets the root
(``haystack serve --input-root``); the command line leaves it unset and reads what the user names."""

from __future__ import annotations

import os
from pathlib import Path

INPUT_ROOT_ENV = "DPR_INPUT_ROOT"


def input_root() -> Path | None:
    """The folder every run-time input file must be in, or ``None`` when any file may be read."""
    root = os.environ.get(INPUT_ROOT_ENV, "").strip()
    return Path(os.path.realpath(root)) if root else None


def check_input_path(path: str | os.PathLike[str], what: str) -> str:
    """``path`` itself when it may be read; ``ValueError`` naming ``what``, the path and the root otherwise.

    The path is resolved the way it will be opened (relative to the working folder, every symlink
    followed), so neither ``..`` nor a symlink inside the root leads out of it."""
    text = os.fspath(path)
    root = input_root()
    if root is None:
        return text
    resolved = Path(os.path.realpath(text))
    if resolved != root and root not in resolved.parents:
        raise ValueError(
            # The root as configured, not resolved: an HTTP client learns no absolute server path.
            f"{what} {text!r} is outside the input root {os.environ[INPUT_ROOT_ENV].strip()!r} ({INPUT_ROOT_ENV}); "
            f"put the file inside that folder and give its path"
        )
    return text
