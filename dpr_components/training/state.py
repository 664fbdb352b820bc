"""Resumable training checkpoints: model, optimizer, scheduler, every random generator and the
data position, written atomically as ``checkpoints/step-<n>/``.

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

from dpr_components.io_utils import atomic_directory
from dpr_components.process_state import restore_rng_states, rng_states

STATE_FILE = "state.json"
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
        torch.save(rng if rng is not None else [rng_states()], tmp / "rng.pt")
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


def load_checkpoint(
    path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, rank: int = 0
) -> TrainerState:
    """Restore everything saved by :func:`save_checkpoint` (the generators of process ``rank``)."""
    path = Path(path)
    try:
        state = TrainerState(**json.loads((path / STATE_FILE).read_text(encoding="utf-8")))
        model.load_state_dict(torch.load(path / "model.pt", map_location="cpu", weights_only=True))
        saved = torch.load(path / "optimizer.pt", map_location="cpu", weights_only=False)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        saved_rng = torch.load(path / "rng.pt", map_location="cpu", weights_only=False)
        if rank >= len(saved_rng):
            raise ValueError(f"it was written by {len(saved_rng)} processes, this is process {rank}")
        restore_rng_states(saved_rng[rank])
    except (OSError, KeyError, TypeError, RuntimeError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot resume from checkpoint {path}: {error}") from error
    return state


def prune_checkpoints(folder: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` checkpoints."""
    for path in checkpoints(folder)[:-keep]:
        shutil.rmtree(path, ignore_errors=True)
