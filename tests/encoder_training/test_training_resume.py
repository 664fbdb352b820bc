"""A training run killed mid-epoch (SIGKILL) and resumed ends exactly where an uninterrupted run
ends: same weights, same losses, a clean log."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.encoder_training.settings import EncoderTrainingSettings
from dpr_components.encoder_training.train import train
from dpr_components.runs.run_log import read_log
from tests.helpers.corpora import write_training_data
from tests.helpers.encoder_training import tiny_run

KILLED_RUN = """
import os, signal, sys
from dpr_components.encoder_training.settings import EncoderTrainingSettings
from dpr_components.dpr_data.loading import load_training_examples
from dpr_components.encoder_training.train import train

config = EncoderTrainingSettings.from_dict(__import__("json").loads(sys.argv[1]))
examples = load_training_examples(sys.argv[2]).examples
def kill_at_five(state):
    if state.step == 5:
        os.kill(os.getpid(), signal.SIGKILL)
train(config, examples, sys.argv[3], dev_examples=examples[:4], show_progress=False, on_step=kill_at_five)
"""


@pytest.mark.timeout(120)
@pytest.mark.integration
def test_kill_and_resume_matches_uninterrupted(tiny_bert_dir: Path, tmp_path: Path) -> None:
    data = write_training_data(tmp_path / "train.jsonl")
    examples = load_training_examples(data).examples
    # 12 examples, batch 4: 3 steps per epoch, 6 in all; checkpoints at 2, 3 (epoch end), 4 and 6.
    config = tiny_run(tiny_bert_dir, epochs=2, dropout=0.1, checkpoint_every=2, log_every=1, val_questions=4)
    whole = train(config, examples, tmp_path / "whole", dev_examples=examples[:4], show_progress=False)

    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, json.dumps(config.to_dict()), str(data), str(tmp_path / "resumed")],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (tmp_path / "resumed" / "final").exists()
    resumed = train(config, examples, tmp_path / "resumed", dev_examples=examples[:4], show_progress=False)

    assert resumed.steps == whole.steps == 6
    final = "checkpoints/step-00000006/model.pt"
    a, b = torch.load(tmp_path / "whole" / final), torch.load(tmp_path / "resumed" / final)
    for name in a:
        assert torch.equal(a[name], b[name]), name
    log_whole, log_resumed = read_log(tmp_path / "whole" / "log.jsonl"), read_log(tmp_path / "resumed" / "log.jsonl")
    assert [e["step"] for e in log_resumed] == [e["step"] for e in log_whole]
    assert [e.get("loss") for e in log_resumed] == [e.get("loss") for e in log_whole]
    assert resumed.best_step == whole.best_step and resumed.last_validation == whole.last_validation

    # Finished runs return their stored result; a changed setting is refused.
    assert train(config, examples, tmp_path / "whole", show_progress=False).steps == 6
    changed = EncoderTrainingSettings(**{**config.to_dict(), "learning_rate": 5e-4})
    with pytest.raises(ValueError, match="learning_rate"):
        train(changed, examples, tmp_path / "whole", show_progress=False)


def test_early_stopping_keeps_the_best(tiny_bert_dir: Path, tmp_path: Path) -> None:
    examples = load_training_examples(write_training_data(tmp_path / "train.jsonl")).examples
    # A learning rate this small leaves the metric unchanged: no validation after the one before
    # training (step 0) improves on it, so the untouched start is the best model.
    config = tiny_run(
        tiny_bert_dir,
        epochs=3,
        learning_rate=1e-12,
        validate_every=1,
        patience=2,
        val_questions=4,
        selection_metric="avg_rank",
    )
    result = train(config, examples, tmp_path / "run", dev_examples=examples[:4], show_progress=False)
    assert result.stopped_early and result.steps == 2 and result.total_steps == 9
    assert result.best_step == 0 and result.model_dir == str(tmp_path / "run" / "best")
    training = json.loads((tmp_path / "run" / "best" / "training.json").read_text())
    assert training["step"] == 0 and training["metrics"]["avg_rank"] == result.best_metric
    assert train(config, examples, tmp_path / "run", dev_examples=examples[:4], show_progress=False).stopped_early
