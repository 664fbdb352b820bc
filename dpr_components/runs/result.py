"""What both trainers return when a run ends (:class:`TrainingResult`): the run folder, the optimizer
steps done of the run's total and whether early stopping ended it. The bi-encoder's result
(:class:`~dpr_components.encoder_training.train.EncoderTrainingResult`, also its ``result.json``) and
the reader's (:class:`~dpr_components.reader_training.train.ReaderTrainingResult`) add where their
models are."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpr_components.runs.run_folder import LOG_FILE


@dataclass(kw_only=True)
class TrainingResult:
    """How a run ended: its folder, ``steps`` done of its ``total_steps`` (restored ones included)
    and whether early stopping ended it before the last."""

    output_dir: str
    steps: int
    total_steps: int
    stopped_early: bool = False

    @property
    def log_path(self) -> Path:
        """The run's log (one JSON object per line)."""
        return Path(self.output_dir) / LOG_FILE

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
