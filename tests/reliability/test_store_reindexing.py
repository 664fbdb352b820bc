"""Re-indexing: a document's passages are replaced as a whole, a re-run changes nothing, and
vectors of another passage encoder are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_integrations.components.writers.dpr.passage_writer import PassageWriter
from tests.helpers.commands import index_args
from tests.helpers.corpora import SMALL_CORPUS
from tests.reliability.harness import (
    PIPELINES,
    assert_clear_error,
    assert_success,
    cli,
    store_snapshot,
)
from tests.reliability.store_checks import (
    open_store,
    searches,
    write_corpus,
)


@pytest.mark.reliability(category="re-indexing", expect="correct result")
def test_shorter_document_loses_its_old_passages(indexed_store: Path, tmp_path: Path, tiny_st_dir: Path) -> None:
    """Re-indexing a corpus in which a two-passage document became one passage long"""
    assert {"jupiter#0", "jupiter#1"} <= set(store_snapshot(indexed_store))
    shorter = [
        {**d, "text": "Jupiter is a gas giant with a great red spot."} if d["id"] == "jupiter" else d
        for d in SMALL_CORPUS
    ]
    assert_success(cli(*index_args(write_corpus(tmp_path / "shorter.jsonl", shorter), indexed_store, tiny_st_dir)))
    ids = set(store_snapshot(indexed_store))
    assert "jupiter#1" not in ids and "jupiter#0" in ids and len(ids) == 5
    store = open_store(indexed_store)
    assert "jupiter#1" not in {d.id for d in store.bm25_retrieval("largest planet solar system", top_k=10)}
    assert len(store.embedding_retrieval([1.0] * 32, top_k=10)) == 5


@pytest.mark.reliability(category="re-indexing", expect="nothing lost")
def test_rerunning_the_same_indexing_changes_nothing(
    indexed_store: Path, small_corpus_file: Path, tiny_st_dir: Path, record_property: pytest.RecordProperty
) -> None:
    """Running the same indexing command again on an indexed store"""
    before, results = store_snapshot(indexed_store), searches(indexed_store)
    assert_success(cli(*index_args(small_corpus_file, indexed_store, tiny_st_dir)))
    assert store_snapshot(indexed_store) == before
    assert searches(indexed_store) == results
    record_property("documents before/after", f"{len(before)}/{len(store_snapshot(indexed_store))}")
    record_property("same search results", True)


@pytest.mark.reliability(category="re-indexing", expect="correct result")
def test_passage_writer_works_with_any_store() -> None:
    """Writing a document's new passages with PassageWriter into Haystack's in-memory store"""
    store = InMemoryDocumentStore()
    writer = PassageWriter(document_store=store)
    passage = lambda i, text: Document(id=f"doc#{i}", content=text, meta={"document_id": "doc", "passage_index": i})  # noqa: E731
    other = Document(id="other#0", content="untouched", meta={"document_id": "other"})
    assert writer.run([passage(0, "a"), passage(1, "b"), passage(2, "c"), other]) == {"documents_written": 4}
    assert writer.run([passage(0, "a2")]) == {"documents_written": 1}
    assert {d.id: d.content for d in store.filter_documents()} == {"doc#0": "a2", "other#0": "untouched"}
    assert PassageWriter.from_dict(writer.to_dict()).to_dict() == writer.to_dict()


@pytest.mark.reliability(category="re-indexing", expect="correct result")
def test_pipeline_with_haystack_document_writer_still_loads(
    tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path
) -> None:
    """Indexing with an older pipeline file whose writer is Haystack's DocumentWriter"""
    spec = yaml.safe_load((PIPELINES / "index.yml").read_text())
    spec["components"]["writer"]["type"] = "haystack.components.writers.document_writer.DocumentWriter"
    spec["components"]["writer"]["init_parameters"]["policy"] = "OVERWRITE"
    old_yaml = tmp_path / "old_index.yml"
    old_yaml.write_text(yaml.safe_dump(spec))
    args = index_args(small_corpus_file, tmp_path / "store", tiny_st_dir)
    args[1] = old_yaml
    assert_success(cli(*args))
    assert len(store_snapshot(tmp_path / "store")) == 6


@pytest.mark.reliability(category="re-indexing", expect="clear error")
def test_reindexing_with_another_passage_encoder(
    indexed_store: Path, small_corpus_file: Path, tiny_dpr_dirs: tuple[Path, Path], tiny_st_dir: Path
) -> None:
    """Re-indexing a store with a passage encoder other than the one that made its vectors"""
    recorded = open_store(indexed_store).passage_encoder
    assert recorded is not None
    before = store_snapshot(indexed_store)
    result = cli(*index_args(small_corpus_file, indexed_store, tiny_dpr_dirs[1]))
    assert_clear_error(result, "was indexed with passage encoder", recorded, "new folder")
    assert store_snapshot(indexed_store) == before
    assert open_store(indexed_store).passage_encoder == recorded


@pytest.mark.reliability(category="re-indexing", expect="correct result")
def test_store_records_its_passage_encoder(tmp_path: Path, small_corpus_file: Path, tiny_st_dir: Path) -> None:
    """Indexing a new store records the digest of the passage encoder stamped on its vectors"""
    assert_success(cli(*index_args(small_corpus_file, tmp_path / "store", tiny_st_dir)))
    store = open_store(tmp_path / "store")
    stamps = {d.meta["passage_encoder"] for d in store.filter_documents()}
    assert stamps == {store.passage_encoder}
