"""Record ids, one rule for the corpus files, the index route and the documents route (``corpus/record_ids.py``).

Corpus files go through ``haystack run pipelines/index.yml``; the server is ``build_app`` over bm25 and index on
the small store, driven in process as the ask page calls it (ids URL-encoded as ``encodeURIComponent`` does)."""

from __future__ import annotations

import asyncio
import json
import string
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import yaml
from starlette.testclient import TestClient

from dpr_components.corpus.record_ids import MAX_RECORD_ID_CHARS
from dpr_components.serving.app import build_app
from dpr_components.serving.security import ServerPolicy
from dpr_components.store_access.serialization import replace_store_paths
from tests.helpers.commands import index_args
from tests.helpers.serving import served, server_environment
from tests.reliability.harness import PIPELINES, assert_clear_error, cli

CLEAR = pytest.mark.reliability(category="record ids", expect="clear error")
CORRECT = pytest.mark.reliability(category="record ids", expect="correct result")

URL = "http://127.0.0.1:1416"
TEXT = "Zebras are African equines with black and white stripes."
# Every id below is one the index accepts: all of ASCII's punctuation and symbols, spaces between words,
# letters, marks and symbols beyond ASCII, characters that mean something in a URL, and the longest ids.
SPECIAL_IDS = [
    string.punctuation,
    "a b  c",
    "/leading slash",
    "trailing slash/",
    "a//b/./c/../d",
    "%41%2F%%",
    "?q=1&r=2#frag",
    "Hamlet#Plot",
    "#",
    "x#",
    "a#0x",
    "...",
    "+plus+",
    "back\\slash",
    "Ελσίνορε é ﷽ 😀",
    "x" * MAX_RECORD_ID_CHARS,
    "😀" * MAX_RECORD_ID_CHARS,  # 4 bytes each in UTF-8: 12,000 characters once URL-encoded
]


@pytest.fixture()
def pipelines_dir(tmp_path: Path, indexed_store: Path, tiny_st_dir: Path) -> Path:
    """bm25 and index (the tiny encoder) on the small store (Hamlet, Everest, ...)."""
    folder = tmp_path / "pipelines"
    folder.mkdir()
    for name in ("bm25", "index"):
        spec = yaml.safe_load((PIPELINES / f"{name}.yml").read_text(encoding="utf-8"))
        replace_store_paths(spec, str(indexed_store))
        embedder = spec["components"].get("embedder", {}).get("init_parameters")
        if embedder is not None:
            embedder.update(model=str(tiny_st_dir), cache_dir=None, progress_bar=False)
        (folder / f"{name}.yml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return folder


@pytest.fixture()
def client(pipelines_dir: Path) -> TestClient:
    app, _ = build_app(pipelines_dir, policy=ServerPolicy())
    return TestClient(app, base_url=URL, raise_server_exceptions=False)


def _open(client: TestClient, *document_ids: str) -> list[httpx.Response]:
    """``GET /documents/{id}`` of each id, URL-encoded as the ask page does. Through httpx's ASGI transport, which
    decodes the path once as uvicorn does (Starlette's TestClient decodes it twice: ``%2541`` would arrive as ``A``)."""

    async def get_all() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=client.app)
        async with httpx.AsyncClient(transport=transport, base_url=URL) as http:
            return [
                await http.get(f"/documents/{quote(document_id, safe='')}", params={"pipeline": "bm25"})
                for document_id in document_ids
            ]

    return asyncio.run(get_all())


def _assert_one_line(response, status: int, *fragments: str) -> None:  # response: an httpx response
    assert response.status_code == status, (response.status_code, response.text[:500])
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and len(detail) < 500, detail
    for fragment in fragments:
        assert fragment in detail, (fragment, detail)


def _index(client: TestClient, *ids: str):  # returns an httpx response
    return client.post("/index/run", json={"records": [{"id": i, "title": "Zebra", "text": TEXT} for i in ids]})


def _corpus(tmp_path: Path, *ids: str) -> Path:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": TEXT}) + "\n" for i in ids), encoding="utf-8")
    return corpus


# ---- one id, two things ----------------------------------------------------------------------------


@CLEAR
def test_record_named_like_a_passage_over_the_index_route(client: TestClient) -> None:
    """Index a record with id hamlet#0 (the id of Hamlet's first passage), then open Hamlet's "Whole document\""""
    first = client.post("/bm25/run", json={"query": "who wrote hamlet", "top_k": 1}).json()["result"]["documents"][0]
    assert first["id"] == "hamlet#0"
    _assert_one_line(_index(client, "hamlet#0"), 400, "records[0]: field 'id' ends in '#0', the form of a passage id")
    (document,) = (response.json() for response in _open(client, first["id"]))
    assert document["id"] == "hamlet" and document["title"] == "Hamlet", document


@CLEAR
def test_record_named_like_a_passage_in_a_corpus_file(tmp_path: Path, tiny_st_dir: Path) -> None:
    """haystack run index with a corpus whose second line has the id report#2"""
    corpus = _corpus(tmp_path, "report", "report#2")
    assert_clear_error(
        cli(*index_args(corpus, tmp_path / "store", tiny_st_dir)),
        f"{corpus}:2: field 'id' ends in '#2', the form of a passage id (passage 2 of document 'report')",
    )


@CORRECT
def test_whole_document_in_a_store_indexed_before_the_rule(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """Open "Whole document" of Hamlet's first passage in a store that also holds a record hamlet#0 from before"""
    with monkeypatch.context() as older:  # an earlier version, which took any id
        for module in (
            "dpr_components.corpus.records",
            "haystack_integrations.components.preprocessors.dpr.dpr_passage_splitter",
        ):
            older.setattr(f"{module}.record_id_problem", lambda value: None)
        assert _index(client, "hamlet#0").status_code == 200
    hamlet, old = (response.json() for response in _open(client, "hamlet#0", "hamlet#0#0"))
    assert hamlet["id"] == "hamlet"  # the passage's document, as the link means
    # The old record, by its own passage's id:
    assert old["id"] == "hamlet#0" and [p["content"] for p in old["passages"]] == [TEXT]


# ---- ids the index accepted and the documents route could not serve ---------------------------------


@CLEAR
@pytest.mark.parametrize(
    ("bad_id", "code"),
    [("line\nbreak", "U+000A"), ("tab\there", "U+0009"), ("nul\x00", "U+0000"), ("bell\x07", "U+0007")],
    ids=["LF", "TAB", "NUL", "BEL"],
)
def test_control_characters_in_an_id_over_the_index_route(client: TestClient, bad_id: str, code: str) -> None:
    """Index a record whose id holds a newline, a tab, NUL or BEL, then open it by that id"""
    _assert_one_line(_index(client, bad_id), 400, "records[0]: field 'id' holds", code, "(a control character)")
    _assert_one_line(_open(client, bad_id)[0], 422, "path.document_id holds", code)


@CLEAR
def test_control_character_in_an_id_in_a_corpus_file(tmp_path: Path, tiny_st_dir: Path) -> None:
    """haystack run index with a corpus whose third line's id holds a carriage return"""
    corpus = _corpus(tmp_path, "a", "b", "c\rd")
    assert_clear_error(
        cli(*index_args(corpus, tmp_path / "store", tiny_st_dir)),
        f"{corpus}:3: field 'id' holds U+000D (a control character) at character 1",
    )


@CLEAR
def test_id_of_ten_thousand_characters_over_the_index_route(client: TestClient) -> None:
    """Index a record whose id has 10,000 characters, then open it by that id"""
    long_id = "x" * 10_000
    _assert_one_line(_index(client, long_id), 400, "records[0]: field 'id' has 10,000 characters", "at most 1,000")
    _assert_one_line(_open(client, long_id)[0], 422, "path.document_id has 10,000 characters")


@CLEAR
def test_id_of_ten_thousand_characters_in_a_corpus_file(tmp_path: Path, tiny_st_dir: Path) -> None:
    """haystack run index with a corpus whose first id has 10,000 characters"""
    corpus = _corpus(tmp_path, "x" * 10_000)
    assert_clear_error(
        cli(*index_args(corpus, tmp_path / "store", tiny_st_dir)),
        f"{corpus}:1: field 'id' has 10,000 characters; an id has at most 1,000",
    )


@CORRECT
def test_documents_route_serves_every_id_the_index_accepts(client: TestClient) -> None:
    """Index records whose ids use every allowed special character and the longest length, then open each one"""
    response = _index(client, *SPECIAL_IDS)
    assert response.status_code == 200, response.text[:500]
    wanted = [(record_id, asked) for record_id in SPECIAL_IDS for asked in (record_id, f"{record_id}#0")]
    for (record_id, asked), found in zip(wanted, _open(client, *(asked for _, asked in wanted)), strict=True):
        assert found.status_code == 200, (asked[:40], found.text[:300])  # by its id, and by its passage's id
        document = found.json()
        assert document["id"] == record_id and [p["id"] for p in document["passages"]] == [f"{record_id}#0"]


@CORRECT
@pytest.mark.integration  # a served HTTP server in a child process
def test_longest_ids_through_a_running_server(tmp_path: Path, pipelines_dir: Path) -> None:
    """Through haystack serve over a socket, index records with the longest ids and URL characters, then open each"""
    ids = ["😀" * MAX_RECORD_ID_CHARS, "x" * MAX_RECORD_ID_CHARS, "%41%2F%%", "a//b/./c/../d", string.punctuation]
    (tmp_path / "served").mkdir()
    options = ("--input-root", str(tmp_path / "served"))
    with served(pipelines_dir, tmp_path, *options, env=server_environment(), timeout=120) as url:
        records = [{"id": i, "title": "Zebra", "text": TEXT} for i in ids]
        assert httpx.post(f"{url}/index/run", json={"records": records}, timeout=120).status_code == 200
        for record_id in ids:
            for asked in (record_id, f"{record_id}#0"):
                found = httpx.get(f"{url}/documents/{quote(asked, safe='')}", params={"pipeline": "bm25"}, timeout=60)
                assert found.status_code == 200, (asked[:40], found.text[:300])
                assert found.json()["id"] == record_id
