"""Training steps whose loss or gradient norm is not a finite number: NaN or infinity, from a run
that diverged (too high a learning rate) or an overflow.

Both trainers' steps (:class:`~dpr_components.encoder_training.task.EncoderTask` and
:class:`~dpr_components.reader_training.task.ReaderTask`) update their weights through
:func:`apply_update`, so such a step never reaches the weights: it is skipped while the run's budget of skipped steps
(``max_nonfinite_steps``, default 0) lasts, and then the run stops with a :class:`TrainingDiverged`
error naming the step and the checkpoint that is kept. Weights that become NaN or infinite in an
update of finite gradients (a learning rate so high that the step itself overflows) stop the run
at once, before anything is validated, checkpointed or exported. A finite step runs exactly as
without these checks (they only read values)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import torch
from haystack import logging

from dpr_components.encoders.model_files import non_finite_tensor

logger = logging.getLogger(__name__)

SKIP_HINT = "--skip-nonfinite-steps N (max_nonfinite_steps) to skip up to N such steps without updating the weights"


class TrainingDiverged(ValueError):
    """A training step's loss, gradient norm or updated weights hold NaN or infinity."""


class NonFiniteScores(ValueError):
    """Finite weights computed NaN or infinite validation scores (they overflow)."""


def nonfinite_problem(loss: float, grad_norm: float) -> str | None:
    """What is not finite in a step (``"the loss is nan"``), or None when both numbers are finite."""
    if not math.isfinite(loss):
        return f"the loss is {loss}"
    if not math.isfinite(grad_norm):
        return f"the gradient norm is {grad_norm}"
    return None


def diverged(
    step: int,
    problem: str,
    kept: str,
    detail: str = "no checkpoint or model was saved after it",
    skippable: bool = False,
) -> TrainingDiverged:
    """The error that stops a run at ``step`` because of ``problem``; ``kept`` names the last good
    checkpoint; ``skippable`` problems (a non-finite loss or gradient norm) can be skipped next time."""
    retry = f", or run the same command again with {SKIP_HINT}" if skippable else ""
    return TrainingDiverged(
        f"training stopped at step {step}: {problem} (training diverged; {detail}); the last good checkpoint "
        f"is kept: {kept}. Train again with a lower learning rate{retry}"
    )


def _step_optimizer(optimizer: torch.optim.Optimizer, step: int, kept: Callable[[], str]) -> None:
    """``optimizer.step()``; an update too large for float32 (torch's overflow error) stops the run."""
    try:
        optimizer.step()
    except RuntimeError as error:
        if "overflow" not in str(error):
            raise
        raise diverged(step, "its update overflows float32", kept()) from None


def apply_update(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    loss: float,
    grad_norm: float,
    step: int,
    skipped: int,
    budget: int,
    kept: Callable[[], str],
) -> str | None:
    """Update the weights for training step ``step`` (1-based) from their gradients, and advance the
    learning-rate schedule; returns None, or what was not finite when the update was skipped.

    A non-finite ``loss`` or ``grad_norm`` skips the update when fewer than ``budget`` steps were
    ``skipped`` before, else raises :class:`TrainingDiverged` (``kept()`` names the last good
    checkpoint); so do weights that the update made non-finite (they cannot be taken back)."""
    problem = nonfinite_problem(loss, grad_norm)
    if problem is None:
        _step_optimizer(optimizer, step, kept)
        broken = non_finite_tensor(dict(model.named_parameters()))
        if broken is not None:
            raise diverged(step, f"its update made the weights NaN or infinite (tensor {broken})", kept())
    elif skipped >= budget:
        detail = f"the {budget} skipped step(s) allowed are used up" if budget else "no step may be skipped"
        raise diverged(step, problem, kept(), detail, skippable=True)
    else:
        optimizer.zero_grad(set_to_none=True)
        logger.warning(
            "step {step}: {problem}: the weights were not updated (skipped step {skipped} of {budget} allowed)",
            step=step,
            problem=problem,
            skipped=skipped + 1,
            budget=budget,
        )
    with warnings.catch_warnings():
        # A skipped first step advances the schedule before any optimizer step, on purpose.
        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step\\(\\)` before")
        scheduler.step()
    return problem
