"""Checkpoints: resuming training never runs code stored in a checkpoint file. A replaced
``optimizer.pt``, an old-format generator file, a reader ``state.pt`` that would create a file
when unpickled, a damaged checkpoint, or one holding NaN weights is refused with one line saying
what to do."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.helpers.reader_training import train_reader
from tests.reliability.harness import assert_clear_error
from tests.reliability.training_checks import (
    as_command,
    train_args,
    train_command,
    write_malicious_pickle,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def _copy_run(finished_dpr_run: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    run, data = finished_dpr_run
    return Path(shutil.copytree(run, tmp_path / "run")), data


def _latest_checkpoint(run: Path) -> Path:
    return sorted((run / "checkpoints").iterdir())[-1]


@pytest.mark.reliability(category="checkpoints", expect="clear error")
def test_malicious_optimizer_file(finished_dpr_run: tuple[Path, Path], tmp_path: Path, tiny_bert_dir: Path) -> None:
    """A DPR checkpoint's optimizer.pt is replaced by a pickle that creates a file when loaded"""
    run, data = _copy_run(finished_dpr_run, tmp_path)
    marker = tmp_path / "code-ran"
    write_malicious_pickle(_latest_checkpoint(run) / "optimizer.pt", marker)
    result = train_command(train_args(data, run, tiny_bert_dir))
    assert_clear_error(result, "optimizer.pt", "run code", "Delete")
    assert not marker.exists(), "loading the checkpoint ran code from it"


@pytest.mark.reliability(category="checkpoints", expect="clear error")
def test_old_format_generator_states(finished_dpr_run: tuple[Path, Path], tmp_path: Path, tiny_bert_dir: Path) -> None:
    """Resuming from a checkpoint of an older version, whose rng.pt holds pickled generator states"""
    run, data = _copy_run(finished_dpr_run, tmp_path)
    checkpoint = _latest_checkpoint(run)
    (checkpoint / "rng.json").unlink()
    old_states = [{"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}]
    torch.save(old_states, checkpoint / "rng.pt")
    result = train_command(train_args(data, run, tiny_bert_dir))
    assert_clear_error(result, str(checkpoint), "older format", "final")


@pytest.mark.reliability(category="checkpoints", expect="clear error")
def test_truncated_model_checkpoint(finished_dpr_run: tuple[Path, Path], tmp_path: Path, tiny_bert_dir: Path) -> None:
    """A DPR checkpoint's model.pt is cut in half (a disk filled up)"""
    run, data = _copy_run(finished_dpr_run, tmp_path)
    weights = _latest_checkpoint(run) / "model.pt"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    result = train_command(train_args(data, run, tiny_bert_dir))
    assert_clear_error(result, "model.pt", "damaged")


@pytest.mark.reliability(category="checkpoints", expect="clear error")
def test_malformed_generator_states(finished_dpr_run: tuple[Path, Path], tmp_path: Path, tiny_bert_dir: Path) -> None:
    """A DPR checkpoint's rng.json is valid JSON of the wrong shape"""
    run, data = _copy_run(finished_dpr_run, tmp_path)
    (_latest_checkpoint(run) / "rng.json").write_text('[{"python": 1}]')
    result = train_command(train_args(data, run, tiny_bert_dir))
    assert_clear_error(result, "cannot resume from checkpoint", "generator states")


@pytest.mark.reliability(category="checkpoints", expect="clear error")
def test_malicious_reader_state(tmp_path: Path, tiny_encoder_dir: Path) -> None:
    """A reader training checkpoint's state.pt is replaced by a pickle that creates a file when loaded"""
    with pytest.raises(KeyboardInterrupt):  # stopped at step 1: a checkpoint is saved
        train_reader(tmp_path / "run", tiny_encoder_dir, after_step=_interrupt)
    marker = tmp_path / "code-ran"
    write_malicious_pickle(tmp_path / "run" / "checkpoint" / "state.pt", marker)
    result = as_command(lambda: train_reader(tmp_path / "run", tiny_encoder_dir))
    assert_clear_error(result, "state.pt", "run code", "Delete")
    assert not marker.exists(), "loading the checkpoint ran code from it"


def _interrupt(step: int) -> None:
    raise KeyboardInterrupt


def _poison(tensors: dict) -> str:
    """Fill the word embeddings of a checkpoint's model state with NaN; returns the tensor's name."""
    name = next(n for n in sorted(tensors) if n.endswith("word_embeddings.weight"))
    tensors[name] = torch.full_like(tensors[name], float("nan"))
    return name


@pytest.mark.reliability(category="checkpoints", expect="clear error")
def test_nan_weights_in_model_checkpoint(
    finished_dpr_run: tuple[Path, Path], tmp_path: Path, tiny_bert_dir: Path
) -> None:
    """Resuming DPR training from a checkpoint whose model.pt holds NaN weights (saved by a run that diverged)"""
    run, data = _copy_run(finished_dpr_run, tmp_path)
    (run / "result.json").unlink()
    weights_file = _latest_checkpoint(run) / "model.pt"
    weights = torch.load(weights_file, weights_only=True)
    tensor = _poison(weights)
    torch.save(weights, weights_file)
    final_before = {p: p.read_bytes() for p in (run / "final").rglob("*.safetensors")}
    result = train_command(train_args(data, run, tiny_bert_dir))
    assert_clear_error(result, str(weights_file), tensor, "NaN", "Delete")
    assert {p: p.read_bytes() for p in (run / "final").rglob("*.safetensors")} == final_before, "the export changed"


@pytest.mark.reliability(category="checkpoints", expect="clear error")
def test_nan_weights_in_reader_checkpoint(tmp_path: Path, tiny_encoder_dir: Path) -> None:
    """Resuming reader training from a checkpoint whose state.pt holds NaN weights"""
    with pytest.raises(KeyboardInterrupt):  # stopped at step 1: a checkpoint is saved
        train_reader(tmp_path / "run", tiny_encoder_dir, after_step=_interrupt)
    state_file = tmp_path / "run" / "checkpoint" / "state.pt"
    state = torch.load(state_file, weights_only=True)
    tensor = _poison(state["model"])
    torch.save(state, state_file)
    result = as_command(lambda: train_reader(tmp_path / "run", tiny_encoder_dir))
    assert_clear_error(result, str(state_file), tensor, "NaN", "Delete")
    assert not (tmp_path / "run" / "export").exists()
