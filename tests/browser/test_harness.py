"""The browser harness itself: a request to the network fails a test, a data: URL does not, a
missing Chromium skips locally and fails in CI, and every opened page is screenshotted.  Run on
hand-made pages, so that the guard is known to bite before it is trusted with the real report."""

from __future__ import annotations

import pytest

from tests.browser import conftest
from tests.browser.conftest import ReportViewer

PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _page(tmp_path, body: str):
    path = tmp_path / "page.html"
    path.write_text(f"<!doctype html><html><head><meta charset='utf-8'></head><body>{body}</body></html>")
    return path


def test_an_offline_page_opens_and_is_screenshotted(browser, tmp_path):
    viewer = ReportViewer(browser, tmp_path)
    try:
        opened = viewer.open(_page(tmp_path, f"<div id='verdict'>OK: exit code 0</div><img src='{PIXEL}'>"))
        assert opened.page.locator("#verdict").is_visible()
        assert "exit code 0" in opened.page.locator("#verdict").inner_text()
        assert opened.requests == [opened.url]  # data: URLs are not requests to Chromium
        assert opened.page.locator("img").evaluate("img => img.naturalWidth") == 1
        (shot,) = viewer.screenshot_all()
        assert shot.stat().st_size > 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        viewer.close()


@pytest.mark.parametrize(
    "body",
    [
        "<img src='http://192.0.2.1/logo.png'>",  # TEST-NET-1: never routed
        "<link rel='stylesheet' href='https://192.0.2.1/style.css'>",
        "<script>fetch('http://192.0.2.1/beacon').catch(() => {})</script>",
        "<img src='other.png'>",  # another file beside the report is not the report either
    ],
)
def test_any_request_but_the_report_itself_fails(browser, tmp_path, body):
    viewer = ReportViewer(browser, tmp_path)
    try:
        with pytest.raises(AssertionError, match="network requests"):
            viewer.open(_page(tmp_path, body))
    finally:
        viewer.close()


def test_a_javascript_error_fails(browser, tmp_path):
    viewer = ReportViewer(browser, tmp_path)
    try:
        with pytest.raises(AssertionError, match="JavaScript errors"):
            viewer.open(_page(tmp_path, "<script>undefinedFunction()</script>"))
    finally:
        viewer.close()


def test_no_chromium_skips_locally_and_fails_in_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Chromium"):
        conftest._unavailable("no Chromium at /nowhere")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="cannot run in CI"):
        conftest._unavailable("no Chromium at /nowhere")


MAP = """
<style>
  #map .log {{ position: relative; width: 1000px; height: 40px; margin: 10px; }}
  #map .segment {{ position: absolute; top: 0; height: 40px; background: #9c9; }}
  #map .finding-mark {{ position: absolute; top: 5px; width: 4px; height: 30px; background: red; }}
</style>
<div id="map"><div class="log" data-log="commitlog">
  <div class="segment" data-path="commitlog/0" style="left: 10%; width: 50%">
    <div class="finding-mark" id="f-1" data-path="commitlog/0" style="left: {left}%"></div>
  </div>
</div></div>
"""


@pytest.mark.parametrize(("left", "good"), [(50, True), (49.5, True), (90, False), (120, False)])
def test_a_mark_is_checked_where_it_is_drawn(browser, tmp_path, left, good):
    """The geometry check of the report tests: a mark at byte 500 of a 1000-byte file is drawn
    half-way along its segment; drawn elsewhere (or outside the segment) it fails."""
    from tests.browser.test_report import assert_at_position

    viewer = ReportViewer(browser, tmp_path)
    try:
        page = viewer.open(_page(tmp_path, MAP.format(left=left))).page
        mark = page.locator("#f-1")
        if good:
            assert_at_position(page, mark, "commitlog/0", 500, 1000)
        else:
            with pytest.raises(AssertionError):
                assert_at_position(page, mark, "commitlog/0", 500, 1000)
    finally:
        viewer.close()
