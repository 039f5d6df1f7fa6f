"""checkpoint, abort and lock files (spec §6, §7.1)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError, MqError, TruncatedDataError
from mqtool.formats.rocketmq.checkpoint import (
    CHECKPOINT_SIZE,
    CHECKPOINT_USED_SIZE,
    CONFIRM_PHY_OFFSET_POSITION,
    MASTER_FLUSHED_OFFSET_POSITION,
    Checkpoint,
    decode_abort,
    decode_checkpoint,
    decode_lock,
    encode_abort,
    encode_checkpoint,
    encode_lock,
)
from tests.conftest import real_path

LONG = st.integers(-(2**63), 2**63 - 1)


def test_layout_constants():
    assert CHECKPOINT_SIZE == 4096
    assert MASTER_FLUSHED_OFFSET_POSITION == 24
    assert CONFIRM_PHY_OFFSET_POSITION == 32
    assert CHECKPOINT_USED_SIZE == 40


def test_real_zero_checkpoint():
    data = real_path("rocketmq", "EricPanGopher-rocketmq", "store", "unit_test_store", "checkpoint").read_bytes()
    assert len(data) == CHECKPOINT_SIZE
    cp = decode_checkpoint(data)
    assert cp == Checkpoint(0, 0, 0, 0, 0)
    assert cp.min_timestamp() == 0 and cp.min_timestamp_index() == 0
    assert cp.min_version is None
    assert encode_checkpoint(cp) == data


def test_real_shaoxubao_checkpoint():
    data = real_path("rocketmq", "Shaoxubao-rocketmq-study", "store", "checkpoint").read_bytes()
    cp = decode_checkpoint(data)
    assert cp == Checkpoint(1551626238066, 1551626238066, 0, 0, 0)
    assert cp.min_timestamp() == 1551626238066 - 3000
    assert cp.min_timestamp_index() == 0
    assert encode_checkpoint(cp) == data


def test_real_liushangqing_checkpoint():
    data = real_path("rocketmq", "liushangqing9803-rocketmq-tech", "store", "checkpoint").read_bytes()
    cp = decode_checkpoint(data)
    assert cp.physic_msg_timestamp == cp.logics_msg_timestamp == 0x0000018A6E4382A9
    assert cp.index_msg_timestamp == 0
    assert encode_checkpoint(cp) == data


def test_short_buffers():
    three = struct.pack(">qqq", 10_000, 20_000, 5)
    assert decode_checkpoint(three) == Checkpoint(10_000, 20_000, 5, None, None)
    four = three + struct.pack(">q", 77)
    assert decode_checkpoint(four) == Checkpoint(10_000, 20_000, 5, 77, None)
    assert decode_checkpoint(four + bytes(7)).confirm_phy_offset is None
    with pytest.raises(TruncatedDataError) as info:
        decode_checkpoint(three[:23])
    assert info.value.position == 0


def test_encode_none_fields_as_zero():
    page = encode_checkpoint(Checkpoint(1, 2, 3))
    assert len(page) == CHECKPOINT_SIZE
    assert page[24:] == bytes(CHECKPOINT_SIZE - 24)
    assert decode_checkpoint(page) == Checkpoint(1, 2, 3, 0, 0)
    with pytest.raises(ValueError):
        encode_checkpoint(Checkpoint(2**63, 0, 0))


def test_min_timestamps():
    assert Checkpoint(10_000, 5_000, 0).min_timestamp() == 2_000
    assert Checkpoint(10_000, 2_999, 0).min_timestamp() == 0
    assert Checkpoint(10_000, 20_000, 4_000).min_timestamp_index() == 4_000
    assert Checkpoint(10_000, 20_000, 9_000).min_timestamp_index() == 7_000
    # Java long arithmetic: Long.MIN_VALUE - 3000 wraps to a large positive value
    assert Checkpoint(-(2**63), 0, 0).min_timestamp() == 2**63 - 3000


def test_min_version_hint():
    assert Checkpoint(1, 1, 1, 0, 0).min_version is None
    assert Checkpoint(1, 1, 1).min_version is None
    assert Checkpoint(1, 1, 1, 4096, 0).min_version == "5.0.0"
    assert Checkpoint(1, 1, 1, 4096, 8192).min_version == "5.1.1"


@given(LONG, LONG, LONG, LONG, LONG)
def test_checkpoint_round_trip(physic, logics, index, master, confirm):
    cp = Checkpoint(physic, logics, index, master, confirm)
    page = encode_checkpoint(cp)
    assert len(page) == CHECKPOINT_SIZE
    assert decode_checkpoint(page) == cp
    low = min(physic, logics) - 3000
    if low >= -(2**63):
        assert cp.min_timestamp() == max(0, low)
    assert cp.min_timestamp_index() == min(cp.min_timestamp(), index)


@given(st.binary(max_size=64), st.integers(0, 64))
def test_decode_raises_only_mq_errors(data, position):
    try:
        decode_checkpoint(data, position)
    except MqError:
        pass


# --- abort and lock ------------------------------------------------------------------------


def test_real_abort_and_lock():
    eric = ("rocketmq", "EricPanGopher-rocketmq", "store", "unit_test_store")
    assert decode_abort(real_path(*eric, "abort").read_bytes()) is None
    assert decode_lock(real_path(*eric, "lock").read_bytes()) is True
    assert decode_abort(real_path("rocketmq", "Shaoxubao-rocketmq-study", "store", "abort").read_bytes()) is None
    lock = real_path("rocketmq", "apache-rocketmq", "pr3535-4e25b979", "store", "lock").read_bytes()
    assert decode_lock(lock) is True and encode_lock() == lock


def test_abort_contents():
    assert decode_abort(b"") is None
    assert decode_abort(b"12345") == 12345
    assert decode_abort(b"0") == 0
    assert decode_abort(b" 4242\n") == 4242
    assert encode_abort(None) == b""
    assert encode_abort(31337) == b"31337"
    for bad in (b"12a", b"-5", b"pid=3", b"\xff\xfe", "١٢".encode()):
        with pytest.raises(CorruptDataError):
            decode_abort(bad)
    with pytest.raises(ValueError):
        encode_abort(-1)


@given(st.none() | st.integers(0, 2**63 - 1))
def test_abort_round_trip(pid):
    assert decode_abort(encode_abort(pid)) == pid


@given(st.binary(max_size=40))
def test_abort_garbage_only_mq_errors(data):
    try:
        result = decode_abort(data)
    except MqError:
        return
    assert result is None or result >= 0


def test_lock_contents():
    assert decode_lock(b"") is False
    assert decode_lock(b"lock") is True
    for bad in (b"lockx", b"LOCK", b"\x00\x00\x00\x00"):
        with pytest.raises(CorruptDataError):
            decode_lock(bad)
