"""ConsumeQueue, ConsumeQueueExt and BatchConsumeQueue units (spec §4, §13)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError, MqError, TruncatedDataError
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq.commitlog import decode_message
from mqtool.formats.rocketmq.consume_queue import (
    BCQ_FILE_SIZE,
    BCQ_UNIT_SIZE,
    CQ_EXT_FILE_SIZE,
    CQ_EXT_MIN_UNIT_SIZE,
    CQ_FILE_SIZE,
    CQ_TAGS_CODE_POSITION,
    CQ_UNIT_SIZE,
    EXT_MAX_ADDRESS,
    EXT_MAX_REAL_OFFSET,
    FILLER_UNIT,
    BcqUnit,
    BcqWalker,
    CqExtUnit,
    CqExtWalker,
    CqUnit,
    CqWalker,
    bcq_file_name_for,
    cq_ext_file_name_for,
    cq_file_name_for,
    cq_file_size,
    cq_queue_offset,
    decode_bcq_unit,
    decode_cq_ext_unit,
    decode_cq_unit,
    decorate_ext_address,
    encode_bcq_unit,
    encode_cq_ext_end_marker,
    encode_cq_ext_unit,
    encode_cq_unit,
    is_ext_address,
    iter_bcq_units,
    iter_cq_ext_units,
    iter_cq_units,
    undecorate_ext_address,
)
from mqtool.formats.rocketmq.hashing import java_string_hash, tags_code
from tests.conftest import real_path

LONG = st.integers(-(2**63), 2**63 - 1)
INT = st.integers(-(2**31), 2**31 - 1)
SHORT = st.integers(-(2**15), 2**15 - 1)

ERIC = ("rocketmq", "EricPanGopher-rocketmq", "store", "unit_test_store")
ERIC_CQ_FILE_SIZE = 200  # ConsumeQueueTest: 10 units per file
ERIC_EXT_FILE_SIZE = 840
ERIC_COMMITLOG_FILE_SIZE = 8192


# --- constants and spec vectors ------------------------------------------------------------


def test_sizes():
    assert CQ_UNIT_SIZE == 20
    assert CQ_TAGS_CODE_POSITION == 12
    assert CQ_FILE_SIZE == 6_000_000
    assert CQ_EXT_MIN_UNIT_SIZE == 20
    assert CQ_EXT_FILE_SIZE == 48 * 1024 * 1024
    assert BCQ_UNIT_SIZE == 46
    assert BCQ_FILE_SIZE == 13_800_000


def test_placement_vectors():
    assert cq_file_name_for(300_000) == ("00000000000006000000", 0)
    assert cq_file_name_for(0) == ("00000000000000000000", 0)
    assert cq_file_name_for(299_999) == ("00000000000000000000", 5_999_980)
    assert cq_file_name_for(56, ERIC_CQ_FILE_SIZE) == ("00000000000000001000", 120)
    assert cq_queue_offset(6_000_000, 40) == 300_002
    assert cq_ext_file_name_for(840, ERIC_EXT_FILE_SIZE) == ("00000000000000000840", 0)
    assert cq_ext_file_name_for(860, ERIC_EXT_FILE_SIZE) == ("00000000000000000840", 20)
    assert bcq_file_name_for(300_000) == ("00000000000013800000", 0)
    assert bcq_file_name_for(2) == ("00000000000000000000", 92)


def test_cq_file_size_rounds_up_to_units():
    assert cq_file_size(6_000_000) == 6_000_000
    assert cq_file_size(5_999_990) == 6_000_000
    assert cq_file_size(200) == 200
    assert cq_file_size(201) == 220


def test_placement_rejects_bad_arguments():
    with pytest.raises(ValueError):
        cq_file_name_for(-1)
    with pytest.raises(ValueError):
        cq_file_name_for(1, 210)  # not a multiple of 20
    with pytest.raises(ValueError):
        bcq_file_name_for(1, 100)


@given(st.integers(0, 2**40), st.integers(1, 1000))
def test_placement_inverts(queue_offset, units_per_file):
    file_size = units_per_file * CQ_UNIT_SIZE
    name, position = cq_file_name_for(queue_offset, file_size)
    assert len(name) == 20 and int(name) % file_size == 0
    assert 0 <= position < file_size and position % CQ_UNIT_SIZE == 0
    assert cq_queue_offset(int(name), position) == queue_offset


def test_ext_address_vector():
    assert decorate_ext_address(840) == -9223372036854774968
    assert decorate_ext_address(840) & 0xFFFFFFFFFFFFFFFF == 0x8000000000000348
    assert undecorate_ext_address(-9223372036854774968) == 840
    assert decorate_ext_address(0) == -(2**63)


def test_ext_address_boundaries():
    assert EXT_MAX_ADDRESS == -2147483649
    assert is_ext_address(-2147483649)
    assert not is_ext_address(-2147483648)  # Integer.MIN_VALUE: a sign-extended tag hash
    assert not is_ext_address(0)
    assert not is_ext_address(tags_code("TopicTest#KEY1"))  # negative hash, sign-extended
    assert decorate_ext_address(EXT_MAX_REAL_OFFSET) == EXT_MAX_ADDRESS
    with pytest.raises(ValueError):
        decorate_ext_address(EXT_MAX_REAL_OFFSET + 1)
    with pytest.raises(ValueError):
        decorate_ext_address(-1)
    with pytest.raises(ValueError):
        undecorate_ext_address(-2147483648)


@given(st.integers(0, EXT_MAX_REAL_OFFSET))
def test_decorate_round_trip(offset):
    address = decorate_ext_address(offset)
    assert is_ext_address(address)
    assert undecorate_ext_address(address) == offset
    assert CqUnit(0, 1, address).ext_offset == offset


@given(INT)
def test_tag_hashes_are_never_ext_addresses(h):
    assert not is_ext_address(h)
    assert CqUnit(0, 1, h).ext_offset is None


def test_negative_tag_hash_stored_sign_extended():
    h = java_string_hash("TopicTest#KEY1")
    raw = encode_cq_unit(CqUnit(0, 100, h))
    assert raw[CQ_TAGS_CODE_POSITION:] == bytes.fromhex("FFFFFFFF9D3CA6D4")
    assert tags_code("TAG1") == 2567159


# --- ConsumeQueue units --------------------------------------------------------------------


def test_filler_unit():
    raw = encode_cq_unit(FILLER_UNIT)
    assert raw == bytes(8) + b"\x7f\xff\xff\xff" + bytes(8)
    unit = decode_cq_unit(raw)
    assert unit.is_filler and unit.is_valid
    assert not CqUnit(0, 172, 0).is_filler


def test_validity_rule():
    assert CqUnit(0, 1, 0).is_valid
    assert not CqUnit(0, 0, 0).is_valid
    assert not CqUnit(-1, 172, 0).is_valid
    assert not CqUnit(100, -5, 0).is_valid


def test_decode_cq_unit_truncated():
    with pytest.raises(TruncatedDataError) as info:
        decode_cq_unit(bytes(30), 20)
    assert info.value.position == 20


def test_encode_cq_unit_range_checked():
    with pytest.raises(ValueError):
        encode_cq_unit(CqUnit(0, 2**31, 0))
    with pytest.raises(ValueError):
        encode_cq_unit(CqUnit(2**63, 1, 0))


@given(LONG, INT, LONG)
def test_cq_unit_round_trip(offset, size, tags):
    unit = CqUnit(offset, size, tags)
    raw = encode_cq_unit(unit)
    assert len(raw) == CQ_UNIT_SIZE
    assert decode_cq_unit(raw) == unit
    assert decode_cq_unit(b"\x01" * 7 + raw, 7) == unit


VALID_CQ = st.builds(CqUnit, st.integers(0, 2**63 - 1), st.integers(1, 2**31 - 1), LONG)


@given(st.lists(VALID_CQ, max_size=30), st.integers(0, 5), st.integers(0, 19))
def test_walker_stops_at_zeros_or_partial(units, zero_units, tail):
    data = b"".join(encode_cq_unit(u) for u in units) + bytes(zero_units * CQ_UNIT_SIZE) + b"\x05" * tail
    walker = CqWalker(data)
    walked = list(walker)
    assert [u for _, u in walked] == units
    assert [p for p, _ in walked] == [i * CQ_UNIT_SIZE for i in range(len(units))]
    end_pos = len(units) * CQ_UNIT_SIZE
    if zero_units:
        assert (walker.end.kind, walker.end.position) == ("zeros", end_pos)
    elif tail:
        assert (walker.end.kind, walker.end.position, walker.end.length) == ("partial", end_pos, tail)
    else:
        assert (walker.end.kind, walker.end.position) == ("eof", end_pos)
    assert walker.count == len(units)
    assert walker.last == (units[-1] if units else None)
    assert walker.max_physic_offset == (units[-1].end_offset if units else None)
    scanned = CqWalker(data)
    assert scanned.scan() == walker.end
    assert scanned.count == walker.count and scanned.last == walker.last


def test_walker_reports_invalid_unit():
    bad = CqUnit(-1, 172, 99)
    data = encode_cq_unit(CqUnit(0, 172, 0)) + encode_cq_unit(bad) + encode_cq_unit(CqUnit(172, 172, 0))
    walker = CqWalker(data)
    assert len(list(walker)) == 1
    assert walker.end.kind == "invalid"
    assert walker.end.position == 20 and walker.end.unit == bad


def test_walker_from_start_and_pre_blank_fillers():
    units = [FILLER_UNIT] * 5 + [CqUnit(1000, 172, 0), CqUnit(1172, 172, decorate_ext_address(20))]
    data = b"".join(map(encode_cq_unit, units)) + bytes(40)
    walker = CqWalker(data)
    walked = list(walker)
    assert len(walked) == 7 and walker.filler_count == 5
    assert walker.max_physic_offset == 1344
    assert walker.max_ext_address == decorate_ext_address(20)
    tail = list(iter_cq_units(data, 100))
    assert [p for p, _ in tail] == [100, 120]
    with pytest.raises(ValueError):
        CqWalker(data, len(data) + 1)


def test_walker_only_fillers_counts_filler_end_offset():
    # recover() takes offset+size of the last valid unit, fillers included.
    walker = CqWalker(encode_cq_unit(FILLER_UNIT) + bytes(20))
    walker.scan()
    assert walker.max_physic_offset == 0x7FFFFFFF


@given(st.binary(max_size=300), st.integers(0, 300))
def test_cq_walker_never_raises(data, start):
    start = min(start, len(data))
    walker = CqWalker(data, start)
    for position, unit in walker:
        assert unit.is_valid and position % CQ_UNIT_SIZE == start % CQ_UNIT_SIZE
    assert walker.end is not None and start <= walker.end.position <= len(data)


@given(st.binary(max_size=64), st.integers(0, 70))
def test_fixed_decoders_raise_only_mq_errors(data, position):
    for decode in (decode_cq_unit, decode_bcq_unit, decode_cq_ext_unit):
        try:
            decode(data, position)
        except MqError:
            pass


# --- ConsumeQueueExt -----------------------------------------------------------------------

EXT = st.builds(CqExtUnit, LONG, LONG, st.binary(max_size=40))


@given(EXT)
def test_ext_unit_round_trip(unit):
    raw = encode_cq_ext_unit(unit)
    assert len(raw) == unit.size == CQ_EXT_MIN_UNIT_SIZE + unit.bitmap_size
    assert struct.unpack_from(">h", raw)[0] == unit.size
    assert decode_cq_ext_unit(raw) == unit


def test_ext_unit_too_large():
    with pytest.raises(ValueError):
        encode_cq_ext_unit(CqExtUnit(0, 0, bytes(32767)))


def test_ext_decode_rejects_inconsistent_sizes():
    raw = bytearray(encode_cq_ext_unit(CqExtUnit(1, 2, b"\xff\xff")))
    raw[0:2] = (23).to_bytes(2, "big")  # size says 23, bitmap says 2
    with pytest.raises(CorruptDataError):
        decode_cq_ext_unit(bytes(raw) + b"\x00")
    small = (10).to_bytes(2, "big") + bytes(30)
    with pytest.raises(CorruptDataError) as info:
        decode_cq_ext_unit(small)
    assert info.value.position == 0
    with pytest.raises(TruncatedDataError):
        decode_cq_ext_unit(encode_cq_ext_unit(CqExtUnit(1, 2, b"abc"))[:-1])


@given(st.lists(EXT, max_size=12), st.sampled_from(["marker", "zeros", "eof"]))
def test_ext_walker_round_trip(units, ending):
    data = b"".join(encode_cq_ext_unit(u) for u in units)
    end = len(data)
    if ending == "marker":
        data += encode_cq_ext_end_marker() + bytes(2)
    elif ending == "zeros":
        data += bytes(4)
    walker = CqExtWalker(data)
    assert [u for _, u in walker] == units
    assert walker.end.position == end
    assert walker.end.kind == {"marker": "end_marker", "zeros": "zeros", "eof": "eof"}[ending]


def test_ext_walker_partial_and_invalid():
    unit = encode_cq_ext_unit(CqExtUnit(1, 2, b"xyz"))
    walker = CqExtWalker(unit + unit[:10])
    assert len(list(walker)) == 1
    assert (walker.end.kind, walker.end.position, walker.end.length) == ("partial", 23, 23)
    walker = CqExtWalker(unit + b"\x07")
    list(walker)
    assert walker.end.kind == "partial"
    walker = CqExtWalker(unit + struct.pack(">h", -7) + bytes(4))
    list(walker)
    assert (walker.end.kind, walker.end.length) == ("invalid", -7)
    walker = CqExtWalker(unit + struct.pack(">h", 5) + bytes(30))
    with pytest.raises(CorruptDataError):
        list(walker)
    assert walker.failed_at == 23


@given(st.binary(max_size=200))
def test_ext_walker_raises_only_mq_errors(data):
    try:
        for _ in iter_cq_ext_units(data):
            pass
    except MqError:
        pass


# --- BatchConsumeQueue ---------------------------------------------------------------------

BCQ = st.builds(BcqUnit, LONG, INT, LONG, LONG, LONG, SHORT, INT, INT)
VALID_BCQ = st.builds(
    BcqUnit,
    st.integers(0, 2**63 - 1),
    st.integers(1, 2**31 - 1),
    LONG,
    LONG,
    st.integers(0, 2**62),
    st.integers(1, 2**15 - 1),
)


@given(BCQ)
def test_bcq_round_trip(unit):
    raw = encode_bcq_unit(unit)
    assert len(raw) == BCQ_UNIT_SIZE
    assert decode_bcq_unit(raw) == unit


def test_bcq_defaults_and_rule():
    unit = BcqUnit(100, 200, 0, 1_700_000_000_000, 10, 4)
    raw = encode_bcq_unit(unit)
    assert raw[38:42] == b"\xff\xff\xff\xff" and raw[42:46] == bytes(4)
    assert unit.is_valid and unit.next_offset == 14
    assert not BcqUnit(100, 200, 0, 0, -1, 4).is_valid
    assert not BcqUnit(100, 200, 0, 0, 10, 0).is_valid
    assert not BcqUnit(-1, 200, 0, 0, 10, 1).is_valid
    assert not BcqUnit(1, 0, 0, 0, 10, 1).is_valid


@given(st.lists(VALID_BCQ, max_size=10), st.booleans(), st.integers(0, 45))
def test_bcq_walker(units, zeros, tail):
    data = b"".join(encode_bcq_unit(u) for u in units) + (bytes(BCQ_UNIT_SIZE) if zeros else b"") + b"\x01" * tail
    walker = BcqWalker(data)
    assert [u for _, u in walker] == units
    assert walker.max_offset == (units[-1].next_offset if units else None)
    expected = "zeros" if zeros else ("partial" if tail else "eof")
    assert walker.end.kind == expected and walker.end.position == len(units) * BCQ_UNIT_SIZE


@given(st.binary(max_size=200))
def test_bcq_walker_never_raises(data):
    for _, unit in iter_bcq_units(data):
        assert unit.is_valid


# --- real fixtures: EricPanGopher ConsumeQueueTest store -----------------------------------


def _cq_files():
    folder = real_path(*ERIC, "consumequeue", "abc", "0")
    return sorted(folder.iterdir())


def _all_cq_units():
    units = []
    ends = []
    for path in _cq_files():
        walker = CqWalker(path.read_bytes())
        units.extend((int(path.name), pos, unit) for pos, unit in walker)
        ends.append(walker.end)
    return units, ends


def test_real_cq_files():
    units, ends = _all_cq_units()
    assert len(units) == 56
    assert [e.kind for e in ends] == ["eof"] * 5 + ["zeros"]
    assert ends[-1].position == 120  # 6 valid units, then 4 zero units
    assert all(u.has_ext_address for _, _, u in units)
    assert units[0][2] == CqUnit(0, 172, -(2**63))
    queue_offsets = [cq_queue_offset(base, pos) for base, pos, _ in units]
    assert queue_offsets == list(range(56))
    for q, (base, pos, _) in enumerate(units):
        assert cq_file_name_for(q, ERIC_CQ_FILE_SIZE) == (segnames.rocketmq_file_name(base), pos)


def test_real_cq_matches_ext_and_commitlog():
    units, _ = _all_cq_units()
    ext_dir = real_path(*ERIC, "consumequeue_ext", "abc", "0")
    commitlog_dir = real_path(*ERIC, "commitlog")
    for q, (_, _, unit) in enumerate(units):
        name, pos = cq_ext_file_name_for(unit.ext_offset, ERIC_EXT_FILE_SIZE)
        ext = decode_cq_ext_unit((ext_dir / name).read_bytes(), pos)
        assert ext.tags_code == tags_code("TAG1") == 2567159
        assert ext.filter_bitmap == b""
        file_from = unit.commitlog_offset - unit.commitlog_offset % ERIC_COMMITLOG_FILE_SIZE
        data = (commitlog_dir / segnames.rocketmq_file_name(file_from)).read_bytes()
        record = decode_message(data, unit.commitlog_offset - file_from)
        assert record.total_size == unit.size == 172
        assert record.queue_offset == q
        assert record.physical_offset == unit.commitlog_offset
        assert record.store_timestamp == ext.msg_store_time
    first = decode_cq_ext_unit((ext_dir / "00000000000000000000").read_bytes(), 0)
    assert first == CqExtUnit(2567159, 1532257321553, b"")


def test_real_ext_files():
    ext_dir = real_path(*ERIC, "consumequeue_ext", "abc", "0")
    first = CqExtWalker((ext_dir / "00000000000000000000").read_bytes())
    assert len(list(first)) == 41
    assert (first.end.kind, first.end.position) == ("end_marker", 820)
    second = CqExtWalker((ext_dir / "00000000000000000840").read_bytes())
    assert len(list(second)) == 15
    assert (second.end.kind, second.end.position) == ("zeros", 300)


def test_real_last_cq_unit_points_at_last_ext_unit():
    units, ends = _all_cq_units()
    walker = CqWalker(_cq_files()[-1].read_bytes())
    walker.scan()
    assert walker.max_ext_address == units[-1][2].tags_code
    assert undecorate_ext_address(walker.max_ext_address) == 840 + 14 * 20
