"""The back-end benchmark's parts: turn order, and a model call inside our encoder giving our vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.encoding.backends import CallEncoder, calibration_batches, rotations, torch_call
from dpr_components.encoders.text_encoder import EncoderSettings, TextEncoder

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["Hamlet is a tragedy by William Shakespeare.", "Paris is the capital of France.", "short"]
TITLES: list[str | None] = ["Hamlet", "Paris", None]


def test_rotations_give_every_system_every_place() -> None:
    turns = list(rotations(["a", "b", "c"], chunks=2, repeats=3))
    assert [chunk for chunk, _ in turns] == [0, 1] * 3
    assert [order for _, order in turns[:3]] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    firsts = [order[0] for _, order in turns]
    assert sorted(firsts) == ["a", "a", "b", "b", "c", "c"]


def test_call_encoder_with_the_torch_call_makes_our_vectors(tiny_st_dir: Path) -> None:
    ours = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32"), batch_size=2)
    ours.load()
    wrapped = CallEncoder(torch_call(ours._model), batch_size=2, model=str(tiny_st_dir))
    np.testing.assert_allclose(wrapped.encode_passages(TEXTS, TITLES), ours.encode_passages(TEXTS, TITLES), atol=1e-6)


def test_calibration_batches_cover_every_passage(tiny_st_dir: Path) -> None:
    encoder = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32"))
    encoder.load()
    batches = calibration_batches(encoder, TEXTS * 3, TITLES * 3, size=4)
    assert [len(b["input_ids"]) for b in batches] == [4, 4, 1]
    assert all(set(b) >= {"input_ids", "attention_mask"} for b in batches)
