"""Selection splits: the fixed parts of NQ train and SQuAD train on which every choice is made.

A question belongs to a split's selection part when the SHA-256 of ``SALT`` and its normalised
text (Unicode NFKC, case-folded, whitespace collapsed), read as a number in [0, 1), falls below
the split's fraction. The rule needs no data: carving the split (``training/common/selection_splits.py``)
and excluding it from training (the recipes' ``--exclude-selection``) call the same
:func:`in_selection`, so no question is on both sides, whatever the file order or format. The
question text is the key because it is the one field every format keeps (SQuAD train's ids are
synthetic, mined files may renumber); a question asked twice falls on one side."""

from __future__ import annotations

import hashlib
import math
import os
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import TypeVar

T = TypeVar("T")

SALT = "dpr-components selection split v1"


@dataclass(frozen=True)
class SelectionSplit:
    """One selection split: its name, the training file it is carved from and its fraction."""

    name: str
    source: str
    fraction: float
    metric: str


# Fractions chosen for about 1,000 questions each on the real files (training/README.md, "Selection protocol").
NQ_SELECTION = SelectionSplit("nq-train", "nq/train.jsonl", 0.14, "gold-passage hits at k")
SQUAD_SELECTION = SelectionSplit(
    "squad-train", "squad/train-v1.1.json", 0.0115, "answer hits and gold-paragraph hits at k"
)
SPLITS = (NQ_SELECTION, SQUAD_SELECTION)


def normalise_question(question: str) -> str:
    """The question as the rule sees it: NFKC, case-folded, whitespace runs as one space, stripped."""
    return " ".join(unicodedata.normalize("NFKC", question).casefold().split())


def question_hash(question: str) -> float:
    """A stable number in [0, 1) for ``question``: the first 8 bytes of SHA-256(SALT, text)."""
    digest = hashlib.sha256(f"{SALT}\n{normalise_question(question)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def check_fraction(fraction: float) -> float:
    """``fraction`` itself when it lies strictly between 0 and 1, else a one-line ``ValueError``."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not math.isfinite(fraction):
        raise ValueError(f"selection fraction must be a number between 0 and 1, got {fraction!r}")
    if not 0 < fraction < 1:
        raise ValueError(f"selection fraction must lie strictly between 0 and 1, got {fraction!r}")
    return float(fraction)


def in_selection(question: str, fraction: float) -> bool:
    """Whether ``question`` belongs to the selection part of a split with ``fraction``."""
    return question_hash(question) < check_fraction(fraction)


def partition(items: Iterable[T], fraction: float, question: Callable[[T], str]) -> tuple[list[T], list[T]]:
    """``items`` as (selection part, training part), each in input order; ``question`` reads an item's text."""
    check_fraction(fraction)
    selection: list[T] = []
    training: list[T] = []
    for item in items:
        (selection if in_selection(question(item), fraction) else training).append(item)
    return selection, training


def split_for_source(source: str | os.PathLike[str]) -> SelectionSplit | None:
    """The split whose questions a training file holds, told from its name (``squad`` or ``nq``
    with ``train`` in the last two path parts: ``nq/train.jsonl``, ``nq-train-bm25.jsonl``), or None."""
    name = "/".join(PurePath(os.fspath(source)).parts[-2:]).lower()
    if "train" not in name:
        return None
    if "squad" in name:
        return SQUAD_SELECTION
    return NQ_SELECTION if "nq" in name else None


def ids_digest(ids: Iterable[str]) -> str:
    """A short digest of a set of question ids (sorted, one per line): equal on machines that carved the same split."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16]
