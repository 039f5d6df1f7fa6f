"""The timer store formats (``TimerWheel``/``Slot``, ``TimerLog``, ``TimerCheckpoint``, ``TimerMetrics``)
against bytes packed by the test writer from the upstream layout, round trips, hostile input, and
the real files of a 5.3.1 broker's volume."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError, MqError, TruncatedDataError
from mqtool.formats.rocketmq import timer as tf
from mqtool.formats.rocketmq.config import DataVersion
from tests.conftest import real_path
from tests.timer_store import (
    BLANK_FMT,
    BLANK_MAGIC,
    MIN_BLANK,
    SLOT_FMT,
    SLOT_LEN,
    SLOTS,
    UNIT_LEN,
    WHEEL_LEN,
    checkpoint_bytes,
    java_hash,
    metrics_text,
    unit_bytes,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


def test_layout_constants_match_the_upstream_layout():
    assert tf.UNIT_SIZE == UNIT_LEN == 52
    assert tf.SLOT_SIZE == SLOT_LEN == 32
    assert tf.WHEEL_SLOTS == SLOTS and tf.WHEEL_SIZE == WHEEL_LEN == 38_707_200
    assert tf.MIN_BLANK_LEN == MIN_BLANK == 16
    assert tf.BLANK_MAGIC_CODE == BLANK_MAGIC == -875286124  # 0xCBD43194
    assert tf.OFFSET_PY_POSITION == 28  # UNIT_PRE_SIZE_FOR_MSG
    # TimerLog.getOffsetForLastUnit of the default 100 MiB file
    assert tf.last_unit_position(100 << 20) == 104_857_532


def test_java_string_hash():
    assert tf.java_string_hash("") == 0
    assert tf.java_string_hash("TopicTest") == java_hash("TopicTest") == -1902610879
    assert tf.java_string_hash("é") == 0xE9
    assert tf.java_string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00  # two UTF-16 units


# --- timerwheel -------------------------------------------------------------------------------


def test_slot_from_the_writer_layout():
    raw = struct.pack(SLOT_FMT, 1_700_000_005, 0, 208, 3, 0)
    slot = tf.decode_slot(raw)
    assert slot == tf.Slot(1_700_000_005, 0, 208, 3, 0)
    assert slot.time_ms() == 1_700_000_005_000
    assert slot.belongs_at(1_700_000_005 % SLOTS)
    assert not slot.belongs_at(0)
    assert tf.slot_index(1_700_000_005_999) == 1_700_000_005 % SLOTS
    assert tf.slot_for(1_700_000_005_999, 0, 208, 3) == slot
    assert tf.encode_slot(slot) == raw


@given(INT64, INT64, INT64, INT32, INT32)
def test_slot_round_trip(time, first, last, num, magic):
    slot = tf.Slot(time, first, last, num, magic)
    assert tf.decode_slot(tf.encode_slot(slot)) == slot


@given(st.dictionaries(st.integers(0, 300), st.builds(tf.Slot, INT64, INT64, INT64, INT32, INT32), max_size=12))
def test_used_slots_finds_every_non_zero_slot(slots):
    wheel = tf.encode_wheel(slots, slot_count=301)
    found = dict(tf.used_slots(wheel))
    assert found == {i: s for i, s in slots.items() if not s.is_empty}


def test_used_slots_from_an_offset_and_a_ragged_end():
    wheel = tf.encode_wheel({3: tf.Slot(1, 2, 3)}, slot_count=5) + b"\x01\x02"
    assert list(tf.used_slots(wheel[64:], first_index=2)) == [(3, tf.Slot(1, 2, 3))]
    assert list(tf.used_slots(b"\x00" * 31)) == []


def test_slot_hostile():
    with pytest.raises(TruncatedDataError):
        tf.decode_slot(b"\x00" * 31)
    with pytest.raises(ValueError):
        tf.encode_slot(tf.Slot(num=2**31))
    with pytest.raises(ValueError):
        tf.slot_index(5, precision_ms=0)


# --- timerlog ---------------------------------------------------------------------------------


def test_unit_from_the_writer_layout():
    raw = unit_bytes(-1, 1, 1_700_000_000_100, 4_900, 228, 188, java_hash("Real0"))
    unit = tf.decode_unit(raw)
    assert unit == tf.TimerUnit(-1, 1, 1_700_000_000_100, 4_900, 228, 188, java_hash("Real0"), 0)
    assert unit.delayed_time == 1_700_000_005_000
    assert not unit.is_roll and not unit.is_delete
    assert tf.encode_unit(unit) == raw
    assert tf.decode_unit(raw[:12] + struct.pack(">i", 7) + raw[16:]).is_delete


@given(INT64, st.integers(0, 15), INT64, INT32, INT64, INT32, INT32, INT64)
def test_unit_round_trip(prev, magic, write, delay, off, size, hsh, reserved):
    unit = tf.TimerUnit(prev, magic, write, delay, off, size, hsh, reserved)
    raw = tf.encode_unit(unit)
    assert tf.decode_unit(raw) == unit
    assert list(tf.walk_units(raw)) == [(0, unit)] or unit == tf.TimerUnit(0, 0, 0, 0, 0, 0, 0, 0, 52)


def _file(units: int, file_size: int) -> bytes:
    """A TimerLog file as ``TimerLog.append`` fills it: ``units`` units, then a BLANK when full."""
    buf = bytearray(file_size)
    pos = 0
    for i in range(units):
        if UNIT_LEN + MIN_BLANK > file_size - pos:
            buf[pos : pos + MIN_BLANK] = struct.pack(BLANK_FMT, file_size - pos, 0, BLANK_MAGIC)
            break
        buf[pos : pos + UNIT_LEN] = unit_bytes(pos - UNIT_LEN if pos else -1, 1, 1000 + i, 2000, 100 * i, 90, 7)
        pos += UNIT_LEN
    return bytes(buf)


def test_walk_units_to_the_zeros():
    data = _file(3, 4096)
    walk = tf.walk_units(data)
    units = list(walk)
    assert [p for p, _ in units] == [0, 52, 104]
    assert units[1][1].prev_pos == 0
    assert walk.end == tf.TimerLogEnd("zeros", 156)


def test_walk_units_to_the_blank_of_a_full_file():
    size = 52 * 3 + 20  # after 3 units 20 bytes are left: 52 + 16 do not fit, a BLANK closes the file
    data = _file(10, size)
    walk = tf.walk_units(data)
    assert len(list(walk)) == 3
    assert walk.end == tf.TimerLogEnd("blank", 156)
    assert struct.unpack_from(BLANK_FMT, data, 156) == (size - 156, 0, BLANK_MAGIC)


def test_walk_units_a_blank_of_the_wrong_size_is_corrupt():
    data = bytearray(_file(10, 52 * 3 + 20))
    struct.pack_into(">i", data, 156, 5)
    with pytest.raises(CorruptDataError) as exc:
        list(tf.walk_units(bytes(data)))
    assert exc.value.position == 156 and exc.value.kind == "size"


def test_walk_units_in_a_piece_knows_the_rest_of_the_file():
    data = _file(10, 52 * 3 + 20)
    walk = tf.walk_units(data[:172], start=104, rest=len(data))
    assert [p for p, _ in walk] == [104]
    assert walk.end == tf.TimerLogEnd("blank", 156)
    walk = tf.walk_units(data[:150], start=52, rest=len(data))
    assert [p for p, _ in walk] == [52]
    assert walk.end == tf.TimerLogEnd("partial", 104)


@pytest.mark.parametrize(("field", "value", "kind", "at"), [(0, 51, "size", 0), (12, 0x10, "magic", 12), (12, -1, "magic", 12)])
def test_walk_units_stops_where_recovery_stops(field, value, kind, at):
    data = bytearray(_file(3, 4096))
    struct.pack_into(">i", data, 52 + field, value)
    walk = tf.walk_units(bytes(data))
    with pytest.raises(CorruptDataError) as exc:
        list(walk)
    assert exc.value.kind == kind and exc.value.position == 52 + at


def test_walk_units_a_cut_unit_at_the_end_is_partial():
    data = _file(3, 4096)[: 52 * 2 + 30]
    walk = tf.walk_units(data)
    assert len(list(walk)) == 2
    assert walk.end == tf.TimerLogEnd("partial", 104)


@given(st.binary(max_size=600), st.integers(0, 12))
def test_walk_units_on_random_bytes_ends_or_raises(data, start_units):
    walk = tf.walk_units(data, start=min(start_units * 52, len(data)))
    try:
        for pos, unit in walk:
            assert unit.size == 52 and tf.is_magic_ok(unit.magic) and pos % 52 == 0
    except MqError as exc:
        assert exc.position is not None and 0 <= exc.position < len(data)
    else:
        assert walk.end is not None and walk.end.position <= len(data)


def test_unit_hostile():
    with pytest.raises(TruncatedDataError):
        tf.decode_unit(b"\x00" * 51)
    with pytest.raises(ValueError):
        tf.encode_unit(tf.TimerUnit(delay_time=2**31))
    assert tf.unit_file_name(104_857_700) == (104_857_600, 100)


# --- timercheck -------------------------------------------------------------------------------


def test_timer_checkpoint_from_the_writer_layout():
    raw = checkpoint_bytes(1_700_000_000_000, 520, 10, 11, 2, 1_700_000_000_123, 426)
    cp = tf.decode_timer_checkpoint(raw)
    assert cp == tf.TimerCheckpoint(1_700_000_000_000, 520, 10, 11, 2, 1_700_000_000_123, 426)
    assert tf.encode_timer_checkpoint(cp) == raw


def test_timer_checkpoint_of_32_bytes_has_no_data_version():
    cp = tf.decode_timer_checkpoint(struct.pack(">4q", 1, 2, 3, 4))
    assert cp == tf.TimerCheckpoint(1, 2, 3, 4)
    assert cp.state_version is None
    with pytest.raises(TruncatedDataError) as exc:
        tf.decode_timer_checkpoint(b"\x00" * 31)
    assert exc.value.position == 0


@given(st.tuples(*[INT64] * 7))
def test_timer_checkpoint_round_trip(values):
    cp = tf.TimerCheckpoint(*values)
    assert tf.decode_timer_checkpoint(tf.encode_timer_checkpoint(cp)) == cp


# --- timermetrics -----------------------------------------------------------------------------


def test_timer_metrics_from_the_writer_layout():
    text = metrics_text({"TopicA": (3, 1_700_000_000_000), "TopicB": (0, 5)}, counter=4, ts=9)
    m = tf.parse_timer_metrics(text)
    assert m.timing_count == {"TopicA": tf.TimerMetric(3, 1_700_000_000_000), "TopicB": tf.TimerMetric(0, 5)}
    assert m.data_version == DataVersion(timestamp=9, counter=4, state_version=0)
    assert tf.encode_timer_metrics(m) == text


names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=10)


@given(st.dictionaries(names, st.builds(tf.TimerMetric, INT64, INT64), max_size=5), st.builds(DataVersion, INT64, INT64, INT64))
def test_timer_metrics_round_trip(counts, version):
    m = tf.TimerMetrics(counts, version)
    text = tf.encode_timer_metrics(m)
    assert text.isascii()  # BrowserCompatible: non-ASCII as \uXXXX
    assert tf.parse_timer_metrics(text) == m


@pytest.mark.parametrize("text", ['{"timingCount":[]}', '{"timingCount":{"a":3}}', '{"timingCount":{"a":{"count":"x"}}}', "[1]", '{"timingCount":{"a":{"count":1}'])
def test_timer_metrics_of_the_wrong_shape_are_corrupt(text):
    with pytest.raises(CorruptDataError):
        tf.parse_timer_metrics(text)


# --- the real files of a 5.3.1 broker ----------------------------------------------------------

REAL = ("rocketmq", "guoming-docker-compose-rocketmq", "store", "config")


def test_real_531_timercheck_decodes_to_plausible_values():
    """The 5.3.1 docker volume's ``config/timercheck``: a 4096-byte page whose lastReadTimeMs is a
    2026 whole second (a slot boundary at the default 1000 ms precision), nothing enqueued (flush
    position and queue offsets 0), and a DataVersion stamped 825 ms after it with counter 426."""
    data = real_path(*REAL, "timercheck").read_bytes()
    assert len(data) == tf.TIMER_CHECKPOINT_SIZE
    cp = tf.decode_timer_checkpoint(data)
    assert cp.last_read_time_ms == 1_778_241_104_000
    assert cp.last_read_time_ms % tf.DEFAULT_PRECISION_MS == 0
    assert (cp.last_timer_log_flush_pos, cp.last_timer_queue_offset, cp.master_timer_queue_offset) == (0, 0, 0)
    assert cp.state_version == 0
    assert 0 <= cp.data_version_timestamp - cp.last_read_time_ms < 1000
    assert cp.data_version_counter == 426
    assert tf.encode_timer_checkpoint(cp) == data


@pytest.mark.parametrize("name", ["timermetrics", "timermetrics.bak"])
def test_real_531_timermetrics_decodes_to_plausible_values(name):
    """Its ``config/timermetrics`` (and the ``.bak`` persist leaves): no topic has timer messages,
    dataVersion counter 0 stamped in 2026, and the text is exactly what persist writes."""
    raw = real_path(*REAL, name).read_bytes()
    m = tf.parse_timer_metrics(raw)
    assert m.timing_count == {}
    assert m.data_version == DataVersion(timestamp=1_778_240_664_648, counter=0, state_version=0)
    assert tf.encode_timer_metrics(m).encode() == raw
