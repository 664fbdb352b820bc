"""The benchmark corpus: the shared Wikipedia pool split into DPR passages, and its questions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from dpr_components.indexing.passages import Passage, split_documents
from dpr_components.utils.settings import data_dir


def pool_path() -> Path:
    path = data_dir() / "wiki" / "documents.jsonl"
    if not path.is_file():
        raise SystemExit(f"the passage pool {path} is missing: set DPR_DATA_DIR to the shared data folder")
    return path


def _documents(path: Path) -> Iterator[tuple[str, str, str]]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            yield record["id"], record.get("title", ""), record["text"]


def pool_passages(limit: int | None = None) -> list[Passage]:
    """The pool's passages in file order (55,350 for the full pool)."""
    passages = list(split_documents(_documents(pool_path())))
    return passages[:limit] if limit else passages
