"""IndexFile header/entries, putKey and selectPhyOffset (spec §5, §13)."""

from __future__ import annotations

import mmap
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError, MqError, TruncatedDataError, UnsupportedFormatError
from mqtool.formats.rocketmq.hashing import index_key_hash, java_string_hash
from mqtool.formats.rocketmq.index_file import (
    BEGIN_PHY_OFFSET_POSITION,
    DEFAULT_HASH_SLOT_NUM,
    DEFAULT_INDEX_NUM,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_SIZE,
    SEARCH_SCAN_BYTES,
    IndexEntry,
    IndexGeometry,
    IndexHeader,
    IndexWriter,
    check_index_geometry,
    decode_index_entry,
    detect_index_geometry,
    decode_index_header,
    encode_index_entry,
    encode_index_header,
    index_file_size,
    index_geometry_evidence,
    infer_index_geometry,
    iter_chain,
    iter_entries,
    iter_used_slots,
    read_slot,
    select_phy_offsets,
)
from tests.conftest import real_path

LONG = st.integers(-(2**63), 2**63 - 1)
INT = st.integers(-(2**31), 2**31 - 1)
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

PR6495 = ("rocketmq", "apache-rocketmq", "pr6495-65a086a2", "store", "100")
PR6495_TS = 1679290200025


# --- spec vectors --------------------------------------------------------------------------


def test_key_hash_vectors():
    g = IndexGeometry()
    assert java_string_hash("TopicTest#KEY1") == -1656969516
    assert index_key_hash("TopicTest#KEY1") == 1656969516
    assert g.slot_of("TopicTest#KEY1") == 1969516
    assert g.slot_position(1969516) == 7_878_104
    assert g.slot_of("TopicTest#ORDER_1001") == 611091
    assert index_key_hash("polygenelubricants") == 0
    assert g.slot_of("polygenelubricants") == 0 and g.slot_position(0) == 40
    assert index_key_hash("0") == 48


def test_default_sizes():
    assert INDEX_HEADER_SIZE == 40 and INDEX_ENTRY_SIZE == 20
    assert index_file_size() == 420_000_040
    assert index_file_size(DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM) == IndexGeometry().size
    assert IndexGeometry().entry_position(0) == 20_000_040
    assert IndexGeometry().entry_position(7) == 20_000_040 + 140
    assert index_file_size(100, 400) == 8440


@given(LONG, LONG, LONG, LONG, INT, INT)
def test_header_round_trip(begin_ts, end_ts, begin_phy, end_phy, slot_count, index_count):
    header = IndexHeader(begin_ts, end_ts, begin_phy, end_phy, slot_count, index_count)
    raw = encode_index_header(header)
    assert len(raw) == INDEX_HEADER_SIZE
    assert decode_index_header(raw) == header
    assert header.effective_index_count == max(header.index_count, 1)


@given(INT, LONG, INT, INT)
def test_entry_round_trip(key_hash, phy_offset, time_diff, prev_index):
    entry = IndexEntry(key_hash, phy_offset, time_diff, prev_index)
    raw = encode_index_entry(entry)
    assert len(raw) == INDEX_ENTRY_SIZE
    assert decode_index_entry(b"\x00" * 3 + raw, 3) == entry


def test_encode_range_checked():
    with pytest.raises(ValueError):
        encode_index_entry(IndexEntry(2**31, 0, 0, 0))
    with pytest.raises(ValueError):
        encode_index_header(IndexHeader(index_count=2**31))


@given(st.binary(max_size=60), st.integers(0, 60))
def test_decoders_raise_only_mq_errors(data, position):
    for decode in (decode_index_header, decode_index_entry):
        try:
            decode(data, position)
        except MqError:
            pass


# --- real fixture: pr6495 IndexFileTest output ---------------------------------------------


def _pr6495() -> bytes:
    return real_path(*PR6495).read_bytes()


def test_real_index_walk():
    data = _pr6495()
    assert len(data) == 8440
    header = decode_index_header(data)
    assert header == IndexHeader(PR6495_TS, PR6495_TS, 0, 0, 1, 2)
    geometry = infer_index_geometry(len(data), header)
    assert geometry == IndexGeometry(100, 400)
    assert geometry.slot_of("0") == 48 and geometry.slot_position(48) == 232
    assert read_slot(data, 48, 100) == 1
    assert geometry.entry_position(1) == 460
    assert decode_index_entry(data, 460) == IndexEntry(48, 0, 0, 0)
    assert list(iter_used_slots(data, 100)) == [(48, 1)]
    assert list(iter_entries(data, 100, 400)) == [(1, IndexEntry(48, 0, 0, 0))]
    assert list(iter_chain(data, 48, 100, 400)) == [(1, IndexEntry(48, 0, 0, 0))]
    assert list(iter_chain(data, 47, 100, 400)) == []


def test_real_index_lookup():
    data = _pr6495()
    assert select_phy_offsets(data, "0", 64, 0, LONG_MAX, 100, 400) == [0]
    assert select_phy_offsets(data, "0", 64, PR6495_TS, PR6495_TS, 100, 400) == [0]
    assert select_phy_offsets(data, "0", 64, PR6495_TS + 1, LONG_MAX, 100, 400) == []
    assert select_phy_offsets(data, "0", 0, 0, LONG_MAX, 100, 400) == []
    assert select_phy_offsets(data, "1", 64, 0, LONG_MAX, 100, 400) == []


def test_writer_reproduces_real_fixture():
    data = _pr6495()
    buf = bytearray(8440)
    writer = IndexWriter(buf, 100, 400)
    assert writer.put_key("0", 0, PR6495_TS)
    assert bytes(buf) == data
    assert writer.header == decode_index_header(data)


# --- geometry ------------------------------------------------------------------------------


def test_infer_geometry_rules():
    assert infer_index_geometry(420_000_040) == IndexGeometry()
    assert infer_index_geometry(8440) == IndexGeometry(100, 400)
    assert infer_index_geometry(index_file_size(100, 1000)) == IndexGeometry(100, 1000)
    # the 1:4 ratio rule for an unlisted configuration
    assert infer_index_geometry(40 + 84 * 7) == IndexGeometry(7, 28)
    # explicit values always win, one explicit value solves the other
    assert infer_index_geometry(8440, hash_slot_num=100, index_num=400) == IndexGeometry(100, 400)
    assert infer_index_geometry(8440, hash_slot_num=300) == IndexGeometry(300, 360)
    assert infer_index_geometry(8440, index_num=300) == IndexGeometry(600, 300)
    with pytest.raises(TruncatedDataError):
        infer_index_geometry(8440, hash_slot_num=100, index_num=500)
    with pytest.raises(CorruptDataError):
        infer_index_geometry(8440, hash_slot_num=101)  # 8400 - 404 is not a multiple of 20
    with pytest.raises(UnsupportedFormatError):
        infer_index_geometry(8441)
    with pytest.raises(TruncatedDataError):
        infer_index_geometry(39)


def test_infer_geometry_uses_header():
    too_many = IndexHeader(index_count=401)
    with pytest.raises(CorruptDataError):
        infer_index_geometry(8440, too_many)
    with pytest.raises(CorruptDataError):
        infer_index_geometry(8440, IndexHeader(hash_slot_count=101), hash_slot_num=100, index_num=400)
    # two candidates of the same length: the header picks the one it fits
    fits_second = IndexHeader(hash_slot_count=200)
    assert infer_index_geometry(8440, fits_second, candidates=[(100, 400), (300, 360)]) == IndexGeometry(300, 360)
    assert infer_index_geometry(8440, IndexHeader(), candidates=[(100, 400), (300, 360)]) == IndexGeometry(100, 400)


def test_check_geometry():
    assert check_index_geometry(8440, 100, 400) == IndexGeometry(100, 400)
    with pytest.raises(CorruptDataError):
        check_index_geometry(8441, 100, 400)
    with pytest.raises(ValueError):
        IndexGeometry(0, 10)


# --- geometry read from the file's bytes -----------------------------------------------------


def _written(slots: int, num: int, messages: int, keys_per_message: int = 3, first_phy: int = 0, prev_end: tuple[int, int] = (0, 0), buf=None):
    """An IndexFile as ``IndexService.buildIndex`` leaves it: ``messages`` messages of
    ``keys_per_message`` keys each (one CommitLog offset per message), 300 ms apart."""
    buf = bytearray(index_file_size(slots, num)) if buf is None else buf
    writer = IndexWriter(buf, slots, num)
    writer.inherit(*prev_end)
    for i in range(messages):
        for k in range(keys_per_message):
            assert writer.put_key(f"T#key{i}-{k}", first_phy + 200 * i, 1_700_000_000_000 + 300 * i)
    return buf


class CountingReader:
    """A ``ReadAt`` over ``data`` that counts the reads and bytes."""

    def __init__(self, data) -> None:
        self.view = memoryview(data)
        self.reads = 0
        self.bytes = 0

    def __call__(self, position: int, size: int) -> bytes:
        data = bytes(self.view[position : position + size])
        self.reads += 1
        self.bytes += len(data)
        return data


def test_detect_geometry_of_an_unlisted_configuration():
    data = _written(500, 3000, 20)
    with pytest.raises(UnsupportedFormatError):
        infer_index_geometry(len(data), decode_index_header(data))  # the length alone cannot say
    assert detect_index_geometry(data) == IndexGeometry(500, 3000)
    reader = CountingReader(data)
    assert detect_index_geometry(reader, len(data)) == IndexGeometry(500, 3000)
    assert reader.bytes < len(data) // 4


def test_detect_geometry_of_the_real_fixture():
    assert detect_index_geometry(_pr6495()) == IndexGeometry(100, 400)


@pytest.mark.parametrize(
    ("truth", "by_length"),
    [
        (IndexGeometry(110, 398), IndexGeometry(100, 400)),  # the length of a known geometry
        (IndexGeometry(95, 401), IndexGeometry(100, 400)),
        (IndexGeometry(45, 201), IndexGeometry(50, 200)),  # the length of the 1:4 rule
        (IndexGeometry(60, 198), IndexGeometry(50, 200)),
    ],
)
def test_detect_geometry_beats_a_length_match(truth, by_length):
    assert truth.size == by_length.size
    data = _written(truth.hash_slot_num, truth.index_num, 30)
    assert infer_index_geometry(len(data), decode_index_header(data)) == by_length
    assert detect_index_geometry(data) == truth


def test_detect_default_geometry_in_a_few_reads():
    """A 420 MB default file: the known geometry is confirmed by a handful of small reads."""
    size = index_file_size()
    with mmap.mmap(-1, size) as buf:  # anonymous: only the pages written take memory
        _written(DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, 50, buf=buf)
        reader = CountingReader(buf)
        assert detect_index_geometry(reader, size) == IndexGeometry()
        assert reader.reads <= 8 and reader.bytes <= 200
        reader.view.release()


def test_detect_large_unlisted_geometry_reads_at_most_the_slot_table():
    slots, num = 3_000_001, 7_000_000
    size = index_file_size(slots, num)
    with mmap.mmap(-1, size) as buf:
        _written(slots, num, 50, buf=buf)
        reader = CountingReader(buf)
        assert detect_index_geometry(reader, size) == IndexGeometry(slots, num)
        assert reader.bytes <= slots * 4 + (1 << 20)
        reader.view.release()


def test_detect_on_a_zeroed_default_file_reads_a_bounded_prefix():
    """A header that claims entries over 420 MB of zeros: nothing confirms any split, the search
    gives up after ``SEARCH_SCAN_BYTES`` and the length rules name the default geometry."""
    size = index_file_size()
    with mmap.mmap(-1, size) as buf:
        buf[:INDEX_HEADER_SIZE] = encode_index_header(IndexHeader(1, 2, 3, 4, 5, 1000))
        reader = CountingReader(buf)
        assert detect_index_geometry(reader, size) == IndexGeometry()
        assert reader.bytes <= SEARCH_SCAN_BYTES + (1 << 20)
        reader.view.release()


def _flip_begin(data: bytearray) -> None:
    data[BEGIN_PHY_OFFSET_POSITION + 3] ^= 0x10


def _zero_slots(data: bytearray, slots: int) -> None:
    data[INDEX_HEADER_SIZE : INDEX_HEADER_SIZE + 4 * slots] = bytes(4 * slots)


@pytest.mark.parametrize("first_phy", [0, 123_456])
def test_detect_geometry_with_a_flipped_begin_offset(first_phy):
    data = _written(500, 3000, 20, first_phy=first_phy)
    _flip_begin(data)
    header = decode_index_header(data)
    evidence = index_geometry_evidence(data, header, IndexGeometry(500, 3000))
    assert evidence is not None and not evidence.begin and evidence.end and evidence.first_slot and evidence.last_slot
    assert not evidence.confirmed
    assert detect_index_geometry(data) == IndexGeometry(500, 3000)


@pytest.mark.parametrize("first_phy", [0, 123_456])
def test_detect_geometry_with_a_zeroed_slot_table(first_phy):
    data = _written(500, 3000, 20, first_phy=first_phy)
    _zero_slots(data, 500)
    evidence = index_geometry_evidence(data, decode_index_header(data), IndexGeometry(500, 3000))
    assert evidence is not None and evidence.begin and evidence.end and not evidence.first_slot and not evidence.last_slot
    assert detect_index_geometry(data) == IndexGeometry(500, 3000)


def test_detect_geometry_gives_up_when_header_and_slots_are_both_damaged():
    data = _written(500, 3000, 20, first_phy=4096)
    _flip_begin(data)
    _zero_slots(data, 500)
    with pytest.raises(UnsupportedFormatError, match="--index-hash-slots N --index-num N"):
        detect_index_geometry(data)
    # a length that fits a known geometry keeps today's answer
    data = _written(110, 398, 20, first_phy=4096)
    _flip_begin(data)
    _zero_slots(data, 110)
    assert detect_index_geometry(data) == IndexGeometry(100, 400)


def test_detect_geometry_of_an_empty_file_uses_the_length_rules():
    """indexCount <= 1: no entry says anything, so the length decides as before."""
    with pytest.raises(UnsupportedFormatError, match="from its length;"):
        detect_index_geometry(bytes(IndexGeometry(500, 3000).size))
    assert detect_index_geometry(bytes(8440)) == IndexGeometry(100, 400)
    assert detect_index_geometry(bytes(40 + 84 * 7)) == IndexGeometry(7, 28)
    with pytest.raises(TruncatedDataError):
        detect_index_geometry(bytes(39))


def test_detect_geometry_explicit_values_win():
    data = _written(110, 398, 30)
    assert detect_index_geometry(data, hash_slot_num=100, index_num=400) == IndexGeometry(100, 400)
    assert detect_index_geometry(data, hash_slot_num=100) == IndexGeometry(100, 400)
    assert detect_index_geometry(data, index_num=398) == IndexGeometry(110, 398)
    with pytest.raises(TruncatedDataError):
        detect_index_geometry(data, hash_slot_num=110, index_num=399)
    with pytest.raises(CorruptDataError):
        detect_index_geometry(data, hash_slot_num=111)


@settings(max_examples=300)
@given(st.data())
def test_detect_geometry_of_any_written_file(data):
    """Whatever maxHashSlotNum/maxIndexNum wrote a file, its bytes give them back: first file of
    a store (offsets from 0) or a later one (inherited begin), one or several keys per message,
    a full file or not."""
    slots = data.draw(st.integers(1, 1000), label="slots")
    num = data.draw(st.integers(2, 5000), label="num")
    keys = data.draw(st.integers(1, min(4, num - 1)), label="keys per message")
    messages = data.draw(st.integers(1, max(1, (num - 1) // keys)), label="messages")
    first_phy = data.draw(st.sampled_from([0, 1, 4096, 2**33 + 17]), label="first offset")
    prev_end = (first_phy, 1_699_999_990_000) if data.draw(st.booleans(), label="inherits") and first_phy else (0, 0)
    buf = _written(slots, num, messages, keys, first_phy, prev_end)
    assert detect_index_geometry(buf) == IndexGeometry(slots, num)
    assert detect_index_geometry(CountingReader(buf), len(buf)) == IndexGeometry(slots, num)


@given(st.binary(max_size=3000))
def test_detect_geometry_on_garbage_ends_in_a_fitting_geometry_or_an_mq_error(data):
    try:
        geometry = detect_index_geometry(data)
    except MqError:
        return
    assert geometry.size == len(data)


# --- writer --------------------------------------------------------------------------------


def _writer(slots: int = 10, num: int = 8) -> tuple[bytearray, IndexWriter]:
    buf = bytearray(index_file_size(slots, num))
    return buf, IndexWriter(buf, slots, num)


def test_writer_requires_writable_buffer_of_full_size():
    with pytest.raises(TypeError):
        IndexWriter(memoryview(bytes(8440)), 100, 400)
    with pytest.raises(TruncatedDataError):
        IndexWriter(bytearray(8439), 100, 400)


def test_writer_header_and_full():
    buf, w = _writer(10, 4)
    assert w.header == IndexHeader(0, 0, 0, 0, 0, 1)
    assert decode_index_header(buf).index_count == 0  # in memory only until the first put
    assert w.put_key("a", 100, 10_000)
    assert w.put_key("b", 200, 12_500)
    assert w.put_key("a", 300, 20_000)
    assert w.is_full
    assert not w.put_key("c", 400, 30_000)  # capacity is indexNum - 1 entries
    header = decode_index_header(buf)
    assert header == IndexHeader(10_000, 20_000, 100, 300, 2, 4) == w.header
    entries = dict(iter_entries(buf, 10, 4))
    assert entries[1] == IndexEntry(index_key_hash("a"), 100, 0, 0)
    assert entries[2] == IndexEntry(index_key_hash("b"), 200, 2, 0)
    assert entries[3] == IndexEntry(index_key_hash("a"), 300, 10, 1)
    assert [n for n, _ in iter_chain(buf, index_key_hash("a") % 10, 10, 4)] == [3, 1]


def test_write_header_flushes_in_memory_count():
    buf, w = _writer()
    w.write_header()
    assert decode_index_header(buf) == IndexHeader(0, 0, 0, 0, 0, 1)


def test_time_diff_clamps():
    buf, w = _writer(1, 8)
    w.put_key("k", 1, 1_000_000)
    w.put_key("k", 2, 999_000)  # before begin → 0
    w.put_key("k", 3, 1_000_000 + (2**31 + 5) * 1000)  # beyond int → MAX
    w.put_key("k", 4, 1_001_999)  # truncates to 1 s
    diffs = [e.time_diff for _, e in iter_entries(buf, 1, 8)]
    assert diffs == [0, 0, 2**31 - 1, 1]


def test_time_diff_zero_without_begin():
    buf, w = _writer(1, 8)
    w.put_key("k", 1, -5)  # first put sets begin to a non-positive value
    w.put_key("k", 2, 50_000)
    assert [e.time_diff for _, e in iter_entries(buf, 1, 8)] == [0, 0]


def test_inherit_then_first_put_replaces_begin():
    buf, w = _writer()
    w.inherit(5000, 1_000_000)
    assert decode_index_header(buf) == IndexHeader(1_000_000, 1_000_000, 5000, 5000, 0, 0)
    w.put_key("x", 6000, 1_010_000)
    header = decode_index_header(buf)
    assert (header.begin_timestamp, header.begin_phy_offset) == (1_010_000, 6000)
    assert (header.end_timestamp, header.end_phy_offset) == (1_010_000, 6000)
    # timeDiff of that first entry was measured from the inherited begin
    assert decode_index_entry(buf, IndexGeometry(10, 8).entry_position(1)).time_diff == 10


def test_inherit_ignores_non_positive():
    buf, w = _writer()
    w.inherit(0, -1)
    assert decode_index_header(buf) == IndexHeader(0, 0, 0, 0, 0, 0)


def test_slot_value_sanity():
    slots, num = 10, 8
    buf, _ = _writer(slots, num)
    slot = index_key_hash("k") % slots
    struct.pack_into(">i", buf, IndexGeometry(slots, num).slot_position(slot), 77)  # > indexCount: junk
    w = IndexWriter(buf, slots, num)
    w.put_key("k", 1, 1000)
    entry = decode_index_entry(buf, IndexGeometry(slots, num).entry_position(1))
    assert entry.prev_index == 0
    assert w.header.hash_slot_count == 1
    assert read_slot(buf, slot, slots) == 1


def test_writer_loads_existing_file():
    buf, w = _writer()
    w.put_key("a", 10, 5000)
    w2 = IndexWriter(buf, 10, 8)
    assert w2.header == w.header
    w2.put_key("a", 20, 6000)
    assert select_phy_offsets(buf, "a", 10, LONG_MIN, LONG_MAX, 10, 8) == [20, 10]


# --- select --------------------------------------------------------------------------------


def test_select_time_window_and_early_stop():
    buf, w = _writer(1, 16)
    t0 = 1_700_000_000_000
    for i in range(5):
        w.put_key("key", 100 * i, t0 + i * 10_000)
    everything = select_phy_offsets(buf, "key", 64, LONG_MIN, LONG_MAX, 1, 16)
    assert everything == [400, 300, 200, 100, 0]
    assert select_phy_offsets(buf, "key", 64, t0 + 15_000, t0 + 35_000, 1, 16) == [300, 200]
    assert select_phy_offsets(buf, "key", 2, LONG_MIN, LONG_MAX, 1, 16) == [400, 300]
    assert select_phy_offsets(buf, "other", 64, LONG_MIN, LONG_MAX, 1, 16) == []


def test_select_stops_on_negative_time_diff():
    buf, w = _writer(1, 8)
    w.put_key("k", 1, 1000)
    w.put_key("k", 2, 2000)
    g = IndexGeometry(1, 8)
    struct.pack_into(">i", buf, g.entry_position(2) + 12, -1)
    assert select_phy_offsets(buf, "k", 10, LONG_MIN, LONG_MAX, 1, 8) == []


def test_select_nothing_when_index_count_le_1():
    buf, w = _writer(1, 8)
    w.put_key("k", 1, 1000)
    struct.pack_into(">i", buf, 36, 1)
    assert select_phy_offsets(buf, "k", 10, LONG_MIN, LONG_MAX, 1, 8) == []


def _cyclic_file(match: bool) -> bytearray:
    """Slot 0 → entry 3 → 1 → 2 → 3 → ... (a loop RocketMQ would walk forever)."""
    slots, num = 1, 8
    g = IndexGeometry(slots, num)
    buf = bytearray(g.size)
    buf[:INDEX_HEADER_SIZE] = encode_index_header(IndexHeader(1000, 1000, 0, 0, 1, 4))
    struct.pack_into(">i", buf, g.slot_position(0), 3)
    key_hash = index_key_hash("k") if match else index_key_hash("k") + 1
    for number, prev in ((1, 2), (2, 3), (3, 1)):
        buf[g.entry_position(number) : g.entry_position(number) + 20] = encode_index_entry(
            IndexEntry(key_hash, number, 0, prev)
        )
    return buf


def test_select_cycle_terminates():
    buf = _cyclic_file(match=False)
    with pytest.raises(CorruptDataError) as info:
        select_phy_offsets(buf, "k", 64, LONG_MIN, LONG_MAX, 1, 8)
    assert "loops" in str(info.value)
    # with matching entries max_num is reached first, as RocketMQ would return
    hits = select_phy_offsets(_cyclic_file(match=True), "k", 5, LONG_MIN, LONG_MAX, 1, 8)
    assert hits == [3, 1, 2, 3, 1]


def test_iter_chain_cycle_and_bad_links():
    buf = _cyclic_file(match=False)
    g = IndexGeometry(1, 8)
    with pytest.raises(CorruptDataError) as info:
        list(iter_chain(buf, 0, 1, 8))
    assert info.value.position == g.entry_position(1) + 16  # 3 → 1, then entry 1 links forward to 2
    struct.pack_into(">i", buf, g.slot_position(0), 9)
    with pytest.raises(CorruptDataError) as info:
        list(iter_chain(buf, 0, 1, 8))
    assert info.value.position == g.slot_position(0)
    with pytest.raises(ValueError):
        list(iter_chain(buf, 1, 1, 8))


def test_iter_entries_rejects_count_beyond_capacity():
    buf, _ = _writer(1, 8)
    struct.pack_into(">i", buf, 36, 9)
    with pytest.raises(CorruptDataError) as info:
        list(iter_entries(buf, 1, 8))
    assert info.value.position == 36


def test_select_link_beyond_buffer():
    buf, w = _writer(1, 4)
    w.put_key("k", 1, 1000)
    struct.pack_into(">i", buf, 36, 100)  # corrupt indexCount lets links leave the file
    struct.pack_into(">i", buf, IndexGeometry(1, 4).slot_position(0), 50)
    with pytest.raises(TruncatedDataError):
        select_phy_offsets(buf, "k", 10, LONG_MIN, LONG_MAX, 1, 4)


KEYS = st.text(alphabet="abcdef#0", min_size=0, max_size=4)


@given(
    st.integers(1, 7),
    st.integers(2, 40),
    st.lists(st.tuples(KEYS, st.integers(0, 2**40), st.integers(1, 2**42)), max_size=45),
)
def test_writer_select_model(slots, num, puts):
    """Every written key is found; select equals the newest-first model of its hash chain."""
    buf = bytearray(index_file_size(slots, num))
    writer = IndexWriter(buf, slots, num)
    written = []
    for key, phy, ts in puts:
        ok = writer.put_key(key, phy, ts)
        assert ok == (len(written) < num - 1)
        if ok:
            written.append((key, phy))
    for key, _ in written:
        h = index_key_hash(key)
        expected = [p for k, p in reversed(written) if index_key_hash(k) == h]
        assert select_phy_offsets(buf, key, len(written), LONG_MIN, LONG_MAX, slots, num) == expected
    assert [(e.key_hash, e.phy_offset) for _, e in iter_entries(buf, slots, num)] == [
        (index_key_hash(k), p) for k, p in written
    ]
    chained = []
    for slot, _ in iter_used_slots(buf, slots):
        chain = list(iter_chain(buf, slot, slots, num))
        assert [n for n, _ in chain] == sorted((n for n, _ in chain), reverse=True)
        chained.extend(n for n, _ in chain)
    assert sorted(chained) == list(range(1, len(written) + 1))
    header = decode_index_header(buf)
    assert header.index_count == (len(written) + 1 if written else 0)
    assert header.hash_slot_count == len({index_key_hash(k) % slots for k, _ in written})


@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 10**6)), min_size=1, max_size=30))
def test_time_window_finds_every_put(puts):
    base = 1_600_000_000_000
    buf = bytearray(index_file_size(3, 64))
    w = IndexWriter(buf, 3, 64)
    stamps = [base + dt for _, dt in puts]
    for (phy, _), ts in zip(puts, stamps):
        w.put_key("TopicTest#K", phy, ts)
    begin = stamps[0]
    found = select_phy_offsets(buf, "TopicTest#K", 64, begin - 1000, max(stamps), 3, 64)
    # entries stored before the first store time read back as the begin time
    assert sorted(found) == sorted(phy for phy, _ in puts)


SMALL = IndexGeometry(3, 6)


@given(st.binary(min_size=SMALL.size, max_size=SMALL.size), KEYS, st.integers(0, 2))
def test_readers_on_garbage_terminate_with_mq_errors(data, key, slot):
    for run in (
        lambda: select_phy_offsets(data, key, 1000, LONG_MIN, LONG_MAX, 3, 6),
        lambda: list(iter_chain(data, slot, 3, 6)),
        lambda: list(iter_entries(data, 3, 6)),
        lambda: list(iter_used_slots(data, 3)),
        lambda: infer_index_geometry(len(data), decode_index_header(data)),
    ):
        try:
            run()
        except MqError:
            pass


@given(st.lists(st.integers(0, 5), min_size=6, max_size=6), st.integers(0, 5))
def test_arbitrary_links_terminate(links, head):
    """Any link graph over the entries (cycles included) ends in a result or CorruptDataError."""
    g = IndexGeometry(1, 6)
    buf = bytearray(g.size)
    buf[:40] = encode_index_header(IndexHeader(1000, 1000, 0, 0, 1, 6))
    struct.pack_into(">i", buf, g.slot_position(0), head)
    for number in range(6):
        buf[g.entry_position(number) : g.entry_position(number) + 20] = encode_index_entry(
            IndexEntry(index_key_hash("k"), number, 0, links[number])
        )
    for run in (
        lambda: select_phy_offsets(buf, "k", 10**6, LONG_MIN, LONG_MAX, 1, 6),
        lambda: list(iter_chain(buf, 0, 1, 6)),
    ):
        try:
            run()
        except CorruptDataError:
            pass
