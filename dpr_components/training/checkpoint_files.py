"""Read checkpoint files without ever running code stored in them.

Tensors and plain data load with ``torch.load(weights_only=True)``, which refuses any pickle
that would import or call something; other state is JSON. A file that cannot be read that way
(an older checkpoint format, or a replaced file) is refused with a :class:`CheckpointError`."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import torch


class CheckpointError(ValueError):
    """A checkpoint file is missing, damaged, or could only be read by running code from it."""


def _first_sentence(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0].split(". ")[0][:200] if lines else type(error).__name__


def load_tensors(path: Path, restart_hint: str) -> Any:
    """Tensors and plain data saved with ``torch.save``, loaded with ``weights_only=True``."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint file {path} is missing. {restart_hint}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        raise CheckpointError(
            f"checkpoint file {path} was not loaded: reading it would run code stored in the file (a checkpoint "
            f"written by an older version, or a replaced file). {restart_hint}"
        ) from error
    except (OSError, RuntimeError, EOFError, ValueError, KeyError, AttributeError, IndexError) as error:
        raise CheckpointError(f"checkpoint file {path} is damaged ({_first_sentence(error)}). {restart_hint}") from error


def load_json(path: Path, restart_hint: str) -> Any:
    """A JSON checkpoint file."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint file {path} is missing. {restart_hint}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"checkpoint file {path} is damaged ({error}). {restart_hint}") from error
