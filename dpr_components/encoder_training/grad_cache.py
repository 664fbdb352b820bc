"""GradCache (Gao et al. 2021, "Scaling Deep Contrastive Learning Batch Size under Memory
Limited Setup"): the gradient of a large in-batch-negatives batch in the memory of one chunk.

1. Encode every chunk without a graph and keep only the vectors (the RNG state before each
   chunk is recorded).
2. Compute the loss on all vectors at once and its gradient with respect to the vectors.
3. Re-encode each chunk with a graph, replaying its recorded RNG state so dropout draws the
   same masks as in step 1, and back-propagate that chunk's cached vector gradient.

The result is the gradient of the whole batch's loss, equal (up to float rounding) to encoding
the batch in one pass when the passes draw the same dropout masks, and exactly equal without
dropout. The cost is a second forward pass (about a third more compute).

Gradient accumulation is not a substitute: accumulating k micro-batches of size b averages k
losses each computed over b questions and their own candidates, so each question still sees
only the negatives of its micro-batch. GradCache computes one loss over all k*b questions, so
every question is scored against every candidate of the whole batch."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

Encode = Callable[[Any], torch.Tensor]
LossOf = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class RandomState:
    """The torch CPU (and, when in use, CUDA) generator state at construction, replayable later."""

    def __init__(self) -> None:
        self.cpu = torch.get_rng_state()
        self.cuda = (
            torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
        )

    @contextlib.contextmanager
    def replay(self) -> Iterator[None]:
        """Run the block from the recorded state; the global generators are untouched afterwards."""
        devices = list(range(torch.cuda.device_count())) if self.cuda is not None else []
        with torch.random.fork_rng(devices=devices):
            torch.set_rng_state(self.cpu)
            if self.cuda is not None:
                torch.cuda.set_rng_state_all(self.cuda)
            yield


def _embed_without_graph(encode: Encode, chunks: Sequence[Any]) -> tuple[torch.Tensor, list[RandomState]]:
    states, vectors = [], []
    with torch.no_grad():
        for chunk in chunks:
            states.append(RandomState())
            vectors.append(encode(chunk))
    return torch.cat(vectors), states


def _backward_chunks(encode: Encode, chunks: Sequence[Any], states: Sequence[RandomState], grad: torch.Tensor) -> None:
    start = 0
    for chunk, state in zip(chunks, states, strict=True):
        with state.replay():
            vectors = encode(chunk)
        vectors.backward(grad[start : start + len(vectors)])
        start += len(vectors)


def grad_cache_backward(
    encode_questions: Encode,
    encode_passages: Encode,
    question_chunks: Sequence[Any],
    passage_chunks: Sequence[Any],
    loss_of: LossOf,
) -> float:
    """Accumulate into the parameters' ``.grad`` the gradient of ``loss_of(questions, passages)``
    where the vectors are the concatenated encodings of the chunks; returns the loss value.

    ``loss_of`` may gather vectors from other processes (DDP); only the local vectors' gradient
    flows back here."""
    questions, question_states = _embed_without_graph(encode_questions, question_chunks)
    passages, passage_states = _embed_without_graph(encode_passages, passage_chunks)
    questions.requires_grad_(True)
    passages.requires_grad_(True)
    loss = loss_of(questions, passages)
    loss.backward()
    assert questions.grad is not None and passages.grad is not None
    _backward_chunks(encode_questions, question_chunks, question_states, questions.grad)
    _backward_chunks(encode_passages, passage_chunks, passage_states, passages.grad)
    return float(loss.detach())


def chunked(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    if size < 1:
        raise ValueError(f"chunk size must be positive, got {size}")
    return [items[i : i + size] for i in range(0, len(items), size)]
