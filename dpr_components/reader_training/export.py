"""The end of a reader run: ``export/`` holds the best reader (the last step's with
``export="last"`` or without dev questions) in fp16 safetensors, small enough to commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from dpr_components.reader_training.checkpoints import ReaderRun, ReaderTrainingState
from dpr_components.reader_training.task import training_info
from dpr_components.readers.model import load_reader, save_reader
from dpr_components.runs.run_folder import LOG_FILE
from dpr_components.runs.run_log import read_log


def logged_dev(run_dir: Path, step: int) -> tuple[float | None, float | None]:
    """Dev EM/F1 evaluated at ``step``, from the run's log (None, None if it was not evaluated there)."""
    found = [e for e in read_log(run_dir / LOG_FILE) if e.get("step") == step and "dev_em" in e]
    return (found[-1]["dev_em"], found[-1].get("dev_f1")) if found else (None, None)


def export_reader(run: ReaderRun, reader: torch.nn.Module, tokenizer: Any, state: ReaderTrainingState) -> Path:
    """Write ``export/`` from ``best/`` (or from ``reader`` itself) and return it."""
    best_dir = run.dir / "best"
    settings = run.settings
    if settings.export == "best" and best_dir.is_dir():
        source, source_tokenizer = load_reader(best_dir)
        info = training_info(settings, state, None)
        if (best_dir / "reader_info.json").is_file():
            info = json.loads((best_dir / "reader_info.json").read_text(encoding="utf-8"))
    else:
        source, source_tokenizer = reader, tokenizer
        em, f1 = logged_dev(run.dir, state.step)
        info = {"training": settings.to_dict(), "step": state.step, "exported": "last", "dev_em": em, "dev_f1": f1}
    export_dir = run.dir / "export"
    save_reader(source, source_tokenizer, export_dir, dtype=torch.float16, info=info, overwrite=True)
    return export_dir
