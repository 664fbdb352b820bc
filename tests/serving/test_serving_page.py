"""The ask page at ``GET /``: its headers in process, then a real browser (headless Chromium through
selenium) asking a question of a real server over the small store with the tiny models.

Without Chromium, chromedriver or selenium the browser test is skipped, unless ``CI=true``, where their
absence fails it. ``DPR_WRITE_SCREENSHOT=1`` saves the page to docs/screenshots/ask-page.png."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from dpr_components.serving.app import build_app
from dpr_components.serving.security import ServerPolicy
from tests.helpers.paths import REPO
from tests.helpers.serving import served, server_environment, write_pipelines

pytestmark = pytest.mark.usefixtures("one_thread")

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOT = REPO / "docs" / "screenshots" / "ask-page.png"
KEY = "page-test-key-0123456789abcdef"
QUESTION = "who wrote hamlet"
# No network for the browser: no background services, and any address but loopback goes to a closed port.
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--proxy-server=http://127.0.0.1:9",
    "--window-size=1400,1000",
)


@pytest.fixture()
def pipelines(
    tmp_path: Path,
    indexed_store: Path,
    tiny_st_dir: Path,
    tiny_reader_dir: Path,  # noqa: F811
    tiny_bert_dir: Path,
) -> Path:
    """bm25, dense, search (hybrid) and qa on the small store with the tiny models."""
    folder = tmp_path / "pipelines"
    write_pipelines(folder, indexed_store, tiny_st_dir, tiny_reader_dir, tiny_bert_dir, tmp_path / "run")
    for path in folder.iterdir():
        if path.stem not in ("bm25", "dense", "search", "qa"):
            path.unlink()
    return folder


# ---- in process -----------------------------------------------------------------------------------


def test_page_is_served_with_a_strict_policy(pipelines: Path) -> None:
    app, _ = build_app(pipelines, policy=ServerPolicy(api_key=KEY))
    client = TestClient(app, base_url="http://127.0.0.1:1416")
    for path, kind in (("/", "text/html"), ("/page/app.js", "text/javascript"), ("/page/app.css", "text/css")):
        response = client.get(path)  # no API key: the page holds no data
        assert response.status_code == 200 and response.headers["content-type"].startswith(kind), path
        assert response.headers["content-security-policy"].startswith("default-src 'self'")
        assert response.headers["x-content-type-options"] == "nosniff"
        assert "http://" not in response.text and "https://" not in response.text, path  # nothing from elsewhere
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


# ---- in a browser ---------------------------------------------------------------------------------


def _browser_or_skip() -> None:
    missing = [
        what
        for what, there in (
            (CHROMIUM, Path(CHROMIUM).exists()),
            (CHROMEDRIVER, Path(CHROMEDRIVER).exists()),
            ("selenium (pip install selenium)", importlib.util.find_spec("selenium") is not None),
        )
        if not there
    ]
    if not missing:
        return
    message = f"the browser test needs {', '.join(missing)} (apt-get install chromium chromium-driver)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture()
def server(pipelines: Path, tmp_path: Path) -> Iterator[str]:
    """``haystack serve`` with an API key on a free port; its URL."""
    options = ["--input-root", str(tmp_path / "served"), "--api-key-env", "DPR_PAGE_KEY"]
    with served(pipelines, tmp_path, *options, env=server_environment(DPR_PAGE_KEY=KEY), timeout=90) as url:
        yield url


@pytest.fixture()
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Headless Chromium through chromedriver, with an empty profile and no way out but loopback."""
    _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # selenium never downloads a browser or driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)


def _wait(driver: Any, condition: Any, seconds: float = 60) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, poll_frequency=0.2).until(condition)


def _texts(driver: Any, selector: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [node.text for node in driver.find_elements(By.CSS_SELECTOR, selector)]


@pytest.mark.integration
def test_asking_in_the_browser(server: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{server}/")
    question = browser.find_element(By.ID, "question")
    question.send_keys(QUESTION)
    browser.find_element(By.ID, "ask").click()
    # Without the key every call fails, and the page says why on one line.
    _wait(browser, lambda d: all(_texts(d, f"#error-{name}")[0] for name in ("bm25", "dense", "search", "qa")))
    assert "401: this server needs an API key" in _texts(browser, "#error-bm25")[0]
    _wait(browser, lambda d: d.find_element(By.ID, "ask").is_enabled())

    browser.find_element(By.CSS_SELECTOR, "#key-box summary").click()
    browser.find_element(By.ID, "api-key").send_keys(KEY)
    browser.find_element(By.ID, "ask").click()
    _wait(
        browser,
        lambda d: (
            all(_texts(d, f"#list-{name} li.result") for name in ("bm25", "dense", "search"))
            and _texts(d, "#answers li.answer mark")
            and d.find_element(By.ID, "ask").is_enabled()
        ),
    )

    for name in ("bm25", "dense", "search", "qa"):
        assert _texts(browser, f"#error-{name}") == [""], name
        assert _texts(browser, f"#time-{name}")[0].endswith(" ms"), name
    assert _texts(browser, "#list-bm25 li.result .title")[0] == "Hamlet"
    # The best answer, as the API gives it, marked inside its passage.
    auth = {"Authorization": f"Bearer {KEY}"}
    best = httpx.post(f"{server}/qa/run", json={"query": QUESTION, "top_k": 5}, headers=auth, timeout=60).json()
    answers = best["result"]["answers"]
    first = browser.find_element(By.CSS_SELECTOR, "#answers li.answer")
    if answers[0]["data"] is None:  # the reader's "no answer" won (the tiny random reader is rarely sure of anything)
        assert first.find_element(By.CSS_SELECTOR, ".answer-text").text.startswith("No confident answer")
        assert "no-answer" in first.get_attribute("class")
        first = browser.find_elements(By.CSS_SELECTOR, "#answers li.answer:not(.no-answer)")[0]
    answer = next(a for a in answers if a["data"] is not None)
    assert first.find_element(By.CSS_SELECTOR, ".answer-text").text == answer["data"].strip()
    assert first.find_element(By.CSS_SELECTOR, "mark").text == answer["data"].strip()
    passage = first.find_element(By.CSS_SELECTOR, ".passage").text
    start = answer["offsets_in_context"]["start"]
    assert answer["context"][max(0, start - 20) : start].strip() in passage
    if os.environ.get("DPR_WRITE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SCREENSHOT))
