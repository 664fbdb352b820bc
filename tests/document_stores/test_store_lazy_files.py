"""An EmbeddedDocumentStore creates nothing until used: constructing, serialising and loading a
pipeline that names its folder touch no file; reads of a store never written see it empty and
create nothing; the first write creates the folder."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from haystack import Document, Pipeline

from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.paths import PIPELINES

NAMING_THE_STORE = ["index.yml", "search.yml", "qa.yml", "dense.yml", "bm25.yml"]


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_construct_and_serialise_create_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    store = EmbeddedDocumentStore(path=str(folder), similarity="cosine", index_factory="HNSW32")
    again = EmbeddedDocumentStore.from_dict(json.loads(json.dumps(store.to_dict())))
    assert again.to_dict() == store.to_dict()
    assert not folder.exists()
    store.write_documents([Document(id="a", content="alpha", embedding=[1.0, 0.0])])
    assert (folder / "documents.sqlite").is_file()
    assert again.count_documents() == 1  # a handle made before the write sees it


@pytest.mark.parametrize("name", NAMING_THE_STORE)
def test_loading_a_pipeline_creates_nothing(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # relative paths in the file (caches) resolve here
    folder = tmp_path / "store"
    text = (PIPELINES / name).read_text(encoding="utf-8")
    assert "indexes/example" in text
    pipeline = Pipeline.loads(text.replace("indexes/example", str(folder)), allowed_modules=["dpr_components"])
    Pipeline.loads(pipeline.dumps(), allowed_modules=["dpr_components"])
    assert _files(tmp_path) == []


def test_reads_of_a_missing_store_are_empty_and_create_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    store = EmbeddedDocumentStore(path=str(folder), embedding_dim=2)
    assert store.count_documents() == 0
    assert (
        store.filter_documents() == []
        and store.filter_documents({"field": "meta.x", "operator": "==", "value": 1}) == []
    )
    assert store.count_documents_by_filter({"field": "meta.x", "operator": "==", "value": 1}) == 0
    assert store.get_documents_by_id(["a"]) == []
    assert store.bm25_retrieval("alpha") == [] and store.embedding_retrieval([1.0, 0.0]) == []
    assert store.score_documents(["a"], "alpha", [1.0, 0.0]) == {}
    assert store.get_metadata_fields_info() == {}
    assert (store.embedding_dim, store.passage_encoder, store.read_only) == (2, None, False)
    assert asyncio.run(store.count_documents_async()) == 0
    store.save()
    assert not folder.exists()


def test_an_existing_folder_without_a_store_stays_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    store = EmbeddedDocumentStore(path=str(folder))
    assert store.count_documents() == 0 and store.bm25_retrieval("alpha") == []
    assert _files(folder) == []
    store.write_documents([Document(id="a", content="alpha")])
    assert "documents.sqlite" in _files(folder)
    assert [d.id for d in store.bm25_retrieval("alpha")] == ["a"]


def test_settings_conflicts_are_still_reported_at_construction(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    EmbeddedDocumentStore(path=str(folder), similarity="cosine").write_documents(
        [Document(id="a", content="alpha", embedding=[1.0, 0.0])]
    )
    with pytest.raises(ValueError, match="similarity 'cosine'"):
        EmbeddedDocumentStore(path=str(folder), similarity="l2")
    with pytest.raises(ValueError, match="holds 2-dimensional vectors"):
        EmbeddedDocumentStore(path=str(folder), similarity="cosine", embedding_dim=3)


def test_a_write_to_an_uncreatable_folder_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = EmbeddedDocumentStore(path=str(blocker / "store"))
    assert store.count_documents() == 0
    with pytest.raises(ValueError, match="cannot create the document store folder"):
        store.write_documents([Document(id="a", content="alpha")])
