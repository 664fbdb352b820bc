"""Validation during training, on a fixed subset of dev questions:

* DPR's average rank (``validate_average_rank`` in DPR's trainer): every question is scored
  against the pooled candidates of all validation questions (each question's positive and up to
  ``hard_negatives`` of its hard negatives, each distinct text once); the 1-based rank of its
  positive, averaged. Lower is better.
* Top-k accuracy against a sampled passage pool: the same candidates plus ``pool_size``
  passages sampled from the corpus; a question counts at k if one of its k best passages
  contains an answer (DPR's ``has_answer``), as in the final evaluation over the full pool.

Both are computed from one encoding of the candidates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from dpr_components.dpr_data.examples import Ctx, TrainingExample, ctx_key
from dpr_components.encoder_training.losses.similarity import similarity_matrix
from dpr_components.encoder_training.model import BiEncoder
from dpr_components.evaluation.retrieval_metrics import (
    RetrievalResult,
    answer_hits,
    first_hit_rank,
)
from dpr_components.runs.finite import NonFiniteScores

DEFAULT_KS = (1, 5, 20, 100)


@dataclass
class ValidationSet:
    questions: list[str]
    answers: list[list[str]]
    passages: list[Ctx]
    positive_index: list[int]
    ks: tuple[int, ...] = DEFAULT_KS


def build_validation_set(
    examples: Sequence[TrainingExample],
    n_questions: int,
    hard_negatives: int = 5,
    corpus: Sequence[Ctx] | None = None,
    pool_size: int = 0,
    seed: int = 0,
    ks: tuple[int, ...] = DEFAULT_KS,
) -> ValidationSet:
    """A fixed validation subset: the first ``n_questions`` examples after a seeded shuffle."""
    if not examples:
        raise ValueError("no validation examples")
    rng = np.random.default_rng(seed)
    chosen = [examples[int(i)] for i in rng.permutation(len(examples))[:n_questions]]
    passages: list[Ctx] = []
    index_of: dict[str, int] = {}

    def add(ctx: Ctx) -> int:
        key = ctx_key(ctx)
        if key not in index_of:
            index_of[key] = len(passages)
            passages.append(ctx)
        return index_of[key]

    positive_index = [add(e.positives[0]) for e in chosen]
    for example in chosen:
        for ctx in example.hard_negatives[:hard_negatives]:
            add(ctx)
    if corpus and pool_size:
        for i in rng.choice(len(corpus), size=min(pool_size, len(corpus)), replace=False):
            add(corpus[int(i)])
    return ValidationSet(
        questions=[e.question for e in chosen],
        answers=[list(e.answers) for e in chosen],
        passages=passages,
        positive_index=positive_index,
        ks=ks,
    )


@torch.no_grad()
def _encode(model: BiEncoder, items: Sequence, questions: bool, batch_size: int) -> torch.Tensor:
    out = []
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        if questions:
            out.append(model.encode_questions(model.tokenize_questions(chunk)))
        else:
            out.append(model.encode_passages(model.tokenize_passages(chunk)))
    return torch.cat(out)


def validate(
    model: BiEncoder,
    data: ValidationSet,
    score: str = "dot",
    batch_size: int = 64,
    passage_vectors: Callable[[Sequence[Ctx]], torch.Tensor] | None = None,
) -> dict[str, float]:
    """Average rank and top-k accuracy of ``model`` on ``data`` (the model is left in its mode);
    ``passage_vectors`` gives fixed passage vectors (question-side training) instead of E_P."""
    was_training = model.training
    model.eval()
    try:
        questions = _encode(model, data.questions, True, batch_size)
        if passage_vectors is not None:
            passages = passage_vectors(data.passages)
        else:
            passages = _encode(model, data.passages, False, batch_size)
    finally:
        model.train(was_training)
    scores = similarity_matrix(questions, passages, score)  # type: ignore[arg-type]
    if not bool(torch.isfinite(scores).all()):  # NaN compares false: every positive would rank first
        raise NonFiniteScores("the model computes NaN or infinite validation scores")
    # Passages are unique by text (see build_validation_set), so no candidate duplicates a positive.
    positive_scores = scores[torch.arange(len(data.positive_index)), torch.tensor(data.positive_index)]
    ranks = (1 + (scores > positive_scores[:, None]).sum(1)).tolist()
    max_k = min(max(data.ks), len(data.passages))
    top = torch.topk(scores, k=max_k, dim=1).indices.tolist()
    hit_ranks = [
        first_hit_rank(answer_hits(answers, [data.passages[i].text for i in row])) if answers else None
        for answers, row in zip(data.answers, top, strict=True)
    ]
    result = RetrievalResult.from_ranks(hit_ranks, max_k=max_k)
    metrics = {"avg_rank": float(np.mean(ranks)), "mrr": result.mrr}
    # With fewer passages than k, every passage is retrieved: top-k equals top-(pool size).
    metrics.update({f"top{k}": result.accuracy(min(k, max_k)) for k in data.ks})
    return metrics
