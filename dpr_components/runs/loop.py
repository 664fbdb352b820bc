"""The resumable training loop both trainers run: steps until the run's last, with a progress bar,
the log window and its entries, evaluation and checkpoints when a step asks for them, a fault
point after every step and the saving of a Ctrl-C'd run.

A trainer supplies a :class:`LoopTask` (the bi-encoder's
:class:`~dpr_components.encoder_training.task.EncoderTask`, the reader's
:class:`~dpr_components.reader_training.task.ReaderTask`). Per step the loop calls it at most five
times: :meth:`~LoopTask.finished`, :meth:`~LoopTask.step` (which says what is due after it),
:meth:`~LoopTask.log_entry` every ``log_every`` steps and at the last, and
:meth:`~LoopTask.evaluate` and :meth:`~LoopTask.checkpoint` when due.

The task owns its state (restored from its last checkpoint before the loop starts, so the loop
starts where the checkpoint stands) and takes each step's update through
:func:`~dpr_components.runs.finite.apply_update`, so a step whose loss or gradient norm is not
finite is skipped or stops the run the same way in both."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from dpr_components.runs.log_window import LogWindow
from dpr_components.runs.run_log import RunLog
from dpr_components.runs.state import TrainingState
from dpr_components.utils.fault_points import fault_point


@dataclass
class StepOutcome:
    """One optimizer step as its task reports it: the numbers its log window sums (the loss among
    them), what was not finite when its update was skipped (else None), the examples it trained on
    and whether the loop evaluates and checkpoints after it."""

    numbers: dict[str, float]
    skipped: str | None = None
    examples: int = 0
    evaluate: bool = False
    checkpoint: bool = False


@dataclass(frozen=True)
class ProgressBar:
    """How the loop's progress bar looks; ``postfix`` shows log entry values (name -> format of the entry)."""

    description: str
    enabled: bool
    smoothing: float = 0.3  # tqdm's default
    postfix: Mapping[str, str] = field(default_factory=dict)


class LoopTask(ABC):
    """What one trainer supplies to :func:`run_loop`: its state, cadence and the work of a step."""

    state: TrainingState
    total_steps: int
    log_every: int
    log: RunLog | None  # None in processes that do not log
    window: LogWindow
    looks: ProgressBar
    fault: str  # the fault point reached after every step

    def finished(self) -> bool:
        """Whether the run has no step left."""
        return self.state.step >= self.total_steps

    @abstractmethod
    def step(self) -> StepOutcome | None:
        """Run the next optimizer step (None when the data gave no step to run)."""

    @abstractmethod
    def log_entry(self, window: LogWindow, now: float) -> dict[str, Any]:
        """The log entry of ``window`` (which has at least one updating step)."""

    @abstractmethod
    def evaluate(self) -> bool:
        """Evaluate the model (and keep it if it is the best so far); True stops the run (early stopping)."""

    @abstractmethod
    def checkpoint(self) -> None:
        """Write a resumable checkpoint."""

    def interrupted(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Ctrl-C stopped the run (the loop re-raises it afterwards); by default nothing is saved."""


def _write_log(task: LoopTask, bar: tqdm) -> None:
    """Write the window's entry (a window of skipped steps only has their events) and start a new one."""
    now = time.perf_counter()
    if task.log is not None and task.window.steps:
        entry = task.log_entry(task.window, now)
        task.log.write(entry)
        if task.looks.postfix:
            bar.set_postfix({name: shown.format(**entry) for name, shown in task.looks.postfix.items()})
    task.window.restart(now)


def _finish_step(task: LoopTask, outcome: StepOutcome, bar: tqdm) -> None:
    """Count ``outcome`` in the window and the bar; log, evaluate and checkpoint when due."""
    task.window.add(outcome.examples, None if outcome.skipped else outcome.numbers)
    bar.update(1)
    if task.state.step % task.log_every == 0 or task.state.step >= task.total_steps:
        _write_log(task, bar)
    stopped = task.evaluate() if outcome.evaluate else False
    if outcome.checkpoint or stopped:
        task.checkpoint()


def run_loop(task: LoopTask, on_step: Callable[[TrainingState], None] | None = None) -> None:
    """Run ``task``'s remaining steps; ``on_step(state)`` is called after each one."""
    looks = task.looks
    bar = tqdm(
        total=task.total_steps,
        initial=task.state.step,
        desc=looks.description,
        unit="step",
        disable=not looks.enabled,
        smoothing=looks.smoothing,
    )
    try:
        while not task.finished():
            outcome = task.step()
            if outcome is None:
                continue
            _finish_step(task, outcome, bar)
            if on_step is not None:
                on_step(task.state)
            fault_point(task.fault)
    except KeyboardInterrupt:
        task.interrupted()
        raise
    finally:
        bar.close()  # before any error is printed: the bar's line ends first
