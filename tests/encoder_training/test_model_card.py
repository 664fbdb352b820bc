"""The model card of a trained DPR encoder pair, written from its run and the recipe's reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DPR_RUN_CONFIG = {
    "similarity": "cosine",
    "learning_rate": 2e-5,
    "warmup_ratio": 0.1,
    "max_grad_norm": 2.0,
    "dropout": 0.1,
    "max_length": 256,
    "bf16": True,
    "val_questions": 300,
    "val_pool_size": 3000,
}


def _write(path: Path, payload: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload) if not isinstance(payload, str) else payload)


def test_dpr_card_reports_training_and_full_pool_results(tmp_path: Path) -> None:
    from dpr_components.encoder_training.model_card import main as dpr_main

    run, model = tmp_path / "runs" / "dpr-nq" / "nqall", tmp_path / "models" / "dpr"
    config = dict(DPR_RUN_CONFIG)
    _write(run / "config.json", {"config": config})
    _write(run / "variant.json", {"batch_size": 32, "negatives": 1, "epochs": 1})
    _write(
        run / "result.json",
        {
            "examples": 7167,
            "steps": 223,
            "best_step": 223,
            "examples_per_second": 3.27,
            "peak_rss_mb": 9759.0,
            "last_validation": {"mrr": 0.9025, "top1": 83.67},
        },
    )
    _write(run.parent / "data" / "nq-train-bm25.jsonl.meta.json", {"mining": {"num_negatives": 30}})
    _write(model / "question_encoder" / "model.safetensors", "x" * 1000)
    scores = lambda top1: {"nq/dev.jsonl": {"top_k": {"1": top1, "5": 94.0, "20": 98.0, "100": 99.5}}}  # noqa: E731
    report = {
        "command": "python -m training.train_dpr_nq",
        "baselines": [
            {"name": "bm25", "datasets": scores(63.8)},
            {"name": "minilm-zero-shot", "datasets": scores(79.8)},
        ],
        "runs": [{"name": "nqall", "datasets": scores(82.1)}],
    }
    _write(tmp_path / "dpr_nq.json", report)
    accuracy = {"1": 83.0, "5": 96.0, "20": 99.0, "100": 99.8}
    _write(
        tmp_path / "hybrid.json",
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

    assert (
        dpr_main(
            [
                "--model",
                str(model),
                "--run",
                str(run),
                "--report",
                str(tmp_path / "dpr_nq.json"),
                "--hybrid",
                str(tmp_path / "hybrid.json"),
            ]
        )
        == 0
    )
    card = (model / "README.md").read_text()
    assert "| bm25 | 63.8 |" in card and "| minilm-zero-shot | 79.8 |" in card and "| **dpr** | 82.1 |" in card
    assert "| BM25 + dpr, hybrid (pipeline default λ=10) | 83.0 | 96.0 | 99.0 | 99.8 |" in card
    assert "7,167 questions" in card and "30 per question" in card and "BM25 hard negatives" in card
    assert "MRR 0.902, top-1 83.7 at step 223" in card and "peak memory 9.5 GB" in card


def _soup_card_args(model: Path, run: Path, reports: Path, *extra: str) -> list[str]:
    """dpr_components.encoder_training.model_card arguments for ``run``, with ``dpr_nq.json`` and ``none.json`` of ``reports``."""
    report, hybrid = str(reports / "dpr_nq.json"), str(reports / "none.json")
    return ["--model", str(model), "--run", str(run), "--report", report, "--hybrid", hybrid, *extra]


def test_dpr_card_of_a_question_side_soup_names_minilm_and_the_committed_copy(tmp_path: Path) -> None:
    from dpr_components.encoder_training.model_card import main as dpr_main

    root, model = tmp_path / "runs" / "dpr-nq", tmp_path / "models" / "multi"
    config = {**DPR_RUN_CONFIG, "train_passage_encoder": False}
    variant = {
        "batch_size": 32,
        "negatives": 4,
        "epochs": 1,
        "squad_questions": 14000,
        "multi": True,
        "question_side": True,
        "dense_negatives": True,
    }
    for name, seed in (("qa", 12345), ("qb", 2)):
        _write(root / name / "config.json", {"config": config})
        _write(root / name / "variant.json", {**variant, "seed": seed})
        _write(
            root / name / "result.json",
            {"examples": 21167, "steps": 661, "examples_per_second": 51.0, "peak_rss_mb": 2300.0},
        )
    _write(
        root / "data" / "nq-train-bm25-dense.jsonl.meta.json", {"mining": {"num_negatives": 30}, "skip_dense_top": 3}
    )
    _write(root / "soup2" / "eval.json", {"name": "soup2", "soup": ["qa", "qb"]})
    _write(model / "question_encoder" / "model.safetensors", "x" * 1000)
    scores = lambda top1: {"nq/dev.jsonl": {"top_k": {"1": top1, "5": 94.0, "20": 98.0, "100": 99.5}}}  # noqa: E731
    report = {
        "command": "python -m training.train_dpr_nq --stage report",
        "baselines": [],
        "runs": [{"name": "qa", "datasets": scores(81.5)}],
        "soups": [{"name": "soup2", "datasets": scores(82.0)}],
    }
    _write(tmp_path / "dpr_nq.json", report)
    _write(tmp_path / "shipped.json", {"datasets": scores(81.8)})
    shipped = ["--shipped-eval", str(tmp_path / "shipped.json")]
    assert dpr_main(_soup_card_args(model, root / "soup2", tmp_path, *shipped, "--passed-over", "qa")) == 0
    card = (model / "README.md").read_text()
    assert "| `qa` (compared on dev, not picked) | 81.5 |" in card
    with pytest.raises(SystemExit, match="--passed-over nope"):
        dpr_main(_soup_card_args(model, root / "soup2", tmp_path, "--passed-over", "nope"))
    assert "bundled:all-MiniLM-L6-v2" in card and "--question-side --dense-negatives --with-squad 14000 --multi" in card
    assert "--seed 2" in card and "--soup qa,qb" in card and "question-only" in card
    assert "| multi (soup, float32) | 82.0 |" in card and "| **multi** (float16, as committed) | 81.8 |" in card
    assert "7,167 questions of `nq/train.jsonl` and 14,000" in card and "first 3 left out" in card
