"""GradCache and length-ordered chunks give the gradient of the whole batch: equal to one uncached pass on a
tiny model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dpr_components.dpr_data.examples import Ctx, TrainingExample
from dpr_components.encoder_training.batching import BatchBuilder, BatchSettings
from dpr_components.encoder_training.losses import build_loss
from dpr_components.encoder_training.model import BiEncoder
from dpr_components.encoder_training.step import backward_batch

EXAMPLES = [
    TrainingExample(
        question=f"who wrote the {i}th play about topic number {i}" + " again" * (i % 3),
        answers=[f"answer {i}"],
        positives=[Ctx(f"Title {i}", f"passage {i} about the topic, mentioning answer {i}." + " filler" * i)],
        hard_negatives=[Ctx(f"Other {i}", f"an unrelated hard negative {i}" + " words" * (2 * i))],
        id=str(i),
    )
    for i in range(6)
]


def _gradients(
    model: BiEncoder, chunk: int | None, seed: int = 0, encode_chunk: int | None = None
) -> dict[str, torch.Tensor]:
    batch = BatchBuilder(EXAMPLES, BatchSettings(negatives=1)).build(list(range(6)), epoch=0, step=0)
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    backward_batch(model, build_loss("nll", "dot"), batch, grad_cache_chunk=chunk, encode_chunk=encode_chunk)
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.fixture(scope="module")
def model(tiny_bert_dir: Path) -> BiEncoder:
    return BiEncoder.from_pretrained(str(tiny_bert_dir), dropout=0.1, max_length=64)


def test_grad_cache_equals_one_pass_without_dropout(model: BiEncoder) -> None:
    model.eval()
    full = _gradients(model, chunk=None)
    cached = _gradients(model, chunk=2)
    assert full.keys() == cached.keys() and len(full) > 10
    for name in full:
        torch.testing.assert_close(cached[name], full[name], rtol=1e-4, atol=1e-6, msg=name)


def test_length_ordered_chunks_give_the_vectors_and_gradient_of_one_pass(model: BiEncoder) -> None:
    model.eval()
    passages = [c for e in EXAMPLES for c in (*e.positives, *e.hard_negatives)]
    with torch.no_grad():
        one_pass = model.encode_passages(model.tokenize_passages(passages))
        chunked = model.encode_passages_by_length(passages, 5)
    torch.testing.assert_close(chunked, one_pass, rtol=1e-4, atol=1e-5)  # in the passages' own order
    lengths = [len(f["input_ids"]) for f in model.passage_features(passages)]
    assert lengths != sorted(lengths)  # the chunks were not already in order
    full = _gradients(model, chunk=None)
    by_length = _gradients(model, chunk=None, encode_chunk=3)
    assert full.keys() == by_length.keys()
    for name in full:
        torch.testing.assert_close(by_length[name], full[name], rtol=1e-4, atol=1e-6, msg=name)


def test_grad_cache_replays_dropout_per_chunk(model: BiEncoder) -> None:
    """With dropout, each chunk's second forward must draw the masks of its first forward: the
    gradient then equals that of encoding the same chunks with a graph from the same seed."""
    model.train()
    batch = BatchBuilder(EXAMPLES, BatchSettings(negatives=1)).build(list(range(6)), epoch=0, step=0)
    loss_fn = build_loss("nll", "dot")
    model.zero_grad(set_to_none=True)
    torch.manual_seed(7)
    q = torch.cat([model.encode_questions(model.tokenize_questions(batch.questions[i : i + 4])) for i in (0, 4)])
    p = torch.cat([model.encode_passages(model.tokenize_passages(batch.passages[i : i + 4])) for i in (0, 4, 8)])
    loss_fn(q, p, batch.positive_index, batch.mask).backward()
    after_reference = torch.rand(1)
    reference = {name: t.grad.clone() for name, t in model.named_parameters() if t.grad is not None}

    cached = _gradients(model, chunk=4, seed=7)
    for name, expected in reference.items():
        torch.testing.assert_close(cached[name], expected, rtol=1e-4, atol=1e-6, msg=name)
    # the replayed second pass leaves the global generator where the first pass left it
    assert torch.rand(1).item() == after_reference.item()
    # and without replay the masks (so the gradients) would differ
    embeddings = "question_model.question_encoder.bert_model.embeddings.word_embeddings.weight"
    assert not torch.allclose(_gradients(model, chunk=None, seed=7)[embeddings], cached[embeddings])


def test_speed_variants_parse_batch_precision_and_chunks() -> None:
    from training.retriever.measure_speed import variant_settings

    assert variant_settings("plain") == {}
    assert variant_settings("bs128+bf16+grad_cache:32") == {"batch_size": 128, "bf16": True, "grad_cache_chunk": 32}
    assert variant_settings("one_pass") == {"encode_chunk": None}
    assert variant_settings("encode_chunk:8") == {"encode_chunk": 8}
    with pytest.raises(ValueError, match="unknown variant 'fast'"):
        variant_settings("bf16+fast")
