"""Jafka data dirs: detection, the partition model, streaming walks, the writer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.errors import StoreLayoutError
from mqtool.formats import jafka as jf
from mqtool.formats import segment_names as segnames
from mqtool.layouts import detect_layout
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.legacy import SegmentWalk, parse_topic_partition
from tests.conftest import FIXTURES, PROJECT_ROOT

DATA = FIXTURES / "jafka-data"


def _segment(messages):
    return b"".join(jf.encode_message(m) for m in messages)


def _make(root, name="t-0", segments=((b"a" * 20,) * 3,), start=0):
    """A partition with contiguous segments; returns their paths."""
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for payloads in segments:
        data = _segment(jf.Message(p) for p in payloads)
        path = d / segnames.jafka_file_name(start)
        path.write_bytes(data)
        paths.append(path)
        start += len(data)
    return paths


# --- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,expected",
    [
        ("orders-0", ("orders", 0)),
        ("user-events-12", ("user-events", 12)),
        ("t--1", ("t-", 1)),
        ("t-+3", ("t", 3)),
        ("t-01", ("t", 1)),
        ("nodash", None),
        ("t-", None),
        ("t-x", None),
        ("t-2147483648", None),
        ("t-٣", ("t", 3)),  # Integer.parseInt takes any Unicode digit
    ],
)
def test_parse_topic_partition_is_java_parse_int(name, expected):
    assert parse_topic_partition(name) == expected


# --- detection ----------------------------------------------------------------------------------


def test_detects_the_fixture_its_partitions_and_segments():
    assert sj.is_jafka_path(DATA)
    assert sj.is_jafka_path(DATA / "orders-0")
    assert sj.is_jafka_path(DATA / "orders-0" / "00000000000000000000.jafka")
    assert detect_layout(DATA) == "jafka"
    assert detect_layout(DATA / "user-events-0") == "jafka"


def test_detection_never_claims_other_layouts(tmp_path):
    kafka = tmp_path / "kafka" / "t-0"
    kafka.mkdir(parents=True)
    for name in ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex"):
        (kafka / name).write_bytes(b"")
    for path in (kafka, kafka.parent, FIXTURES / "rocketmq-store", PROJECT_ROOT / "tests", FIXTURES, FIXTURES / "metaq-data"):
        assert not sj.is_jafka_path(path), path
    assert not sm.is_metaq_path(DATA) and not sm.is_metaq_path(DATA / "orders-0")
    (tmp_path / "x.jafka").write_bytes(b"")  # not <digits>.jafka
    assert not sj.is_jafka_path(tmp_path / "x.jafka")


def test_a_data_dir_with_only_the_marker_is_detected(tmp_path):
    (tmp_path / sj.CLEAN_SHUTDOWN_FILE).touch()
    assert sj.is_jafka_path(tmp_path)
    data = sj.open_jafka(tmp_path)
    assert data.kind == "data-dir" and data.partitions == [] and sj.clean_shutdown_marker(data) is True


# --- opening --------------------------------------------------------------------------------------


def test_open_data_dir_model():
    data = sj.open_jafka(DATA)
    assert data.kind == "data-dir" and data.only is None and data.data_dir == DATA
    assert [p.name for p in data.partitions] == ["orders-0", "orders-1", "user-events-0"]
    orders = data.partitions[0]
    assert (orders.topic, orders.partition) == ("orders", 0)
    starts = [s.start_offset for s in orders.segments]
    assert starts == sorted(starts) and starts[0] == 0
    for prev, nxt in zip(orders.segments, orders.segments[1:]):
        assert prev.start_offset + prev.size == nxt.start_offset
    retained = data.partitions[1]
    assert retained.segments[0].start_offset == 2**32 + 1000
    assert sj.clean_shutdown_marker(data) is True
    assert data.unexpected == [] and data.bad_dirs == []


def test_open_partition_and_single_segment():
    part = sj.open_jafka(DATA / "orders-0")
    assert part.kind == "partition" and len(part.partitions) == 1 and part.data_dir == DATA
    seg_path = DATA / "orders-0" / "00000000000000000771.jafka"
    one = sj.open_jafka(seg_path)
    assert one.kind == "segment" and one.only == seg_path
    assert [s.path for s in one.selected(one.partitions[0])] == [seg_path]
    assert one.partitions[0].last.name != seg_path.name  # the partition is listed in full


def test_a_file_with_another_name_reads_from_position_zero(tmp_path):
    f = tmp_path / "copy.bin"
    f.write_bytes(_segment([jf.Message(b"x")]))
    data = sj.open_jafka(f)
    (seg,) = data.selected(data.partitions[0])
    assert seg.start_offset == 0 and not seg.named and data.notes


def test_loader_rules_for_entries(tmp_path):
    _make(tmp_path, "good-1")
    (tmp_path / "nodash").mkdir()
    (tmp_path / "t-x").mkdir()
    (tmp_path / "stray.txt").write_text("x")
    (tmp_path / "good-1" / "abc.jafka").write_bytes(b"")
    (tmp_path / "good-1" / "notes.txt").write_bytes(b"")
    (tmp_path / "good-1" / "00000000000000009999.jafka.bak").write_bytes(b"")
    data = sj.open_jafka(tmp_path)
    assert [p.name for p in data.partitions] == ["good-1"]
    assert sorted(p.name for p, _ in data.bad_dirs) == ["nodash", "t-x"]
    assert [p.name for p in data.unexpected] == ["stray.txt"]
    part = data.partitions[0]
    assert [p.name for p in part.bad_names] == ["abc.jafka"]
    assert sorted(p.name for p in part.unexpected) == ["00000000000000009999.jafka.bak", "notes.txt"]


def test_not_a_store(tmp_path):
    with pytest.raises(StoreLayoutError):
        sj.open_jafka(tmp_path)
    with pytest.raises(StoreLayoutError):
        sj.open_jafka(tmp_path / "missing")


# --- walking -------------------------------------------------------------------------------------


@settings(max_examples=40)
@given(
    payloads=st.lists(st.binary(max_size=90), min_size=1, max_size=25),
    chunk=st.integers(min_value=16, max_value=300),
    tail=st.sampled_from([b"", b"\x00" * 7, b"\x00\x00\x00\x40\x01\x00"]),
)
def test_walk_in_small_chunks_equals_one_read(tmp_path_factory, payloads, chunk, tail):
    d = tmp_path_factory.mktemp("walk")
    data = _segment(jf.Message(p) for p in payloads) + tail
    path = d / segnames.jafka_file_name(0)
    path.write_bytes(data)
    seg = sj.open_jafka(path).selected(sj.open_jafka(path).partitions[0])[0]
    with sj.open_segment(seg) as reader:
        walk = SegmentWalk(reader, sj.FRAMING, chunk=chunk)
        got = [(p, m.payload) for p, m in walk]
    whole = jf.MessageWalker(data)
    assert got == [(p, m.payload) for p, m in whole]
    assert walk.end.kind == whole.end.kind and walk.end.position == whole.end.position


def test_hostile_length_is_corruption_not_an_allocation(tmp_path):
    path = tmp_path / segnames.jafka_file_name(0)
    huge = (0x7FFFFFF0).to_bytes(4, "big") + b"\x01\x00" + b"\x00" * 200
    path.write_bytes(_segment([jf.Message(b"ok")]) + huge)
    data = sj.open_jafka(path)
    with sj.open_segment(data.partitions[0].segments[0]) as reader:
        walk = SegmentWalk(reader, sj.FRAMING, chunk=64)
        assert [p for p, _ in walk] == [0]
    assert walk.failed_at == 12 and "at most" in str(walk.error) and walk.error.position == 12


# --- writer ---------------------------------------------------------------------------------------


def test_writer_rolls_after_the_segment_grows_past_the_limit(tmp_path):
    writer = sj.JafkaLogWriter(tmp_path / "t-0", log_file_size=30)
    assert writer.append([jf.Message(b"hello")]) == [0]
    assert writer.append([jf.Message(b"world")]) == [15]  # 30 bytes: not > 30, no roll yet
    assert writer.append([jf.Message(b"!")]) == [30]  # 41 > 30: roll to 41
    names = sorted(p.name for p in (tmp_path / "t-0").iterdir())
    assert names == ["00000000000000000000.jafka", "00000000000000000041.jafka"]
    assert (tmp_path / "t-0" / names[0]).read_bytes()[:30] == bytes.fromhex(
        "0000000b01003610a68668656c6c6f0000000b01003a771143776f726c64"
    )
    again = sj.JafkaLogWriter(tmp_path / "t-0", log_file_size=30)
    assert again.next_offset == 41


def test_is_torn_message_tells_a_crash_from_damage(tmp_path):
    from mqtool.store.legacy import is_torn_message

    w = sj.JafkaLogWriter(tmp_path / "t-0", log_file_size=1 << 20)
    for i in range(3):
        w.append([jf.Message(bytes([65 + i]) * 40)])
    (seg,) = [p for p in (tmp_path / "t-0").iterdir() if p.stat().st_size]
    clean = seg.read_bytes()
    with sj.open_segment(sj.open_jafka(tmp_path / "t-0").partitions[0].segments[0]) as reader:
        positions = [p for p, _ in SegmentWalk(reader, sj.FRAMING)]
    last = positions[-1]
    cases = {
        clean[:-5] + bytes(5): True,  # its end never written
        clean[:-5] + bytes(2) + b"xyz": False,  # written whole, damaged
        clean[: last + 7]: True,  # the file ends inside it
        clean[:last] + b"\x01\x02": True,  # fewer bytes than a header, not zeros
    }
    for data, torn in cases.items():
        seg.write_bytes(data)
        with sj.open_segment(sj.open_jafka(tmp_path / "t-0").partitions[0].segments[0]) as reader:
            assert is_torn_message(reader, last, sj.FRAMING) is torn, data[last:]


def test_end_damage_tells_a_torn_tail_from_a_damaged_length(tmp_path):
    """A LENGTH running past the end of the file is a crash's torn tail only in the last segment and
    only when no valid message lies in the bytes it claims."""
    from mqtool.store.legacy import Segment, end_damage

    msgs = [jf.encode_message(jf.Message(bytes([65 + i]) * 40)) for i in range(4)]
    damaged = bytearray(b"".join(msgs))
    damaged[len(msgs[0]) + 2] = 0x7F  # the second message's LENGTH: 0x00007f2e
    torn = b"".join(msgs) + msgs[0][:20]
    path = tmp_path / "00000000000000000000.jafka"
    for data, last, found in (
        (bytes(damaged), True, "a valid message starts at position 100"),
        (bytes(damaged), False, "a valid message starts at position 100"),
        (torn, True, None),
        (torn, False, "found a partial message: 20 of the 50 bytes its LENGTH 46 claims"),
        (b"".join(msgs) + bytes(7), True, None),
        (b"".join(msgs) + bytes(7), False, "found 7 zero bytes"),
        (b"".join(msgs) + bytes(7) + msgs[0], True, "holding a valid message at position 207"),
    ):
        path.write_bytes(data)
        with sj.open_segment(Segment(path, 0, len(data), len(data))) as reader:
            walk = SegmentWalk(reader, sj.FRAMING)
            for _ in walk:
                pass
            error = end_damage(reader, sj.FRAMING, walk.end, last=last)
        if found is None:
            assert error is None, (last, data[-30:])
        else:
            assert error is not None and found in str(error) and str(error).startswith(f"{path}:"), (last, str(error))
