"""Thread settings: parsing, per-thread behaviour of torch and FAISS, a question on one thread, same results."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest
import torch
from haystack import Document

from dpr_components.cli.arguments import build_parser
from dpr_components.cli.serve_command import apply_thread_settings
from dpr_components.document_stores import dense_index
from dpr_components.document_stores.dense_index import DenseIndex
from dpr_components.encoders.encoder_settings import EncoderSettings
from dpr_components.encoders.text_encoder import TextEncoder
from dpr_components.utils import threads
from dpr_components.utils.threads import (
    ENCODE_THREADS_ENV,
    QUERY_THREADS_ENV,
    READ_THREADS_ENV,
    SMALL_BATCH,
    encode_threads,
    encoding_threads,
    faiss_threads,
    parse_threads,
    query_threads,
    read_threads,
    search_threads,
    torch_threads,
    torch_threads_per_thread,
)

QUESTIONS = ["who wrote hamlet?", "what is the capital of france", "when did the war end"]
PASSAGES = [f"passage number {i} about {word}" for i, word in enumerate("abcdefghijkl" * 2)]


@contextmanager
def torch_count(count: int) -> Iterator[None]:
    """The calling thread on ``count`` torch threads while inside."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _no_thread_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(QUERY_THREADS_ENV, raising=False)
    monkeypatch.delenv(ENCODE_THREADS_ENV, raising=False)
    monkeypatch.delenv(READ_THREADS_ENV, raising=False)


# ---- settings -------------------------------------------------------------------------------------


def test_settings_default_to_one_query_thread_and_torch_s_own_encode_count() -> None:
    assert query_threads() == 1
    assert encode_threads() is None
    assert encoding_threads(1) == encoding_threads(SMALL_BATCH) == 1
    assert encoding_threads(SMALL_BATCH + 1) is None
    assert search_threads(1) == 1 and search_threads(SMALL_BATCH + 1) is None


def test_settings_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    monkeypatch.setenv(QUERY_THREADS_ENV, " 2 ")
    monkeypatch.setenv(ENCODE_THREADS_ENV, "3")
    assert query_threads() == 2 and encode_threads() == 3
    assert encoding_threads(1) == 2 and encoding_threads(100) == 3
    monkeypatch.setenv(ENCODE_THREADS_ENV, "")
    assert encode_threads() is None
    assert read_threads() == 2  # reading follows the query count unless set
    monkeypatch.setenv(READ_THREADS_ENV, "1")
    assert read_threads() == 1


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "two", "²", "1e3", "3", "10000"])
def test_bad_values_are_refused_on_one_line(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    expected = f"{QUERY_THREADS_ENV}=" + (value if value.lstrip("-").isdigit() and value.isascii() else repr(value))
    with pytest.raises(ValueError) as error:
        parse_threads(QUERY_THREADS_ENV, value)
    assert str(error.value) == (
        f"{expected}: must be a whole number from 1 to 2 (the usable cores); unset it or choose a value in that range"
    )
    monkeypatch.setenv(ENCODE_THREADS_ENV, value)
    with pytest.raises(ValueError, match=f"^{ENCODE_THREADS_ENV}="):
        encoding_threads(100)


def test_a_count_up_to_the_usable_cores_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "usable_cores", lambda: 3)
    assert parse_threads(READ_THREADS_ENV, "3") == 3 and parse_threads(READ_THREADS_ENV, " ") is None
    monkeypatch.setenv(READ_THREADS_ENV, "4")
    with pytest.raises(ValueError, match=r"^DPR_READ_THREADS=4: must be a whole number from 1 to 3 \(the usable"):
        read_threads()


@pytest.mark.parametrize("name", [QUERY_THREADS_ENV, ENCODE_THREADS_ENV, READ_THREADS_ENV])
def test_every_thread_variable_is_checked_at_once(name: str) -> None:
    threads.check_thread_variables({})
    with pytest.raises(ValueError, match=f"^{name}=0: "):
        threads.check_thread_variables({name: "0"})


# ---- what the libraries do per thread -----------------------------------------------------------


def _in_two_threads(setter: Any, reader: Any) -> dict[str, int]:
    """Two running threads on 2 threads each; one sets 1 (``setter``), then each reads its own (``reader``)."""
    seen: dict[str, int] = {}
    started, changed, read = threading.Barrier(2), threading.Event(), threading.Event()

    def changing() -> None:
        setter(2)
        reader()
        started.wait()
        setter(1)
        seen["changing"] = reader()
        changed.set()
        read.wait()

    def other() -> None:
        setter(2)
        reader()
        started.wait()
        changed.wait()
        seen["other"] = reader()
        read.set()

    workers = [threading.Thread(target=changing), threading.Thread(target=other)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return seen


def test_torch_thread_count_is_per_thread_for_threads_that_ran_torch() -> None:
    """The check the design rests on: torch's OpenMP backend keeps the count per thread (an OpenMP ICV)."""
    if not torch_threads_per_thread():
        pytest.skip("this torch build keeps one process-wide count: the settings leave torch alone")
    with torch_count(2):

        def reader() -> int:
            torch.ones(64, 64) @ torch.ones(64, 64)
            return torch.get_num_threads()

        main_before = torch.get_num_threads()
        seen = _in_two_threads(torch.set_num_threads, reader)
        assert seen == {"changing": 1, "other": 2}
        assert torch.get_num_threads() == main_before == 2


def test_faiss_thread_count_is_per_thread() -> None:
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(2)
    try:
        seen = _in_two_threads(faiss.omp_set_num_threads, faiss.omp_get_max_threads)
        assert seen == {"changing": 1, "other": 2}
        assert faiss.omp_get_max_threads() == 2
    finally:
        faiss.omp_set_num_threads(before)


def test_contexts_set_and_restore_the_calling_thread() -> None:
    with torch_count(2):
        with torch_threads(1):
            assert torch.get_num_threads() == (1 if torch_threads_per_thread() else 2)
        assert torch.get_num_threads() == 2
        with torch_threads(None):
            assert torch.get_num_threads() == 2
        with pytest.raises(RuntimeError), torch_threads(1):
            raise RuntimeError("restored on errors too")
        assert torch.get_num_threads() == 2
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(2)
    try:
        with faiss_threads(1):
            assert faiss.omp_get_max_threads() == 1
        assert faiss.omp_get_max_threads() == 2
    finally:
        faiss.omp_set_num_threads(before)


# ---- the encoder and the index ------------------------------------------------------------------


def _counts_inside_forward(encoder: TextEncoder, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """torch's thread count as each batch's vectors are made (right after the model ran on the batch)."""
    counts: list[int] = []
    vectors = encoder._vectors

    def spy(pooled: torch.Tensor) -> np.ndarray:
        counts.append(torch.get_num_threads())
        return vectors(pooled)

    monkeypatch.setattr(encoder, "_vectors", spy)
    return counts


def test_a_question_is_encoded_on_one_thread_and_the_count_restored(
    tiny_st_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not torch_threads_per_thread():
        pytest.skip("this torch build keeps one process-wide count")
    encoder = TextEncoder(EncoderSettings(model=str(tiny_st_dir)), batch_size=4)
    counts = _counts_inside_forward(encoder, monkeypatch)
    with torch_count(2):
        encoder.encode_questions(QUESTIONS[:1])
        assert counts == [1] and torch.get_num_threads() == 2
        counts.clear()
        encoder.encode_passages(PASSAGES)  # a batch: the thread's own count
        assert set(counts) == {2}
        monkeypatch.setenv(QUERY_THREADS_ENV, "2")
        counts.clear()
        encoder.encode_questions(QUESTIONS)
        assert set(counts) == {2}
    with torch_count(1):
        monkeypatch.setenv(ENCODE_THREADS_ENV, "2")
        counts.clear()
        encoder.encode_passages(PASSAGES)
        assert set(counts) == {2} and torch.get_num_threads() == 1


@pytest.mark.parametrize("component", ["reader", "ranker"])
def test_a_question_s_passages_are_read_on_the_read_threads(
    component: str, tiny_reader_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not torch_threads_per_thread():
        pytest.skip("this torch build keeps one process-wide count")
    from dpr_components.readers import predict
    from haystack_integrations.components.rankers.dpr.passage_ranker import PassageRanker
    from haystack_integrations.components.readers.dpr.span_reader import SpanReader

    counts: list[int] = []
    batched_forward = predict.batched_forward

    def counting(*args: Any, **kwargs: Any) -> Any:
        counts.append(torch.get_num_threads())
        return batched_forward(*args, **kwargs)

    monkeypatch.setattr(predict, "batched_forward", counting)
    instance: Any = (
        SpanReader(model=str(tiny_reader_dir)) if component == "reader" else PassageRanker(model=str(tiny_reader_dir))
    )
    documents = [Document(content="Hamlet is a play by William Shakespeare.")]
    with torch_count(2):
        instance.run(query="who wrote hamlet", documents=documents)
        assert counts == [1] and torch.get_num_threads() == 2
        monkeypatch.setenv(READ_THREADS_ENV, "2")
        instance.run(query="who wrote hamlet", documents=documents)
        assert counts == [1, 2]


def test_vectors_agree_with_and_without_the_settings(tiny_st_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = TextEncoder(EncoderSettings(model=str(tiny_st_dir)), batch_size=4)
    with torch_count(2):
        monkeypatch.setenv(QUERY_THREADS_ENV, "1")
        monkeypatch.setenv(ENCODE_THREADS_ENV, "1")
        one = [encoder.encode_questions(QUESTIONS[:1]), encoder.encode_passages(PASSAGES)]
        monkeypatch.setenv(QUERY_THREADS_ENV, "2")
        monkeypatch.setenv(ENCODE_THREADS_ENV, "2")
        two = [encoder.encode_questions(QUESTIONS[:1]), encoder.encode_passages(PASSAGES)]
        again = [encoder.encode_questions(QUESTIONS[:1]), encoder.encode_passages(PASSAGES)]
    for a, b, c in zip(one, two, again, strict=True):
        np.testing.assert_array_equal(b, c)  # the same count: the same bits
        # Another count may sum the matrix products in another order: the last bit of float32 may differ.
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_rankings_are_identical_with_and_without_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    index = DenseIndex(16, "dot_product", "Flat")
    index.add(np.arange(500, dtype=np.int64), rng.standard_normal((500, 16)).astype(np.float32))
    queries = rng.standard_normal((SMALL_BATCH + 2, 16)).astype(np.float32)
    seen: list[int] = []
    real = dense_index.faiss_threads

    @contextmanager
    def spy(count: int | None) -> Iterator[None]:
        with real(count):
            seen.append(faiss.omp_get_max_threads())
            yield

    monkeypatch.setattr(dense_index, "faiss_threads", spy)
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(2)
    try:
        results = {}
        for count in ("1", "2"):
            monkeypatch.setenv(QUERY_THREADS_ENV, count)
            results[count] = [index.search(q, 10) for q in queries[:3]] + index.search_many_scored(queries, 10)
        assert seen[:3] == [1, 1, 1] and seen[3] == 2  # a query alone on one thread, a batch of 10 as before
        for (ids_1, scores_1), (ids_2, scores_2) in zip(results["1"], results["2"], strict=True):
            np.testing.assert_array_equal(ids_1, ids_2)
            np.testing.assert_array_equal(scores_1, scores_2)
    finally:
        faiss.omp_set_num_threads(before)


def test_dense_retriever_finds_the_same_documents(
    indexed_store: Path, tiny_st_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haystack_integrations.components.retrievers.dpr.dense_retriever import DenseRetriever
    from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore

    retriever = DenseRetriever(document_store=EmbeddedDocumentStore(path=str(indexed_store)), model=str(tiny_st_dir))
    retriever.warm_up()
    found = {}
    with torch_count(2):
        for count in ("1", "2"):
            monkeypatch.setenv(QUERY_THREADS_ENV, count)
            found[count] = [[(d.id, d.score) for d in retriever.run(query=q, top_k=5)["documents"]] for q in QUESTIONS]
    for one, two in zip(found["1"], found["2"], strict=True):
        assert [doc_id for doc_id, _ in one] == [doc_id for doc_id, _ in two]
        np.testing.assert_allclose([score for _, score in one], [score for _, score in two], rtol=1e-5, atol=1e-6)


# ---- haystack serve ---------------------------------------------------------------------------------


def test_serve_option_reaches_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    parser = build_parser()
    assert apply_thread_settings(parser.parse_args(["serve"])) == 1
    monkeypatch.setenv(QUERY_THREADS_ENV, "2")
    assert apply_thread_settings(parser.parse_args(["serve"])) == 2  # the variable, without the option
    assert apply_thread_settings(parser.parse_args(["serve", "--query-threads", "3"])) == 3
    assert query_threads() == 3 and threads.os.environ[QUERY_THREADS_ENV] == "3"
    monkeypatch.setenv(ENCODE_THREADS_ENV, "many")
    with pytest.raises(ValueError, match=f"^{ENCODE_THREADS_ENV}='many': must be a whole number from 1 to 4"):
        apply_thread_settings(parser.parse_args(["serve"]))


@pytest.mark.parametrize(("value", "shown"), [("0", "0"), ("x", "'x'"), ("5", "5")])
def test_serve_option_refuses_bad_counts(value: str, shown: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    with pytest.raises(ValueError) as error:
        apply_thread_settings(build_parser().parse_args(["serve", "--query-threads", value]))
    assert str(error.value) == (
        f"--query-threads {shown}: must be a whole number from 1 to 4 (the usable cores); choose a value in that range"
    )
