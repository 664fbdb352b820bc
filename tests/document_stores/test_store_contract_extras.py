"""What Haystack's store test suite does not cover about EmbeddedDocumentStore's extended API:
blob and sparse-embedding round trips, the schema migration of older folders, the indexes
after changes by filter, recreate_index, async calls in parallel, and clear errors for bad input."""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import ByteStream, SparseEmbedding
from haystack.errors import FilterError

from dpr_components.document_stores.document_table import DocumentTable
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
from tests.helpers.paths import REPO

_OLD_SCHEMA = """
CREATE TABLE documents (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, content TEXT,
    meta TEXT NOT NULL DEFAULT '{}', embedding BLOB
);
CREATE TABLE store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO documents (id, content, meta) VALUES ('old', 'written by an older release', '{"title": "Old"}');
INSERT INTO store_info VALUES ('store_id', '"0123abcd"');
"""


def _rich_document() -> Document:
    return Document(
        id="rich",
        content="a page with an image",
        meta={"title": "Rich"},
        embedding=[0.25, -1.5, 3.0],
        blob=ByteStream(data=b"\x89PNG\x00\xff", meta={"source": "scan.png"}, mime_type="image/png"),
        sparse_embedding=SparseEmbedding(indices=[3, 17, 400], values=[0.5, 1.25, -2.0]),
    )


def _old_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "old"
    folder.mkdir()
    with sqlite3.connect(folder / "documents.sqlite") as db:
        db.executescript(_OLD_SCHEMA)
    return folder


def test_blob_and_sparse_embedding_survive_a_reopening(tmp_path: Path) -> None:
    store = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    store.write_documents([_rich_document()])
    del store
    gc.collect()  # the next handle opens the folder anew
    reopened = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    [found] = reopened.filter_documents()
    assert found == _rich_document()
    [by_id] = reopened.get_documents_by_id(["rich"])  # without its vector, as search results come
    assert (by_id.blob, by_id.sparse_embedding) == (_rich_document().blob, _rich_document().sparse_embedding)


def test_an_older_folder_gains_the_new_columns_and_keeps_its_documents(tmp_path: Path) -> None:
    folder = _old_folder(tmp_path)
    store = EmbeddedDocumentStore(path=str(folder))
    assert [(d.id, d.blob, d.sparse_embedding) for d in store.filter_documents()] == [("old", None, None)]
    store.write_documents([_rich_document()])
    assert store.filter_documents({"field": "id", "operator": "==", "value": "rich"}) == [_rich_document()]


def test_an_older_database_opened_read_only_reads_without_the_new_columns(tmp_path: Path) -> None:
    table = DocumentTable(_old_folder(tmp_path) / "documents.sqlite", read_only=True)
    [stored] = table.documents()
    assert (stored.id, stored.blob_data, stored.sparse_embedding) == ("old", None, None)


def test_changes_by_filter_reach_both_indexes(tmp_path: Path) -> None:
    store = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    store.write_documents(
        [
            Document(
                id=f"d{i}",
                content=f"river number {i}",
                meta={"kind": "odd" if i % 2 else "even"},
                embedding=[1.0, float(i)],
            )
            for i in range(6)
        ]
    )
    assert store.delete_by_filter({"field": "meta.kind", "operator": "==", "value": "odd"}) == 3
    assert sorted(d.id for d in store.embedding_retrieval([1.0, 1.0], top_k=10)) == ["d0", "d2", "d4"]
    assert store.update_by_filter({"field": "id", "operator": "==", "value": "d2"}, {"title": "Zanzibar"}) == 1
    assert [d.id for d in store.bm25_retrieval("zanzibar")] == ["d2"]  # the BM25 title field follows the update
    [updated] = store.get_documents_by_id(["d2"])
    assert updated.meta == {"kind": "even", "title": "Zanzibar"}
    assert store.embedding_retrieval([0.0, 1.0], top_k=1)[0].id == "d4"  # vectors untouched


def test_recreate_index_forgets_the_vector_dimension(tmp_path: Path) -> None:
    store = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    store.write_documents([Document(id="a", content="x", embedding=[1.0, 2.0])])
    store.delete_all_documents()
    with pytest.raises(ValueError, match=r"dimension 3 but the store .* holds 2-dimensional"):
        store.write_documents([Document(id="b", content="y", embedding=[1.0, 2.0, 3.0])])
    store.delete_all_documents(recreate_index=True)
    store.write_documents([Document(id="b", content="y", embedding=[1.0, 2.0, 3.0])])
    assert [d.id for d in store.embedding_retrieval([1.0, 0.0, 0.0])] == ["b"]


def test_async_calls_run_in_parallel_on_one_store(tmp_path: Path) -> None:
    store = EmbeddedDocumentStore(path=str(tmp_path / "s"))

    async def write_and_search() -> list[int]:
        await asyncio.gather(
            *(
                store.write_documents_async([Document(id=f"d{i}", content=f"lake {i}", embedding=[1.0, float(i)])])
                for i in range(20)
            )
        )
        found = await asyncio.gather(
            store.bm25_retrieval_async("lake", top_k=50), store.embedding_retrieval_async([1.0, 0.0], top_k=50)
        )
        return [len(documents) for documents in found] + [await store.count_documents_by_filter_async({})]

    assert asyncio.run(write_and_search()) == [20, 20, 20]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda s: s.delete_by_filter({}), ValueError, "delete_by_filter needs a non-empty Haystack filter"),
        (
            lambda s: s.update_by_filter(None, {"a": 1}),
            ValueError,
            "update_by_filter needs a non-empty Haystack filter",
        ),
        (
            lambda s: s.update_by_filter({"field": "id", "operator": "==", "value": "x"}, ["a"]),
            ValueError,
            "meta as a dict",
        ),
        (
            lambda s: s.update_by_filter({"field": "id", "operator": "==", "value": "x"}, {"a": float("nan")}),
            ValueError,
            "not JSON-serialisable",
        ),
        (
            lambda s: s.delete_by_filter({"field": "meta.year", "operator": "~", "value": 1}),
            FilterError,
            "unknown filter operator",
        ),
        (
            lambda s: s.filter_documents({"field": "embedding", "operator": "==", "value": None}),
            FilterError,
            "cannot filter on field 'embedding'",
        ),
        (
            lambda s: s.get_metadata_field_min_max("year'); DROP TABLE documents; --"),
            ValueError,
            "invalid metadata field",
        ),
        (
            lambda s: s.get_metadata_field_unique_values("year", from_=-1),
            ValueError,
            "from_ must be a non-negative integer",
        ),
        (
            lambda s: s.count_unique_metadata_by_filter({}, "year"),
            ValueError,
            "metadata_fields must be a non-empty list",
        ),
    ],
)
def test_bad_input_is_a_clear_error(call, error: type[Exception], message: str) -> None:
    store = EmbeddedDocumentStore()
    store.write_documents([Document(id="x", content="text", meta={"year": 2001})])
    with pytest.raises(error, match=message):
        call(store)
    assert store.count_documents() == 1


def test_metadata_queries_keep_json_types_and_nested_fields() -> None:
    store = EmbeddedDocumentStore()
    store.write_documents(
        [
            Document(id="a", content="a", meta={"tags": ["x", "y"], "source": {"site": "wiki"}, "year": 2001}),
            Document(id="b", content="b", meta={"tags": ["x", "y"], "source": {"site": "news"}, "year": 1999.5}),
        ]
    )
    assert store.get_metadata_field_unique_values("tags") == ([["x", "y"]], 1)
    assert store.get_metadata_field_unique_values("meta.source.site") == (["news", "wiki"], 2)
    assert store.get_metadata_field_min_max("year") == {"min": 1999.5, "max": 2001}
    assert store.get_metadata_fields_info() == {
        "tags": {"type": "keyword"},
        "source": {"type": "keyword"},
        "year": {"type": "float"},
    }
    assert json.loads(json.dumps(store.count_unique_metadata_by_filter({}, ["meta.source", "year"]))) == {
        "source": 2,
        "year": 2,
    }
    assert np.isclose(store.get_metadata_field_min_max("meta.year")["min"], 1999.5)


def _saved_generation(folder: Path, index: str) -> int | None:
    manifest = folder / index / "manifest.json"
    return json.loads(manifest.read_text())["state"]["generation"] if manifest.is_file() else None


def test_a_write_leaves_the_saved_indexes_to_the_next_search(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    store = EmbeddedDocumentStore(path=str(folder))
    store.write_documents([Document(id="a", content="first lake", embedding=[1.0, 0.0])])
    store.save()
    saved = _saved_generation(folder, "dense_index")
    store.write_documents([Document(id="b", content="second lake", embedding=[0.0, 1.0])])
    assert (_saved_generation(folder, "dense_index"), _saved_generation(folder, "bm25_index")) == (saved, saved)
    assert len(store.embedding_retrieval([1.0, 1.0])) == 2
    current = store._backend.table.generation
    assert (_saved_generation(folder, "dense_index"), _saved_generation(folder, "bm25_index")) == (current, saved)
    assert len(store.bm25_retrieval("lake")) == 2
    assert _saved_generation(folder, "bm25_index") == current


def test_indexes_written_but_never_searched_are_saved_at_exit(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    code = (
        "from haystack import Document; from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore as S;"
        f"s = S(path={str(folder)!r});"
        "[s.write_documents([Document(id=str(i), content='lake', embedding=[1.0, float(i)])]) for i in range(5)]"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
    generation = DocumentTable(folder / "documents.sqlite").generation
    assert (_saved_generation(folder, "dense_index"), _saved_generation(folder, "bm25_index")) == (
        generation,
        generation,
    )
