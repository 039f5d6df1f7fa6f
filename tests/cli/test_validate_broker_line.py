"""validate's table names the broker restart it models in plain English (the article follows the
recovery's kind: "an abnormal recovery", "a normal recovery")."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats.kafka import record_batch as rb
from mqtool.store.kafka_writer import PartitionConfig, PartitionWriter


def _partition(root: Path, clean: bool) -> Path:
    part = root / "orders-0"
    part.mkdir(parents=True)
    writer = PartitionWriter(part, PartitionConfig(segment_bytes=1 << 20), snapshots=False)
    writer.append(rb.build_batch([rb.Record(offset_delta=0, timestamp_delta=0, key=b"k", value=b"v")], base_timestamp=1_700_000_000_000))
    writer.close()
    if clean:
        (root / ".kafka_cleanshutdown").write_text("")
    return root


@pytest.mark.parametrize(("clean", "line"), [(False, "runs an abnormal recovery"), (True, "runs a normal recovery")])
def test_the_recovery_line_reads_as_english(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean: bool, line: str) -> None:
    root = _partition(tmp_path / "logs", clean)
    monkeypatch.setenv("COLUMNS", "200")
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()):
        run(["validate", str(root)])
    assert f"its next start {line}" in out.getvalue(), out.getvalue()
