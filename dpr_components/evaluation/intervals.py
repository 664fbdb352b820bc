"""Uncertainty of per-question scores: percentile bootstrap intervals over questions (Efron &
Tibshirani 1993, chapter 13), the paired bootstrap of a difference between two systems on the same
questions (Koehn 2004, "Statistical significance tests for machine translation evaluation"),
McNemar's exact test on paired 0/1 outcomes (McNemar 1947) and, for a report that kept only a
proportion and its number of questions, the Wilson score interval (Wilson 1927).

Two rules keep the numbers honest. Reports give intervals only over at least
:data:`MIN_QUESTIONS` questions (:func:`check_question_count`). And where every question scores 0,
or every one 1 (all hits or all misses), the bootstrap has nothing to resample and returns a
zero-width interval: :func:`score_interval` gives the Wilson score interval of the proportion there.

>>> bootstrap_interval([1.0, 1.0, 1.0]).low
1.0
>>> score_interval([1.0] * 30).method
'wilson'
>>> mcnemar([1, 1, 0, 1], [0, 0, 0, 1])
McNemarResult(b01=0, b10=2, p_value=0.5)
>>> round(wilson_interval(0.5, 10).low, 4)
0.2366
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import binomtest, norm

Statistic = Callable[..., Any]
"""Called as ``statistic(samples, axis=1)`` on a (resamples, questions) array, e.g. ``np.mean``."""

DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 10_000
_CHUNK_CELLS = 2_000_000  # bootstrap indices drawn per block: bounded memory for long question lists

MIN_QUESTIONS = 30
"""The fewest questions a report gives intervals for. The percentile bootstrap treats the questions
at hand as the population: below a few dozen its interval is too narrow (the resampled spread shrinks
by sqrt((n - 1) / n), with no t correction) and, for 0/1 outcomes, takes few distinct values, so a
"95%" interval misses the true accuracy far more often than 5% of the time, worst near 0% and 100%.
Thirty is the usual floor for a normal-theory interval of a mean; below it no interval is given."""


@dataclass(frozen=True)
class Interval:
    """A point estimate and its interval [low, high] at ``confidence``: a percentile bootstrap over
    ``resamples`` resamples, or an analytic interval (Wilson's) when ``resamples`` is 0."""

    estimate: float
    low: float
    high: float
    confidence: float
    resamples: int

    def scaled(self, factor: float) -> Interval:
        """The same interval in other units (e.g. ``100`` for percent)."""
        return Interval(self.estimate * factor, self.low * factor, self.high * factor, self.confidence, self.resamples)

    @property
    def method(self) -> str:
        """``"bootstrap"`` (percentile bootstrap) or ``"wilson"`` (Wilson score interval, no resampling)."""
        return "bootstrap" if self.resamples else "wilson"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {**asdict(self), "method": self.method}


@dataclass(frozen=True)
class PairedDifference:
    """mean(a) − mean(b) with its paired-bootstrap interval; ``p_value`` is the share of resampled
    differences ≤ 0 (one-sided, against "a is better than b")."""

    interval: Interval
    p_value: float

    def scaled(self, factor: float) -> PairedDifference:
        """The same difference in other units."""
        return PairedDifference(self.interval.scaled(factor), self.p_value)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {**self.interval.to_dict(), "p_value": self.p_value, "supported_gain": supported_gain(self)}


@dataclass(frozen=True)
class McNemarResult:
    """Discordant pairs (``b01``: a misses, b hits; ``b10``: a hits, b misses) and the two-sided exact p-value."""

    b01: int
    b10: int
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def _scores(values: ArrayLike, name: str = "values") -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one score per question (a flat sequence), got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return array


def check_settings(confidence: float, resamples: int) -> None:
    """Confidence strictly between 0 and 1, a positive number of resamples."""
    if not isinstance(confidence, (int, float)) or isinstance(confidence, bool) or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number strictly between 0 and 1, got {confidence!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")


def check_question_count(n: int, what: str = "an interval") -> None:
    """Refuse intervals over fewer than :data:`MIN_QUESTIONS` questions (see there why)."""
    if n < MIN_QUESTIONS:
        raise ValueError(
            f"{what} needs at least {MIN_QUESTIONS} questions, got {n}: over fewer, a bootstrap interval "
            "looks more certain than it is; evaluate more questions"
        )


def _same_length(a: NDArray[np.float64], b: NDArray[np.float64]) -> None:
    if a.size != b.size:
        raise ValueError(f"both systems must be scored on the same questions, got {a.size} and {b.size} scores")


def _resampled(values: NDArray[np.float64], statistic: Statistic, resamples: int, seed: int) -> NDArray[np.float64]:
    """``statistic`` of ``resamples`` samples drawn with replacement from ``values`` (one seeded generator)."""
    generator = np.random.default_rng(seed)
    n = values.size
    block = max(1, _CHUNK_CELLS // n)
    parts = []
    for start in range(0, resamples, block):
        indices = generator.integers(0, n, size=(min(block, resamples - start), n))
        parts.append(np.asarray(statistic(values[indices], axis=1), dtype=np.float64))
    return np.concatenate(parts)


def _interval(estimate: float, samples: NDArray[np.float64], confidence: float) -> Interval:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [tail, 1.0 - tail])
    return Interval(float(estimate), float(low), float(high), float(confidence), int(samples.size))


def bootstrap_interval(
    values: ArrayLike,
    statistic: Statistic = np.mean,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of ``statistic`` over questions (Efron & Tibshirani 1993):
    ``values`` holds one score per question (0/1 hits at k, reciprocal ranks, EM, F1)."""
    scores = _scores(values)
    check_settings(confidence, resamples)
    estimate = float(np.asarray(statistic(scores[None, :], axis=1))[0])
    return _interval(estimate, _resampled(scores, statistic, resamples, seed), confidence)


def score_interval(
    values: ArrayLike,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Interval:
    """Interval of the mean of per-question scores on a 0..1 scale (hits, reciprocal ranks, EM, F1):
    the percentile bootstrap, except where every score is 0 or every score is 1. There the bootstrap
    interval has zero width; the scores are then 0/1 outcomes, and the Wilson score interval of their
    proportion (nonzero width at 0% and 100%) is given instead, with ``resamples`` 0."""
    scores = _scores(values)
    check_settings(confidence, resamples)
    if scores.min() == scores.max() and scores[0] in (0.0, 1.0):
        return wilson_interval(float(scores[0]), int(scores.size), confidence)
    return bootstrap_interval(scores, np.mean, confidence, resamples, seed)


def paired_bootstrap_difference(
    a: ArrayLike,
    b: ArrayLike,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedDifference:
    """Interval of mean(a) − mean(b), resampling questions jointly: each resample takes the same
    questions for both systems (paired bootstrap, Koehn 2004)."""
    first, second = _scores(a, "a"), _scores(b, "b")
    _same_length(first, second)
    check_settings(confidence, resamples)
    differences = first - second
    samples = _resampled(differences, np.mean, resamples, seed)
    interval = _interval(float(differences.mean()), samples, confidence)
    return PairedDifference(interval, float(np.count_nonzero(samples <= 0) / samples.size))


def _binary(values: ArrayLike, name: str) -> NDArray[np.float64]:
    array = _scores(values, name)
    if not np.isin(array, (0.0, 1.0)).all():
        raise ValueError(f"{name} must hold 0/1 outcomes (hit or miss per question)")
    return array


def mcnemar(a_hits: ArrayLike, b_hits: ArrayLike) -> McNemarResult:
    """McNemar's exact test (McNemar 1947): of the questions where exactly one system hits, is the
    split ``b10`` : ``b01`` unlike a fair coin? Two-sided binomial p-value; 1.0 without discordant pairs."""
    a, b = _binary(a_hits, "a_hits"), _binary(b_hits, "b_hits")
    _same_length(a, b)
    b01 = int(np.count_nonzero((a == 0) & (b == 1)))
    b10 = int(np.count_nonzero((a == 1) & (b == 0)))
    if b01 + b10 == 0:
        return McNemarResult(b01, b10, 1.0)
    p_value = float(binomtest(b10, b01 + b10, 0.5, alternative="two-sided").pvalue)
    return McNemarResult(b01, b10, min(1.0, p_value))


def supported_gain(difference: PairedDifference | Interval) -> bool:
    """A gain is supported when the paired interval of (new − reference) lies wholly above zero."""
    interval = difference.interval if isinstance(difference, PairedDifference) else difference
    return interval.low > 0


def supported_loss(difference: PairedDifference | Interval) -> bool:
    """A loss is supported when the paired interval lies wholly below zero."""
    interval = difference.interval if isinstance(difference, PairedDifference) else difference
    return interval.high < 0


def wilson_interval(proportion: float, n: int, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """Wilson score interval (Wilson 1927; Newcombe 1998, method 3) of a proportion observed on
    ``n`` questions: for reports that stored only an accuracy and its number of questions, where a
    bootstrap over questions is not possible. No resampling, so ``resamples`` is 0."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive number of questions, got {n!r}")
    if not isinstance(proportion, (int, float, np.floating)) or not 0.0 <= float(proportion) <= 1.0:
        raise ValueError(f"proportion must lie in [0, 1], got {proportion!r}")
    check_settings(confidence, 1)
    p, count = float(proportion), int(n)
    z = float(norm.ppf(1.0 - (1.0 - confidence) / 2.0))
    denominator = 1.0 + z * z / count
    centre = (p + z * z / (2 * count)) / denominator
    half = z / denominator * float(np.sqrt(p * (1.0 - p) / count + z * z / (4 * count * count)))
    # At p = 0 (or 1) the bound is exactly 0 (or 1); the formula gives it up to rounding.
    low = 0.0 if p == 0.0 else max(0.0, centre - half)
    high = 1.0 if p == 1.0 else min(1.0, centre + half)
    return Interval(p, low, high, float(confidence), 0)
