"""pipelines/qa.yml end to end through the ``haystack`` command, on tiny models and a small corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpr_components.cli.main import main
from dpr_components.pipeline_files.loading import load_pipeline
from tests.helpers.paths import PIPELINES

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture()
def store(indexed_store: Path) -> Path:
    """The small corpus indexed with the tiny encoder (the shared ``indexed_store``)."""
    return indexed_store


def _qa_args(store: Path, reader: Path, dense: Path, *extra: str) -> list[str]:
    return [
        "run",
        str(PIPELINES / "qa.yml"),
        "--store",
        str(store),
        "--set",
        f"reranker.model={reader}",
        "--set",
        f"reader.model={reader}",
        "--set",
        f"hybrid.model={dense}",
        "--set",
        "reader.no_answer=false",  # its calibration was fitted for the packaged reader, not a tiny random one
        *extra,
    ]


def test_qa_yaml_reranks_ten_candidates_then_reads() -> None:
    pipeline = load_pipeline(PIPELINES / "qa.yml")
    assert list(pipeline.graph.successors("hybrid")) == ["reranker"]
    assert list(pipeline.graph.successors("reranker")) == ["reader"]
    assert pipeline.get_component("hybrid").top_k == 10
    assert pipeline.get_component("reranker").model == "bundled:ranker-minilm"
    assert pipeline.get_component("reader").model == "bundled:rerank-reader-minilm"


def test_qa_fast_yaml_reads_the_hybrids_passages() -> None:
    pipeline = load_pipeline(PIPELINES / "qa_fast.yml")
    assert list(pipeline.graph.successors("hybrid")) == ["reader"]
    assert pipeline.get_component("hybrid").top_k == 10
    assert pipeline.get_component("reader").model == "bundled:reader-minilm"


def test_qa_pipeline_answers_from_the_store(
    store: Path,
    tiny_reader_dir: Path,
    tiny_st_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_qa_args(store, tiny_reader_dir, tiny_st_dir, "-q", "who wrote hamlet", "--json")) == 0
    result = json.loads(capsys.readouterr().out)
    answers = result["reader"]["answers"]
    assert 1 <= len(answers) <= 5
    for answer in answers:
        content = answer["document"]["content"]
        offset = answer["document_offset"]
        assert content[offset["start"] : offset["end"]] == answer["data"]
        assert {"bm25_score", "dense_score"} <= set(answer["document"]["meta"])
        assert isinstance(answer["meta"]["passage_score"], float)
    # A table by default, and --top-k sets the reader's answers.
    assert main(_qa_args(store, tiny_reader_dir, tiny_st_dir, "-q", "highest mountain", "--top-k", "1")) == 0
    table = capsys.readouterr().out
    assert "reader.answers:" in table and "passage_score" in table and "  2. " not in table


def test_qa_pipeline_reports_a_missing_reader_or_an_empty_question(
    store: Path,
    tiny_reader_dir: Path,
    tiny_st_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_qa_args(store, tmp_path / "no-reader", tiny_st_dir, "-q", "who wrote hamlet")) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(_qa_args(store, tiny_reader_dir, tiny_st_dir, "-q", "  ")) == 2
    assert "empty" in capsys.readouterr().err
