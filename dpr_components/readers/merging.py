"""One answer per answer string: spans read from several passages that say the same thing, merged.

Two spans are the same answer when their texts are equal after SQuAD normalisation (lower case, no
punctuation or articles, whitespace collapsed: what exact match compares,
:func:`dpr_components.evaluation.answer_metrics.normalize_answer`). The merged answer's score is the
sum of theirs; its passage, offsets and other details are the best-scored span's. A span whose text
normalises to nothing (e.g. "the") is merged only with spans of the same text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dpr_components.evaluation.answer_metrics import normalize_answer
from dpr_components.readers.predict import SpanPrediction


@dataclass(frozen=True)
class MergedAnswer:
    """The best span of an answer string, the summed score of every span of it, and how many there were."""

    prediction: SpanPrediction
    score: float
    spans: int = 1


def answer_key(text: str) -> str:
    """What two spans must share to be one answer: the normalised text (the text itself when that is empty)."""
    return normalize_answer(text) or text


def merge_by_text(predictions: Sequence[SpanPrediction], scores: Sequence[float]) -> list[MergedAnswer]:
    """``predictions`` (with the ``scores`` they are returned with) merged by :func:`answer_key`, by summed
    score, best first; of equal sums the answer seen first in ``predictions`` leads. Each keeps its
    best-scored span (of equal scores, the first)."""
    best: dict[str, tuple[SpanPrediction, float]] = {}
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for prediction, score in zip(predictions, scores, strict=True):
        key = answer_key(prediction.text)
        if key not in best or score > best[key][1]:
            best[key] = (prediction, float(score))
        totals[key] = totals.get(key, 0.0) + float(score)
        counts[key] = counts.get(key, 0) + 1
    merged = [MergedAnswer(best[key][0], totals[key], counts[key]) for key in totals]
    return sorted(merged, key=lambda answer: -answer.score)  # stable: ties keep the first-seen order
