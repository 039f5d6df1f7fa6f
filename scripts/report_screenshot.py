"""Regenerate the README's screenshot of a damaged store's report: ``docs/images/report.png``.

    python scripts/report_screenshot.py [--out docs/images/report.png] [--html report.html]

Copies ``fixtures/rocketmq-store`` to a temporary directory and damages it the way an operator
meets it after a crash: the last CommitLog file's tail torn, every file's mtime long past (so
retention would delete the oldest CommitLog files), while the fixture's ``order-consumer`` group
has not consumed the last messages of its queues.  Then runs ``mqtool report`` on the copy and
photographs the page in Debian's Chromium (``/usr/bin/chromium``, headless, through Playwright,
which never downloads a browser) at 1280 px wide: the top of the page, where the verdict and the
map are.  The damage is placed the same way every run (``tests/browser/stores.py``), so the image
only changes when the report does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.chromium import AFTER_LAYOUT, CHROMIUM, launch  # noqa: E402
from tests.browser.stores import copy_fixture, damage  # noqa: E402

WIDTH = 1280
HEIGHT = 1000  # the top of the page: verdict, map, legend and the first findings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "report.png")
    ap.add_argument("--html", type=Path, help="also keep the report's HTML here")
    ap.add_argument("--height", type=int, default=HEIGHT, help="pixels from the top of the page (0: the full page)")
    args = ap.parse_args()
    if not CHROMIUM.exists():
        print(f"no Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 3
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="mqtool-report-shot-") as tmp:
        store = copy_fixture("rocketmq", Path(tmp))
        damage("rocketmq", store, "torn-tail")
        damage("rocketmq", store, "unconsumed")
        html = args.html or Path(tmp) / "report.html"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        done = subprocess.run([sys.executable, "-m", "mqtool", "report", str(store), "--out", str(html)], env=env, capture_output=True, text=True)
        if not html.exists():
            print(f"mqtool report wrote nothing (exit {done.returncode}): {done.stderr.strip()}", file=sys.stderr)
            return 1
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = launch(p)
            try:
                page = browser.new_page(viewport={"width": WIDTH, "height": args.height or 900})
                page.goto(html.resolve().as_uri(), wait_until="load")
                page.evaluate(AFTER_LAYOUT)
                page.screenshot(path=str(args.out), full_page=not args.height)
            finally:
                browser.close()
    print(f"{args.out}: {args.out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
