"""Drive the ask page through its states in a browser: empty store, upload, answers, no answer, top-k
and title filter, a passage expanded, its whole document, an example question, a wrong API key.

Only selenium, a driver, the server's URL and key, a corpus file and two questions: no repository
fixture, so a test can walk a server started any way (a fresh venv from the wheels, say)::

    states = walk_ask_page(driver, "http://127.0.0.1:1416", api_key=KEY, corpus=Path("small.jsonl"),
                           answerable="who wrote hamlet", unanswerable="what is the capital of australia")

The server must serve bm25, dense, search, qa and index over a store nothing was indexed into yet.
With ``screenshots`` set, one PNG per state is written there (``page-<state>.png``, palette PNGs)."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LISTS = ("bm25", "dense", "search")
WRONG_KEY = "not-the-key-0123456789"


@dataclass
class PageWalk:
    """What a walk needs besides the driver, and what it saw."""

    driver: Any
    base_url: str
    api_key: str | None
    seconds: float = 120
    screenshots: Path | None = None
    states: list[str] = field(default_factory=list)

    def wait(self, condition: Callable[[Any], Any], seconds: float | None = None) -> Any:
        """``condition(driver)`` once it is truthy (a TimeoutException with the page's status otherwise)."""
        from selenium.webdriver.support.ui import WebDriverWait

        message = f"the page did not get there; status: {self.text('#status')!r}, error: {self.text('#error')!r}"
        return WebDriverWait(self.driver, seconds or self.seconds, poll_frequency=0.2).until(condition, message)

    def find(self, selector: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def all(self, selector: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.driver.find_elements(By.CSS_SELECTOR, selector))

    def text(self, selector: str) -> str:
        found = self.all(selector)
        return found[0].text if found else ""

    def visible(self, selector: str) -> bool:
        found = self.all(selector)
        return bool(found) and found[0].is_displayed()

    def reached(self, state: str) -> None:
        """Note ``state``; with ``screenshots``, save the window as ``page-<state>.png``."""
        self.states.append(state)
        if self.screenshots is None:
            return
        from PIL import Image

        self.screenshots.mkdir(parents=True, exist_ok=True)
        image = Image.open(io.BytesIO(self.driver.get_screenshot_as_png())).convert("RGB")
        image.quantize(colors=64).save(self.screenshots / f"page-{state}.png", optimize=True)


def _type(walk: PageWalk, selector: str, text: str) -> None:
    box = walk.find(selector)
    box.clear()
    if text:
        box.send_keys(text)


def _set_key(walk: PageWalk, key: str | None) -> None:
    if not walk.find("#key-box").get_attribute("open"):
        walk.find("#key-box summary").click()
    _type(walk, "#api-key", key or "")
    walk.driver.execute_script("document.getElementById('api-key').dispatchEvent(new Event('change'))")


def _settled(walk: PageWalk) -> bool:
    """Every panel has its time or error, and the Ask button is back."""
    done = all(walk.text(f"#time-{name}").endswith(" ms") for name in (*LISTS, "qa"))
    return done and walk.find("#ask").is_enabled()


def _ask(walk: PageWalk, question: str) -> None:
    _type(walk, "#question", question)
    walk.find("#ask").click()
    walk.wait(lambda d: walk.text("#status").startswith("asked") or walk.text("#error"))
    walk.wait(lambda d: _settled(walk))


def _empty_store(walk: PageWalk) -> None:
    walk.wait(lambda d: walk.visible("#empty"))
    assert not walk.visible("#examples"), "no example questions for a store without passages"
    assert "haystack run index --input path=" in walk.text("#index-command")
    assert not walk.find("#ask").is_enabled() and not walk.visible("#results")
    assert walk.visible("#upload"), "the index pipeline is served: the upload is offered"
    walk.reached("empty")


def _upload(walk: PageWalk, corpus: Path) -> None:
    walk.find("#upload-file").send_keys(str(corpus.resolve()))
    walk.find("#upload-button").click()
    walk.wait(lambda d: walk.text("#upload-status").startswith("Indexed") or walk.text("#upload-error"))
    assert not walk.text("#upload-error"), walk.text("#upload-error")
    walk.wait(lambda d: not walk.visible("#empty") and "passage" in walk.text("#store-count"))
    assert walk.find("#ask").is_enabled()
    walk.driver.execute_script("document.getElementById('upload').scrollIntoView({block: 'end'})")
    walk.reached("upload")
    walk.driver.execute_script("window.scrollTo(0, 0)")


def _bad_upload(walk: PageWalk) -> None:
    """A line that is not JSON is refused in the page, naming the line."""
    with tempfile.TemporaryDirectory() as folder:
        bad = Path(folder) / "bad.jsonl"
        bad.write_text('{"id": "a", "text": "fine"}\n{not json}\n', encoding="utf-8")
        walk.find("#upload-file").send_keys(str(bad.resolve()))
        walk.find("#upload-button").click()
        walk.wait(lambda d: walk.text("#upload-error"))
    assert walk.text("#upload-error").startswith("bad.jsonl: line 2: not JSON"), walk.text("#upload-error")


def _answers(walk: PageWalk, question: str) -> None:
    _ask(walk, question)
    for name in (*LISTS, "qa"):
        assert not walk.text(f"#error-{name}"), (name, walk.text(f"#error-{name}"))
    for name in LISTS:
        count = len(walk.all(f"#list-{name} li.result"))
        assert 1 <= count <= 5, (name, count)  # the default top-k
        assert walk.all(f"#list-{name} li.result meter")[0].get_attribute("title").startswith(f"raw {name} score")
    assert walk.all("#answers li.answer mark"), "the answers mark their spans"
    assert walk.text("#answers li.answer .confidence").endswith("%")
    assert_no_ranked_no_answer(walk)
    walk.reached("answer")


def _no_answer(walk: PageWalk, question: str, expected: bool) -> None:
    _ask(walk, question)
    if not expected and not walk.visible("#verdict"):
        return  # the reader found an answer it trusts (its "no answer" is off, or below its threshold)
    walk.wait(lambda d: walk.visible("#verdict"), 10)
    assert walk.text("#verdict").startswith("No confident answer in the indexed passages")
    assert walk.all("#list-search li.result"), "the passages are still shown"
    assert_no_ranked_no_answer(walk)
    walk.reached("no-answer")


def _top_k_and_filter(walk: PageWalk, question: str) -> None:
    title = walk.text("#list-bm25 li.result .title")
    _type(walk, "#top-k", "2")
    _type(walk, "#title-filter", title)
    _ask(walk, question)
    for name in LISTS:
        titles = [node.text for node in walk.all(f"#list-{name} li.result .title")]
        assert 1 <= len(titles) <= 2 and set(titles) == {title}, (name, titles)
    assert all(node.text == title for node in walk.all("#answers li.answer .title"))
    assert len(walk.all("#answers li.answer")) <= 2
    assert_no_ranked_no_answer(walk)
    assert f"title is \u201c{title}\u201d" in walk.text("#status")
    walk.reached("filtered")
    assert_no_match(walk, question, "No such title")
    _type(walk, "#top-k", "5")
    _type(walk, "#title-filter", "")


def _expand_and_open(walk: PageWalk) -> None:
    item = walk.all("#list-search li.result")[0]
    toggle = item.find_elements("css selector", "button.expand")
    if toggle:  # a passage longer than the cut
        before = len(item.find_element("css selector", ".passage").text)
        toggle[0].click()
        assert toggle[0].get_attribute("aria-expanded") == "true"
        assert len(item.find_element("css selector", ".passage").text) > before
    walk.reached("expanded")
    item.find_element("css selector", "button.open-document").click()
    walk.wait(lambda d: walk.all("#document-passages li") or walk.text("#document-error"))
    assert not walk.text("#document-error"), walk.text("#document-error")
    assert walk.all("#document-passages li.current"), "the passage opened from is marked in its document"
    assert walk.text("#document-meta").startswith("Source document")
    walk.reached("document")
    walk.find("#document-close").click()
    walk.wait(lambda d: not walk.visible("#document-view"))


def _example(walk: PageWalk) -> None:
    assert walk.visible("#examples"), "the store holds the example corpus's documents: its examples are offered"
    chip = walk.all("#examples button.chip")[0]
    chip.click()
    walk.wait(lambda d: walk.text("#status").startswith("asked") or walk.text("#error"))
    walk.wait(lambda d: _settled(walk))
    assert walk.find("#question").get_attribute("value") == chip.text
    assert walk.all("#list-bm25 li.result")
    walk.reached("example")


def assert_no_ranked_no_answer(walk: PageWalk) -> None:
    """The reader's "no answer" is never listed as a ranked answer (the banner says it when it is first)."""
    listed = [node.text for node in walk.all("#answers li")]
    assert not any(text.startswith("No answer") for text in listed), listed


def assert_no_match(walk: PageWalk, question: str, title: str) -> None:
    """A title filter that matches no passage: every list says so, and the banner says that no passage has
    that title (not that the passages below hold no confident answer)."""
    _type(walk, "#title-filter", title)
    _ask(walk, question)
    for name in LISTS:
        assert walk.text(f"#list-{name} li.empty") == "no passages match", name
    walk.wait(lambda d: walk.visible("#verdict"), 10)
    assert walk.text("#verdict").startswith(f"No passage has the title \u201c{title}\u201d."), walk.text("#verdict")
    assert "below" not in walk.text("#verdict") and not walk.all("#answers li.answer")


def ask_question(walk: PageWalk, question: str, title: str = "") -> None:
    """Type ``question`` (and the title filter), ask, and wait until every panel answered."""
    _type(walk, "#title-filter", title)
    _ask(walk, question)


def _wrong_key(walk: PageWalk, question: str) -> None:
    _set_key(walk, WRONG_KEY)
    _ask(walk, question)
    error = walk.text("#error")
    assert error.startswith("401: wrong API key") and "\n" not in error, error
    walk.reached("error")
    _set_key(walk, walk.api_key)


def walk_ask_page(
    driver: Any,
    base_url: str,
    *,
    api_key: str | None,
    corpus: Path,
    answerable: str,
    unanswerable: str,
    screenshots: Path | None = None,
    seconds: float = 120,
    expect_no_answer: bool = True,
) -> list[str]:
    """Walk the ask page at ``base_url`` through every state (module docstring); the states reached, in
    order. ``api_key``: the server's key (None when it has none; the wrong-key state is then left out).
    ``expect_no_answer``: the reader must say "no confident answer" to ``unanswerable`` (its
    ``no_answer`` is on); otherwise that state is only noted when it shows."""
    walk = PageWalk(driver, base_url.rstrip("/"), api_key, seconds, screenshots)
    driver.get(walk.base_url + "/")
    _empty_store(walk)
    if api_key:
        _set_key(walk, api_key)
    _bad_upload(walk)
    _upload(walk, corpus)
    _answers(walk, answerable)
    _expand_and_open(walk)
    _top_k_and_filter(walk, answerable)
    _example(walk)
    _no_answer(walk, unanswerable, expect_no_answer)
    if api_key:
        _wrong_key(walk, answerable)
    return walk.states
