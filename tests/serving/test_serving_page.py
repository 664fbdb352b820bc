"""The ask page at ``GET /``: its headers and the store routes it calls (``/status``, ``/stores``,
``/documents/{id}``) in process, then a real browser (headless Chromium through selenium) walking the page
through every state (tests/helpers/page_driver.py) on a real server with the tiny models, from a store
not indexed yet to a file uploaded, answers, "no confident answer" and a whole document.

Without Chromium, chromedriver or selenium the browser test is skipped, unless ``CI=true``, where their
absence fails it. ``DPR_WRITE_SCREENSHOT=1`` saves one PNG per state to docs/screenshots/
(page-<state>.png); ``DPR_SCREENSHOT_MODELS=real`` takes them with the packaged pipelines and models
instead of the tiny ones (slower)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from starlette.testclient import TestClient

from dpr_components.serving.app import build_app
from dpr_components.serving.security import ServerPolicy
from dpr_components.serving.store_folders import StoreFolders
from tests.helpers.browser import headless_chromium
from tests.helpers.page_driver import PageWalk, ask_question, assert_no_match, assert_no_ranked_no_answer, walk_ask_page
from tests.helpers.paths import PIPELINES, REPO
from tests.helpers.serving import served, server_environment, write_pipelines

pytestmark = pytest.mark.usefixtures("one_thread")

SCREENSHOTS = REPO / "docs" / "screenshots"
PAGE_FILES = (
    ("/", "text/html"),
    ("/page/core.js", "text/javascript"),
    ("/page/render.js", "text/javascript"),
    ("/page/store.js", "text/javascript"),
    ("/page/app.js", "text/javascript"),
    ("/page/app.css", "text/css"),
    ("/favicon.svg", "image/svg+xml"),
)
UNANSWERABLE = "what is the capital of australia"
KEY = "page-test-key-0123456789abcdef"
QUESTION = "who wrote hamlet"


@pytest.fixture()
def pipelines(
    tmp_path: Path,
    indexed_store: Path,
    tiny_st_dir: Path,
    tiny_reader_dir: Path,
    tiny_bert_dir: Path,
) -> Path:
    """bm25, dense, search (hybrid) and qa on the small store with the tiny models."""
    folder = tmp_path / "pipelines"
    write_pipelines(folder, indexed_store, tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    for path in folder.iterdir():
        if path.stem not in ("bm25", "dense", "search", "qa"):
            path.unlink()
    return folder


def _page_pipelines(folder: Path, no_answer: dict[str, Any] | None) -> Path:
    """Keep the pipelines the page uses (and index); ``no_answer`` set on qa's reader."""
    for path in folder.iterdir():
        if path.stem not in ("bm25", "dense", "search", "qa", "index"):
            path.unlink()
    if no_answer:
        qa = yaml.safe_load((folder / "qa.yml").read_text(encoding="utf-8"))
        qa["components"]["reader"]["init_parameters"].update(no_answer)
        (folder / "qa.yml").write_text(yaml.safe_dump(qa, sort_keys=False), encoding="utf-8")
    return folder


# ---- in process -----------------------------------------------------------------------------------


def test_page_is_served_with_a_strict_policy(pipelines: Path) -> None:
    app, _ = build_app(pipelines, policy=ServerPolicy(api_key=KEY))
    client = TestClient(app, base_url="http://127.0.0.1:1416")
    for path, kind in PAGE_FILES:
        response = client.get(path)  # no API key: the page holds no data
        assert response.status_code == 200 and response.headers["content-type"].startswith(kind), path
        assert response.headers["content-security-policy"].startswith("default-src 'self'")
        assert response.headers["x-content-type-options"] == "nosniff"
        assert "http://" not in response.text.replace("http://www.w3.org/2000/svg", ""), path  # nothing from elsewhere
        assert "https://" not in response.text, path
    icon = client.get("/favicon.ico", follow_redirects=False)
    assert icon.status_code == 308 and icon.headers["location"] == "/favicon.svg"
    assert "innerHTML" not in "".join(client.get(path).text for path, _ in PAGE_FILES[1:5])  # server text as text only
    assert client.post("/bm25/run", json={"query": QUESTION}).status_code == 401  # the API still needs the key
    # The page's own calls carry its origin: accepted, while another origin, even on localhost, is not.
    auth = {"Authorization": f"Bearer {KEY}"}
    own = client.post("/bm25/run", json={"query": QUESTION}, headers={**auth, "Origin": "http://127.0.0.1:1416"})
    assert own.status_code == 200, own.text
    other = client.post("/bm25/run", json={"query": QUESTION}, headers={**auth, "Origin": "http://127.0.0.1:3000"})
    assert other.status_code == 403
    rebound = client.post(
        "/bm25/run",
        json={"query": QUESTION},
        headers={**auth, "Host": "evil.example:1416", "Origin": "http://evil.example:1416"},
    )
    assert rebound.status_code == 400


# ---- the browser ---------------------------------------------------------------------------------


@pytest.fixture()
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Headless Chromium through chromedriver, with an empty profile and no way out but loopback."""
    monkeypatch.setenv("SE_OFFLINE", "true")  # selenium never downloads a browser or driver
    with headless_chromium(tmp_path / "chromium-profile") as driver:
        yield driver


def test_store_routes(pipelines: Path, indexed_store: Path) -> None:
    app, _ = build_app(pipelines, policy=ServerPolicy(api_key=KEY))
    client = TestClient(app, base_url="http://127.0.0.1:1416")
    auth = {"Authorization": f"Bearer {KEY}"}
    status = client.get("/status").json()  # public: ready or not, no counts
    assert status["stores"] == {name: {"ready": True} for name in ("bm25", "dense", "qa", "search")}
    assert client.get("/stores").status_code == 401 and client.get("/documents/hamlet").status_code == 401
    stores = client.get("/stores", headers=auth).json()["stores"]
    counted = client.post("/bm25/run", json={"query": "hamlet", "top_k": 1}, headers=auth).json()
    assert stores["bm25"]["ready"] and stores["bm25"]["passages"] >= 1, stores
    first = counted["result"]["documents"][0]
    source = first["meta"]["document_id"]
    document = client.get(f"/documents/{source}", params={"pipeline": "search"}, headers=auth).json()
    assert document["id"] == source and document["pipeline"] == "search" and document["title"] == first["title"]
    assert [p["meta"]["passage_index"] for p in document["passages"]] == list(range(len(document["passages"])))
    by_passage = client.get(f"/documents/{first['id'].replace('#', '%23')}", headers=auth).json()
    assert by_passage["id"] == source  # a passage id opens its whole document
    missing = client.get("/documents/no-such-document", headers=auth)
    assert (
        missing.status_code == 404
        and missing.json()["detail"] == "no document 'no-such-document' in the store of pipeline bm25"
    )
    unknown = client.get("/documents/hamlet", params={"pipeline": "nope"}, headers=auth)
    assert unknown.status_code == 404 and "\n" not in unknown.json()["detail"]
    assert {"/stores", "/documents/{document_id}"} <= set(client.get("/openapi.json", headers=auth).json()["paths"])


def test_store_routes_before_indexing(
    tmp_path: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path
) -> None:
    folder = tmp_path / "pipelines"
    write_pipelines(folder, tmp_path / "their_store", tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    app, _ = build_app(_page_pipelines(folder, None), stores=StoreFolders(default=str(tmp_path / "mine")))
    client = TestClient(app, base_url="http://127.0.0.1:1416")
    assert not any(state["ready"] for state in client.get("/status").json()["stores"].values())
    assert client.get("/stores").json()["stores"]["qa"] == {"ready": False, "passages": None}
    waiting = client.get("/documents/hamlet", params={"pipeline": "bm25"})
    assert waiting.status_code == 503 and "index first" in waiting.json()["detail"]
    records = [{"id": "hamlet", "title": "Hamlet", "text": "Hamlet is a tragedy. " * 60}]
    assert client.post("/index/run", json={"records": records}).status_code == 200
    stores = client.get("/stores").json()["stores"]
    assert stores["bm25"] == {"ready": True, "passages": 3}, stores  # no search ran: nothing was built
    assert len(client.get("/documents/hamlet").json()["passages"]) == 3


# ---- in a browser ---------------------------------------------------------------------------------


@pytest.fixture()
def empty_pipelines(
    tmp_path: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path
) -> tuple[Path, dict[str, Any]]:
    """The page's pipelines and index, for a store not indexed yet; the reader always says "no answer"
    first (P(no answer) always reaches a threshold of 0), with the tiny models or, with
    ``DPR_SCREENSHOT_MODELS=real``, the packaged ones (the threshold they carry)."""
    folder = tmp_path / "pipelines"
    if os.environ.get("DPR_SCREENSHOT_MODELS") == "real":
        shutil.copytree(PIPELINES, folder)
        return _page_pipelines(folder, {"no_answer": True}), {"expect_no_answer": False, "seconds": 300}
    write_pipelines(folder, tmp_path / "their_store", tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    return _page_pipelines(folder, {"no_answer": True, "no_answer_threshold": 0.0}), {}


@pytest.fixture()
def empty_server(empty_pipelines: tuple[Path, dict[str, Any]], tmp_path: Path) -> Iterator[str]:
    """``haystack serve --store DIR`` (not indexed yet) with an API key on a free port; its URL."""
    options = [
        "--input-root",
        str(tmp_path / "served"),
        "--api-key-env",
        "DPR_PAGE_KEY",
        "--store",
        str(tmp_path / "my"),
    ]
    env = server_environment(DPR_PAGE_KEY=KEY)
    with served(empty_pipelines[0], tmp_path, *options, env=env, timeout=180) as url:
        yield url


@pytest.mark.integration
def test_walking_the_page(
    empty_server: str, empty_pipelines: tuple[Path, dict[str, Any]], browser: Any, tmp_path: Path
) -> None:
    lines = (REPO / "examples" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    real = os.environ.get("DPR_SCREENSHOT_MODELS") == "real"
    corpus = tmp_path / "upload" / "my_corpus.jsonl"
    corpus.parent.mkdir()
    corpus.write_text("\n".join(lines if real else lines[:6]) + "\n", encoding="utf-8")
    screenshots = SCREENSHOTS if os.environ.get("DPR_WRITE_SCREENSHOT") == "1" else None
    states = walk_ask_page(
        browser,
        empty_server,
        api_key=KEY,
        corpus=corpus,
        answerable=QUESTION,
        unanswerable=UNANSWERABLE,
        screenshots=screenshots,
        **empty_pipelines[1],
    )
    expected = ["empty", "upload", "answer", "expanded", "document", "filtered", "example", "no-answer", "error"]
    assert states == (expected if not real else [s for s in expected if s in states]), states


@pytest.mark.integration
def test_page_shows_why_a_pipeline_cannot_be_served(
    pipelines: Path, indexed_store: Path, browser: Any, tmp_path: Path
) -> None:
    """qa left out at start (its re-ranker's folder missing): its panel gives the reason from /status while the
    lists answer; the store folder then deleted: the page says so instead of offering to index."""
    qa = yaml.safe_load((pipelines / "qa.yml").read_text(encoding="utf-8"))
    qa["components"]["reranker"]["init_parameters"]["model"] = str(tmp_path / "no-ranker")
    (pipelines / "qa.yml").write_text(yaml.safe_dump(qa, sort_keys=False), encoding="utf-8")
    options = ["--input-root", str(tmp_path / "served"), "--store", str(indexed_store)]
    with served(pipelines, tmp_path, *options, env=server_environment(), timeout=180) as url:
        walk = PageWalk(browser, url, api_key=None)
        browser.get(url + "/")
        walk.wait(lambda d: "cannot be served" in walk.text("#error-qa"))
        assert "no-ranker" in walk.text("#error-qa"), walk.text("#error-qa")
        walk.find("#question").send_keys(QUESTION)
        walk.find("#ask").click()
        walk.wait(lambda d: walk.text("#status").startswith("asked"))
        walk.wait(lambda d: walk.all("#list-bm25 li.result"))
        assert "no-ranker" in walk.text("#error-qa")  # not asked: still the reason, not a bare 404
        shutil.rmtree(indexed_store)
        walk.find("#ask").click()
        walk.wait(lambda d: "was removed or renamed" in walk.text("#error"))
        assert str(indexed_store) in walk.text("#error") and not walk.visible("#empty")
        assert not walk.find("#ask").is_enabled()


OWN_RECORDS = [
    {"id": "zebra", "title": "Zebra", "text": "Zebras are African equines with black and white stripes. " * 3},
    {"id": "lighthouse", "title": "Lighthouse", "text": "A lighthouse is a tower with a lamp that guides ships. " * 3},
    {
        "id": "sourdough",
        "title": "Sourdough",
        "text": "Sourdough bread rises with wild yeast and lactic bacteria. " * 3,
    },
]


@pytest.mark.integration
def test_page_over_a_store_of_ones_own(
    tmp_path: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path, browser: Any
) -> None:
    """A store of the user's own (no document of the example corpus): no example questions about Hamlet or
    Everest, the reader's "no answer" not listed among its ranked answers, and a title filter that matches
    nothing said as such."""
    folder = tmp_path / "pipelines"
    write_pipelines(folder, tmp_path / "their_store", tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    # "no answer" first only at P = 1: otherwise it is ranked among the spans by its probability
    _page_pipelines(folder, {"no_answer": True, "no_answer_threshold": 1.0})
    options = ["--input-root", str(tmp_path / "served"), "--store", str(tmp_path / "own")]
    with served(folder, tmp_path, *options, env=server_environment(), timeout=180) as url:
        assert httpx.post(f"{url}/index/run", json={"records": OWN_RECORDS}, timeout=120).status_code == 200
        question = "what guides ships at night"
        answers = httpx.post(f"{url}/qa/run", json={"query": question}, timeout=120).json()["result"]["answers"]
        ranked = [a["data"] is None for a in answers]
        assert True in ranked[1:] and not ranked[0], ranked  # the server ranks "no answer" among the spans
        walk = PageWalk(browser, url, api_key=None)
        browser.get(url + "/")
        walk.wait(lambda d: "passages in the store" in walk.text("#store-count"))
        assert not walk.visible("#examples") and not walk.all("#examples button.chip")
        ask_question(walk, question)
        assert walk.all("#answers li.answer mark"), "the spans are listed"
        assert_no_ranked_no_answer(walk)
        assert_no_match(walk, question, "No such title")


@pytest.mark.integration
def test_the_page_uploads_a_pdf_and_finds_it(
    tmp_path: Path, tiny_st_dir: Path, tiny_reader_dir: Path, tiny_bert_dir: Path, browser: Any
) -> None:
    """A server over an empty store of one's own, with the folder pipeline: the page offers documents, sends a
    PDF as it is, says what was written, and the next question finds the PDF's passage without a restart."""
    from tests.helpers.folder_documents import write_pdf

    folder = tmp_path / "pipelines"
    write_pipelines(folder, tmp_path / "their_store", tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    for path in folder.iterdir():
        if path.stem not in ("bm25", "dense", "search", "qa", "index", "index_files"):
            path.unlink()
    (tmp_path / "upload").mkdir()
    pdf = write_pdf(
        tmp_path / "upload" / "quokka.pdf", ["Quokkas are small marsupials on Rottnest Island near Perth."] * 3
    )
    options = ["--input-root", str(tmp_path / "served"), "--store", str(tmp_path / "own")]
    with served(folder, tmp_path, *options, env=server_environment(), timeout=180) as url:
        assert httpx.get(f"{url}/status").json()["uploads"] == ["index", "index_files"]
        walk = PageWalk(browser, url, api_key=None)
        browser.get(url + "/")
        walk.wait(lambda d: walk.visible("#upload") and walk.visible("#upload-kinds"))
        assert ".pdf" in walk.find("#upload-file").get_attribute("accept")
        walk.find("#upload-file").send_keys(str(pdf.resolve()))
        walk.find("#upload-button").click()
        walk.wait(lambda d: walk.text("#upload-status").startswith("Indexed") or walk.text("#upload-error"))
        assert not walk.text("#upload-error"), walk.text("#upload-error")
        assert walk.text("#upload-status").startswith("Indexed quokka.pdf: "), walk.text("#upload-status")
        walk.wait(lambda d: "in the store" in walk.text("#store-count"))
        ask_question(walk, "where do quokkas live")
        walk.wait(lambda d: walk.all("#list-bm25 li.result"))
        assert "Rottnest" in walk.text("#list-bm25"), walk.text("#list-bm25")
        walk.find("#upload-file").send_keys(str(pdf.resolve()))
        walk.find("#upload-button").click()
        walk.wait(lambda d: "unchanged" in walk.text("#upload-status") or walk.text("#upload-error"))
        assert walk.text("#upload-status") == "quokka.pdf is in the store already, unchanged."
