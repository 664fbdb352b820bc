"""SpanReader's ``merge_answers``: one answer per answer string (SQuAD normalisation), its score the sum
of its spans', its passage the best span's; "no answer" apart; the setting's round trip and check."""

from __future__ import annotations

from pathlib import Path

import pytest
from haystack import Document

from dpr_components.evaluation.answer_metrics import normalize_answer
from dpr_components.readers.merging import merge_by_text
from dpr_components.readers.no_answer import FEATURES
from dpr_components.readers.predict import SpanPrediction
from haystack_integrations.components.readers.dpr.span_reader import SpanReader

pytestmark = pytest.mark.usefixtures("one_thread")

HAMLET = "Hamlet is a tragedy written by William Shakespeare around 1600."
# The same passage twice (other ids): a reader reads the same span from both; a third passage besides.
PASSAGES = [
    Document(id="a", content=HAMLET, meta={"title": "Hamlet"}),
    Document(id="b", content="Mount Everest is the highest mountain above sea level.", meta={"title": "Everest"}),
    Document(id="c", content=HAMLET, meta={"title": "Hamlet"}),
]


def _span(passage: int, text: str, start: int = 0) -> SpanPrediction:
    return SpanPrediction(passage, start, start + len(text), text, 1.0, 0.5, 0.5)


def test_same_string_after_normalisation_is_one_answer_with_the_summed_score() -> None:
    predictions = [_span(0, "Guido van Rossum"), _span(1, "Python"), _span(2, "guido van Rossum."), _span(3, "the")]
    merged = merge_by_text(predictions, [0.5, 0.3, 0.15, 0.05])
    assert [(m.prediction.text, m.spans) for m in merged] == [("Guido van Rossum", 2), ("Python", 1), ("the", 1)]
    assert [m.score for m in merged] == pytest.approx([0.65, 0.3, 0.05])
    # the summed score can overtake a better single span; the answer keeps its own best span
    merged = merge_by_text(predictions[:3], [0.2, 0.3, 0.25])
    assert [m.prediction.passage_index for m in merged] == [2, 1]  # "guido van Rossum." scored 0.25 > 0.2
    assert merged[0].score == pytest.approx(0.45)
    # texts that normalise to nothing merge only with the same text
    assert len(merge_by_text([_span(0, "the"), _span(1, "a")], [0.5, 0.5])) == 2


def test_two_passages_one_string_one_answer_with_the_summed_probability(tiny_reader_dir: Path) -> None:
    settings = {"model": str(tiny_reader_dir), "precision": "fp32", "top_k": 5}
    spans = SpanReader(**settings).run(query="who wrote hamlet", documents=PASSAGES)["answers"]  # type: ignore[arg-type]
    merged = SpanReader(**settings, merge_answers=True).run(query="who wrote hamlet", documents=PASSAGES)["answers"]  # type: ignore[arg-type]
    twins = [a for a in spans if a.document.id in ("a", "c")]
    assert len(twins) == 2 and twins[0].data == twins[1].data  # the same span read from both copies
    assert "merged_spans" not in spans[0].meta
    same = [a for a in merged if normalize_answer(a.data) == normalize_answer(twins[0].data)]
    assert len(same) == 1 and same[0].meta["merged_spans"] == 2
    assert same[0].score == pytest.approx(twins[0].score + twins[1].score)
    assert same[0].document.id == twins[0].document.id and same[0].document_offset == twins[0].document_offset
    assert len(merged) == len({normalize_answer(a.data) or a.data for a in spans})
    assert [a.score for a in merged] == sorted((a.score for a in merged), reverse=True)


def test_no_answer_stays_apart_and_the_scores_still_sum_to_its_complement(tiny_reader_dir: Path) -> None:
    calibration = {**dict.fromkeys(FEATURES, 0.0), "bias": 0.0}  # P(no answer) = 0.5
    reader = SpanReader(
        model=str(tiny_reader_dir), precision="fp32", top_k=5, no_answer=True, no_answer_calibration=calibration,
        merge_answers=True,
    )  # fmt: skip
    answers = reader.run(query="who wrote hamlet", documents=PASSAGES)["answers"]
    no_answer = [a for a in answers if a.data is None]
    assert len(no_answer) == 1 and no_answer[0].score == pytest.approx(0.5)
    assert sum(a.score for a in answers if a.data is not None) == pytest.approx(0.5)
    assert len(answers) == 3  # two answer strings and the no-answer


def test_merge_answers_round_trips_and_is_checked(tiny_reader_dir: Path) -> None:
    reader = SpanReader(model=str(tiny_reader_dir), merge_answers=True)
    data = reader.to_dict()
    assert data["init_parameters"]["merge_answers"] is True
    assert SpanReader.from_dict(data).merge_answers is True
    assert SpanReader(model=str(tiny_reader_dir)).to_dict()["init_parameters"]["merge_answers"] is False
    with pytest.raises(ValueError, match="merge_answers must be true or false, got 'yes'"):
        SpanReader(model=str(tiny_reader_dir), merge_answers="yes")  # type: ignore[arg-type]
