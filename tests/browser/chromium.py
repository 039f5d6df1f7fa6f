"""How the browser tests, ``scripts/report_screenshot.py`` and ``bench/report_render.py`` start
Chromium: Debian's ``chromium`` package (``/usr/bin/chromium``, or ``MQTOOL_CHROMIUM``) driven by
Playwright with ``executable_path`` -- Playwright never downloads a browser here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

CHROMIUM = Path(os.environ.get("MQTOOL_CHROMIUM", "/usr/bin/chromium"))
#: headless, and no traffic of Chromium's own: without the background-networking flags an
#: offline machine floods refused connections (updates, sync, field trials, QUIC probes)
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: resolves once the page has laid out and painted a frame after ``load``
AFTER_LAYOUT = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def launch(playwright: Any) -> Any:
    """The browser, from ``sync_playwright()``'s handle."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)


def foreign(requests: list[str], url: str) -> list[str]:
    """The requests that are neither the report itself nor a ``data:`` URL."""
    return [u for u in requests if u != url and not u.startswith("data:")]
