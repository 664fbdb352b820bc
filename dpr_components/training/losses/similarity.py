"""Question-passage similarity functions compared in Karpukhin et al. 2020 (section 6.3:
dot product, L2 distance, cosine)."""

from __future__ import annotations

from typing import Literal

import torch

Similarity = Literal["dot", "cosine", "l2"]
SIMILARITIES = ("dot", "cosine", "l2")


def similarity_matrix(questions: torch.Tensor, passages: torch.Tensor, kind: Similarity) -> torch.Tensor:
    """Scores of every question against every passage, shape ``[questions, passages]``.

    ``l2`` is the negative squared Euclidean distance: it ranks like the L2 distance and, unlike
    the distance itself, has a finite gradient when a question and passage vector coincide."""
    if kind == "dot":
        return questions @ passages.T
    if kind == "cosine":
        return torch.nn.functional.normalize(questions, dim=-1) @ torch.nn.functional.normalize(passages, dim=-1).T
    if kind == "l2":
        squared = (questions * questions).sum(-1, keepdim=True) + (passages * passages).sum(-1) - 2 * questions @ passages.T
        return -squared.clamp(min=0)
    raise ValueError(f"similarity must be one of {SIMILARITIES}, got {kind!r}")
