"""SpanReader's "no answer": a calibrated P(no answer) ranked among the answers, the score threshold,
the logistic fit, and the settings' checks (tiny random reader)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from dpr_components.readers.no_answer import FEATURES, NoAnswerModel, fit_no_answer
from haystack_integrations.components.readers.dpr.span_reader import SpanReader

PASSAGES = [
    Document(content="Hamlet is a tragedy written by William Shakespeare around 1600.", meta={"title": "Hamlet"}),
    Document(content="Mount Everest is the highest mountain above sea level.", meta={"title": "Everest"}),
    Document(content="Paris is the capital of France.", meta={"title": "Paris"}),
]


def _calibration(bias: float) -> dict[str, float]:
    return {**dict.fromkeys(FEATURES, 0.0), "bias": bias}


def _reader(tiny_reader_dir: Path, **settings: object) -> SpanReader:
    return SpanReader(model=str(tiny_reader_dir), precision="fp32", top_k=3, **settings)  # type: ignore[arg-type]


@pytest.mark.parametrize("bias, first_is_no_answer", [(-8.0, False), (8.0, True)])
def test_no_answer_is_ranked_by_its_probability(tiny_reader_dir: Path, bias: float, first_is_no_answer: bool) -> None:
    reader = _reader(tiny_reader_dir, no_answer=True, no_answer_calibration=_calibration(bias))
    answers = reader.run(query="who wrote hamlet", documents=PASSAGES)["answers"]
    no_answer = [a for a in answers if a.data is None]
    assert len(no_answer) == 1 and no_answer[0].meta["no_answer"] is True
    assert set(no_answer[0].meta["features"]) == set(FEATURES)
    assert no_answer[0].score == pytest.approx(1 / (1 + math.exp(-bias)))
    assert (answers[0].data is None) == first_is_no_answer
    assert [a.score for a in answers] == sorted((a.score for a in answers), reverse=True)
    spans = [a for a in answers if a.data is not None]
    assert len(spans) == 3 and sum(a.score for a in spans) <= 1 - no_answer[0].score + 1e-9
    assert all(a.meta["no_answer_probability"] == no_answer[0].score for a in spans)


def test_without_passages_no_answer_is_certain(tiny_reader_dir: Path) -> None:
    reader = _reader(tiny_reader_dir, no_answer=True, no_answer_calibration=_calibration(0.0))
    answers = reader.run(query="who wrote hamlet", documents=[])["answers"]
    assert [(a.data, a.score) for a in answers] == [(None, 1.0)]
    assert _reader(tiny_reader_dir).run(query="who wrote hamlet", documents=[])["answers"] == []


def test_score_threshold_leaves_out_unlikely_answers(tiny_reader_dir: Path) -> None:
    calibrated = {"no_answer": True, "no_answer_calibration": _calibration(0.0)}
    everything = _reader(tiny_reader_dir, **calibrated).run(query="who wrote hamlet", documents=PASSAGES)["answers"]
    threshold = sorted(a.score for a in everything if a.data is not None)[-1]  # keeps the best answer alone
    kept = _reader(tiny_reader_dir, score_threshold=threshold, **calibrated).run(
        query="who wrote hamlet", documents=PASSAGES
    )["answers"]
    assert [a.data for a in kept if a.data is not None] == [everything[0].data or everything[1].data]
    assert any(a.data is None for a in kept)  # the no-answer is never left out
    plain = _reader(tiny_reader_dir).run(query="who wrote hamlet", documents=PASSAGES)["answers"]
    assert (
        _reader(tiny_reader_dir, score_threshold=plain[0].score + 1).run(query="who wrote hamlet", documents=PASSAGES)[
            "answers"
        ]
        == []
    )


def test_default_reader_is_unchanged_and_settings_round_trip(tiny_reader_dir: Path) -> None:
    plain = _reader(tiny_reader_dir).run(query="who wrote hamlet", documents=PASSAGES)["answers"]
    assert all(a.data is not None and "no_answer_probability" not in a.meta for a in plain)
    reader = _reader(tiny_reader_dir, no_answer=True, no_answer_calibration=_calibration(1.5), score_threshold=0.1)
    again = SpanReader.from_dict(reader.to_dict())
    assert again.answer_settings == reader.answer_settings


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"no_answer": True}, "no_answer needs no_answer_calibration"),
        ({"no_answer": "yes"}, "no_answer must be true or false"),
        ({"no_answer_calibration": {"bias": 1.0}}, "no_answer_calibration must map exactly"),
        ({"no_answer_calibration": {**_calibration(0.0), "bias": float("nan")}}, r"\['bias'\] must be a finite"),
        ({"score_threshold": True}, "score_threshold must be a finite number"),
        ({"score_threshold": float("inf")}, "score_threshold must be a finite number"),
        ({"no_answer_threshold": 1.5}, "no_answer_threshold must be a probability from 0 to 1"),
    ],
)
def test_bad_settings_are_one_line(tiny_reader_dir: Path, settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _reader(tiny_reader_dir, **settings)


def test_fit_recovers_a_known_logistic_model() -> None:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(4000, 4)) * [2.0, 3.0, 1.0, 1.5]
    truth = NoAnswerModel(weights=(-1.0, 0.5, -2.0, 0.8), bias=0.3)
    labels = rng.random(4000) < truth.probability(features)
    fitted = fit_no_answer(features, labels)
    assert np.allclose(fitted.weights, truth.weights, atol=0.15) and abs(fitted.bias - truth.bias) < 0.15


def test_the_command_line_shows_no_answer(tiny_reader_dir: Path) -> None:
    from dpr_components.cli.output_format import answers_table

    reader = _reader(tiny_reader_dir, no_answer=True, no_answer_calibration=_calibration(8.0))
    table = answers_table(reader.run(query="who wrote hamlet", documents=PASSAGES)["answers"])
    assert table.splitlines()[0].startswith("  1. (no answer: the passages may not hold one)  (probability 1.000)")
