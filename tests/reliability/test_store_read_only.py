"""Read-only store: a folder that cannot be written to is searched without writing anything
(SQLite opened read-only, indexes kept in memory); a write is a clear error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from haystack import Document

from dpr_components.document_stores.document_table import ReadOnlyStoreError
from tests.helpers.commands import index_args
from tests.reliability.harness import PIPELINES, assert_clear_error, assert_success, cli
from tests.reliability.store_checks import (
    MORE_CORPUS,
    open_store,
    searches,
    write_corpus,
)


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


@pytest.fixture()
def read_only_store(indexed_store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test store with its folder made read-only. Tests may run as root, whom chmod does not
    stop, so the store's writability check (os.access) is also told the truth a user would get."""
    import gc

    open_store(indexed_store).count_documents()
    gc.collect()  # the last connection closed: SQLite folds its write-ahead log back into the file
    assert not (indexed_store / "documents.sqlite-wal").exists()
    real_access = os.access

    def access(path: object, mode: int, *args: object, **kwargs: object) -> bool:
        inside = Path(os.fspath(path)).resolve().is_relative_to(indexed_store.resolve())  # type: ignore[arg-type]
        return False if inside and mode & os.W_OK else real_access(path, mode, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    for path in [indexed_store, *indexed_store.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    yield indexed_store
    for path in [indexed_store, *indexed_store.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)


@pytest.mark.reliability(category="read-only store", expect="correct result")
def test_search_a_read_only_store(read_only_store: Path, tiny_st_dir: Path) -> None:
    """BM25 and dense searches with the command line on a store in a read-only folder"""
    before = _files(read_only_store)
    for pipeline, extra in (("bm25.yml", []), ("dense.yml", ["--set", f"dense.model={tiny_st_dir}"])):
        result = cli(
            "run", PIPELINES / pipeline, "--store", read_only_store, "-q", "highest mountain", "--json", *extra
        )
        assert_success(result)
        assert next(iter(json.loads(result.out).values()))["documents"]
    assert _files(read_only_store) == before, "searching wrote to the read-only folder"


@pytest.mark.reliability(category="read-only store", expect="correct result")
def test_read_only_store_with_missing_indexes(
    indexed_store: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Searching a read-only store whose derived indexes are missing"""
    import shutil

    expected = searches(indexed_store)
    shutil.rmtree(indexed_store / "bm25_index")
    shutil.rmtree(indexed_store / "dense_index")
    folder = request.getfixturevalue("read_only_store")
    before = _files(folder)
    store = open_store(folder)
    assert store.read_only
    assert searches(folder) == expected  # rebuilt in memory
    assert _files(folder) == before


@pytest.mark.reliability(category="read-only store", expect="clear error")
def test_index_into_a_read_only_store(read_only_store: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """Indexing more documents into a store in a read-only folder"""
    before = _files(read_only_store)
    result = cli(*index_args(write_corpus(tmp_path / "more.jsonl", MORE_CORPUS), read_only_store, tiny_st_dir))
    assert_clear_error(result, "read-only", str(read_only_store))
    assert _files(read_only_store) == before


@pytest.mark.reliability(category="read-only store", expect="clear error")
def test_write_and_delete_through_the_api(read_only_store: Path) -> None:
    """Writing or deleting documents through the API on a store in a read-only folder"""
    store = open_store(read_only_store)
    with pytest.raises(ReadOnlyStoreError, match="read-only"):
        store.write_documents([Document(id="new", content="new text")])
    with pytest.raises(ReadOnlyStoreError, match="read-only"):
        store.delete_documents(["hamlet#0"])
    assert store.count_documents() == 6
