"""The reader's model card is written from its run folder, training record and benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.model_card import main

# The settings a DPR run folder's config.json records, as the cards read them.
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


@pytest.fixture()
def reader_run(tmp_path: Path) -> tuple[Path, Path, Path]:
    model, run, benchmark = tmp_path / "models" / "reader", tmp_path / "runs" / "reader", tmp_path / "reader.json"
    training = {
        "passages_per_question": 2,
        "batch_size": 8,
        "max_steps": 1800,
        "learning_rate": 1e-4,
        "warmup_ratio": 0.1,
        "weight_decay": 0.01,
        "max_length": 192,
        "bf16": True,
        "seed": 0,
        "dev_limit": 300,
        "dev_passages": 8,
    }
    _write(model / "reader_info.json", {"training": training, "step": 1800, "dev_em": 52.33, "dev_f1": 63.1})
    _write(model / "model.safetensors", "x" * 1000)
    _write(run / "command.txt", "python -m training.train_reader --sample 16000 --passages 2\n")
    _write(run / "data.json", {"squad/train-v1.1.json": 16000, "nq/train.jsonl": 7142})
    log = [
        {"step": s, "passages_per_s": 9.0, "questions_per_s": 4.5, "steps_per_s": 0.5, "peak_rss_mb": 3072.0}
        for s in (10, 20, 30)
    ]
    _write(run / "log.jsonl", "\n".join(json.dumps(e) for e in log) + "\n")
    _write(
        benchmark,
        {
            "command": "python -m benchmarks.reader.reader_benchmark",
            "squad_gold": {"n": 3470, "exact_match": 61.23, "f1": 70.94},
            "end_to_end": [
                {
                    "dataset": "nq/dev.jsonl",
                    "n": 655,
                    "exact_match": {
                        "passage": {"BM25": {"1": 19.0, "10": 21.5}, "hybrid": {"1": 23.0, "10": 27.1}},
                        "combined × rank^-1": {"BM25": {"1": 20.0, "10": 25.5}, "hybrid": {"1": 24.0, "10": 30.1}},
                    },
                },
                {
                    "dataset": "squad/dev.jsonl",
                    "n": 500,
                    "exact_match": {
                        "combined × rank^-1": {"BM25": {"1": 40.0, "10": 45.5}, "hybrid": {"1": 44.0, "10": 50.1}}
                    },
                },
            ],
            "latency": {"stages": {"pipeline": {"p50_ms": 420.0, "p95_ms": 610.0}}, "qa_ranking": "combined × rank^-1"},
        },
    )
    return model, run, benchmark


def test_card_reports_the_run_and_the_benchmark(reader_run: tuple[Path, Path, Path]) -> None:
    model, run, benchmark = reader_run
    assert main(["--model", str(model), "--run", str(run), "--benchmark", str(benchmark)]) == 0
    card = (model / "README.md").read_text()
    assert "python -m training.train_reader --sample 16000 --passages 2" in card
    assert "16,000 questions drawn at random" in card and "7,142 questions" in card
    assert "exact match 61.2, F1 70.9" in card
    assert "| hybrid | 24.0 | 30.1 |" in card and "| hybrid | 23.0 | 27.1 |" not in card  # qa_fast.yml's ranking only
    assert "squad/dev.jsonl end to end" in card and "| hybrid | 44.0 | 50.1 |" in card
    assert "p50 420 ms, p95 610 ms" in card
    assert "EM 52.3 at step 1800" in card
    assert "median 9.0 passages/s" in card and "peak memory 3.0 GB" in card


def test_card_of_a_last_step_export_says_so(reader_run: tuple[Path, Path, Path]) -> None:
    model, run, benchmark = reader_run
    info = json.loads((model / "reader_info.json").read_text())
    _write(model / "reader_info.json", {**info, "step": 30, "dev_em": 50.0, "exported": "last"})
    with (run / "log.jsonl").open("a") as log:
        log.write(json.dumps({"step": 20, "dev_em": 51.0}) + "\n" + json.dumps({"step": 30, "dev_em": 50.0}) + "\n")
    assert main(["--model", str(model), "--run", str(run), "--benchmark", str(benchmark)]) == 0
    card = (model / "README.md").read_text()
    assert "Exported at the last step, 30 (`--export last`" in card and "EM 50.0 on 300 squad/dev questions" in card
    assert "the best step on them was 20 (EM 51.0)" in card


def test_missing_benchmark_is_a_clear_error(reader_run: tuple[Path, Path, Path]) -> None:
    model, run, benchmark = reader_run
    benchmark.unlink()
    with pytest.raises(SystemExit, match=r"reader.json is missing"):
        main(["--model", str(model), "--run", str(run), "--benchmark", str(benchmark)])


def test_dpr_card_reports_training_and_full_pool_results(tmp_path: Path) -> None:
    from training.dpr_model_card import main as dpr_main

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
    """training.dpr_model_card arguments for ``run``, with ``dpr_nq.json`` and ``none.json`` of ``reports``."""
    report, hybrid = str(reports / "dpr_nq.json"), str(reports / "none.json")
    return ["--model", str(model), "--run", str(run), "--report", report, "--hybrid", hybrid, *extra]


def test_dpr_card_of_a_question_side_soup_names_minilm_and_the_committed_copy(tmp_path: Path) -> None:
    from training.dpr_model_card import main as dpr_main

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


def test_card_of_a_continued_reader_lists_both_stages(reader_run: tuple[Path, Path, Path]) -> None:
    model, run, benchmark = reader_run
    info = json.loads((model / "reader_info.json").read_text())
    stage_one = {
        **info,
        "step": 4000,
        "command": "python -m training.train_reader --sample 32000 --lr 1e-4",
        "data": {"squad/train-v1.1.json": 31999, "nq/train.jsonl": 7142},
        "cost": {"passages_per_s": 9.5, "questions_per_s": 4.7, "hours": 3.3, "peak_gb": 3.7},
    }
    continued = {
        **info,
        "training": {**info["training"], "init_model": "models/reader", "seed": 2},
        "continues": stage_one,
    }
    _write(model / "reader_info.json", continued)
    _write(run / "data.json", {"squad/train-v1.1.json": 87599, "nq/train.jsonl": 7142})
    _write(run / "command.txt", "python -m training.train_reader --init-model models/reader --lr 5e-5\n")
    assert main(["--model", str(model), "--run", str(run), "--benchmark", str(benchmark)]) == 0
    card = (model / "README.md").read_text()
    first, second = card.index("Stage 1, from"), card.index("Stage 2, going on from the reader of stage 1")
    assert first < card.index("--sample 32000 --lr 1e-4") < second < card.index("--init-model models/reader --lr 5e-5")
    assert (
        "31,999 questions drawn at random (seed 0)" in card
        and "87,599 questions of SQuAD v1.1 train (all of it)" in card
    )
    assert "4000 steps kept" in card and "median 9.5 passages/s" in card  # stage 1's own record
    assert "median 9.0 passages/s" in card  # this run's log
