"""A run's time bound: passed once its minutes are over by its clock, never without one, bad bounds refused."""

from __future__ import annotations

import pytest

from dpr_components.runs.deadline import Deadline


def test_the_bound_passes_after_its_minutes_and_stays_passed() -> None:
    now = [100.0]
    deadline = Deadline(0.5, clock=lambda: now[0])
    assert not deadline.passed() and not deadline.reached
    now[0] = 129.9
    assert not deadline.passed()
    now[0] = 130.0
    assert deadline.passed() and deadline.reached
    now[0] = 0.0
    assert deadline.passed()


def test_no_bound_never_passes() -> None:
    assert not Deadline(None, clock=lambda: 1e12).passed()


@pytest.mark.parametrize("minutes", [0, -1, float("nan"), float("inf"), True, "5"])
def test_a_bound_that_is_not_a_positive_number_is_refused(minutes: object) -> None:
    with pytest.raises(ValueError, match="max_minutes must be a positive number"):
        Deadline(minutes)  # type: ignore[arg-type]
