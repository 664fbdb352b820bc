"""``haystack serve --store``: the packaged pipelines over the user's own store, served before it holds
anything (503 "index first"), searchable right after an index request, without a restart."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from dpr_components.serving.app import build_app
from dpr_components.serving.security import ServerPolicy
from dpr_components.serving.store_folders import StoreFolders
from dpr_components.utils.input_files import INPUT_ROOT_ENV
from tests.helpers.paths import PIPELINES
from tests.helpers.serving import write_pipelines

pytestmark = pytest.mark.usefixtures("one_thread")

FIRST = [{"id": "hamlet", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare."}]
MORE = [{"id": "everest", "title": "Everest", "text": "Mount Everest is the highest mountain above sea level."}]


@pytest.fixture()
def served(
    tmp_path: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[TestClient, Path]:
    folder, store = tmp_path / "pipelines", tmp_path / "my_store"
    (tmp_path / "served").mkdir()
    monkeypatch.setenv(INPUT_ROOT_ENV, str(tmp_path / "served"))
    write_pipelines(folder, tmp_path / "their_store", tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    app, _ = build_app(folder, policy=ServerPolicy(), stores=StoreFolders(default=str(store)))
    return TestClient(app, base_url="http://127.0.0.1:1416", raise_server_exceptions=False), store


def _ids(client: TestClient, pipeline: str) -> list[str]:
    response = client.post(f"/{pipeline}/run", json={"query": "highest mountain hamlet", "top_k": 5})
    assert response.status_code == 200, response.text
    return sorted(document["id"] for document in response.json()["result"]["documents"])


def test_search_before_and_after_indexing_without_a_restart(served: tuple[TestClient, Path]) -> None:
    client, store = served
    assert {"bm25", "dense", "search", "qa", "index"} <= set(client.get("/status").json()["pipelines"])
    waiting = client.post("/bm25/run", json={"query": "hamlet"})
    assert waiting.status_code == 503, waiting.text
    assert f"store folder {store} does not exist" in waiting.json()["detail"]
    assert "POST /index/run" in waiting.json()["detail"] and "\n" not in waiting.json()["detail"]
    assert client.post("/qa/run", json={"query": "who wrote hamlet"}).status_code == 503

    assert client.post("/index/run", json={"records": FIRST}).status_code == 200
    assert (store / "documents.sqlite").is_file()  # the user's store, not the pipelines' own
    for pipeline in ("bm25", "dense", "search"):
        assert _ids(client, pipeline) == ["hamlet#0"], pipeline
    answers = client.post("/qa/run", json={"query": "who wrote hamlet"}).json()["result"]["answers"]
    assert next(a["document_id"] for a in answers if a["data"] is not None) == "hamlet#0"

    assert client.post("/index/run", json={"records": MORE}).status_code == 200
    for pipeline in ("bm25", "dense", "search"):
        assert _ids(client, pipeline) == ["everest#0", "hamlet#0"], pipeline


@pytest.mark.parametrize(
    "options, message",
    [
        (["a", "b"], "one --store DIR for every pipeline"),
        (["qa="], "give a store folder"),
        ([""], "give a store folder"),
    ],
)
def test_store_options_are_checked(options: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StoreFolders.parse(options)
    parsed = StoreFolders.parse(["mine", "qa=other"])
    assert (parsed.folder_for("bm25"), parsed.folder_for("qa")) == ("mine", "other")


def test_store_folders_are_checked_against_the_pipelines_and_the_folders(tmp_path: Path) -> None:
    folder = tmp_path / "pipelines"
    folder.mkdir()
    for name in ("bm25", "eval_nq"):  # a pipeline with a store folder, one without
        shutil.copy(PIPELINES / f"{name}.yml", folder)
    files = sorted(folder.iterdir())
    store, empty, run = tmp_path / "store", tmp_path / "empty", tmp_path / "run"
    (store / "documents.sqlite").parent.mkdir()
    (store / "documents.sqlite").write_bytes(b"")
    empty.mkdir()
    run.mkdir()
    (run / "log.jsonl").write_text("{}\n")
    for fine in ([str(store)], [f"bm25={empty}"], [str(tmp_path / "new")]):
        StoreFolders.parse(fine).check(files)
    refused = {
        f"eval_nq={store}": "'eval_nq' is not one of the served pipelines with a store folder: bm25",
        str(run): f"{run} holds a DPR training run, not a document store",
        f"bm25={store / 'documents.sqlite'}": "is a file, not a folder",
    }
    for option, message in refused.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            StoreFolders.parse([option]).check(files)
