"""The DPRTrainer component: serialisation, and pipelines/train_dpr.yml run through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpr_components.cli.main import main as cli
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.text_encoder import TextEncoder
from haystack_integrations.components.trainers.dpr.dpr_trainer import DPRTrainer
from tests.helpers.paths import PIPELINES

PIPELINE = PIPELINES / "train_dpr.yml"


def test_to_dict_round_trip() -> None:
    trainer = DPRTrainer(output_dir="runs/x", epochs=2, settings={"grad_cache_chunk": 8, "loss": "triplet"})
    data = trainer.to_dict()
    assert data["type"] == "haystack_integrations.components.trainers.dpr.dpr_trainer.DPRTrainer"
    again = DPRTrainer.from_dict(data)
    assert again.config == trainer.config and again.config.grad_cache_chunk == 8


def test_bad_settings_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="unknown training settings"):
        DPRTrainer(settings={"batchsize": 3})
    with pytest.raises(ValueError, match="parameters of their own"):
        DPRTrainer(settings={"epochs": 3})
    with pytest.raises(ValueError, match="similarity"):
        DPRTrainer(similarity="manhattan")
    with pytest.raises(ValueError, match="exactly one"):
        DPRTrainer().run()


def test_pipeline_trains_through_the_cli(tiny_bert_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = tmp_path / "train.jsonl"
    records = [
        {
            "id": str(i),
            "question": f"question {i}",
            "answers": [f"a{i}"],
            "positive_ctxs": [{"title": f"T{i}", "text": f"passage {i} a{i}"}],
            "hard_negative_ctxs": [{"title": "H", "text": f"hard {i}"}],
        }
        for i in range(8)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    code = cli(
        [
            "run",
            str(PIPELINE),
            "--input",
            f"data={data}",
            "--json",
            "--set",
            f"trainer.model={tiny_bert_dir}",
            "--set",
            f"trainer.output_dir={tmp_path / 'run'}",
            "--set",
            "trainer.epochs=1",
            "--set",
            "trainer.batch_size=4",
            "--set",
            "trainer.progress_bar=false",
            "--set",
            "trainer.settings.max_length=32",
            "--set",
            "trainer.settings.threads=1",
        ]
    )
    assert code == 0
    output = json.loads(capsys.readouterr().out)["trainer"]
    assert output["checkpoint"] == str(tmp_path / "run" / "final") and output["metrics"]["steps"] == 2
    encoder = TextEncoder(EncoderSettings(model=output["question_model"], precision="fp32"))
    assert encoder.encode_questions(["a question"]).shape == (1, 32)
