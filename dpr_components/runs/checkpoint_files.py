"""Checkpoint folders of both training loops: written atomically, read without ever running code
stored in them.

A checkpoint folder is written under a temporary name and renamed into place, its marker file
last (the marker's presence marks a complete checkpoint). Tensors and plain data load with
``torch.load(weights_only=True)``, which refuses any pickle that would import or call something;
other state is JSON. A file that cannot be read that way (an older checkpoint format, or a
replaced file) is refused with a :class:`CheckpointError` saying what to do instead."""

from __future__ import annotations

import contextlib
import json
import pickle
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from dpr_components.encoders.model_files import non_finite_tensor
from dpr_components.runs.process_state import restore_rng_states
from dpr_components.utils.atomic_files import atomic_directory
from dpr_components.utils.fault_points import fault_point


class CheckpointError(ValueError):
    """A checkpoint file is missing, damaged, or could only be read by running code from it."""


def restart_hint(checkpoints: Path, instead: str) -> str:
    """What to do when a checkpoint under ``checkpoints`` cannot be used; ``instead`` names the exports."""
    return f"Delete {checkpoints} to train this run again from its start, or {instead}"


def write_checkpoint(
    target: Path, tensors: Mapping[str, Any], texts: Mapping[str, str], marker: tuple[str, str], fault: str
) -> Path:
    """Replace the folder ``target`` atomically by ``tensors`` (``torch.save``), ``texts`` and then the
    ``marker`` file (name, text); the fault point ``fault`` lies between the files and the marker."""
    with atomic_directory(target) as tmp:
        for name, value in tensors.items():
            torch.save(value, tmp / name)
        for name, text in texts.items():
            (tmp / name).write_text(text, encoding="utf-8")
        fault_point(fault)
        (tmp / marker[0]).write_text(marker[1], encoding="utf-8")
    return Path(target)


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
        raise CheckpointError(
            f"checkpoint file {path} is damaged ({_first_sentence(error)}). {restart_hint}"
        ) from error


def load_json(path: Path, restart_hint: str) -> Any:
    """A JSON checkpoint file."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint file {path} is missing. {restart_hint}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"checkpoint file {path} is damaged ({error}). {restart_hint}") from error


def check_finite_checkpoint(path: Path, weights: Any, restart_hint: str) -> None:
    """Refuse model weights (``path`` holds them) with NaN or infinity: training would go on from a
    broken model and every later checkpoint and export would be broken too."""
    name = non_finite_tensor(weights) if isinstance(weights, Mapping) else None
    if name is not None:
        raise CheckpointError(
            f"checkpoint file {path} holds NaN or infinite weights (tensor {name}): it was saved from a run "
            f"that diverged. {restart_hint}"
        )


@contextlib.contextmanager
def resuming(path: Path, restart_hint: str) -> Iterator[None]:
    """Report saved state that does not fit the training objects as one :class:`CheckpointError`."""
    try:
        yield
    except CheckpointError:
        raise
    except (KeyError, TypeError, RuntimeError, ValueError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"cannot resume from checkpoint {path}: {detail[:300]}. {restart_hint}") from error


def restore_training(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, saved: Mapping[str, Any]
) -> None:
    """Put ``saved`` (``model``, ``optimizer`` and ``scheduler`` state dicts, ``rng`` generator states)
    back; call it inside :func:`resuming`."""
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    restore_rng_states(saved["rng"])
