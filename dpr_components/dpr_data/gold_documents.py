"""Gold paragraphs in the passage pool: the pool documents whose text is a question's gold paragraph.

A gold paragraph (NQ's ``positive_ctxs[0]``, a SQuAD context) is found in the pool
(``wiki/documents.jsonl``) by its whitespace-normalised text. The selection splits' ``gold_ids``
(``training/common/selection_splits.py``), their gold-passage hits and the reader's gold-document
positives (``training/reader/train_reader.py --positives-by gold-document``) all use this lookup."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

POOL = "wiki/documents.jsonl"  # the pool's documents, under the data folder


def text_key(text: str) -> str:
    """``text`` with every whitespace run as one space: how a paragraph is matched to a pool document."""
    return " ".join(text.split())


def pool_ids(path: Path) -> dict[str, list[str]]:
    """Pool document ids by whitespace-normalised text (how a gold paragraph is found in the pool)."""
    if not path.is_file():
        raise FileNotFoundError(f"passage pool {path} not found (set DPR_DATA_DIR to the shared data folder)")
    ids: dict[str, list[str]] = defaultdict(list)
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            try:
                document = json.loads(line)
                ids[text_key(document["text"])].append(str(document["id"]))
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                raise ValueError(f"{path}, line {number}: not a pool document ({error})") from error
    return ids


def gold_ids(texts: Iterable[str], pool: Mapping[str, list[str]]) -> list[str]:
    """The pool documents holding any of the paragraphs ``texts``, in order, without repeats."""
    return list(dict.fromkeys(i for text in texts for i in pool.get(text_key(text), [])))
