"""Choosing the re-ranker's retrieval weight: orders, hits and the choice on hand-made scores."""

from __future__ import annotations

import numpy as np

from training.reader.fit_rerank_weight import choose, fused_hits

# question 1: the ranker finds the gold passage (2nd in the hybrid's order); question 2: it does
# not (the hybrid's first passage is gold, the ranker prefers the 3rd by a small margin).
ROWS = [
    {"retrieval": [30.0, 29.0, 10.0], "logit": [0.0, 5.0, 0.0], "hit": [False, True, False]},
    {"retrieval": [30.0, 20.0, 10.0], "logit": [0.0, 0.0, 1.0], "hit": [True, False, False]},
]


def test_hits_follow_the_fused_order() -> None:
    assert list(fused_hits(ROWS, None, 1)) == [0.0, 1.0]  # the hybrid's order
    assert list(fused_hits(ROWS, 0.0, 1)) == [1.0, 0.0]  # the ranker alone
    assert list(fused_hits(ROWS, 0.1, 1)) == [1.0, 1.0]  # 0.1 * 20 outweighs the ranker's 1-point doubt
    assert list(fused_hits(ROWS, 10.0, 1)) == [0.0, 1.0]  # a large weight is the hybrid again
    assert list(fused_hits(ROWS, 0.0, 3)) == [1.0, 1.0]


def test_choose_takes_the_best_mean_and_the_smaller_weight_on_ties() -> None:
    splits = [{"questions": ROWS}, {"questions": ROWS[:1]}]
    assert choose(splits, (0.0, 0.1, 0.2, 10.0)) == 0.1
    assert np.isclose(fused_hits(ROWS, 0.2, 1).mean(), 1.0)
