"""Training settings: a setting of the wrong type or out of range, in the training pipeline's
YAML (``--set``), in ``python -m training.retriever.train`` flags or in a reader training configuration,
is refused before any data or model is loaded, with an error naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.corpora import write_training_data
from tests.reliability.harness import PIPELINES, assert_clear_error, cases, cli
from tests.reliability.training_checks import (
    as_command,
    train_command,
)

# --set of pipelines/train_dpr.yml -> the setting the error must name
PIPELINE_SETTINGS = {
    "learning rate as text": ('trainer.learning_rate="fast"', "learning_rate"),
    "fractional batch size": ("trainer.batch_size=3.5", "batch_size"),
    "negative epochs": ("trainer.epochs=-1", "epochs"),
    "unknown setting": ('trainer.settings={"warmup_ratoi": 0.1}', "warmup_ratoi"),
    "boolean as text": ('trainer.settings={"bf16": "yes"}', "bf16"),
    "settings not a mapping": ("trainer.settings=[1, 2]", "settings"),
}
# python -m training.retriever.train --set NAME=VALUE -> the setting the error must name
FLAG_SETTINGS = {
    "NaN learning rate": ("learning_rate=NaN", "learning_rate"),
    "max_length as text": ("max_length=long", "max_length"),
    "zero gradient clipping": ("max_grad_norm=0", "max_grad_norm"),
    "batch size true": ("batch_size=true", "batch_size"),
}
READER_SETTINGS = {
    "learning rate as text": ({"learning_rate": "fast"}, "learning_rate"),
    "fractional batch size": ({"batch_size": 2.5}, "batch_size"),
    "infinite weight decay": ({"weight_decay": float("inf")}, "weight_decay"),
}


@cases("assignment, setting", PIPELINE_SETTINGS)
@pytest.mark.reliability(category="training settings", expect="clear error")
def test_wrong_setting_in_training_pipeline(tmp_path: Path, tiny_bert_dir: Path, assignment: str, setting: str) -> None:
    """Training with pipelines/train_dpr.yml and a setting of the wrong type or range"""
    data = write_training_data(tmp_path / "train.jsonl")
    result = cli(
        "run",
        PIPELINES / "train_dpr.yml",
        "--input",
        f"data={data}",
        "--set",
        f"trainer.model={tiny_bert_dir}",
        "--set",
        f"trainer.output_dir={tmp_path / 'run'}",
        "--set",
        assignment,
    )
    assert_clear_error(result, setting)
    assert not (tmp_path / "run").exists(), "training started"


@cases("assignment, setting", FLAG_SETTINGS)
@pytest.mark.reliability(category="training settings", expect="clear error")
def test_wrong_setting_flag(tmp_path: Path, tiny_bert_dir: Path, assignment: str, setting: str) -> None:
    """Training with python -m training.retriever.train --set NAME=VALUE of the wrong type or range"""
    data = write_training_data(tmp_path / "train.jsonl")
    result = train_command(
        ["--data", str(data), "--out", str(tmp_path / "run"), "--set", f"model={tiny_bert_dir}", "--set", assignment]
    )
    assert_clear_error(result, setting)
    assert not (tmp_path / "run").exists(), "training started"


@cases("change, setting", READER_SETTINGS)
@pytest.mark.reliability(category="training settings", expect="clear error")
def test_wrong_reader_setting(tmp_path: Path, change: dict, setting: str) -> None:
    """Configuring reader training (ReaderTrainingSettings) with a setting of the wrong type"""
    from dpr_components.reader_training.train import ReaderTrainingSettings

    result = as_command(lambda: ReaderTrainingSettings(output_dir=str(tmp_path / "run"), **change))
    assert_clear_error(result, "reader training setting", setting)
