"""The training loop both trainers share (``runs/loop.py``), driven by a scripted task: the order
of a step's work, the log window and its entries, evaluation and checkpoints when a step asks for
them, early stopping, steps that give no update, resuming at a restored state and Ctrl-C."""

from __future__ import annotations

from typing import Any

import pytest

from dpr_components.runs import loop
from dpr_components.runs.log_window import LogWindow
from dpr_components.runs.loop import LoopTask, ProgressBar, StepOutcome, run_loop
from dpr_components.runs.state import TrainingState

MAX_CALLS_PER_STEP = 5


class ListLog:
    """A run log that keeps its entries."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def write(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)


class ScriptedTask(LoopTask):
    """Counts steps and records every call the loop makes; ``empty`` batches give no step, step 2 is
    skipped, every third step ends an epoch (evaluated), even steps are checkpointed."""

    fault = "test.step"

    def __init__(
        self,
        total: int,
        done: int = 0,
        empty: frozenset[int] = frozenset(),
        log_every: int = 2,
        stop_early_at: int | None = None,
    ) -> None:
        self.state, self.total_steps, self.log_every = TrainingState(step=done), total, log_every
        self.log = ListLog()  # type: ignore[assignment]
        self.window = LogWindow()
        self.looks = ProgressBar("Testing", enabled=False, postfix={"loss": "{loss:.3f}"})
        self.batches, self.empty, self.stop_early_at = 0, empty, stop_early_at
        self.stopped = False
        self.calls: list[tuple[str, int]] = []

    def finished(self) -> bool:
        self.calls.append(("finished", self.state.step))
        return self.stopped or super().finished()

    def step(self) -> StepOutcome | None:
        self.batches += 1
        if self.batches in self.empty:
            return None
        self.state.step += 1
        done = self.state.step
        skipped = "the loss is nan" if done == 2 else None
        self.calls.append(("skipped" if skipped else "step", done))
        return StepOutcome({"loss": float(done)}, skipped, 4, evaluate=done % 3 == 0, checkpoint=done % 2 == 0)

    def log_entry(self, window: LogWindow, now: float) -> dict[str, Any]:
        self.calls.append(("log", self.state.step))
        return {"step": self.state.step, "loss": window.mean("loss"), "examples": window.examples}

    def evaluate(self) -> bool:
        self.calls.append(("evaluate", self.state.step))
        self.stopped = self.state.step == self.stop_early_at
        return self.stopped

    def checkpoint(self) -> None:
        self.calls.append(("checkpoint", self.state.step))

    def interrupted(self) -> None:
        self.calls.append(("interrupted", self.state.step))


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reached: list[str] = []
    monkeypatch.setattr(loop, "fault_point", reached.append)
    return reached


def _without_finished(task: ScriptedTask) -> list[tuple[str, int]]:
    return [call for call in task.calls if call[0] != "finished"]


def test_each_step_logs_evaluates_checkpoints_then_reaches_its_fault_point(faults: list[str]) -> None:
    task = ScriptedTask(total=4)
    after: list[int] = []
    run_loop(task, lambda state: after.append(state.step))
    assert _without_finished(task) == [
        ("step", 1),
        ("skipped", 2),
        ("log", 2),
        ("checkpoint", 2),
        ("step", 3),
        ("evaluate", 3),
        ("step", 4),
        ("log", 4),
        ("checkpoint", 4),
    ]
    assert after == [1, 2, 3, 4]
    assert faults == ["test.step"] * 4
    # The skipped step counts its examples but adds no numbers to the window's means.
    assert task.log.entries == [{"step": 2, "loss": 1.0, "examples": 8}, {"step": 4, "loss": 3.5, "examples": 8}]  # type: ignore[attr-defined]


def test_the_loop_calls_its_task_a_few_times_per_step(faults: list[str]) -> None:
    task = ScriptedTask(total=6)
    run_loop(task)
    steps = [call[1] for call in task.calls if call[0] != "interrupted"]
    assert max(steps.count(step) for step in set(steps)) <= MAX_CALLS_PER_STEP


def test_the_last_step_is_logged_and_batches_without_a_step_count_for_nothing(faults: list[str]) -> None:
    task = ScriptedTask(total=3, empty=frozenset({1, 3}), log_every=10)
    run_loop(task)
    assert task.batches == 5 and task.state.step == 3
    assert [call for call in task.calls if call[0] == "log"] == [("log", 3)]
    assert len(faults) == 3


def test_a_window_of_skipped_steps_only_writes_no_entry(faults: list[str]) -> None:
    task = ScriptedTask(total=2, done=1, log_every=1)
    run_loop(task)  # step 2 is skipped
    assert task.log.entries == [] and task.window.steps == 0  # type: ignore[attr-defined]


def test_evaluation_that_stops_the_run_checkpoints_it(faults: list[str]) -> None:
    task = ScriptedTask(total=6, stop_early_at=3)
    run_loop(task)
    assert _without_finished(task)[-2:] == [("evaluate", 3), ("checkpoint", 3)]
    assert task.state.step == 3


def test_a_resumed_task_runs_only_its_remaining_steps(faults: list[str]) -> None:
    task = ScriptedTask(total=4, done=3)
    run_loop(task)
    assert [call for call in task.calls if call[0] == "step"] == [("step", 4)]
    run_loop(task)  # a finished run: no step
    assert len(faults) == 1


def test_ctrl_c_lets_the_task_save_and_stops_the_run(faults: list[str]) -> None:
    task = ScriptedTask(total=6)

    def interrupt(state: TrainingState) -> None:
        if state.step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_loop(task, interrupt)
    assert _without_finished(task)[-2:] == [("evaluate", 3), ("interrupted", 3)]
    assert len(faults) == 2  # the interrupted step never reached its fault point


def test_log_window_means_rates_and_segment() -> None:
    window = LogWindow(elapsed_before=10.0, segment_start=100.0)
    window.add(4, {"loss": 1.0, "grad_norm": 2.0})
    window.add(4, None)
    window.add(4, {"loss": 3.0, "grad_norm": 5.0})
    assert (window.steps, window.examples, window.mean("loss"), window.last["grad_norm"]) == (2, 12, 2.0, 5.0)
    assert window.rate(window.examples, 102.0) == 6.0 and window.elapsed(102.0) == 12.0
    window.restart(103.0)
    assert (window.steps, window.examples, window.sums, window.start) == (0, 0, {}, 103.0)
    assert window.segment_examples == 12 and window.segment_speed(106.0) == 2.0
