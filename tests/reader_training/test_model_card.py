"""The model card of a trained reader, written from its run, its record and its benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpr_components.reader_training.model_card import main


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
