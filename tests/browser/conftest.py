"""Headless Chromium for the report's browser tests (issue 20).

The report is opened the way a person opens it: Debian's ``chromium`` (``/usr/bin/chromium``,
``apt-get install chromium``; ``.ci/run`` installs it) driven by Playwright, which never downloads
a browser here.  One browser is launched per session and each test gets a fresh page.  Every
request the page makes is recorded: anything but the report's own ``file://`` URL or a ``data:``
URL fails the test (the report must open on an air-gapped laptop), and so does an uncaught
JavaScript error.  A full-page screenshot of every report opened is written under the test's
tmp dir.

On a machine without Chromium (or without Playwright) the tests skip with the reason; when the
environment variable ``CI`` is set they fail instead, so a CI run cannot pass without them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.browser.chromium import AFTER_LAYOUT, CHROMIUM, foreign, launch

VIEWPORT = {"width": 1280, "height": 900}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, through Playwright: one per session."""
    if not CHROMIUM.exists():
        _unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (pip install '.[test]')")
    with sync_playwright() as p:
        b = launch(p)
        try:
            yield b
        finally:
            b.close()


@dataclass
class Opened:
    """A report open in a page, with what the page asked the network for."""

    page: Any
    url: str
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def foreign_requests(self) -> list[str]:
        return foreign(self.requests, self.url)

    def check_offline(self) -> None:
        assert not self.foreign_requests(), f"the page makes network requests: {self.foreign_requests()}"
        assert not self.errors, f"the page raised JavaScript errors: {self.errors}"


class ReportViewer:
    """Opens report files in pages of the session's browser; screenshots each one at the end."""

    def __init__(self, browser: Any, shots: Path) -> None:
        self._browser = browser
        self._shots = shots
        self.opened: list[Opened] = []

    def open(self, report: Path, *, width: int = VIEWPORT["width"]) -> Opened:
        page = self._browser.new_page(viewport={"width": width, "height": VIEWPORT["height"]})
        opened = Opened(page, report.resolve().as_uri())
        page.on("request", lambda r: opened.requests.append(r.url))
        page.on("websocket", lambda ws: opened.requests.append(ws.url))
        page.on("pageerror", lambda e: opened.errors.append(str(e)))
        page.goto(opened.url, wait_until="load")
        # one frame after layout: what a person sees once the page has painted
        page.evaluate(AFTER_LAYOUT)
        self.opened.append(opened)
        opened.check_offline()
        return opened

    def screenshot_all(self) -> list[Path]:
        paths = []
        for n, opened in enumerate(self.opened):
            path = self._shots / (f"report-{n}.png" if n else "report.png")
            opened.page.screenshot(path=str(path), full_page=True)
            paths.append(path)
        return paths

    def close(self) -> None:
        for opened in self.opened:
            opened.page.close()


@pytest.fixture
def viewer(browser: Any, tmp_path: Path) -> Iterator[ReportViewer]:
    """Open reports with ``viewer.open(path)``; after the test each one is checked again for
    network requests and screenshotted (full page) to ``tmp_path/report*.png``."""
    v = ReportViewer(browser, tmp_path)
    try:
        yield v
        for opened in v.opened:
            opened.check_offline()
    finally:
        v.screenshot_all()
        v.close()
