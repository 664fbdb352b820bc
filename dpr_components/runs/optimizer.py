"""The optimiser shared by the DPR and reader training loops: AdamW, as in BERT and DPR."""

from __future__ import annotations

import torch


def adamw_with_decay_groups(
    model: torch.nn.Module, learning_rate: float, weight_decay: float, eps: float = 1e-8
) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters, with weight decay on all but biases and LayerNorm weights
    (as in BERT and DPR)."""
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(parameter)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=learning_rate, eps=eps)
