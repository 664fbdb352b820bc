"""The resumable training loop both trainers run: steps until the run's last, with a progress bar,
the log window, evaluation and checkpoint cadence, a fault point after every step and the saving
of a Ctrl-C'd run. What a step, an evaluation, a checkpoint or a log entry is, each trainer
supplies as a :class:`LoopTask` (the DPR bi-encoder's ``Trainer``, the reader's ``ReaderTask``).

The task owns its position (restored from its last checkpoint before the loop starts, so the loop
starts where the checkpoint stands) and takes each step's update through
:func:`~dpr_components.runs.finite.apply_update`, so a step whose loss or gradient norm is not
finite is skipped or stops the run the same way in both."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from dpr_components.utils.fault_points import fault_point


@dataclass
class StepOutcome:
    """One optimizer step: its loss, what was not finite when its update was skipped (else None),
    whether it ended an epoch, and the trainer's own numbers for its log window."""

    loss: float
    skipped: str | None = None
    epoch_done: bool = False
    details: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ProgressBar:
    """How the loop's progress bar looks."""

    description: str
    enabled: bool
    smoothing: float = 0.3  # tqdm's default


class LoopTask(ABC):
    """What one trainer supplies to :func:`run_loop`."""

    total_steps: int
    log_every: int
    fault: str  # the fault point reached after every step

    @property
    @abstractmethod
    def steps_done(self) -> int:
        """Optimizer steps done so far (restored ones included)."""

    def finished(self) -> bool:
        """Whether the run has no step left."""
        return self.steps_done >= self.total_steps

    @abstractmethod
    def progress_bar(self) -> ProgressBar:
        """How the progress bar looks."""

    @abstractmethod
    def step(self) -> StepOutcome | None:
        """Run the next optimizer step (None when the data gave no step to run)."""

    @abstractmethod
    def record(self, outcome: StepOutcome, bar: tqdm) -> None:
        """Count a step in the log window, or log why it was skipped; move to the next epoch."""

    @abstractmethod
    def write_log(self, bar: tqdm) -> None:
        """Write the log window's entry (when due) and start a new window."""

    @abstractmethod
    def evaluation_due(self, outcome: StepOutcome, last: bool) -> bool:
        """Whether to evaluate after this step."""

    @abstractmethod
    def evaluate(self) -> None:
        """Evaluate the model (and keep it if it is the best so far)."""

    @abstractmethod
    def checkpoint_due(self, outcome: StepOutcome, last: bool) -> bool:
        """Whether to write a checkpoint after this step."""

    @abstractmethod
    def checkpoint(self) -> None:
        """Write a resumable checkpoint."""

    def after_step(self) -> None:
        """The caller's per-step callback, if any."""

    def interrupted(self) -> None:
        """Ctrl-C stopped the run (the loop re-raises it afterwards); by default nothing is saved."""


def run_loop(task: LoopTask) -> None:
    """Run ``task``'s remaining steps; evaluate, log and checkpoint on their cadence."""
    looks = task.progress_bar()
    bar = tqdm(
        total=task.total_steps,
        initial=task.steps_done,
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
            task.record(outcome, bar)
            bar.update(1)
            last = task.steps_done >= task.total_steps
            if task.steps_done % task.log_every == 0 or last:
                task.write_log(bar)
            if task.evaluation_due(outcome, last):
                task.evaluate()
            if task.checkpoint_due(outcome, last):
                task.checkpoint()
            task.after_step()
            fault_point(task.fault)
    except KeyboardInterrupt:
        task.interrupted()
        raise
    finally:
        bar.close()  # before any error is printed: the bar's line ends first
