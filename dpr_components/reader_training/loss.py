"""The reader's training loss (Karpukhin et al. 2020, section 6).

Per question: passage-selection log-likelihood of the positive among its m passages, plus the
marginal log-likelihood of the answer spans in the positive: ``log Σ_spans P(start)·P(end)``
over every occurrence of every answer (DPR marginalises because the gold occurrence is unknown).
Start and end softmaxes run over the positive's passage tokens only, as at prediction time.

The ``selection`` objective keeps the selection part alone (:func:`selection_loss`): a cross-encoder
trained to rank passages, whose span head stays untrained."""

from __future__ import annotations

from typing import Literal

import torch

Objective = Literal["reader", "selection"]  # span + selection log-likelihood, or selection alone

_NEG = -1e4  # a large negative logit that stays finite in bf16 and keeps gradients clean


def span_log_likelihood(
    start_logits: torch.Tensor,
    end_logits: torch.Tensor,
    passage_mask: torch.Tensor,
    spans: torch.Tensor,
    span_mask: torch.Tensor,
) -> torch.Tensor:
    """``log Σ_k P(start=s_k)·P(end=e_k)`` per question.

    :param start_logits: (questions, tokens) logits of the positive row.
    :param end_logits: (questions, tokens).
    :param passage_mask: (questions, tokens) True on passage tokens.
    :param spans: (questions, max spans, 2) start/end token positions in the row.
    :param span_mask: (questions, max spans) True for real spans; each question needs at least one.
    """
    if not bool(span_mask.any(dim=1).all()):
        raise ValueError("every question needs at least one answer span")
    log_start = torch.log_softmax(start_logits.masked_fill(~passage_mask, _NEG), dim=-1)
    log_end = torch.log_softmax(end_logits.masked_fill(~passage_mask, _NEG), dim=-1)
    per_span = log_start.gather(1, spans[..., 0]) + log_end.gather(1, spans[..., 1])
    return torch.logsumexp(per_span.masked_fill(~span_mask, float("-inf")), dim=-1)


def selection_log_likelihood(relevance_logits: torch.Tensor, row_mask: torch.Tensor) -> torch.Tensor:
    """Log-probability of passage 0 (the positive) among each question's passages.

    :param relevance_logits: (questions, m) selection logits.
    :param row_mask: (questions, m) True for real passages (questions may have fewer than m).
    """
    return torch.log_softmax(relevance_logits.masked_fill(~row_mask, _NEG), dim=-1)[:, 0]


def reader_loss(
    start_logits: torch.Tensor,
    end_logits: torch.Tensor,
    relevance_logits: torch.Tensor,
    passage_mask: torch.Tensor,
    row_mask: torch.Tensor,
    spans: torch.Tensor,
    span_mask: torch.Tensor,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Mean over questions of −(span log-likelihood + selection log-likelihood).

    Logits are per row (questions·m rows, positive first in each question's group of m);
    returns the loss and its two parts for logging."""
    questions, m = row_mask.shape
    tokens = start_logits.shape[-1]
    start = start_logits.view(questions, m, tokens)[:, 0]
    end = end_logits.view(questions, m, tokens)[:, 0]
    mask = passage_mask.view(questions, m, tokens)[:, 0]
    span_ll = span_log_likelihood(start, end, mask, spans, span_mask)
    selection_ll = selection_log_likelihood(relevance_logits.view(questions, m), row_mask)
    loss = -(span_ll + selection_ll).mean()
    parts = {"span_loss": -float(span_ll.detach().mean()), "selection_loss": -float(selection_ll.detach().mean())}
    return loss, parts


def selection_loss(relevance_logits: torch.Tensor, row_mask: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
    """Mean over questions of −selection log-likelihood alone (no span part is computed).

    ``relevance_logits`` has one logit per row (questions·m rows, positive first in each group);
    returns the loss and its parts as :func:`reader_loss` does, with ``span_loss`` 0."""
    questions, m = row_mask.shape
    selection_ll = selection_log_likelihood(relevance_logits.view(questions, m), row_mask)
    loss = -selection_ll.mean()
    return loss, {"span_loss": 0.0, "selection_loss": float(loss.detach())}
