"""Choosing qa_rerank.yml's decoding: short answers, the re-ranked order, span scores and the choice."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest
import yaml

from dpr_components.readers.model import resolve_reader_path
from dpr_components.utils.validation import model_and_max_length
from tests.helpers.paths import REPO
from training.reader.fit_qa_rerank import (
    QA_LENGTH_PENALTY,
    RERANK_WEIGHT,
    Decoding,
    choose,
    decoded_em,
    first_passage_em,
    grid,
    oracle_em,
    render,
    reranked_order,
    short_answers,
)

# The hybrid ranks passage 0 first; the ranker prefers passage 1 (a logit 2 higher outweighs 0.75 x 1).
# The reader's own selection likes passage 0; the ranker's folder, read as a reader, finds the answer in 1
# and has no span in passage 2.
ROW = {
    "retrieval": [11.0, 10.0, 2.0],
    "ranker": {"log_p": [-2.5, -0.5, None], "log_span": [-1.0, -0.2, None], "em": [0.0, 1.0, 0.0]},
    "reader": {"log_p": [-0.1, -3.0, -4.0], "log_span": [-0.5, -0.1, -1.0], "em": [0.0, 1.0, 0.0]},
}


def test_short_answers_keep_answers_of_at_most_the_limit_in_words() -> None:
    assert short_answers(["a vegetable", "the long answer of many words here"], 5) == ["a vegetable"]
    assert short_answers(["any length at all really yes"], None) == ["any length at all really yes"]


def test_the_reranked_order_adds_three_quarters_of_the_hybrid_score() -> None:
    assert reranked_order(ROW) == [1, 0, 2]


def test_decodings_score_the_best_span_of_the_passages_read() -> None:
    hybrid_reader = Decoding("reader", "hybrid", 10, 1.0, 0.0, 1.0)
    assert list(decoded_em([ROW], hybrid_reader)) == [0.0]  # passage 0: -0.1 - 0.5 beats -3.0 - 0.1 - log 2
    assert list(decoded_em([ROW], Decoding("reader", "reranked", 1, 1.0, 0.0, 0.0))) == [1.0]
    assert list(decoded_em([ROW], Decoding("ranker", "hybrid", 10, 1.0, 0.0, 1.0))) == [1.0]
    # the ranker's score (logit + 0.75 x hybrid) as a prior lifts passage 1 for the reader too, at γ = 4, not 2
    for gamma, expected in ((2.0, 0.0), (4.0, 1.0)):
        assert list(decoded_em([ROW], Decoding("reader", "hybrid", 2, 1.0, gamma, 1.0))) == [expected]
    assert -3.1 + 4 * (-0.5 + 7.5) - math.log(2) > -0.6 + 4 * (-2.5 + 8.25)
    assert -3.1 + 2 * (-0.5 + 7.5) - math.log(2) < -0.6 + 2 * (-2.5 + 8.25)


def test_choose_takes_the_best_mean_and_the_first_of_the_grid_on_ties() -> None:
    grid = [Decoding("reader", "hybrid", 10, 1.0, 0.0, 1.0), Decoding("ranker", "reranked", 1, 1.0, 0.0, 0.0)]
    grid.append(Decoding("ranker", "reranked", 3, 1.0, 0.0, 0.0))
    chosen, means = choose([{"questions": [ROW]}], grid)
    assert chosen == grid[1] and means[grid[2]] == means[grid[1]] == 1.0 and means[grid[0]] == 0.0


def test_ceilings_read_the_first_passage_or_the_best_of_the_first_ten() -> None:
    assert first_passage_em([ROW], "reader", "hybrid") == 0.0
    assert first_passage_em([ROW], "reader", "reranked") == 100.0
    assert oracle_em([ROW], "reader", 1) == 0.0 and oracle_em([ROW], "reader", 10) == 100.0


def test_the_pipelines_ship_the_settings_the_choice_assumed_and_chose() -> None:
    """qa_rerank.yml's reranker weight and qa_fast.yml's length prior are the script's constants,
    qa_rerank.yml reads as the chosen decoding (docs/training/selection/qa-rerank/report.json), and
    qa.yml is qa_rerank.yml with 10 candidates."""
    root = REPO
    qa = yaml.safe_load((root / "pipelines" / "qa_fast.yml").read_text(encoding="utf-8"))["components"]
    rerank = yaml.safe_load((root / "pipelines" / "qa_rerank.yml").read_text(encoding="utf-8"))["components"]
    default = yaml.safe_load((root / "pipelines" / "qa.yml").read_text(encoding="utf-8"))["components"]
    assert {name: c["init_parameters"] for name, c in default.items() if name != "hybrid"} == {
        name: c["init_parameters"] for name, c in rerank.items() if name != "hybrid"
    }
    hybrid = default["hybrid"]["init_parameters"]
    assert hybrid == {**rerank["hybrid"]["init_parameters"], "top_k": 10}
    report = json.loads((root / "docs/training/selection/qa-rerank/report.json").read_text(encoding="utf-8"))
    chosen = report["chosen"]
    assert rerank["reranker"]["init_parameters"]["retrieval_weight"] == RERANK_WEIGHT
    assert qa["reader"]["init_parameters"]["length_penalty"] == QA_LENGTH_PENALTY
    reader = rerank["reader"]["init_parameters"]
    if chosen["reader"] == "ranker":
        assert reader["model"] == rerank["reranker"]["init_parameters"]["model"]
    else:  # the candidate reader, shipped as a bundled folder whose training record names the run it came from
        assert chosen["reader"] == "candidate" and reader["model"].startswith("bundled:")
        assert reader["max_length"] == report["candidate_length"]
        record = json.loads((resolve_reader_path(reader["model"]) / "reader_info.json").read_text(encoding="utf-8"))
        assert str(Path(record["training"]["output_dir"]) / "export") == report["candidate"]
    assert chosen["order"] == "reranked" and rerank["reranker"]["init_parameters"]["top_k"] == chosen["passages"]
    assert (reader["selection_weight"], reader["score_prior"], reader["rank_prior"]) == (
        chosen["selection_weight"], chosen["ranker_weight"], chosen["rank_prior"],
    )  # fmt: skip
    assert reader["length_penalty"] == QA_LENGTH_PENALTY and reader["ranking"] == "combined"


def test_a_candidate_reader_joins_the_grid_and_the_report() -> None:
    # the candidate reads passage 1 (the answer) as the best span of the re-ranked first passage
    row = {**ROW, "candidate": {"log_p": [-1.0, -0.5, -3.0], "log_span": [-0.3, -0.1, -1.0], "em": [0.0, 1.0, 0.0]}}
    summary = {"store": "s", "candidate": "runs/span/export", "candidate_length": 192}
    summary["splits"] = [{"file": "squad.jsonl", "questions": [row]}]
    decodings = grid(["reader", "ranker", "candidate"])
    assert {d.reader for d in decodings} == {"reader", "ranker", "candidate"} and len(decodings) == 3 * 360
    chosen, means = choose(summary["splits"], decodings)
    report = render(summary, chosen, means, "python -m training.reader.fit_qa_rerank ...")
    assert "*candidate*: runs/span/export (192 tokens)" in report
    assert "the best with the candidate reading | candidate, reranked top 1" in report
    assert "candidate: re-ranked first 100.0, oracle 100.0" in report
    for bad in ("runs/span/export", "runs/span/export:0", ":192"):
        with pytest.raises(argparse.ArgumentTypeError, match="MODEL:MAX_LENGTH"):
            model_and_max_length(bad)
    assert model_and_max_length("bundled:reader-minilm:256") == ("bundled:reader-minilm", 256)
