"""The training loop both trainers share (``runs/loop.py``), driven by a scripted task: the order
of a step's work, the log, evaluation and checkpoint cadence, steps that give no update, resuming
at a restored position and Ctrl-C."""

from __future__ import annotations

import pytest
from tqdm.auto import tqdm

from dpr_components.runs import loop
from dpr_components.runs.loop import LoopTask, ProgressBar, StepOutcome, run_loop


class ScriptedTask(LoopTask):
    """Counts steps and records every call the loop makes; ``empty`` batches give no step."""

    fault = "test.step"

    def __init__(
        self,
        total: int,
        done: int = 0,
        empty: frozenset[int] = frozenset(),
        log_every: int = 2,
        stop_after: int | None = None,
    ) -> None:
        self.total_steps, self.log_every = total, log_every
        self.done, self.batches, self.empty, self.stop_after = done, 0, empty, stop_after
        self.calls: list[tuple[str, int]] = []

    @property
    def steps_done(self) -> int:
        return self.done

    def progress_bar(self) -> ProgressBar:
        return ProgressBar("Testing", enabled=False)

    def step(self) -> StepOutcome | None:
        self.batches += 1
        if self.batches in self.empty:
            return None
        self.done += 1
        skipped = "the loss is nan" if self.done == 2 else None
        return StepOutcome(float(self.done), skipped, epoch_done=self.done % 3 == 0)

    def record(self, outcome: StepOutcome, bar: tqdm) -> None:
        self.calls.append(("skipped" if outcome.skipped else "record", self.done))

    def write_log(self, bar: tqdm) -> None:
        self.calls.append(("log", self.done))

    def evaluation_due(self, outcome: StepOutcome, last: bool) -> bool:
        return outcome.epoch_done or last

    def evaluate(self) -> None:
        self.calls.append(("evaluate", self.done))

    def checkpoint_due(self, outcome: StepOutcome, last: bool) -> bool:
        return self.done % 2 == 0

    def checkpoint(self) -> None:
        self.calls.append(("checkpoint", self.done))

    def after_step(self) -> None:
        self.calls.append(("after", self.done))
        if self.done == self.stop_after:
            raise KeyboardInterrupt

    def interrupted(self) -> None:
        self.calls.append(("interrupted", self.done))


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reached: list[str] = []
    monkeypatch.setattr(loop, "fault_point", reached.append)
    return reached


def test_each_step_records_logs_evaluates_checkpoints_then_reaches_its_fault_point(faults: list[str]) -> None:
    task = ScriptedTask(total=4)
    run_loop(task)
    assert task.calls == [
        ("record", 1),
        ("after", 1),
        ("skipped", 2),
        ("log", 2),
        ("checkpoint", 2),
        ("after", 2),
        ("record", 3),
        ("evaluate", 3),
        ("after", 3),
        ("record", 4),
        ("log", 4),
        ("evaluate", 4),
        ("checkpoint", 4),
        ("after", 4),
    ]
    assert faults == ["test.step"] * 4


def test_the_last_step_is_logged_and_batches_without_a_step_count_for_nothing(faults: list[str]) -> None:
    task = ScriptedTask(total=3, empty=frozenset({1, 3}), log_every=10)
    run_loop(task)
    assert task.batches == 5 and task.done == 3
    assert [call for call in task.calls if call[0] == "log"] == [("log", 3)]
    assert len(faults) == 3


def test_a_resumed_task_runs_only_its_remaining_steps(faults: list[str]) -> None:
    task = ScriptedTask(total=4, done=3)
    run_loop(task)
    assert [call for call in task.calls if call[0] == "after"] == [("after", 4)]
    run_loop(task)  # a finished run: no step
    assert len(faults) == 1


def test_ctrl_c_lets_the_task_save_and_stops_the_run(faults: list[str]) -> None:
    task = ScriptedTask(total=6, stop_after=3)
    with pytest.raises(KeyboardInterrupt):
        run_loop(task)
    assert task.calls[-2:] == [("after", 3), ("interrupted", 3)]
    assert len(faults) == 2  # the interrupted step never reached its fault point
