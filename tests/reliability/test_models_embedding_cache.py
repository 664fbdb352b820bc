"""Embedding cache: passage vectors are committed to the cache after every batch of the encoder,
so indexing killed mid-encoding re-encodes only what was not saved; a damaged cache file is set
aside and its passages encoded again, never read as wrong vectors."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.commands import index_args
from tests.helpers.corpora import SMALL_CORPUS, write_jsonl
from tests.reliability.harness import (
    assert_success,
    cli,
    cli_process,
    store_snapshot,
)

PASSAGES = 6  # SMALL_CORPUS: five documents, the long one split in two passages


def _index_args(corpus: Path, store: Path, model: Path, cache: Path) -> list[str]:
    return index_args(corpus, store, model, "--set", "embedder.batch_size=2", cache_dir=cache)


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory, tiny_st_dir: Path) -> dict:
    """The store snapshot of an uninterrupted indexing run with the same settings."""
    folder = tmp_path_factory.mktemp("cache_reference")
    corpus = write_jsonl(folder / "corpus.jsonl", SMALL_CORPUS)
    assert_success(cli(*_index_args(corpus, folder / "store", tiny_st_dir, folder / "cache")))
    return store_snapshot(folder / "store")


def _cache_file(cache: Path) -> Path:
    (found,) = cache.glob("*.sqlite")
    return found


def _cached_rows(cache: Path) -> int:
    with sqlite3.connect(_cache_file(cache)) as db:
        return db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]


@pytest.fixture()
def count_encoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Number of passages each call of the encoder encodes (in this process)."""
    from dpr_components.encoders.text_encoder import TextEncoder

    counts: list[int] = []
    original = TextEncoder.encode_passages

    def counting(self, texts, *args, **kwargs):  # type: ignore[no-untyped-def]
        counts.append(len(texts))
        return original(self, texts, *args, **kwargs)

    monkeypatch.setattr(TextEncoder, "encode_passages", counting)
    return counts


@pytest.mark.reliability(category="embedding cache", expect="nothing lost")
@pytest.mark.integration
def test_indexing_killed_mid_encoding(
    tmp_path: Path,
    tiny_st_dir: Path,
    small_corpus_file: Path,
    reference: dict,
    count_encoded: list[int],
    record_property: pytest.RecordProperty,
) -> None:
    """Indexing is killed with SIGKILL after two batches of passages were encoded, then run again"""
    args = _index_args(small_corpus_file, tmp_path / "store", tiny_st_dir, tmp_path / "cache")
    killed = cli_process(*args, env={"DPR_FAULT_POINT": "embedding_cache.after_batch:2"})
    assert killed.code == -9, f"the fault point was not reached (exit {killed.code}):\n{killed.err}"
    saved = _cached_rows(tmp_path / "cache")
    assert saved == 4, "the two encoded batches were not kept"
    assert_success(cli(*args))
    assert sum(count_encoded) == PASSAGES - saved, "cached vectors were encoded again"
    assert store_snapshot(tmp_path / "store") == reference
    record_property("vectors cached before the kill / encoded by the re-run", f"{saved}/{sum(count_encoded)}")
    record_property("store equals an uninterrupted run's", True)


@pytest.fixture()
def filled_cache(tmp_path: Path, tiny_st_dir: Path, small_corpus_file: Path) -> Path:
    """The vector cache (``tmp_path/cache``) of a finished indexing run of the small corpus."""
    assert_success(cli(*_index_args(small_corpus_file, tmp_path / "first", tiny_st_dir, tmp_path / "cache")))
    return tmp_path / "cache"


@pytest.fixture()
def index_again(
    filled_cache: Path, tmp_path: Path, tiny_st_dir: Path, small_corpus_file: Path, count_encoded: list[int]
) -> Callable[[], tuple[int, dict]]:
    """Index the small corpus again, into a new store over ``filled_cache``: the passages encoded by that run
    and its store's snapshot."""

    def run() -> tuple[int, dict]:
        count_encoded.clear()
        assert_success(cli(*_index_args(small_corpus_file, tmp_path / "store", tiny_st_dir, filled_cache)))
        return sum(count_encoded), store_snapshot(tmp_path / "store")

    return run


@pytest.mark.reliability(category="embedding cache", expect="correct result")
def test_cache_file_is_not_sqlite(
    filled_cache: Path, index_again: Callable[[], tuple[int, dict]], reference: dict
) -> None:
    """Indexing with a vector cache file overwritten by random bytes"""
    cache_file = _cache_file(filled_cache)
    with sqlite3.connect(cache_file) as db:  # as a finished process leaves it: everything in the main file
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    cache_file.write_bytes(b"not a database" * 500)
    encoded, snapshot = index_again()
    assert encoded == PASSAGES
    assert cache_file.with_name(cache_file.name + ".damaged").is_file()
    assert snapshot == reference


@pytest.mark.reliability(category="embedding cache", expect="correct result")
def test_cache_vectors_of_wrong_size(
    filled_cache: Path, index_again: Callable[[], tuple[int, dict]], reference: dict
) -> None:
    """Indexing with a vector cache whose vectors were replaced by vectors of another size"""
    with sqlite3.connect(_cache_file(filled_cache)) as db:
        db.execute("UPDATE vectors SET vector = zeroblob(12)")
    encoded, snapshot = index_again()
    assert encoded == PASSAGES
    assert snapshot == reference
