"""Concurrency: several processes writing to one store folder, and long-lived searchers and
writers that must see what other processes wrote (dense and BM25 alike)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from tests.helpers.commands import index_args
from tests.helpers.corpora import SMALL_CORPUS
from tests.reliability.harness import REPO, CliResult, assert_success, cli_process
from tests.reliability.store_checks import (
    MORE_CORPUS,
    open_store,
    write_corpus,
)

DIM = 8
_WRITER = """
import sys, time, pathlib
import numpy as np
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
folder, name, batches, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), pathlib.Path(sys.argv[4])
store = EmbeddedDocumentStore(path=folder)
rng = np.random.default_rng(sum(map(ord, name)))
while not go.exists():
    time.sleep(0.01)
for b in range(batches):
    docs = [Document(id=f"{name}-{b}-{i}", content=f"{name} words batch {b} item {i}", embedding=rng.normal(size=DIM).tolist())
            for i in range(5)]
    docs.append(Document(id=f"shared-{b}", content=f"shared by both, last from {name}", embedding=rng.normal(size=DIM).tolist()))
    store.write_documents(docs, policy=DuplicatePolicy.OVERWRITE)
""".replace("DIM", str(DIM))


def _start_writer(folder: Path, name: str, batches: int, go: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(folder), name, str(batches), str(go)],
        env=env,
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run_writers(folder: Path, names: list[str], batches: int) -> None:
    go = folder.parent / f"{folder.name}.go"
    writers = [_start_writer(folder, name, batches, go) for name in names]
    go.touch()  # both start writing together
    for writer in writers:
        _, err = writer.communicate(timeout=240)
        assert writer.returncode == 0, err


def _saved_dense_count(folder: Path) -> tuple[int, int]:
    """Vectors in the saved FAISS index and the generation it claims."""
    from dpr_components.document_stores.dense_index import DenseIndex

    index = DenseIndex.load(folder / "dense_index")
    return len(index), index.generation


def _write_in_another_process(folder: Path, documents: str) -> None:
    """The store at ``folder`` opened in a new Python process, which writes ``documents`` (the source of a list
    of ``Document``, with ``np`` imported) and exits."""
    code = (
        "import numpy as np; from haystack import Document;"
        "from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore as S;"
        f"S(path={str(folder)!r}).write_documents({documents})"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


def _doc(doc_id: str, text: str, seed: int) -> Document:
    return Document(id=doc_id, content=text, embedding=np.random.default_rng(seed).normal(size=DIM).tolist())


@pytest.mark.timeout(300)
@pytest.mark.reliability(category="concurrency", expect="nothing lost")
@pytest.mark.integration
def test_two_processes_write_to_one_folder(tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    """Two processes each write 8 batches (distinct documents plus shared ids) to one store at once"""
    folder = tmp_path / "store"
    _run_writers(folder, ["left", "right"], batches=8)
    expected = 2 * 8 * 5 + 8
    store = open_store(folder)
    generation = store._backend.table.generation
    assert store.count_documents() == expected
    assert len(store.embedding_retrieval([1.0] * DIM, top_k=1000)) == expected
    assert len(store.bm25_retrieval("words shared", top_k=1000)) == expected
    assert _saved_dense_count(folder) == (expected, generation), "the saved FAISS index lacks vectors of one writer"
    record_property("documents written/in dense search", f"{expected}/{expected}")


@pytest.mark.reliability(category="concurrency", expect="correct result")
@pytest.mark.integration
def test_long_lived_searcher_sees_another_process_writes(tmp_path: Path) -> None:
    """A searcher kept open in this process while another process adds documents to its folder"""
    folder = tmp_path / "store"
    searcher = open_store(folder)
    searcher.write_documents([_doc("first", "an ordinary first document", 1)])
    assert [d.id for d in searcher.bm25_retrieval("ordinary")] == ["first"]
    assert len(searcher.embedding_retrieval([1.0] * DIM, top_k=10)) == 1
    _write_in_another_process(
        folder,
        "[Document(id='zebra', content='a zebra gallops', embedding=np.random.default_rng(2).normal(size=8).tolist())]",
    )
    zebra = _doc("zebra", "", 2).embedding
    assert [d.id for d in searcher.bm25_retrieval("zebra")] == ["zebra"]
    assert searcher.embedding_retrieval(zebra, top_k=1)[0].id == "zebra"
    assert len(searcher.embedding_retrieval([1.0] * DIM, top_k=10)) == 2


@pytest.mark.reliability(category="concurrency", expect="nothing lost")
@pytest.mark.integration
def test_long_lived_writer_and_another_process(tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    """A writer kept open in this process writes before and after another process writes to its folder"""
    folder = tmp_path / "store"
    writer = open_store(folder)
    writer.write_documents([_doc(f"mine-{i}", f"mine {i}", i) for i in range(5)])
    _write_in_another_process(
        folder,
        "[Document(id=f'theirs-{i}', content='theirs', embedding=np.random.default_rng(50 + i).normal(size=8).tolist())"
        " for i in range(5)]",
    )
    writer.write_documents([_doc(f"mine-late-{i}", f"mine late {i}", 100 + i) for i in range(5)])
    assert len(writer.embedding_retrieval([1.0] * DIM, top_k=100)) == 15
    assert _saved_dense_count(folder) == (15, writer._backend.table.generation)
    del writer
    assert len(open_store(folder).embedding_retrieval([1.0] * DIM, top_k=100)) == 15
    record_property("vectors written/in the saved index", "15/15")


@pytest.mark.timeout(300)
@pytest.mark.reliability(category="concurrency", expect="nothing lost")
@pytest.mark.integration
def test_two_indexing_commands_at_once(
    tmp_path: Path, tiny_st_dir: Path, record_property: pytest.RecordProperty
) -> None:
    """Two `haystack run pipelines/index.yml` commands index two corpora into one folder at the same time"""
    folder = tmp_path / "store"
    corpora = [write_corpus(tmp_path / "a.jsonl", SMALL_CORPUS), write_corpus(tmp_path / "b.jsonl", MORE_CORPUS)]
    results: list[CliResult] = []
    threads = [
        threading.Thread(target=lambda c=c: results.append(cli_process(*index_args(c, folder, tiny_st_dir))))
        for c in corpora
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in results:
        assert_success(result)
    store = open_store(folder)
    assert store.count_documents() == 9
    assert len(store.embedding_retrieval([1.0] * 32, top_k=100)) == 9
    assert _saved_dense_count(folder) == (9, store._backend.table.generation)
    record_property("passages indexed/in dense search", "9/9")


_SEARCH_WHILE_INDEXING = """
import sys, threading
import numpy as np
from haystack import Document
from haystack_integrations.document_stores.dpr.document_store import EmbeddedDocumentStore
store = EmbeddedDocumentStore(path=sys.argv[1], embedding_dim=64, dense_delta_fraction=0.02)
rng = np.random.default_rng(0)
def docs(start, count):
    return [Document(id=f"d{i}", content=f"passage {i}", embedding=rng.normal(size=64).tolist())
            for i in range(start, start + count)]
store.write_documents(docs(0, 2000))
store.save()
stop, failures = threading.Event(), []
def search():
    query = rng.normal(size=64).tolist()
    while not stop.is_set():
        try:
            store.embedding_retrieval(query, top_k=10)
        except Exception as error:
            failures.append(repr(error))
threads = [threading.Thread(target=search) for _ in range(4)]
for thread in threads:
    thread.start()
for batch in range(300):
    written = docs(2000 + 50 * batch, 50)
    store.write_documents(written)
    store.embedding_retrieval(rng.normal(size=64).tolist(), top_k=1)  # catches the index up
    if batch % 10 == 9:
        store.save()  # folds the delta into the main index once it is 2% of it
stop.set()
for thread in threads:
    thread.join()
assert store.count_documents() == 17000, store.count_documents()
assert store.embedding_retrieval(written[-1].embedding, top_k=1)[0].id == written[-1].id
print("failures", failures[:3])
raise SystemExit(1 if failures else 0)
"""


@pytest.mark.timeout(300)
@pytest.mark.reliability(category="concurrency", expect="correct result")
@pytest.mark.integration
def test_searches_in_threads_while_the_same_store_indexes(tmp_path: Path) -> None:
    """Four threads searching a store while it is written to and saved (as a server's workers do): all kept."""
    done = subprocess.run(
        [sys.executable, "-c", _SEARCH_WHILE_INDEXING, str(tmp_path / "store")],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode} (-11: a crash): {done.stdout[-300:]} {done.stderr[-1500:]}"
