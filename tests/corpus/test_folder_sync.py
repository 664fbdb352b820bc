"""The sync plan of a folder against a store: new, changed, unchanged, touched, renamed and gone files,
keep_removed, the files of a run step, and reading and changing a store by it."""

from __future__ import annotations

from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from dpr_components.corpus.folder_sync import FileVersion, StoredFile, apply_plan, plan_sync, stored_files
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

T1, T2 = "2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z"


def _stored(digest: str, *ids: str, modified: str = T1) -> StoredFile:
    return StoredFile(list(ids), {digest}, {modified})


STORED = {
    "same.txt": _stored("h-same", "same.txt#0"),
    "edited.md": _stored("h-old", "edited.md#0", "edited.md#1"),
    "deleted.pdf": _stored("h-deleted", "deleted.pdf#0"),
}


def test_new_changed_unchanged_and_gone_files() -> None:
    current = {
        "same.txt": FileVersion("h-same", T1),
        "edited.md": FileVersion("h-new", T2),
        "added.docx": FileVersion("h-added", T2),
    }
    plan = plan_sync(current, current, STORED, keep_removed=False)
    assert plan.index == ["added.docx", "edited.md"]
    assert plan.unchanged == ["same.txt"] and plan.touched == {}
    assert plan.gone == ["deleted.pdf"] and plan.removed == ["deleted.pdf"] and plan.kept == []
    assert sorted(plan.delete_ids) == ["deleted.pdf#0", "edited.md#0", "edited.md#1"]


def test_keep_removed_keeps_the_passages_of_gone_files() -> None:
    current = {"same.txt": FileVersion("h-same", T1), "edited.md": FileVersion("h-new", T1)}
    plan = plan_sync(current, current, STORED, keep_removed=True)
    assert plan.gone == ["deleted.pdf"] and plan.kept == ["deleted.pdf"] and plan.removed == []
    assert sorted(plan.delete_ids) == ["edited.md#0", "edited.md#1"]  # a changed file is still replaced


def test_a_rename_is_a_file_gone_and_a_new_one() -> None:
    current = {"renamed.txt": FileVersion("h-same", T1)}
    plan = plan_sync(current, current, {"same.txt": STORED["same.txt"]}, keep_removed=False)
    assert plan.index == ["renamed.txt"] and plan.removed == ["same.txt"] and plan.delete_ids == ["same.txt#0"]


def test_a_new_modification_time_alone_is_written_not_indexed() -> None:
    current = {"same.txt": FileVersion("h-same", T2)}
    plan = plan_sync(current, current, {"same.txt": STORED["same.txt"]}, keep_removed=False)
    assert plan.index == [] and plan.unchanged == ["same.txt"] and plan.touched == {"same.txt": T2}
    assert plan.delete_ids == []


def test_passages_of_two_versions_make_a_file_changed() -> None:
    mixed = StoredFile(["a.txt#0", "a.txt#1"], {"h-new", "h-old"}, {T1})
    plan = plan_sync({"a.txt": FileVersion("h-new", T1)}, ["a.txt"], {"a.txt": mixed}, keep_removed=False)
    assert plan.index == ["a.txt"] and plan.delete_ids == ["a.txt#0", "a.txt#1"]


def test_a_refused_file_still_in_the_folder_is_not_gone() -> None:
    plan = plan_sync({}, ["deleted.pdf"], {"deleted.pdf": STORED["deleted.pdf"]}, keep_removed=False)
    assert plan.gone == [] and plan.delete_ids == []


def test_a_step_of_a_run_can_only_remove_its_own_files() -> None:
    current = {"edited.md": FileVersion("h-new", T1)}
    plan = plan_sync(current, current, STORED, keep_removed=False, scope=["edited.md", "deleted.pdf"])
    assert plan.gone == ["deleted.pdf"]
    plan = plan_sync(current, current, STORED, keep_removed=False, scope=["edited.md"])
    assert plan.gone == [] and "same.txt" not in plan.unchanged


def _passage(path: str, number: int, digest: str, modified: str = T1) -> Document:
    meta = {"path": path, "content_hash": digest, "modified": modified, "file_type": "txt"}
    return Document(id=f"{path}#{number}", content=f"{path} passage {number}", meta=meta, embedding=[0.1, 0.2])


def _fill(store: object) -> None:
    store.write_documents(  # type: ignore[attr-defined]
        [
            _passage("a.txt", 0, "h-a"),
            _passage("a.txt", 1, "h-a"),
            _passage("b.txt", 0, "h-b"),
            Document(id="corpus-doc#0", content="indexed from a corpus file", embedding=[0.3, 0.1]),
        ]
    )


def test_stored_files_of_the_embedded_store_and_of_any_store() -> None:
    for store in (EmbeddedDocumentStore(), InMemoryDocumentStore()):
        _fill(store)
        found = stored_files(store)
        assert sorted(found) == ["a.txt", "b.txt"], type(store)  # the corpus document is not the folder's
        assert sorted(found["a.txt"].passage_ids) == ["a.txt#0", "a.txt#1"] and found["a.txt"].hashes == {"h-a"}
        assert list(stored_files(store, ["b.txt", "c.txt"])) == ["b.txt"]


def test_a_plan_applied_deletes_and_touches_and_leaves_other_documents() -> None:
    store = EmbeddedDocumentStore()
    _fill(store)
    current = {"a.txt": FileVersion("h-a", T2)}
    plan = plan_sync(current, current, stored_files(store), keep_removed=False)
    apply_plan(store, plan)
    remaining = {d.id: d.meta.get("modified") for d in store.filter_documents()}
    assert remaining == {"a.txt#0": T2, "a.txt#1": T2, "corpus-doc#0": None}
