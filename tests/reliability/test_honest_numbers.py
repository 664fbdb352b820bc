"""Numbers that must not look more certain than they are: intervals over too few questions, accuracies
every question got right, and vectors no search can use (all zeros, NaN) written to a store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from haystack import Document

from tests.reliability.harness import PIPELINES, assert_clear_error, assert_success, cli, store_snapshot
from tests.reliability.store_checks import DIM, open_store, searches

INTERVALS = pytest.mark.reliability(category="intervals", expect="clear error")


def _questions(path: Path, count: int) -> Path:
    """``count`` questions, all ``who wrote hamlet`` (which the small store answers)."""
    record = {"question": "who wrote hamlet", "answers": ["Shakespeare"]}
    path.write_text("".join(json.dumps({"id": f"q{i}", **record}) + "\n" for i in range(count)), encoding="utf-8")
    return path


def _eval(store: Path, questions: Path, out: Path) -> list[object]:
    return ["eval", PIPELINES / "bm25.yml", "--questions", questions, "--store", store, "--out", out, "--intervals"]


@INTERVALS
def test_intervals_on_one_question(indexed_store: Path, tmp_path: Path) -> None:
    """haystack eval --intervals on a file of one question (it printed 100.0 [100.0, 100.0] for every metric)"""
    result = cli(*_eval(indexed_store, _questions(tmp_path / "q.jsonl", 1), tmp_path / "out"))
    assert_clear_error(result, "--intervals needs at least 30 questions, got 1")
    assert "Evaluating" not in result.err  # refused before any system ran
    assert not (tmp_path / "out" / "report.json").exists()


@pytest.mark.reliability(category="intervals", expect="correct result")
def test_intervals_when_every_question_is_answered(
    indexed_store: Path, tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    """haystack eval --intervals on 30 questions that BM25 answers every time"""
    out = tmp_path / "out"
    assert_success(cli(*_eval(indexed_store, _questions(tmp_path / "q.jsonl", 30), out)))
    top_1 = json.loads((out / "report.json").read_text(encoding="utf-8"))["intervals"]["systems"]["bm25"]["top_1"]
    assert (top_1["estimate"], top_1["high"], top_1["method"]) == (100.0, 100.0, "wilson")
    assert round(top_1["low"], 1) == 88.6  # the Wilson score interval of 30 of 30 (docs/evaluation.md), not zero width
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert f"100.0 [{top_1['low']:.1f}, 100.0] (Wilson)" in markdown and "Cells marked (Wilson)" in markdown
    record_property("top-1 cell", f"100.0 [{top_1['low']:.1f}, 100.0] (Wilson)")


@pytest.mark.reliability(category="vectors", expect="nothing lost")
@pytest.mark.parametrize("value", [0.0, float("nan")], ids=["all zeros", "NaN"])
def test_unusable_vector_written_to_a_store(
    indexed_store: Path, value: float, record_property: pytest.RecordProperty
) -> None:
    """Writing a batch of documents one of whose embeddings is all zeros (or holds NaN) to a store"""
    before = (store_snapshot(indexed_store), searches(indexed_store))
    store = open_store(indexed_store)
    batch = [
        Document(id="good", content="a passage with a vector", embedding=[0.25] * DIM),
        Document(id="broken", content="a passage with a broken vector", embedding=[value] * DIM),
    ]
    with pytest.raises(
        ValueError, match=r"^document 'broken': its embedding (is all zeros|has NaN or infinite values)"
    ):
        store.write_documents(batch)
    del store
    assert (store_snapshot(indexed_store), searches(indexed_store)) == before, "the store changed"
    record_property("store after the refusal", "unchanged, the good document of the batch not written either")
