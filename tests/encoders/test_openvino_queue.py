"""OpenVINO's ring of infer requests: many small batches in flight at once give the vectors of one
torch run in input order; callers still see ``batch_size`` passages at a time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.openvino_model import REQUEST_ROWS, HiddenStates, OpenVINOEncoderModel
from dpr_components.encoders.text_encoder import TextEncoder

pytest.importorskip("openvino")

# Lengths differ so that batches pad to different widths.
TEXTS = [("word " * n).strip() for n in (3, 40, 7, 1, 25, 12, 60, 2, 9, 33, 5, 18, 4, 50, 8, 14, 6, 28, 11, 2)] * 3
TITLES: list[str | None] = [f"Title {i}" if i % 4 else None for i in range(len(TEXTS))]


def _encoder(model_dir: Path, backend: str, batch_size: int, pooling: str = "auto") -> TextEncoder:
    settings = EncoderSettings(model=str(model_dir), precision="fp32", backend=backend, pooling=pooling)  # type: ignore[arg-type]
    return TextEncoder(settings, batch_size=batch_size)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_queued_batches_give_torch_vectors_in_input_order(tiny_bert_dir: Path, pooling: str) -> None:
    expected = _encoder(tiny_bert_dir, "torch", 32, pooling).encode_passages(TEXTS, TITLES)
    encoder = _encoder(tiny_bert_dir, "openvino", 32, pooling)
    assert encoder.rows_per_batch == REQUEST_ROWS < 32 < len(TEXTS)
    np.testing.assert_allclose(encoder.encode_passages(TEXTS, TITLES), expected, atol=1e-4)
    # The mean over real tokens comes out of the model itself, beside the hidden states.
    assert len(encoder._model._compiled.outputs) == 2


def test_each_passage_is_handed_on_once_a_batch_size_at_a_time(tiny_bert_dir: Path) -> None:
    encoder = _encoder(tiny_bert_dir, "openvino", 20)
    handed: list[tuple[np.ndarray, np.ndarray]] = []
    vectors = encoder.encode_passages(
        TEXTS, TITLES, on_batch=lambda positions, batch: handed.append((positions, batch))
    )
    positions = np.concatenate([p for p, _ in handed])
    assert sorted(positions.tolist()) == list(range(len(TEXTS)))
    # Requests of 16 rows are handed on once 20 rows are done: 32, 32 (and the rest at the end).
    assert [len(p) for p, _ in handed] == [32, 28]
    for p, batch in handed:
        np.testing.assert_array_equal(batch, vectors[p])


def test_a_small_batch_size_is_the_request_size(tiny_bert_dir: Path) -> None:
    assert _encoder(tiny_bert_dir, "openvino", 4).rows_per_batch == 4
    assert _encoder(tiny_bert_dir, "torch", 64).rows_per_batch == 64


def test_a_failing_caller_leaves_no_request_running(tiny_bert_dir: Path) -> None:
    encoder = _encoder(tiny_bert_dir, "openvino", 4)
    encoder.load()
    model = encoder._model
    assert isinstance(model, OpenVINOEncoderModel)
    batches = encoder._batches(TEXTS, TITLES, 4)
    finished = model.run_queued(batches, encoder.pooling)
    next(finished)
    finished.close()  # waits for the requests in flight; the model keeps working after
    np.testing.assert_allclose(
        encoder.encode_passages(TEXTS[:5], TITLES[:5]),
        _encoder(tiny_bert_dir, "torch", 4).encode_passages(TEXTS[:5], TITLES[:5]),
        atol=1e-4,
    )


def test_bert_takes_its_padding_mask_as_one_row_per_sequence(tiny_bert_dir: Path) -> None:
    encoder = _encoder(tiny_bert_dir, "torch", 8)
    encoder.load()
    wrapped = HiddenStates(encoder._model)
    assert wrapped.mask_4d
    batch = next(encoder._batches(TEXTS, TITLES, 8))[1]
    token_types = batch.get("token_type_ids", torch.zeros_like(batch["input_ids"]))
    with torch.no_grad():
        four_d = wrapped(batch["input_ids"], batch["attention_mask"], token_types)
        two_d = encoder._model(**batch).last_hidden_state
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(four_d[real], two_d[real], atol=1e-5, rtol=1e-5)
