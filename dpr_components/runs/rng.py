"""Random generators of a training run: seeding at the start, and their states in a checkpoint
as plain JSON (``rng.json``), so a resumed run draws the same numbers as an uninterrupted one.

The states themselves are captured and put back by :mod:`dpr_components.runs.process_state`."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dpr_components.runs.checkpoint_files import CheckpointError, load_json
from dpr_components.runs.process_state import rng_states

RNG_FILE = "rng.json"
_OLD_RNG_FILE = "rng.pt"


def seed_everything(seed: int) -> None:
    """Seed python's, numpy's and torch's global generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_json(states: list[dict[str, Any]] | None = None) -> str:
    """The ``rng.json`` text of the generator states of every process (index = rank); by default this one's."""
    return json.dumps(states if states is not None else [rng_states()])


def read_rng_file(folder: Path, restart_hint: str) -> Any:
    """The generator states saved in ``folder/rng.json`` (one entry per process)."""
    folder = Path(folder)
    if (folder / _OLD_RNG_FILE).exists() and not (folder / RNG_FILE).exists():
        raise CheckpointError(
            f"checkpoint {folder} is in an older format ({_OLD_RNG_FILE}) that can only be read by running code "
            f"stored in it; it was not loaded. {restart_hint}"
        )
    return load_json(folder / RNG_FILE, restart_hint)


def states_of_process(states: Any, rank: int) -> Any:
    """Process ``rank``'s entry of :func:`read_rng_file`'s states."""
    if rank >= len(states):
        raise ValueError(f"it was written by {len(states)} processes, this is process {rank}")
    return states[rank]
