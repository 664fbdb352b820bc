"""EmbeddedDocumentStore: protocol, filters, dense and BM25 search, persistence, crash safety."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils.filters import document_matches_filter

from dpr_components.document_stores.dense_index import DenseIndex, DenseIndexError
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore


def _docs(n: int = 40, dim: int = 8, seed: int = 0) -> list[Document]:
    rng = np.random.default_rng(seed)
    topics = ["cats purr softly", "dogs bark loudly", "rivers flow to the sea", "stars shine at night"]
    return [
        Document(
            id=f"d{i}",
            content=f"{topics[i % 4]} item {i}",
            meta={"title": f"Title {i % 4}", "year": 2000 + i % 5, "lang": "en" if i % 3 else "de", "flag": i % 2 == 0},
            embedding=rng.normal(size=dim).astype(np.float32).tolist(),
        )
        for i in range(n)
    ]


def _brute_force(docs: list[Document], query: np.ndarray, k: int, metric: str) -> list[str]:
    vectors = np.array([d.embedding for d in docs], dtype=np.float32)
    if metric == "dot_product":
        scores = vectors @ query
    elif metric == "cosine":
        scores = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)) @ (query / np.linalg.norm(query))
    else:
        scores = -((vectors - query) ** 2).sum(axis=1)
    return [docs[i].id for i in np.argsort(-scores, kind="stable")[:k]]


@pytest.mark.parametrize("similarity", ["dot_product", "cosine", "l2"])
def test_flat_search_is_exact_for_each_metric(similarity: str) -> None:
    docs = _docs()
    store = EmbeddedDocumentStore(similarity=similarity)
    store.write_documents(docs)
    query = np.random.default_rng(5).normal(size=8).astype(np.float32)
    found = store.embedding_retrieval(query, top_k=5)
    assert [d.id for d in found] == _brute_force(docs, query, 5, similarity)
    assert found[0].score >= found[-1].score


def test_dot_product_is_not_cosine() -> None:
    """DPR's metric is the raw inner product: a long vector beats a well-aligned short one."""
    store = EmbeddedDocumentStore(similarity="dot_product")
    store.write_documents(
        [
            Document(id="aligned", content="a", embedding=[1.0, 0.0]),
            Document(id="long", content="b", embedding=[3.0, 3.0]),
        ]
    )
    assert store.embedding_retrieval([1.0, 0.0], top_k=1)[0].id == "long"


@pytest.mark.parametrize(
    "filters",
    [
        {"field": "meta.year", "operator": ">=", "value": 2003},
        {"field": "meta.lang", "operator": "==", "value": "de"},
        {"field": "meta.lang", "operator": "!=", "value": "de"},
        {"field": "meta.flag", "operator": "==", "value": True},
        {"field": "meta.year", "operator": "in", "value": [2001, 2002]},
        {"field": "meta.year", "operator": "not in", "value": [2001, 2002]},
        {"field": "meta.missing", "operator": "==", "value": None},
        {"field": "meta.missing", "operator": "!=", "value": "x"},
        {"field": "id", "operator": "in", "value": ["d1", "d2", "nope"]},
        {
            "operator": "AND",
            "conditions": [
                {"field": "meta.year", "operator": "<", "value": 2003},
                {"field": "meta.lang", "operator": "==", "value": "en"},
            ],
        },
        {
            "operator": "OR",
            "conditions": [
                {"field": "meta.year", "operator": "==", "value": 2000},
                {"field": "meta.lang", "operator": "==", "value": "de"},
            ],
        },
        {"operator": "NOT", "conditions": [{"field": "meta.missing", "operator": "==", "value": "x"}]},
    ],
)
def test_filters_agree_with_haystack(filters: dict) -> None:
    docs = _docs()
    store = EmbeddedDocumentStore()
    store.write_documents(docs)
    expected = {d.id for d in docs if document_matches_filter(filters, d)}
    assert {d.id for d in store.filter_documents(filters)} == expected
    assert {d.id for d in store.embedding_retrieval(docs[0].embedding, top_k=100, filters=filters)} == expected
    bm25 = store.bm25_retrieval("item", top_k=100, filters=filters)
    assert {d.id for d in bm25} == expected


def test_bm25_ranks_matching_text_first_and_uses_titles() -> None:
    store = EmbeddedDocumentStore()
    store.write_documents(_docs())
    assert all("dogs" in d.content for d in store.bm25_retrieval("dog barking", top_k=5))
    store.write_documents([Document(id="t", content="nothing relevant here", meta={"title": "Zanzibar"})])
    assert store.bm25_retrieval("zanzibar", top_k=1)[0].id == "t"


def test_duplicate_policies() -> None:
    store = EmbeddedDocumentStore()
    docs = _docs(4)
    assert store.write_documents(docs) == 4
    with pytest.raises(DuplicateDocumentError):
        store.write_documents([docs[0]])
    assert store.write_documents([docs[0]], policy=DuplicatePolicy.SKIP) == 0
    changed = Document(id="d0", content="zebras gallop", meta={}, embedding=[9.0] * 8)
    assert store.write_documents([changed], policy=DuplicatePolicy.OVERWRITE) == 1
    assert store.count_documents() == 4
    assert store.bm25_retrieval("zebras", top_k=1)[0].id == "d0"
    assert store.embedding_retrieval([1.0] * 8, top_k=1)[0].id == "d0"


def test_delete_removes_from_both_indexes() -> None:
    store = EmbeddedDocumentStore()
    docs = _docs(8)
    store.write_documents(docs)
    store.delete_documents(["d1"])
    assert store.count_documents() == 7
    assert "d1" not in {d.id for d in store.embedding_retrieval(docs[1].embedding, top_k=8)}
    assert "d1" not in {d.id for d in store.bm25_retrieval("dogs", top_k=8)}


def test_score_documents_matches_retrieval_scores() -> None:
    store = EmbeddedDocumentStore()
    docs = _docs()
    store.write_documents(docs)
    query_vec = docs[2].embedding
    bm25 = {d.id: d.score for d in store.bm25_retrieval("rivers sea", top_k=10)}
    dense = {d.id: d.score for d in store.embedding_retrieval(query_vec, top_k=10)}
    scores = store.score_documents(list(bm25) + list(dense) + ["unknown"], "rivers sea", query_vec)
    assert "unknown" not in scores
    for doc_id, score in bm25.items():
        assert scores[doc_id][0] == pytest.approx(score, rel=1e-5)
    for doc_id, score in dense.items():
        assert scores[doc_id][1] == pytest.approx(score, rel=1e-5)
    # a document BM25 did not return scores 0 for BM25
    non_matching = next(d.id for d in docs if "rivers" not in d.content)
    assert store.score_documents([non_matching], "rivers", None)[non_matching] == (0.0, None)


def test_persistence_and_reload(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    docs = _docs()
    EmbeddedDocumentStore(path=path, index_factory="HNSW16").write_documents(docs)
    code = (
        "from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore as S;"
        f"s=S(path={path!r}, index_factory='HNSW16');"
        f"print(s.count_documents(), s.embedding_retrieval({docs[3].embedding!r}, top_k=1)[0].id,"
        " s.bm25_retrieval('stars', top_k=1)[0].content.split()[0])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "40" and out[2] == "stars"


def test_wrong_dimension_is_a_clear_error() -> None:
    store = EmbeddedDocumentStore()
    store.write_documents(_docs(3))
    with pytest.raises(ValueError, match=r"dimension 4 .*8-dimensional"):
        store.write_documents([Document(id="x", content="x", embedding=[1.0] * 4)])
    with pytest.raises(ValueError, match="question encoder does not match"):
        store.embedding_retrieval([1.0] * 5, top_k=1)


def test_settings_mismatch_on_reopen(tmp_path: Path) -> None:
    EmbeddedDocumentStore(path=str(tmp_path / "s"), similarity="cosine").write_documents(_docs(3))
    import gc

    gc.collect()
    with pytest.raises(ValueError, match="similarity 'cosine'"):
        EmbeddedDocumentStore(path=str(tmp_path / "s"), similarity="l2")


@pytest.mark.parametrize("bad", [0, -3, 1.5, True])
def test_bad_top_k(bad: object) -> None:
    store = EmbeddedDocumentStore()
    store.write_documents(_docs(3))
    with pytest.raises(ValueError, match="top_k"):
        store.bm25_retrieval("cats", top_k=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ["", "   \n"])
def test_empty_query(query: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        EmbeddedDocumentStore().bm25_retrieval(query)


def test_documents_without_vectors_are_bm25_only() -> None:
    store = EmbeddedDocumentStore()
    store.write_documents([Document(id="plain", content="only words here"), *_docs(3)])
    assert store.bm25_retrieval("words", top_k=1)[0].id == "plain"
    assert "plain" not in {d.id for d in store.embedding_retrieval([1.0] * 8, top_k=10)}


def test_ivf_pq_is_trained_automatically() -> None:
    docs = _docs(n=600, dim=16, seed=3)
    store = EmbeddedDocumentStore(index_factory="IVF8,PQ4", nprobe=8)
    store.write_documents(docs)
    found = store.embedding_retrieval(docs[10].embedding, top_k=10)
    assert len(found) == 10


def test_too_few_vectors_to_train_is_a_clear_error() -> None:
    store = EmbeddedDocumentStore(index_factory="IVF256,Flat")
    store.write_documents(_docs(20))
    with pytest.raises(DenseIndexError, match=r"cannot train.*256 IVF lists.*only 20"):
        store.embedding_retrieval([1.0] * 8, top_k=1)


def test_corrupt_index_file_is_rebuilt_from_documents(tmp_path: Path) -> None:
    path = tmp_path / "s"
    docs = _docs()
    EmbeddedDocumentStore(path=str(path)).write_documents(docs)
    (path / "dense_index" / "index.faiss").write_bytes(b"garbage")
    (path / "bm25_index" / "store_state.json").write_text("{broken")
    code = (
        "from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore as S;"
        f"s=S(path={str(path)!r});"
        f"print(s.embedding_retrieval({docs[0].embedding!r}, top_k=40)[0].id, len(s.bm25_retrieval('cats', top_k=40)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    expected = _brute_force(docs, np.array(docs[0].embedding, dtype=np.float32), 1, "dot_product")[0]
    assert out == [expected, "10"]


def test_corrupt_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s"
    path.mkdir()
    (path / "documents.sqlite").write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(ValueError, match="corrupt or not an SQLite"):
        EmbeddedDocumentStore(path=str(path))


def test_killed_writer_loses_nothing_committed(tmp_path: Path) -> None:
    """A process killed in the middle of a large write: earlier writes survive intact."""
    path = str(tmp_path / "s")
    code = f"""
import os, signal, numpy as np
from haystack import Document
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
import dpr_components.document_stores.dense_index as dense_index
s = EmbeddedDocumentStore(path={path!r})
s.write_documents([Document(id=f"a{{i}}", content=f"first batch {{i}}", embedding=[float(i), 1.0]) for i in range(50)])
original = dense_index.DenseIndex.save
def dying_save(self, directory, generation, **state):
    os.kill(os.getpid(), signal.SIGKILL)
dense_index.DenseIndex.save = dying_save
s.write_documents([Document(id=f"b{{i}}", content=f"second batch {{i}}", embedding=[1.0, float(i)]) for i in range(50)])
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == -9
    store = EmbeddedDocumentStore(path=path)
    # The second write committed before the index save died; the stale index is rebuilt, not trusted.
    assert store.count_documents() == 100
    assert len(store.embedding_retrieval([0.0, 1.0], top_k=100)) == 100
    assert len(store.bm25_retrieval("first", top_k=100)) == 50


def test_shared_backend_per_folder(tmp_path: Path) -> None:
    a = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    b = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    a.write_documents(_docs(3))
    assert b.count_documents() == 3
    with pytest.raises(ValueError, match="other settings"):
        EmbeddedDocumentStore(path=str(tmp_path / "s"), bm25_k1=2.0)


def test_to_dict_round_trip(tmp_path: Path) -> None:
    store = EmbeddedDocumentStore(path=str(tmp_path / "s"), index_factory="HNSW32", ef_search=128, bm25_k1=1.2)
    again = EmbeddedDocumentStore.from_dict(store.to_dict())
    assert again.to_dict() == store.to_dict()


def test_dense_index_save_load(tmp_path: Path) -> None:
    index = DenseIndex(4, "cosine", "Flat")
    index.rebuild(np.array([5, 9]), np.array([[1, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float32))
    index.save(tmp_path / "idx", generation=3)
    loaded = DenseIndex.load(tmp_path / "idx")
    rowids, scores = loaded.search(np.array([0, 2, 0, 0], dtype=np.float32), 1)
    assert rowids.tolist() == [9] and scores[0] == pytest.approx(1.0)
    assert loaded.generation == 3
    with pytest.raises(DenseIndexError, match="no FAISS index"):
        DenseIndex.load(tmp_path / "missing")
    assert os.path.exists(tmp_path / "idx" / "settings.json")


@pytest.mark.parametrize("factory", ["HNSW16", "HNSW16_SQ8,RFlat", "PCA16,HNSW16"])
def test_hnsw_variants_with_build_and_search_depth_and_filters(factory: str) -> None:
    docs = _docs(n=300, dim=16, seed=4)
    store = EmbeddedDocumentStore(index_factory=factory, ef_construction=80, ef_search=64)
    store.write_documents(docs)
    query = np.array(docs[7].embedding, dtype=np.float32)
    found = [d.id for d in store.embedding_retrieval(query, top_k=10)]
    assert len(set(found) & set(_brute_force(docs, query, 10, "dot_product"))) >= 8
    only_2001 = {"field": "meta.year", "operator": "==", "value": 2001}
    filtered = store.embedding_retrieval(query, top_k=10, filters=only_2001)
    assert filtered and all(d.meta["year"] == 2001 for d in filtered)


def test_ef_construction_needs_hnsw() -> None:
    store = EmbeddedDocumentStore(index_factory="Flat", ef_construction=100)
    store.write_documents(_docs(5))
    with pytest.raises(DenseIndexError, match="ef_construction needs an HNSW index"):
        store.embedding_retrieval([1.0] * 8, top_k=1)


def test_passage_encoder_is_recorded_and_enforced(tmp_path: Path) -> None:
    from dpr_components.document_stores.document_table import EncoderMismatchError

    store = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    plain = _docs(2)
    store.write_documents(plain)  # unstamped vectors (other tools) record nothing
    assert store.passage_encoder is None
    stamped = [
        Document(id=f"p{i}", content="x", meta={"passage_encoder": "aaaa"}, embedding=[0.5] * 8) for i in range(3)
    ]
    store.write_documents(stamped)
    assert store.passage_encoder == "aaaa"
    other = Document(id="q", content="y", meta={"passage_encoder": "bbbb"}, embedding=[0.5] * 8)
    with pytest.raises(
        EncoderMismatchError, match=r"indexed with passage encoder aaaa.*embedded by passage encoder bbbb"
    ):
        store.write_documents([other])
    assert store.count_documents() == 5
    with pytest.raises(ValueError, match="mixes vectors of passage encoders"):
        store.write_documents(
            [other, Document(id="r", content="z", meta={"passage_encoder": "aaaa"}, embedding=[1.0] * 8)]
        )
    # Once no vector is left, the store starts over with the next encoder.
    store.delete_documents([d.id for d in plain + stamped])
    store.write_documents([other])
    assert store.passage_encoder == "bbbb"


def test_a_writer_catches_up_with_another_handle_of_the_folder(tmp_path: Path) -> None:
    """Two backends on one folder (as two processes have): each one's saved index holds both one's vectors."""
    import gc

    from dpr_components.document_stores.dense_index import DenseIndex
    from dpr_components.document_stores.store_backend import StoreBackend

    first = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    first.write_documents(_docs(4, seed=1))
    second = EmbeddedDocumentStore(path=str(tmp_path / "s"))
    second._backend = StoreBackend(second._config)  # a backend of its own, like another process
    second.write_documents([Document(id=f"x{i}", content="other", embedding=[float(i + 1)] * 8) for i in range(3)])
    first.write_documents([Document(id="late", content="late", embedding=[9.0] * 8)])
    assert len(first.embedding_retrieval([1.0] * 8, top_k=100)) == 8
    saved = DenseIndex.load(tmp_path / "s" / "dense_index")
    assert (len(saved), saved.generation) == (8, first._backend.table.generation)
    assert len(second.embedding_retrieval([1.0] * 8, top_k=100)) == 8  # the searcher catches up too
    del first, second
    gc.collect()
