"""Resumable training checkpoints: model, optimizer, scheduler, every random generator and the
data position, written atomically as ``checkpoints/step-<n>/``:

    model.pt, optimizer.pt   tensors and plain data (read with ``weights_only=True``)
    rng.json                 the random generator states of every process
    state.json               the position in the data (its presence marks a complete checkpoint)

Reading a checkpoint never runs code from it; see :mod:`checkpoint_files`.

A run killed at any moment resumes from its newest complete checkpoint; because batches are a
function of (seed, epoch, position) and the generators are restored, the resumed run computes
the same steps as an uninterrupted one."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from dpr_components.fault_points import fault_point
from dpr_components.io_utils import atomic_directory
from dpr_components.process_state import restore_rng_states, rng_states
from dpr_components.training.checkpoint_files import CheckpointError, load_json, load_tensors

STATE_FILE = "state.json"
RNG_FILE = "rng.json"
_STEP_DIR = re.compile(r"^step-(\d+)$")


@dataclass
class TrainerState:
    """Where training stands: optimizer steps done and the position in the data."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    examples_seen: int = 0
    best_metric: float | None = None
    best_step: int | None = None
    bad_validations: int = 0
    stopped_early: bool = False
    elapsed_seconds: float = 0.0
    last_validation: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def save_checkpoint(
    folder: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    state: TrainerState,
    rng: list[dict[str, Any]] | None = None,
) -> Path:
    """Write ``folder/step-<n>`` atomically and return it. ``rng`` holds the generator states of
    every process (index = rank); by default this process's."""
    target = Path(folder) / f"step-{state.step:08d}"
    with atomic_directory(target) as tmp:
        torch.save(model.state_dict(), tmp / "model.pt")
        torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, tmp / "optimizer.pt")
        (tmp / RNG_FILE).write_text(json.dumps(rng if rng is not None else [rng_states()]), encoding="utf-8")
        fault_point("training.checkpoint.files_written")
        (tmp / STATE_FILE).write_text(json.dumps(state.to_dict(), indent=1), encoding="utf-8")
    return target


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


def restart_hint(path: Path) -> str:
    """What to do when a checkpoint of ``path`` cannot be used."""
    checkpoints_dir = Path(path).parent
    run_dir = checkpoints_dir.parent
    return (
        f"Delete {checkpoints_dir} to train this run again from its start, or start a new run from the "
        f"last exported model ({run_dir / 'final'} or {run_dir / 'best'})"
    )


def load_checkpoint(
    path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, rank: int = 0
) -> TrainerState:
    """Restore everything saved by :func:`save_checkpoint` (the generators of process ``rank``)."""
    path = Path(path)
    hint = restart_hint(path)
    if (path / "rng.pt").exists() and not (path / RNG_FILE).exists():
        raise CheckpointError(
            f"checkpoint {path} is in an older format (rng.pt) that can only be read by running code stored in "
            f"it; it was not loaded. {hint}"
        )
    state_data = load_json(path / STATE_FILE, hint)
    weights = load_tensors(path / "model.pt", hint)
    saved = load_tensors(path / "optimizer.pt", hint)
    saved_rng = load_json(path / RNG_FILE, hint)
    try:
        state = TrainerState(**state_data)
        model.load_state_dict(weights)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        if rank >= len(saved_rng):
            raise ValueError(f"it was written by {len(saved_rng)} processes, this is process {rank}")
        restore_rng_states(saved_rng[rank])
    except (KeyError, TypeError, RuntimeError, ValueError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"cannot resume from checkpoint {path}: {detail[:300]}. {hint}") from error
    return state


def prune_checkpoints(folder: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` checkpoints."""
    for path in checkpoints(folder)[:-keep]:
        shutil.rmtree(path, ignore_errors=True)
