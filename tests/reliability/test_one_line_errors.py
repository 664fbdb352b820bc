"""Mistakes that once ended in a raw library error: each is now one line naming the parameter and the fix."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from haystack import Document

from tests.reliability.harness import PIPELINES, assert_clear_error, assert_success, cli

COMMAND_LINE = pytest.mark.reliability(category="command line", expect="clear error")
COMPONENTS = pytest.mark.reliability(category="component inputs", expect="clear error")


@COMMAND_LINE
@pytest.mark.parametrize("how", ["--set", "--store"])
def test_empty_store_folder(indexed_store: Path, how: str) -> None:
    """An empty store folder given to a search (--set bm25.document_store.path= or --store '')"""
    option = ["--set", "bm25.document_store.path="] if how == "--set" else ["--store", ""]
    result = cli("run", PIPELINES / "bm25.yml", "-q", "who wrote hamlet", *option)
    assert_clear_error(result, "an EmbeddedDocumentStore's path is empty; give the store's folder")


@COMMAND_LINE
def test_load_pipeline_without_a_file() -> None:
    """load_pipeline(None) from Python"""
    from dpr_components.pipeline_files.loading import PipelineFileError, load_pipeline

    with pytest.raises(PipelineFileError, match="pipeline must be a YAML file's path or a packaged pipeline's name"):
        load_pipeline(None)  # type: ignore[arg-type]


@COMMAND_LINE
def test_search_server_that_does_not_answer(indexed_store: Path, caplog: pytest.LogCaptureFixture) -> None:
    """haystack run search_elasticsearch.yml --allow-network against an endpoint where no server listens"""
    from tests.helpers.serving import free_port

    hosts = f"http://127.0.0.1:{free_port()}"
    result = cli(
        "run",
        PIPELINES / "search_elasticsearch.yml",
        "-q",
        "who wrote hamlet",
        "--allow-network",
        "--set",
        f"bm25.document_store.hosts={hosts}",
        "--set",
        f"dense.document_store.hosts={hosts}",
        "--set",
        f"ranker.document_store.hosts={hosts}",
    )
    assert_clear_error(result, f"cannot reach the server at 127.0.0.1:{hosts.rsplit(':', 1)[1]} (connection refused)")
    assert not [r for r in caplog.records if r.exc_info and r.levelno >= logging.WARNING]  # no retry tracebacks


@pytest.mark.reliability(category="model folders", expect="correct result")
@pytest.mark.integration
def test_export_the_bundled_pair_by_its_own_name(tmp_path: Path) -> None:
    """haystack export-st bundled:dpr-minilm-multi (the pair's name, without /question_encoder)"""
    assert_success(cli("export-st", "bundled:dpr-minilm-multi", tmp_path / "question"))
    assert_success(cli("export-st", "bundled:dpr-minilm-multi", tmp_path / "passage", "--role", "passage"))
    assert (tmp_path / "question" / "modules.json").is_file() and (tmp_path / "passage" / "modules.json").is_file()
    question = (tmp_path / "question" / "model.safetensors").read_bytes()
    assert question != (tmp_path / "passage" / "model.safetensors").read_bytes()  # the two sides, not one twice


@pytest.mark.reliability(category="model folders", expect="clear error")
def test_bundled_pair_where_one_model_is_needed() -> None:
    """A bundled encoder pair's name where one model folder is needed (a reader, a single encoder)"""
    from dpr_components.encoders.bundled import BundledModelError, model_folder

    with pytest.raises(BundledModelError, match="name its question encoder, bundled:dpr-minilm-multi/question_encoder"):
        model_folder("bundled:dpr-minilm-multi", "encoder", "")


def _document_components(tiny_reader_dir: Path) -> dict[str, tuple[Any, dict[str, Any]]]:
    from haystack_integrations.components.preprocessors.dpr.dpr_passage_splitter import DPRPassageSplitter
    from haystack_integrations.components.rankers.dpr.hybrid_ranker import HybridRanker
    from haystack_integrations.components.rankers.dpr.passage_ranker import PassageRanker
    from haystack_integrations.components.readers.dpr.span_reader import SpanReader

    reader = {"model": str(tiny_reader_dir), "precision": "fp32"}
    return {
        "PassageRanker": (PassageRanker(**reader), {"query": "who"}),
        "SpanReader": (SpanReader(**reader), {"query": "who"}),
        "DPRPassageSplitter": (DPRPassageSplitter(), {}),
        "HybridRanker": (HybridRanker(mode="rrf"), {"bm25_documents": []}),
    }


@COMPONENTS
@pytest.mark.parametrize("name", ["PassageRanker", "SpanReader", "DPRPassageSplitter", "HybridRanker"])
@pytest.mark.parametrize("documents", [None, "text", [Document(content="a"), 3]], ids=["None", "a string", "an int"])
def test_documents_that_are_not_documents(tiny_reader_dir: Path, name: str, documents: Any) -> None:
    """A component that takes documents is called with None, a string, or a list holding a number"""
    component, other_inputs = _document_components(tiny_reader_dir)[name]
    field = "dense_documents" if name == "HybridRanker" else "documents"
    expected = (
        f"{field}\\[1\\] must be a Document, got int" if isinstance(documents, list) else f"{field} must be a list"
    )
    with pytest.raises(ValueError, match=expected):
        component.run(**other_inputs, **{field: documents})


@COMMAND_LINE
def test_merge_through_a_pipeline_without_a_writer(tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path) -> None:
    """haystack merge-shards with a search pipeline (it has no writer) and a store folder that does not exist"""
    from tests.reliability.shard_checks import shard_args

    assert_success(cli(*shard_args(small_corpus_file, "1/1", tmp_path / "shards", tiny_st_dir)))
    result = cli("merge-shards", PIPELINES / "bm25.yml", tmp_path / "shards", "--store", tmp_path / "store")
    assert_clear_error(result, "merge-shards writes through the pipeline's writer; it has none (use index.yml)")
    assert not (tmp_path / "store").exists()
