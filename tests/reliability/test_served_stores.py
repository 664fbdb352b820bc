"""``haystack serve`` over a store folder, as a user meets it: the folder deleted, renamed or replaced while
the server runs, a ``--store`` option that names no pipeline or a folder of another program, and pipelines
the server cannot serve (their models missing, a store of another passage encoder).

A server must never answer from files no longer at the path it names, nor acknowledge a write that is not
in that folder; a pipeline it cannot serve says why, in ``GET /status`` and on its route (503), never with
a bare 404. Most cases drive the app of ``build_app`` in process (``starlette.testclient``); the deletion
runs a real server, stopped afterwards, so that nothing it saves at exit brings the folder back."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from starlette.testclient import TestClient

import haystack_integrations.document_stores.dpr.document_store as embedded_module
from dpr_components.serving.app import build_app
from dpr_components.serving.security import ServerPolicy
from dpr_components.serving.store_folders import StoreFolders
from dpr_components.utils.input_files import INPUT_ROOT_ENV
from tests.helpers.commands import index_args
from tests.helpers.serving import free_port, served, server_environment, write_pipelines
from tests.reliability.harness import assert_clear_error, assert_success, cli, cli_process

CLEAR = pytest.mark.reliability(category="served stores", expect="clear error")
CORRECT = pytest.mark.reliability(category="served stores", expect="correct result")

URL = "http://127.0.0.1:1416"
KEY = "k3y-for-tests-only-0123456789abcdef"
ZEBRA = [{"id": "zebra", "title": "Zebra", "text": "Zebras are African equines with black and white stripes."}]
HAMLET = [{"id": "hamlet", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare."}]

pytestmark = pytest.mark.usefixtures("one_thread")


def _pipelines(tmp_path: Path, models: tuple[Path, Path, Path], keep: tuple[str, ...]) -> Path:
    """Copies of pipelines/ on the tiny models (``encoder, reader, bert``), only those named ``keep``."""
    folder = tmp_path / "pipelines"
    write_pipelines(folder, tmp_path / "their_store", *models, tmp_path / "run")
    for path in folder.iterdir():
        if path.stem not in keep:
            path.unlink()
    return folder


@pytest.fixture()
def models(tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path) -> tuple[Path, Path, Path]:
    return tiny_st_dir, tiny_reader_dir, tiny_bert_dir


@pytest.fixture()
def input_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "served"
    root.mkdir()
    monkeypatch.setenv(INPUT_ROOT_ENV, str(root))
    return root


def _client(folder: Path, store: Path | None = None, **policy: Any) -> TestClient:
    stores = StoreFolders(default=str(store)) if store is not None else None
    app, _ = build_app(folder, policy=ServerPolicy(**policy), stores=stores)
    return TestClient(app, base_url=URL, raise_server_exceptions=False)


def assert_http_error(response: Any, status: int, *fragments: str) -> str:
    """``status``, and a ``detail`` of one line holding every fragment (no traceback); the detail."""
    assert response.status_code == status, (response.status_code, response.text)
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and "Traceback" not in detail, detail
    for fragment in fragments:
        assert fragment in detail, (fragment, detail)
    return detail


def _ids_in(folder: Path) -> set[str]:
    """The document ids in the database of ``folder``, read with plain SQLite (no store handle)."""
    with sqlite3.connect(f"file:{folder / 'documents.sqlite'}?mode=ro", uri=True) as db:
        return {row[0] for row in db.execute("SELECT id FROM documents")}


# ---- the served folder removed, renamed or replaced ---------------------------------------------------


@CLEAR
def test_store_folder_deleted_while_served(tmp_path: Path, models: tuple[Path, Path, Path]) -> None:
    """A user indexes through the server into a new store, deletes the store folder, then searches and indexes"""
    folder, store = _pipelines(tmp_path, models, ("bm25", "dense", "index")), tmp_path / "my_store"
    (tmp_path / "served").mkdir()
    options = ("--store", str(store), "--input-root", str(tmp_path / "served"))
    with served(folder, tmp_path, *options, env=server_environment(), timeout=120) as url:
        assert httpx.post(f"{url}/index/run", json={"records": HAMLET}, timeout=60).status_code == 200
        assert httpx.post(f"{url}/bm25/run", json={"query": "hamlet"}, timeout=60).status_code == 200
        shutil.rmtree(store)
        for pipeline in ("bm25", "dense"):
            found = httpx.post(f"{url}/{pipeline}/run", json={"query": "hamlet"}, timeout=60)
            assert_http_error(found, 503, f"store folder {store} was removed or renamed", "restart haystack serve")
        written = httpx.post(f"{url}/index/run", json={"records": ZEBRA}, timeout=60)
        assert_http_error(written, 503, f"store folder {store} was removed", "nothing was read or written")
        status = httpx.get(f"{url}/status", timeout=10).json()
        assert str(store) in status["unavailable"]["bm25"] and not status["stores"]["bm25"]["ready"], status
        assert not store.exists()  # nothing recreated it while serving
    assert not store.exists(), sorted(p.name for p in store.iterdir())  # nor when the server stopped


def _rename(store: Path) -> Path:
    return store.rename(store.with_name("renamed"))


def _replace_by_another_store(store: Path) -> Path:
    other = store.with_name("other_store")
    shutil.copytree(store, other)  # the same documents, another folder: a copy is not the store served
    _rename(store)
    return other.rename(store)


def _replace_by_an_empty_folder(store: Path) -> Path:
    _rename(store)
    store.mkdir()
    return store


def _delete_the_database(store: Path) -> Path:
    for name in ("documents.sqlite", "documents.sqlite-wal", "documents.sqlite-shm"):
        (store / name).unlink(missing_ok=True)
    return store


CHANGES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "renamed": (_rename, "was removed or renamed"),
    "replaced by a copy": (_replace_by_another_store, "was replaced by another folder"),
    "replaced by an empty folder": (_replace_by_an_empty_folder, "was replaced by another folder"),
    "database deleted": (_delete_the_database, "documents.sqlite was removed"),
}


@CLEAR
@pytest.mark.parametrize("change", list(CHANGES))
def test_store_folder_changed_while_served(
    change: str, tmp_path: Path, indexed_store: Path, models: tuple[Path, Path, Path], input_root: Path
) -> None:
    """A user renames, replaces or empties the store folder a running server serves, then searches and indexes"""
    client = _client(_pipelines(tmp_path, models, ("bm25", "dense", "index")), indexed_store)
    assert client.post("/bm25/run", json={"query": "hamlet"}).status_code == 200
    move, message = CHANGES[change]
    now_there = move(indexed_store)
    before = _ids_in(now_there) if (now_there / "documents.sqlite").is_file() else None
    for pipeline in ("bm25", "dense"):
        assert_http_error(client.post(f"/{pipeline}/run", json={"query": "hamlet"}), 503, message, str(indexed_store))
    assert_http_error(client.post("/index/run", json={"records": ZEBRA}), 503, message, "nothing was read or written")
    assert_http_error(client.get("/documents/hamlet"), 503, message)
    stores = client.get("/stores").json()["stores"]
    assert message in stores["bm25"]["problem"] and stores["bm25"]["passages"] is None, stores
    if before is not None:  # the folder now at the path is left as it was: no write went into it
        assert _ids_in(now_there) == before and "zebra#0" not in before
    if change == "renamed":
        assert "zebra#0" not in _ids_in(tmp_path / "renamed")  # nor into the folder served before


@CLEAR
def test_folder_removed_during_an_index_request(
    tmp_path: Path,
    indexed_store: Path,
    models: tuple[Path, Path, Path],
    input_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The store folder is deleted while an index request writes into it (after the write is committed)"""
    client = _client(_pipelines(tmp_path, models, ("bm25", "index")), indexed_store)

    def delete_after_commit(name: str) -> None:
        if name == "store.after_commit":
            shutil.rmtree(indexed_store)

    monkeypatch.setattr(embedded_module, "fault_point", delete_after_commit)
    written = client.post("/index/run", json={"records": ZEBRA})
    assert_http_error(written, 503, f"store folder {indexed_store} was removed", "what this request wrote is not in it")
    assert not indexed_store.exists()


@CORRECT
def test_store_not_indexed_yet_is_created_by_the_first_index_request(
    tmp_path: Path, models: tuple[Path, Path, Path], input_root: Path
) -> None:
    """A user serves a store folder that does not exist yet, indexes into it through the server, then searches"""
    store = tmp_path / "new_store"
    client = _client(_pipelines(tmp_path, models, ("bm25", "dense", "index")), store)
    assert_http_error(client.post("/bm25/run", json={"query": "hamlet"}), 503, "does not exist", "POST /index/run")
    assert client.get("/status").json()["unavailable"] == {}  # not indexed yet is not a store that moved
    assert client.post("/index/run", json={"records": HAMLET}).json()["result"]["documents_written"] == 1
    for pipeline in ("bm25", "dense"):
        found = client.post(f"/{pipeline}/run", json={"query": "hamlet"})
        assert [d["id"] for d in found.json()["result"]["documents"]] == ["hamlet#0"], found.text
    assert _ids_in(store) == {"hamlet#0"}


# ---- --store options refused at start -------------------------------------------------------------------


def _serve(tmp_path: Path, folder: Path, *store_options: str) -> Any:
    """``haystack serve`` in a child process (a server that started anyway would be stopped by the timeout)."""
    options = ("--pipelines-dir", folder, "--input-root", tmp_path / "served", "--port", free_port(), *store_options)
    return cli_process("serve", *map(str, options), env=server_environment(), timeout=120, cwd=tmp_path)


@CLEAR
def test_store_option_names_no_pipeline(tmp_path: Path, models: tuple[Path, Path, Path]) -> None:
    """A user serves with --store serach=my_store, a typo for search"""
    result = _serve(
        tmp_path, _pipelines(tmp_path, models, ("bm25", "search", "index", "eval_nq")), "--store", "serach=my_store"
    )
    assert_clear_error(
        result, "--store serach=my_store", "'serach' is not one of the served pipelines", "bm25, index, search"
    )
    assert not (tmp_path / "my_store").exists()


def _home_folder(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "Documents").mkdir(parents=True)
    (home / ".bashrc").write_text("export PATH\n")
    (home / "Documents" / "notes.txt").write_text("notes\n")
    return home


def _a_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "a", "text": "a"}\n')
    return path


FOLDERS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "/etc": (lambda tmp_path: Path("/etc"), "/etc holds files of another program"),
    "a home folder": (_home_folder, "holds files of another program"),
    "a file": (_a_file, "is a file, not a folder"),
}


@CLEAR
@pytest.mark.parametrize("given", list(FOLDERS))
def test_store_option_on_a_folder_of_another_program(
    given: str, tmp_path: Path, models: tuple[Path, Path, Path]
) -> None:
    """A user serves with --store naming /etc, a home folder or a corpus file"""
    make, message = FOLDERS[given]
    path = make(tmp_path)
    result = _serve(tmp_path, _pipelines(tmp_path, models, ("bm25", "index")), "--store", str(path))
    assert_clear_error(result, f"--store {path}", message, "haystack run index --store DIR")
    assert "index into it" not in result.err
    assert path.is_file() or not (path / "documents.sqlite").exists()


# ---- pipelines the server cannot serve --------------------------------------------------------------


@CLEAR
def test_qa_without_its_rerank_models(
    tmp_path: Path,
    indexed_store: Path,
    models: tuple[Path, Path, Path],
    input_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A user serves qa, the ask page's default pipeline, without the re-ranking models installed"""
    import dpr_components.readers.model as reader_model
    from dpr_components.encoders import bundled

    folder = _pipelines(tmp_path, models, ("bm25", "qa"))
    qa = yaml.safe_load((folder / "qa.yml").read_text(encoding="utf-8"))
    qa["components"]["reranker"]["init_parameters"]["model"] = "bundled:ranker-minilm"
    (folder / "qa.yml").write_text(yaml.safe_dump(qa, sort_keys=False), encoding="utf-8")
    monkeypatch.setattr(bundled, "PACKAGED_MODELS_DIR", tmp_path / "no-models")  # not a clone's models/
    monkeypatch.setitem(sys.modules, "dpr_components_rerank_models", None)  # the distribution not installed
    for loaded in ("_SHARED", "_SHARED_OPENVINO"):  # readers an earlier test of this process loaded by name
        monkeypatch.setattr(reader_model, loaded, {})
    client = _client(folder, indexed_store)
    reason = client.get("/status").json()["unavailable"]["qa"]
    assert "dpr-components-rerank-models" in reason and "pip install" in reason, reason
    answer = client.post("/qa/run", json={"query": "who wrote hamlet"})
    assert_http_error(answer, 503, "pipeline qa cannot be served", "pip install dpr-components-rerank-models")
    assert client.post("/bm25/run", json={"query": "hamlet"}).status_code == 200


def _store_of_another_passage_encoder(tmp_path: Path, models: tuple[Path, Path, Path], corpus: Path) -> Path:
    """A store indexed with the passage encoder of another pair than the served pipelines'."""
    from dpr_components.encoder_training.convert import to_dpr

    pair = to_dpr(str(models[2]), tmp_path / "pair")
    store = tmp_path / "pair_store"
    assert_success(cli(*index_args(corpus, store, pair / "passage_encoder")))
    return store


@CLEAR
def test_store_of_another_passage_encoder(
    tmp_path: Path, models: tuple[Path, Path, Path], small_corpus_file: Path
) -> None:
    """A user serves a store indexed with another passage encoder than the served pipelines' question encoder"""
    store = _store_of_another_passage_encoder(tmp_path, models, small_corpus_file)
    client = _client(_pipelines(tmp_path, models, ("bm25", "dense", "search")), store)
    status = client.get("/status").json()
    for pipeline in ("dense", "search"):
        assert "another passage encoder" in status["unavailable"][pipeline], status
        found = client.post(f"/{pipeline}/run", json={"query": "hamlet"})
        assert_http_error(found, 503, f"pipeline {pipeline} cannot be served", "another passage encoder")
    assert "bm25" not in status["unavailable"]
    assert client.post("/bm25/run", json={"query": "hamlet"}).status_code == 200


@CLEAR
def test_documents_of_a_pipeline_that_cannot_be_served(
    tmp_path: Path, models: tuple[Path, Path, Path], small_corpus_file: Path
) -> None:
    """A user opens a whole document through a pipeline the server could not serve (?pipeline=dense)"""
    store = _store_of_another_passage_encoder(tmp_path, models, small_corpus_file)
    client = _client(_pipelines(tmp_path, models, ("bm25", "dense")), store)
    found = client.get("/documents/hamlet", params={"pipeline": "dense"})
    assert_http_error(found, 503, "pipeline dense cannot be served", "another passage encoder")
    assert client.get("/documents/hamlet", params={"pipeline": "bm25"}).status_code == 200


@CORRECT
def test_status_gives_the_reasons_only_with_the_api_key(
    tmp_path: Path, indexed_store: Path, models: tuple[Path, Path, Path], input_root: Path
) -> None:
    """A client without the API key asks GET /status of a server that cannot serve one of its pipelines"""
    folder = _pipelines(tmp_path, models, ("bm25", "dense"))
    dense = yaml.safe_load((folder / "dense.yml").read_text(encoding="utf-8"))
    dense["components"]["dense"]["init_parameters"]["model"] = str(tmp_path / "secret" / "missing-encoder")
    (folder / "dense.yml").write_text(yaml.safe_dump(dense, sort_keys=False), encoding="utf-8")
    client = _client(folder, indexed_store, api_key=KEY)
    anonymous = client.get("/status").json()["unavailable"]
    assert list(anonymous) == ["dense"] and "secret" not in anonymous["dense"], anonymous
    assert "API key" in anonymous["dense"]
    keyed = client.get("/status", headers={"Authorization": f"Bearer {KEY}"}).json()["unavailable"]
    assert "missing-encoder" in keyed["dense"], keyed
