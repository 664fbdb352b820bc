"""The NQ recipe's reports (full-pool results and reduced-budget ablations) from run folders."""

from __future__ import annotations

import json
from pathlib import Path

from training.retriever.report import write_report

VARIANT = {
    "subset": None,
    "batch_size": 32,
    "negatives": 1,
    "squad_questions": 0,
    "epochs": 1,
    "similarity": "cosine",
    "learning_rate": 2e-5,
    "grad_cache_chunk": None,
    "bf16": True,
    "threads": 2,
    "validation": True,
}


def _write(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload), encoding="utf-8")


def _metrics(top1: float) -> dict[str, float]:
    return {"top1": top1, "top5": top1 + 10, "top20": top1 + 15, "top100": 99.0, "mrr": top1 / 100, "avg_rank": 1.5}


def _full_eval(top1: float) -> dict:
    return {"datasets": {"nq/dev.jsonl": {"top_k": {"1": top1, "5": 90.0, "20": 98.0, "100": 99.5}}}}


def _run(root: Path, name: str, sampled_top1: float, full_top1: float | None = None, **changes: object) -> None:
    folder = root / name
    _write(folder / "variant.json", {**VARIANT, **changes})
    _write(
        folder / "result.json",
        {"steps": 10, "examples": changes.get("subset") or 7167, "examples_per_second": 3.0, "peak_rss_mb": 2048.0},
    )
    (folder / "log.jsonl").write_text(json.dumps({"step": 10, "elapsed_s": 1800.0}) + "\n", encoding="utf-8")
    _write(
        folder / "sampled_eval.json",
        {"name": name, "questions": 655, "candidates": 13000, "metrics": _metrics(sampled_top1)},
    )
    if full_top1 is not None:
        _write(folder / "eval.json", {"name": name, "variant": {**VARIANT, **changes}, **_full_eval(full_top1)})


def test_reports_results_ablations_and_plot(tmp_path: Path) -> None:
    runs, docs = tmp_path / "runs", tmp_path / "docs"
    _write(runs / "baselines" / "bm25.json", {"name": "bm25", "system": "bm25", **_full_eval(63.8)})
    _write(
        runs / "baselines" / "sampled-minilm-zero-shot.json",
        {"name": "minilm-zero-shot", "questions": 655, "candidates": 13000, "metrics": _metrics(70.0)},
    )
    _run(runs, "main", 80.0, full_top1=82.0)
    _run(runs, "nq1000", 72.0, subset=1000, validation=False, threads=1)
    _run(runs, "nq2000", 75.0, subset=2000, validation=False, threads=1)
    _run(runs, "nq2000-hn0", 73.5, subset=2000, negatives=0, validation=False, threads=1)
    _run(runs, "nq2000-bs128", 74.0, subset=2000, batch_size=128, grad_cache_chunk=32, validation=False)

    accuracy = {"1": 83.0, "5": 96.0, "20": 99.0, "100": 99.8}
    _write(
        docs / "hybrid" / "retrieval_quality.json",
        [
            {
                "dataset": "nq/dev.jsonl",
                "full": {
                    "bm25": {"top_k_accuracy": accuracy},
                    "hybrid (pipeline default λ=10)": {"top_k_accuracy": accuracy},
                },
            }
        ],
    )

    write_report(runs, docs, "python -m training.retriever.report")

    results = (docs / "dpr_nq.md").read_text(encoding="utf-8")
    assert "| bm25 |" in results and "| main |" in results and "82.0" in results
    assert "| BM25 + trained DPR, hybrid (pipeline default λ=10) |  |  |  |  |  | 83.0 | 96.0 |" in results
    ablations = (docs / "ablations.md").read_text(encoding="utf-8")
    # 655 questions kept with each accuracy: a Wilson interval (no per-question results to bootstrap)
    assert "| minilm-zero-shot | 70.0 [66.4, 73.4] |" in ablations
    negatives = ablations.split("## BM25 hard negatives per question")[1].split("##")[0]
    assert negatives.index("| 0 | nq2000-hn0 |") < negatives.index("| 1 | nq2000 |")
    batch = ablations.split("## Batch size")[1].split("##")[0]
    assert "| 128 (GradCache, chunks of 32) | nq2000-bs128 |" in batch
    subsets = ablations.split("## NQ training questions")[1]
    # 1,000 and 2,000 questions, then the full recipe run (its in-training validation is ignored)
    assert subsets.index("| 1000 |") < subsets.index("| 2000 |") < subsets.index("| 7,167 (all) | main |")
    assert (docs / "sample_efficiency.png").read_bytes()[:4] == b"\x89PNG"
    payload = json.loads((docs / "ablations.json").read_text(encoding="utf-8"))
    assert {r["name"] for r in payload["runs"]} == {"main", "nq1000", "nq2000", "nq2000-hn0", "nq2000-bs128"}


def test_names_the_multi_setting_table_and_orders_runs_by_their_numbers(tmp_path: Path) -> None:
    runs, docs = tmp_path / "runs", tmp_path / "docs"
    for name, squad, multi in [
        ("squad7000", 7000, False),
        ("squad2500", 2500, False),
        ("multi-squad14000", 14000, True),
        ("multi-squad7000", 7000, True),
    ]:
        _run(runs, name, 80.0, full_top1=80.0, squad_questions=squad, multi=multi)

    write_report(runs, docs, "python -m training.retriever.report")

    results = (docs / "dpr_nq.md").read_text(encoding="utf-8")
    assert results.index("| multi-squad7000 |") < results.index("| multi-squad14000 |")
    continuation = results.split("## Ablation: SQuAD questions added\n")[1].split("##")[0]
    assert "squad2500" in continuation and "multi-" not in continuation
    multi = results.split("## Ablation: SQuAD questions added (multi setting)\n")[1].split("##")[0]
    assert multi.index("| 7000 | multi-squad7000 |") < multi.index("| 14000 | multi-squad14000 |")


def test_weight_averages_get_their_own_section_with_their_command(tmp_path: Path) -> None:
    runs, docs = tmp_path / "runs", tmp_path / "docs"
    _run(runs, "multi-a", 80.0, full_top1=80.0, squad_questions=7000, multi=True)
    _write(
        runs / "soup2-0123abcd" / "eval.json",
        {"name": "soup2-0123abcd", "soup": ["multi-a", "multi-b"], **_full_eval(81.5)},
    )

    write_report(runs, docs, "python -m training.retriever.report")

    results = (docs / "dpr_nq.md").read_text(encoding="utf-8")
    main_table, soups = results.split("## Weight averages (model soups)")
    assert "soup2-0123abcd" not in main_table and "| multi-a |" in main_table
    assert "| soup2-0123abcd | 2 | 81.5 |" in soups
    assert "`python -m training.retriever.train_dpr_nq --soup multi-a,multi-b`" in soups
    assert [s["name"] for s in json.loads((docs / "dpr_nq.json").read_text())["soups"]] == ["soup2-0123abcd"]


def test_rows_of_runs_no_longer_kept_are_carried_over_and_marked(tmp_path: Path) -> None:
    root, out = tmp_path / "runs", tmp_path / "docs"
    _write(root / "baselines" / "bm25.json", {"name": "bm25", "system": "bm25", **_full_eval(60.0)})
    _run(root, "qside-new", 80.0, full_top1=81.5, question_side=True)
    old = {"name": "old-run", "variant": VARIANT, "training": {"examples": 7167}, **_full_eval(81.7)}
    _write(out / "dpr_nq.json", {"runs": [old, {**old, "name": "qside-new"}], "soups": []})
    write_report(root, out, "python -m training.retriever.report")
    text = (out / "dpr_nq.md").read_text(encoding="utf-8")
    assert "| old-run † |" in text and "| qside-new |" in text and "81.5" in text
    assert "no longer kept" in text
    payload = json.loads((out / "dpr_nq.json").read_text(encoding="utf-8"))
    assert [(r["name"], r.get("archived", False)) for r in payload["runs"]] == [("old-run", True), ("qside-new", False)]
    # The question-side ablation pairs the new run with the carried-over one it differs from in that setting only.
    assert "## Ablation: question encoder alone (passage encoder fixed)" in text
