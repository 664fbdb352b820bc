"""Locations the project reads from: the shared data folder and the embedding cache."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "DPR_DATA_DIR"
CACHE_DIR_ENV = "DPR_CACHE_DIR"


def data_dir() -> Path:
    """Folder with the real data (``wiki/``, ``nq/``, ``squad/``); ``$DPR_DATA_DIR`` or ``../shared/data``."""
    return Path(os.environ.get(DATA_DIR_ENV, "../shared/data"))


def hf_offline() -> bool:
    """Whether Hugging Face offline mode is on (``HF_DATASETS_OFFLINE`` or ``HF_HUB_OFFLINE``)."""
    flags = (os.environ.get(name, "").lower() for name in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"))
    return any(flag in {"1", "true", "yes", "on"} for flag in flags)


def cache_dir() -> Path:
    """Git-ignored folder for cached embeddings and benchmark indexes; ``$DPR_CACHE_DIR`` or ``.cache``."""
    return Path(os.environ.get(CACHE_DIR_ENV, ".cache"))
