"""Headless Debian chromium through Selenium and chromium-driver; no browser is downloaded.

Absent chromium, chromedriver or selenium, the browser tests skip, except under CI=true,
where they fail: CI installs them with .ci/browser.sh. BT_CHROMIUM and BT_CHROMEDRIVER
point at other binaries.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("BT_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("BT_CHROMEDRIVER", "/usr/bin/chromedriver"))
WIDTH_PX, HEIGHT_PX = 1280, 900


def unavailable(reason: str) -> None:
    """Skip, or fail under CI, where the browser tests must run."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI runs the browser tests: install them with .ci/browser.sh")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """One headless chromium per test module, logging the console for the error checks."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    if missing:
        unavailable(f"no {' or '.join(missing)} (Debian: apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("selenium is not installed (pip install 'selenium==4.*')")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI containers run as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={WIDTH_PX},{HEIGHT_PX}",
        "--hide-scrollbars",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        yield chrome
    finally:
        chrome.quit()
