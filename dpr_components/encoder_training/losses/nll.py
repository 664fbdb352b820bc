"""DPR's loss (Karpukhin et al. 2020, eq. 2): the negative log-likelihood of the positive
passage under a softmax over the question's candidate passages."""

from __future__ import annotations

import torch

from dpr_components.encoder_training.losses.candidates import CandidateLoss
from dpr_components.encoder_training.losses.similarity import Similarity


class NLLLoss(CandidateLoss):
    """Softmax cross-entropy over candidates; ``scale`` multiplies the scores first (an inverse
    temperature, needed with cosine similarity whose scores lie in [-1, 1])."""

    def __init__(self, similarity: Similarity = "dot", scale: float = 1.0) -> None:
        super().__init__(similarity)
        if scale <= 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.scale = scale

    def score_loss(self, scores: torch.Tensor, positive_index: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = (scores * self.scale).masked_fill(~mask, float("-inf"))
        return torch.nn.functional.cross_entropy(scores, positive_index)
