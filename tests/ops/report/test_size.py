"""A report of a 1,000-file store stays under 5 MB (per-segment markup is small, finding marks
are capped per file with a "+N more" mark)."""

from __future__ import annotations

import datetime as dt
import shutil
import time
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.store.writer import StoreWriter, WriterConfig


def test_thousand_file_store_report_is_small(tmp_path: Path) -> None:
    root = tmp_path / "store"
    cfg = WriterConfig(commitlog_file_size=4096, cq_file_size=400, index_hash_slot_num=64, index_num=256, index_tz=dt.timezone.utc)
    with StoreWriter(root, cfg) as w:
        for i in range(8000):
            w.append(cl.MessageRecord(topic=f"T{i % 3}", queue_id=i % 2, body=b"x" * 200, properties={"KEYS": f"k{i}", "TAGS": "a"}))
    n_files = sum(1 for p in root.rglob("*") if p.is_file())
    assert n_files >= 1000
    out = tmp_path / "r.html"
    started = time.monotonic()
    assert run(["report", str(root), "--out", str(out), "-q"]) in (0, 1)
    elapsed = time.monotonic() - started
    html = out.read_text()
    assert out.stat().st_size < 5 * 1024 * 1024, f"{out.stat().st_size} bytes for {n_files} files"
    assert html.count('class="segment"') >= 1000
    print(f"{n_files} files: {out.stat().st_size} bytes in {elapsed:.1f} s")


def test_finding_marks_are_capped_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mqtool.ops.report as report

    store = tmp_path / "s"
    shutil.copytree(Path(__file__).resolve().parents[3] / "fixtures" / "rocketmq-store", store)
    sorted((store / "commitlog").iterdir())[2].unlink()
    full = report.gather(store, "rocketmq")
    marked = sum(len(s.marks) for log in full.logs for s in log.segments)
    assert marked >= 1
    monkeypatch.setattr(report, "MARKS_PER_FILE", 0)
    capped = report.gather(store, "rocketmq")
    assert sum(len(s.marks) for log in capped.logs for s in log.segments) == 0
    assert sum(s.more_marks for log in capped.logs for s in log.segments) == marked
    from mqtool.ops.report.html import render_html

    html = render_html(capped)
    for seg in (s for log in capped.logs for s in log.segments if s.more_marks):
        assert f"+{seg.more_marks} more" in html
