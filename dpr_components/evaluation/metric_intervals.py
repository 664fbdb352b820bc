"""Intervals for a report: every system's top-k accuracy, MRR, exact match and F1 with a bootstrap
interval over questions (a Wilson score interval where every question scored 0 or every one 1, see
:func:`dpr_components.evaluation.intervals.score_interval`), and each system's paired difference from
the first one (paired bootstrap, Koehn 2004; McNemar's exact test for 0/1 metrics, McNemar 1947).
Works from per-question values already computed (first-hit ranks, individual EM / F1): no system is
run again. A report over fewer than ``MIN_QUESTIONS`` questions gets no intervals: an error instead."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpr_components.evaluation.intervals import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    Interval,
    McNemarResult,
    PairedDifference,
    check_question_count,
    check_settings,
    mcnemar,
    paired_bootstrap_difference,
    score_interval,
    supported_gain,
    supported_loss,
)

METHOD = (
    "percentile bootstrap over questions (Efron & Tibshirani 1993), Wilson score interval (Wilson 1927) where "
    "every question scored 0 or every one 1; differences: paired bootstrap (Koehn 2004)"
)
WILSON_SUFFIX = " (Wilson)"


def hits_at(ranks: Sequence[int | None], k: int) -> list[float]:
    """1.0 for each question whose first hit is within the top ``k``, else 0.0."""
    return [1.0 if rank is not None and rank <= k else 0.0 for rank in ranks]


def interval_cell(interval: Interval, decimals: int = 1, name_method: bool = False) -> str:
    """A report cell: ``77.1 [74.5, 79.7]`` (estimate, then the interval); with ``name_method``, a
    Wilson interval among bootstrap ones says so: ``100.0 [88.6, 100.0] (Wilson)``."""
    text = f"{interval.estimate:.{decimals}f} [{interval.low:.{decimals}f}, {interval.high:.{decimals}f}]"
    return text + WILSON_SUFFIX if name_method and interval.method == "wilson" else text


def difference_cell(difference: PairedDifference, test: McNemarResult | None = None, decimals: int = 1) -> str:
    """A report cell for new − reference: ``+1.0 [-0.3, +2.3] —, p=0.58``; *gain* or *loss* when
    the paired interval excludes zero (— when it does not), then McNemar's exact p when given."""
    interval = difference.interval
    verdict = "gain" if supported_gain(difference) else "loss" if supported_loss(difference) else "—"
    text = f"{interval.estimate:+.{decimals}f} [{interval.low:+.{decimals}f}, {interval.high:+.{decimals}f}] {verdict}"
    return text if test is None else f"{text}, p={test.p_value:.2g}"


def wilson_cells_note(confidence: float = DEFAULT_CONFIDENCE) -> str:
    """The sentence that explains cells marked by ``interval_cell(..., name_method=True)``."""
    return (
        "Cells marked (Wilson): every question scored 0 or every one scored 1, where the bootstrap interval has "
        f"zero width; such a cell has the {confidence:.0%} Wilson score interval of the proportion instead (Wilson 1927)."
    )


@dataclass(frozen=True)
class IntervalSettings:
    """How intervals are computed: confidence level, bootstrap resamples and the generator seed."""

    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0

    def __post_init__(self) -> None:
        check_settings(self.confidence, self.resamples)


@dataclass(frozen=True)
class Metric:
    """A report metric: its key, label, the factor to report units (100 for percent) and decimals."""

    key: str
    label: str
    scale: float
    decimals: int
    binary: bool


def top_k_metric(k: int) -> Metric:
    """Top-k accuracy, in percent."""
    return Metric(f"top_{k}", f"Top-{k}", 100.0, 1, True)


MRR = Metric("mrr", "MRR", 1.0, 4, False)
EXACT_MATCH = Metric("exact_match", "exact match", 100.0, 1, True)
F1 = Metric("f1", "F1", 100.0, 1, False)


def per_question_values(
    ranks: Sequence[int | None] | None, max_k: int, answer_scores: Mapping[str, Sequence[float]], ks: Sequence[int]
) -> dict[Metric, NDArray[np.float64]]:
    """Each metric's per-question values: hits at each k and reciprocal ranks (up to ``max_k``) from
    first-hit ranks, exact match and F1 (0..1) as given."""
    values: dict[Metric, NDArray[np.float64]] = {}
    if ranks is not None:
        found = np.array([rank if rank is not None and rank <= max_k else 0 for rank in ranks], dtype=np.float64)
        for k in ks:
            if k <= max_k:
                values[top_k_metric(k)] = ((found > 0) & (found <= k)).astype(np.float64)
        values[MRR] = np.divide(1.0, found, out=np.zeros_like(found), where=found > 0)
    for metric in (EXACT_MATCH, F1):
        if metric.key in answer_scores:
            values[metric] = np.asarray(answer_scores[metric.key], dtype=np.float64)
    return values


@dataclass(frozen=True)
class MetricDifference:
    """One metric of one system against the reference system, in report units."""

    difference: PairedDifference
    mcnemar: McNemarResult | None

    def verdict(self) -> str:
        """``supported gain`` / ``supported loss`` when the interval excludes zero, else empty."""
        if supported_gain(self.difference):
            return "supported gain"
        return "supported loss" if supported_loss(self.difference) else ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {**self.difference.to_dict(), "mcnemar": self.mcnemar.to_dict() if self.mcnemar else None}


@dataclass
class ReportIntervals:
    """All intervals of one report: per system and metric, and the differences from ``reference``."""

    settings: IntervalSettings
    metrics: dict[str, Metric] = field(default_factory=dict)
    systems: dict[str, dict[str, Interval]] = field(default_factory=dict)
    reference: str | None = None
    differences: dict[str, dict[str, MetricDifference]] = field(default_factory=dict)

    def cell(self, system: str, key: str) -> str | None:
        """``81.8 [78.9, 84.7]`` for a report table, or None when the system has no such metric."""
        interval = self.systems.get(system, {}).get(key)
        if interval is None:
            return None
        return interval_cell(interval, self.metrics[key].decimals, name_method=True)

    def note(self) -> str:
        """The sentences that say what the brackets are."""
        text = (
            f"In brackets: {self.settings.confidence:.0%} percentile-bootstrap interval over questions "
            f"({self.settings.resamples:,} resamples, seed {self.settings.seed})."
        )
        if any(i.method == "wilson" for metrics in self.systems.values() for i in metrics.values()):
            text += " " + wilson_cells_note(self.settings.confidence)
        return text

    def differences_table(self) -> tuple[list[str], list[list[str]]]:
        """Columns and rows of the "Differences" table (each system minus the reference)."""
        columns = ["system", "metric", "difference", "interval", "p (bootstrap)", "McNemar p", "verdict"]
        rows = []
        for system, metrics in self.differences.items():
            for key, found in metrics.items():
                places = self.metrics[key].decimals
                interval = found.difference.interval
                rows.append(
                    [
                        system,
                        self.metrics[key].label,
                        f"{interval.estimate:+.{places}f}",
                        f"[{interval.low:+.{places}f}, {interval.high:+.{places}f}]",
                        f"{found.difference.p_value:.4f}",
                        f"{found.mcnemar.p_value:.4g}" if found.mcnemar else "—",
                        found.verdict() or "—",
                    ]
                )
        return columns, rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``intervals`` key of report.json)."""
        return {
            "method": METHOD,
            "confidence": self.settings.confidence,
            "resamples": self.settings.resamples,
            "seed": self.settings.seed,
            "systems": {
                name: {key: interval.to_dict() for key, interval in metrics.items()}
                for name, metrics in self.systems.items()
            },
            "differences": {
                "reference": self.reference,
                "systems": {
                    name: {key: found.to_dict() for key, found in metrics.items()}
                    for name, metrics in self.differences.items()
                },
            },
        }


def _difference(
    metric: Metric, new: NDArray[np.float64], old: NDArray[np.float64], settings: IntervalSettings
) -> MetricDifference:
    paired = paired_bootstrap_difference(new, old, settings.confidence, settings.resamples, settings.seed)
    return MetricDifference(paired.scaled(metric.scale), mcnemar(old, new) if metric.binary else None)


def report_intervals(
    values: Mapping[str, Mapping[Metric, NDArray[np.float64]]], settings: IntervalSettings
) -> ReportIntervals:
    """Intervals for every system (name → metric → per-question values, on a 0..1 scale) and, with two
    or more systems, every later system's paired difference from the first on the metrics both have.
    Fewer than ``MIN_QUESTIONS`` questions: a ValueError, no intervals."""
    result = ReportIntervals(settings)
    for name, metrics in values.items():
        result.systems[name] = {}
        for metric, scores in metrics.items():
            check_question_count(len(scores), f"an interval of {name}'s {metric.label}")
            result.metrics[metric.key] = metric
            interval = score_interval(scores, settings.confidence, settings.resamples, settings.seed)
            result.systems[name][metric.key] = interval.scaled(metric.scale)
    names = list(values)
    if len(names) < 2:
        return result
    result.reference = names[0]
    reference = values[names[0]]
    for name in names[1:]:
        result.differences[name] = {
            metric.key: _difference(metric, scores, reference[metric], settings)
            for metric, scores in values[name].items()
            if metric in reference
        }
    return result
