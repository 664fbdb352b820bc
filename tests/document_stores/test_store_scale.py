"""Opening a large store without linear work: the vector counter, verify-once checksums, memory-mapped indexes."""

from __future__ import annotations

import gc
import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from dpr_components.document_stores import index_files
from dpr_components.document_stores.dense_index import DenseIndex
from dpr_components.document_stores.document_table import (
    VECTOR_COUNT_KEY,
    DocumentTable,
)
from dpr_components.document_stores.index_files import (
    IndexFilesError,
    verified_state,
    write_index_directory,
)
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

DIM = 8


def _docs(n: int, start: int = 0, seed: int = 0, with_vectors: bool = True) -> list[Document]:
    rng = np.random.default_rng(seed)
    words = ["cats purr", "dogs bark", "rivers flow", "stars shine"]
    return [
        Document(
            id=f"d{i}",
            content=f"{words[i % 4]} item {i}",
            meta={"title": f"T{i % 3}"},
            embedding=rng.normal(size=DIM).astype(np.float32).tolist() if with_vectors else None,
        )
        for i in range(start, start + n)
    ]


def _scanned(path: Path) -> int:
    with sqlite3.connect(path / "documents.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM documents WHERE embedding IS NOT NULL").fetchone()[0]


def _counted(store: EmbeddedDocumentStore) -> int:
    return store._backend.table.vector_count()[0]


def _reopen(path: Path, **settings: object) -> EmbeddedDocumentStore:
    gc.collect()  # the folder's backend is shared per process until its last handle is gone
    return EmbeddedDocumentStore(path=str(path), **settings)  # type: ignore[arg-type]


# -- 1. vector count kept by the table ---------------------------------------------------------


def test_vector_count_follows_every_kind_of_write(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = EmbeddedDocumentStore(path=str(path))
    store.write_documents(_docs(10) + _docs(5, start=10, with_vectors=False))
    assert _counted(store) == _scanned(path) == 10
    # Overwrites: a vector removed, a vector added to a row without one, a vector replaced.
    overwrite = [
        Document(id="d0", content="no vector now"),
        Document(id="d10", content="a vector now", embedding=[0.5] * DIM),
        Document(id="d1", content="another vector", embedding=[0.25] * DIM),
    ]
    store.write_documents(overwrite, policy=DuplicatePolicy.OVERWRITE)
    assert _counted(store) == _scanned(path) == 10
    store.write_documents(_docs(3, start=20), policy=DuplicatePolicy.SKIP)
    store.write_documents(_docs(3, start=20, seed=1), policy=DuplicatePolicy.SKIP)  # skipped: nothing counted
    assert _counted(store) == _scanned(path) == 13
    store.delete_documents(["d2", "d11"])  # one with a vector, one without
    assert _counted(store) == _scanned(path) == 12
    store.delete_by_filter({"field": "meta.title", "operator": "==", "value": "T0"})
    assert _counted(store) == _scanned(path)
    store._backend.table.delete_all()
    assert _counted(store) == _scanned(path) == 0


def test_store_written_before_the_counter_is_counted_once(tmp_path: Path) -> None:
    path = tmp_path / "store"
    EmbeddedDocumentStore(path=str(path)).write_documents(_docs(12) + _docs(3, start=12, with_vectors=False))
    gc.collect()
    with sqlite3.connect(path / "documents.sqlite") as db:  # as the previous version left it
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            db.execute(f"DROP TRIGGER {name}")
        db.execute("DELETE FROM store_info WHERE key = ?", (VECTOR_COUNT_KEY,))
    table = DocumentTable(path / "documents.sqlite")
    assert table.info(VECTOR_COUNT_KEY) is None  # opening a non-empty table does not scan it
    assert table.vector_count()[0] == 12
    assert table.info(VECTOR_COUNT_KEY) == 12
    table.delete(["d0"])
    assert table.vector_count()[0] == _scanned(path) == 11
    table.close()


def test_read_only_table_without_counter_scans(tmp_path: Path) -> None:
    path = tmp_path / "store"
    EmbeddedDocumentStore(path=str(path)).write_documents(_docs(4))
    gc.collect()
    with sqlite3.connect(path / "documents.sqlite") as db:
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            db.execute(f"DROP TRIGGER {name}")
    table = DocumentTable(path / "documents.sqlite", read_only=True)
    assert table.vector_count()[0] == 4
    table.close()


def test_wrong_count_of_a_loaded_index_still_rebuilds_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "store"
    store = EmbeddedDocumentStore(path=str(path))
    store.write_documents(_docs(6))
    store.save()
    del store
    gc.collect()
    with sqlite3.connect(path / "documents.sqlite") as db:
        db.execute("UPDATE store_info SET value = '5' WHERE key = ?", (VECTOR_COUNT_KEY,))
    store = _reopen(path)
    assert len(store.embedding_retrieval(np.ones(DIM), top_k=10)) == 6
    assert "holds 6 vectors but the documents have 5" in caplog.text


# -- 2. checksums verified once per file --------------------------------------------------------


def _saved(folder: Path) -> None:
    with write_index_directory(folder, {"generation": 1}) as tmp:
        (tmp / "a.bin").write_bytes(bytes(range(256)) * 64)
        (tmp / "b.json").write_text('{"x": 1}', encoding="utf-8")


def _count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    hashed: list[Path] = []
    original = index_files.file_checksum

    def counting(path: Path) -> str:
        hashed.append(path)
        return original(path)

    monkeypatch.setattr(index_files, "file_checksum", counting)
    return hashed


def test_unchanged_files_are_not_hashed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "index"
    _saved(folder)
    hashed = _count_hashes(monkeypatch)
    assert verified_state(folder) == {"generation": 1}
    assert hashed == []  # the save recorded what it hashed
    verified_state(folder, rehash=True)
    assert len(hashed) == 2


def test_tampered_byte_with_size_and_mtime_restored_is_caught(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    _saved(folder)
    verified_state(folder)
    target = folder / "a.bin"
    before = target.stat()
    os.sched_yield()
    import time

    time.sleep(0.05)  # past the clock tick of the save: the write gets a later ctime
    raw = bytearray(target.read_bytes())
    raw[100] ^= 0xFF
    target.write_bytes(bytes(raw))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = target.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    with pytest.raises(IndexFilesError, match=r"a.bin does not match the checksum"):
        verified_state(folder)


def test_copied_folder_is_verified_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, copy = tmp_path / "index", tmp_path / "copy"
    _saved(folder)
    shutil.copytree(folder, copy)  # copy2: mtimes kept, the record comes along
    hashed = _count_hashes(monkeypatch)
    assert verified_state(copy) == {"generation": 1}
    assert sorted(p.name for p in hashed) == ["a.bin", "b.json"]
    # Damaged in the copy: caught although the record copied along lists the original's files.
    shutil.rmtree(copy)
    shutil.copytree(folder, copy)
    raw = bytearray((copy / "a.bin").read_bytes())
    raw[7] ^= 1
    (copy / "a.bin").write_bytes(bytes(raw))
    with pytest.raises(IndexFilesError, match=r"a.bin does not match"):
        verified_state(copy)


def test_recently_changed_files_are_not_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "index"
    _saved(folder)
    (folder / index_files.VERIFIED).unlink()
    verified_state(folder)  # files changed less than RACY_SECONDS ago: hashed, not recorded
    hashed = _count_hashes(monkeypatch)
    verified_state(folder)
    assert len(hashed) == 2
    monkeypatch.setattr(index_files, "RACY_SECONDS", 0.0)
    verified_state(folder)
    verified_state(folder)
    assert len(hashed) == 4


def test_unwritable_record_still_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "index"
    _saved(folder)
    (folder / index_files.VERIFIED).unlink()

    def refuse(*_: object) -> None:
        raise PermissionError("read-only folder")

    monkeypatch.setattr(index_files, "atomic_write_text", refuse)
    monkeypatch.setattr(index_files, "RACY_SECONDS", 0.0)
    assert verified_state(folder) == {"generation": 1}


# -- 3. memory-mapped indexes ------------------------------------------------------------------


@pytest.mark.parametrize("factory", ["Flat", "HNSW16"])
def test_writes_after_a_mapped_open_match_an_unmapped_store(tmp_path: Path, factory: str) -> None:
    queries = np.random.default_rng(5).normal(size=(6, DIM)).astype(np.float32)
    results = {}
    for mapped in (True, False):
        path = tmp_path / f"store-{mapped}"
        first = EmbeddedDocumentStore(path=str(path), index_factory=factory)
        first.write_documents(_docs(30))
        first.save()
        del first
        gc.collect()
        store = _reopen(path, index_factory=factory, memory_map=mapped)
        store.embedding_retrieval(queries[0], top_k=3)
        store.bm25_retrieval("cats", top_k=3)
        backend = store._backend
        assert backend.dense().is_mapped is mapped
        assert isinstance(backend.bm25()[0]._segments[0].tf, np.memmap) is mapped
        store.write_documents(_docs(10, start=30, seed=2))
        store.delete_documents(["d3"])
        store.write_documents(_docs(5, start=40, seed=3))
        assert backend.dense().is_mapped is mapped  # writes go to the delta: main stays mapped
        results[mapped] = (
            [[(d.id, round(d.score, 4)) for d in store.embedding_retrieval(q, top_k=8)] for q in queries],
            [(d.id, round(d.score, 4)) for d in store.bm25_retrieval("cats purr", top_k=8)],
        )
        store.save()
        del store, backend
        gc.collect()
        reopened = _reopen(path, index_factory=factory, memory_map=mapped)
        assert reopened.count_documents() == 44
        assert [[d.id for d in reopened.embedding_retrieval(q, top_k=8)] for q in queries] == [
            [i for i, _ in row] for row in results[mapped][0]
        ]
        del reopened
    assert results[True] == results[False]


def test_mapped_dense_index_reloads_from_the_file_it_mapped(tmp_path: Path) -> None:
    """A folder saved over by another process meanwhile does not change what the first add starts from."""
    rng = np.random.default_rng(0)
    index = DenseIndex(DIM)
    index.rebuild(np.arange(1, 11), rng.normal(size=(10, DIM)))
    index.save(tmp_path / "dense", 1)
    loaded = DenseIndex.load(tmp_path / "dense", memory_map=True)
    other = DenseIndex(DIM)
    other.rebuild(np.arange(100, 103), rng.normal(size=(3, DIM)))
    other.save(tmp_path / "dense", 2)  # replaces the folder
    loaded.add(np.array([11]), rng.normal(size=(1, DIM)))
    assert not loaded.is_mapped and len(loaded) == 11
    assert loaded.search(rng.normal(size=DIM), 20)[0].max() == 11


def test_memory_map_round_trips_through_to_dict(tmp_path: Path) -> None:
    store = EmbeddedDocumentStore(path=str(tmp_path / "s"), memory_map=False)
    data = store.to_dict()
    assert data["init_parameters"]["memory_map"] is False
    assert EmbeddedDocumentStore.from_dict(data).to_dict() == data
    assert EmbeddedDocumentStore().to_dict()["init_parameters"]["memory_map"] is True
