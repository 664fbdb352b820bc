"""benchmarks/cli/cold_start.py's arithmetic: the ratio to the floor (import + warm query) and its verdict."""

from __future__ import annotations

from benchmarks.cli.cold_start import render, report_values


def _summary(run_qa: list[float]) -> dict[str, object]:
    return {
        "cold": {"import haystack": [2.0, 1.0, 3.0], "haystack --help": [0.1, 0.1, 0.1], "haystack run qa": run_qa},
        "warm_query": [0.5, 0.4, 0.6],
        "store": "indexes/example",
        "machine": {"cpu": "a CPU", "cores": 2},
        "command": "python -m benchmarks.cli.cold_start",
    }


def test_ratio_is_to_the_median_import_plus_the_median_warm_query() -> None:
    values = report_values(_summary([3.5, 3.0, 9.0]))  # floor 2.0 + 0.5 = 2.5; median cold 3.5
    assert (values["floor"], values["ratio"], values["verdict"]) == ("2.50", "1.40", "met")
    assert report_values(_summary([4.0, 4.0, 4.0]))["verdict"] == "not met"  # 1.6x
    markdown = render(_summary([3.5, 3.0, 9.0]))
    assert "| `haystack run qa` | 3.50 | 3.00 | 9.00 | 3 |" in markdown and "1.40×, met" in markdown
