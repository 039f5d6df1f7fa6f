"""recover's plan takes each segment's ``LogSegment.recover`` from the store model's one reading
(``RecoveryReading``): the same scan as ``scan_segment`` running it over a walk of its own, on
healthy and damaged segments, whatever the piece size the reading reads the log in."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.formats.kafka import record_batch as rb
from mqtool.ops.log_findings import LOG, select
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, read_in_pieces
from mqtool.store.kafka_writer import PartitionConfig, PartitionWriter
from mqtool.store.model import kafka as km
from mqtool.store.model.kafka_recovery import DEFAULT_INTERVAL, RecoveryReading, batch_starts, scan_segment


def _partition(root: Path) -> Path:
    part = root / "orders-0"
    part.mkdir(parents=True)
    writer = PartitionWriter(part, PartitionConfig(segment_bytes=16 << 10, index_interval_bytes=1024), snapshots=False)
    offset = 0
    while offset < 600:
        records = [rb.Record(offset_delta=i, timestamp_delta=i * 5, key=b"k%d" % (offset + i), value=bytes(range(offset % 40, offset % 40 + 70))) for i in range(4)]
        writer.append(rb.build_batch(records, base_offset=offset, base_timestamp=1_700_000_000_000 + offset * 13))
        offset += 4
    writer.close()
    return part


def _damage(part: Path, kind: str) -> None:
    logs = sorted(part.glob("*.log"))
    log = logs[1] if kind.endswith("-middle") else logs[-1]
    data = bytearray(log.read_bytes())
    with ReadOnlyFile(log) as f:
        starts = [pos for pos, _e in ks.LogFileWalk(f, 0, mode="framing")]
    at = starts[len(starts) // 2]
    if kind.startswith("crc"):
        data[at + 80] ^= 0x04
    elif kind.startswith("magic"):
        data[at + 16] = 7
    elif kind.startswith("torn"):
        del data[at + 40 :]
    elif kind.startswith("zeros-then-data"):
        data[at:at] = bytes(100)
    elif kind.startswith("zero-tail"):
        data += bytes(333)
    elif kind.startswith("offsets-below-base"):
        data[at : at + 8] = (0).to_bytes(8, "big")
    elif kind.startswith("offsets-back"):  # to the segment's base offset: an index point goes back
        data[at : at + 8] = data[0:8]
    log.write_bytes(bytes(data))


KINDS = [
    "healthy",
    "crc-last",
    "crc-middle",
    "magic-last",
    "torn-last",
    "torn-middle",
    "zeros-then-data-last",
    "zero-tail-middle",
    "offsets-below-base-last",
    "offsets-back-last",
]


@pytest.mark.parametrize("piece", [None, 100, 777])
@pytest.mark.parametrize("kind", KINDS)
def test_the_reading_folds_each_segment_as_scan_segment_does(tmp_path: Path, kind: str, piece: int | None) -> None:
    part = _partition(tmp_path / "logs")
    if kind != "healthy":
        _damage(part, kind)
    store = ks.open_kafka(part)
    segments = store.partitions[0].log_segments()
    assert len(segments) >= 3
    intervals = {str(seg.log): 200 if i % 2 else DEFAULT_INTERVAL for i, seg in enumerate(segments)}
    reading = RecoveryReading(store, LOG)
    if piece is None:
        got = {log: reading.scan(log, seg.base_offset, intervals[log]) for seg in segments for log in [str(seg.log)]}
        found = reading.findings
    else:
        with read_in_pieces(piece):
            got = {log: reading.scan(log, seg.base_offset, intervals[log]) for seg in segments for log in [str(seg.log)]}
            found = reading.findings
    for seg in segments:
        assert seg.log is not None
        assert got[str(seg.log)] == scan_segment(seg.log, seg.base_offset, intervals[str(seg.log)]), seg.log
    # the findings the plan reports are validate's, from the same reading
    assert select(found) == select(list(km.findings(ks.open_kafka(part), checks=LOG)))


def test_batch_starts_reads_headers_as_a_framing_walk_does(tmp_path: Path) -> None:
    part = _partition(tmp_path / "logs")
    _damage(part, "magic-last")
    for log in sorted(part.glob("*.log")):
        with ReadOnlyFile(log) as f:
            walked = [pos for pos, _e in ks.LogFileWalk(f, 0, mode="framing")]
            size = f.size
        for upto in (0, 17, 500, size // 2, size, size + 10):
            expected = [p for p in walked if p < upto]
            got = batch_starts(log, upto)
            # the entries that end by ``upto`` (a framing walk limited there)
            with ReadOnlyFile(log) as f:
                limited = [pos for pos, _e in ks.LogFileWalk(f, 0, mode="framing", limit=min(size, upto))]
            assert got == limited, (log, upto)
            assert set(got) <= set(expected)


def _embedding(root: Path) -> Path:
    """A partition whose last segment holds, in the middle, a batch whose record value is a whole
    valid batch: once the outer batch's CRC fails, ``count_valid_from``'s search finds the inner
    one, where the model's walk does not go (it steps over the outer batch)."""
    part = _partition(root)
    log = sorted(part.glob("*.log"))[-1]
    data = bytearray(log.read_bytes())
    with ReadOnlyFile(log) as f:
        starts = [pos for pos, _e in ks.LogFileWalk(f, 0, mode="framing")]
    at = starts[len(starts) // 2]
    ts = 1_700_000_000_000
    inner = rb.encode_batch(rb.build_batch([rb.Record(offset_delta=0, timestamp_delta=0, key=b"in", value=b"inner")], base_offset=10**9, base_timestamp=ts))
    base = int.from_bytes(data[at : at + 8], "big")
    outer = bytearray(rb.encode_batch(rb.build_batch([rb.Record(offset_delta=0, timestamp_delta=0, key=b"out", value=inner)], base_offset=base, base_timestamp=ts)))
    outer[22] ^= 0x01  # its CRC fails (the attributes' byte, before the records)
    data[at:at] = outer
    log.write_bytes(bytes(data))
    return part


def _look_alike(root: Path) -> Path:
    """Batches whose records hold what looks like a batch header (magic 2, a size running about
    5,400 bytes on: past the bytes a walk reading in pieces of 5,000 has in hand), a batch in the
    middle of the middle segment broken: the count of what a cut drops meets false starts in it,
    which read bytes the walk reads next (``CutFold.ahead``)."""
    part = root / "orders-0"
    part.mkdir(parents=True)
    writer = PartitionWriter(part, PartitionConfig(segment_bytes=16 << 10, index_interval_bytes=1024), snapshots=False)
    offset = 0
    while offset < 300:
        header = (10**6 + offset).to_bytes(8, "big") + (5600 - offset).to_bytes(4, "big") + bytes(4) + b"\x02"
        records = [rb.Record(offset_delta=i, timestamp_delta=i, key=b"k%d" % (offset + i), value=bytes(range(i, i + 30)) + header + bytes(20)) for i in range(4)]
        writer.append(rb.build_batch(records, base_offset=offset, base_timestamp=1_700_000_000_000 + offset))
        offset += 4
    writer.close()
    _damage(part, "crc-middle")
    return part


CUT_KINDS = [*KINDS, "embedded", "look-alike", "crc-and-torn-last", "crc-and-zeros-last", "garbage-last"]


@pytest.mark.parametrize("piece", [None, 100, 777, 5000])
@pytest.mark.parametrize("kind", CUT_KINDS)
def test_the_reading_says_what_a_cut_removes(tmp_path: Path, kind: str, piece: int | None) -> None:
    """What recover's cut of a segment drops and removes -- ``count_valid_from`` at the cut, the
    CRC-32 of the bytes from there on, and ``count_valid_from`` from position 0 (a cut in an earlier
    segment) -- comes from the store model's walk of the segment, equal to reading the file for
    them, whatever the piece size (issue 27: recover's plan reads each log byte once on a damaged
    store too)."""
    from mqtool.store.model.kafka_recovery import count_valid_from
    from mqtool.store.quarantine import region_crc

    if kind == "embedded":
        part = _embedding(tmp_path / "logs")
    elif kind == "look-alike":
        part = _look_alike(tmp_path / "logs")
    else:
        part = _partition(tmp_path / "logs")
        if kind == "crc-and-torn-last":
            _damage(part, "crc-last")
            log = sorted(part.glob("*.log"))[-1]
            log.write_bytes(log.read_bytes()[:-30])
        elif kind == "crc-and-zeros-last":  # the last batch's CRC fails, a pre-allocated tail follows
            log = sorted(part.glob("*.log"))[-1]
            data = bytearray(log.read_bytes())
            data[-5] ^= 0x10
            log.write_bytes(bytes(data) + bytes(5000))
        elif kind == "garbage-last":
            log = sorted(part.glob("*.log"))[-1]
            log.write_bytes(log.read_bytes() + bytes(range(7, 250)) * 9)
        elif kind != "healthy":
            _damage(part, kind)
    store = ks.open_kafka(part)
    segments = store.partitions[0].log_segments()
    reading = RecoveryReading(store, LOG)
    with read_in_pieces(piece) if piece is not None else read_in_pieces(1 << 20):
        scans = {str(seg.log): reading.scan(str(seg.log), seg.base_offset, DEFAULT_INTERVAL) for seg in segments}
    cuts = 0
    for seg in segments:
        assert seg.log is not None
        scan = scans[str(seg.log)]
        assert scan is not None
        # what a cut in an earlier segment drops of this one
        assert reading.valid_records(str(seg.log)) == count_valid_from(seg.log, 0), seg.log
        if scan.cut == 0 or scan.end == "invalid-offset":
            assert scan.cut_crc is None and scan.cut_records is None
            continue
        cuts += 1
        assert scan.cut_crc == region_crc(seg.log, scan.valid_bytes, scan.cut), seg.log
        assert scan.cut_records == count_valid_from(seg.log, scan.valid_bytes), seg.log
    assert cuts or kind in ("healthy", "offsets-back-last", "offsets-below-base-last")


_FETCH_BLOB = bytes((i * 7919 + (i >> 8)) & 0xFF for i in range(60_000))


@settings(max_examples=60)
@given(st.data())
def test_a_cut_fold_reads_each_byte_from_the_file_once(tmp_path_factory, data) -> None:
    """``CutFold.fetch`` answers every read with the file's bytes; the checker's walk (reads of
    4 KiB and more, each starting a little before the last one's end, where a piece cuts an
    entry) and the counts' reads from the start of the checker's last piece on (a search inside
    the entry the walk just read, a false start claiming bytes past them) read each byte of the
    file from disk once: what a count reads ahead of the walk is kept for it."""
    from mqtool.store.files import count_reads
    from mqtool.store.model.kafka_recovery import CutFold

    path = tmp_path_factory.mktemp("fetch") / "00000000000000000000.log"
    path.write_bytes(_FETCH_BLOB)
    size = len(_FETCH_BLOB)
    with ReadOnlyFile(path) as f, count_reads() as reads:
        cut = CutFold(f, 0)
        pos = last = 0
        while pos < size:
            for _ in range(data.draw(st.integers(0, 3))):
                p = data.draw(st.integers(last, min(size, pos + 20_000)))
                n = data.draw(st.integers(0, 20_000))
                assert cut.fetch(p, n, ahead=True) == _FETCH_BLOB[p : p + n]
            n = data.draw(st.integers(4096, 12_000))
            got = cut.fetch(pos, n, ahead=False)
            assert got == _FETCH_BLOB[pos : pos + n]
            cut.read(pos, got)
            last = pos
            pos += len(got) - (data.draw(st.integers(0, 100)) if pos + len(got) < size else 0)
    assert reads[str(path)] <= size
