"""A store handle whose folder is removed, renamed or replaced after it opened it: every call refuses
(``StoreFolderMovedError``) instead of using files no longer at the path, a write returns only once the
database at the path holds it, a new handle opens what the path holds now, and nothing is saved into
(or recreates) a folder the handle no longer owns."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from haystack import Document

import haystack_integrations.document_stores.dpr.document_store as embedded_module
from dpr_components.document_stores.folder_identity import StoreFolderMovedError
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

DIM = 4


def _documents(*ids: str) -> list[Document]:
    return [Document(id=i, content=f"passage {i} about hamlet", embedding=[0.1, 0.2, 0.3, 0.4]) for i in ids]


def _opened(path: Path) -> EmbeddedDocumentStore:
    store = EmbeddedDocumentStore(path=str(path))
    store.write_documents(_documents("a", "b"))
    assert [d.id for d in store.bm25_retrieval("hamlet")] and store.folder_problem() is None
    return store


def _calls(store: EmbeddedDocumentStore) -> dict[str, Callable[[], object]]:
    return {
        "count": store.count_documents,
        "bm25": lambda: store.bm25_retrieval("hamlet"),
        "dense": lambda: store.embedding_retrieval([0.1, 0.2, 0.3, 0.4]),
        "write": lambda: store.write_documents(_documents("c")),
        "delete": lambda: store.delete_documents(["a"]),
        "save": store.save,
    }


def test_a_removed_folder_is_neither_read_nor_recreated(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = _opened(path)
    shutil.rmtree(path)
    assert "store folder" in (store.folder_problem() or "") and "removed or renamed" in (store.folder_problem() or "")
    for name, call in _calls(store).items():
        with pytest.raises(StoreFolderMovedError, match="removed or renamed"):
            call()
        assert not path.exists(), name
    backend = store._opened
    assert backend is not None and backend.unsaved_writes
    backend.save_pending()  # what garbage collection and interpreter exit do
    assert not path.exists()


def test_a_replaced_folder_is_left_alone_and_a_new_handle_opens_it(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = _opened(path)
    path.rename(tmp_path / "old")
    EmbeddedDocumentStore(path=str(path)).write_documents(_documents("z"))  # another store at the same path
    with pytest.raises(StoreFolderMovedError, match="replaced by another folder"):
        store.write_documents(_documents("c"))
    assert sorted(d.id for d in EmbeddedDocumentStore(path=str(path)).filter_documents()) == ["z"]
    assert sorted(d.id for d in EmbeddedDocumentStore(path=str(tmp_path / "old")).filter_documents()) == ["a", "b"]


def test_a_write_into_a_folder_removed_meanwhile_is_not_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store"
    store = _opened(path)

    def remove_after_commit(name: str) -> None:
        if name == "store.after_commit":
            shutil.rmtree(path)

    monkeypatch.setattr(embedded_module, "fault_point", remove_after_commit)
    with pytest.raises(StoreFolderMovedError, match="is not in"):
        store.write_documents(_documents("c"))


def test_a_database_that_does_not_hold_the_write_is_not_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same folder and database, but the write-ahead log removed under the open connection: read afresh,
    the database at the path lacks the write."""
    path = tmp_path / "store"
    store = _opened(path)

    def remove_the_log(name: str) -> None:
        if name == "store.after_commit":
            (path / "documents.sqlite-wal").unlink()

    monkeypatch.setattr(embedded_module, "fault_point", remove_the_log)
    with pytest.raises(StoreFolderMovedError, match="does not hold the write"):
        store.write_documents(_documents("c"))


def test_in_memory_and_unopened_stores_have_no_folder_problem(tmp_path: Path) -> None:
    assert EmbeddedDocumentStore().folder_problem() is None
    unopened = EmbeddedDocumentStore(path=str(tmp_path / "never"))
    assert unopened.folder_problem() is None and unopened.count_documents() == 0
    assert not (tmp_path / "never").exists()
