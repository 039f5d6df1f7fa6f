"""RocketMQ: the report's stats are counted by validate's reading of each CommitLog file
(``ValidateOptions.rows``, ``ops.stats.rocketmq.record_count``), in-process or in validate's
worker processes, and that count is what ``stats`` counts: the records the broker serves (a
record whose body CRC fails is served, a broken frame ends its file's records).  Asking for the
count changes nothing validate states."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from mqtool.ops.report import gather, stats_rows
from mqtool.ops.stats import store_stats
from mqtool.ops.validate import ValidateOptions, validate_path

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "rocketmq-store"


def _record_starts(path: Path, count: int) -> list[int]:
    data = path.read_bytes()
    starts, pos = [], 0
    while len(starts) < count:
        size = struct.unpack_from(">i", data, pos)[0]
        assert size > 0
        starts.append(pos)
        pos += size
    return starts


def _damaged(tmp_path: Path, kind: str) -> Path:
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    first = sorted((root / "commitlog").iterdir())[0]
    starts = _record_starts(first, 12)
    with open(first, "r+b") as f:
        if kind == "body-crc":  # the 3rd record's first body byte (IPv4 hosts): its frame holds, the broker serves it
            f.seek(starts[3] + 88)
            assert struct.unpack(">i", f.read(4))[0] > 0  # BODYLEN
            byte = f.read(1)
            f.seek(starts[3] + 92)
            f.write(bytes([byte[0] ^ 0xFF]))
        elif kind == "frame":  # the 10th record's MAGICCODE: its file's records end there
            f.seek(starts[10] + 4)
            f.write(b"\xde\xad\xbe\xef")
    return root


def _view(stats) -> tuple[object, ...]:
    return (stats.topics(), stats.recent.lifetime.to_dict(), stats.recent.last_day(), stats.damaged_messages)


@pytest.mark.parametrize("kind", ["healthy", "body-crc", "frame"])
@pytest.mark.parametrize("jobs", [1, 2])
def test_validates_count_is_what_stats_counts(tmp_path: Path, kind: str, jobs: int) -> None:
    root = _damaged(tmp_path, kind)
    counted = validate_path(root, ValidateOptions(jobs=jobs, rows=stats_rows("rocketmq")), "rocketmq")
    assert len(counted.rows) == len([p for p in (root / "commitlog").iterdir() if p.stat().st_size])
    alone = store_stats(root, "rocketmq")
    assert _view(store_stats(root, "rocketmq", validation=counted)) == _view(alone)
    if kind == "body-crc":
        assert alone.damaged_messages == 1
    # the count changes nothing validate states
    plain = validate_path(root, ValidateOptions(jobs=jobs), "rocketmq")
    assert [f.to_dict() for f in counted.findings] == [f.to_dict() for f in plain.findings]
    assert (kind == "healthy") == (not plain.failed)


def test_a_broken_frame_ends_the_count_of_its_file(tmp_path: Path) -> None:
    healthy = sum(t["messages"] for t in store_stats(_damaged(tmp_path / "a", "healthy"), "rocketmq").topics())
    broken = sum(t["messages"] for t in store_stats(_damaged(tmp_path / "b", "frame"), "rocketmq").topics())
    assert 10 <= broken < healthy


def test_the_reports_topics_are_counted_once(tmp_path: Path) -> None:
    root = _damaged(tmp_path, "body-crc")
    report = gather(root, "rocketmq", jobs=2)
    assert [t["messages"] for t in report.topics] == [t["messages"] for t in store_stats(root, "rocketmq").topics()]
