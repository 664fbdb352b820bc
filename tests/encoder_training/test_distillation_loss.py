"""The listwise distillation loss against hand-computed values: KL of the teacher's softmax from the
student's, padding ignored, no gradient when the student already agrees, the contrastive term."""

from __future__ import annotations

import math

import pytest
import torch

from dpr_components.encoder_training.losses.distillation import (
    ListwiseDistillationLoss,
    listwise_kl,
    multi_positive_nll,
)


def _kl_by_hand(teacher: list[float], student: list[float]) -> float:
    p = [math.exp(t) / sum(math.exp(x) for x in teacher) for t in teacher]
    q = [math.exp(s) / sum(math.exp(x) for x in student) for s in student]
    return sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True))


def test_kl_equals_the_hand_computed_divergence_with_temperatures() -> None:
    student = torch.tensor([[0.5, 0.1, -0.2]])
    teacher = torch.tensor([[3.0, 1.0, 0.0]])
    mask = torch.ones(1, 3, dtype=torch.bool)
    got = listwise_kl(student, teacher, mask, student_temperature=0.1, teacher_temperature=2.0)
    expected = _kl_by_hand([1.5, 0.5, 0.0], [5.0, 1.0, -2.0])
    assert float(got) == pytest.approx(expected, rel=1e-5)


def test_padding_is_ignored_and_questions_are_averaged() -> None:
    student = torch.tensor([[1.0, 0.0, 9.0], [0.2, 0.3, 0.1]])
    teacher = torch.tensor([[0.0, 1.0, -9.0], [1.0, 0.0, 2.0]])
    mask = torch.tensor([[True, True, False], [True, True, True]])
    got = listwise_kl(student, teacher, mask)
    expected = (_kl_by_hand([0.0, 1.0], [1.0, 0.0]) + _kl_by_hand([1.0, 0.0, 2.0], [0.2, 0.3, 0.1])) / 2
    assert float(got) == pytest.approx(expected, rel=1e-5)
    assert math.isfinite(float(got))


def test_no_loss_and_no_gradient_when_the_student_equals_the_teacher() -> None:
    teacher = torch.tensor([[2.0, -1.0, 0.5, 0.0]])
    student = (teacher * 0.05).clone().requires_grad_(True)  # student / T_s == teacher / T_t
    loss = listwise_kl(student, teacher, torch.ones(1, 4, dtype=torch.bool), student_temperature=0.05)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(0.0, abs=1e-6)
    assert student.grad is not None
    torch.testing.assert_close(student.grad, torch.zeros_like(student), atol=1e-6, rtol=0)


def test_multi_positive_nll_by_hand_and_without_positives() -> None:
    scores = torch.tensor([[1.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
    positives = torch.tensor([[True, True, False], [False, False, False]])
    mask = torch.ones(2, 3, dtype=torch.bool)
    got = multi_positive_nll(scores, positives, mask)
    total = math.exp(1) + math.exp(2) + 1
    assert float(got) == pytest.approx(-math.log((math.exp(1) + math.exp(2)) / total), rel=1e-5)
    assert float(multi_positive_nll(scores, positives & False, mask)) == 0.0


def test_the_module_scores_by_dot_product_and_adds_the_weighted_contrastive_term() -> None:
    questions = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    candidates = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [0.0, 1.0]]])
    teacher = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    mask = torch.ones(2, 2, dtype=torch.bool)
    positives = torch.zeros(2, 4, dtype=torch.bool)
    positives[0, 0] = positives[1, 3] = True
    batch_mask = torch.ones(2, 4, dtype=torch.bool)
    kl_only = ListwiseDistillationLoss(student_temperature=0.5)(questions, candidates, teacher, mask)
    own = torch.tensor([[1.0, 0.0], [0.5, 1.0]])
    assert float(kl_only) == pytest.approx(float(listwise_kl(own, teacher, mask, 0.5)), rel=1e-6)
    both = ListwiseDistillationLoss(0.5, contrastive_weight=0.3)(
        questions, candidates, teacher, mask, positives, batch_mask
    )
    everything = questions @ candidates.reshape(4, 2).T / 0.5
    nll = multi_positive_nll(everything, positives, batch_mask)
    assert float(both) == pytest.approx(float(kl_only) + 0.3 * float(nll), rel=1e-6)


@pytest.mark.parametrize(
    "arguments", [{"student_temperature": 0.0}, {"teacher_temperature": -1.0}, {"contrastive_weight": -0.1}]
)
def test_bad_settings_are_refused(arguments: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        ListwiseDistillationLoss(**arguments)
