"""Whether the passages a reader was given hold an answer at all: a calibrated probability.

A span reader always finds a best span, also in passages that say nothing about the question. Four
signals of a reading tell the two cases apart: the best passage's selection logit (the reader's raw
relevance, before the softmax over passages hides how relevant the best one is), the best span's score
(start + end logit), the best span's share of the candidates' scores, and the best dense similarity of
the passages read to the question (``meta["dense_score"]``, which the hybrid retrieval records: 0 when
the documents carry none). Each is on a scale of its own model, not of the corpus: BM25 scores, which
grow with a corpus's size, are left out so that a calibration holds on the user's own corpus too. A
logistic model over them (Platt 1999), fitted on questions held aside from training, half of them made
unanswerable by removing every passage that holds an answer (``training/reader/fit_no_answer.py``), gives
P(no answer). The answers' scores become (1 − P(no answer)) × their share of the candidates' scores;
"no answer" takes first place exactly when P(no answer) reaches the chosen threshold."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dpr_components.readers.predict import SpanPrediction

FEATURES = ("selection_logit", "span_score", "log_share", "dense_similarity")
_SMALLEST_SHARE = 1e-12


@dataclass(frozen=True)
class NoAnswerModel:
    """P(no answer) = σ(bias + Σ weight · feature) over :data:`FEATURES` of a question's reading."""

    weights: tuple[float, ...]
    bias: float

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> NoAnswerModel:
        """From ``{"selection_logit": w1, ..., "bias": b}`` (every name of :data:`FEATURES`); one-line ``ValueError`` otherwise."""
        if not isinstance(data, Mapping) or set(data) != {*FEATURES, "bias"}:
            raise ValueError(
                f"no_answer_calibration must map exactly {[*FEATURES, 'bias']} to numbers, got {data!r}; "
                "training/reader/fit_no_answer.py fits one"
            )
        values = {}
        for name, value in data.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"no_answer_calibration[{name!r}] must be a finite number, got {value!r}")
            values[name] = float(value)
        return cls(weights=tuple(values[name] for name in FEATURES), bias=values["bias"])

    def to_dict(self) -> dict[str, float]:
        return {**dict(zip(FEATURES, self.weights, strict=True)), "bias": self.bias}

    def probability(self, features: np.ndarray) -> np.ndarray:
        """P(no answer) of each row of ``features`` (columns in :data:`FEATURES` order)."""
        return 1.0 / (1.0 + np.exp(-(features @ np.array(self.weights) + self.bias)))


def answer_shares(scores: Sequence[float]) -> list[float]:
    """Each candidate span's share of the candidates' ranking ``scores`` (the shares sum to 1)."""
    values = np.array(scores, dtype=np.float64)
    total = values.sum()
    if not total > 0:
        return [1.0 / len(values)] * len(values)
    return (values / total).tolist()


def no_answer_features(
    predictions: Sequence[SpanPrediction], scores: Sequence[float], similarities: Sequence[float | None]
) -> np.ndarray:
    """The features of one question's reading: ``predictions`` best first as the reader ranks them, the
    ``scores`` it ranks them by, and the dense similarities of the passages it read (``None``: none given)."""
    share = answer_shares(scores)[0]
    given = [float(similarity) for similarity in similarities if similarity is not None]
    return np.array(
        [
            max(p.selection_logit for p in predictions),
            predictions[0].span_score,
            math.log(max(share, _SMALLEST_SHARE)),
            max(given) if given else 0.0,
        ]
    )


def fit_no_answer(features: np.ndarray, no_answer: np.ndarray, l2: float = 1e-3) -> NoAnswerModel:
    """The logistic model of ``no_answer`` (1: the passages held no answer) on ``features``, by Newton's
    method on the log-likelihood with a small L2 penalty (so separable data still has a finite fit)."""
    x = np.column_stack([features, np.ones(len(features))])
    y = no_answer.astype(np.float64)
    theta = np.zeros(x.shape[1])
    penalty = np.diag([l2] * features.shape[1] + [0.0])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ theta)))
        gradient = x.T @ (p - y) + penalty @ theta
        hessian = (x * (p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    return NoAnswerModel(weights=tuple(float(w) for w in theta[:-1]), bias=float(theta[-1]))


@dataclass(frozen=True)
class AnswerSettings:
    """What a reader returns besides its spans: "no answer" (its calibration and the probability at which it
    takes first place) and a score threshold for the answers."""

    no_answer: bool = False
    calibration: NoAnswerModel | None = None
    no_answer_threshold: float = 0.5
    score_threshold: float | None = None

    @classmethod
    def checked(
        cls,
        no_answer: object,
        calibration: Mapping[str, object] | None,
        no_answer_threshold: object = 0.5,
        score_threshold: object = None,
    ) -> AnswerSettings:
        """The settings from a component's init parameters; a one-line ``ValueError`` naming a bad one."""
        if not isinstance(no_answer, bool):
            raise ValueError(f"no_answer must be true or false, got {no_answer!r}")
        model = None if calibration is None else NoAnswerModel.from_dict(calibration)
        if no_answer and model is None:
            raise ValueError(
                "no_answer needs no_answer_calibration, the model of P(no answer) for this reader and retrieval; "
                "training/reader/fit_no_answer.py fits one (the packaged qa pipelines carry theirs)"
            )
        if not _finite(no_answer_threshold) or not 0.0 <= float(no_answer_threshold) <= 1.0:  # type: ignore[arg-type]
            raise ValueError(f"no_answer_threshold must be a probability from 0 to 1, got {no_answer_threshold!r}")
        if score_threshold is not None and not _finite(score_threshold):
            raise ValueError(f"score_threshold must be a finite number or null, got {score_threshold!r}")
        threshold = None if score_threshold is None else float(score_threshold)  # type: ignore[arg-type]
        return cls(no_answer, model, float(no_answer_threshold), threshold)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, object]:
        return {
            "no_answer": self.no_answer,
            "no_answer_calibration": None if self.calibration is None else self.calibration.to_dict(),
            "no_answer_threshold": self.no_answer_threshold,
            "score_threshold": self.score_threshold,
        }

    def scores(
        self, predictions: Sequence[SpanPrediction], ranking: Sequence[float], similarities: Sequence[float | None]
    ) -> Scores:
        """The score each prediction is returned with, and with ``no_answer`` P(no answer) and the features it
        was computed from (P = 1 without any prediction); without it, the ranking scores as they are."""
        if not self.no_answer or self.calibration is None:
            return Scores(list(ranking))
        if not predictions:
            return Scores([], 1.0)
        features = no_answer_features(predictions, ranking, similarities)
        probability = float(self.calibration.probability(features[None, :])[0])
        shares = answer_shares(ranking)
        return Scores(
            [(1.0 - probability) * s for s in shares], probability, dict(zip(FEATURES, features.tolist(), strict=True))
        )

    def no_answer_first(self, probability: float) -> bool:
        """Whether "no answer" takes first place: P(no answer) reaches :attr:`no_answer_threshold`."""
        return probability >= self.no_answer_threshold


def _finite(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


@dataclass(frozen=True)
class Scores:
    """What :meth:`AnswerSettings.scores` gives: the answers' scores, P(no answer) and its features."""

    answers: list[float]
    no_answer: float | None = None
    features: dict[str, float] | None = None
