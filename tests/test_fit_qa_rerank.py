"""Choosing qa_rerank.yml's decoding: short answers, the re-ranked order, span scores and the choice."""

from __future__ import annotations

import math

from training.fit_qa_rerank import (
    Decoding,
    choose,
    decoded_em,
    first_passage_em,
    oracle_em,
    reranked_order,
    short_answers,
)


def _reading(log_p: float | None, log_span: float | None, em: float) -> dict[str, object]:
    return {"log_p": log_p, "log_span": log_span, "em": em}


# The hybrid ranks passage 0 first; the ranker prefers passage 1 (a logit 2 higher outweighs 0.75 x 1).
# The reader's own selection likes passage 0; the ranker's folder, read as a reader, finds the answer in 1.
ROW = {
    "retrieval": [11.0, 10.0, 2.0],
    "ranker": [_reading(-2.5, -1.0, 0.0), _reading(-0.5, -0.2, 1.0), _reading(None, None, 0.0)],  # 2: no span
    "reader": [_reading(-0.1, -0.5, 0.0), _reading(-3.0, -0.1, 1.0), _reading(-4.0, -1.0, 0.0)],
}


def test_short_answers_keep_answers_of_at_most_the_limit_in_words() -> None:
    assert short_answers(["a vegetable", "the long answer of many words here"], 5) == ["a vegetable"]
    assert short_answers(["any length at all really yes"], None) == ["any length at all really yes"]


def test_the_reranked_order_adds_three_quarters_of_the_hybrid_score() -> None:
    assert reranked_order(ROW) == [1, 0, 2]


def test_decodings_score_the_best_span_of_the_passages_read() -> None:
    hybrid_reader = Decoding("reader", "hybrid", 10, 1.0, 0.0, 1.0)
    assert list(decoded_em([ROW], hybrid_reader)) == [0.0]  # passage 0: -0.1 - 0.5 beats -3.0 - 0.1 - log 2
    assert list(decoded_em([ROW], Decoding("reader", "reranked", 1, 1.0, 0.0, 0.0))) == [1.0]
    assert list(decoded_em([ROW], Decoding("ranker", "hybrid", 10, 1.0, 0.0, 1.0))) == [1.0]
    # the ranker's score (logit + 0.75 x hybrid) as a prior lifts passage 1 for the reader too, at γ = 4, not 2
    for gamma, expected in ((2.0, 0.0), (4.0, 1.0)):
        assert list(decoded_em([ROW], Decoding("reader", "hybrid", 2, 1.0, gamma, 1.0))) == [expected]
    assert -3.1 + 4 * (-0.5 + 7.5) - math.log(2) > -0.6 + 4 * (-2.5 + 8.25)
    assert -3.1 + 2 * (-0.5 + 7.5) - math.log(2) < -0.6 + 2 * (-2.5 + 8.25)


def test_choose_takes_the_best_mean_and_the_first_of_the_grid_on_ties() -> None:
    grid = [Decoding("reader", "hybrid", 10, 1.0, 0.0, 1.0), Decoding("ranker", "reranked", 1, 1.0, 0.0, 0.0)]
    grid.append(Decoding("ranker", "reranked", 3, 1.0, 0.0, 0.0))
    chosen, means = choose([{"questions": [ROW]}], grid)
    assert chosen == grid[1] and means[grid[2]] == means[grid[1]] == 1.0 and means[grid[0]] == 0.0


def test_ceilings_read_the_first_passage_or_the_best_of_the_first_ten() -> None:
    assert first_passage_em([ROW], "reader", "hybrid") == 0.0
    assert first_passage_em([ROW], "reader", "reranked") == 100.0
    assert oracle_em([ROW], "reader", 1) == 0.0 and oracle_em([ROW], "reader", 10) == 100.0
