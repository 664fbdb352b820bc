"""The FAISS delta: writes after a save go to a small exact index saved apart (plus tombstones for
overwritten or removed vectors of the main index); results equal a store built from scratch."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from dpr_components.document_stores.dense_index import DenseIndex
from dpr_components.document_stores.dense_layers import LayeredDenseIndex
from dpr_components.document_stores.store_backend import (
    DELTA_DIR,
    DENSE_DIR,
    StoreBackend,
)
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.documents import DIM, random_document
from tests.helpers.paths import REPO


def _fresh(store: EmbeddedDocumentStore) -> EmbeddedDocumentStore:
    """The same folder through a backend of its own, as another process opening it would have."""
    gc.collect()
    store._backend = StoreBackend(store._config)
    return store


def _open(path: Path, **settings: object) -> EmbeddedDocumentStore:
    return _fresh(EmbeddedDocumentStore(path=str(path), **settings))  # type: ignore[arg-type]


def _stamp(path: Path) -> tuple[int, int]:
    stat = (path / "index.faiss").stat()
    return stat.st_ino, stat.st_mtime_ns


def _final_docs() -> list[Document]:
    """What the store holds after :func:`_edit`, written at once."""
    docs = {d.id: d for d in (random_document(i, 1) for i in range(400))}
    for i in range(10):
        docs[f"d{i}"] = random_document(i, 2)  # vectors overwritten
    docs["d10"] = random_document(10, 2, with_vector=False)  # vector removed by an overwrite
    for i in range(11, 16):
        del docs[f"d{i}"]
    for i in range(12):
        new = random_document(i, 3, prefix="n")
        docs[new.id] = new
    del docs["n0"]  # a delta row removed again
    docs["n1"] = random_document(1, 4, prefix="n")  # a delta row overwritten
    return list(docs.values())


def _edit(store: EmbeddedDocumentStore) -> None:
    store.write_documents([random_document(i, 2) for i in range(10)], policy=DuplicatePolicy.OVERWRITE)
    store.write_documents([random_document(10, 2, with_vector=False)], policy=DuplicatePolicy.OVERWRITE)
    store.delete_documents([f"d{i}" for i in range(11, 16)])
    store.write_documents([random_document(i, 3, prefix="n") for i in range(12)])
    store.embedding_retrieval([1.0] * DIM, top_k=1)  # the delta now holds the new rows
    store.delete_documents(["n0"])
    store.write_documents([random_document(1, 4, prefix="n")], policy=DuplicatePolicy.OVERWRITE)


def _queries(n: int = 8) -> np.ndarray:
    return np.random.default_rng(99).normal(size=(n, DIM)).astype(np.float32)


def _dense(store: EmbeddedDocumentStore, query: np.ndarray, **kwargs: object) -> list[tuple[str, float]]:
    return [(d.id, d.score) for d in store.embedding_retrieval(query, top_k=20, **kwargs)]  # type: ignore[misc]


def _assert_same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-6)


@pytest.fixture()
def edited(tmp_path: Path) -> tuple[EmbeddedDocumentStore, EmbeddedDocumentStore, Path]:
    """A saved 400-document store edited after reopening (the delta saved, then reopened), and a
    store built from scratch with the same documents."""
    path = tmp_path / "s"
    built = EmbeddedDocumentStore(path=str(path), dense_delta_fraction=0.5)
    built.write_documents([random_document(i, 1) for i in range(400)])
    built.save()
    del built
    main_before = _stamp(path / DENSE_DIR)
    store = _open(path, dense_delta_fraction=0.5)
    _edit(store)
    store.save()
    assert _stamp(path / DENSE_DIR) == main_before, "a small write rewrote the main FAISS index"
    assert (path / DELTA_DIR / "manifest.json").is_file()
    scratch = EmbeddedDocumentStore()
    scratch.write_documents(_final_docs())
    return _fresh(store), scratch, path


def test_results_equal_a_store_built_from_scratch(
    edited: tuple[EmbeddedDocumentStore, EmbeddedDocumentStore, Path],
) -> None:
    store, scratch, path = edited
    assert store._backend.dense().delta_size > 0 and store._backend.dense().is_mapped
    assert store.count_documents() == scratch.count_documents()
    group = {"field": "meta.group", "operator": "==", "value": 1}
    for query in _queries():
        _assert_same(_dense(store, query), _dense(scratch, query))
        _assert_same(_dense(store, query, filters=group), _dense(scratch, query, filters=group))
        got = store.hybrid_search("alpha gamma", query, weight=1.1, top_k=15, candidates=60)
        want = scratch.hybrid_search("alpha gamma", query, weight=1.1, top_k=15, candidates=60)
        _assert_same([(d.id, d.score) for d in got], [(d.id, d.score) for d in want])  # type: ignore[misc]
        assert [d.meta["dense_score"] for d in got] == pytest.approx([d.meta["dense_score"] for d in want], rel=1e-6)
    batch = store.hybrid_search_batch(["alpha", "omega beta"], _queries(2), weight=1.1, top_k=10, candidates=40)
    expected = scratch.hybrid_search_batch(["alpha", "omega beta"], _queries(2), weight=1.1, top_k=10, candidates=40)
    assert [[d.id for d in docs] for docs in batch] == [[d.id for d in docs] for docs in expected]
    assert store._backend.dense().is_mapped  # searching did not read the main index into memory
    assert _stamp(path / DENSE_DIR) == _stamp(path / DENSE_DIR)


def test_exact_vectors_come_from_the_right_layer(
    edited: tuple[EmbeddedDocumentStore, EmbeddedDocumentStore, Path],
) -> None:
    store, _, _ = edited
    backend = store._backend
    index = backend.dense()
    rowid_of = backend.table.rowids_for_ids(["d0", "d20", "n1", "n5", "d10"])
    vectors = {d.id: np.asarray(d.embedding, dtype=np.float32) for d in _final_docs() if d.embedding is not None}
    rows = np.array([rowid_of[i] for i in ("d0", "d20", "n1", "n5")])
    np.testing.assert_array_equal(index.stored_vectors(rows), np.stack([vectors[i] for i in ("d0", "d20", "n1", "n5")]))
    np.testing.assert_array_equal(index.reconstruct(rowid_of["d0"]), vectors["d0"])  # overwritten: the delta's
    assert index.stored_vectors(np.array([rowid_of["d10"]])) is None  # a tombstone: the table answers
    with pytest.raises(RuntimeError):
        index.reconstruct(rowid_of["d10"])
    scores = store.score_documents(["d0", "d10", "n1"], "alpha", _queries(1)[0])
    assert scores["d10"][1] is None
    assert scores["d0"][1] == pytest.approx(float(vectors["d0"] @ _queries(1)[0]), rel=1e-6)


def test_another_process_writes_are_caught_up(
    edited: tuple[EmbeddedDocumentStore, EmbeddedDocumentStore, Path],
) -> None:
    store, scratch, path = edited
    _dense(store, _queries(1)[0])  # loaded: main mapped plus the saved delta
    other = _open(path, dense_delta_fraction=0.5)
    changes = [random_document(30, 5), random_document(7, 5), random_document(3, 9, prefix="x")]
    other.write_documents(changes, policy=DuplicatePolicy.OVERWRITE)
    other.delete_documents(["d40", "n2"])
    scratch.write_documents(changes, policy=DuplicatePolicy.OVERWRITE)
    scratch.delete_documents(["d40", "n2"])
    for query in _queries():
        _assert_same(_dense(store, query), _dense(scratch, query))


def test_compaction_past_the_threshold(tmp_path: Path) -> None:
    path = tmp_path / "s"
    store = EmbeddedDocumentStore(path=str(path), dense_delta_fraction=0.05)
    store.write_documents([random_document(i, 1) for i in range(400)])
    store.save()
    store = _open(path, dense_delta_fraction=0.05)
    main = _stamp(path / DENSE_DIR)
    store.write_documents([random_document(i, 3, prefix="n") for i in range(15)])  # 15 + 0 tombstones <= 20
    store.save()
    assert _stamp(path / DENSE_DIR) == main and (path / DELTA_DIR).is_dir()
    store.write_documents([random_document(i, 2) for i in range(6)], policy=DuplicatePolicy.OVERWRITE)  # 21 + 6 > 20
    store.save()
    assert _stamp(path / DENSE_DIR) != main and not (path / DELTA_DIR).exists()
    saved = DenseIndex.load(path / DENSE_DIR)
    assert len(saved) == 415 and saved.generation == store._backend.table.generation
    scratch = EmbeddedDocumentStore()
    scratch.write_documents([random_document(i, 1) for i in range(6, 400)] + [random_document(i, 2) for i in range(6)])
    scratch.write_documents([random_document(i, 3, prefix="n") for i in range(15)])
    store = _open(path, dense_delta_fraction=0.05)
    for query in _queries(4):
        _assert_same(_dense(store, query), _dense(scratch, query))
    # An explicit compaction folds a small delta too.
    store.write_documents([random_document(99, 7, prefix="late")])
    store.save()
    assert (path / DELTA_DIR).is_dir()
    store.compact_dense_index()
    assert not (path / DELTA_DIR).exists() and len(DenseIndex.load(path / DENSE_DIR)) == 416


@pytest.mark.parametrize("factory", ["HNSW16", "IVF4,Flat"])
def test_lossy_main_index_gives_its_own_hits_plus_the_exact_delta(tmp_path: Path, factory: str) -> None:
    path = tmp_path / "s"
    settings = {"index_factory": factory, "dense_delta_fraction": 0.5}
    store = EmbeddedDocumentStore(path=str(path), **settings)  # type: ignore[arg-type]
    store.write_documents([random_document(i, 1) for i in range(400)])
    store.save()
    store = _open(path, **settings)
    _edit(store)
    store.save()
    store = _open(path, **settings)
    index = store._backend.dense()
    assert isinstance(index, LayeredDenseIndex) and index.delta_size > 0
    final = {d.id: d for d in _final_docs()}
    rowid_of = store._backend.table.rowids_for_ids(list(final))
    id_of = {r: i for i, r in rowid_of.items()}
    delta_rows = index.delta.ids()
    for query in _queries(4):
        # Main alone, searched without the tombstoned rows through a filter of the rows it may return.
        live_main = np.setdiff1d(index.main.ids(), index.removed)
        main_rows, main_scores = index.main.search(query, 20, live_main)
        delta_scores = [float(np.asarray(final[id_of[r]].embedding, dtype=np.float32) @ query) for r in delta_rows]
        merged = sorted(
            [(id_of[r], float(s)) for r, s in zip(main_rows, main_scores, strict=True)]
            + [(id_of[r], s) for r, s in zip(delta_rows, delta_scores, strict=True)],
            key=lambda pair: -pair[1],
        )[:20]
        got = _dense(store, query)
        _assert_same(got, merged)
        assert not {"d11", "n0"} & {i for i, _ in got}
    # Folding: HNSW cannot remove vectors, so it is rebuilt from the documents; IVF folds in place.
    store.compact_dense_index()
    assert not (path / DELTA_DIR).exists()
    assert len(DenseIndex.load(path / DENSE_DIR)) == sum(d.embedding is not None for d in final.values())


def _killed_save(path: Path, point: str) -> None:
    code = f"""
import numpy as np
from haystack.document_stores.types import DuplicatePolicy
from tests.helpers.documents import random_document
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
store = EmbeddedDocumentStore(path={str(path)!r})
store.write_documents([random_document(i, 6) for i in range(5)], policy=DuplicatePolicy.OVERWRITE)
store.write_documents([random_document(i, 6, prefix="k") for i in range(5)])
store.save()
"""
    env = {**os.environ, "DPR_FAULT_POINT": point}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=False
    )
    assert result.returncode == -9, result.stderr


@pytest.mark.parametrize("point", ["dense_index.saving", "atomic_directory.between_renames"])
@pytest.mark.parametrize("previous_delta", [False, True])
@pytest.mark.integration
def test_a_kill_while_saving_the_delta_leaves_a_usable_store(tmp_path: Path, point: str, previous_delta: bool) -> None:
    path = tmp_path / "s"
    store = EmbeddedDocumentStore(path=str(path))
    store.write_documents([random_document(i, 1) for i in range(400)])
    store.save()
    store.bm25_retrieval("alpha", top_k=1)  # BM25 saved too: the first save of the child is the FAISS one
    if previous_delta:
        store = _open(path)
        store.write_documents([random_document(i, 8, prefix="p") for i in range(3)])
        store.save()
    del store
    gc.collect()
    main = _stamp(path / DENSE_DIR)
    _killed_save(path, point)
    assert _stamp(path / DENSE_DIR) == main
    store = _open(path)
    scratch = EmbeddedDocumentStore()
    scratch.write_documents([random_document(i, 6) for i in range(5)] + [random_document(i, 1) for i in range(5, 400)])
    scratch.write_documents([random_document(i, 8, prefix="p") for i in range(3)] if previous_delta else [])
    scratch.write_documents([random_document(i, 6, prefix="k") for i in range(5)])
    for query in _queries(4):
        _assert_same(_dense(store, query), _dense(scratch, query))
    assert not [p.name for p in path.iterdir() if p.name.endswith((".tmp", ".old"))]


def test_a_damaged_delta_is_caught_up_from_the_documents(
    edited: tuple[EmbeddedDocumentStore, EmbeddedDocumentStore, Path], caplog: pytest.LogCaptureFixture
) -> None:
    store, scratch, path = edited
    removed = path / DELTA_DIR / "removed.npy"
    data = bytearray(removed.read_bytes())
    data[-1] ^= 0xFF
    removed.write_bytes(bytes(data))
    store = _fresh(store)
    for query in _queries(4):
        _assert_same(_dense(store, query), _dense(scratch, query))
    assert "does not match the checksum" in caplog.text


def test_delete_all_keeps_the_vector_count_right(tmp_path: Path) -> None:
    store = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    store.write_documents(
        [random_document(i, 1) for i in range(50)]
        + [random_document(i, 1, with_vector=False, prefix="t") for i in range(5)]
    )
    table = store._backend.table
    assert table.vector_count()[0] == 50
    store.delete_all_documents()
    assert table.vector_count()[0] == 0 and store.count_documents() == 0
    store.write_documents(
        [random_document(i, 2) for i in range(7)] + [random_document(0, 2, with_vector=False, prefix="t")]
    )
    assert table.vector_count()[0] == 7
    store.write_documents([random_document(1, 2, with_vector=False)], policy=DuplicatePolicy.OVERWRITE)
    assert table.vector_count()[0] == 6
    assert len(store.embedding_retrieval([1.0] * DIM, top_k=100)) == 6


def test_a_damaged_delta_is_written_again_at_the_next_save(
    edited: tuple[EmbeddedDocumentStore, EmbeddedDocumentStore, Path],
) -> None:
    store, scratch, path = edited
    main = _stamp(path / DENSE_DIR)
    (path / DELTA_DIR / "index.faiss").write_bytes(b"garbage")
    store = _fresh(store)
    _dense(store, _queries(1)[0])
    store.save()
    assert _stamp(path / DENSE_DIR) == main  # only the delta was written again
    store = _fresh(store)
    assert store._backend.dense().delta_size > 0
    for query in _queries(3):
        _assert_same(_dense(store, query), _dense(scratch, query))


def test_a_read_only_store_searches_main_plus_delta(
    edited: tuple[EmbeddedDocumentStore, EmbeddedDocumentStore, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, scratch, path = edited
    del store
    gc.collect()
    real_access = os.access

    def access(target: object, mode: int, *args: object, **kwargs: object) -> bool:
        inside = Path(os.fspath(target)).resolve().is_relative_to(path.resolve())  # type: ignore[arg-type]
        return False if inside and mode & os.W_OK else real_access(target, mode, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    before = sorted(p.name for p in path.rglob("*"))
    read_only = EmbeddedDocumentStore(path=str(path), dense_delta_fraction=0.5)
    read_only._backend = StoreBackend(read_only._config)
    assert read_only.read_only
    assert read_only._backend.dense().delta_size > 0
    for query in _queries(3):
        _assert_same(_dense(read_only, query), _dense(scratch, query))
    assert sorted(p.name for p in path.rglob("*")) == before


def test_dense_delta_fraction_is_checked_and_kept() -> None:
    with pytest.raises(ValueError, match="dense_delta_fraction"):
        EmbeddedDocumentStore(dense_delta_fraction=-0.1)
    store = EmbeddedDocumentStore(dense_delta_fraction=0.2)
    assert EmbeddedDocumentStore.from_dict(store.to_dict())._config.delta_fraction == 0.2


def test_an_in_memory_store_folds_its_delta_past_the_threshold() -> None:
    store = EmbeddedDocumentStore(dense_delta_fraction=0.05)
    store.write_documents([random_document(i, 1) for i in range(200)])
    store.embedding_retrieval([1.0] * DIM, top_k=1)
    store.write_documents([random_document(i, 3, prefix="n") for i in range(5)])
    store.embedding_retrieval([1.0] * DIM, top_k=1)
    assert store._backend.dense().delta_size == 5
    store.write_documents([random_document(i, 3, prefix="m") for i in range(6)])
    store.embedding_retrieval([1.0] * DIM, top_k=1)
    assert store._backend.dense().delta_size == 0 and len(store._backend.dense()) == 211


SEARCH_WHILE_WRITING = """
import threading
import numpy as np
from dpr_components.document_stores.dense_index import DenseIndex
from dpr_components.document_stores.dense_layers import LayeredDenseIndex

rng = np.random.default_rng(0)
main = DenseIndex(64, "dot", "Flat")
main.rebuild(np.arange(2000, dtype=np.int64), rng.standard_normal((2000, 64), dtype=np.float32))
index = LayeredDenseIndex(main)
stop, failures = threading.Event(), []

def search() -> None:
    query = rng.standard_normal(64, dtype=np.float32)
    while not stop.is_set():
        try:
            index.search(query, 10)
            index.search_many(query[None, :], 10)
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(repr(error))

threads = [threading.Thread(target=search) for _ in range(4)]
for thread in threads:
    thread.start()
next_rowid = 2000
for _ in range(300):  # the delta grows by 200 vectors a write: FAISS moves its vectors as it grows
    rowids = np.arange(next_rowid, next_rowid + 200, dtype=np.int64)
    index.add(rowids, rng.standard_normal((200, 64), dtype=np.float32))
    index.remove(rowids[:5])
    next_rowid += 200
stop.set()
for thread in threads:
    thread.join()
last = index.reconstruct(next_rowid - 1)
assert index.search(last, 1)[0][0] == next_rowid - 1, "the last vector written is not found"
print("failures", len(failures), failures[:3])
raise SystemExit(1 if failures else 0)
"""


def test_searches_in_many_threads_while_writes_grow_the_delta() -> None:
    """Without the index's read-write lock an add can move the vectors a search is reading: a
    crash inside FAISS (a segfault in the server under load). Run apart, so a crash fails the test."""
    done = subprocess.run(
        [sys.executable, "-c", SEARCH_WHILE_WRITING], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stdout[-500:]} {done.stderr[-1500:]}"
