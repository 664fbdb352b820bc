"""The run mechanics shared by the DPR and reader training loops: schedule, run folder, log,
checkpoint folders and generator states."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from dpr_components.runs.checkpoint_files import (
    CheckpointError,
    load_tensors,
    restart_hint,
    restore_training,
    resuming,
    write_checkpoint,
)
from dpr_components.runs.process_state import rng_states
from dpr_components.runs.rng import (
    RNG_FILE,
    read_rng_file,
    rng_json,
    seed_everything,
    states_of_process,
)
from dpr_components.runs.run_folder import (
    changed_settings,
    check_same_run,
    clean_run_folder,
    data_fingerprint,
    read_settings,
    resume_log,
    write_settings,
)
from dpr_components.runs.run_log import read_log
from dpr_components.runs.schedule import linear_warmup_decay
from tests.helpers.reader_training import train_reader

pytestmark = pytest.mark.usefixtures("one_thread")


def _objects(lr: float = 1.0, warmup: int = 3, total: int = 10, **schedule):
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    return model, optimizer, linear_warmup_decay(optimizer, warmup, total, **schedule)


def _rates(scheduler, optimizer, steps: int) -> list[float]:
    rates = []
    for _ in range(steps):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return rates


def test_schedule_warms_up_then_decays_to_zero() -> None:
    _, optimizer, scheduler = _objects()
    expected = [0, 1 / 3, 2 / 3, 1, 6 / 7, 5 / 7, 4 / 7, 3 / 7, 2 / 7, 1 / 7, 0]
    assert _rates(scheduler, optimizer, 11) == pytest.approx(expected)
    _, optimizer, scheduler = _objects(first_step_nonzero=True)
    assert _rates(scheduler, optimizer, 4) == pytest.approx([1 / 4, 2 / 4, 3 / 4, 1])
    _, optimizer, scheduler = _objects(warmup=0, total=2)
    assert _rates(scheduler, optimizer, 3) == pytest.approx([1, 0.5, 0])
    with pytest.raises(ValueError, match="warm-up"):
        _objects(warmup=-1)


def test_schedule_matches_transformers_linear_schedule() -> None:
    from transformers import get_linear_schedule_with_warmup

    _, optimizer, ours = _objects(lr=0.5, warmup=4, total=9)
    theirs_optimizer = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.5)
    theirs = get_linear_schedule_with_warmup(theirs_optimizer, 4, 9)
    assert _rates(ours, optimizer, 10) == _rates(theirs, theirs_optimizer, 10)  # exactly: same trained weights
    assert ours.state_dict() == theirs.state_dict()  # same checkpoint contents


def test_schedule_resumes_from_a_state_saved_by_a_closure_schedule() -> None:
    _, optimizer, scheduler = _objects(first_step_nonzero=True)
    _rates(scheduler, optimizer, 5)
    saved = scheduler.state_dict()
    saved["lr_lambdas"] = [None]  # what a schedule built on a plain function saved
    _, optimizer_b, resumed = _objects(first_step_nonzero=True)
    resumed.load_state_dict(saved)
    assert resumed.get_last_lr() == scheduler.get_last_lr()
    assert _rates(resumed, optimizer_b, 3) == _rates(scheduler, optimizer, 3)


def test_fingerprint_and_settings_checks(tmp_path: Path) -> None:
    assert data_fingerprint(["a", "b"]) == data_fingerprint(["ab"]) != data_fingerprint(["a", "c"])
    assert len(data_fingerprint([])) == 16
    saved, current = {"lr": 1, "log_every": 5, "seed": 0}, {"lr": 2, "log_every": 9, "seed": 0}
    assert changed_settings(saved, current, {"log_every"}) == {"lr": (1, 2)}
    check_same_run(tmp_path, saved, {**saved, "log_every": 9}, {"log_every"}, "x", "x")
    with pytest.raises(ValueError, match=r"other settings \(lr 1 -> 2\)"):
        check_same_run(tmp_path, saved, current, {"log_every"}, "x", "x")
    with pytest.raises(ValueError, match="other training data"):
        check_same_run(tmp_path, saved, saved, (), "x", "y")
    assert read_settings(tmp_path) is None
    write_settings(tmp_path, {"config": saved})
    assert read_settings(tmp_path) == {"config": saved}


def test_run_folder_cleanup_and_log_resume(tmp_path: Path) -> None:
    (tmp_path / "checkpoints" / ".step-00000004.abc.tmp").mkdir(parents=True)
    (tmp_path / ".best.old").mkdir()
    clean_run_folder(tmp_path, "checkpoints")
    assert not (tmp_path / "checkpoints" / ".step-00000004.abc.tmp").exists()
    assert (tmp_path / "best").is_dir()  # an old copy whose replacement never arrived is put back
    log = resume_log(tmp_path, None)
    for step in (1, 2, 3):
        log.write({"step": step, "loss": 1.0 / step})
    assert [e["step"] for e in read_log(resume_log(tmp_path, 2).path)] == [1, 2]
    assert read_log(resume_log(tmp_path, None).path) == []  # a new start drops an attempt without checkpoint


def test_checkpoint_round_trip_restores_model_optimizer_schedule_and_generators(tmp_path: Path) -> None:
    model, optimizer, scheduler = _objects()
    _rates(scheduler, optimizer, 2)
    seed_everything(7)
    saved_rng = rng_states()
    expected = (random.random(), torch.rand(1))
    target = write_checkpoint(
        tmp_path / "step-1",
        tensors={
            "model.pt": model.state_dict(),
            "optimizer.pt": {"o": optimizer.state_dict(), "s": scheduler.state_dict()},
        },
        texts={RNG_FILE: rng_json([saved_rng])},
        marker=("state.json", "{}"),
        fault="test.checkpoint",
    )
    assert sorted(p.name for p in target.iterdir()) == ["model.pt", "optimizer.pt", RNG_FILE, "state.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["step-1"]  # no temporary left
    hint = restart_hint(tmp_path, "start again")
    other, other_optimizer, other_scheduler = _objects()
    saved = load_tensors(target / "optimizer.pt", hint)
    restore_training(
        other,
        other_optimizer,
        other_scheduler,
        {
            "model": load_tensors(target / "model.pt", hint),
            "optimizer": saved["o"],
            "scheduler": saved["s"],
            "rng": states_of_process(read_rng_file(target, hint), 0),
        },
    )
    assert torch.equal(other.weight, model.weight) and other_scheduler.state_dict() == scheduler.state_dict()
    got = (random.random(), torch.rand(1))
    assert got[0] == expected[0] and torch.equal(got[1], expected[1])


def test_unusable_checkpoint_state_is_one_clear_error(tmp_path: Path) -> None:
    hint = restart_hint(tmp_path / "checkpoints", "use the exported model")
    assert hint.startswith(f"Delete {tmp_path / 'checkpoints'} to train this run again")
    model, optimizer, scheduler = _objects()
    message = "cannot resume from checkpoint .*generator states.*use the exported model"
    with pytest.raises(CheckpointError, match=message), resuming(tmp_path, hint):
        restore_training(
            model,
            optimizer,
            scheduler,
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "rng": {"python": 1},
            },
        )
    with pytest.raises(CheckpointError, match="written by 1 processes, this is process 1"), resuming(tmp_path, hint):
        states_of_process([{}], 1)
    (tmp_path / "rng.pt").write_bytes(b"old")
    with pytest.raises(CheckpointError, match=r"older format \(rng.pt\)"):
        read_rng_file(tmp_path, hint)
    (tmp_path / RNG_FILE).write_text("[{")
    with pytest.raises(CheckpointError, match="is damaged"):
        read_rng_file(tmp_path, hint)
    assert json.loads(rng_json())[0].keys() == {"python", "numpy", "torch"}


def test_reader_run_crashed_before_its_first_checkpoint_logs_each_step_once(
    tmp_path: Path, tiny_encoder_dir: Path, one_thread: None
) -> None:
    def crash(step: int) -> None:
        raise RuntimeError("crash")

    with pytest.raises(RuntimeError):
        train_reader(tmp_path / "run", tiny_encoder_dir, after_step=crash, checkpoint_every=4, eval_every=0)
    assert not (tmp_path / "run" / "checkpoint").exists()
    assert [e["step"] for e in read_log(tmp_path / "run" / "log.jsonl")] == [1]
    train_reader(tmp_path / "run", tiny_encoder_dir, checkpoint_every=4, eval_every=0)
    steps = [e["step"] for e in read_log(tmp_path / "run" / "log.jsonl") if "loss" in e]
    assert steps == [1, 2, 3, 4, 5, 6]
