"""Bi-encoder losses, one per module: :class:`NLLLoss` (DPR's) and :class:`TripletLoss`.

Every loss takes question vectors ``[B, d]``, candidate passage vectors ``[C, d]``, the index of
each question's positive among the candidates ``[B]`` and a boolean mask ``[B, C]`` of the
candidates that count for each question. The listwise distillation loss, which reads each question's
own candidates and a teacher's scores instead, is in :mod:`.distillation` (used by ``encoder_training/distillation.py``)."""

from __future__ import annotations

from typing import Literal

import torch

from dpr_components.encoder_training.losses.nll import NLLLoss
from dpr_components.encoder_training.losses.similarity import (
    SIMILARITIES,
    Similarity,
    similarity_matrix,
)
from dpr_components.encoder_training.losses.triplet import TripletLoss

LossName = Literal["nll", "triplet"]
LOSSES = ("nll", "triplet")
# sentence-transformers' MultipleNegativesRankingLoss uses scale 20 for cosine similarity.
DEFAULT_COSINE_SCALE = 20.0


def default_scale(similarity: Similarity) -> float:
    return DEFAULT_COSINE_SCALE if similarity == "cosine" else 1.0


def build_loss(
    name: LossName, similarity: Similarity, scale: float | None = None, margin: float = 1.0
) -> torch.nn.Module:
    if similarity not in SIMILARITIES:
        raise ValueError(f"similarity must be one of {SIMILARITIES}, got {similarity!r}")
    if name == "nll":
        return NLLLoss(similarity, default_scale(similarity) if scale is None else scale)
    if name == "triplet":
        return TripletLoss(similarity, margin)
    raise ValueError(f"loss must be one of {LOSSES}, got {name!r}")


__all__ = ["LOSSES", "NLLLoss", "TripletLoss", "build_loss", "default_scale", "similarity_matrix"]
