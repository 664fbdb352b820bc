"""Batches padded to a rounded length: the rule, and the encoders and readers that follow it."""

from __future__ import annotations

import pytest

from dpr_components.utils.padding import LENGTH_MULTIPLE, padded_length


@pytest.mark.parametrize(
    ("longest", "cap", "expected"),
    [(1, 256, 8), (8, 256, 8), (9, 256, 16), (250, 256, 256), (253, 254, 254), (254, 254, 254), (13, None, 13)],
)
def test_padded_length_rounds_up_within_the_cap(longest: int, cap: int | None, expected: int) -> None:
    assert padded_length(longest, cap) == expected


def test_every_length_up_to_the_cap_meets_an_eighth_as_many_shapes() -> None:
    lengths = {padded_length(n, 256) for n in range(1, 257)}
    assert lengths == set(range(LENGTH_MULTIPLE, 257, LENGTH_MULTIPLE))
    assert all(n <= padded_length(n, 300) <= 300 for n in range(1, 301))
