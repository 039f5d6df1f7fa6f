"""``mqtool report`` seen in a real browser (issue 20): Debian's headless Chromium opens the
report of the healthy RocketMQ fixture and of damaged copies of every layout's fixture (torn tail,
garbage after the valid end, missing middle file, files past retention with consumers behind),
and the tests assert on the rendered page -- what is visible, its text and where it is drawn --
never on the HTML source.

What each page must show is taken from the commands themselves, run on the same copy:
``validate --json`` (the verdict, its exit code and every root-cause finding), ``recover --json``
(the cuts), ``clean --json`` (the files retention deletes) and ``lag --json`` (the consumer
positions).  The DOM contract the report follows: ``#verdict``; ``#map`` with a ``.log`` per log,
a ``.segment`` per file (``data-path`` relative to the store root, ``data-end-kind``), a
``.finding-mark`` per finding (``data-code``, ``data-path``, ``data-position``, ``id="f-N"``),
``.cut.recover`` and ``.cut.clean`` marks, a ``.consumer`` per group position; ``#findings`` with
links to the marks; ``#recover``, ``#clean``, ``#topics``, ``#lag``.

The harness (``conftest.py``) fails a test on any network request or JavaScript error and
screenshots every page (full page) under the test's tmp dir.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mqtool.cli.app import run
from tests.browser.stores import KINDS, LAYOUTS, copy_fixture, damage

#: the files of the map: data files of each log (not their indexes, checkpoints or snapshots)
DATA_SUFFIXES = {"kafka": (".log",), "jafka": (".jafka",), "metaq": (".meta",)}
#: recover actions that cut, zero, delete or rebuild bytes of a data file on the map
CUTTING = {"cut", "truncate", "zero", "delete", "remove", "archive-segment"}
#: pixels of slack for the edges of a box (anti-aliasing, borders)
SLACK = 1.5
#: how the damaged file ends (garbage after the valid end that no record follows is an unreadable region)
END_KIND = {"torn-tail": ("torn",), "garbage": ("garbage", "unreadable"), "missing-middle": ("missing",)}


@dataclass
class Expected:
    """What the commands say about a store."""

    root: Path
    layout: str
    validate_exit: int
    validate: dict[str, Any]
    recover: dict[str, Any]
    clean: dict[str, Any]
    lag: dict[str, Any] | None

    def rel(self, path: str) -> str:
        p = Path(path)
        return str(p.relative_to(self.root)) if p.is_absolute() else path

    def root_causes(self) -> list[dict[str, Any]]:
        """validate's errors and warnings that are causes (knock-ons name their cause)."""
        return [f for f in self.validate["findings"] if f["severity"] != "info" and not f.get("cause")]


def _json(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, Any]:
    code = run([str(a) for a in args])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out.strip() else None)


def expected(root: Path, layout: str, capsys: pytest.CaptureFixture[str]) -> Expected:
    code, doc = _json(capsys, "validate", root, "--json")
    _, recover = _json(capsys, "recover", root, "--json")
    _, clean = _json(capsys, "clean", root, "--json")
    lag = _json(capsys, "lag", root, "--json")[1] if layout in ("rocketmq", "kafka") else None
    return Expected(root, layout, code, doc, recover, clean, lag)


def write_report(root: Path, out: Path) -> int:
    return run(["report", str(root), "--out", str(out)])


# --- reading the rendered page --------------------------------------------------------------------


def css(value: object) -> str:
    return json.dumps(str(value))


def box(locator: Any) -> dict[str, float]:
    b = locator.bounding_box()
    assert b is not None, f"{locator} has no box (not rendered)"
    return b


def within(inner: dict[str, float], outer: dict[str, float]) -> bool:
    return (
        inner["x"] >= outer["x"] - SLACK
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + SLACK
        and inner["y"] + inner["height"] / 2 >= outer["y"] - SLACK
        and inner["y"] + inner["height"] / 2 <= outer["y"] + outer["height"] + SLACK
    )


def segment(page: Any, path: str) -> Any:
    seg = page.locator(f"#map .segment[data-path={css(path)}]")
    assert seg.count() == 1, f"{seg.count()} segment(s) for {path} on the map"
    assert seg.is_visible(), f"the segment of {path} is not visible"
    return seg


def assert_at_position(page: Any, mark: Any, path: str, position: int | None, size: int | None) -> None:
    """``mark`` is visible, inside its segment's box, and (when the file's size is known) drawn at
    ``position`` along it."""
    assert mark.is_visible(), f"{mark} is not visible"
    seg_box, mark_box = box(segment(page, path)), box(mark)
    assert within(mark_box, seg_box), f"{mark} {mark_box} lies outside its segment {path} {seg_box}"
    if position is not None and size:
        x = seg_box["x"] + seg_box["width"] * position / size
        tolerance = max(3.0, mark_box["width"], seg_box["width"] * 0.02)
        assert mark_box["x"] - tolerance <= x <= mark_box["x"] + mark_box["width"] + tolerance, (
            f"{mark} is drawn at x={mark_box['x']:.0f}..{mark_box['x'] + mark_box['width']:.0f}, position {position} of {size} is x={x:.0f}"
        )


def file_size(root: Path, path: str) -> int | None:
    p = root / path
    return p.stat().st_size if p.is_file() else None


def on_map(exp: Expected, path: str) -> bool:
    """A data file the map draws as a segment."""
    if exp.layout == "rocketmq":
        return path.startswith(("commitlog/", "consumequeue/", "index/")) and path.count("/") >= 1
    return path.endswith(DATA_SUFFIXES[exp.layout])


# --- the checks -----------------------------------------------------------------------------------


def check_verdict(page: Any, exp: Expected) -> None:
    verdict = page.locator("#verdict")
    assert verdict.is_visible()
    text = verdict.inner_text()
    word = "FAILED" if exp.validate_exit else "OK"
    assert word in text, f"#verdict does not say {word}: {text!r}"
    assert f"exit code {exp.validate_exit}" in text, text
    counts = exp.validate["counts"]
    for n, what in ((counts["error"], "error"), (counts["warning"], "warning")):
        assert f"{n} {what}" in text, f"#verdict lacks '{n} {what}': {text!r}"


def check_findings(page: Any, exp: Expected) -> None:
    for f in exp.root_causes():
        path = exp.rel(f["path"])
        if not on_map(exp, path):
            continue
        sel = f"#map .finding-mark[data-code={css(f['code'])}][data-path={css(path)}]"
        if f["position"] is not None:
            sel += f"[data-position={css(f['position'])}]"
        marks = page.locator(sel)
        assert marks.count() >= 1, f"no mark for {f['code']} at {path}:{f['position']}"
        mark = marks.first
        assert_at_position(page, mark, path, f["position"], file_size(exp.root, path))
        assert mark.get_attribute("title").startswith(f"{f['code']} at {path}"), mark.get_attribute("title")
        # a root cause carries a visible label on its log: a screenshot shows the code without hovering
        log = page.locator(f"#map .log:has(.finding-mark[id={css(mark.get_attribute('id'))}])").last
        labels = [e for e in log.get_by_text(f["code"]).all() if e.is_visible()]
        assert labels, f"no visible label {f['code']} on the log of {path}"


def check_recover_cuts(page: Any, exp: Expected) -> int:
    seen = 0
    for step in exp.recover["steps"]:
        path = exp.rel(step["path"])
        if step["action"] not in CUTTING or not on_map(exp, path):
            continue
        sel = f"#map .cut.recover[data-path={css(path)}]"
        if step.get("position") is not None:
            sel += f"[data-position={css(step['position'])}]"
        cut = page.locator(sel)
        assert cut.count() >= 1, f"no recover cut drawn for {step['action']} {path}:{step.get('position')}"
        assert cut.first.get_attribute("data-action") == step["action"]
        assert_at_position(page, cut.first, path, step.get("position"), file_size(exp.root, path))
        seen += 1
    return seen


def check_clean_cuts(page: Any, exp: Expected) -> int:
    seen = 0
    for step in exp.clean["steps"]:
        path = exp.rel(step["path"])
        if not on_map(exp, path):
            continue
        cut = page.locator(f"#map .cut.clean[data-path={css(path)}]")
        assert cut.count() == 1, f"{cut.count()} clean cut(s) drawn for {step['action']} {path}"
        assert cut.is_visible() and within(box(cut), box(segment(page, path)))
        seen += 1
    return seen


def check_consumers(page: Any, exp: Expected) -> int:
    seen = 0
    for group, log, offset in consumer_positions(exp):
        log_box = box(page.locator(f"#map .log[data-log={css(log)}]"))
        mark = page.locator(f"#map .consumer[data-group={css(group)}][data-log={css(log)}]")
        assert mark.count() == 1 and mark.is_visible(), f"no consumer mark of {group} on {log}"
        assert mark.get_attribute("data-offset") == str(offset)
        b = box(mark)  # a marker starting at the position: its left edge lies on the log (a caught-up one on its end)
        edge = {"x": b["x"], "y": b["y"], "width": 0.0, "height": b["height"]}
        assert within(edge, log_box), f"the consumer mark of {group} {b} lies outside {log} {log_box}"
        seen += 1
    return seen


def consumer_positions(exp: Expected) -> list[tuple[str, str, int]]:
    if not exp.lag:
        return []
    out = []
    for row in exp.lag["lag"]:
        if exp.layout == "rocketmq":
            log = f"consumequeue/{row['topic']}/{row['queue_id']}"
        else:
            log = f"{row['topic']}-{row['partition']}"
        out.append((row["group"], log, row["committed_offset"]))
    return out


def check_finding_link(page: Any) -> None:
    """The first link in #findings scrolls to its mark on the map."""
    link = page.locator("#findings a[href^='#f-']").first
    target = link.get_attribute("href")
    page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
    link.scroll_into_view_if_needed()
    link.click()
    mark = page.locator(target)
    assert mark.evaluate("e => e.classList.contains('finding-mark')")
    page.wait_for_function("id => { const r = document.getElementById(id).getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; }", arg=target[1:])


# --- the tests --------------------------------------------------------------------------------------


def _open(viewer: Any, exp: Expected, tmp_path: Path) -> Any:
    report = tmp_path / "report.html"
    code = write_report(exp.root, report)
    assert code == exp.validate_exit, f"mqtool report exited {code}, validate {exp.validate_exit}"
    return viewer.open(report).page


def test_the_healthy_fixture(viewer, tmp_path, capsys):
    root = copy_fixture("rocketmq", tmp_path)
    exp = expected(root, "rocketmq", capsys)
    page = _open(viewer, exp, tmp_path)
    check_verdict(page, exp)
    assert "OK" in page.locator("#verdict").inner_text() and exp.validate_exit == 0
    # every CommitLog file is on the map, healthy but the active one
    names = sorted(p.name for p in (root / "commitlog").iterdir())
    kinds = [segment(page, f"commitlog/{n}").get_attribute("data-end-kind") for n in names]
    assert kinds[:-1] == ["healthy"] * (len(names) - 1) and kinds[-1] in ("zeros", "in-progress", "healthy"), kinds
    check_findings(page, exp)
    assert check_consumers(page, exp) == len(exp.lag["lag"]) > 0
    assert page.locator("#map .cut.recover").count() == 0 and page.locator("#map .cut.clean").count() == 0
    for section in ("#topics", "#lag"):
        assert page.locator(section).is_visible()
    assert page.locator("#topics svg").first.is_visible()


CASES = [(layout, kind) for layout in LAYOUTS for kind in KINDS]


@pytest.mark.parametrize(("layout", "kind"), CASES, ids=[f"{layout}-{kind}" for layout, kind in CASES])
def test_a_damaged_copy(viewer, tmp_path, capsys, layout, kind):
    root = copy_fixture(layout, tmp_path / "store")
    damaged_path = damage(layout, root, kind)
    exp = expected(root, layout, capsys)
    page = _open(viewer, exp, tmp_path)
    check_verdict(page, exp)
    seg = page.locator(f"#map .segment[data-path={css(damaged_path)}]")
    assert seg.is_visible(), f"the damaged file {damaged_path} is not on the map"
    if kind in END_KIND:
        assert seg.get_attribute("data-end-kind") in END_KIND[kind], seg.get_attribute("data-end-kind")
    check_findings(page, exp)
    cuts = check_recover_cuts(page, exp)
    cleaned = check_clean_cuts(page, exp)
    consumers = check_consumers(page, exp)
    if kind in ("torn-tail", "garbage"):
        assert cuts >= 1, "recover cuts the damaged file: the cut must be on the map"
    if kind == "unconsumed":
        assert cleaned >= 1, "retention deletes the oldest files: the clean cut must be on the map"
    if layout in ("rocketmq", "kafka"):
        assert consumers >= 1
    if exp.root_causes():
        check_finding_link(page)


def test_validate_format_html(viewer, tmp_path, capsys):
    """``validate --format html`` writes the same page to stdout, with validate's exit code."""
    root = copy_fixture("kafka", tmp_path / "store")
    damaged_path = damage("kafka", root, "torn-tail")
    exp = expected(root, "kafka", capsys)
    code = run(["validate", str(root), "--format", "html"])
    html = capsys.readouterr().out
    assert code == exp.validate_exit
    report = tmp_path / "validate.html"
    report.write_text(html, encoding="utf-8")
    page = viewer.open(report).page
    check_verdict(page, exp)
    assert page.locator(f"#map .segment[data-path={css(damaged_path)}]").is_visible()
    check_findings(page, exp)
    assert check_recover_cuts(page, exp) >= 1
