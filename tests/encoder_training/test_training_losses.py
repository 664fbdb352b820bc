"""Losses against hand-computed values, and the batch builder's masks (duplicates, 1-of-N)."""

from __future__ import annotations

import math

import pytest
import torch

from dpr_components.dpr_data.examples import Ctx, TrainingExample
from dpr_components.encoder_training.batching import BatchBuilder, BatchSettings
from dpr_components.encoder_training.losses import (
    NLLLoss,
    TripletLoss,
    build_loss,
    similarity_matrix,
)

Q = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
P = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
ALL = torch.ones(2, 3, dtype=torch.bool)
POS = torch.tensor([0, 1])


def test_similarities_by_hand() -> None:
    assert similarity_matrix(Q, P, "dot").tolist() == [[1, 0, 1], [0, 2, 2]]
    r = 1 / math.sqrt(2)
    torch.testing.assert_close(similarity_matrix(Q, P, "cosine"), torch.tensor([[1, 0, r], [0, 1, r]]))
    # negative squared distances: |(1,0)-(0,1)|^2 = 2, |(0,2)-(1,1)|^2 = 2, |(0,2)-(1,0)|^2 = 5
    torch.testing.assert_close(similarity_matrix(Q, P, "l2"), torch.tensor([[0.0, -2, -1], [-5, -1, -2]]))


def test_nll_dot_by_hand() -> None:
    # question 0 scores [1, 0, 1], positive 0; question 1 scores [0, 2, 2], positive 1
    expected = ((math.log(2 * math.e + 1) - 1) + (math.log(1 + 2 * math.e**2) - 2)) / 2
    assert NLLLoss("dot")(Q, P, POS, ALL).item() == pytest.approx(expected, rel=1e-6)


def test_nll_mask_removes_candidates() -> None:
    mask = torch.tensor([[True, True, False], [True, True, True]])
    expected = ((math.log(math.e + 1) - 1) + (math.log(1 + 2 * math.e**2) - 2)) / 2
    assert NLLLoss("dot")(Q, P, POS, mask).item() == pytest.approx(expected, rel=1e-6)


def test_nll_cosine_uses_scale() -> None:
    r = 1 / math.sqrt(2)
    expected = -math.log(math.exp(20) / (math.exp(20) + 1 + math.exp(20 * r)))
    loss = build_loss("nll", "cosine")(Q[:1], P, POS[:1], ALL[:1])
    assert loss.item() == pytest.approx(expected, rel=1e-5)


def test_triplet_margin_one_by_hand() -> None:
    # q0: s+ = 1, negatives 0 and 1 -> hinge 0 and 1; q1: s+ = 2, negatives 0 and 2 -> hinge 0 and 1
    assert TripletLoss("dot", margin=1.0)(Q, P, POS, ALL).item() == pytest.approx(0.5)
    mask = torch.tensor([[True, True, False], [True, True, False]])
    assert TripletLoss("dot")(Q, P, POS, mask).item() == pytest.approx(0.0)


def _example(i: int, positive: str, hard: list[str] = (), answers: list[str] | None = None) -> TrainingExample:
    return TrainingExample(
        question=f"question {i}",
        answers=answers or [f"answer{i}"],
        positives=[Ctx(f"T{i}", positive)],
        hard_negatives=[Ctx("H", h) for h in hard],
        id=str(i),
    )


def test_identical_positives_are_not_each_others_negatives() -> None:
    examples = [_example(0, "shared gold passage"), _example(1, "shared  gold passage"), _example(2, "other")]
    batch = BatchBuilder(examples, BatchSettings(negatives=0)).build([0, 1, 2], epoch=0, step=0)
    assert batch.positive_index.tolist() == [0, 1, 2]
    assert batch.mask.tolist() == [[True, False, True], [False, True, True], [True, True, True]]
    # The masked loss equals the loss of a batch in which the duplicate is simply absent.
    q, p = torch.randn(3, 4), torch.randn(3, 4)
    p[1] = p[0]
    loss = NLLLoss("dot")(q[:1], p, batch.positive_index[:1], batch.mask[:1])
    alone = NLLLoss("dot")(q[:1], p[[0, 2]], torch.tensor([0]), torch.ones(1, 2, dtype=torch.bool))
    torch.testing.assert_close(loss, alone)


def test_hard_negatives_shared_and_duplicates_of_a_positive_masked() -> None:
    examples = [_example(0, "gold zero", hard=["gold one"]), _example(1, "gold one", hard=["hard one"])]
    batch = BatchBuilder(examples, BatchSettings(negatives=1)).build([0, 1], epoch=0, step=0)
    assert [c.text for c in batch.passages] == ["gold zero", "gold one", "gold one", "hard one"]
    # question 1 must not be pushed away from question 0's hard negative, which is its own positive
    assert batch.mask.tolist() == [[True, True, True, True], [True, True, False, True]]


def test_one_of_n_sees_only_its_own_candidates() -> None:
    examples = [_example(i, f"gold {i}", hard=[f"hard {i}"]) for i in range(3)]
    batch = BatchBuilder(examples, BatchSettings(negatives=1, in_batch=False)).build([0, 1, 2], 0, 0)
    own = [[c.text.endswith(str(q)) for c in batch.passages] for q in range(3)]
    assert batch.mask.tolist() == own


def test_answer_hits_can_be_masked() -> None:
    examples = [_example(0, "gold 0 answer0", answers=["answer0"]), _example(1, "also mentions answer0")]
    batch = BatchBuilder(examples, BatchSettings(negatives=0, mask_answer_hits=True)).build([0, 1], 0, 0)
    assert batch.mask.tolist() == [[True, False], [True, True]]


def test_negative_sources_and_top_up() -> None:
    examples = [_example(i, f"gold {i}", hard=["only one hard"] if i == 0 else []) for i in range(6)]
    pool = [Ctx("R", f"random {i}") for i in range(10)]
    hard = BatchBuilder(examples, BatchSettings(negatives=2), random_pool=pool).build([0, 1], 0, 0)
    texts = [c.text for c in hard.passages]
    assert len(texts) == 6 and "only one hard" in texts  # topped up with random passages
    gold = BatchBuilder(examples, BatchSettings(negatives=2, negative_source="gold")).build([0, 1], 0, 0)
    negatives = [c.text for c in gold.passages[2:]]
    assert (
        all(t.startswith("gold") for t in negatives) and "gold 0" not in negatives[:2] and "gold 1" not in negatives[2:]
    )
    again = BatchBuilder(examples, BatchSettings(negatives=2, negative_source="gold")).build([0, 1], 0, 0)
    assert again.passages == gold.passages  # a function of (seed, epoch, step): resumable


def test_shards_lay_out_candidates_per_process() -> None:
    examples = [_example(i, f"gold {i}", hard=[f"hard {i}"]) for i in range(4)]
    batch = BatchBuilder(examples, BatchSettings(negatives=1)).build([0, 1, 2, 3], 0, 0, shards=2)
    assert [c.text for c in batch.passages] == [
        "gold 0",
        "gold 1",
        "hard 0",
        "hard 1",
        "gold 2",
        "gold 3",
        "hard 2",
        "hard 3",
    ]
    assert batch.positive_index.tolist() == [0, 1, 4, 5]
    assert batch.question_shards == [slice(0, 2), slice(2, 4)] and batch.passage_shards == [slice(0, 4), slice(4, 8)]
    with pytest.raises(ValueError, match="equal shards"):
        BatchBuilder(examples, BatchSettings()).build([0, 1, 2], 0, 0, shards=2)
