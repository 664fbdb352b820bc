"""DPR's loss (Karpukhin et al. 2020, eq. 2): the negative log-likelihood of the positive
passage under a softmax over the question's candidate passages."""

from __future__ import annotations

import torch

from dpr_components.training.losses.similarity import Similarity, similarity_matrix


class NLLLoss(torch.nn.Module):
    """Softmax cross-entropy over candidates; ``scale`` multiplies the scores first (an inverse
    temperature, needed with cosine similarity whose scores lie in [-1, 1])."""

    def __init__(self, similarity: Similarity = "dot", scale: float = 1.0) -> None:
        super().__init__()
        if scale <= 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.similarity = similarity
        self.scale = scale

    def forward(
        self, questions: torch.Tensor, passages: torch.Tensor, positive_index: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """Mean loss over questions. ``mask[i, j]`` is False for candidates that must not count
        as negatives of question ``i`` (another question's duplicate of its positive, or, in
        1-of-N training, passages of other questions)."""
        scores = similarity_matrix(questions, passages, self.similarity) * self.scale
        scores = scores.masked_fill(~mask, float("-inf"))
        return torch.nn.functional.cross_entropy(scores, positive_index)
