"""The web tests' fixtures: ``browser``, headless Chromium driven by selenium (Debian's chromium +
chromium-driver). The served app is ``tests.web.web_helpers.served``; page helpers are in tests/web/browser.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import require, require_module

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--window-size=1280,860",
]


@pytest.fixture
def browser(tmp_path):
    """A headless Chromium with its own profile in the test's folder; quit after the test."""
    require(Path(CHROMIUM).exists() and Path(DRIVER).exists(), "chromium and chromium-driver (Debian) not installed")
    webdriver = require_module("selenium.webdriver", "selenium drives the browser (pip install -e '.[test]')")
    service = require_module("selenium.webdriver.chrome.service", "selenium drives the browser")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'chromium'}"]:
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=service.Service(DRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(tmp_path / "chromium", ignore_errors=True)
