"""The BM25 benchmark's report: per-question first-hit ranks become bootstrap intervals, paired
differences from Lucene with McNemar's test and an honest ±0.5-point parity verdict; an older JSON
without ranks falls back to Wilson intervals. Small synthetic data, no Pyserini."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.bm25 import bm25_benchmark
from benchmarks.bm25.bm25_benchmark import evaluate
from benchmarks.bm25.bm25_data import BenchmarkData, Question
from benchmarks.bm25.bm25_report import (
    ESTIMATE_ONLY,
    ESTIMATE_ONLY_UNTESTED,
    PARITY_SHOWN,
    WILSON_MARK,
    accuracy_cell,
    compare,
    render_markdown,
    target_checks,
)
from benchmarks.bm25.retrieval_metrics import CUTOFFS, top_k_accuracy
from dpr_components.evaluation.intervals import bootstrap_interval, wilson_interval
from dpr_components.evaluation.metric_intervals import hits_at, interval_cell


def engine(ranks: dict[str, list[int | None]], keep_ranks: bool = True) -> dict:
    """One engine's entry of the JSON's ``full`` (or ``subset``), from first-hit ranks per dataset."""
    result: dict[str, Any] = {
        "engine": "synthetic",
        "settings": {"k1": 0.9, "b": 0.4, "method": "lucene", "bm25s": "test"},
        "num_docs": 10,
        "questions": {dataset: len(values) for dataset, values in ranks.items()},
        "accuracy": {dataset: top_k_accuracy(values) for dataset, values in ranks.items()},
        "build_seconds": 1.0,
        "queries_per_second": 100.0,
        "peak_rss_mb": 50.0,
    }
    result["accuracy"]["all"] = top_k_accuracy([rank for values in ranks.values() for rank in values])
    if keep_ranks:
        result["first_hit_ranks"] = ranks
    return result


def report(full: dict[str, dict], subset: dict[str, dict] | None = None) -> dict:
    """A whole JSON report around ``full``, shaped as bm25_benchmark writes it."""
    return {
        "command": "python -m benchmarks.bm25.bm25_benchmark",
        "date": "2026-01-01",
        "environment": {"nice": 19, "variables": {"OMP_NUM_THREADS": "1"}},
        "machine": {
            "cpus": 2,
            "platform": "test",
            "python": "3.11",
            "load_average_start": 1.0,
            "load_average_end": 1.0,
        },
        "pool": {"passages": 10, "questions": full["ours"]["questions"]},
        "cutoffs": list(CUTOFFS),
        "query_repeats": 1,
        "full": full,
        "subset": subset or {},
        "subset_size": {"passages": 5, "questions": 4, "seed": 0},
        "agreement_with_lucene": {},
        "length_rounding_ablation": {},
        "analyzer_parity": {},
        "skipped": {"lucene": "lucene" not in full, "inmemory": not subset},
    }


# 400 questions per dataset; ``ours`` differs from Lucene at top-1 on a few questions only.
LUCENE_NQ = [1] * 200 + [3] * 100 + [50] * 60 + [None] * 40
LUCENE_SQUAD = [1] * 250 + [10] * 100 + [None] * 50


def test_accuracy_cell_is_a_bootstrap_over_questions_when_ranks_are_kept() -> None:
    lucene = engine({"nq": LUCENE_NQ})
    expected = interval_cell(bootstrap_interval(hits_at(LUCENE_NQ, 5)).scaled(100))
    assert accuracy_cell(lucene, "nq", 5) == expected
    assert expected.startswith("75.0 [")


def test_accuracy_cell_falls_back_to_wilson_without_ranks() -> None:
    lucene = engine({"nq": LUCENE_NQ}, keep_ranks=False)
    expected = interval_cell(wilson_interval(0.75, 400).scaled(100)) + WILSON_MARK
    assert accuracy_cell(lucene, "nq", 5) == expected


def test_identical_rankings_show_parity() -> None:
    comparison = compare(engine({"nq": LUCENE_NQ}), engine({"nq": LUCENE_NQ}), "nq", 1)
    assert comparison.estimate == 0.0
    assert comparison.test is not None and comparison.test.p_value == 1.0
    assert comparison.cell() == "+0.0 [+0.0, +0.0] —, p=1"
    assert comparison.parity() == PARITY_SHOWN


def test_small_difference_on_few_questions_is_an_estimate_only() -> None:
    # One question gained and none lost: +0.25 point, but its interval reaches past +0.5.
    ours = [2, *LUCENE_NQ[1:]]
    ours[-1] = 1
    comparison = compare(engine({"nq": ours}), engine({"nq": LUCENE_NQ}), "nq", 1)
    assert comparison.estimate == pytest.approx(0.0)
    comparison = compare(engine({"nq": ours}), engine({"nq": LUCENE_NQ}), "nq", 100)
    assert comparison.estimate == pytest.approx(0.25)
    assert comparison.difference is not None and comparison.difference.interval.high > 0.5
    assert comparison.parity() == ESTIMATE_ONLY
    assert comparison.test is not None and (comparison.test.b01, comparison.test.b10) == (0, 1)


def test_difference_beyond_tolerance_is_not_met() -> None:
    ours = LUCENE_NQ[:300] + [1] * 100  # the last 100 questions: top-1 hits for ours, not for Lucene
    comparison = compare(engine({"nq": ours}), engine({"nq": LUCENE_NQ}), "nq", 1)
    assert comparison.estimate > 0.5
    assert comparison.parity() == "**no**"
    assert comparison.cell().endswith("] gain, p=1.6e-30")


def test_without_ranks_differences_are_not_tested() -> None:
    comparison = compare(engine({"nq": LUCENE_NQ}, False), engine({"nq": LUCENE_NQ}, False), "nq", 20)
    assert comparison.difference is None
    assert comparison.cell() == "+0.0 (not tested)"
    assert comparison.parity() == ESTIMATE_ONLY_UNTESTED


def test_markdown_renders_intervals_differences_and_the_parity_verdict() -> None:
    lucene = {**engine({"nq": LUCENE_NQ, "squad": LUCENE_SQUAD}), "queries_per_second": 10.0}
    ours = engine({"nq": LUCENE_NQ, "squad": LUCENE_SQUAD})
    subset = {"ours": engine({"nq": [1, 2, None, 4]}), "inmemory": engine({"nq": [1, None, None, 4]})}
    text = render_markdown(report({"ours": ours, "lucene": lucene}, subset))
    assert "| ours (BM25Index, Porter) − Lucene | +0.0 [+0.0, +0.0] —, p=1 |" in text
    assert f"| NQ dev top-1 | {accuracy_cell(ours, 'nq', 1)} | {accuracy_cell(lucene, 'nq', 1)} |" in text
    assert "Parity within ±0.5 is shown by the interval for NQ dev top-1" in text
    assert "| ours (BM25Index, Porter) − InMemory |" in text
    assert "`nice -n 19` and `OMP_NUM_THREADS=1`" in text
    assert WILSON_MARK not in text and "not tested" not in text
    checks = target_checks(report({"ours": ours, "lucene": lucene}))
    assert [c["met"] for c in checks] == [PARITY_SHOWN] * 6 + ["yes"]


def test_old_json_renders_wilson_intervals_and_untested_differences() -> None:
    full = {
        "ours": engine({"nq": LUCENE_NQ, "squad": LUCENE_SQUAD}, keep_ranks=False),
        "lucene": engine({"nq": LUCENE_NQ, "squad": LUCENE_SQUAD}, keep_ranks=False),
    }
    text = render_markdown(report(full))
    assert f"75.0 [70.5, 79.0]{WILSON_MARK}" in text
    assert "| +0.0 (not tested) |" in text
    assert "Only the point estimate lies within ±0.5 for NQ dev top-1" in text
    assert PARITY_SHOWN not in text


def test_evaluate_keeps_each_questions_first_hit_rank() -> None:
    data = BenchmarkData(
        passage_ids=["p0", "p1", "p2"],
        titles=["Paris", "Rome", "Bern"],
        texts=["the capital of france is paris", "rome is in italy", "bern is in switzerland"],
        questions=[
            Question("nq:0", "nq", "capital of france", ("paris",)),
            Question("nq:1", "nq", "where is bern", ("switzerland",)),
            Question("squad:0", "squad", "rome?", ("spain",)),
        ],
    )
    run = {
        "engine": "ours",
        "num_docs": 3,
        "build_seconds": 1.0,
        "queries": 3,
        "query_seconds": 1.0,
        "peak_rss_mb": 10.0,
        "ranked": {"nq:0": ["p0", "p1"], "nq:1": ["p0", "p1", "p2"], "squad:0": ["p1"]},
    }
    result = evaluate(run, data)
    assert result["first_hit_ranks"] == {"nq": [1, 3], "squad": [None]}
    assert json.loads(json.dumps(result))["first_hit_ranks"]["squad"] == [None]


def test_from_json_rerenders_without_measuring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "bm25.md"
    ranks = {"nq": LUCENE_NQ, "squad": LUCENE_SQUAD}
    stored = report({"ours": engine(ranks), "lucene": engine(ranks)})
    out.with_suffix(".json").write_text(json.dumps(stored), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["bm25_benchmark", "--from-json", "--out", str(out)])
    bm25_benchmark.main()
    text = out.read_text(encoding="utf-8")
    assert text == render_markdown(stored, f"python -m benchmarks.bm25.bm25_benchmark --from-json --out {out}")
    assert "Re-rendered from `bm25.json`" in text
