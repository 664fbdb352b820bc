"""How ``GET /documents/{id}`` finds a source document (``served_stores.source_passages``): a passage-shaped id
names a passage first, so a record indexed before the record id rule under such an id hides no document."""

from __future__ import annotations

from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from dpr_components.serving.served_stores import source_passages


def _passage(record: str, index: int, text: str) -> Document:
    return Document(id=f"{record}#{index}", content=text, meta={"document_id": record, "passage_index": index})


def _store(*documents: Document) -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    store.write_documents(list(documents))
    return store


def test_a_passage_id_opens_its_document_even_beside_a_record_of_that_id() -> None:
    store = _store(
        _passage("hamlet", 1, "second"),
        _passage("hamlet", 0, "first"),
        _passage("hamlet#0", 0, "a record indexed before the rule"),  # id "hamlet#0#0"
    )
    assert [d.id for d in source_passages(store, "hamlet#0")] == ["hamlet#0", "hamlet#1"]
    assert [d.id for d in source_passages(store, "hamlet#1")] == ["hamlet#0", "hamlet#1"]
    assert [d.id for d in source_passages(store, "hamlet")] == ["hamlet#0", "hamlet#1"]
    assert [d.id for d in source_passages(store, "hamlet#0#0")] == ["hamlet#0#0"]  # the old record, by its passage


def test_a_record_of_a_passage_shaped_id_is_still_found_when_no_passage_has_it() -> None:
    store = _store(_passage("report#2", 0, "old"), _passage("report#2", 1, "older"))
    assert [d.id for d in source_passages(store, "report#2")] == ["report#2#0", "report#2#1"]


def test_documents_without_a_source_are_found_by_their_own_id() -> None:
    store = _store(Document(id="loose", content="written by another pipeline"), Document(id="page#3", content="x"))
    assert [d.id for d in source_passages(store, "loose")] == ["loose"]
    assert [d.id for d in source_passages(store, "page#3")] == ["page#3"]
    assert source_passages(store, "nothing") == [] and source_passages(store, "nothing#0") == []
