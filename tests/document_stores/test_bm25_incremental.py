"""Incremental BM25: an index (and a store) written to piecewise ranks exactly like one built
from scratch over the same live documents; saved indexes round-trip; old formats are rebuilt."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path

import bm25s
import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from dpr_components.document_stores import bm25_index as bm25_module
from dpr_components.document_stores.bm25_index import METHODS, BM25Index
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

WORDS = "cat dog bird fish owl horse zebra lion tiger apple pear plum the a and running runs ran".split()
QUERIES = ["cat", "dog bird", "zebra lion lion", "running apple pear", "owl the", "plum horse tiger fish", "nothing"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 10)))


def _assert_same_ranking(incremental: BM25Index, live: list[int], scratch: BM25Index) -> None:
    """``incremental`` at positions ``live`` (in order) ranks like ``scratch`` at 0, 1, 2..."""
    assert incremental.live_count == len(live) == len(scratch)
    to_scratch = np.full(len(incremental), -1)
    to_scratch[live] = np.arange(len(live))
    for query in QUERIES:
        scores = incremental.scores(query)
        np.testing.assert_allclose(scores[live], scratch.scores(query), rtol=1e-5, atol=1e-7)
        dead = np.setdiff1d(np.arange(len(incremental)), live)
        assert not scores[dead].any()
        for top_k in (1, 3, 50):
            positions, top = incremental.search(query, top_k)
            expected_positions, expected_scores = scratch.search(query, top_k)
            assert to_scratch[positions].tolist() == expected_positions.tolist(), (query, top_k)
            np.testing.assert_allclose(top, expected_scores, rtol=1e-5)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", range(4))
def test_random_writes_rank_like_a_fresh_build(method: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    # Merge often enough that every path (new segments, merges of new ones, full merges) is taken.
    monkeypatch.setattr(bm25_module, "MAX_NEW_SEGMENTS", 2)
    texts: list[str | None] = [_text(rng) for _ in range(rng.randint(0, 30))]
    index = BM25Index(method=method)
    index.build([t for t in texts if t is not None])
    for _ in range(25):
        live = [p for p, t in enumerate(texts) if t is not None]
        action = rng.choice(["add", "remove", "replace"]) if live else "add"
        if action == "add":
            new = [_text(rng) for _ in range(rng.randint(0, 6))]
            assert index.add(new).tolist() == list(range(len(texts), len(texts) + len(new)))
            texts.extend(new)
        else:
            chosen = rng.sample(live, rng.randint(1, min(4, len(live))))
            if action == "remove":
                index.remove(chosen)
                for p in chosen:
                    texts[p] = None
            else:
                new = [_text(rng) for _ in chosen]
                index.replace(chosen, new)
                for p, t in zip(chosen, new, strict=True):
                    texts[p] = t
        live = [p for p, t in enumerate(texts) if t is not None]
        scratch = BM25Index(method=method)
        scratch.build([texts[p] for p in live])  # type: ignore[misc]
        _assert_same_ranking(index, live, scratch)
    compact, kept = index.compacted()
    assert kept.tolist() == live and len(compact) == len(live)
    _assert_same_ranking(compact, list(range(len(live))), scratch)


@pytest.mark.parametrize("method", METHODS)
def test_scores_match_bm25s(method: str) -> None:
    rng = random.Random(7)
    texts = [_text(rng) for _ in range(200)]
    index = BM25Index(method=method)
    index.build(texts[:120])
    index.add(texts[120:])
    corpus = [index.analyzer.analyze(t) for t in texts]
    vocab: dict[str, int] = {}
    for terms in corpus:
        for term in terms:
            vocab.setdefault(term, len(vocab))
    reference = bm25s.BM25(k1=0.9, b=0.4, method=method)
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    reference.index(
        ([[vocab[t] for t in terms] for terms in corpus], vocab), create_empty_token=False, show_progress=False
    )
    for query in QUERIES[:-1]:
        ids = [vocab[t] for t in index.analyzer.analyze(query) if t in vocab]
        np.testing.assert_allclose(index.scores(query), reference.get_scores_from_ids(ids), rtol=1e-6)


def test_removed_terms_and_empty_collection() -> None:
    index = BM25Index(method="bm25+")
    index.build(["zebra", "lion"])
    index.remove([0])
    assert index.search("zebra", 5)[0].size == 0 and not index.scores("zebra").any()
    assert index.search("lion zebra", 5)[0].tolist() == [1]
    index.remove([1])
    assert index.live_count == 0 and index.search("lion", 5)[0].size == 0
    assert index.add(["lion lion"]).tolist() == [2]
    assert index.search("lion", 5)[0].tolist() == [2]


def test_bad_positions_are_refused() -> None:
    index = BM25Index()
    index.build(["a cat", "a dog"])
    with pytest.raises(ValueError, match="positions 0 to 1"):
        index.remove([2])
    with pytest.raises(ValueError, match="twice"):
        index.remove([0, 0])
    index.remove([0])
    with pytest.raises(ValueError, match="was removed"):
        index.replace([0], ["cat"])
    with pytest.raises(ValueError, match="1 positions but 2 texts"):
        index.replace([1], ["cat", "dog"])


def test_copy_leaves_the_original_untouched(tmp_path: Path) -> None:
    index = BM25Index()
    index.build(["cat dog", "cat", "bird"])
    before = index.scores("cat")
    twin = index.copy()
    twin.remove([0])
    twin.replace([1], ["bird bird"])
    twin.add(["cat cat", "zebra"])  # a new term: the copies share their (growing) vocabulary
    np.testing.assert_array_equal(index.scores("cat"), before)
    assert index.search("zebra", 5)[0].size == 0
    assert twin.search("cat", 5)[0].tolist() == [3]
    index.save(tmp_path / "original")
    np.testing.assert_array_equal(BM25Index.load(tmp_path / "original").scores("cat"), before)


def test_incremental_index_round_trips(tmp_path: Path) -> None:
    rng = random.Random(3)
    index = BM25Index(method="bm25l")
    index.build([_text(rng) for _ in range(40)])
    index.add([_text(rng) for _ in range(3)])
    index.replace([5, 41], [_text(rng), _text(rng)])
    index.remove([0, 7])
    expected = {q: (index.search(q, 10), index.scores(q)) for q in QUERIES}
    index.save(tmp_path / "bm25", generation=3)
    loaded = BM25Index.load(tmp_path / "bm25")
    assert (len(loaded), loaded.live_count, loaded.state) == (43, 41, {"generation": 3})
    for query, ((positions, top), scores) in expected.items():
        found, found_top = loaded.search(query, 10)
        assert found.tolist() == positions.tolist()
        np.testing.assert_allclose(found_top, top, rtol=1e-6)
        np.testing.assert_allclose(loaded.scores(query), scores, rtol=1e-6)
    loaded.add(["zebra zebra"])
    assert loaded.search("zebra", 1)[0].tolist() == [43]


def test_old_format_is_refused_with_rebuild(tmp_path: Path) -> None:
    index = BM25Index()
    index.build(["cat"])
    index.save(tmp_path / "bm25")
    meta = json.loads((tmp_path / "bm25" / "bm25_index.json").read_text())
    (tmp_path / "bm25" / "bm25_index.json").write_text(json.dumps({**meta, "format_version": 1}))
    with pytest.raises(ValueError, match=r"format version 1.*rebuild it"):
        BM25Index.read_files(tmp_path / "bm25")


# --- through the store --------------------------------------------------------------------------


def _docs(rng: random.Random, ids: range, prefix: str = "d") -> list[Document]:
    return [Document(id=f"{prefix}{i}", content=_text(rng), meta={"title": rng.choice(WORDS)}) for i in ids]


def _results(store: EmbeddedDocumentStore) -> dict[str, list[tuple[str, float]]]:
    return {q: [(d.id, round(d.score or 0.0, 4)) for d in store.bm25_retrieval(q, top_k=20)] for q in QUERIES}


def _same(a: dict[str, list[tuple[str, float]]], b: dict[str, list[tuple[str, float]]]) -> None:
    for query, found in a.items():
        assert [i for i, _ in found] == [i for i, _ in b[query]], query
        np.testing.assert_allclose([s for _, s in found], [s for _, s in b[query]], rtol=1e-4)


def _rebuilt_twin(store: EmbeddedDocumentStore, folder: Path, **kwargs: object) -> EmbeddedDocumentStore:
    """A new store holding ``store``'s documents, written in the same order in one batch."""
    twin = EmbeddedDocumentStore(path=str(folder), **kwargs)  # type: ignore[arg-type]
    twin.write_documents(store.filter_documents())
    return twin


@pytest.mark.parametrize("title_field", [None, "title"])
def test_store_catches_up_adds_deletes_overwrites(
    tmp_path: Path, title_field: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(11)
    store = EmbeddedDocumentStore(path=str(tmp_path / "s"), bm25_title_field=title_field)
    store.write_documents(_docs(rng, range(200)))
    store.save()
    store.bm25_retrieval("cat")
    backend = store._backend
    with caplog.at_level(logging.INFO, logger="dpr_components"):
        for step in range(6):
            store.write_documents(_docs(rng, range(200 + 30 * step, 230 + 30 * step)))
            store.delete_documents([f"d{i}" for i in rng.sample(range(200), 5)])
            store.write_documents(
                _docs(rng, range(rng.randint(0, 150), 200 + 30 * step, 17)), policy=DuplicatePolicy.OVERWRITE
            )
            if step == 2:
                store.update_by_filter({"field": "id", "operator": "==", "value": "d3"}, {"title": "zebra"})
            before = backend._bm25
            incremental = _results(store)
            assert backend._bm25 is not before  # caught up on a copy (searches in flight keep theirs)
            _same(
                incremental, _results(_rebuilt_twin(store, tmp_path / f"scratch{step}", bm25_title_field=title_field))
            )
    # This store's messages only: a store of another test collected meanwhile may log about its own folder.
    rebuilt = [r for r in caplog.records if "rebuild" in r.getMessage() and str(tmp_path) in r.getMessage()]
    assert not rebuilt, "caught up, never rebuilt"


def test_store_write_1000_into_n_equals_fresh_store(tmp_path: Path) -> None:
    rng = random.Random(5)
    store = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    store.write_documents(_docs(rng, range(3000)))
    store.save()
    store.write_documents(_docs(rng, range(3000, 4000)))
    index_before = store._backend._bm25
    incremental = _results(store)
    assert store._backend._bm25 is not index_before and store._backend._bm25.live_count == 4000
    _same(incremental, _results(_rebuilt_twin(store, tmp_path / "scratch")))
    # score_documents goes through bm25_positions: same exact scores.
    ids = [f"d{i}" for i in range(0, 4000, 97)]
    twin = EmbeddedDocumentStore(path=str(tmp_path / "scratch"))
    mine, theirs = store.score_documents(ids, "cat dog"), twin.score_documents(ids, "cat dog")
    np.testing.assert_allclose([mine[i][0] for i in ids], [theirs[i][0] for i in ids], rtol=1e-5)


def test_saved_index_is_caught_up_when_reopened(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rng = random.Random(2)
    folder = tmp_path / "s"
    store = EmbeddedDocumentStore(path=str(folder), autosave=False)
    store.write_documents(_docs(rng, range(100)))
    store.save()
    store.delete_documents(["d1", "d2"])
    store.write_documents(_docs(rng, range(100, 120)) + _docs(rng, range(10, 15)), policy=DuplicatePolicy.OVERWRITE)
    expected = _results(store)
    del store
    from dpr_components.document_stores import store_backend

    store_backend._BACKENDS.clear()
    reopened = EmbeddedDocumentStore(path=str(folder), autosave=False)
    with caplog.at_level(logging.INFO, logger="dpr_components"):
        _same(_results(reopened), expected)
    assert not [r for r in caplog.records if "rebuild" in r.getMessage()]
    reopened.save()  # compacts the removed positions away
    saved = BM25Index.load(folder / "bm25_index")
    assert len(saved) == saved.live_count == 118
    assert np.load(folder / "bm25_index" / "rowids.npy").tolist() == reopened._backend.table.rowids().tolist()


def test_old_format_store_index_is_rebuilt_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "s"
    store = EmbeddedDocumentStore(path=str(folder))
    store.write_documents(_docs(random.Random(1), range(20)))
    store.save()
    expected = _results(store)
    meta_path = folder / "bm25_index" / "bm25_index.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "format_version": 1}))
    store._backend._bm25 = None  # as a new process would: read the folder
    with caplog.at_level(logging.WARNING, logger="dpr_components"):
        _same(_results(store), expected)
    assert any("rebuilding it" in r.getMessage() for r in caplog.records)
    assert json.loads(meta_path.read_text())["format_version"] == bm25_module.FORMAT_VERSION


def test_index_older_than_the_change_log_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpr_components.document_stores import document_table

    monkeypatch.setattr(document_table, "CHANGE_LOG_LIMIT", 10)
    builds = []
    original_build = BM25Index.build
    monkeypatch.setattr(
        BM25Index, "build", lambda self, texts, **kw: builds.append(len(texts)) or original_build(self, texts, **kw)
    )
    rng = random.Random(4)
    store = EmbeddedDocumentStore(path=str(tmp_path / "s"), autosave=False)
    store.write_documents(_docs(rng, range(50)))
    _results(store)
    store.write_documents(_docs(rng, range(0, 8)), policy=DuplicatePolicy.OVERWRITE)
    _results(store)
    assert builds == [50]  # 8 overwrites: caught up
    for start in (8, 16):  # 16 more: the log drops its older entries, the index cannot catch up
        store.write_documents(_docs(rng, range(start, start + 8)), policy=DuplicatePolicy.OVERWRITE)
    _same(_results(store), _results(_rebuilt_twin(store, tmp_path / "scratch")))
    assert builds[:2] == [50, 50]
    # delete_all_documents forgets the log: the index rebuilds over what is written next.
    store.delete_all_documents()
    store.write_documents(_docs(rng, range(50, 60)))
    _same(_results(store), _results(_rebuilt_twin(store, tmp_path / "scratch2")))
    assert store._backend._bm25.live_count == 10
