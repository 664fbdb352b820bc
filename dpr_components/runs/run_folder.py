"""A training run's output folder, as the DPR and reader loops share it: cleaned of the leftovers
of a killed run, checked to hold the same run (settings and data) before resuming, with its
settings file and its log."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from dpr_components.runs.run_log import RunLog
from dpr_components.utils.atomic_files import (
    atomic_write_text,
    remove_stale_temporaries,
)

LOG_FILE = "log.jsonl"
SETTINGS_FILE = "config.json"


def data_fingerprint(records: Iterable[str]) -> str:
    """Identifies the training data (one string per example), so a resumed run cannot silently switch data."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(record.encode())
    return digest.hexdigest()[:16]


def clean_run_folder(folder: Path, *subfolders: str) -> None:
    """Remove what a killed run may have left in ``folder`` (and its ``subfolders``): half-written
    folders, or the previous copy of one set aside. Only one process may call this."""
    for path in (Path(folder), *(Path(folder) / name for name in subfolders)):
        remove_stale_temporaries(path)


def changed_settings(
    saved: Mapping[str, Any], current: Mapping[str, Any], resumable: Collection[str]
) -> dict[str, tuple[Any, Any]]:
    """Settings whose value differs from the saved run's, as ``name: (saved, current)``; ``resumable``
    ones may change (they do not change what is computed)."""
    return {
        name: (saved.get(name), value)
        for name, value in sorted(current.items())
        if name not in resumable and saved.get(name) != value
    }


def check_same_run(
    folder: Path,
    saved_settings: Mapping[str, Any],
    settings: Mapping[str, Any],
    resumable: Collection[str],
    saved_data: str | None,
    data: str,
) -> None:
    """Refuse to resume the run in ``folder`` with other settings or other training data."""
    changed = changed_settings(saved_settings, settings, resumable)
    if changed:
        described = ", ".join(f"{name} {old!r} -> {new!r}" for name, (old, new) in changed.items())
        raise ValueError(
            f"{folder} holds a run with other settings ({described}): "
            "resume it with the same settings or use another output folder"
        )
    if saved_data != data:
        raise ValueError(
            f"{folder} holds a run on other training data (fingerprint {saved_data} != {data}): "
            "use another output folder"
        )


def read_settings(folder: Path) -> dict[str, Any] | None:
    """The settings file of the run in ``folder``, or None before the run's start."""
    path = Path(folder) / SETTINGS_FILE
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def write_settings(folder: Path, payload: Mapping[str, Any]) -> None:
    atomic_write_text(Path(folder) / SETTINGS_FILE, json.dumps(payload, indent=1))


def resume_log(folder: Path, step: int | None) -> RunLog:
    """The run's log, without the entries after ``step`` (the step resumed from; None: a new run
    starts, and the entries of an earlier attempt that never reached a checkpoint are dropped)."""
    log = RunLog(Path(folder) / LOG_FILE)
    log.truncate_after(step if step is not None else -1)
    return log


def read_run_file(path: Path) -> dict[str, Any]:
    """A JSON file a run or its benchmark wrote, which a model card needs: missing is one line naming it."""
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run the training recipe and its benchmark first")
    return json.loads(path.read_text(encoding="utf-8"))
