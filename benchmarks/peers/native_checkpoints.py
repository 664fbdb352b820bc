"""Checkpoints of ``haystack_native.py`` in its ``--work`` folder, so that a run stopped midway (a
machine's time limit, a kill) goes on where it stopped when started again with the same command: each
finished phase is kept as ``phases/<name>.json``, and a long phase keeps its questions done so far in
``phases/<name>.partial.json`` every few questions.

A checkpoint records the settings that shape the numbers; one written with other settings is refused,
so two runs are never mixed into one page."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpr_components.utils.atomic_files import atomic_write_text

# questions between two saves of a phase in progress
SAVE_EVERY = 10


@dataclass(frozen=True)
class Checkpoints:
    """The phases of one run, kept under ``folder``; ``settings`` must match to reuse any of them."""

    folder: Path
    settings: dict[str, Any]

    def _path(self, name: str) -> Path:
        return self.folder / "phases" / f"{name}.json"

    def _read(self, path: Path) -> Any | None:
        if not path.is_file():
            return None
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved.get("settings") != self.settings:
            raise SystemExit(
                f"{path} was written with other settings ({saved.get('settings')}): give a new --work folder"
            )
        return saved["result"]

    def _write(self, path: Path, result: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps({"settings": self.settings, "result": result}))

    def phase(self, name: str, compute: Callable[[], Any]) -> Any:
        """The result of phase ``name``: read back when an earlier run finished it, else computed and kept."""
        done = self._read(self._path(name))
        if done is not None:
            return done
        result = compute()
        self._write(self._path(name), result)
        self._path(f"{name}.partial").unlink(missing_ok=True)
        return result

    def progress(self, name: str) -> Any | None:
        """What phase ``name`` had done when it last saved its progress (None: nothing yet)."""
        return self._read(self._path(f"{name}.partial"))

    def save_progress(self, name: str, state: Any, done: int) -> None:
        """Keep ``state`` of phase ``name`` after ``done`` questions, every :data:`SAVE_EVERY` of them."""
        if done % SAVE_EVERY == 0:
            self._write(self._path(f"{name}.partial"), state)
