"""``recover``'s plan for Kafka reads each log byte once, and again only what the plan itself is
about (issue 27, point 3): the records a cut drops are counted once for the plan and its restart
preview, a later segment the store model's reading read whole as valid batches is counted from
that reading, and a zero run is read to its end only (``LogFileWalk.data_after_zeros``)."""

from __future__ import annotations

from pathlib import Path

from mqtool.formats.kafka import record_batch as rb
from mqtool.ops.recover.kafka import plan_kafka
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, count_reads
from mqtool.store.kafka_writer import PartitionConfig, PartitionWriter


def _partition(root: Path) -> list[Path]:
    part = root / "orders-0"
    part.mkdir(parents=True)
    writer = PartitionWriter(part, PartitionConfig(segment_bytes=1 << 20), snapshots=False)
    for b in range(2400):
        records = [rb.Record(offset_delta=i, timestamp_delta=i, key=b"k%d" % i, value=b"v" * 200) for i in range(4)]
        writer.append(rb.build_batch(records, base_timestamp=1_700_000_000_000 + b))
    writer.close()
    return sorted(part.glob("*.log"))


def _records(log: Path, start: int = 0) -> int:
    with ReadOnlyFile(log) as f:
        return sum(e.header.records_count for _p, e in ks.LogFileWalk(f, start, mode="header"))


def test_a_cut_is_counted_once_and_later_segments_from_the_reading(tmp_path) -> None:
    logs = _partition(tmp_path / "store")
    assert len(logs) == 3
    first = logs[0]
    with ReadOnlyFile(first) as f:
        positions = [p for p, _e in ks.LogFileWalk(f, 0, mode="framing")]
    cut, after = positions[len(positions) // 4], positions[len(positions) // 4 + 1]
    raw = bytearray(first.read_bytes())
    raw[cut + 40] ^= 0xFF  # a byte of a batch's records: its CRC fails, recovery truncates there
    first.write_bytes(bytes(raw))
    with count_reads() as reads:
        plan = plan_kafka(tmp_path / "store")
    # every valid record after the cut: the rest of the first segment and every later segment
    assert plan.records_dropped == _records(first, after) + sum(_records(log) for log in logs[1:])
    restart = plan.facts["restart"]["drops"]
    assert restart["records"] == _records(first, after) + sum(_records(log) for log in logs[1:])
    total = sum(log.stat().st_size for log in logs)
    tail = first.stat().st_size - cut
    read = sum(n for p, n in reads.items() if p.endswith(".log"))
    # the reading, the count of what follows the cut, the quarantine's CRC of the bytes it cuts
    assert read <= total + 2 * tail + (64 << 10), (read, total, tail)


def test_a_zero_run_is_read_to_its_end_only(tmp_path) -> None:
    """A segment whose zero run follows its last batch and precedes more data: the walks find
    where the data resumes without reading the file after it twice."""
    logs = _partition(tmp_path / "store")
    first = logs[0]
    with ReadOnlyFile(first) as f:
        positions = [p for p, _e in ks.LogFileWalk(f, 0, mode="framing")]
    start, stop = positions[100], positions[200]
    raw = bytearray(first.read_bytes())
    raw[start:stop] = bytes(stop - start)
    first.write_bytes(bytes(raw))
    with ReadOnlyFile(first) as f:
        with count_reads() as reads:
            walk = ks.LogFileWalk(f, 0, mode="framing")
            assert sum(1 for _ in walk) == 100
            assert walk.end is not None and walk.end.kind == "zeros" and walk.data_after_zeros is not None
        assert 0 <= walk.data_after_zeros - stop < 17  # the next batch's first non-zero byte
        assert sum(reads.values()) <= stop + (1 << 20), dict(reads)  # not the file after the run again
        assert walk.garbage_after_zeros == (walk.data_after_zeros, len(first.read_bytes().rstrip(b"\x00")))  # read when asked
