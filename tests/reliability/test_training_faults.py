"""Training faults: DPR and reader training killed with SIGKILL mid-epoch, while saving a
checkpoint and while exporting the model; running the same training again completes, and the
result is identical to an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.reliability.harness import REPO, assert_success
from tests.reliability.training_checks import same_weights, train_args, train_command, train_process, write_training_data
from tests.test_reader import one_thread, tiny_encoder_dir, tokenizer  # noqa: F401  (shared fixtures)
from tests.test_reader_training import _assert_same_state, _state
from tests.test_reader_training import _train as train_reader

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
from tests.test_reader_training import _train
_train(Path(sys.argv[1]), Path(sys.argv[2]))
"""


@pytest.fixture(scope="session")
def dpr_reference(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path) -> tuple[Path, Path]:
    """An uninterrupted 6-step DPR run and its data."""
    folder = tmp_path_factory.mktemp("dpr_reference")
    data = write_training_data(folder / "train.jsonl")
    assert_success(train_command(train_args(data, folder / "run", tiny_bert_dir)))
    return folder / "run", data


@pytest.mark.parametrize("point", list(DPR_FAULTS.values()), ids=list(DPR_FAULTS))
@pytest.mark.reliability(category="training faults", expect="nothing lost")
def test_dpr_training_killed(
    dpr_reference: tuple[Path, Path], tmp_path: Path, tiny_bert_dir: Path, point: str,
    record_property: pytest.RecordProperty,
) -> None:
    """DPR training (python -m training.train) is killed with SIGKILL, then the same command is run again"""
    reference, data = dpr_reference
    args = train_args(data, tmp_path / "run", tiny_bert_dir)
    killed = train_process(args, fault_point=point)
    assert killed.code == -signal.SIGKILL, f"the fault point was not reached (exit {killed.code}):\n{killed.err[-2000:]}"
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
def reader_reference(tmp_path_factory: pytest.TempPathFactory, tiny_encoder_dir: Path) -> Path:  # noqa: F811
    """An uninterrupted 6-step reader run."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run = tmp_path_factory.mktemp("reader_reference") / "run"
        train_reader(run, tiny_encoder_dir)
    finally:
        torch.set_num_threads(threads)
    return run


@pytest.mark.parametrize("point", list(READER_FAULTS.values()), ids=list(READER_FAULTS))
@pytest.mark.reliability(category="training faults", expect="nothing lost")
def test_reader_training_killed(
    reader_reference: Path, tmp_path: Path, tiny_encoder_dir: Path, point: str,  # noqa: F811
    record_property: pytest.RecordProperty,
) -> None:
    """Reader training is killed with SIGKILL, then the same training is run again"""
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "DPR_FAULT_POINT": point}
    killed = subprocess.run([sys.executable, "-c", READER_RUN, str(run), str(tiny_encoder_dir)], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, f"the fault point was not reached:\n{killed.stderr[-2000:]}"
    assert not (run / "export").exists()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        train_reader(run, tiny_encoder_dir)
    finally:
        torch.set_num_threads(threads)
    _assert_same_state(_state(reader_reference), _state(run))
    assert same_weights(reader_reference / "export", run / "export")
    assert _leftovers(run) == []
    record_property("checkpoint and exported reader equal an uninterrupted run's", True)


def _leftovers(run: Path) -> list[str]:
    """Half-written folders of interrupted atomic writes."""
    return sorted(p.name for p in run.rglob("*") if p.name.endswith((".tmp", ".old")))
