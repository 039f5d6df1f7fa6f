"""Kafka .index/.timeindex codec: spec vectors, real captures, zero tails, lookups, hostile bytes."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError, MqError, TruncatedDataError
from mqtool.formats.kafka import index as ix
from mqtool.formats.segment_names import parse_kafka_file_name
from tests.conftest import real_path

# --- spec vectors -------------------------------------------------------------------------


def test_offset_entry_vector():
    raw = bytes.fromhex("0000000500001040")
    assert ix.encode_offset_entry(ix.OffsetPosition(105, 4160), base_offset=100) == raw
    assert ix.decode_offset_entry(raw, base_offset=100) == ix.OffsetPosition(105, 4160)


def test_time_entry_vector():
    raw = bytes.fromhex("0000018bcfe56800 00000005".replace(" ", ""))
    assert ix.encode_time_entry(ix.TimestampOffset(1700000000000, 105), base_offset=100) == raw
    assert ix.decode_time_entry(raw, base_offset=100) == ix.TimestampOffset(1700000000000, 105)


def test_entry_sizes():
    assert ix.OFFSET_ENTRY_SIZE == 8 and ix.TIME_ENTRY_SIZE == 12


def test_encode_refuses_offsets_outside_int32_relative_range():
    with pytest.raises(ValueError):
        ix.encode_offset_entry(ix.OffsetPosition(99, 0), base_offset=100)
    with pytest.raises(ValueError):
        ix.encode_offset_entry(ix.OffsetPosition(100 + 2**31, 0), base_offset=100)
    with pytest.raises(ValueError):
        ix.encode_offset_entry(ix.OffsetPosition(100, -1), base_offset=100)


def test_encode_refuses_unordered_entries():
    with pytest.raises(ValueError):
        ix.encode_offset_index([ix.OffsetPosition(5, 100), ix.OffsetPosition(5, 200)])
    with pytest.raises(ValueError):
        ix.encode_offset_index([ix.OffsetPosition(5, 100), ix.OffsetPosition(6, 100)])
    with pytest.raises(ValueError):
        ix.encode_time_index([ix.TimestampOffset(10, 5), ix.TimestampOffset(10, 6)])
    with pytest.raises(ValueError):
        ix.encode_time_index([ix.TimestampOffset(10, 5), ix.TimestampOffset(11, 4)])
    # equal offsets with a larger timestamp are allowed in a time index
    ix.encode_time_index([ix.TimestampOffset(10, 5), ix.TimestampOffset(11, 5)])


def test_short_entry_is_truncated():
    with pytest.raises(TruncatedDataError) as info:
        ix.decode_offset_entry(b"\x00" * 7)
    assert info.value.position == 0
    with pytest.raises(TruncatedDataError):
        ix.decode_time_entry(b"\x00" * 11)


# --- walkers and the zero tail ------------------------------------------------------------


def _offsets(n: int, base: int = 0) -> list[ix.OffsetPosition]:
    return [ix.OffsetPosition(base + 3 * i + 2, 4100 * (i + 1)) for i in range(n)]


def test_trimmed_index_ends_at_eof():
    data = ix.encode_offset_index(_offsets(5, 1000), 1000)
    contents = ix.decode_offset_index(data, 1000)
    assert contents.entries == tuple(_offsets(5, 1000))
    assert contents.end == ix.DataEnd("eof", 40)


def test_preallocated_index_stops_at_zero_tail():
    data = ix.encode_offset_index(_offsets(3), size=1001)
    assert len(data) == 1000  # rounded down to a multiple of 8
    walker = ix.OffsetIndexWalker(data)
    assert [p for p, _ in walker] == [0, 8, 16]
    assert walker.end == ix.DataEnd("zeros", 24, 976)
    assert walker.count == 3 and walker.last == _offsets(3)[-1]
    assert ix.index_entry_count(data, ix.OFFSET_ENTRY_SIZE) == 3


def test_time_index_zero_tail_and_partial():
    entries = [ix.TimestampOffset(1000 + i, 10 + i) for i in range(4)]
    data = ix.encode_time_index(entries, 10, size=12 * 10)
    assert ix.decode_time_index(data, 10) == ix.IndexContents(tuple(entries), ix.DataEnd("zeros", 48, 72))
    trimmed = ix.encode_time_index(entries, 10)
    assert ix.decode_time_index(trimmed + b"\x01\x02", 10).end == ix.DataEnd("partial", 48, 2)
    assert ix.decode_time_index(trimmed + b"\x00\x00", 10).end == ix.DataEnd("zeros", 48, 2)


def test_all_zero_first_entry_counts_once():
    # DumpLogSegments prints entry 0 of a fully zero file, then stops: (baseOffset, 0).
    data = bytes(64)
    contents = ix.decode_offset_index(data, 500)
    assert contents.entries == (ix.OffsetPosition(500, 0),)
    assert contents.end == ix.DataEnd("zeros", 8, 56)
    time_contents = ix.decode_time_index(bytes(36), 500)
    assert time_contents.entries == (ix.TimestampOffset(0, 500),)


def test_zero_hole_followed_by_entries_ends_at_the_hole():
    good = ix.encode_offset_index(_offsets(2))
    later = ix.encode_offset_entry(ix.OffsetPosition(100, 90000))
    contents = ix.decode_offset_index(good + bytes(8) + later)
    assert len(contents.entries) == 2
    assert contents.end == ix.DataEnd("zeros", 16, 16)


def test_non_monotonic_entries_raise_with_position():
    data = ix.encode_offset_index(_offsets(3)) + ix.encode_offset_entry(ix.OffsetPosition(1, 99999))
    with pytest.raises(CorruptDataError) as info:
        ix.decode_offset_index(data)
    assert info.value.position == 24
    same_position = ix.encode_offset_index(_offsets(1)) + ix.encode_offset_entry(ix.OffsetPosition(50, 4100))
    with pytest.raises(CorruptDataError) as info:
        ix.decode_offset_index(same_position)
    assert info.value.position == 12
    times = ix.encode_time_index([ix.TimestampOffset(5, 1)]) + ix.encode_time_entry(ix.TimestampOffset(5, 2))
    with pytest.raises(CorruptDataError) as info:
        ix.decode_time_index(times)
    assert info.value.position == 12
    back = ix.encode_time_index([ix.TimestampOffset(5, 3)]) + ix.encode_time_entry(ix.TimestampOffset(6, 2))
    with pytest.raises(CorruptDataError) as info:
        ix.decode_time_index(back)
    assert info.value.position == 20


def test_negative_fields_raise():
    with pytest.raises(CorruptDataError) as info:
        ix.decode_offset_entry(struct.pack(">ii", -1, 5))
    assert info.value.position == 0
    with pytest.raises(CorruptDataError) as info:
        ix.decode_offset_entry(struct.pack(">ii", 1, -5))
    assert info.value.position == 4
    with pytest.raises(CorruptDataError) as info:
        ix.decode_time_entry(struct.pack(">qi", 1, -5))
    assert info.value.position == 8


# --- lookups ------------------------------------------------------------------------------


def test_lookup_offset_semantics():
    entries = [ix.OffsetPosition(110, 4100), ix.OffsetPosition(150, 8300), ix.OffsetPosition(190, 12500)]
    data = ix.encode_offset_index(entries, 100, size=4096)
    assert ix.lookup_offset(data, 100, 99) == ix.OffsetPosition(100, 0)
    assert ix.lookup_offset(data, 100, 109) == ix.OffsetPosition(100, 0)
    assert ix.lookup_offset(data, 100, 110) == entries[0]
    assert ix.lookup_offset(data, 100, 149) == entries[0]
    assert ix.lookup_offset(data, 100, 150) == entries[1]
    assert ix.lookup_offset(data, 100, 10**12) == entries[2]
    assert ix.lookup_offset(b"", 100, 150) == ix.OffsetPosition(100, 0)
    assert ix.lookup_offset(data, 100, 10**12, entries=1) == entries[0]
    with pytest.raises(CorruptDataError):
        ix.lookup_offset(data, 100, 150, entries=10**6)


def test_lookup_timestamp_semantics():
    entries = [ix.TimestampOffset(1000, 3), ix.TimestampOffset(2000, 7), ix.TimestampOffset(3000, 7)]
    data = ix.encode_time_index(entries, 0, size=120)
    assert ix.lookup_timestamp(data, 0, 999) == ix.TimestampOffset(-1, 0)
    assert ix.lookup_timestamp(data, 0, 1000) == entries[0]
    assert ix.lookup_timestamp(data, 0, 2999) == entries[1]
    assert ix.lookup_timestamp(data, 0, 3000) == entries[2]
    assert ix.lookup_timestamp(b"", 7, 5) == ix.TimestampOffset(-1, 7)
    assert ix.last_time_entry(data) == entries[2]
    assert ix.last_time_entry(b"", 42) == ix.TimestampOffset(-1, 42)


@st.composite
def offset_indexes(draw):
    base = draw(st.integers(0, 2**62))
    rels = sorted(draw(st.sets(st.integers(1, 2**31 - 1), max_size=40)))
    positions = sorted(draw(st.sets(st.integers(1, 2**31 - 1), min_size=len(rels), max_size=len(rels))))
    return base, [ix.OffsetPosition(base + r, p) for r, p in zip(rels, positions)]


@st.composite
def time_indexes(draw):
    base = draw(st.integers(0, 2**62))
    stamps = sorted(draw(st.sets(st.integers(1, 2**62), max_size=40)))
    rels = sorted(draw(st.lists(st.integers(0, 2**31 - 1), min_size=len(stamps), max_size=len(stamps))))
    return base, [ix.TimestampOffset(t, base + r) for t, r in zip(stamps, rels)]


def _pad(entries: list, pad: int) -> int:
    """Zero slots after the entries; an all-zero file would read as one (0, 0) entry (rule 2)."""
    return pad if entries else 0


@given(offset_indexes(), st.integers(0, 64))
def test_offset_index_round_trip(index, pad):
    base, entries = index
    pad = _pad(entries, pad)
    data = ix.encode_offset_index(entries, base, size=8 * (len(entries) + pad))
    contents = ix.decode_offset_index(data, base)
    assert contents.entries == tuple(entries)
    assert contents.end.position == 8 * len(entries)
    assert ix.index_entry_count(data, 8) == len(entries)
    for entry in entries:
        assert ix.decode_offset_entry(ix.encode_offset_entry(entry, base), 0, base) == entry


@given(time_indexes(), st.integers(0, 64))
def test_time_index_round_trip(index, pad):
    base, entries = index
    pad = _pad(entries, pad)
    data = ix.encode_time_index(entries, base, size=12 * (len(entries) + pad))
    assert ix.decode_time_index(data, base).entries == tuple(entries)
    assert ix.index_entry_count(data, 12) == len(entries)


@given(offset_indexes(), st.integers(0, 16), st.data())
def test_lookup_offset_matches_brute_force(index, pad, data):
    base, entries = index
    pad = _pad(entries, pad)
    buf = ix.encode_offset_index(entries, base, size=8 * (len(entries) + pad))
    target = data.draw(st.integers(base - 5, base + 2**31 + 5))
    below = [e for e in entries if e.offset <= target]
    expected = below[-1] if below else ix.OffsetPosition(base, 0)
    assert ix.lookup_offset(buf, base, target) == expected


@given(time_indexes(), st.integers(0, 16), st.data())
def test_lookup_timestamp_matches_brute_force(index, pad, data):
    base, entries = index
    pad = _pad(entries, pad)
    buf = ix.encode_time_index(entries, base, size=12 * (len(entries) + pad))
    target = data.draw(st.integers(-5, 2**62 + 5))
    below = [e for e in entries if e.timestamp <= target]
    expected = below[-1] if below else ix.TimestampOffset(-1, base)
    assert ix.lookup_timestamp(buf, base, target) == expected


@given(st.binary(max_size=400), st.integers(0, 2**40), st.integers(-(2**63), 2**63 - 1))
def test_arbitrary_bytes_raise_only_mq_errors(blob, base, target):
    for walker in (ix.OffsetIndexWalker(blob, base), ix.TimeIndexWalker(blob, base)):
        try:
            for _ in walker:
                pass
            assert walker.end is not None and 0 <= walker.end.position <= len(blob)
        except MqError:
            pass
    for decode in (ix.decode_offset_entry, ix.decode_time_entry):
        try:
            decode(blob, 0, base)
        except MqError:
            pass
    for lookup in (ix.lookup_offset, ix.lookup_timestamp):
        try:
            lookup(blob, base, target)
        except MqError:
            pass
    ix.index_entry_count(blob, 8)
    ix.index_entry_count(blob, 12)


# --- real captures ------------------------------------------------------------------------


def _real_files(suffix: str):
    root = real_path("kafka")
    return sorted(p for p in root.rglob(f"*{suffix}") if p.is_file())


def _batch_headers(log: bytes):
    """(position, baseOffset, lastOffset, maxTimestamp) of every v2 batch, parsed by hand."""
    pos = 0
    while pos < len(log):
        base, length = struct.unpack_from(">qi", log, pos)
        (last_delta,) = struct.unpack_from(">i", log, pos + 23)
        (max_ts,) = struct.unpack_from(">q", log, pos + 35)
        yield pos, base, base + last_delta, max_ts
        pos += 12 + length


def test_every_real_index_decodes():
    files = _real_files(".index")
    assert len(files) >= 10
    for path in files:
        base = parse_kafka_file_name(path.name).base_offset
        data = path.read_bytes()
        contents = ix.decode_offset_index(data, base)
        if not data:
            assert contents.entries == () and contents.end == ix.DataEnd("eof", 0)
        log = path.with_suffix(".log")
        if contents.entries and log.exists() and log.stat().st_size:
            positions = {p: last for p, _, last, _ in _batch_headers(log.read_bytes())}
            for entry in contents.entries:
                assert positions.get(entry.position) == entry.offset, path


def test_every_real_timeindex_decodes():
    files = _real_files(".timeindex")
    assert len(files) >= 10
    for path in files:
        base = parse_kafka_file_name(path.name).base_offset
        data = path.read_bytes()
        contents = ix.decode_time_index(data, base)
        assert contents.end.kind == "eof"
        log = path.with_suffix(".log")
        if contents.entries and log.exists():
            # The final entry, written on roll, is the segment's max timestamp with an offset inside
            # the first batch holding it (strict '>' everywhere, so the earliest such batch).  Which
            # offset depends on the path and the Kafka version (upstream LogValidator/LogSegment):
            # - leader appends of uncompressed batches (LogValidator.assignOffsetsNonCompressed),
            #   Kafka <= 3.7.x: the offset of the first *record* carrying the max timestamp, any
            #   offset of the batch (KAFKA-16341 was backported to 3.6.2/3.7.1 and reverted there);
            #   rjmfernandes-flink-on-prem (Kafka 3.6) indexes 1562, the first of batch 1562..1563;
            # - Kafka >= 3.8.0 (KAFKA-16341, KAFKA-16310: LogSegment's shallowOffsetOfMaxTimestamp),
            #   and in every version compressed leader appends, follower appends and
            #   LogSegment.recover: the batch's last offset.
            batches = list(_batch_headers(log.read_bytes()))
            _, base_offset, last_offset, max_ts = max(batches, key=lambda b: b[3])
            last = contents.entries[-1]
            assert last.timestamp == max_ts and base_offset <= last.offset <= last_offset, path


def test_real_rolled_timeindex_by_hand():
    # SOURCE.md: the older segment of __consumer_offsets-39 has a 0-byte .index and one
    # 12-byte .timeindex entry; the next segment starts at 18, so the entry is offset 17.
    part = real_path("kafka", "DonaldY-kafka-2.7.1", "kafka-logs", "__consumer_offsets-39")
    assert (part / "00000000000000000000.index").read_bytes() == b""
    assert (part / "00000000000000000018.log").exists()
    contents = ix.decode_time_index((part / "00000000000000000000.timeindex").read_bytes(), 0)
    assert contents.entries == (ix.TimestampOffset(0x1888260A41E, 17),)
    assert ix.lookup_timestamp((part / "00000000000000000000.timeindex").read_bytes(), 0, 0x1888260A41E) == (
        ix.TimestampOffset(1685814551582, 17)
    )
    offsets_17 = real_path("kafka", "DonaldY-kafka-2.7.1", "kafka-logs", "__consumer_offsets-17")
    assert ix.decode_time_index((offsets_17 / "00000000000000000000.timeindex").read_bytes()).entries == (
        ix.TimestampOffset(1670071252901, 0),
    )


def test_real_preallocated_all_zero_index():
    # INDEX.md: a 1 MiB all-zero pre-allocated .index from a 2015 test broker (empty .log).
    path = real_path(
        "kafka", "apache-kafka", "904af08e24", "core", "data", "kafka-939818", "test-topic-1", "00000000000000000000.index"
    )
    data = path.read_bytes()
    assert len(data) == 1048576
    contents = ix.decode_offset_index(data, 0)
    assert contents.entries == (ix.OffsetPosition(0, 0),)
    assert contents.end == ix.DataEnd("zeros", 8, 1048568)
    assert ix.index_entry_count(data, 8) == 1
    assert ix.lookup_offset(data, 0, 12345) == ix.OffsetPosition(0, 0)



def test_peeks_read_entries_as_stored():
    """The entry peeks return the raw fields, unjudged (a negative relativeOffset too)."""
    raw = ix.OFFSET_ENTRY.pack(-3, 4096) + ix.OFFSET_ENTRY.pack(7, 8192)
    assert ix.peek_relative_offset(raw) == -3 and ix.peek_log_position(raw) == 4096
    assert ix.peek_relative_offset(raw, 8) == 7 and ix.peek_log_position(raw, 8) == 8192
    assert ix.peek_timestamp(ix.TIME_ENTRY.pack(-1, 5)) == -1
    for peek in (ix.peek_relative_offset, ix.peek_log_position):
        with pytest.raises(TruncatedDataError):
            peek(raw[:7])
    with pytest.raises(TruncatedDataError):
        ix.peek_timestamp(bytes(11))
