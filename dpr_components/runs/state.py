"""Where a training run stands, as its checkpoint saves it.

Each trainer's state adds its position in the data, its best model so far and its skipped steps
to these fields (:class:`~dpr_components.encoder_training.checkpoints.EncoderTrainingState`,
:class:`~dpr_components.reader_training.checkpoints.ReaderTrainingState`); the shared loop reads
``step`` for its progress and cadence."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass
class TrainingState:
    """Optimizer steps done so far (restored ones included) and the epoch the run is in."""

    step: int = 0
    epoch: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
