"""info for Kafka takes each partition's first entry and active segment from the store model's
one reading: the same answers as walking them on their own (the walks info made before, kept
here as the reference), on healthy and damaged active segments."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtool.errors import MqError
from mqtool.formats.kafka import record_batch as rb
from mqtool.ops.info.kafka import kafka_info
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile
from mqtool.store.kafka_writer import PartitionConfig, PartitionWriter


def _partition(root: Path) -> Path:
    part = root / "orders-0"
    part.mkdir(parents=True)
    writer = PartitionWriter(part, PartitionConfig(segment_bytes=24 << 10, index_interval_bytes=1024), snapshots=False)
    offset = 0
    while offset < 300:
        records = [rb.Record(offset_delta=i, timestamp_delta=i * 7, key=b"k%d" % (offset + i), value=bytes(range(offset % 50, offset % 50 + 90))) for i in range(3)]
        writer.append(rb.build_batch(records, base_offset=offset, base_timestamp=1_700_000_000_000 + offset * 11))
        offset += 3
    writer.close()
    # the active segment's offset index lags its appends by a few batches
    index = sorted(p for p in part.glob("*.index") if p.stat().st_size)[-1]
    index.write_bytes(index.read_bytes()[:-16])
    return part


def _reference(part_path: Path) -> tuple[int | None, int | None, str | None, list[str], int | None]:
    """(last offset, max timestamp, end kind, errors, first timestamp) as info walked them itself:
    the first entry of the first segment holding bytes, and the last one holding bytes walked from
    its last ``.index`` entry (from its start when no batch reads there)."""
    part = ks.open_kafka(part_path).partitions[0]
    segments = part.log_segments()
    errors: list[str] = []
    first_ts = None
    holding = [s for s in segments if s.log_size]
    if holding:
        with ReadOnlyFile(holding[0].log) as f:
            for _pos, entry in ks.LogFileWalk(f, 0, mode="full", check_crc=False):
                first_ts = entry.records[0].timestamp if entry.records else None
                break
    seg = holding[-1] if holding else segments[0]
    try:
        entry, slot = ks.lookup_offset(seg.index, seg.base_offset, 2**63 - 1)
        position = entry.position if slot >= 0 else 0
    except MqError:
        position = 0
    last = max_ts = None
    end = None
    with ReadOnlyFile(seg.log) as f:
        if position >= f.size:
            position = 0
        for attempt in (position, 0) if position else (0,):
            walk = ks.LogFileWalk(f, attempt, mode="header", check_crc=True)
            for _pos, e in walk:
                last = e.last_offset
                h = e.header
                ts = h.max_timestamp if isinstance(h, rb.BatchHeader) else h.timestamp
                max_ts = ts if max_ts is None else max(max_ts, ts)
            if walk.count == 0 and attempt:
                continue
            end = "corrupt" if walk.error is not None else walk.end.kind
            if walk.error is not None:
                errors.append(str(walk.error))
            break
    for seg in segments:  # the last time-index entry of every segment, as info adds them
        try:
            entry = ks.last_time_entry(seg.timeindex, seg.base_offset)
        except MqError:
            continue
        if last is not None and entry.offset > last:
            continue
        if entry.timestamp >= 0:
            max_ts = entry.timestamp if max_ts is None else max(max_ts, entry.timestamp)
    return last, max_ts, end, errors, first_ts


def _last_log(part: Path) -> Path:
    return sorted(p for p in part.glob("*.log") if p.stat().st_size)[-1]


def _batches(log: Path) -> list[tuple[int, int]]:
    with ReadOnlyFile(log) as f:
        return [(pos, e.size) for pos, e in ks.LogFileWalk(f, 0, mode="framing")]


def _last_index_position(log: Path) -> int:
    seg = next(s for s in ks.open_kafka(log.parent).partitions[0].log_segments() if s.log == log)
    entry, _slot = ks.lookup_offset(seg.index, seg.base_offset, 2**63 - 1)
    return entry.position


def _damage(part: Path, kind: str) -> None:
    log = _last_log(part)
    data = bytearray(log.read_bytes())
    batches = _batches(log)
    indexed = _last_index_position(log)
    after = [b for b in batches if b[0] > indexed]
    before = [b for b in batches if b[0] < indexed]
    if kind == "torn-tail":
        del data[-20:]
    elif kind == "torn-at-the-index-entry":
        del data[indexed + 30 :]
    elif kind == "crc-after-the-index-entry":
        data[after[0][0] + 70] ^= 0x01
    elif kind == "crc-before-the-index-entry":
        data[before[-1][0] + 70] ^= 0x01
    elif kind == "crc-at-the-index-entry":
        data[indexed + 70] ^= 0x01
    elif kind == "magic-after-the-index-entry":
        data[after[0][0] + 16] = 9
    elif kind == "zero-tail":
        data += bytes(300)
    elif kind == "zeros-then-data":
        data += bytes(300) + bytes(data[batches[0][0] : batches[0][0] + batches[0][1]])
    elif kind == "index-misaligned":
        index = log.with_suffix(".index")
        raw = bytearray(index.read_bytes())
        n = len(raw) // 8
        last_pos = int.from_bytes(raw[(n - 1) * 8 + 4 : n * 8], "big")
        raw[(n - 1) * 8 + 4 : n * 8] = (last_pos + 5).to_bytes(4, "big")
        index.write_bytes(bytes(raw))
        return
    elif kind == "empty-last-segment":
        (part / f"{99999:020d}.log").write_bytes(b"")
        return
    log.write_bytes(bytes(data))


KINDS = [
    "healthy",
    "torn-tail",
    "torn-at-the-index-entry",
    "crc-after-the-index-entry",
    "crc-before-the-index-entry",
    "crc-at-the-index-entry",
    "magic-after-the-index-entry",
    "zero-tail",
    "zeros-then-data",
    "index-misaligned",
    "empty-last-segment",
]


@pytest.mark.parametrize("kind", KINDS)
def test_info_reads_the_ends_of_a_partition_as_walking_them_alone(tmp_path: Path, kind: str) -> None:
    part = _partition(tmp_path / "logs")
    if kind != "healthy":
        _damage(part, kind)
    last, max_ts, end_kind, errors, first_ts = _reference(part)
    info = kafka_info(part)
    row = info.partitions[0]
    assert row.end_kind == end_kind
    assert row.log_end_offset == last + 1
    assert row.first_timestamp == first_ts
    assert row.max_timestamp == max_ts
    assert row.magic == [2] and row.compression == ["none"]
    for error in errors:
        assert any(error in text for text in info.errors), (error, info.errors)
    assert bool(errors) == (end_kind == "corrupt")
