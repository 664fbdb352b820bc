"""Intervals over questions: percentile bootstrap, paired bootstrap of a difference, McNemar's exact
test, and ``haystack eval --intervals`` end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpr_components.cli.main import main
from dpr_components.evaluation.intervals import (
    MIN_QUESTIONS,
    Interval,
    bootstrap_interval,
    check_question_count,
    mcnemar,
    paired_bootstrap_difference,
    score_interval,
    supported_gain,
    wilson_interval,
)
from dpr_components.evaluation.metric_intervals import (
    IntervalSettings,
    interval_cell,
    per_question_values,
    report_intervals,
)
from tests.helpers.paths import PIPELINES

QUESTIONS = (
    '{"id": "1", "question": "who wrote hamlet", "answers": ["Shakespeare"]}\n'
    '{"id": "2", "question": "highest mountain on earth", "answers": ["Everest"]}\n'
    '{"id": "3", "question": "what is the capital of atlantis", "answers": ["Poseidonia"]}\n'
)


def _questions(copies: int) -> str:
    """``copies`` copies of the three QUESTIONS, each with an id of its own."""
    lines = [json.loads(line) for line in QUESTIONS.splitlines()]
    return "".join(json.dumps({**line, "id": f"{line['id']}-{i}"}) + "\n" for i in range(copies) for line in lines)


def _bernoulli(p: float, n: int, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random(n) < p).astype(float)


def test_bernoulli_interval_matches_the_normal_approximation() -> None:
    sample = _bernoulli(0.8, 655, seed=1)
    interval = bootstrap_interval(sample)
    p = sample.mean()
    half = 1.959964 * math.sqrt(p * (1 - p) / sample.size)
    assert interval.estimate == pytest.approx(p)
    assert interval.low == pytest.approx(p - half, abs=0.006)
    assert interval.high == pytest.approx(p + half, abs=0.006)
    assert (interval.confidence, interval.resamples) == (0.95, 10_000)
    narrower = bootstrap_interval(sample, confidence=0.5)
    assert interval.low < narrower.low < p < narrower.high < interval.high


def test_constant_sample_gives_a_zero_width_interval() -> None:
    assert bootstrap_interval([1.0] * 50) == Interval(1.0, 1.0, 1.0, 0.95, 10_000)
    assert bootstrap_interval([0.0] * 7, resamples=100).high == 0.0


def test_other_statistics_are_resampled_too() -> None:
    interval = bootstrap_interval(np.arange(101.0), statistic=np.median, resamples=2000)
    assert interval.estimate == 50.0 and interval.low < 50.0 < interval.high


def test_identical_systems_differ_by_nothing() -> None:
    hits = _bernoulli(0.6, 300, seed=2)
    difference = paired_bootstrap_difference(hits, hits)
    assert difference.interval.low <= 0 <= difference.interval.high
    assert difference.interval.estimate == 0 and difference.p_value == 1.0
    assert not supported_gain(difference)
    assert mcnemar(hits, hits).p_value == 1.0
    assert (mcnemar(hits, hits).b01, mcnemar(hits, hits).b10) == (0, 0)


def test_a_system_better_on_many_questions_is_a_supported_gain() -> None:
    base = _bernoulli(0.5, 655, seed=3)
    better = base.copy()
    better[np.flatnonzero(base == 0)[:80]] = 1.0  # 80 more questions answered, none lost
    difference = paired_bootstrap_difference(better, base)
    assert difference.interval.estimate == pytest.approx(80 / 655)
    assert difference.interval.low > 0 and supported_gain(difference)
    assert difference.p_value < 0.001
    test = mcnemar(base, better)
    assert (test.b01, test.b10) == (80, 0) and test.p_value < 1e-20


def test_mcnemar_against_a_hand_computation() -> None:
    # discordant pairs: a hits and b misses on 1 question, a misses and b hits on 5
    a = [1, 0, 0, 0, 0, 0, 1, 1, 0]
    b = [0, 1, 1, 1, 1, 1, 1, 1, 0]
    test = mcnemar(a, b)
    # two-sided exact: 2 * P(X <= 1), X ~ Binomial(6, 1/2) = 2 * (1 + 6) / 64
    assert (test.b01, test.b10) == (5, 1)
    assert test.p_value == pytest.approx(14 / 64)
    assert mcnemar(b, a).p_value == pytest.approx(14 / 64)


def test_the_seed_makes_intervals_repeatable() -> None:
    sample = np.random.default_rng(4).random(200)
    assert bootstrap_interval(sample, seed=7) == bootstrap_interval(sample, seed=7)
    assert bootstrap_interval(sample, seed=7) != bootstrap_interval(sample, seed=8)
    other = sample[::-1].copy()
    assert paired_bootstrap_difference(sample, other, seed=3) == paired_bootstrap_difference(sample, other, seed=3)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bootstrap_interval([]), "must not be empty"),
        (lambda: bootstrap_interval([1.0, float("nan")]), "finite"),
        (lambda: bootstrap_interval([[1.0], [0.0]]), "one score per question"),
        (lambda: bootstrap_interval([1.0], confidence=1.0), "strictly between 0 and 1"),
        (lambda: bootstrap_interval([1.0], confidence=0), "strictly between 0 and 1"),
        (lambda: bootstrap_interval([1.0], resamples=0), "positive integer"),
        (lambda: paired_bootstrap_difference([1.0, 0.0], [1.0]), "same questions"),
        (lambda: mcnemar([1, 0], [1, 0, 1]), "same questions"),
        (lambda: mcnemar([1, 0.5], [1, 0]), "0/1 outcomes"),
        (lambda: IntervalSettings(confidence=95), "strictly between 0 and 1"),
    ],
)
def test_bad_input_is_a_one_line_error(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message) as error:
        call()  # type: ignore[operator]
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table II, method 3
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_against_published_values(successes: int, n: int, low: float, high: float) -> None:
    interval = wilson_interval(successes / n, n)
    assert interval.estimate == pytest.approx(successes / n)
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)
    assert (interval.confidence, interval.resamples) == (0.95, 0)


def test_wilson_interval_by_hand_and_at_the_edges() -> None:
    # 5 of 10 at 95%: centre 0.5, half-width z/(1 + z²/n) * sqrt(0.025 + z²/400), z = 1.959964
    z = 1.959963984540054
    half = z / (1 + z * z / 10) * math.sqrt(0.25 / 10 + z * z / 400)
    interval = wilson_interval(0.5, 10)
    assert interval.low == pytest.approx(0.5 - half) and interval.high == pytest.approx(0.5 + half)
    assert wilson_interval(1.0, 10).high == 1.0 and wilson_interval(1.0, 10).low == pytest.approx(0.7225, abs=1e-4)
    assert wilson_interval(0.5, 10, confidence=0.5).high < interval.high
    assert wilson_interval(0.5, 1000).high - wilson_interval(0.5, 1000).low < interval.high - interval.low


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: wilson_interval(0.5, 0), "positive number of questions"),
        (lambda: wilson_interval(1.5, 10), r"lie in \[0, 1\]"),
        (lambda: wilson_interval(0.5, 10, confidence=1.0), "strictly between 0 and 1"),
    ],
)
def test_wilson_interval_refuses_bad_input(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


def test_report_intervals_from_ranks_and_answer_scores() -> None:
    first = per_question_values([1, None, 3, 2] * 10, 5, {"exact_match": [1, 0, 0, 1] * 10}, (1, 5, 20))
    second = per_question_values([1, 1, 1, None] * 10, 5, {"exact_match": [1, 1, 0, 1] * 10}, (1, 5, 20))
    assert sorted(metric.key for metric in first) == ["exact_match", "mrr", "top_1", "top_5"]
    found = report_intervals({"a": first, "b": second}, IntervalSettings(resamples=500))
    assert found.systems["a"]["top_5"].estimate == 75.0
    assert found.systems["a"]["mrr"].estimate == pytest.approx((1 + 1 / 3 + 1 / 2) / 4)
    assert found.cell("a", "top_5") is not None and found.cell("a", "f1") is None
    assert found.reference == "a" and set(found.differences["b"]) == {"top_1", "top_5", "mrr", "exact_match"}
    top_1 = found.differences["b"]["top_1"]
    assert top_1.difference.interval.estimate == 50.0 and top_1.mcnemar is not None
    assert (top_1.mcnemar.b01, top_1.mcnemar.b10) == (20, 0)
    assert found.differences["b"]["mrr"].mcnemar is None
    assert json.loads(json.dumps(found.to_dict()))["differences"]["reference"] == "a"


@pytest.mark.usefixtures("one_thread")
def test_haystack_eval_with_intervals(
    indexed_store: Path, tiny_st_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(_questions(10), encoding="utf-8")
    out = tmp_path / "report"
    systems = [str(PIPELINES / name) for name in ("bm25.yml", "dense.yml")]
    args = [
        "eval",
        *systems,
        "--questions",
        str(questions),
        "--store",
        str(indexed_store),
        "--set",
        f"dense.model={tiny_st_dir}",
        "--top-k",
        "5",
        "--out",
        str(out),
        "--intervals",
        "--resamples",
        "2000",
    ]
    assert main(args) == 0
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    intervals = report["intervals"]
    assert (intervals["confidence"], intervals["resamples"], intervals["seed"]) == (0.95, 2000, 0)
    bm25 = intervals["systems"]["bm25"]
    assert bm25["top_1"]["estimate"] == pytest.approx(report["systems"]["bm25"]["top_k_accuracy"]["1"])
    assert bm25["top_1"]["low"] <= bm25["top_1"]["estimate"] <= bm25["top_1"]["high"]
    assert bm25["mrr"]["estimate"] == pytest.approx(report["systems"]["bm25"]["mrr"])
    difference = intervals["differences"]["systems"]["dense"]["top_5"]
    assert intervals["differences"]["reference"] == "bm25"
    assert {"estimate", "low", "high", "p_value", "supported_gain", "mcnemar"} <= set(difference)
    markdown = (out / "report.md").read_text()
    assert (
        f"| bm25 | {bm25['top_1']['estimate']:.1f} [{bm25['top_1']['low']:.1f}, {bm25['top_1']['high']:.1f}] |"
        in markdown
    )
    assert "## Differences" in markdown and "| dense | Top-5 |" in markdown
    assert "95% percentile-bootstrap interval" in markdown


def test_interval_options_need_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(QUESTIONS, encoding="utf-8")
    base = ["eval", str(PIPELINES / "bm25.yml"), "--questions", str(questions), "--out", str(tmp_path / "r")]
    assert main([*base, "--resamples", "100"]) == 2
    assert "apply only with --intervals" in capsys.readouterr().err
    assert main([*base, "--intervals", "--confidence", "1.5"]) == 2
    assert "strictly between 0 and 1" in capsys.readouterr().err


@pytest.mark.parametrize("outcome", [0.0, 1.0], ids=["all-missed", "all-hit"])
def test_all_hits_or_all_misses_get_a_wilson_interval(outcome: float) -> None:
    interval = score_interval([outcome] * 40, resamples=200)
    assert interval == wilson_interval(outcome, 40)
    assert interval.method == "wilson" and interval.high - interval.low > 0.05
    assert interval.to_dict()["method"] == "wilson"
    assert bootstrap_interval([outcome] * 40, resamples=200).high == bootstrap_interval([outcome] * 40).low


def test_mixed_or_fractional_scores_keep_the_bootstrap() -> None:
    assert score_interval(_bernoulli(0.7, 50, seed=3), resamples=200).method == "bootstrap"
    assert score_interval([0.5] * 40, resamples=200).method == "bootstrap"  # not 0/1 outcomes


def test_report_marks_wilson_cells_among_bootstrap_ones() -> None:
    values = per_question_values([1] * 20 + [3] * 20, 5, {}, (1, 5))
    found = report_intervals({"a": values}, IntervalSettings(resamples=200))
    assert found.cell("a", "top_1") is not None and "(Wilson)" not in found.cell("a", "top_1")
    assert found.cell("a", "top_5") == interval_cell(wilson_interval(1.0, 40).scaled(100)) + " (Wilson)"
    assert "Cells marked (Wilson)" in found.note()
    assert found.to_dict()["systems"]["a"]["top_5"]["method"] == "wilson"


@pytest.mark.parametrize("questions", [1, MIN_QUESTIONS - 1])
def test_report_intervals_refuse_fewer_than_the_minimum(questions: int) -> None:
    values = per_question_values([1] * questions, 5, {}, (1,))
    with pytest.raises(ValueError, match=rf"needs at least {MIN_QUESTIONS} questions, got {questions}"):
        report_intervals({"a": values}, IntervalSettings(resamples=200))
    check_question_count(MIN_QUESTIONS)


def test_haystack_eval_refuses_intervals_on_too_few_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(QUESTIONS, encoding="utf-8")
    args = ["eval", str(PIPELINES / "bm25.yml"), "--questions", str(questions), "--out", str(tmp_path / "r")]
    assert main([*args, "--intervals"]) == 2
    assert f"error: --intervals needs at least {MIN_QUESTIONS} questions, got 3" in capsys.readouterr().err
    assert not (tmp_path / "r" / "report.md").exists()
