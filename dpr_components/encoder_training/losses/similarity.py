"""Question-passage similarity functions compared in Karpukhin et al. 2020 (section 6.3:
dot product, L2 distance, cosine)."""

from __future__ import annotations

from typing import Literal

import torch

from dpr_components.utils.similarity import canonical_similarity

# the training settings' spellings (``dot`` is the paper's word for ``dot_product``; one vocabulary:
# dpr_components.utils.similarity)
Similarity = Literal["dot", "dot_product", "cosine", "l2"]
SIMILARITIES = ("dot", "dot_product", "cosine", "l2")


def similarity_matrix(questions: torch.Tensor, passages: torch.Tensor, kind: Similarity) -> torch.Tensor:
    """Scores of every question against every passage, shape ``[questions, passages]``.

    ``l2`` is the negative squared Euclidean distance: it ranks like the L2 distance and, unlike
    the distance itself, has a finite gradient when a question and passage vector coincide."""
    kind = canonical_similarity(kind)
    if kind == "dot_product":
        return questions @ passages.T
    if kind == "cosine":
        return torch.nn.functional.normalize(questions, dim=-1) @ torch.nn.functional.normalize(passages, dim=-1).T
    squared = (questions * questions).sum(-1, keepdim=True) + (passages * passages).sum(-1) - 2 * questions @ passages.T
    return -squared.clamp(min=0)
