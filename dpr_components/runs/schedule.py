"""The learning-rate schedule of both training loops: linear warm-up, then linear decay to 0."""

from __future__ import annotations

import functools

import torch


def _factor(step: int, *, warmup: int, total: int, offset: int) -> float:
    if step < warmup:
        return (step + offset) / max(1, warmup + offset)
    return max(0.0, (total - step) / max(1, total - warmup))


def linear_warmup_decay(
    optimizer: torch.optim.Optimizer, warmup: int, total: int, *, first_step_nonzero: bool = False
) -> torch.optim.lr_scheduler.LambdaLR:
    """Rise linearly over ``warmup`` steps to the optimizer's learning rate, then fall linearly to 0 at
    ``total``. The DPR loop starts the rise at 0 (as ``transformers``' linear schedule); the reader
    loop (``first_step_nonzero``) at ``1 / (warmup + 1)`` of the rate, so its first step learns."""
    if warmup < 0 or total < 0:
        raise ValueError(f"warm-up ({warmup}) and total ({total}) steps must be >= 0")
    # A partial (not a closure): its scheduler state saves as ``{}``, as transformers' schedule did.
    factor = functools.partial(_factor, warmup=warmup, total=total, offset=1 if first_step_nonzero else 0)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
