"""Where things are in the repository, wherever a test module sits below ``tests/``."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PIPELINES = REPO / "pipelines"
DOCS = REPO / "docs"
