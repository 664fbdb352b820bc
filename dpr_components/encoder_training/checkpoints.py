"""Resumable training checkpoints: model, optimizer, scheduler, every random generator and the
data position, written atomically as ``checkpoints/step-<n>/``:

    model.pt, optimizer.pt   tensors and plain data (read with ``weights_only=True``)
    rng.json                 the random generator states of every process
    state.json               the position in the data (its presence marks a complete checkpoint)

Reading a checkpoint never runs code from it; see :mod:`checkpoint_files`. The reader loop
shares these mechanics with its own single-folder layout (``reader_training/checkpoints.py``).

A run killed at any moment resumes from its newest complete checkpoint; because batches are a
function of (seed, epoch, position) and the generators are restored, the resumed run computes
the same steps as an uninterrupted one."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from dpr_components.runs.checkpoint_files import (
    check_finite_checkpoint,
    load_json,
    load_tensors,
    restart_hint,
    restore_training,
    resuming,
    write_checkpoint,
)
from dpr_components.runs.rng import RNG_FILE, read_rng_file, rng_json, states_of_process
from dpr_components.runs.state import TrainingState

STATE_FILE = "state.json"
_STEP_DIR = re.compile(r"^step-(\d+)$")


@dataclass
class EncoderTrainingState(TrainingState):
    """Where bi-encoder training stands: optimizer steps done, the position in the data, the best
    model so far and early stopping (``state.json`` holds these fields)."""

    batch_in_epoch: int = 0
    examples_seen: int = 0
    best_metric: float | None = None
    best_step: int | None = None
    bad_validations: int = 0
    stopped_early: bool = False
    elapsed_seconds: float = 0.0
    last_validation: dict[str, float] | None = None
    nonfinite_steps: int = 0  # steps skipped for a NaN or infinite loss or gradient norm


def save_checkpoint(
    folder: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    state: EncoderTrainingState,
    rng: list[dict[str, Any]] | None = None,
) -> Path:
    """Write ``folder/step-<n>`` atomically and return it. ``rng`` holds the generator states of
    every process (index = rank); by default this process's."""
    return write_checkpoint(
        Path(folder) / f"step-{state.step:08d}",
        tensors={
            "model.pt": model.state_dict(),
            "optimizer.pt": {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()},
        },
        texts={RNG_FILE: rng_json(rng)},
        marker=(STATE_FILE, json.dumps(state.to_dict(), indent=1)),
        fault="training.checkpoint.files_written",
    )


def checkpoints(folder: Path) -> list[Path]:
    """Complete checkpoints in ``folder``, oldest first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        match = _STEP_DIR.match(path.name)
        if match and (path / STATE_FILE).is_file():
            found.append((int(match.group(1)), path))
    return [path for _, path in sorted(found)]


def latest_checkpoint(folder: Path) -> Path | None:
    found = checkpoints(folder)
    return found[-1] if found else None


def _hint(path: Path) -> str:
    """What to do when the checkpoint ``path`` cannot be used."""
    checkpoints_dir = Path(path).parent
    run_dir = checkpoints_dir.parent
    return restart_hint(
        checkpoints_dir, f"start a new run from the last exported model ({run_dir / 'final'} or {run_dir / 'best'})"
    )


def load_checkpoint(
    path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, rank: int = 0
) -> EncoderTrainingState:
    """Restore everything saved by :func:`save_checkpoint` (the generators of process ``rank``)."""
    path = Path(path)
    hint = _hint(path)
    saved_rng = read_rng_file(path, hint)
    state_data = load_json(path / STATE_FILE, hint)
    weights = load_tensors(path / "model.pt", hint)
    check_finite_checkpoint(path / "model.pt", weights, hint)
    saved = load_tensors(path / "optimizer.pt", hint)
    with resuming(path, hint):
        state = EncoderTrainingState(**state_data)
        rng = states_of_process(saved_rng, rank)
        saved = {"model": weights, "optimizer": saved["optimizer"], "scheduler": saved["scheduler"], "rng": rng}
        restore_training(model, optimizer, scheduler, saved)
    return state


def prune_checkpoints(folder: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` checkpoints."""
    for path in checkpoints(folder)[:-keep]:
        shutil.rmtree(path, ignore_errors=True)
