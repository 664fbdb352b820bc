"""A reader run's folder and its one checkpoint: ``checkpoint/`` holds ``state.pt`` (model,
optimizer, scheduler, RNG states, training state, settings, data fingerprint) and
``position.json`` (the training state, written last: its presence marks a complete checkpoint).
Reading it never runs code from it (:mod:`dpr_components.runs.checkpoint_files`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from dpr_components.reader_training.data import MinedQuestion
from dpr_components.reader_training.settings import RESUMABLE_CHANGES, ReaderTrainingSettings, total_steps
from dpr_components.runs.checkpoint_files import (
    CheckpointError,
    check_finite_checkpoint,
    load_tensors,
    restart_hint,
    restore_training,
    resuming,
    write_checkpoint,
)
from dpr_components.runs.run_folder import check_same_run, clean_run_folder, data_fingerprint, resume_log
from dpr_components.runs.run_log import RunLog
from dpr_components.runs.state import TrainingState
from dpr_components.utils.output_folders import READER_RUN, claim_folder

CHECKPOINT_FILE = "state.pt"
STATE_FILE = "position.json"  # written last: marks a complete checkpoint


@dataclass
class ReaderTrainingState(TrainingState):
    """Where reader training stands: optimizer steps done, the next example of the epoch's order
    and the best dev exact match so far (``position.json`` holds these fields)."""

    index: int = 0
    best_em: float = -1.0
    best_step: int = -1
    last_eval_step: int = -1
    nonfinite_steps: int = 0  # steps skipped for a NaN or infinite loss or gradient norm


class ReaderRun:
    """One reader run's folder (claimed, cleaned of a killed run's leftovers), its checkpoint and log."""

    log: RunLog  # opened by ``resume``

    def __init__(self, settings: ReaderTrainingSettings, train: Sequence[MinedQuestion]) -> None:
        self.settings = settings
        self.dir = Path(settings.output_dir)
        self.checkpoint_dir = self.dir / "checkpoint"
        self.fingerprint = data_fingerprint(q.to_json() for q in train)
        self.total_steps = total_steps(settings, len(train))
        self.hint = restart_hint(
            self.checkpoint_dir, f"use the last exported reader ({self.dir / 'best'} or {self.dir / 'export'})"
        )
        claim_folder(self.dir, READER_RUN, hint="choose another folder for the run")
        clean_run_folder(self.dir)

    def save_checkpoint(
        self,
        reader: torch.nn.Module,
        optimizer: Any,
        scheduler: Any,
        state: ReaderTrainingState,
        rng: dict[str, Any],
    ) -> None:
        saved = {
            "model": reader.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": rng,
            "position": state.to_dict(),
            "config": self.settings.to_dict(),
            "data": self.fingerprint,
        }
        write_checkpoint(
            self.checkpoint_dir,
            tensors={CHECKPOINT_FILE: saved},
            texts={},
            marker=(STATE_FILE, json.dumps(state.to_dict()) + "\n"),
            fault="reader_training.checkpoint.files_written",
        )

    def resume(self, reader: torch.nn.Module, optimizer: Any, scheduler: Any) -> ReaderTrainingState | None:
        """Put the checkpoint's state back into the training objects and return the training state
        (None without a checkpoint); the log loses the entries of steps after it (they will be run again)."""
        path = self.checkpoint_dir / CHECKPOINT_FILE
        if not path.is_file():
            self.log = resume_log(self.dir, None)
            return None
        saved = load_tensors(path, self.hint)
        expected = ("model", "optimizer", "scheduler", "rng", "position", "config", "data")
        if not isinstance(saved, dict) or any(key not in saved for key in expected):
            raise CheckpointError(f"checkpoint file {path} is damaged (it lacks the training state). {self.hint}")
        check_finite_checkpoint(path, saved["model"], self.hint)
        settings = {"objective": "reader", **saved["config"]}  # runs from before the setting trained the reader
        check_same_run(self.dir, settings, self.settings.to_dict(), RESUMABLE_CHANGES, saved["data"], self.fingerprint)
        with resuming(self.checkpoint_dir, self.hint):
            restore_training(reader, optimizer, scheduler, saved)
            state = ReaderTrainingState(**saved["position"])
        self.log = resume_log(self.dir, state.step)
        return state

    def last_good_checkpoint(self) -> str:
        """The checkpoint a stopped run keeps, for its error message."""
        marker = self.checkpoint_dir / STATE_FILE
        if not marker.is_file():
            return "none was written before it"
        try:
            return f"{self.checkpoint_dir} (step {json.loads(marker.read_text(encoding='utf-8'))['step']})"
        except (OSError, ValueError, KeyError, TypeError):
            return str(self.checkpoint_dir)
