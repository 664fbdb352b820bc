"""``haystack serve`` against a hostile web page, a careless client and a public network.

The app of ``build_app`` is driven in process (``starlette.testclient``), as a browser or a script
would call it: a page at https://evil.example, bodies too large or not JSON, values Python's JSON
parser accepts and nothing else can use (NaN, lone surrogates), a missing API key."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from dpr_components.serving.app import build_app
from dpr_components.serving.guards import RequestGuard
from dpr_components.serving.security import ServerPolicy
from dpr_components.store_access.serialization import replace_store_paths
from tests.reliability.harness import PIPELINES, assert_clear_error, cli

CLEAR = pytest.mark.reliability(category="server", expect="clear error")
CORRECT = pytest.mark.reliability(category="server", expect="correct result")

URL = "http://127.0.0.1:1416"
EVIL = "https://evil.example"
KEY = "k3y-for-tests-only-0123456789abcdef"
SECRET_QUERY = "who wrote the confidential merger memo"
SERVED = ("bm25", "index", "train_dpr")


@pytest.fixture()
def pipelines_dir(tmp_path: Path, indexed_store: Path, tiny_st_dir: Path, tiny_bert_dir: Path) -> Path:
    """bm25, index (the tiny encoder) and train_dpr (the tiny BERT) on a small store."""
    folder = tmp_path / "pipelines"
    folder.mkdir()
    for name in SERVED:
        spec = yaml.safe_load((PIPELINES / f"{name}.yml").read_text(encoding="utf-8"))
        replace_store_paths(spec, str(indexed_store))
        params = {name: data.get("init_parameters", {}) for name, data in spec["components"].items()}
        if "embedder" in params:
            params["embedder"].update(model=str(tiny_st_dir), cache_dir=None, progress_bar=False)
        if "trainer" in params:
            params["trainer"].update(model=str(tiny_bert_dir), output_dir=str(tmp_path / "run"), progress_bar=False)
        (folder / f"{name}.yml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return folder


def _client(pipelines_dir: Path, **policy: Any) -> TestClient:
    app, _ = build_app(pipelines_dir, policy=ServerPolicy(**policy))  # no input root: DPR_INPUT_ROOT stays as it is
    return TestClient(app, base_url=URL, raise_server_exceptions=False)


@pytest.fixture()
def client(pipelines_dir: Path) -> TestClient:
    """The server as ``haystack serve`` starts it without options."""
    return _client(pipelines_dir)


def assert_http_error(response: Any, status: int, *fragments: str) -> None:
    """``status``, and a ``detail`` of one line that contains every fragment (no traceback)."""
    assert response.status_code == status, (response.status_code, response.text)
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and "Traceback" not in detail, detail
    for fragment in fragments:
        assert fragment in detail, (fragment, detail)


def _document_count(client: TestClient) -> int:
    found = client.post("/bm25/run", json={"query": "zebra stripes savanna"})
    return sum(d["id"].startswith("zebra") for d in found.json()["result"]["documents"])


ZEBRA = [{"id": "zebra", "title": "Zebra", "text": "Zebras are African equines with black and white stripes."}]


# ---- a web page at another origin ----------------------------------------------------------------


@CLEAR
def test_preflight_from_another_origin(client: TestClient) -> None:
    """A web page at https://evil.example asks the server (CORS preflight) whether it may post JSON"""
    response = client.options(
        "/index/run",
        headers={
            "Origin": EVIL,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert "access-control-allow-origin" not in response.headers
    assert_http_error(response, 403, EVIL, "--cors-origin")


@CLEAR
def test_cross_origin_post(client: TestClient) -> None:
    """A web page at https://evil.example posts documents to /index/run (no preflight); nothing is written"""
    response = client.post("/index/run", json={"records": ZEBRA}, headers={"Origin": EVIL})
    assert_http_error(response, 403, "requests from web pages at https://evil.example are not allowed")
    assert "access-control-allow-origin" not in response.headers
    assert _document_count(client) == 0


@CLEAR
def test_cross_site_fetch_without_origin(client: TestClient) -> None:
    """A browser request marked Sec-Fetch-Site: cross-site that carries no Origin header"""
    response = client.post("/bm25/run", json={"query": "hamlet"}, headers={"Sec-Fetch-Site": "cross-site"})
    assert_http_error(response, 403, "other web sites", "--cors-origin")


@CLEAR
@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None]
)
def test_post_that_is_not_json(client: TestClient, content_type: str | None) -> None:
    """A form or text/plain post to /index/run, which a page may send without a preflight; nothing is written"""
    headers = {"Content-Type": content_type} if content_type else {}
    response = client.post("/index/run", content=json.dumps({"records": ZEBRA}), headers=headers)
    assert_http_error(response, 415, "Content-Type: application/json")
    assert _document_count(client) == 0


@CLEAR
def test_dns_rebinding_host(client: TestClient) -> None:
    """A page at evil.example whose DNS name now resolves to 127.0.0.1 posts to its own host"""
    response = client.post("/bm25/run", json={"query": "hamlet"}, headers={"Host": "evil.example:1416"})
    assert_http_error(response, 400, "'evil.example:1416' does not name this server", "--allowed-host evil.example")
    for host in ("localhost:1416", "127.0.0.1", "[::1]:1416"):
        assert client.post("/bm25/run", json={"query": "hamlet"}, headers={"Host": host}).status_code == 200, host


@CORRECT
def test_allowed_origin(pipelines_dir: Path) -> None:
    """A web app at https://app.example, listed with --cors-origin, searches the server from the browser"""
    client = _client(pipelines_dir, cors_origins=("https://app.example",))
    preflight = client.options(
        "/bm25/run",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,authorization",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert set(preflight.headers["access-control-allow-methods"].replace(" ", "").split(",")) == {"GET", "POST"}
    assert "access-control-allow-credentials" not in preflight.headers
    bad = client.options(
        "/bm25/run", headers={"Origin": "https://app.example", "Access-Control-Request-Method": "DELETE"}
    )
    assert bad.status_code == 400 and "DELETE" not in bad.headers.get("access-control-allow-methods", "")
    response = client.post("/bm25/run", json={"query": "who wrote hamlet"}, headers={"Origin": "https://app.example"})
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == "https://app.example"
    assert response.json()["result"]["documents"][0]["id"].startswith("hamlet")
    refused = client.post("/bm25/run", json={"query": "x"}, headers={"Origin": EVIL})
    assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers


# ---- request bodies --------------------------------------------------------------------------------


@CLEAR
@pytest.mark.timeout(60)
def test_ten_megabyte_body(client: TestClient) -> None:
    """A 10 MB record posted to /index/run"""
    body = json.dumps({"records": [{"id": "big", "text": "word " * 2_000_000}]})
    start = time.monotonic()
    response = client.post("/index/run", content=body, headers={"Content-Type": "application/json"})
    assert_http_error(response, 413, "larger than 1,048,576 bytes", "--max-body-bytes")
    assert time.monotonic() - start < 10


@CLEAR
def test_chunked_body_is_not_read_past_the_limit() -> None:
    """A chunked upload without Content-Length that goes on for 10 MB"""
    calls = {"app": 0, "chunks": 0}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        calls["app"] += 1

    async def receive() -> dict[str, Any]:
        calls["chunks"] += 1
        return {"type": "http.request", "body": b"x" * 65536, "more_body": calls["chunks"] < 160}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/index/run",
        "headers": [(b"content-type", b"application/json")],
    }
    asyncio.run(RequestGuard(app, ServerPolicy())(scope, receive, send))
    assert sent[0]["status"] == 413 and calls["app"] == 0
    assert calls["chunks"] == 17  # 16 chunks of 64 KiB fit in 1 MiB: the 17th goes over, and nothing more is read
    assert "--max-body-bytes" in json.loads(sent[1]["body"])["detail"]


@CLEAR
@pytest.mark.parametrize(
    "body, fragment",
    [
        ('{"query": NaN}', "request body: NaN is not valid JSON (numbers must be finite)"),
        ('{"query": "hamlet", "top_k": Infinity}', "Infinity is not valid JSON"),
        ('{"query": "hamlet", "top_k": -Infinity}', "-Infinity is not valid JSON"),
        ('{"query": "hamlet", "top_k": 1e999}', "the number 1e999 is too large"),
        ('{"query": "\\ud800"}', "query is not valid Unicode: a lone surrogate U+D800"),
        ('{"query": ["a", "b\\udfff"]}', "query[1] is not valid Unicode"),
        ('{"records": [{"id": "a", "text": "x\\ud83d"}]}', "records[0].text is not valid Unicode"),
        ('{"query": "x", "\\udc80": 1}', "request body: \\udc80 is not valid Unicode"),
        ('{"query": ', "request body is not valid JSON: Expecting value at line 1 column 11"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (b'{"query": "\xff\xfe"}', "not UTF-8"),
    ],
    ids=[
        "nan",
        "infinity",
        "minus-infinity",
        "overflow",
        "surrogate",
        "surrogate-in-list",
        "surrogate-in-record",
        "surrogate-key",
        "truncated",
        "deep",
        "not-utf8",
    ],
)
def test_json_python_accepts(client: TestClient, body: str | bytes, fragment: str) -> None:
    """A request body with NaN, Infinity, a lone surrogate (\\ud800) or broken JSON"""
    path = "/index/run" if "records" in str(body) else "/bm25/run"
    response = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert_http_error(response, 400, fragment)


@CLEAR
def test_wrong_input_type(client: TestClient) -> None:
    """A search whose query is a number, then one without a query"""
    assert_http_error(client.post("/bm25/run", json={"query": 5}), 422, "body.query: the query must be text, got int 5")
    assert_http_error(client.post("/bm25/run", json={}), 422, "body.query: Field required")
    assert_http_error(client.post("/bm25/run", json={"query": "  "}), 400, "the query is empty")


@CLEAR
@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"query": "x", "top_k": True}, "body.top_k: top_k must be a positive integer, got True"),
        ({"query": "x", "top_k": "3"}, "body.top_k: top_k must be a positive integer, got '3'"),
        ({"query": "x", "top_k": 2.0}, "body.top_k: top_k must be a positive integer, got 2.0"),
        ({"query": "x", "include_embeddings": "yes"}, "body.include_embeddings: Input should be a valid boolean"),
        ({"query": "x", "include_embeddings": 1}, "body.include_embeddings: Input should be a valid boolean"),
        ({"query": "x", "topk": 1}, "body: the pipeline has no input named 'topk'; its inputs are ['filters', "),
    ],
    ids=["top-k-true", "top-k-text", "top-k-float", "embeddings-yes", "embeddings-1", "unknown-field"],
)
def test_lax_types_in_a_search(client: TestClient, body: dict[str, Any], fragment: str) -> None:
    """A search with "top_k": true, "3" or 2.0, "include_embeddings": "yes" or 1, or a misspelt field topk"""
    assert_http_error(client.post("/bm25/run", json=body), 422, fragment)


@pytest.mark.reliability(category="server", expect="nothing lost")
@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"records": ZEBRA, "overwrite": True}, "body: the pipeline has no input named 'overwrite'; its inputs are"),
        ({"records": ZEBRA, "path": 5}, "body.path: "),
        ({"record": ZEBRA}, "body: the pipeline has no input named 'record'; its inputs are ['path', 'records']"),
    ],
    ids=["unknown-field", "number-as-path", "misspelt-records"],
)
def test_lax_types_in_an_index_request(client: TestClient, body: dict[str, Any], fragment: str) -> None:
    """An index request with an unknown field, a number as the path, or record for records"""
    before = _document_count(client)
    assert_http_error(client.post("/index/run", json=body), 422, fragment)
    assert _document_count(client) == before == 0


@CORRECT
def test_strict_types_take_what_clients_send(client: TestClient) -> None:
    """A search with an integer top_k and a boolean include_embeddings, as the ask page sends them"""
    response = client.post("/bm25/run", json={"query": "who wrote hamlet", "top_k": 2, "include_embeddings": False})
    assert response.status_code == 200, response.text
    assert 1 <= len(response.json()["result"]["documents"]) <= 2


# ---- routes ---------------------------------------------------------------------------------------


def _routes(client: TestClient) -> set[tuple[str, str]]:
    return {(method, route.path) for route in client.app.router.routes for method in route.methods - {"HEAD"}}


@CORRECT
def test_only_the_pipelines_are_mounted(client: TestClient) -> None:
    """A client looks for hayhooks' OpenAI-compatible, file, deploy and docs routes"""
    assert _routes(client) == {
        ("GET", "/status"),
        ("GET", "/openapi.json"),
        ("GET", "/"),
        ("GET", "/page/app.js"),
        ("GET", "/page/core.js"),
        ("GET", "/page/render.js"),
        ("GET", "/page/store.js"),
        ("GET", "/page/app.css"),
        ("GET", "/favicon.svg"),
        ("GET", "/favicon.ico"),
        ("GET", "/stores"),
        ("GET", "/documents/{document_id:any_text}"),
        ("POST", "/bm25/run"),
        ("POST", "/index/run"),
        ("POST", "/train_dpr/run"),
    }
    for method, path in [
        ("POST", "/v1/chat/completions"),
        ("POST", "/chat/completions"),
        ("POST", "/v1/files"),
        ("GET", "/v1/models"),
        ("GET", "/models"),
        ("POST", "/deploy-yaml"),
        ("GET", "/draw/bm25"),
        ("GET", "/docs"),
        ("GET", "/redoc"),
        ("GET", "/traces"),
        ("GET", "/status/bm25"),
        ("GET", "/mcp"),
    ]:
        response = client.request(method, path, json={})
        assert response.status_code in (404, 405), (method, path, response.status_code)
    status = client.get("/status").json()
    stores = {"bm25": {"ready": True}, "index": {"ready": True}}
    training_off = "training over HTTP is off: start haystack serve with --enable-training to serve train_dpr"
    assert status == {
        "status": "Up!",
        "pipelines": ["bm25", "index"],
        "stores": stores,
        "unavailable": {"train_dpr": training_off},
        "uploads": [],
    }
    paths = set(client.get("/openapi.json").json()["paths"])
    assert paths == {"/status", "/stores", "/documents/{document_id}", "/bm25/run", "/index/run"}


@CLEAR
def test_training_is_off_by_default(client: TestClient) -> None:
    """A client starts DPR training through /train_dpr/run on a server started without --enable-training"""
    response = client.post("/train_dpr/run", json={"data": "train.jsonl"})
    assert_http_error(response, 403, "training over HTTP is off", "--enable-training")


# ---- API key --------------------------------------------------------------------------------------


@CLEAR
def test_api_key(pipelines_dir: Path) -> None:
    """A server started with --api-key-env: requests without the key, with a wrong one, then with it"""
    client = _client(pipelines_dir, api_key=KEY)
    for headers in (
        {},
        {"Authorization": "Bearer wrong-key"},
        {"Authorization": KEY},
        {"Authorization": f"Basic {KEY}"},
    ):
        response = client.post("/index/run", json={"records": ZEBRA}, headers=headers)
        assert_http_error(response, 401, "Authorization: Bearer KEY")
        assert response.headers["www-authenticate"] == "Bearer"
        assert KEY not in response.text
    assert client.get("/openapi.json").status_code == 401
    assert client.get("/status").status_code == 200  # the health check stays open
    auth = {"Authorization": f"Bearer {KEY}"}
    assert client.post("/index/run", json={"records": ZEBRA}, headers=auth).status_code == 200
    found = client.post("/bm25/run", json={"query": "zebra stripes"}, headers=auth)
    assert found.status_code == 200 and found.json()["result"]["documents"][0]["id"] == "zebra#0"


@CLEAR
def test_public_address_without_key() -> None:
    """haystack serve --host 0.0.0.0 without an API key"""
    assert_clear_error(
        cli("serve", "--host", "0.0.0.0"),
        "--host 0.0.0.0 is not a loopback address",
        "--api-key-env NAME",
        "--insecure-no-auth",
    )


@CLEAR
@pytest.mark.parametrize(
    "args, env, fragments",
    [
        (["--api-key-env", "DPR_TEST_UNSET_KEY"], {}, ["environment variable DPR_TEST_UNSET_KEY is not set"]),
        (
            ["--api-key-env", "DPR_TEST_KEY"],
            {"DPR_TEST_KEY": "short"},
            ["5 characters, the minimum is 16", "secrets.token_urlsafe"],
        ),
        (
            ["--api-key-env", "DPR_TEST_KEY"],
            {"DPR_TEST_KEY": "with spaces in the middle"},
            ["printable ASCII without spaces"],
        ),
        (["--cors-origin", "*"], {}, ["--cors-origin '*'", "scheme://host[:port]"]),
        (["--cors-origin", "https://app.example/"], {}, ["--cors-origin 'https://app.example/'", "without path"]),
        (
            ["--allowed-host", "http://box.lan:8000"],
            {},
            ["--allowed-host 'http://box.lan:8000'", "without scheme or port"],
        ),
        (["--max-body-bytes", "0"], {}, ["--max-body-bytes 0: must be a whole number from 1"]),
    ],
    ids=["unset-key", "short-key", "key-with-spaces", "star-origin", "origin-with-path", "host-with-port", "zero-body"],
)
def test_bad_serve_options(
    args: list[str], env: dict[str, str], fragments: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """haystack serve with an unset or weak API key, a wildcard or malformed origin, a host with a port"""
    monkeypatch.delenv("DPR_TEST_UNSET_KEY", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = cli("serve", "--pipelines-dir", "/nonexistent", *args)
    assert_clear_error(result, *fragments)
    for value in env.values():
        assert value not in result.err


# ---- logs -----------------------------------------------------------------------------------------


def _logged_while_searching(client: TestClient, caplog: pytest.LogCaptureFixture) -> str:
    """Everything the server logs (hayhooks' loguru log as it formats it on stderr, and standard logging)
    while it answers a search and a search that fails."""
    from hayhooks.server.logger import formatter, log

    lines: list[str] = []
    caplog.clear()
    handler = log.add(lambda message: lines.append(str(message)), level="DEBUG", format=formatter, diagnose=False)
    try:
        assert client.post("/bm25/run", json={"query": SECRET_QUERY}).status_code == 200
        too_long = client.post("/bm25/run", json={"query": f"{SECRET_QUERY} {'memo ' * 500}"})
        assert too_long.status_code == 400 and "the limit is 2,000" in too_long.json()["detail"]
    finally:
        log.remove(handler)
    assert any("Running pipeline 'bm25'" in line for line in lines)  # the capture works
    return "".join(lines) + caplog.text


@CORRECT
def test_queries_are_not_logged(pipelines_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A confidential question searched, then one that fails, on a server started without --log-queries"""
    caplog.set_level(logging.INFO)
    assert SECRET_QUERY not in _logged_while_searching(_client(pipelines_dir), caplog)
    # The same capture sees them when the server is told to log them.
    assert SECRET_QUERY in _logged_while_searching(_client(pipelines_dir, log_queries=True), caplog)
