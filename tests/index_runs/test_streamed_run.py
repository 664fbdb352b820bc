"""``haystack run`` of an indexing pipeline on a corpus file streams it: a chunk at a time through the
pipeline, the same store as one run, checked whole before any write, resumable, one progress bar."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Pipeline

from dpr_components.cli.main import main
from dpr_components.index_runs.streamed_run import run_streamed, streamable_corpus
from dpr_components.pipeline_files.loading import load_pipeline
from dpr_components.pipeline_requests.running import run_pipeline
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.commands import index_args
from tests.helpers.paths import PIPELINES

pytestmark = pytest.mark.usefixtures("one_thread")

INDEX_YML = str(PIPELINES / "index.yml")


def _corpus(path: Path, count: int) -> Path:
    """``count`` documents of 1 to 3 passages (40 words a passage, set by the pipeline below)."""
    records = [
        {"id": f"doc{i}", "title": f"Title {i}", "text": " ".join(f"w{i}x{j}" for j in range(30 + 25 * (i % 4)))}
        for i in range(count)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _pipeline(store: Path, encoder: Path, cache: Path | None = None, progress_bar: bool = False) -> Pipeline:
    sets = {
        "writer.document_store.path": str(store),
        "embedder.model": str(encoder),
        "embedder.cache_dir": None if cache is None else str(cache),
        "embedder.progress_bar": progress_bar,
        "splitter.words_per_passage": 40,
    }
    return load_pipeline(INDEX_YML, None, [f"{k}={json.dumps(v)}" for k, v in sets.items()], False)


def _stored(path: Path) -> list[Any]:
    return EmbeddedDocumentStore(path=str(path)).filter_documents()


def test_streamed_store_equals_one_run_and_no_chunk_holds_the_corpus(tmp_path: Path, tiny_st_dir: Path) -> None:
    corpus = _corpus(tmp_path / "corpus.jsonl", 30)
    whole = _pipeline(tmp_path / "whole", tiny_st_dir)
    run_pipeline(whole, {"reader": {"path": str(corpus)}})
    whole.get_component("writer").document_store.save()

    streamed = _pipeline(tmp_path / "streamed", tiny_st_dir)
    chunks: list[int] = []

    def run(data: dict[str, Any]) -> dict[str, Any]:
        chunks.append(len(data["reader"]["records"]))
        return run_pipeline(streamed, data)

    result = run_streamed(streamed, str(corpus), {"reader": {"path": str(corpus)}}, run, chunk_chars=2_000)
    assert len(chunks) > 5 and max(chunks) < 30 and sum(chunks) == 30
    want, got = _stored(tmp_path / "whole"), _stored(tmp_path / "streamed")
    assert result == {"writer": {"documents_written": len(want)}}
    assert [(d.id, d.content, d.meta) for d in got] == [(d.id, d.content, d.meta) for d in want]
    np.testing.assert_allclose([d.embedding for d in got], [d.embedding for d in want], atol=1e-5)
    # the run built and saved both indexes (not left to a finaliser at exit)
    assert (tmp_path / "streamed" / "dense_index" / "index.faiss").is_file()
    assert (tmp_path / "streamed" / "bm25_index" / "manifest.json").is_file()


def test_a_malformed_line_refuses_the_run_before_anything_is_written(tmp_path: Path, tiny_st_dir: Path) -> None:
    corpus = _corpus(tmp_path / "corpus.jsonl", 20)
    with corpus.open("a", encoding="utf-8") as file:
        file.write('{"id": "doc3", "title": "again", "text": "a repeated id on the last line"}\n')
    pipeline = _pipeline(tmp_path / "store", tiny_st_dir)
    with pytest.raises(ValueError, match=r"corpus\.jsonl.*21.*doc3"):
        run_streamed(pipeline, str(corpus), chunk_chars=500)
    assert EmbeddedDocumentStore(path=str(tmp_path / "store")).count_documents() == 0


def test_interrupted_run_resumes_from_the_cache_without_encoding_again(tmp_path: Path, tiny_st_dir: Path) -> None:
    corpus = _corpus(tmp_path / "corpus.jsonl", 24)
    cache = tmp_path / "cache"
    first = _pipeline(tmp_path / "store", tiny_st_dir, cache)
    calls = 0

    def killed_after_two_chunks(data: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls > 2:
            raise KeyboardInterrupt
        return run_pipeline(first, data)

    with pytest.raises(KeyboardInterrupt):
        run_streamed(first, str(corpus), run=killed_after_two_chunks, chunk_chars=1_500)
    written_before = EmbeddedDocumentStore(path=str(tmp_path / "store")).count_documents()
    assert written_before > 0

    second = _pipeline(tmp_path / "store", tiny_st_dir, cache)
    encoder = second.get_component("embedder").encoder
    encoded: list[int] = []
    original = encoder.encode_passages

    def counting(texts: list[str], *args: Any, **kwargs: Any) -> Any:
        encoded.append(len(texts))
        return original(texts, *args, **kwargs)

    encoder.encode_passages = counting
    result = run_streamed(second, str(corpus), chunk_chars=1_500)
    total = len(_stored(tmp_path / "store"))
    assert result["writer"]["documents_written"] == total > written_before
    assert sum(encoded) == total - written_before  # what was cached is not encoded again


def test_one_bar_over_the_corpus_and_component_bars_restored(
    tmp_path: Path, tiny_st_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = _corpus(tmp_path / "corpus.jsonl", 12)
    pipeline = _pipeline(tmp_path / "store", tiny_st_dir, progress_bar=True)
    run_streamed(pipeline, str(corpus), chunk_chars=500, report=print)
    err = capsys.readouterr().err
    assert "Indexing: 100%" in err and "12/12" in err and "passages" in err
    assert "Encoding passages" not in err  # the embedder's per-chunk bars are off during the run
    assert pipeline.get_component("embedder").progress_bar is True


def test_streamable_only_for_a_corpus_file_into_a_writer(tmp_path: Path, tiny_st_dir: Path) -> None:
    pipeline = _pipeline(tmp_path / "store", tiny_st_dir)
    assert streamable_corpus(pipeline, {"reader": {"path": "c.jsonl"}}) == "c.jsonl"
    assert streamable_corpus(pipeline, {"reader": {"records": [{"id": "a", "text": "b"}]}}) is None
    pipeline.remove_component("writer")
    assert streamable_corpus(pipeline, {"reader": {"path": "c.jsonl"}}) is None


def test_haystack_run_index_streams_and_prints_what_it_wrote(
    tmp_path: Path, tiny_st_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = _corpus(tmp_path / "corpus.jsonl", 10)
    assert main(index_args(corpus, tmp_path / "store", tiny_st_dir)) == 0
    out, err = capsys.readouterr()
    total = len(_stored(tmp_path / "store"))
    assert out.strip() == f"writer.documents_written: {total}"
    assert "building and saving the indexes" in err
