"""Headless Chromium through chromedriver for the page tests: skipped when missing, unless ``CI=true``,
where their absence fails the test."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
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
    "--window-size=1280,900",
)


def browser_or_skip() -> None:
    """Skip (fail under ``CI=true``) when Chromium, chromedriver or selenium is missing."""
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


@contextmanager
def headless_chromium(profile: Path) -> Iterator[Any]:
    """A selenium driver of headless Chromium with the empty profile folder ``profile`` (removed after);
    set ``SE_OFFLINE=true`` first so that selenium never downloads a browser or driver."""
    browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
