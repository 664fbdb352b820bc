"""Corrupt files: derived index files that still parse after damage are caught by their
checksums (or by their size against the documents) and rebuilt from SQLite with a warning;
a damaged documents database is a clear error."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.commands import index_args
from tests.helpers.corpora import SMALL_CORPUS
from tests.reliability.harness import PIPELINES, assert_clear_error, assert_success, cases, cli
from tests.reliability.store_checks import (
    MORE_CORPUS,
    open_store,
    searches,
    write_corpus,
)


def _overwrite_middle(path: Path, seed: int = 3) -> None:
    """Random bytes in the middle of the file; its size (and usually its parse) unchanged."""
    data = bytearray(path.read_bytes())
    start = len(data) // 2
    data[start : start + 64] = np.random.default_rng(seed).integers(0, 256, 64, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))


def _scores_to_huge(path: Path) -> None:
    """Every BM25 partial score becomes 3.4e38: the matrix parses, the ranking is garbage."""
    matrix = np.load(path)
    np.save(path, np.full_like(matrix, np.finfo(np.float32).max))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])


def _other_store_folder(name: str) -> Callable[[Path, Path], None]:
    def copy(store: Path, other: Path) -> None:
        shutil.rmtree(store / name)
        shutil.copytree(other / name, store / name)

    return copy


def _other_store_file(relative: str) -> Callable[[Path, Path], None]:
    def copy(store: Path, other: Path) -> None:
        shutil.copy(other / relative, store / relative)

    return copy


DAMAGE: dict[str, Callable[[Path, Path], None]] = {
    "random bytes inside index.faiss": lambda store, _: _overwrite_middle(store / "dense_index" / "index.faiss"),
    "random bytes inside the BM25 score matrix": lambda store, _: _overwrite_middle(
        store / "bm25_index" / "data.csc.index.npy"
    ),
    "huge BM25 scores of the right shape": lambda store, _: _scores_to_huge(
        store / "bm25_index" / "data.csc.index.npy"
    ),
    "random bytes inside the BM25 postings": lambda store, _: _overwrite_middle(
        store / "bm25_index" / "indices.csc.index.npy"
    ),
    "random bytes inside the BM25 vocabulary": lambda store, _: _overwrite_middle(
        store / "bm25_index" / "vocab.index.json"
    ),
    "truncated index.faiss": lambda store, _: _truncate(store / "dense_index" / "index.faiss"),
    "truncated BM25 row ids": lambda store, _: _truncate(store / "bm25_index" / "rowids.npy"),
    "another store's index.faiss": _other_store_file("dense_index/index.faiss"),
    "another store's FAISS folder": _other_store_folder("dense_index"),
    "another store's BM25 folder": _other_store_folder("bm25_index"),
    "manifest claiming a later generation": lambda store, _: _edit_manifest(store / "bm25_index", generation=10**6),
    "manifest of an older version (none)": lambda store, _: (store / "dense_index" / "manifest.json").unlink(),
}


def _edit_manifest(folder: Path, **state: object) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["state"].update(state)
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.fixture(scope="session")
def other_store(tmp_path_factory: pytest.TempPathFactory, tiny_st_dir: Path) -> Path:
    """Another store built like the test store (same encoder, passage count and generation) from other texts."""
    folder = tmp_path_factory.mktemp("other_store")
    corpus = [{**d, "text": d["text"] + " Also about something else entirely."} for d in SMALL_CORPUS]
    assert_success(cli(*index_args(write_corpus(folder / "other.jsonl", corpus), folder / "store", tiny_st_dir)))
    return folder / "store"


@cases("damage", DAMAGE)
@pytest.mark.reliability(category="corrupt files", expect="correct result")
def test_damaged_index_is_rebuilt(
    indexed_store: Path,
    other_store: Path,
    damage: Callable[[Path, Path], None],
    caplog: pytest.LogCaptureFixture,
    record_property: pytest.RecordProperty,
) -> None:
    """Searching a store whose derived index files were damaged or replaced but still parse"""
    expected = searches(indexed_store)
    damage(indexed_store, other_store)
    with caplog.at_level(logging.WARNING, logger="dpr_components"):
        assert searches(indexed_store) == expected
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("rebuilding it" in w for w in warnings), f"no warning about the rebuild: {warnings}"
    # The rebuilt index was saved: the next opening trusts it without a warning.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dpr_components"):
        assert searches(indexed_store) == expected
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    record_property("warning", warnings[0][:200])


@pytest.mark.reliability(category="corrupt files", expect="correct result")
def test_stale_saved_indexes_are_caught_up(indexed_store: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """Searching a store whose saved indexes were put back from before the last indexing run"""
    saved = Path(shutil.copytree(indexed_store, tmp_path / "before"))
    assert_success(cli(*index_args(write_corpus(tmp_path / "more.jsonl", MORE_CORPUS), indexed_store, tiny_st_dir)))
    expected = searches(indexed_store)
    for name in ("dense_index", "bm25_index"):
        shutil.rmtree(indexed_store / name)
        shutil.copytree(saved / name, indexed_store / name)
    assert searches(indexed_store) == expected


@pytest.mark.reliability(category="corrupt files", expect="correct result")
def test_damaged_index_through_the_command_line(indexed_store: Path, tiny_st_dir: Path) -> None:
    """A dense search with the command line on a store whose index.faiss holds random bytes"""
    args = ["--store", indexed_store, "-q", "largest planet", "--json", "--set", f"dense.model={tiny_st_dir}"]
    clean = cli("run", PIPELINES / "dense.yml", *args)
    assert_success(clean)
    _overwrite_middle(indexed_store / "dense_index" / "index.faiss")
    open_store(indexed_store)  # the handle of the clean run is gone: the next run reads the files
    damaged = cli("run", PIPELINES / "dense.yml", *args)
    assert_success(damaged)
    assert json.loads(damaged.out) == json.loads(clean.out)


@pytest.mark.parametrize("content", [b"this is not a database at all" * 100, b"\0" * 4096], ids=["text", "zeroed page"])
@pytest.mark.reliability(category="corrupt files", expect="clear error")
def test_damaged_documents_database(indexed_store: Path, content: bytes) -> None:
    """A BM25 search on a store whose documents.sqlite is not an SQLite file"""
    (indexed_store / "documents.sqlite").write_bytes(content)
    result = cli("run", PIPELINES / "bm25.yml", "--store", indexed_store, "-q", "hamlet")
    assert_clear_error(result, "documents.sqlite", "not an SQLite file")
