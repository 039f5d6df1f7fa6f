"""lag on Kafka against offsets computed independently: ``__consumer_offsets`` keys and values
decoded with struct (the ``OffsetCommitKey`` / ``OffsetCommitValue`` schemas), batches and record
timestamps read with kafka-python, none of mqtool's decoders."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from mqtool.ops.lag import store_lag
from mqtool.ops.validate import ValidateOptions, validate_path
from tests.conftest import FIXTURES

kafka_record = pytest.importorskip("kafka.record")

LOGS = FIXTURES / "kafka-logs"


def batches(partition: Path) -> list[tuple[Path, int, int, int, list[tuple[int, int]]]]:
    """(file, position, base offset, size, [(offset, timestamp)]) of every batch of a partition."""
    out = []
    for log in sorted(partition.glob("*.log")):
        data = log.read_bytes()
        at = 0
        while at + 12 <= len(data):
            base, length = struct.unpack_from(">qi", data, at)
            size = 12 + length
            if length <= 0 or at + size > len(data):
                break  # zeros, or a torn batch: not data
            records = kafka_record.MemoryRecords(data[at : at + size])
            batch = records.next_batch()
            out.append((log, at, base, size, [(r.offset, r.timestamp) for r in batch if not getattr(batch, "is_control_batch", False)]))
            at += size
    return out


def _string(data: bytes, at: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", data, at)
    return data[at + 2 : at + 2 + n].decode(), at + 2 + n


def committed(logs: Path) -> dict[tuple[str, str, int], int]:
    """(group, topic, partition) -> the last committed offset (a tombstone removes it)."""
    out: dict[tuple[str, str, int], int] = {}
    for log in sorted((logs / "__consumer_offsets-0").glob("*.log")):
        records = kafka_record.MemoryRecords(log.read_bytes())
        while (batch := records.next_batch()) is not None:
            if batch.is_transactional or batch.is_control_batch:
                continue
            for r in batch:
                (version,) = struct.unpack_from(">h", r.key, 0)
                if version > 1:
                    continue  # group metadata
                group, at = _string(r.key, 2)
                topic, at = _string(r.key, at)
                (partition,) = struct.unpack_from(">i", r.key, at)
                if r.value is None:
                    out.pop((group, topic, partition), None)
                else:
                    out[(group, topic, partition)] = struct.unpack_from(">q", r.value, 2)[0]
    return out


def expected(logs: Path, log_start: dict[str, int]) -> dict[tuple[str, str, int], tuple[int, int, int, int | None]]:
    """(group, topic, partition) -> (log end offset, lag, lag bytes, oldest unconsumed timestamp)."""
    out = {}
    for (group, topic, partition), off in committed(logs).items():
        bs = batches(logs / f"{topic}-{partition}")
        end = max(o for *_, recs in bs for o, _ in recs) + 1
        first = max(off, log_start.get(f"{topic}-{partition}", 0))
        holding = [i for i, b in enumerate(bs) if any(o >= first for o, _ in b[4])]
        if holding:
            i = holding[0]
            ts = next(t for o, t in bs[i][4] if o >= first)
            size = sum(b[3] for b in bs[i:])
        else:
            ts, size = None, 0
        out[(group, topic, partition)] = (end, max(0, end - off), size, ts)
    return out


def log_starts(logs: Path) -> dict[str, int]:
    lines = (logs / "log-start-offset-checkpoint").read_text().split("\n")[2:]
    return {f"{t}-{p}": int(o) for t, p, o in (line.split() for line in lines if line.strip())}


def rows(logs: Path) -> dict[tuple[str, str, int], tuple[int | None, int | None, int | None, int | None]]:
    report = store_lag(logs, "kafka")
    return {(r.group, r.topic, r.queue): (r.log_end_offset, r.lag_messages, r.lag_bytes, r.oldest_unconsumed_timestamp) for r in report.rows}


def test_fixture_lag_equals_independent_reading():
    want = expected(LOGS, log_starts(LOGS))
    assert len(want) >= 3 and all(lag for _, lag, _, _ in want.values())
    assert rows(LOGS) == want
    assert store_lag(LOGS, "kafka").findings == []


def test_torn_tail_of_a_consumed_partition_is_named_as_validate_names_it(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(LOGS, logs)
    last = sorted((logs / "orders-1").glob("*.log"))[-1]
    with open(last, "r+b") as f:
        f.truncate(last.stat().st_size - 7)
    report = store_lag(logs, "kafka")
    validated = validate_path(logs, ValidateOptions(jobs=1), "kafka")
    torn = [(f.code, f.path, f.position) for f in validated.findings if f.path == str(last) and f.level.value != "info"]
    assert torn and [(f.code, f.path, f.position) for f in report.findings] == torn
    row = next(r for r in report.rows if (r.topic, r.queue) == ("orders", 1))
    bs = batches(logs / "orders-1")
    assert row.log_end_offset == max(o for *_, recs in bs for o, _ in recs) + 1  # the torn batch is not data


def test_group_on_a_partition_not_on_disk(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(LOGS, logs)
    shutil.rmtree(logs / "events-0")
    report = store_lag(logs, "kafka")
    gone = [r for r in report.rows if r.topic == "events"]
    assert {r.group for r in gone} == {"audit", "billing"}
    assert all(r.lag_messages is None and r.note == "partition not in this log dir" for r in gone)
