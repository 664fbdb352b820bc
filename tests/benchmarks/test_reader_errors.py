"""benchmarks/reader/reader_errors.py: every class of first answer on hand-made cases, where a span came
from, the report's arithmetic, and a run on tiny models."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks.reader.reader_errors import (
    CLASSES,
    classify,
    main,
    passage_rank,
    question_record,
    span_source,
    strictly_contains,
)
from tests.benchmarks.conftest import TinyQARun

GOLDS = ["William Shakespeare"]


@pytest.mark.parametrize(
    ("prediction", "gold_ranks", "expected"),
    [
        ("the William Shakespeare.", [2], "correct"),
        ("william shakespeare", [], "correct"),
        ("Christopher Marlowe", [], "passage_missing"),
        (None, [], "passage_missing"),
        (None, [1, 3], "no_answer"),
        ("written by William Shakespeare", [1], "too_long"),
        ("Shakespeare", [1], "too_short"),
        ("Shakespeare around 1600", [1], "partial"),
        ("Denmark", [4], "other"),
    ],
)
def test_every_class(prediction: str | None, gold_ranks: list[int], expected: str) -> None:
    assert classify(prediction, GOLDS, gold_ranks) == expected
    assert expected in CLASSES


def test_containment_is_by_whole_words_and_strict() -> None:
    assert strictly_contains("in 1600 AD", "1600")
    assert not strictly_contains("16000", "1600")  # a word's part is no span
    assert not strictly_contains("The 1600", "1600")  # equal after normalisation
    assert not strictly_contains("1600", "the")  # nothing left of the inner one
    assert classify("160", ["1600"], [1]) == "other"
    assert classify("in 1600", ["1600", "in 1600 or 1601"], [1]) == "too_long"  # long beats short


def passage(identifier: str, text: str | None) -> SimpleNamespace:
    return SimpleNamespace(id=identifier, content=text)


def test_a_record_keeps_ranks_and_the_span_passage() -> None:
    passages = [
        passage("a", "Hamlet is set in Denmark."),
        passage("b", "Hamlet is a tragedy written by William Shakespeare."),
        passage("c", None),
        passage("d", "william shakespeare, the playwright"),
    ]
    answer = SimpleNamespace(data="Shakespeare", document=passages[3])
    assert question_record(passages, answer, GOLDS) == {
        "class": "too_short",
        "read": 4,
        "gold_ranks": [2, 4],
        "span_rank": 4,
    }
    no_answer = SimpleNamespace(data=None, document=None)
    assert question_record(passages, no_answer, GOLDS)["class"] == "no_answer"
    assert passage_rank(no_answer, passages) is None and passage_rank(None, passages) is None
    assert question_record(passages[:1], None, GOLDS) == {
        "class": "passage_missing",
        "read": 1,
        "gold_ranks": [],
        "span_rank": None,
    }


def test_span_sources_count_only_span_errors() -> None:
    records: list[dict[str, Any]] = [
        {"class": "too_long", "gold_ranks": [2, 4], "span_rank": 2},
        {"class": "other", "gold_ranks": [2, 4], "span_rank": 4},
        {"class": "partial", "gold_ranks": [1], "span_rank": 3},
        {"class": "no_answer", "gold_ranks": [1], "span_rank": None},
        {"class": "correct", "gold_ranks": [1], "span_rank": 2},
    ]
    assert span_source(records) == {"errors": 3, "elsewhere": [0.0, 1.0, 1.0], "goldless": 1}


def test_a_run_on_tiny_models(tiny_qa_run: TinyQARun) -> None:
    questions, out, folder = tiny_qa_run.questions, tiny_qa_run.out, tiny_qa_run.folder
    main(
        [
            *tiny_qa_run.arguments,
            "--pipeline",
            f"qa={folder / 'qa.yml'}",
            "--pipeline",
            f"rerank={folder / 'qa_rerank.yml'}",
        ]
    )
    summary = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert summary["asked"] == {str(questions): 2}
    for label, reads in (("qa", 10), ("rerank", 5)):
        records = summary["runs"][label][str(questions)]
        assert len(records) == 2 and all(record["class"] in CLASSES for record in records)
        assert all(
            record["read"] <= reads and set(record["gold_ranks"]) <= set(range(1, reads + 1)) for record in records
        )
        assert all(record["span_rank"] is not None for record in records)  # no "no answer": it is off
    text = out.with_suffix(".json").read_text(encoding="utf-8")
    assert "who wrote hamlet" not in text and "Shakespeare" not in text  # numbers only
    markdown = out.with_suffix(".md").read_text(encoding="utf-8")
    assert "`qa`" in markdown and "`rerank`" in markdown and "python -m benchmarks.reader.reader_errors" in markdown
    assert "Shakespeare" not in markdown
    out.with_suffix(".md").unlink()
    main(["--out", str(out), "--from-json"])
    assert out.with_suffix(".md").read_text(encoding="utf-8") == markdown
