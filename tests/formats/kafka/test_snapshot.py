"""Producer-state .snapshot codec: spec vector, every real capture, CRC, round trips, hostile bytes."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import ChecksumError, CorruptDataError, MqError, TruncatedDataError
from mqtool.formats.checksums import crc32c
from mqtool.formats.kafka import snapshot as sn
from mqtool.formats.segment_names import parse_kafka_file_name
from tests.conftest import real_path

EMPTY = bytes.fromhex("0001 48674bc7 00000000".replace(" ", ""))


def test_crc_vectors():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"\x00\x00\x00\x00") == 0x48674BC7


def test_empty_snapshot_vector():
    assert sn.encode_snapshot(sn.ProducerSnapshot()) == EMPTY
    decoded = sn.decode_snapshot(EMPTY)
    assert decoded == sn.ProducerSnapshot(())
    assert decoded.crc == 0x48674BC7
    assert sn.peek_snapshot(EMPTY) == (1, 0x48674BC7, 0)


def test_layout_sizes():
    assert sn.ENTRY_SIZE == 46
    assert sn.ENTRIES_POSITION == 10
    assert sn.CRC_START == 6


def test_entry_layout_by_hand():
    entry = sn.ProducerEntry(4001, 2, 11, 37, 2, 1700000000000, 5, 30)
    data = sn.encode_snapshot(sn.ProducerSnapshot((entry,)))
    assert len(data) == 56
    assert struct.unpack_from(">hIi", data) == (1, crc32c(data[6:]), 1)
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (4001, 2, 11, 37, 2, 1700000000000, 5, 30)
    assert entry.first_sequence == 9 and entry.first_offset == 35
    assert entry.has_batch_metadata and entry.has_ongoing_transaction


def test_first_sequence_wraps():
    # DefaultRecordBatch.decrementSequence: sequences wrap at Integer.MAX_VALUE.
    assert sn.ProducerEntry(1, last_sequence=1, offset_delta=3).first_sequence == 2**31 - 2
    assert not sn.ProducerEntry(1).has_batch_metadata
    assert not sn.ProducerEntry(1).has_ongoing_transaction


def test_unknown_version():
    data = bytearray(EMPTY)
    data[1] = 2
    with pytest.raises(CorruptDataError) as info:
        sn.decode_snapshot(bytes(data))
    assert info.value.position == 0


def test_crc_mismatch():
    data = bytearray(sn.encode_snapshot(sn.ProducerSnapshot((sn.ProducerEntry(1, 0, 0, 0, 0, 0, 0, -1),))))
    data[20] ^= 0x40
    with pytest.raises(ChecksumError) as info:
        sn.decode_snapshot(bytes(data))
    assert info.value.position == 2
    assert sn.decode_snapshot(bytes(data), check_crc=False).entries[0].last_sequence != 0


def test_partial_write_and_null_array():
    full = sn.encode_snapshot(sn.ProducerSnapshot(tuple(sn.ProducerEntry(i) for i in range(3))))
    with pytest.raises(TruncatedDataError) as info:
        sn.decode_snapshot(full[:-1])
    assert info.value.position == 10
    with pytest.raises(TruncatedDataError):
        sn.decode_snapshot(b"")
    with pytest.raises(TruncatedDataError):
        sn.decode_snapshot(EMPTY[:9])
    null = bytearray(EMPTY)
    null[6:10] = b"\xff\xff\xff\xff"
    with pytest.raises(CorruptDataError) as info:
        sn.decode_snapshot(bytes(null))
    assert info.value.position == 6


def test_trailing_bytes():
    stale = EMPTY + b"\x00" * 46
    with pytest.raises(ChecksumError):  # the CRC covers the stale tail: upstream's verdict too
        sn.decode_snapshot(stale)
    fixed = bytearray(stale)
    struct.pack_into(">I", fixed, 2, crc32c(bytes(fixed[6:])))
    with pytest.raises(CorruptDataError) as info:
        sn.decode_snapshot(bytes(fixed))
    assert info.value.position == 10


def test_encode_refuses_bad_values():
    with pytest.raises(ValueError):
        sn.encode_snapshot(sn.ProducerSnapshot((sn.ProducerEntry(1, epoch=40000),)))
    with pytest.raises(ValueError):
        sn.encode_snapshot(sn.ProducerSnapshot((), version=2))


INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
entries = st.builds(sn.ProducerEntry, INT64, INT16, INT32, INT64, INT32, INT64, INT32, INT64)


@given(st.lists(entries, max_size=12))
def test_round_trip(items):
    snapshot = sn.ProducerSnapshot(tuple(items))
    data = sn.encode_snapshot(snapshot)
    decoded = sn.decode_snapshot(data)
    assert decoded == snapshot
    assert sn.encode_snapshot(decoded) == data


@given(st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_mq_errors(blob):
    for check in (True, False):
        try:
            sn.decode_snapshot(blob, check_crc=check)
        except MqError:
            pass
    try:
        sn.peek_snapshot(blob)
    except MqError:
        pass


@given(st.binary(min_size=0, max_size=200))
def test_valid_header_with_arbitrary_body(body):
    data = bytearray(struct.pack(">hIi", 1, 0, len(body) // 46) + body)
    struct.pack_into(">I", data, 2, crc32c(bytes(data[6:])))
    try:
        sn.decode_snapshot(bytes(data))
    except CorruptDataError:
        assert len(body) % 46
    else:
        assert len(body) % 46 == 0


# --- real captures ------------------------------------------------------------------------


def test_every_real_snapshot_decodes_and_re_encodes():
    files = sorted(real_path("kafka").rglob("*.snapshot"))
    assert len(files) >= 10
    for path in files:
        data = path.read_bytes()
        snapshot = sn.decode_snapshot(data)
        assert sn.encode_snapshot(snapshot) == data, path
        assert parse_kafka_file_name(path.name).kind == "snapshot"


def test_real_empty_snapshot_is_the_spec_vector():
    path = real_path(
        "kafka", "DonaldY-kafka-2.7.1", "kafka-logs", "__consumer_offsets-17", "00000000000000000001.snapshot"
    )
    assert path.read_bytes() == EMPTY


def test_real_snapshot_with_entries_by_hand():
    # SOURCE.md: myTopic-0/00000000000000000038.snapshot, 148 bytes, version 1, 3 producers.
    path = real_path("kafka", "DonaldY-kafka-2.7.1", "kafka-logs", "myTopic-0", "00000000000000000038.snapshot")
    data = path.read_bytes()
    assert len(data) == 148
    snapshot = sn.decode_snapshot(data)
    assert snapshot.crc == 0x1A3A695A
    assert [e.producer_id for e in snapshot.entries] == [4001, 4002, 4003]
    first = snapshot.entries[0]
    assert (first.epoch, first.last_sequence, first.last_offset, first.offset_delta) == (0, 11, 11, 2)
    assert first.timestamp == 0x184D7D15005
    assert first.coordinator_epoch == -1 and first.current_txn_first_offset == -1
    # the last producer wrote offset 37; the snapshot is named after the next offset, 38
    assert snapshot.entries[-1].last_offset == 37
    assert parse_kafka_file_name(path.name).base_offset == 38
