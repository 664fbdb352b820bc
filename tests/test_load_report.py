"""The load benchmark's Little's-law line: the floor and how far a run is from it."""

from __future__ import annotations

from benchmarks.load.query_latency import little_law_note


def test_little_law_note_compares_the_mean_ratio_with_clients_over_cores() -> None:
    served = {"one_client": {"mean_ms": 100.0, "p50_ms": 80.0}, "clients": {"mean_ms": 420.0, "p50_ms": 400.0}}
    note = little_law_note(served, clients=8, cores=2)
    assert "wait on average 4× the 1-client mean; measured 4.20× (+5.0% against that)" in note
    assert "that is 5.00× the 1-client p50" in note  # 4 x 100 / 80
