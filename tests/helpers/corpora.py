"""Small corpora and DPR training data written as JSON lines."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SMALL_CORPUS = [
    {
        "id": "hamlet",
        "title": "Hamlet",
        "text": "Hamlet is a tragedy written by William Shakespeare around 1600. It is set in Denmark.",
    },
    {
        "id": "everest",
        "title": "Mount Everest",
        "text": "Mount Everest is the highest mountain on Earth, 8,849 metres above sea level.",
    },
    {
        "id": "curie",
        "title": "Marie Curie",
        "text": "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
    },
    {
        "id": "bees",
        "title": "Honey bee",
        "text": "Honey bees live in colonies with a single queen and make honey from nectar.",
    },
    {
        "id": "jupiter",
        "title": "Jupiter",
        "text": "Jupiter is the largest planet of the Solar System, a gas giant. " * 12,
    },
]


def write_jsonl(path: Path, records: Iterable[Any]) -> Path:
    """``records`` as JSON lines, each ending in a newline."""
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def write_training_data(path: Path) -> Path:
    """12 DPR-format examples: with batch 4, 3 steps per epoch."""
    return write_jsonl(
        path,
        (
            {
                "id": f"q{i}",
                "question": f"what is fact number {i} about subject {i % 5}",
                "answers": [f"value{i}"],
                "positive_ctxs": [{"title": f"Subject {i}", "text": f"fact {i} is value{i}" + " detail" * (i % 4)}],
                "hard_negative_ctxs": [{"title": "Other", "text": f"an unrelated passage {j}"} for j in range(3)],
            }
            for i in range(12)
        ),
    )


def write_two_training_examples(path: Path) -> Path:
    """Two small DPR-format examples: one training step of batch 2."""
    return write_jsonl(
        path,
        (
            {
                "question": f"question {i}",
                "answers": [f"a{i}"],
                "positive_ctxs": [{"title": f"T{i}", "text": f"passage {i} a{i}"}],
                "hard_negative_ctxs": [{"title": "H", "text": f"hard {i}"}],
            }
            for i in range(2)
        ),
    )


# 12 documents of three sentences and 28 words each: every one gives a pseudo-query by either method.
ADAPT_CORPUS = [
    {
        "id": f"topic{n}",
        "title": f"Topic {n}",
        "text": (
            f"Topic {n} is a subject of study number {n} in the old catalogue. It was first described in "
            f"{1900 + n} by a travelling scholar. Many readers ask about topic {n} in the library."
        ),
    }
    for n in range(12)
]
