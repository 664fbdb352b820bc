"""The back-end benchmark's parts: turn order, and a model call inside our encoder giving our vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.encoding.backends import calibration_batches, rotations, with_model
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.openvino_model import OpenVINOEncoderModel, convert_to_openvino
from dpr_components.encoders.text_encoder import TextEncoder

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["Hamlet is a tragedy by William Shakespeare.", "Paris is the capital of France.", "short"]
TITLES: list[str | None] = ["Hamlet", "Paris", None]


def test_rotations_give_every_system_every_place() -> None:
    turns = list(rotations(["a", "b", "c"], chunks=2, repeats=3))
    assert [chunk for chunk, _ in turns] == [0, 1] * 3
    assert [order for _, order in turns[:3]] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    firsts = [order[0] for _, order in turns]
    assert sorted(firsts) == ["a", "a", "b", "b", "c", "c"]


def test_an_openvino_model_inside_our_encoder_makes_our_vectors(tiny_st_dir: Path) -> None:
    pytest.importorskip("openvino")
    ours = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32"), batch_size=2)
    ours.load()
    converted = convert_to_openvino(ours._model)
    wrapped = with_model(OpenVINOEncoderModel(converted, ours._model.config, "f32", 1), 2, str(tiny_st_dir))
    assert wrapped._model is not ours._model  # the shared torch model stays in place for other encoders
    np.testing.assert_allclose(wrapped.encode_passages(TEXTS, TITLES), ours.encode_passages(TEXTS, TITLES), atol=1e-5)


def test_openvino_on_one_or_two_streams_gives_the_same_vectors(tiny_st_dir: Path) -> None:
    pytest.importorskip("openvino")
    ours = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32"), batch_size=3)
    ours.load()
    converted = convert_to_openvino(ours._model)
    expected = ours.encode_passages(TEXTS * 3, TITLES * 3)
    for streams in (1, 2):
        model = OpenVINOEncoderModel(converted, ours._model.config, "f32", 2, streams=streams)
        wrapped = with_model(model, 3, str(tiny_st_dir))
        np.testing.assert_allclose(wrapped.encode_passages(TEXTS * 3, TITLES * 3), expected, atol=1e-5)
    with pytest.raises(ValueError, match="streams must be between 1 and the 2 threads, got 3"):
        OpenVINOEncoderModel(converted, ours._model.config, "f32", 2, streams=3)


def test_calibration_batches_cover_every_passage(tiny_st_dir: Path) -> None:
    encoder = TextEncoder(EncoderSettings(model=str(tiny_st_dir), precision="fp32"))
    encoder.load()
    batches = calibration_batches(encoder, TEXTS * 3, TITLES * 3, size=4)
    assert [len(b["input_ids"]) for b in batches] == [4, 4, 1]
    assert all(set(b) >= {"input_ids", "attention_mask"} for b in batches)
