"""The end-to-end indexing benchmark: its progress-bar parsing, table arithmetic and report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.scale import index_corpus
from benchmarks.scale.index_corpus import elapsed_seconds, finished_bars, render, summary_row, written

PROGRESS = (
    "Checking corpus: 10doc [00:00, 5000.0doc/s]\n"
    "Indexing:  50%|#####     | 5/10 [00:01<00:01, 5.0doc/s, 9 passages, 9/s]\r"
    "Indexing: 100%|##########| 10/10 [01:02<00:00, 5.0doc/s, 20 passages, 9/s]\n"
    "BM25 index: 100%|##########| 10/10 [1:00:03<00:00, 9.9doc/s]\n"
)


def _run(seconds: float, exit_code: int, cached: int, bars: dict, output: list[str]) -> dict:
    return {
        "seconds": seconds,
        "peak_mib": 2048,
        "exit": exit_code,
        "killed": exit_code == -9,
        "output": output,
        "bars": bars,
        "vectors_cached_after": cached,
    }


def _result(runs: list[dict], completed: bool = True) -> dict:
    machine = {"cpu": "Test CPU", "cores": 2}
    command = "python -m benchmarks.scale.index_corpus --passages 1000"
    return {
        "passages": 1000,
        "completed": completed,
        "isa": "native",
        "runs": runs,
        "machine": machine,
        "command": command,
    }


def test_tqdm_elapsed_times_are_seconds() -> None:
    assert (elapsed_seconds("01:02"), elapsed_seconds("1:00:03")) == (62, 3603)


def test_finished_bars_keep_the_last_complete_line_of_each() -> None:
    assert finished_bars(PROGRESS) == {
        "Indexing": {"count": 10, "seconds": 62},
        "BM25 index": {"count": 10, "seconds": 3603},
    }


def test_a_row_adds_the_runs_and_splits_the_phases() -> None:
    bars = {"Indexing": {"count": 500, "seconds": 60}}
    first = _run(50.0, -9, 400, bars, [])
    second = _run(
        50.0, 0, 1000, {**bars, "BM25 index": {"count": 1000, "seconds": 5}}, ["writer.documents_written: 1000"]
    )
    row = summary_row(_result([first, second]))
    assert row[:5] == ["1,000", "native", "killed at 50 s, resumed", "100 (1.7 min)", "10.0"]
    assert row[5:8] == ["120", "5", "-25"]
    assert row[-1] == f"{21_015_324 / 10 / 3600:.0f} h"
    assert written(second) == 1000


def test_a_run_from_cached_vectors_gives_no_rate() -> None:
    result = {**_result([_run(40.0, 0, 1000, {"BM25 index": {"count": 1000, "seconds": 5}}, [])]), "cached_before": 990}
    row = summary_row(result)
    assert row[2] == "from 990 cached vectors" and row[4] == "–" and row[-1] == "–"
    assert row[6:8] == ["5", "35"]


def test_continuing_needs_an_earlier_cache(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "corpus-10.jsonl").write_text("{}\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="holds no vectors"):
        index_corpus.measure(10, tmp_path, "native", None, resume=True)


def test_a_run_from_before_streaming_shows_its_encoding_bar() -> None:
    bars = {"Encoding passages": {"count": 1000, "seconds": 70}, "BM25 index": {"count": 1000, "seconds": 5}}
    row = summary_row(_result([_run(100.0, 0, 1000, bars, [])]))
    assert row[5:8] == ["encoding only: 70", "5", "25"]


def test_a_failed_run_shows_no_rate() -> None:
    row = summary_row(_result([_run(80.0, -9, 900, {}, [])], completed=False))
    assert row[2] == "failed: exit -9 after 80 s in all" and row[4] == "–" and row[8] == "2,048"


def test_the_report_names_the_resumed_run_and_the_commands() -> None:
    first = _run(50.0, -9, 400, {}, [])
    second = _run(70.0, 0, 1000, {}, ["writer.documents_written: 1000"])
    markdown = render([_result([first, second])], "python -m benchmarks.scale.index_corpus --report x.json")
    assert "the second run encoded the other 600 passages in 70 s and wrote 1,000 passages" in markdown
    assert "python -m benchmarks.scale.index_corpus --passages 1000" in markdown and "Test CPU" in markdown


def test_report_mode_renders_saved_runs(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    run.write_text(json.dumps(_result([_run(10.0, 0, 1000, {}, [])])), encoding="utf-8")
    out = tmp_path / "report"
    assert index_corpus.main(["--report", str(run), "--report-out", str(out)]) == 0
    # Each row is named by its file: two runs of one command stay apart.
    assert "| run | 1,000 | native | one run |" in out.with_suffix(".md").read_text(encoding="utf-8")


def test_measuring_needs_an_output_file() -> None:
    with pytest.raises(SystemExit, match="give --out"):
        index_corpus.main(["--passages", "10"])
