"""Listwise distillation from a re-ranker into the question encoder (as in RocketQA, Qu et al. 2021,
and DKRR, Izacard & Grave 2021): over each question's first-stage candidates, the KL divergence of
the student's distribution ``softmax(q·p / T_s)`` from the teacher's ``softmax(logit / T_t)``,
optionally plus the contrastive loss of the gold passages against every candidate of the batch."""

from __future__ import annotations

import torch


def listwise_kl(
    student: torch.Tensor,
    teacher: torch.Tensor,
    mask: torch.Tensor,
    student_temperature: float = 1.0,
    teacher_temperature: float = 1.0,
) -> torch.Tensor:
    """Mean over questions of KL(softmax(teacher / T_t) || softmax(student / T_s)), each softmax over the
    question's candidates where ``mask`` ([questions, candidates], bool) is True."""
    student_log = torch.log_softmax((student / student_temperature).masked_fill(~mask, float("-inf")), dim=-1)
    teacher_log = torch.log_softmax((teacher / teacher_temperature).masked_fill(~mask, float("-inf")), dim=-1)
    terms = teacher_log.exp() * (teacher_log - student_log)
    return terms.masked_fill(~mask, 0.0).sum(-1).mean()


def multi_positive_nll(scores: torch.Tensor, positives: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over questions with a positive of ``-log(sum of softmax over positives)``; ``scores``,
    ``positives`` and ``mask`` are ``[questions, candidates]`` (0 when no question has a positive)."""
    log_probs = torch.log_softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    kept = positives & mask
    has_positive = kept.any(-1)
    if not bool(has_positive.any()):
        return scores.sum() * 0.0
    positive_log = torch.logsumexp(log_probs.masked_fill(~kept, float("-inf")), dim=-1)
    return -positive_log[has_positive].mean()


class ListwiseDistillationLoss(torch.nn.Module):
    """``KL + contrastive_weight * NLL`` for question vectors ``[B, d]`` and each question's candidate
    vectors ``[B, K, d]`` (dot product: with normalised vectors a cosine, hence a small ``T_s``).

    The KL term reads each question's own candidates; the contrastive term scores each question against
    all ``B * K`` candidates of the batch (``batch_mask`` [B, B*K]: False for padding and for another
    question's copy of one of its positives) with ``batch_positives`` [B, B*K] marking its gold ones."""

    def __init__(
        self, student_temperature: float = 0.05, teacher_temperature: float = 1.0, contrastive_weight: float = 0.0
    ) -> None:
        super().__init__()
        if student_temperature <= 0 or teacher_temperature <= 0:
            raise ValueError(f"temperatures must be positive, got {student_temperature} and {teacher_temperature}")
        if contrastive_weight < 0:
            raise ValueError(f"contrastive_weight must be >= 0, got {contrastive_weight}")
        self.student_temperature = student_temperature
        self.teacher_temperature = teacher_temperature
        self.contrastive_weight = contrastive_weight

    def forward(
        self,
        questions: torch.Tensor,
        candidates: torch.Tensor,
        teacher: torch.Tensor,
        mask: torch.Tensor,
        batch_positives: torch.Tensor | None = None,
        batch_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The batch's loss (see the class docstring for the shapes)."""
        own = torch.einsum("bd,bkd->bk", questions, candidates)
        loss = listwise_kl(own, teacher, mask, self.student_temperature, self.teacher_temperature)
        if self.contrastive_weight and batch_positives is not None and batch_mask is not None:
            everything = questions @ candidates.reshape(-1, candidates.shape[-1]).T / self.student_temperature
            loss = loss + self.contrastive_weight * multi_positive_nll(everything, batch_positives, batch_mask)
        return loss
