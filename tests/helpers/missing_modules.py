"""An install without some optional modules, simulated in this process."""

from __future__ import annotations

import sys

import pytest


def hide_modules(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make ``names`` (and every submodule already imported) unimportable until the test ends, as if their
    distributions were not installed: ``import`` raises ``ModuleNotFoundError``, ``find_spec`` answers None."""
    for name in names:
        for loaded in [key for key in sys.modules if key == name or key.startswith(f"{name}.")]:
            monkeypatch.setitem(sys.modules, loaded, None)
        monkeypatch.setitem(sys.modules, name, None)
