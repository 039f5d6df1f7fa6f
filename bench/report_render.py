"""Benchmark: the HTML report of a 1,000-file store -- its size, and how long a browser takes to
show it (issue 20's goals: under 5 MB, rendered in under 2 s).

    python bench/report_render.py [--messages 8000] [--runs 3] [--keep DIR]

Builds a RocketMQ store of 1,000+ files (4 KiB CommitLog files, 400-byte ConsumeQueue files,
small IndexFiles, as ``tests/ops/validate/test_unreadable_file.py`` builds its big store), with
consumer groups behind on some queues and the last CommitLog file's tail torn (so the map carries
findings, a recover cut and consumer marks), writes ``mqtool report STORE --out report.html``,
prints its size, then opens it ``--runs`` times in Debian's Chromium (``/usr/bin/chromium``,
headless, through Playwright; a fresh page each time) and prints the median time from navigation
to the ``load`` event plus one ``requestAnimationFrame`` after layout (the first frame painted
with the whole page laid out).  The page must make no network request.

Exits 1 when a goal is missed, 3 when Chromium or Playwright is missing.  Timings belong here,
never in the tests (a busy machine would make them flaky).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mqtool.formats.rocketmq import commitlog as cl  # noqa: E402
from mqtool.store.writer import StoreWriter, WriterConfig  # noqa: E402
from tests.browser.chromium import AFTER_LAYOUT, CHROMIUM, foreign, launch  # noqa: E402

MAX_BYTES = 5 * 1000 * 1000
MAX_SECONDS = 2.0
TOPICS = 3
QUEUES = 2


def build_store(root: Path, messages: int) -> int:
    """The store (returns its file count): 1,000+ files, groups behind, the last record torn."""
    cfg = WriterConfig(commitlog_file_size=4096, cq_file_size=400, index_hash_slot_num=64, index_num=256, index_tz=dt.timezone.utc)
    born = 1_700_000_000_000
    with StoreWriter(root, cfg) as w:
        for i in range(messages):
            t = born + i * 450  # one message every 0.45 s: an hour of traffic
            props = {"KEYS": f"k{i}", "TAGS": "a"}
            w.append(cl.MessageRecord(topic=f"T{i % TOPICS}", queue_id=i % QUEUES, body=b"x" * 200, born_timestamp=t, store_timestamp=t, properties=props))
    per_queue = messages // (TOPICS * QUEUES)
    table = {f"T{t}@group-{t}": {str(q): per_queue * (q + 1) // (QUEUES + 1) for q in range(QUEUES)} for t in range(TOPICS)}
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "consumerOffset.json").write_text(json.dumps({"offsetTable": table}, indent=2))
    last = sorted((root / "commitlog").iterdir())[-1]
    data = last.read_bytes()
    end = len(data.rstrip(b"\0"))
    with open(last, "r+b") as f:  # tear the last record: zero its second half
        f.seek(end - 100)
        f.write(bytes(100))
    return sum(1 for p in root.rglob("*") if p.is_file())


def render_times(report: Path, runs: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    url = report.resolve().as_uri()
    times = []
    with sync_playwright() as p:
        browser = launch(p)
        try:
            for _ in range(runs):
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                requests: list[str] = []
                page.on("request", lambda r, seen=requests: seen.append(r.url))
                start = time.perf_counter()
                page.goto(url, wait_until="load")
                page.evaluate(AFTER_LAYOUT)
                times.append(time.perf_counter() - start)
                if foreign(requests, url):
                    raise SystemExit(f"the report makes network requests: {foreign(requests, url)[:5]}")
                page.close()
        finally:
            browser.close()
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=8000, help="messages written (8000: about 1,050 files)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="build the store and the report here (kept)")
    args = ap.parse_args()
    if not CHROMIUM.exists():
        print(f"no Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 3
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("Playwright is not installed (pip install '.[test]')", file=sys.stderr)
        return 3
    with tempfile.TemporaryDirectory(prefix="mqtool-report-bench-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        store, report = work / "store", work / "report.html"
        t0 = time.perf_counter()
        files = build_store(store, args.messages)
        print(f"store: {files} files ({time.perf_counter() - t0:.1f} s to build)")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "mqtool", "report", str(store), "--out", str(report)], env=env, capture_output=True, text=True)
        written = time.perf_counter() - t0
        if not report.exists():
            print(f"mqtool report wrote nothing (exit {done.returncode}): {done.stderr.strip()}", file=sys.stderr)
            return 1
        size = report.stat().st_size
        print(f"mqtool report: exit {done.returncode} in {written:.1f} s")
        times = render_times(report, args.runs)
        median = statistics.median(times)
        print(f"report size: {size / 1e6:.2f} MB ({size} bytes; goal < {MAX_BYTES / 1e6:.0f} MB)")
        print(f"render (load + a frame after layout): median {median:.2f} s of {args.runs} ({', '.join(f'{t:.2f}' for t in times)}; goal < {MAX_SECONDS:.0f} s)")
        missed = [what for what, bad in (("size", size >= MAX_BYTES), ("render time", median >= MAX_SECONDS)) if bad]
        if missed:
            print(f"goal missed: {', '.join(missed)}", file=sys.stderr)
            return 1
        return 0


if __name__ == "__main__":
    sys.exit(main())
