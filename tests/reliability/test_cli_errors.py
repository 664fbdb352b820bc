"""Error paths that once ended in a traceback, a misleading line or a silent default: each now says what to fix."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.commands import index_args
from tests.reliability.harness import (
    PIPELINES,
    assert_clear_error,
    cli,
    store_snapshot,
)

COMMAND_LINE = pytest.mark.reliability(category="command line", expect="clear error")
QUERIES = pytest.mark.reliability(category="queries", expect="clear error")
YAML = pytest.mark.reliability(category="yaml", expect="clear error")
STORE_FAULTS = pytest.mark.reliability(category="store faults", expect="clear error")


def _questions(tmp_path: Path, answers: list[str]) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text(
        json.dumps({"id": "q1", "question": "who wrote hamlet", "answers": answers}) + "\n", encoding="utf-8"
    )
    return path


def _eval(store: Path, questions: Path, out: Path, *args: str) -> list[object]:
    return ["eval", PIPELINES / "bm25.yml", "--questions", questions, "--store", store, "--out", out, *args]


@COMMAND_LINE
def test_eval_top_k_zero(indexed_store: Path, tmp_path: Path) -> None:
    """haystack eval --top-k 0"""
    result = cli(*_eval(indexed_store, _questions(tmp_path, ["Shakespeare"]), tmp_path / "out", "--top-k", "0"))
    assert_clear_error(result, "--top-k 0: must be a whole number from 1 to 10,000")
    assert not (tmp_path / "out" / "report.json").exists()


@COMMAND_LINE
def test_eval_bad_answer_pattern(indexed_store: Path, tmp_path: Path) -> None:
    """haystack eval --match regex with an answer that is not a regular expression"""
    questions = _questions(tmp_path, ["(Shake"])
    result = cli(*_eval(indexed_store, questions, tmp_path / "out", "--match", "regex"))
    assert_clear_error(
        result, str(questions), "question 'q1'", "answer pattern '(Shake' is not a valid regular expression"
    )
    assert "Evaluating" not in result.err  # refused before any system ran


@QUERIES
@pytest.mark.parametrize("pipeline", ["bm25.yml", "dense.yml"])
def test_query_with_a_lone_surrogate(indexed_store: Path, tiny_st_dir: Path, pipeline: str) -> None:
    """A query holding bytes that are not UTF-8 (a lone surrogate once decoded)"""
    extra = ["--set", f"dense.model={tiny_st_dir}"] if pipeline == "dense.yml" else []
    result = cli("run", PIPELINES / pipeline, "--store", indexed_store, *extra, "-q", "who \udced\udca0\udc80 wrote")
    assert_clear_error(result, "the query is not valid Unicode", "lone surrogate U+DCED at character 4")


@COMMAND_LINE
def test_set_a_component_without_parameter(indexed_store: Path) -> None:
    """--set bm25=3 (a component name without a parameter)"""
    result = cli("run", PIPELINES / "bm25.yml", "--store", indexed_store, "--set", "bm25=3", "-q", "x")
    assert_clear_error(result, "--set bm25: name a parameter of the component, as in --set bm25.PARAMETER=VALUE")


@COMMAND_LINE
def test_store_is_a_regular_file(tmp_path: Path) -> None:
    """--store naming a regular file"""
    store = tmp_path / "store"
    store.write_text("not a store", encoding="utf-8")
    result = cli("run", PIPELINES / "bm25.yml", "--store", store, "-q", "x")
    assert_clear_error(result, f"store folder {store} is a file, not a folder")


@COMMAND_LINE
def test_set_integer_of_5000_digits(indexed_store: Path) -> None:
    """--set bm25.top_k with a 5,000-digit integer"""
    result = cli(
        "run", PIPELINES / "bm25.yml", "--store", indexed_store, "--set", f"bm25.top_k={'9' * 5000}", "-q", "x"
    )
    assert_clear_error(result, "--set bm25.top_k: a number of 5,000 digits is too long")


@YAML
def test_yaml_integer_of_5000_digits(indexed_store: Path, tmp_path: Path) -> None:
    """A pipeline file with a 5,000-digit integer parameter"""
    text = (PIPELINES / "bm25.yml").read_text(encoding="utf-8").replace("top_k: 10", f"top_k: {'9' * 5000}")
    assert "9" * 5000 in text
    path = tmp_path / "big_number.yml"
    path.write_text(text, encoding="utf-8")
    result = cli("run", path, "--store", indexed_store, "-q", "x")
    assert_clear_error(result, str(path), "a value cannot be read", "5000 digits")


@pytest.fixture()
def small_sqlite_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's page limit set just above what each store database holds: the next big write finds the disk full."""
    from dpr_components.document_stores import document_table

    connect = document_table._connect

    def limited(path: Path | None, read_only: bool) -> object:
        db = connect(path, read_only)
        if path is not None and not read_only:
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            db.execute(f"PRAGMA max_page_count = {max(pages, 40) + 2}")
        return db

    monkeypatch.setattr(document_table, "_connect", limited)


@pytest.mark.reliability(category="store faults", expect="nothing lost")
def test_disk_full_while_writing_documents(
    indexed_store: Path,
    tiny_st_dir: Path,
    tmp_path: Path,
    small_sqlite_limit: None,
    record_property: pytest.RecordProperty,
) -> None:
    """The disk fills up while documents are written to the store's SQLite database"""
    before = store_snapshot(indexed_store)
    corpus = tmp_path / "more.jsonl"
    corpus.write_text(
        "\n".join(json.dumps({"id": f"d{i}", "title": "T", "text": f"words {i} " * 90}) for i in range(300)) + "\n",
        encoding="utf-8",
    )
    result = cli(*index_args(corpus, indexed_store, tiny_st_dir))
    assert_clear_error(result, f"disk full while writing {indexed_store / 'documents.sqlite'}")
    assert store_snapshot(indexed_store) == before
    record_property("documents kept", len(before))


@STORE_FAULTS
def test_lock_file_cannot_be_opened(indexed_store: Path) -> None:
    """The store's lock file is replaced by a folder (it cannot be opened)"""
    (indexed_store / "store.lock").unlink()
    (indexed_store / "store.lock").mkdir()
    result = cli("run", PIPELINES / "bm25.yml", "--store", indexed_store, "-q", "hamlet")
    assert_clear_error(result, f"cannot open the store's lock file {indexed_store / 'store.lock'}")


@pytest.mark.reliability(category="concurrency", expect="correct result")
def test_search_waiting_for_a_lock_says_so(indexed_store: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A search starts while another process holds the store's lock: it says it waits, then answers"""
    import fcntl

    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    holder = open(indexed_store / "store.lock", "ab")  # noqa: SIM115 - another open file description: as another process
    fcntl.flock(holder, fcntl.LOCK_EX)
    release = threading.Timer(0.5, lambda: fcntl.flock(holder, fcntl.LOCK_UN))
    release.start()
    started = time.monotonic()
    try:
        with caplog.at_level(logging.WARNING, logger="dpr_components.document_stores.store_lock"):
            store = EmbeddedDocumentStore(path=str(indexed_store), autosave=False)
            found = store.bm25_retrieval("hamlet", top_k=1)
    finally:
        release.join()
        holder.close()
    assert found and found[0].meta["document_id"] == "hamlet"
    assert time.monotonic() - started >= 0.4
    assert any("waiting for another process that holds" in record.getMessage() for record in caplog.records)
