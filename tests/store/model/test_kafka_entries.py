"""The Kafka model's reading consumed entry by entry (``read_store_entries``): a consumer that
builds its answer from the entries sees, per segment, the entries a ``LogFileWalk`` with
``keep_damaged`` gives (the same positions, decodes and errors, up to where that walk stops), and
the reading states the same findings as ``read_store`` -- one reading for both."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mqtool.formats.kafka.log import LogWalker
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import kafka as km
from tests.conftest import FIXTURES


def _damaged(tmp_path: Path) -> Path:
    root = tmp_path / "kafka-logs"
    shutil.copytree(FIXTURES / "kafka-logs", root)
    first = root / "orders-0" / "00000000000000000000.log"
    data = bytearray(first.read_bytes())
    entries = list(LogWalker(bytes(data)))
    data[entries[1].position + 100] ^= 0xFF  # a CRC fails, the frame holds
    data[entries[3].position + 16] = 9  # a broken frame: the walk stops, the model resyncs
    first.write_bytes(bytes(data))
    last = sorted((root / "orders-1").glob("*.log"))[-1]
    last.write_bytes(last.read_bytes()[:-5])  # a torn tail
    return root


def _walk(path: str, decode: km.EntryDecode) -> list[tuple[int, object, str | None]]:
    with ReadOnlyFile(Path(path)) as f:
        walk = ks.LogFileWalk(f, mode=decode.mode, check_crc=decode.check_crc, keep_damaged=True)
        out: list[tuple[int, object, str | None]] = []
        for pos, entry in walk:
            error = walk.damaged.get(pos) or walk.undecoded.get(pos)
            out.append((pos, entry, str(error) if error is not None else None))
        if walk.error is not None:
            out.append((walk.failed_at or 0, None, str(walk.error)))
        return out


@pytest.mark.parametrize("decode", [km.EntryDecode("full", True), km.EntryDecode("header", True), km.EntryDecode("full", False)])
def test_entries_are_the_walks_and_the_findings_are_the_readings(tmp_path, decode):
    root = _damaged(tmp_path)
    store = ks.open_kafka(root)
    scanned: dict[str, list[tuple[int, object, str | None]]] = {}
    stopped: set[str] = set()
    found = []
    for item in km.read_store_entries(store, decode):
        if isinstance(item, km.ScannedEntry):
            log = item.task.log
            if item.resumed or log in stopped:
                continue
            scanned.setdefault(log, []).append((item.position, item.entry, str(item.error) if item.error is not None else None))
            if item.entry is None:
                stopped.add(log)
        elif isinstance(item, km.Placed):
            found.append(item.finding)
        elif isinstance(item, km.SegmentRead):
            found.extend(item.result.findings)
    assert scanned and stopped  # the damaged segment's walk stops at its broken frame
    for log, entries in scanned.items():
        walked = _walk(log, decode)
        assert entries == walked[: len(entries)]
        assert len(entries) == len(walked) or walked[len(entries)][1] is None
    assert found == list(km.findings(ks.open_kafka(root)))
    assert any(e is not None and k for entries in scanned.values() for _p, e, k in entries) or not decode.check_crc
