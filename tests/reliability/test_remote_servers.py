"""A pipeline allowed onto the network whose remote server answers an HTTP error (a local server started by
the test answers 500 to everything: no external network), and the packaged pipelines loaded from Python
with a name that is no name."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.reliability.harness import PIPELINES, assert_clear_error, cli

REMOTE = pytest.mark.reliability(category="network components", expect="clear error")

FETCHER = """components:
  fetcher:
    type: haystack.components.fetchers.link_content.LinkContentFetcher
    init_parameters: {timeout: 3, retry_attempts: 0}
connections: []
"""

ELASTICSEARCH_BM25 = """components:
  bm25:
    type: haystack_integrations.components.retrievers.dpr.bm25_retriever.BM25Retriever
    init_parameters:
      top_k: 10
      document_store:
        type: haystack_integrations.document_stores.elasticsearch.document_store.ElasticsearchDocumentStore
        init_parameters: {hosts: "http://localhost:9200", index: dpr-passages}
connections: []
inputs:
  query: bm25.query
outputs:
  documents: bm25.documents
"""


class _Answers500(http.server.BaseHTTPRequestHandler):
    """Reads the request, answers 500 with an empty JSON object."""

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_PUT = do_HEAD = _answer

    def log_message(self, format: str, *args: Any) -> None:  # format: the base class's name
        pass


@pytest.fixture()
def failing_server() -> Iterator[str]:
    """An HTTP server on a free loopback port that answers 500 to every request; its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers500)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@REMOTE
def test_fetched_url_answers_500(tmp_path: Path, failing_server: str) -> None:
    """haystack run of a LinkContentFetcher pipeline with --allow-network, the URL's server answering 500"""
    pipeline = tmp_path / "fetch.yml"
    pipeline.write_text(FETCHER, encoding="utf-8")
    url = f"{failing_server}/page?token=secret"
    result = cli("run", pipeline, "--allow-network", "--input", f'urls=["{url}"]')
    assert_clear_error(result, "component 'fetcher' (LinkContentFetcher)", "HTTP 500 Internal Server Error")
    assert f"{failing_server}/page" in result.err and "secret" not in result.err  # the query may hold a key


@REMOTE
def test_elasticsearch_answers_500(failing_server: str) -> None:
    """haystack run search_elasticsearch.yml --allow-network against a server that answers 500"""
    hosts = [f"--set={name}.document_store.hosts={failing_server}" for name in ("bm25", "dense", "ranker")]
    result = cli("run", PIPELINES / "search_elasticsearch.yml", "-q", "who wrote hamlet", "--allow-network", *hosts)
    port = failing_server.rsplit(":", 1)[1]
    assert_clear_error(result, "component 'bm25' (BM25Retriever)", f"127.0.0.1:{port}", "HTTP 500")


@REMOTE
def test_served_elasticsearch_answers_500(tmp_path: Path, failing_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """POST /bm25/run on haystack serve with ELASTICSEARCH_URL pointing at a server that answers 500"""
    from dpr_components.serving.app import build_app

    folder = tmp_path / "pipelines"
    folder.mkdir()
    (folder / "bm25.yml").write_text(ELASTICSEARCH_BM25, encoding="utf-8")
    monkeypatch.setenv("ELASTICSEARCH_URL", failing_server)
    app, served = build_app(folder)
    assert served.deployed == ["bm25"], served.skipped
    client = TestClient(app, base_url="http://127.0.0.1:1416", raise_server_exceptions=False)
    response = client.post("/bm25/run", json={"query": "who wrote hamlet"})
    assert response.status_code == 502, response.text
    detail = response.json()["detail"]
    assert "\n" not in detail and "Traceback" not in detail, detail
    assert "component 'bm25'" in detail and "HTTP 500" in detail, detail


@pytest.mark.reliability(category="command line", expect="clear error")
@pytest.mark.parametrize("name", [None, 3, Path("qa.yml")], ids=["None", "number", "path"])
def test_packaged_load_pipeline_without_a_name(name: Any) -> None:
    """dpr_components.packaged.load_pipeline(None) (or a number, or a Path) from Python"""
    from dpr_components.packaged import load_pipeline

    with pytest.raises(TypeError) as raised:
        load_pipeline(name)
    message = str(raised.value)
    assert message.startswith(f"name must be the name of a packaged pipeline, got {name!r}"), message
    assert "the packaged pipelines are adapt, bm25, dense" in message and "\n" not in message, message


@pytest.mark.reliability(category="command line", expect="clear error")
def test_packaged_load_pipeline_with_a_store_that_is_no_folder() -> None:
    """dpr_components.packaged.load_pipeline("qa", store=3) from Python"""
    from dpr_components.packaged import load_pipeline

    with pytest.raises(TypeError, match=r"^store must be a folder's path \(str or Path\), got int$"):
        load_pipeline("qa", store=3)  # type: ignore[arg-type]
