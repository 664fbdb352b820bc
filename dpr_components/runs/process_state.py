"""This process's state that training loops record: random generator states and peak memory.

Generator states are plain data (lists of integers, strings, numbers): a checkpoint stores them
as JSON or loads them with ``torch.load(weights_only=True)``, so reading one never runs code."""

from __future__ import annotations

import random
import resource
from typing import Any

import numpy as np
import torch


def rng_states() -> dict[str, Any]:
    """The python, numpy and torch generator states as JSON-able data, for a checkpoint."""
    version, internal, gauss_next = random.getstate()
    numpy_state = np.random.get_state(legacy=False)
    return {
        "python": {"version": version, "state": list(internal), "gauss_next": gauss_next},
        "numpy": {
            "bit_generator": numpy_state["bit_generator"],
            "key": [int(k) for k in numpy_state["state"]["key"]],
            "pos": int(numpy_state["state"]["pos"]),
            "has_gauss": int(numpy_state["has_gauss"]),
            "gauss": float(numpy_state["gauss"]),
        },
        "torch": torch.get_rng_state().tolist(),
    }


def restore_rng_states(states: dict[str, Any]) -> None:
    """Put back generator states returned by :func:`rng_states`; malformed ones raise ``ValueError``."""
    try:
        python, numpy_state = states["python"], states["numpy"]
        random.setstate((python["version"], tuple(python["state"]), python["gauss_next"]))
        np.random.set_state(
            {
                "bit_generator": numpy_state["bit_generator"],
                "state": {"key": np.asarray(numpy_state["key"], dtype=np.uint32), "pos": numpy_state["pos"]},
                "has_gauss": numpy_state["has_gauss"],
                "gauss": numpy_state["gauss"],
            }
        )
        torch.set_rng_state(torch.tensor(states["torch"], dtype=torch.uint8))
    except (KeyError, TypeError, ValueError, RuntimeError, OverflowError) as error:
        raise ValueError(f"the saved random generator states are malformed ({error!r})") from error


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
