"""The reports of benchmarks/load/index_under_search.py and server_memory.py, from made-up measurements, and
the records their indexing client sends."""

from __future__ import annotations

from typing import Any

from benchmarks.load.index_under_search import render as render_rates
from benchmarks.load.mixed_clients import make_records
from benchmarks.load.server_memory import growth, what_grows
from benchmarks.load.server_memory import render as render_memory


def test_records_are_new_short_documents_with_ids_of_their_own() -> None:
    rows = [{"id": "a", "title": "A", "text": " ".join(f"w{n}" for n in range(50))}, {"id": "b", "text": "x y"}]
    records = make_records(rows, "load", 0, 4, words=3)
    assert [r["id"] for r in records] == ["load-0", "load-1", "load-2", "load-3"]
    assert records[0] == {"id": "load-0", "title": "A", "text": "w0 w1 w2 record0"}
    assert records[1] == {"id": "load-1", "title": "", "text": "x y record1"}
    assert records[2]["text"] == "w1 w2 w3 record2"  # the second pass over the rows starts a word later


def _phase(searches: float | None, records: float | None) -> dict[str, Any]:
    found: dict[str, Any] = {"seconds": 60, "errors": 0, "first_errors": []}
    if searches is not None:
        found["searches"] = {"per_second": searches, "p50_ms": 100.0, "p95_ms": 200.0, "mean_ms": 110.0}
    if records is not None:
        found["index"] = {"asked_records_per_second": 200.0, "records_per_second": records, "p50_ms": 90.0}
    return found


def _server(alone: str, mixed_records: float) -> dict[str, Any]:
    phases = {
        "mixed": _phase(20.0, mixed_records),
        alone: _phase(40.0, None) if alone == "searches alone" else _phase(None, 60.0),
    }
    check = {"records": 100, "documents_missing": 0, "passages_before": 10}
    check.update(passages_after=110, passages_acknowledged=100, all_kept=True)
    return {"phases": phases, "check": check}


def test_the_rate_report_compares_the_queues() -> None:
    summary = {
        "cpu": "test CPU",
        "cores": 2,
        "load_average": [0.5, 3.0],
        "clients": 8,
        "pipeline": "search",
        "rate": 200.0,
        "batch": 10,
        "words": 30,
        "seconds": 30.0,
        "rounds": 2,
        "base_records": 4000,
        "query_threads": 1,
        "servers": {"shared": _server("searches alone", 10.0), "own": _server("indexing alone", 30.0)},
    }
    report = render_rates(summary, "python -m benchmarks.load.index_under_search")
    assert "| `shared` | mixed | 20.0 | 100 | 200 | 200 | 10.0 | 90 | – | 0 |" in report
    assert "10.0 in the shared queue, 30.0 in a queue of its own (3.0×; the index route alone: 60.0)" in report
    assert "| `own` | 100 | 0 | 10 → 110 | 100 | yes |" in report
    assert report.rstrip().endswith("python -m benchmarks.load.index_under_search\n```")


def _sample(seconds: float, rss: float, passages: int) -> dict[str, Any]:
    return {
        "seconds": seconds,
        "rss_mb": rss,
        "anon_mb": rss - 300,
        "file_mb": 300.0,
        "threads": 20,
        "passages": passages,
    }


def test_the_memory_report_tells_data_from_what_the_run_kept() -> None:
    samples = [_sample(0, 800, 4000), _sample(60, 900, 5000), _sample(120, 950, 10000)]
    summary: dict[str, Any] = {"samples": samples, "fresh": {"samples": [_sample(60, 940, 10010)]}}
    split = growth(summary)
    assert split["per_thousand_mb"] == 10.0 and split["kept_mb"] == 10.0  # 50 MB for 5,000 passages
    assert "what grows is the store itself" in what_grows(split)
    assert "the serving itself keeps memory" in what_grows({**split, "kept_mb": 40.0})
    summary.update(
        cpu="test CPU",
        cores=2,
        load_average=[0.5, 1.0],
        minutes=2.0,
        mix="all",
        clients=8,
        rate=200.0,
        batch=10,
        words=30,
        documents_pause=0.1,
        base_records=4000,
        sample_seconds=10.0,
        fresh_seconds=60.0,
        query_threads=1,
        idle={"rss_mb": 780.0},
        rates={"searches": {"per_second": 40.0, "errors": 0, "p50_ms": 180.0, "p95_ms": 300.0}},
    )
    report = render_memory(summary, "python -m benchmarks.load.server_memory")
    assert "| 1.0 | 900 | 600 | 300 | 20 | 5,000 |" in report
    assert "950 MB with 10,000 passages (peak 950 MB): 50 MB more, 10.0 MB per 1,000 passages written" in report
    assert "holds 940 MB with 10,010 passages" in report
    assert "hand the memory they freed back to the system never (0)" in report  # a run from before the release
    assert "thresholds: glibc's dynamic ones" in report  # a run from before the thresholds were held
    report = render_memory(
        {**summary, "release_seconds": 10, "thresholds": "held"}, "python -m benchmarks.load.server_memory"
    )
    assert "back to the system every 10 s" in report
    assert "thresholds: held at 128 KiB" in report
    assert "Where the anonymous memory" not in report  # a run from before the maps were read
    maps = {"main heap": 20.0, "thread heaps": 90.0, "other anonymous": 500.0, "thread heap count": 6}
    fresh_maps = {"main heap": 18.0, "thread heaps": 50.0, "other anonymous": 498.0, "thread heap count": 4}
    summary = {**summary, "maps": maps, "fresh": {**summary["fresh"], "maps": fresh_maps}}
    report = render_memory(summary, "python -m benchmarks.load.server_memory")
    assert "| thread heaps | 90 | 50 | +40 |" in report and "| thread heaps (count) | 6 | 4 | +2 |" in report
    assert "The largest mappings" not in report  # a run from before they were read
    maps["largest"] = [[300.0, 310.0, "other anonymous"], [87.0, 87.0, "model.safetensors"]]
    fresh_maps["largest"] = [[42.0, 42.0, "index.faiss"]]
    report = render_memory(summary, "python -m benchmarks.load.server_memory")
    assert "- long run: other anonymous 300 of 310; model.safetensors 87 of 87;" in report
    assert "- fresh: index.faiss 42 of 42." in report


def test_the_anonymous_memory_of_a_process_is_found_where_it_is() -> None:
    """A large array of this process is in its other anonymous mappings, beside a main heap."""
    import os

    import numpy as np

    from benchmarks.load.memory_maps import anonymous_breakdown

    before = anonymous_breakdown(os.getpid())
    array = np.ones(8_000_000)  # 64 MB, above any mmap threshold: a mapping of its own
    after = anonymous_breakdown(os.getpid())
    assert after["other anonymous"] - before["other anonymous"] > 55 and after["main heap"] > 0
    del array


def test_the_store_memory_report_splits_freed_memory_from_what_is_kept() -> None:
    from benchmarks.store.store_memory import render as render_store

    steps = {"start": 300.0, "written": 350.0, "trimmed": 330.0, "closed": 310.0, "reopened": 328.0}
    summary = {"cpu": "test CPU", "cores": 2, "passages": 10010, "batch": 10, "searches": 4, "threads": 4}
    report = render_store({**summary, "steps": steps, "trim": True}, "python -m benchmarks.store.store_memory")
    assert "grew the process by 50 MB (5.0 MB per 1,000 passages)" in report
    assert "gave 20 MB of it (40%) back" in report
    assert "holds +2 MB against a store opened afresh" in report
