"""The top-1 headroom that benchmarks/retrieval/retrieval_quality.py reports beside its hybrid tables."""

import numpy as np
import pytest

from benchmarks.retrieval.retrieval_quality import top1_headroom
from dpr_components.rankers.hybrid_fit import Candidates


def _question(bm25: list[float], dense: list[float], hits: list[bool]) -> Candidates:
    return Candidates(bm25=np.array(bm25), dense=np.array(dense), hits=np.array(hits))


def test_headroom_by_hand() -> None:
    questions = [
        # dense puts the answer first, BM25 does not; any λ above 1 ranks it first
        _question([5.0, 4.0], [0.1, 0.9], [False, True]),
        # BM25 puts the answer first, dense does not; small λ keep it first
        _question([9.0, 1.0], [0.2, 0.3], [True, False]),
        # neither retriever finds an answer
        _question([1.0], [0.5], [False]),
    ]
    dense_ranks, bm25_ranks = [1, 2, None], [2, 1, None]
    room = top1_headroom(questions, bm25_ranks, dense_ranks)
    assert room["only_dense_first"] == pytest.approx(100 / 3)
    assert room["only_bm25_first"] == pytest.approx(100 / 3)
    assert room["either_first"] == pytest.approx(200 / 3)
    # λ between 1.25 and 80 puts both answers first: the best top-1 is the oracle's here
    assert room["best_top1"] == pytest.approx(200 / 3)
    assert 1.25 < room["best_top1_weight"] < 80
