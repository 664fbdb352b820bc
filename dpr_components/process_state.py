"""This process's state that training loops record: random generator states and peak memory."""

from __future__ import annotations

import random
import resource
from typing import Any

import numpy as np
import torch


def rng_states() -> dict[str, Any]:
    """The python, numpy and torch generator states, for a checkpoint."""
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def restore_rng_states(states: dict[str, Any]) -> None:
    """Put back generator states returned by :func:`rng_states`."""
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
