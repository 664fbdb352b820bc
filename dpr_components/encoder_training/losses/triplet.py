"""Triplet loss with margin (Karpukhin et al. 2020, section 6.3, compared against NLL):
``max(0, margin - sim(q, p+) + sim(q, p-))`` averaged over every (question, positive, negative)
triplet the mask allows."""

from __future__ import annotations

import torch

from dpr_components.encoder_training.losses.candidates import CandidateLoss
from dpr_components.encoder_training.losses.similarity import Similarity


class TripletLoss(CandidateLoss):
    def __init__(self, similarity: Similarity = "dot", margin: float = 1.0) -> None:
        super().__init__(similarity)
        if margin < 0:
            raise ValueError(f"margin must be >= 0, got {margin}")
        self.margin = margin

    def score_loss(self, scores: torch.Tensor, positive_index: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        positive = scores.gather(1, positive_index[:, None])
        negative = mask.clone()
        negative[torch.arange(len(positive_index)), positive_index] = False
        hinge = (self.margin - positive + scores).clamp(min=0)
        count = negative.sum()
        if count == 0:
            return scores.sum() * 0.0  # no negatives at all: zero loss that still has a graph
        return hinge[negative].sum() / count
