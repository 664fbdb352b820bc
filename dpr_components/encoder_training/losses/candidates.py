"""The shared shape of the bi-encoder losses: score every question against the candidate passages,
then turn the score matrix into a loss."""

from __future__ import annotations

import torch

from dpr_components.encoder_training.losses.similarity import Similarity, similarity_matrix


class CandidateLoss(torch.nn.Module):
    """A loss over the scores ``similarity`` gives each question's candidate passages."""

    def __init__(self, similarity: Similarity = "dot") -> None:
        super().__init__()
        self.similarity = similarity

    def forward(
        self, questions: torch.Tensor, passages: torch.Tensor, positive_index: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """Mean loss over questions. ``mask[i, j]`` is False for candidates that must not count
        as negatives of question ``i`` (another question's duplicate of its positive, or, in
        1-of-N training, passages of other questions)."""
        return self.score_loss(similarity_matrix(questions, passages, self.similarity), positive_index, mask)

    def score_loss(self, scores: torch.Tensor, positive_index: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The loss of the ``[questions, candidates]`` score matrix."""
        raise NotImplementedError
