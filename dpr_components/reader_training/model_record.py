"""The record a reader export keeps of how it was made (``reader_info.json``): the command, its
training questions, the cost of its steps and, for a run that went on from a trained reader,
that reader's own record. The model card (``dpr_components/reader_training/model_card.py``) is written from it."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from dpr_components.runs.run_log import read_log
from dpr_components.utils.atomic_files import atomic_write_text
from dpr_components.utils.json_files import read_optional_json


def training_cost(run_dir: Path) -> dict[str, float] | None:
    """Median throughput, hours of training steps (dev evaluations excluded) and peak memory, from the run's log."""
    windows = [e for e in read_log(run_dir / "log.jsonl") if "passages_per_s" in e]
    if not windows:
        return None
    steps_per_window = windows[1]["step"] - windows[0]["step"] if len(windows) > 1 else 1
    return {
        "passages_per_s": statistics.median_high(e["passages_per_s"] for e in windows),
        "questions_per_s": statistics.median_high(e["questions_per_s"] for e in windows),
        "hours": sum(1 / e["steps_per_s"] for e in windows) * steps_per_window / 3600,
        "peak_gb": max(e["peak_rss_mb"] for e in windows) / 1024,
    }


def earlier_record(init_model: str) -> dict[str, Any] | None:
    """The record of the reader a run started from, when it was a reader of ours (else None)."""
    path = Path(init_model) / "reader_info.json"
    record = read_optional_json(path, lambda error: SystemExit(f"{path}: not a readable reader record ({error})"))
    if record is None:
        return None
    # The model card walks the whole chain of earlier stages: each one must be a record too.
    stage = record
    while stage is not None:
        if (
            not isinstance(stage, dict)
            or not isinstance(stage.get("training"), dict)
            or not isinstance(stage.get("step"), int)
        ):
            raise SystemExit(
                f"{path}: not a reader record (expected an object with 'training' settings and a 'step', "
                "and the same for each earlier stage under 'continues')"
            )
        stage = stage.get("continues")
    return record


def record_provenance(export_dir: Path, run_dir: Path, command: str, data: dict[str, int], init_model: str) -> None:
    """Add the command, training questions, cost and earlier stage to the export's reader_info.json."""
    info_path = export_dir / "reader_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8"))
    info.update({"command": command, "data": data, "cost": training_cost(run_dir)})
    earlier = earlier_record(init_model)
    if earlier is not None:
        info["continues"] = earlier
    atomic_write_text(info_path, json.dumps(info, indent=1, sort_keys=True) + "\n")
