"""Intervals in the older comparison docs, re-rendered from their stored JSON: retrieval_quality (bootstrap
cells and paired differences from the stored first-hit ranks), the DPR training report, its ablations and
the reader benchmark (Wilson intervals, as only accuracies and question counts were stored)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.reader import reader_benchmark
from benchmarks.retrieval import retrieval_quality
from benchmarks.retrieval.retrieval_quality import fold_halves, render, summarise
from dpr_components.evaluation.intervals import wilson_interval
from dpr_components.evaluation.retrieval_metrics import RetrievalResult
from dpr_components.rankers.hybrid_fit import Candidates
from training.retriever.report import main as report_main

# Ten questions: the hybrid finds four first-ranked answers dense misses at top 1 and loses none.
DENSE = [1, 1, 1, 1, None, None, None, None, 2, 3]
HYBRID = [1, 1, 1, 1, 1, 1, 1, 1, 2, 3]
BM25 = [2, None, 1, None, 1, None, 5, None, 1, 30]


def _accuracy(ranks: list[int | None]) -> dict[str, float]:
    return {str(k): 100 * sum(r is not None and r <= k for r in ranks) / len(ranks) for k in (1, 5, 20, 100)}


def _result(fold_ranks: bool, copies: int = 1) -> dict:
    """One dataset of retrieval_quality.json, as the benchmark stores it (its questions ``copies`` times)."""
    bm25, dense, hybrid = BM25 * copies, DENSE * copies, HYBRID * copies
    systems = {"bm25": bm25, "dense": dense, "rrf": bm25, "hybrid (pipeline default λ=31.6228)": hybrid}
    full = {name: RetrievalResult.from_ranks(ranks, max_k=100).to_dict() for name, ranks in systems.items()}
    folds = []
    halves = fold_halves(len(dense))
    for fit_half in (0, 1):
        test = halves[1 - fit_half]
        ranks = {"bm25": bm25, "dense": dense, "hybrid": hybrid, "rrf": bm25}
        fold_systems = {system: [values[i] for i in test] for system, values in ranks.items()}
        fold = {"fit_half": fit_half, "weight": 10.0, "n_test": len(test)}
        fold.update({system: _accuracy(r) for system, r in fold_systems.items()})
        if fold_ranks:
            fold["first_hit_ranks"] = fold_systems
        folds.append(fold)
    return {
        "dataset": "nq/dev.jsonl",
        "n_questions": len(dense),
        "candidates_per_retriever": 2000,
        "full": full,
        "weight_fitted_on_all": 10.0,
        "folds": folds,
        "ms_per_question": {"bm25 top-2000": 1.0},
        "slug": "nq-dev",
    }


def _table(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n\n", 2)[1]


def test_paired_difference_from_first_hit_ranks_matches_a_hand_computation() -> None:
    text = render(
        [json.loads(json.dumps(_result(fold_ranks=True)))], "python -m benchmarks.retrieval.retrieval_quality"
    )
    table = _table(text, "All questions")
    row = next(
        line for line in table.splitlines() if line.startswith("| hybrid (pipeline default λ=31.6228) − dense |")
    )
    top_1 = row.split(" | ")[1]
    # By hand: top-1 hits 8/10 against 4/10, per-question differences 0,0,0,0,1,1,1,1,0,0 (mean +40 points);
    # the paired bootstrap resamples those ten differences (one seeded generator, 10,000 resamples).
    differences = np.array([0, 0, 0, 0, 1, 1, 1, 1, 0, 0], dtype=float)
    indices = np.random.default_rng(0).integers(0, 10, size=(10_000, 10))
    low, high = 100 * np.quantile(differences[indices].mean(axis=1), [0.025, 0.975])
    # McNemar: 4 discordant pairs, all for the hybrid: two-sided exact p = 2 / 2**4 = 0.125.
    assert top_1 == f"+40.0 [{low:+.1f}, {high:+.1f}] gain, p={0.125:.2g}"
    assert low > 0
    # BM25 at top-1: 3/10 against 4/10; it loses questions 0, 1, 3 and wins 4, 8: a tie on the coin,
    # McNemar p = 1, and an interval around -10 points that holds zero: no claim.
    bm25 = next(line for line in table.splitlines() if line.startswith("| bm25 − dense |")).split(" | ")[1]
    assert bm25.startswith("-10.0 [-") and bm25.endswith("] —, p=1")


def test_every_top_k_cell_has_a_bootstrap_interval_and_the_summary_names_only_supported_claims() -> None:
    text = render(
        [json.loads(json.dumps(_result(fold_ranks=True)))], "python -m benchmarks.retrieval.retrieval_quality"
    )
    assert text.index("**Made before the selection protocol.**") < text.index("Produced by:")
    assert "`docs/training/selection.md`" in text
    assert "| dense | 40.0 [" in text and "| hybrid (pipeline default λ=31.6228) | 80.0 [" in text
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith(("| system", "|---")):
            assert all("[" in cell for cell in line.strip("| ").split(" | ")[1:]), line
    assert "ʷ" not in text  # every fold row has its ranks: nothing falls back to Wilson
    assert "| hybrid (λ=10) − dense |" in text
    assert "hybrid (pipeline default λ=31.6228) at top-1" in text.split("On all questions")[1]


def test_older_json_without_fold_ranks_takes_them_from_all_questions_except_the_hybrids() -> None:
    text = render(
        [json.loads(json.dumps(_result(fold_ranks=False)))], "python -m benchmarks.retrieval.retrieval_quality"
    )
    fold = _table(text, "λ fitted on half 1")
    hybrid = next(line for line in fold.splitlines() if line.startswith("| hybrid (λ=10) |"))
    test = fold_halves(10)[1]
    top_1 = sum(1 for i in test if HYBRID[i] == 1) / len(test)
    wilson = wilson_interval(top_1, len(test)).scaled(100)
    assert hybrid.split(" | ")[1] == f"{wilson.estimate:.1f} [{wilson.low:.1f}, {wilson.high:.1f}]ʷ"
    assert "| BM25 − dense |" in fold and "| hybrid (λ=10) − dense |" not in fold
    assert "its difference from dense is not tested" in text
    assert "Not known: whether the hybrid with λ fitted on the other half differs from dense" in text


def test_from_json_rerenders_without_retrieving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Three copies of the ten questions: the per-dataset report's intervals need at least 30.
    (tmp_path / "retrieval_quality.json").write_text(json.dumps([_result(False, copies=3)]), encoding="utf-8")
    stored = (tmp_path / "retrieval_quality.json").read_text(encoding="utf-8")
    monkeypatch.setattr(retrieval_quality, "pool_store", lambda *a, **k: pytest.fail("a re-render opened the pool"))
    argv = ["--model", "models/x/question_encoder", "--out", str(tmp_path), "--from-json"]
    retrieval_quality.main(argv)
    text = (tmp_path / "retrieval_quality.md").read_text(encoding="utf-8")
    original = f"python -m benchmarks.retrieval.retrieval_quality --model models/x/question_encoder --out {tmp_path}"
    assert f"Produced by: `{original}`." in text
    assert f"by: `{original} --from-json`" in text
    assert "dense (`models/x/question_encoder`)" in text
    report = (tmp_path / "nq-dev" / "report.md").read_text(encoding="utf-8")
    assert "| dense | 40.0 [" in report and "## Differences" in report
    assert "Each system minus dense" in report
    assert (tmp_path / "retrieval_quality.json").read_text(encoding="utf-8") == stored  # the JSON is left as it was


def test_training_reports_get_wilson_intervals_from_their_json(tmp_path: Path) -> None:
    top_k = {"1": 50.0, "5": 80.0, "20": 90.0, "100": 100.0}
    baseline = {"name": "bm25", "system": "bm25", "datasets": {"nq/dev.jsonl": {"n_questions": 10, "top_k": top_k}}}
    (tmp_path / "dpr_nq.json").write_text(
        json.dumps({"command": "python -m training.retriever.train_dpr_nq --stage report", "baselines": [baseline]}),
        encoding="utf-8",
    )
    metrics = {"top1": 50.0, "top5": 80.0, "top20": 90.0, "top100": 100.0, "mrr": 0.6, "avg_rank": 2.0}
    zero_shot = {"name": "minilm-zero-shot", "questions": 10, "candidates": 100, "metrics": metrics}
    (tmp_path / "ablations.json").write_text(
        json.dumps(
            {"command": "python -m training.retriever.train_dpr_nq --stage report", "zero_shot": zero_shot, "runs": []}
        ),
        encoding="utf-8",
    )
    assert report_main(["--from-json", "--out", str(tmp_path)]) == 0
    results = (tmp_path / "dpr_nq.md").read_text(encoding="utf-8")
    # Wilson, 5 of 10: 0.5 ± 0.2634 (Newcombe 1998's formula); 10 of 10: [72.2, 100.0]
    assert (
        "| bm25 |  |  |  |  |  | 50.0 [23.7, 76.3] | 80.0 [49.0, 94.3] | 90.0 [59.6, 98.2] | 100.0 [72.2, 100.0] |"
        in (results)
    )
    assert "**Made before the selection protocol.**" in results and "differences between rows are not tested" in results
    assert "Produced by: `python -m training.retriever.train_dpr_nq --stage report`" in results
    assert f"by: `python -m training.retriever.report --from-json --out {tmp_path}`" in results
    ablations = (tmp_path / "ablations.md").read_text(encoding="utf-8")
    assert "| minilm-zero-shot | 50.0 [23.7, 76.3] | 80.0 [49.0, 94.3] |" in ablations
    assert "MRR and average rank have no interval" in ablations


def test_reader_benchmark_rerender_gives_exact_match_wilson_intervals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_k = {str(k): 50.0 for k in reader_benchmark.KS}
    result = {
        "command": "python -m benchmarks.reader.reader_benchmark --model models/reader-minilm",
        "model": "models/reader-minilm",
        "model_info": "no training record",
        "machine": "test",
        "torch_threads": 1,
        "squad_gold": {"n": 10, "exact_match": 50.0, "f1": 60.0, "ms_per_question": 1.0},
        "end_to_end": [
            {
                "dataset": "nq/dev.jsonl",
                "n": 10,
                "questions": "all 10",
                "exact_match": {"passage": {"dense": by_k}},
                "retrieval_top_k_accuracy": {"dense": {k: 90.0 for k in by_k}},
            }
        ],
        "latency": {
            "n": 1,
            "warmup": 0,
            "stages": {"pipeline": {"p50_ms": 1.0, "p95_ms": 1.0, "mean_ms": 1.0}},
            "reader_precision": "fp32",
            "weight": 31.6228,
            "qa_ranking": "passage",
        },
        "date": "2026-01-01",
    }
    (tmp_path / "reader.json").write_text(json.dumps(result), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["reader_benchmark", "--from-json", "--out", str(tmp_path)])
    reader_benchmark.main()
    text = (tmp_path / "reader.md").read_text(encoding="utf-8")
    assert "| 50.0 [23.7, 76.3] | 60.0 | 1 |" in text  # EM with its interval, F1 without one
    assert "| passage | dense | 50.0 [23.7, 76.3] (90) |" in text
    assert "**Made before the selection protocol.**" in text and "are not tested" in text
    assert f"by: `python -m benchmarks.reader.reader_benchmark --from-json --out {tmp_path}`" in text


def test_a_fresh_run_stores_fold_ranks_so_every_row_gets_a_paired_difference() -> None:
    def question(bm25: list[float], dense: list[float], hits: list[bool]) -> Candidates:
        return Candidates(bm25=np.array(bm25), dense=np.array(dense), hits=np.array(hits))

    candidates = [
        question([5.0, 4.0], [0.1, 0.9], [False, True]),
        question([9.0, 1.0], [0.2, 0.3], [True, False]),
        question([1.0], [0.5], [False]),
        question([3.0, 2.0], [0.9, 0.1], [True, False]),
    ]
    retrieved = {
        "n": 4,
        "bm25_ranks": [2, 1, None, 1],
        "dense_ranks": [1, 2, None, 1],
        "rrf_ranks": [1, 1, None, 1],
        "candidates": candidates,
        "ms_per_question": {"bm25 top-2000": 1.0},
    }
    result = summarise("nq/dev.jsonl", retrieved, 2000, default_weight=10.0)
    assert all(set(fold["first_hit_ranks"]) == {"bm25", "dense", "hybrid", "rrf"} for fold in result["folds"])
    stored = json.loads(
        json.dumps([{**result, "slug": "nq-dev", "full": {k: v.to_dict() for k, v in result["full"].items()}}])
    )
    text = render(stored, "python -m benchmarks.retrieval.retrieval_quality")
    assert "ʷ" not in text and "Not known" not in text
    for fold in result["folds"]:
        assert f"| hybrid (λ={fold['weight']:g}) − dense |" in text
    assert "λ fitted on all questions of the datasets below = 10**" in text
