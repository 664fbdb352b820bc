"""The backward pass of one batch in one process: encode this process's shard of questions and
candidates (in one pass, or chunked with GradCache), gather every process's vectors, compute
the loss of the whole batch and back-propagate into the local encoders."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from dpr_components.dpr_data.examples import Ctx
from dpr_components.encoder_training import distributed
from dpr_components.encoder_training.batching import Batch
from dpr_components.encoder_training.grad_cache import chunked, grad_cache_backward
from dpr_components.encoder_training.model import BiEncoder


def backward_batch(
    model: BiEncoder,
    loss_fn: torch.nn.Module,
    batch: Batch,
    grad_cache_chunk: int | None = None,
    loss_scale: float = 1.0,
    passage_vectors: Callable[[Sequence[Ctx]], torch.Tensor] | None = None,
    encode_chunk: int | None = None,
) -> float:
    """Accumulate the gradient of ``loss_scale * loss(batch)`` into the model; returns the scaled loss.

    In a process group of N, call it in every process with the same global ``batch`` and sum
    the gradients afterwards (:func:`distributed.sum_gradients`). ``passage_vectors`` replaces the
    passage encoder by fixed vectors (question-side training, see ``frozen_passages.py``). ``encode_chunk``:
    passages encoded that many at a time, shortest first (:meth:`BiEncoder.encode_passages_by_length`)."""
    rank, _ = distributed.rank_and_world()
    questions = batch.questions[batch.question_shards[rank]]
    passages = batch.passages[batch.passage_shards[rank]]
    question_sizes = [s.stop - s.start for s in batch.question_shards]
    passage_sizes = [s.stop - s.start for s in batch.passage_shards]

    def loss_of(question_vectors: torch.Tensor, passage_vectors: torch.Tensor) -> torch.Tensor:
        q = distributed.gather_with_local_grad(question_vectors, question_sizes)
        p = distributed.gather_with_local_grad(passage_vectors, passage_sizes)
        return loss_fn(q, p, batch.positive_index, batch.mask) * loss_scale

    if grad_cache_chunk:
        return grad_cache_backward(
            model.encode_questions,
            model.encode_passages,
            [model.tokenize_questions(c) for c in chunked(questions, grad_cache_chunk)],
            [model.tokenize_passages(c) for c in chunked(passages, grad_cache_chunk)],
            loss_of,
        )
    if passage_vectors is not None:
        passage_side = passage_vectors(passages)
    elif encode_chunk:
        passage_side = model.encode_passages_by_length(passages, encode_chunk)
    else:
        passage_side = model.encode_passages(model.tokenize_passages(passages))
    loss = loss_of(model.encode_questions(model.tokenize_questions(questions)), passage_side)
    loss.backward()
    return float(loss.detach())
