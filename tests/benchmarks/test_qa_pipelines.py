"""benchmarks/reader/qa_pipelines.py: variants parsed, every pipeline asked each question on both thread
counts, the table's arithmetic (the best exact match within the budget), on tiny models."""

from __future__ import annotations

import argparse
import json

import pytest

from benchmarks.reader.qa_pipelines import main, parse_variant, percentile_ms, table_rows
from tests.benchmarks.conftest import TinyQARun


def test_variants() -> None:
    assert parse_variant("qa") == ("qa", "qa", [])
    assert parse_variant("cheap=qa_rerank;ranker.top_k=10;reader.top_k=3") == (
        "cheap",
        "qa_rerank",
        ["ranker.top_k=10", "reader.top_k=3"],
    )
    for bad in ("=qa", "x=qa;top_k=3", "x=qa;reader.top_k"):
        with pytest.raises(argparse.ArgumentTypeError, match="a variant is LABEL=PIPELINE"):
            parse_variant(bad)


def test_budget_picks_the_best_exact_match_within_it() -> None:
    def run(hits: int, seconds_1: float, seconds_2: float) -> dict[str, object]:
        em = [1.0] * hits + [0.0] * (40 - hits)
        return {"em": em, "f1": em, "seconds": {"1": [seconds_1] * 40, "2": [seconds_2] * 40}}

    runs = {"fast": run(20, 0.2, 0.1), "better": run(30, 0.5, 0.3), "best_but_slow": run(40, 0.9, 0.5)}
    rows, chosen = table_rows({"runs": runs, "budget_ms": 400.0})
    assert chosen == "better"
    assert (
        rows[1][0] == "`better` (chosen)" and rows[1][3].startswith("+25.0 [") and rows[1][3].endswith("gain")
    )  # 75 - 50 EM, paired
    assert rows[2][4:] == ["900 / 900", "500 / 500"]
    assert table_rows({"runs": runs, "budget_ms": 50.0})[1] is None
    runs["better_and_faster"] = run(30, 0.4, 0.2)  # as good as "better", faster: chosen on the tie
    assert table_rows({"runs": runs, "budget_ms": 400.0})[1] == "better_and_faster"
    assert percentile_ms([0.1, 0.2, 0.3, 0.4, 1.0], 0.9) == pytest.approx(1000.0)


def test_a_run_on_tiny_models(tiny_qa_run: TinyQARun) -> None:
    questions, out, qa = tiny_qa_run.questions, tiny_qa_run.out, tiny_qa_run.folder / "qa.yml"
    variants = [f"qa={qa}", f"one={qa};reader.top_k=1", f"merged={qa};reader.merge_answers=true"]
    main([*tiny_qa_run.arguments, "--warmup", "1", *(f"--pipeline={variant}" for variant in variants)])
    summary = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert summary["asked"] == {str(questions): 2}  # the 6-word answer's question is left out
    for run in summary["runs"].values():
        assert len(run["em"]) == len(run["f1"]) == 2 and all(len(run["seconds"][t]) == 2 for t in ("1", "2"))
    assert summary["runs"]["qa"]["em"] == summary["runs"]["one"]["em"]  # the same first answers
    assert "who wrote hamlet" not in out.with_suffix(".json").read_text(encoding="utf-8")  # numbers only
    markdown = out.with_suffix(".md").read_text(encoding="utf-8")
    assert summary["variants"]["merged"].endswith(";reader.merge_answers=true")
    assert (
        "`qa`" in markdown
        and "`one`" in markdown
        and "`merged`" in markdown
        and "python -m benchmarks.reader.qa_pipelines" in markdown
    )
    out.with_suffix(".md").unlink()
    main(["--out", str(out), "--from-json"])
    assert out.with_suffix(".md").read_text(encoding="utf-8") == markdown
