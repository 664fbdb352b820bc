"""The NQ recipe's command line: run names, plans and refused combinations (no training)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from training.retriever import train_dpr_nq
from training.retriever.train_dpr_nq import NQ_QUESTIONS, Variant, main


def test_dry_run_names_the_multi_run_and_its_questions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dry-run", "--with-squad", "2500", "--multi", "--no-exclude-selection"]) == 0
    plan = capsys.readouterr().out
    assert plan.startswith("multi-nqall-squad2500-bs32-hn1-") and "-xsel:" not in plan
    assert f": {NQ_QUESTIONS + 2500} questions" in plan
    # by default the selection split's questions are left out of training, and the run says so in its name
    assert main(["--dry-run", "--with-squad", "2500", "--multi"]) == 0
    plan = capsys.readouterr().out
    assert plan.startswith("multi-nqall-squad2500-bs32-hn1-") and "-xsel:" in plan
    questions = int(plan.split(": ", 1)[1].split(" questions", 1)[0])
    assert 2500 + NQ_QUESTIONS - 1200 < questions < 2500 + NQ_QUESTIONS


def test_dry_run_of_the_continuation_counts_replayed_nq_questions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dry-run", "--with-squad", "2500"]) == 0
    assert capsys.readouterr().out.startswith("squad2500-nq2500-from-nqall-")


@pytest.mark.parametrize("argv", [["--multi"], ["--multi", "--with-squad", "100", "--subset", "1000"]])
def test_multi_needs_squad_questions_and_no_subset(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--dry-run", *argv])
    assert exit_info.value.code == 2
    assert "--multi needs --with-squad N and no --subset" in capsys.readouterr().err


@pytest.mark.parametrize(("multi", "replayed"), [(True, []), (False, [3000])])
def test_mining_replays_nq_only_for_the_continuation(
    multi: bool, replayed: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The multi setting trains on all of nq/train, so it may ask for more SQuAD questions than NQ has."""
    mined: list[str] = []
    replays: list[int] = []

    def fake_mine(source: str, out: Path, **_: Any) -> None:
        mined.append(Path(out).name)

    monkeypatch.setattr(train_dpr_nq, "mine", fake_mine)
    monkeypatch.setattr(train_dpr_nq, "write_nq_replay", replays.append)
    train_dpr_nq.stage_mine([Variant(squad_questions=3000, multi=multi)])
    assert "squad-train-3000-bm25.jsonl" in mined
    assert replays == replayed
    assert not any("dense" in name for name in mined)
    train_dpr_nq.stage_mine([Variant(squad_questions=3000, multi=True, dense_negatives=True)])
    assert {"nq-train-bm25-dense.jsonl", "squad-train-3000-bm25-dense.jsonl"} <= set(mined)


def _finished_run(root: Path, name: str, encoder: Path, **variant: Any) -> None:
    import dataclasses
    import json
    import shutil

    folder = root / name
    for role in ("question_encoder", "passage_encoder"):
        shutil.copytree(encoder, folder / "final" / role)
    (folder / "variant.json").write_text(json.dumps(dataclasses.asdict(Variant(**variant))))
    (folder / "result.json").write_text(json.dumps({"final_dir": str(folder / "final"), "model_dir": "unused"}))


def test_soup_averages_the_evaluated_models_of_finished_runs(
    tiny_bert_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.setattr(train_dpr_nq, "ROOT", tmp_path)
    evaluated: list[str] = []

    def fake_evaluate(system: str, question_files: Any, passage_model: str | None = None) -> dict[str, Any]:
        evaluated.append(system)
        assert passage_model is None  # runs that trained their passage encoder
        return {"system": system, "datasets": {"nq/dev.jsonl": {"top_k": {"1": 80.0}}}}

    monkeypatch.setattr(train_dpr_nq.pool_eval, "evaluate", fake_evaluate)
    _finished_run(tmp_path, "multi-a", tiny_bert_dir, squad_questions=7000, multi=True)
    _finished_run(tmp_path, "multi-b", tiny_bert_dir, squad_questions=14000, multi=True)

    out = train_dpr_nq.stage_soup(["multi-a", "multi-b"])

    assert out == train_dpr_nq.soup_dir(["multi-b", "multi-a"]) and out.name.startswith("soup2-")
    assert (out / "final" / "passage_encoder" / "model.safetensors").is_file()
    record = json.loads((out / "eval.json").read_text())
    assert record["soup"] == ["multi-a", "multi-b"] and evaluated == [str(out / "final")]
    train_dpr_nq.stage_soup(["multi-a", "multi-b"])  # finished: nothing is evaluated again
    assert len(evaluated) == 1


def test_soup_of_an_unfinished_run_is_refused(
    tiny_bert_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(train_dpr_nq, "ROOT", tmp_path)
    _finished_run(tmp_path, "multi-a", tiny_bert_dir, squad_questions=7000, multi=True)
    assert main(["--soup", "multi-a,still-training"]) == 2
    assert "still-training: not a finished run" in capsys.readouterr().err
    assert main(["--soup", "multi-a,multi-a"]) == 2
    assert "two or more different runs" in capsys.readouterr().err


def test_question_side_runs_are_named_and_planned(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dry-run", "--question-side", "--with-squad", "2500", "--multi"]) == 0
    assert capsys.readouterr().out.startswith("qside-multi-nqall-squad2500-bs32-hn1-")
    assert main(["--dry-run", "--question-side", "--dense-negatives", "--with-squad", "2500", "--multi"]) == 0
    assert capsys.readouterr().out.startswith("qside-multi-nqall-squad2500-bs32-hn1dense-")
    config = Variant(question_side=True).config()
    assert config.train_passage_encoder is False and Variant().config().train_passage_encoder is True


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--question-side", "--with-squad", "100"], "--question-side starts from MiniLM"),
        (["--question-side", "--grad-cache-chunk", "8"], "--grad-cache-chunk is not needed"),
        (["--dense-negatives", "--with-squad", "100"], "--dense-negatives: use it alone"),
    ],
)
def test_question_side_refuses_what_it_cannot_do(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["--dry-run", *argv])
    assert message in capsys.readouterr().err


def test_soup_of_question_side_runs_reuses_minilm_pool_vectors(
    tiny_bert_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(train_dpr_nq, "ROOT", tmp_path)
    passage_models: list[str | None] = []

    def fake_evaluate(system: str, question_files: Any, passage_model: str | None = None) -> dict[str, Any]:
        passage_models.append(passage_model)
        return {"system": system, "datasets": {}}

    monkeypatch.setattr(train_dpr_nq.pool_eval, "evaluate", fake_evaluate)
    for name in ("qside-a", "qside-b"):
        _finished_run(tmp_path, name, tiny_bert_dir, squad_questions=7000, multi=True, question_side=True)
    train_dpr_nq.stage_soup(["qside-a", "qside-b"])
    assert passage_models == [train_dpr_nq.BUNDLED_MINILM]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_train_set_refuses_non_finite_values(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    from training.retriever.train import main as train_main

    assert train_main(["--data", "unused.jsonl", "--out", "unused", "--set", f"learning_rate={value}"]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "--set learning_rate" in error and "not a finite number" in error


def test_train_set_parses_json_and_keeps_plain_text() -> None:
    from training.retriever.train import parse_settings

    assert parse_settings(None, ["batch_size=32", "similarity=cosine", "bf16=false"]) == {
        "batch_size": 32,
        "similarity": "cosine",
        "bf16": False,
    }


def _mined_line(source: str, i: int) -> str:
    import json

    def passage(title: str, text: str) -> dict[str, str]:
        return {"title": title, "text": text, "passage_id": f"{title}-{i}"}

    return json.dumps(
        {
            "question": f"{source} question number {i} about topic {i * 7 % 13}?",
            "answers": [f"answer {i}"],
            "positive_ctxs": [passage(f"{source} gold {i}", f"a passage that holds answer {i} and words " * 3)],
            "hard_negative_ctxs": [passage(f"{source} bm25 {i}", f"a passage about topic {i} without it " * 2)],
        }
    )


def test_two_encoder_multi_run_with_dense_negatives_trains_both_encoders_on_a_tiny_model(
    tiny_encoder_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recipe of the two-encoder candidate (`--dense-negatives --with-squad N --multi`) end to end on
    a tiny model: the selection split left out, both encoders trained, fp32 on a CPU without native bf16."""
    import json

    from dpr_components.encoders.bf16_probe import bf16_supported

    data = tmp_path / "data"
    data.mkdir()
    (data / "nq-train-bm25-dense.jsonl").write_text("".join(_mined_line("nq", i) + "\n" for i in range(60)))
    (data / "squad-train-40-bm25-dense.jsonl").write_text("".join(_mined_line("squad", i) + "\n" for i in range(40)))
    corpus = tmp_path / "pool.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": f"d{i}", "title": f"T{i}", "text": f"pool text {i} " * 9}) + "\n" for i in range(30))
    )
    monkeypatch.setattr(train_dpr_nq, "ROOT", tmp_path / "runs")
    monkeypatch.setattr(train_dpr_nq, "DATA", data)
    monkeypatch.setattr(train_dpr_nq, "BUNDLED_MINILM", str(tiny_encoder_dir))
    monkeypatch.setattr(train_dpr_nq.pool_eval, "POOL", str(corpus))
    monkeypatch.setattr(train_dpr_nq, "bf16_supported", lambda: False)

    argv = ["--dense-negatives", "--with-squad", "40", "--multi", "--negatives", "1", "--batch-size", "16"]
    assert main([*argv, "--stage", "train", "--threads", "1"]) == 0
    assert "no native bf16" in capsys.readouterr().err or bf16_supported()

    run = tmp_path / "runs" / "multi-nqall-squad40-bs16-hn1dense-cosine-e1-lr2e-05-xsel"
    variant = json.loads((run / "variant.json").read_text())
    assert variant["multi"] and variant["dense_negatives"] and not variant["question_side"] and not variant["bf16"]
    result = json.loads((run / "result.json").read_text())
    final = Path(result["final_dir"])
    assert (final / "question_encoder" / "model.safetensors").is_file()
    assert (final / "passage_encoder" / "model.safetensors").is_file()
    trained = [json.loads(line)["question"] for line in (data / "nq-train-bm25-dense-nosel.jsonl").open()]
    held = [json.loads(line)["question"] for line in (data / "nq-train-bm25-dense-sel.jsonl").open()]
    assert held and len(trained) + len(held) == 60 and not set(trained) & set(held)
    assert main([*argv, "--stage", "train", "--threads", "1"]) == 0  # finished: not trained again
    assert "already trained" in capsys.readouterr().err
