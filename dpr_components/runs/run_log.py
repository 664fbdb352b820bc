"""The training log: one JSON object per line (``step`` in each), appended as training runs.

On resume, entries past the checkpoint being resumed are dropped first (:meth:`RunLog.truncate_after`),
so the log of a killed-and-resumed run reads like that of an uninterrupted one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dpr_components.utils.atomic_files import atomic_write_text


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """The complete entries of a log (a last line cut short by a kill is ignored)."""
    path = Path(path)
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


class RunLog:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def truncate_after(self, step: int) -> None:
        """Drop entries logged after ``step`` (they are about to be computed again)."""
        kept = [entry for entry in read_log(self.path) if entry.get("step", 0) <= step]
        atomic_write_text(self.path, "".join(json.dumps(entry) + "\n" for entry in kept))

    def write(self, entry: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, default=float) + "\n")
