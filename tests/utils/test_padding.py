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


def test_length_sorted_batches_are_shortest_first_and_as_even_as_they_can_be() -> None:
    from dpr_components.utils.padding import length_sorted_batches

    lengths = [30, 5, 12, 40, 7, 22, 9]
    batches = length_sorted_batches(lengths, 3)
    assert [len(b) for b in batches] == [3, 2, 2]
    assert [i for b in batches for i in b] == sorted(range(len(lengths)), key=lengths.__getitem__)
    assert length_sorted_batches([], 4) == []
