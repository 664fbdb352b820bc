"""benchmarks/peers/haystack_native.py: a whole run on tiny models (both systems built from the same tiny
weights, every row measured, the page rendered again from its JSON), and the page's arithmetic on chosen
numbers (top-k cells, paired differences, the goals)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.peers import haystack_native
from benchmarks.peers.haystack_native import main, rotated
from benchmarks.peers.native_report import (
    cold_rows,
    end_to_end_rows,
    goals,
    indexing_rows,
    reranking_rows,
    retrieval_rows,
    spread,
)
from tests.benchmarks.conftest import TinyQARun

pytest.importorskip("haystack_integrations.components.rankers.sentence_transformers")
pytest.importorskip("haystack_integrations.components.readers.transformers")

RETRIEVERS = ["ours BM25", "ours dense", "ours hybrid", "Haystack BM25", "Haystack embedding", "Haystack RRF"]
RETRIEVERS += ["Haystack DBSF"]


def test_a_run_on_tiny_models(tiny_qa_run: TinyQARun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, work = tiny_qa_run.out, tmp_path / "work"
    index = tiny_qa_run.folder / "index.yml"  # torch: choosing a back end for a tiny model costs seconds
    spec = yaml.safe_load(index.read_text(encoding="utf-8"))
    spec["components"]["embedder"]["init_parameters"]["backend"] = "torch"
    index.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    options = ["--pipelines", str(tiny_qa_run.folder), "--warmup", "1", "--cold-repeats", "1", "--work", str(work)]
    options += ["--latency-limit", "1"]
    main([*tiny_qa_run.arguments, *options])
    summary = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert summary["asked"] == {str(tiny_qa_run.questions): 2}
    for system in ("ours", "haystack"):
        (run,) = summary["indexing"][system]
        assert run["passages"] == run["stored"] > 0 and run["disk_bytes"] > 0 and run["peak_mib"] > 0
    assert list(summary["retrieval"]) == RETRIEVERS
    for run in summary["retrieval"].values():
        assert len(run["ranks"]) == len(run["ms"]) == 2
        assert all(rank is None or 1 <= rank <= 20 for rank in run["ranks"])
    reranking = summary["reranking"]
    assert list(reranking["systems"]) == ["no re-ranking (hybrid order)", "ours", "ours, head alone", "Haystack"]
    agreement = reranking["agreement"]
    assert agreement["questions"] == 2 and agreement["passages"] > 0
    assert agreement["max_abs_difference"] < 1e-4  # the exported cross-encoder computes our logit, mapped
    runs = summary["end_to_end"]["runs"]
    assert list(runs) == ["qa", "qa_fast", "haystack_qa", "haystack_qa_fast"]
    for run in runs.values():
        assert all(len(run[metric][setting]) == 2 for metric in ("em", "f1") for setting in ("on", "off"))
        assert (len(run["seconds"]["1"]), len(run["seconds"]["2"])) == (1, 2)  # 1 thread: the first question only
    assert runs["qa"]["em"]["on"] == runs["qa"]["em"]["off"]  # the tiny pipelines have no no-answer
    for system in ("qa", "haystack_qa"):
        (cold,) = summary["cold"][system]
        assert cold["seconds"] > 0 and 0 < cold["rss_mib"] <= cold["peak_mib"]
    assert "who wrote hamlet" not in out.with_suffix(".json").read_text(encoding="utf-8")  # numbers only
    markdown = out.with_suffix(".md").read_text(encoding="utf-8")
    assert "python -m benchmarks.peers.haystack_native" in markdown and "$" not in markdown
    assert "threads at 1 (the first\n1 questions)" in markdown
    out.with_suffix(".md").unlink()
    main(["--out", str(out), "--from-json"])
    assert out.with_suffix(".md").read_text(encoding="utf-8") == markdown
    _started_again_measures_nothing(tiny_qa_run, options, summary, monkeypatch)


def _started_again_measures_nothing(
    tiny_qa_run: TinyQARun, options: list[str], summary: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same command on the same --work folder reads every finished phase back."""

    def measured(*_: Any) -> None:
        raise AssertionError("a finished phase was measured again")

    for name in ("measure_indexing", "measure_search", "measure_end_to_end", "measure_cold"):
        monkeypatch.setattr(haystack_native, name, measured)
    main([*tiny_qa_run.arguments, *options])
    again = json.loads(tiny_qa_run.out.with_suffix(".json").read_text(encoding="utf-8"))
    for phase in ("indexing", "retrieval", "reranking", "end_to_end", "cold"):
        assert again[phase] == summary[phase]


def test_turns_rotate() -> None:
    assert [rotated(["a", "b", "c"], turn) for turn in range(4)] == [
        ["a", "b", "c"],
        ["b", "c", "a"],
        ["c", "a", "b"],
        ["a", "b", "c"],
    ]


def _timed(seconds: float, count: int = 40) -> dict[str, list[float]]:
    return {"1": [seconds * 2] * count, "2": [seconds] * count}


def _answers(hits: int, count: int = 40) -> list[float]:
    return [1.0] * hits + [0.0] * (count - hits)


def test_the_tables_arithmetic() -> None:
    first = [1] * 10 + [3] * 10 + [None] * 20  # top-1 25%, top-5 50%, top-20 50%
    later = [1] * 5 + [8] * 20 + [None] * 15  # top-1 12.5%, top-5 12.5%, top-20 62.5%
    systems = {"ours BM25": {"ranks": first, "ms": [2.0, 4.0]}, "Haystack BM25": {"ranks": later, "ms": [500.0]}}
    ours, theirs = retrieval_rows(systems)
    assert [cell.split(" [")[0] for cell in ours[1:4]] == ["25.0", "50.0", "50.0"] and ours[4:7] == ["—"] * 3
    assert [cell.split(" [")[0] for cell in theirs[4:7]] == ["-12.5", "-37.5", "+12.5"] and theirs[7] == "500.0"
    assert theirs[5].endswith("loss") and ours[7] == "3.0"
    reranking = {
        "top_k": 5,
        "systems": {"no re-ranking": {"ranks": later, "ms": []}, "ours": {"ranks": first, "ms": [1.0]}},
    }
    baseline, ranker = reranking_rows(reranking)
    assert baseline[3].startswith("-12.5 [") and baseline[4].startswith("-37.5 [") and baseline[5] == "—"
    assert ranker[3:5] == ["—", "—"]


def test_end_to_end_rows_and_goals() -> None:
    runs = {
        "qa": {"em": {"on": _answers(30), "off": _answers(32)}, "f1": {"on": _answers(30), "off": _answers(32)},
               "seconds": _timed(0.1)},
        "haystack_qa": {"em": {"on": _answers(10), "off": _answers(20)}, "f1": {"on": _answers(10), "off": _answers(20)},
                        "seconds": _timed(0.6)},
    }  # fmt: skip
    rows = end_to_end_rows(runs)
    assert [row[0] for row in rows] == [
        "`qa`, no-answer on", "`qa`, no-answer off", "`haystack_qa`, no-answer on", "`haystack_qa`, no-answer off",
    ]  # fmt: skip
    assert rows[0][3] == "—" and rows[1][3].startswith("+5.0 [") and rows[3][3].startswith("-25.0 [")
    assert rows[0][4:] == ["200 / 200", "100 / 100"]
    indexing = {
        "ours": [{"passages": 100, "write_seconds": 1.0, "save_seconds": 1.0, "peak_mib": 300, "disk_bytes": 2**21}],
        "haystack": [
            {"passages": 100, "write_seconds": 3.0, "save_seconds": 2.0, "peak_mib": 900, "disk_bytes": 2**22}
        ],
    }
    assert indexing_rows(indexing)[0][1:] == ["100", "2.0", "50", "300", "2"]
    found = goals({"end_to_end": {"runs": runs}, "indexing": indexing})
    assert found["speed"] == pytest.approx({"1": 6.0, "2": 6.0}) and found["speed_met"]
    assert found["em_against"] == "off" and found["em"].interval.estimate == pytest.approx(25.0) and found["em_met"]
    assert found["indexing"] == pytest.approx(2.5) and found["indexing_met"]
    runs["haystack_qa"]["seconds"] = _timed(0.3)  # only 3x slower
    assert not goals({"end_to_end": {"runs": runs}, "indexing": indexing})["speed_met"]


def test_spread_and_cold_rows() -> None:
    assert spread([2.0]) == "2.0" and spread([3.0, 1.0, 2.0]) == "2.0 [1.0, 3.0]"
    runs = [
        {"seconds": 1.5, "rss_mib": 400.0, "peak_mib": 500.0},
        {"seconds": 2.5, "rss_mib": 420.0, "peak_mib": 510.0},
    ]
    assert cold_rows({"qa": runs}) == [["`qa`", "2.00 [1.50, 2.50]", "410 [400, 420]", "505 [500, 510]", "2"]]


def test_a_haystack_row_that_does_better_is_named_and_the_million_store_goal_is_read_from_scale() -> None:
    from benchmarks.peers.native_report import haystack_better, million_store, million_store_line

    ranks = {"ours": [1] * 20 + [None] * 20, "theirs": [1] * 35 + [None] * 5}
    retrieval = {name: {"ranks": ranks["ours"], "ms": [10.0]} for name in ("ours BM25", "ours dense", "ours hybrid")}
    retrieval |= {name: {"ranks": ranks["ours"], "ms": [50.0]} for name in ("Haystack BM25", "Haystack RRF")}
    retrieval |= {name: {"ranks": ranks["ours"], "ms": [50.0]} for name in ("Haystack embedding", "Haystack DBSF")}
    reranking = {"top_k": 5, "systems": {name: {"ranks": ranks["ours"], "ms": [60.0]} for name in ("ours", "Haystack")}}
    runs = {
        name: {"em": {"on": _answers(20), "off": _answers(20)}, "seconds": _timed(0.1)}
        for name in ("qa", "haystack_qa")
    }
    run = {"passages": 100, "write_seconds": 1.0, "save_seconds": 1.0, "peak_mib": 300, "disk_bytes": 2**21}
    cold = {name: [{"seconds": 2.0, "rss_mib": 700.0, "peak_mib": 700.0}] for name in ("qa", "haystack_qa")}
    summary = {"retrieval": retrieval, "reranking": reranking, "end_to_end": {"runs": runs},
               "indexing": {"ours": [run], "haystack": [run]}, "cold": cold}  # fmt: skip
    assert haystack_better(summary) == []
    retrieval["Haystack DBSF"]["ranks"] = ranks["theirs"]
    cold["haystack_qa"][0]["rss_mib"] = 600.0
    assert haystack_better(summary) == [
        *(f"Haystack DBSF top-{k} above ours hybrid" for k in (1, 5, 20)), "`haystack_qa` smaller in memory",
    ]  # fmt: skip
    scale = {"sizes": {"1000000": {"serve": {"open_s": 0.01, "first_bm25_s": 0.2, "first_dense_s": 0.1,
                                             "memory_after_open": {"anon_mb": 300.0}}}}}  # fmt: skip
    found = million_store(scale)
    assert found is not None and found["open_seconds"] == pytest.approx(0.31) and round(found["vectors_mib"]) == 1465
    assert "0.31 s to the first BM25 and dense answers, 300 MiB of heap against 1,465 MiB of vectors: **met**" in (
        million_store_line({"million_store": found})
    )
    assert million_store({"sizes": {}}) is None and "not measured" in million_store_line({"million_store": None})
