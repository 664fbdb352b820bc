"""Training faults: DPR and reader training killed with SIGKILL mid-epoch, while saving a
checkpoint and while exporting the model; running the same training again completes, and the
result is identical to an uninterrupted run. A loss that becomes NaN (or weights that overflow)
stops training with one line naming the step, keeping the last good checkpoint and exporting
nothing; run again with a budget of skipped steps, training completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from dpr_components.encoder_training.train import RESULT_FILE
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.readers.model import load_reader
from dpr_components.runs.run_log import read_log
from tests.helpers.corpora import write_training_data
from tests.helpers.models import one_torch_thread
from tests.helpers.reader_training import assert_same_state, reader_state, train_reader
from tests.reliability.harness import REPO, assert_clear_error, assert_success, cases
from tests.reliability.training_checks import (
    as_command,
    same_weights,
    train_args,
    train_command,
    train_process,
)

pytestmark = pytest.mark.usefixtures("one_thread")

# (fault point, what is interrupted); the 6-step run checkpoints at steps 2, 3, 4 and 6.
DPR_FAULTS = {
    "mid-epoch, between checkpoints": "training.step:5",
    "while saving a checkpoint": "training.checkpoint.files_written:3",
    "while exporting the final model": "training.export.files_written",
}
# The reader run: 6 steps, evaluation and checkpoint every 2 steps, then the fp16 export.
READER_FAULTS = {
    "mid-epoch, between checkpoints": "reader_training.step:3",
    "while saving a checkpoint": "reader_training.checkpoint.files_written:2",
    "while saving the best reader": "reader.save.files_written",
}
READER_RUN = """
import sys
from pathlib import Path
import torch
torch.set_num_threads(1)
from tests.helpers.reader_training import train_reader
train_reader(Path(sys.argv[1]), Path(sys.argv[2]))
"""


@cases("point", DPR_FAULTS)
@pytest.mark.reliability(category="training faults", expect="nothing lost")
@pytest.mark.integration
def test_dpr_training_killed(
    finished_dpr_run: tuple[Path, Path],
    tmp_path: Path,
    tiny_bert_dir: Path,
    point: str,
    record_property: pytest.RecordProperty,
) -> None:
    """DPR training (python -m training.retriever.train) is killed with SIGKILL, then the same command is run again"""
    reference, data = finished_dpr_run
    args = train_args(data, tmp_path / "run", tiny_bert_dir)
    killed = train_process(args, fault_point=point)
    assert killed.code == -signal.SIGKILL, (
        f"the fault point was not reached (exit {killed.code}):\n{killed.err[-2000:]}"
    )
    assert not (tmp_path / "run" / "result.json").exists()
    resumed = train_command(args)
    assert_success(resumed)
    assert same_weights(reference / "final", tmp_path / "run" / "final")
    assert (tmp_path / "run" / "final" / "question_encoder" / "encoder_pair.json").is_file()
    assert _leftovers(tmp_path / "run") == []
    steps = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir() if p.name.startswith("step-"))
    record_property("final model equals an uninterrupted run's", True)
    record_property("checkpoints after the re-run", ", ".join(steps))


@pytest.fixture(scope="session")
def reader_reference(tmp_path_factory: pytest.TempPathFactory, tiny_encoder_dir: Path) -> Path:
    """An uninterrupted 6-step reader run."""
    run = tmp_path_factory.mktemp("reader_reference") / "run"
    with one_torch_thread():
        train_reader(run, tiny_encoder_dir)
    return run


@cases("point", READER_FAULTS)
@pytest.mark.reliability(category="training faults", expect="nothing lost")
@pytest.mark.integration
def test_reader_training_killed(
    reader_reference: Path,
    tmp_path: Path,
    tiny_encoder_dir: Path,
    point: str,
    record_property: pytest.RecordProperty,
) -> None:
    """Reader training is killed with SIGKILL, then the same training is run again"""
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "DPR_FAULT_POINT": point}
    killed = subprocess.run(
        [sys.executable, "-c", READER_RUN, str(run), str(tiny_encoder_dir)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, f"the fault point was not reached:\n{killed.stderr[-2000:]}"
    assert not (run / "export").exists()
    with one_torch_thread():
        train_reader(run, tiny_encoder_dir)
    assert_same_state(reader_state(reader_reference), reader_state(run))
    assert same_weights(reader_reference / "export", run / "export")
    assert _leftovers(run) == []
    record_property("checkpoint and exported reader equal an uninterrupted run's", True)


def _leftovers(run: Path) -> list[str]:
    """Half-written folders of interrupted atomic writes."""
    return sorted(p.name for p in run.rglob("*") if p.name.endswith((".tmp", ".old")))


# ---- losses that become NaN ----------------------------------------------------------------------

# In the 6-step DPR run (batch 4, seed 12345) this question is in step 3 and step 4; in the 6-step
# reader run (batch 2, seed 0) question q0 is in step 3 and step 5.
POISONED_QUESTION = "what is fact number 10 about subject 0"
POISONED_READER_QUESTION = "q0"
# learning rate -> what the error says: a NaN loss at the next step, or an update beyond float32
DIVERGING_RATES = {"1e30": "the loss is nan", "1e39": "overflows float32"}


class _NanLoss(torch.nn.Module):
    """A loss whose value and gradients are NaN, as in a run that diverged."""

    def __init__(self, loss: torch.nn.Module) -> None:
        super().__init__()
        self.loss = loss

    def forward(self, *args: object) -> torch.Tensor:
        return self.loss(*args) * float("nan")


@pytest.fixture()
def nan_loss_on_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """DPR steps whose batch holds POISONED_QUESTION compute a NaN loss (and NaN gradients)."""
    from dpr_components.encoder_training import task

    original = task.backward_batch

    def backward(model, loss_fn, batch, *args, **kwargs):  # type: ignore[no-untyped-def]
        if POISONED_QUESTION in batch.questions:
            loss_fn = _NanLoss(loss_fn)
        return original(model, loss_fn, batch, *args, **kwargs)

    monkeypatch.setattr(task, "backward_batch", backward)


@pytest.fixture()
def nan_reader_loss_on_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reader steps whose batch holds question POISONED_READER_QUESTION get a NaN loss and gradients."""
    from dpr_components.reader_training import task

    build, backward = task.build_group, task.backward

    def build_group(question, *args, **kwargs):  # type: ignore[no-untyped-def]
        group = build(question, *args, **kwargs)
        if group is not None:
            group.poisoned = question.id == POISONED_READER_QUESTION
        return group

    def poisoned_backward(reader, tokenizer, optimizer, config, groups):  # type: ignore[no-untyped-def]
        parts = backward(reader, tokenizer, optimizer, config, groups)
        if any(group.poisoned for group in groups):
            for parameter in reader.parameters():
                if parameter.grad is not None:
                    parameter.grad.fill_(float("nan"))
            parts.update(loss=float("nan"), grad_norm=float("nan"))
        return parts

    monkeypatch.setattr(task, "build_group", build_group)
    monkeypatch.setattr(task, "backward", poisoned_backward)


def _checkpoints(run: Path) -> list[str]:
    return sorted(p.name for p in (run / "checkpoints").iterdir()) if (run / "checkpoints").is_dir() else []


def _finite(path: Path) -> bool:
    state = torch.load(path, weights_only=True)
    tensors = state.get("model", state)
    return all(torch.isfinite(t).all() for t in tensors.values() if t.is_floating_point())


@pytest.mark.reliability(category="training faults", expect="clear error")
def test_dpr_training_loss_becomes_nan(
    tmp_path: Path, tiny_bert_dir: Path, nan_loss_on_question: None, record_property: pytest.RecordProperty
) -> None:
    """DPR training (python -m training.retriever.train) computes a NaN loss at step 3"""
    data = write_training_data(tmp_path / "train.jsonl")
    run = tmp_path / "run"
    result = train_command(train_args(data, run, tiny_bert_dir))
    kept = run / "checkpoints" / "step-00000002"
    assert_clear_error(
        result,
        "training stopped at step 3",
        "the loss is nan",
        f"last good checkpoint is kept: {kept}",
        "--skip-nonfinite-steps",
    )
    assert _checkpoints(run) == ["step-00000002"] and _finite(kept / "model.pt")
    assert not (run / "final").exists() and not (run / RESULT_FILE).exists(), "a model was exported"
    record_property("checkpoints kept", ", ".join(_checkpoints(run)))


@pytest.mark.reliability(category="training faults", expect="correct result")
def test_dpr_training_resumed_with_a_skip_budget(
    tmp_path: Path, tiny_bert_dir: Path, nan_loss_on_question: None
) -> None:
    """DPR training stopped by a NaN loss is run again with --skip-nonfinite-steps 2"""
    data = write_training_data(tmp_path / "train.jsonl")
    run = tmp_path / "run"
    args = train_args(data, run, tiny_bert_dir, "--set", "keep_checkpoints=10")
    assert train_command(args).code == 2
    assert_success(train_command([*args, "--skip-nonfinite-steps", "2"]))
    skipped = [e["step"] for e in read_log(run / "log.jsonl") if e.get("event") == "skipped"]
    assert skipped == [3, 4]
    before, after = (
        torch.load(run / "checkpoints" / f"step-0000000{n}" / "model.pt", weights_only=True) for n in (2, 3)
    )
    assert all(torch.equal(before[k], after[k]) for k in before), "a skipped step changed the weights"
    assert _finite(run / "checkpoints" / "step-00000006" / "model.pt")
    for encoder in ("question_encoder", "passage_encoder"):  # loading refuses NaN or infinite weights
        TextEncoder(EncoderSettings(model=str(run / "final" / encoder))).encode_questions(["who wrote hamlet"])


@pytest.mark.parametrize("rate, problem", list(DIVERGING_RATES.items()), ids=list(DIVERGING_RATES))
@pytest.mark.reliability(category="training faults", expect="clear error")
def test_dpr_training_diverges(tmp_path: Path, tiny_bert_dir: Path, rate: str, problem: str) -> None:
    """DPR training with a learning rate so high that training diverges (--set learning_rate=1e30)"""
    data = write_training_data(tmp_path / "train.jsonl")
    run = tmp_path / "run"
    result = train_command(train_args(data, run, tiny_bert_dir, "--set", f"learning_rate={rate}"))
    assert_clear_error(result, "training stopped at step", problem, "last good checkpoint is kept")
    assert not (run / "final").exists() and not (run / "best").exists(), "a model was exported"
    assert all(_finite(run / "checkpoints" / name / "model.pt") for name in _checkpoints(run))


@pytest.mark.reliability(category="training faults", expect="clear error")
@pytest.mark.integration
def test_ddp_training_diverges(tmp_path: Path, tiny_bert_dir: Path) -> None:
    """DDP training (python -m training.retriever.train --processes 2) with a learning rate so high that training diverges"""
    data = write_training_data(tmp_path / "train.jsonl")
    run = tmp_path / "run"
    result = train_command(train_args(data, run, tiny_bert_dir, "--set", "learning_rate=1e30", "--processes", "2"))
    assert_clear_error(result, "training stopped at step 2", "the loss is nan", "last good checkpoint is kept")
    assert not (run / "final").exists(), "a model was exported"


@pytest.mark.reliability(category="training faults", expect="clear error")
def test_reader_training_loss_becomes_nan(
    tmp_path: Path, tiny_encoder_dir: Path, nan_reader_loss_on_question: None
) -> None:
    """Reader training computes a NaN loss at step 3"""
    run = tmp_path / "run"
    result = as_command(lambda: train_reader(run, tiny_encoder_dir))
    assert_clear_error(
        result,
        "training stopped at step 3",
        "the loss is nan",
        f"last good checkpoint is kept: {run / 'checkpoint'} (step 2)",
    )
    assert reader_state(run)["position"]["step"] == 2 and _finite(run / "checkpoint" / "state.pt")
    assert not (run / "export").exists(), "a reader was exported"


@pytest.mark.reliability(category="training faults", expect="correct result")
def test_reader_training_resumed_with_a_skip_budget(
    tmp_path: Path, tiny_encoder_dir: Path, nan_reader_loss_on_question: None
) -> None:
    """Reader training stopped by a NaN loss is run again allowing 2 skipped steps (--skip-nonfinite-steps 2)"""
    run = tmp_path / "run"
    assert as_command(lambda: train_reader(run, tiny_encoder_dir)).code == 2
    result = train_reader(run, tiny_encoder_dir, max_nonfinite_steps=2)
    assert result.state.step == result.total_steps and result.state.nonfinite_steps == 2
    assert [e["step"] for e in read_log(run / "log.jsonl") if e.get("event") == "skipped"] == [3, 5]
    load_reader(result.export_dir)  # refuses NaN or infinite weights
