"""The load benchmark's Little's-law line: the floor and how far a run is from it."""

from __future__ import annotations

from benchmarks.load.query_latency import little_law_note


def test_little_law_note_compares_the_mean_ratio_with_clients_over_cores() -> None:
    served = {"one_client": {"mean_ms": 100.0, "p50_ms": 80.0}, "clients": {"mean_ms": 420.0, "p50_ms": 400.0}}
    note = little_law_note(served, clients=8, cores=2)
    assert "wait on average 4× the 1-client mean; measured 4.20× (+5.0% against that)" in note
    assert "that is 5.00× the 1-client p50" in note  # 4 x 100 / 80


def _latencies(p50: float) -> dict[str, float]:
    return {"p50_ms": p50, "p95_ms": p50 * 1.5, "mean_ms": p50 * 1.1}


def _pipeline_row(quiet: float, loaded: float) -> dict[str, object]:
    behaviour = {
        "asked": {"quiet": 30, "loaded": 24},
        "quiet": _latencies(quiet),
        "loaded": _latencies(loaded),
        "loaded_over_quiet_p50": loaded / quiet,
    }
    same = {"same_ranking": True, "max_score_gap": 0.0}
    return {"old": behaviour, "new": behaviour, "results": {"quiet": same, "loaded": same}}


def test_the_report_shows_each_wait_policy_with_its_ratio() -> None:
    from benchmarks.load.query_latency import render

    summary = {
        "cpu": "test CPU",
        "cores": 2,
        "torch_default_threads": 2,
        "faiss_default_threads": 2,
        "load_average": [0.1, 2.0],
        "store": "examples/corpus.jsonl",
        "passages": 134,
        "questions": 3,
        "min_seconds": 20.0,
        "behaviours": {"old": 2, "new": 1},
        "load": {"processes": 1, "threads": 2},
        "clients": 8,
        "wait_policies": {"spin": {"dense": _pipeline_row(4.0, 9.0)}, "passive": {"dense": _pipeline_row(4.0, 5.0)}},
    }
    report = render(summary, "python -m benchmarks.load.query_latency --questions 3")
    assert "| dense | new | spin | 4.0 | 6.0 | 9.0 | 13.5 | 2.25× | 30 / 24 |" in report
    assert "| dense | new | passive | 4.0 | 6.0 | 5.0 | 7.5 | 1.25× | 30 / 24 |" in report
    assert "*passive*: `OMP_WAIT_POLICY=PASSIVE`" in report
    assert "until it has run for 20 s in each condition" in report


def test_several_runs_give_each_ratio_its_spread_and_whether_every_run_met_the_goal() -> None:
    from benchmarks.load.query_latency import render

    runs = [
        {"spin": {"dense": _pipeline_row(4.0, loaded)}, "passive": {"dense": _pipeline_row(4.0, 5.0)}}
        for loaded in (6.0, 9.0, 7.0)
    ]
    summary = {
        "cpu": "test CPU", "cores": 2, "torch_default_threads": 2, "faiss_default_threads": 2,
        "load_average": [0.1, 2.0], "store": "examples/corpus.jsonl", "passages": 134, "questions": 3,
        "min_seconds": 20.0, "behaviours": {"old": 2, "new": 1}, "load": {"processes": 1, "threads": 2},
        "clients": 8, "wait_policies": runs[0], "runs": runs,
    }  # fmt: skip
    report = render(summary, "python -m benchmarks.load.query_latency --runs 3")
    assert "### Across 3 runs" in report
    assert "| dense | new | spin | 1.50× | 2.25× | 1.75× | 1.50× / 1.75× / 2.25× | no (1 of 3) |" in report
    assert "| dense | new | passive | 1.25× | 1.25× | 1.25× | 1.25× / 1.25× / 1.25× | yes |" in report
    assert "### Across" not in render({**summary, "runs": runs[:1]}, "python -m benchmarks.load.query_latency")
