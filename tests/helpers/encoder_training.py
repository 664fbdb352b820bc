"""Tiny DPR training runs: the settings every encoder training test starts from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpr_components.encoder_training.settings import EncoderTrainingSettings

# batch 4 over write_training_data's 12 examples: 3 steps an epoch
TINY_RUN = dict(batch_size=4, epochs=1, max_length=32, learning_rate=1e-3, threads=1)


def tiny_run(model: Path, **changes: Any) -> EncoderTrainingSettings:
    """Settings of a tiny run from ``model``: TINY_RUN with ``changes``."""
    return EncoderTrainingSettings(model=str(model), **{**TINY_RUN, **changes})
