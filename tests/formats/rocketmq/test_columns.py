"""The fast column walk agrees with the precise decoder record for record, and stops with
``anomaly`` wherever the precise decoder would have something to say."""

from __future__ import annotations

import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.formats.rocketmq.columns import concat_columns, walk_columns
from mqtool.formats.rocketmq.unit_columns import cq_units, record_key_table
from mqtool.formats.rocketmq.consume_queue import CqUnit, encode_cq_unit
from mqtool.formats.rocketmq.hashing import dispatch_tags_code, index_key_hash, index_key_hashes
from mqtool.formats.rocketmq.properties import split_keys
from tests.strategies import message_records

BASE = 1 << 30


def _file(records: list[cl.MessageRecord]) -> bytes:
    out = bytearray()
    for i, rec in enumerate(records):
        rec = cl.with_offsets(rec, queue_offset=i, physical_offset=BASE + len(out))
        out += cl.encode_message(rec)
    return bytes(out)


@settings(max_examples=150)
@given(st.lists(message_records(max_body=64), min_size=1, max_size=6), st.sampled_from(["zeros", "eof", "blank"]))
def test_columns_equal_the_precise_decode(records: list[cl.MessageRecord], ending: str) -> None:
    data = _file(records)
    if ending == "zeros":
        data += bytes(64)
    elif ending == "blank":
        data += cl.encode_blank(64) + bytes(56)
    decoded = list(cl.RecordWalker(data))
    walk = walk_columns(data, BASE)
    if walk.stop.kind == "anomaly":
        # only for what the precise reading reports: properties the broker drops, __CRC32#, or
        # a record ending in a zero byte (what a torn write leaves: the precise path judges it)
        assert any(r.dropped_properties or cl.CRC32 in r.properties or data[p + r.total_size - 1] == 0 for p, r in decoded)
        return
    assert walk.stop.kind == ending
    cols = walk.columns
    assert len(cols) == len(decoded)
    for i, (pos, rec) in enumerate(decoded):
        assert int(cols.position[i]) == pos
        assert int(cols.size[i]) == rec.total_size
        assert int(cols.queue_id[i]) == rec.queue_id
        assert int(cols.queue_offset[i]) == rec.queue_offset
        assert int(cols.store_timestamp[i]) == rec.store_timestamp
        assert int(cols.sys_flag[i]) == rec.sys_flag
        assert cols.topics[int(cols.topic[i])] == rec.topic
        assert int(cols.tags_code[i]) == dispatch_tags_code(rec.topic, rec.tags, rec.properties.get("DELAY"), rec.store_timestamp)
        keys = ([f"{rec.topic}#{rec.uniq_key}"] if rec.uniq_key else []) + [f"{rec.topic}#{k}" for k in split_keys(rec.properties)]
        assert sorted(int(h) for h in cols.key_hash[cols.key_record == i]) == sorted(index_key_hash(k) for k in keys)


_TEXT = st.text(st.characters(blacklist_characters="\x01\x02 ", blacklist_categories=("Cs",)), min_size=1, max_size=70)


@settings(max_examples=80)
@given(st.lists(st.tuples(_TEXT, _TEXT, st.lists(_TEXT, min_size=1, max_size=4), _TEXT), min_size=1, max_size=5))
def test_long_and_wide_keys_and_tags_hash_as_java_does(records: list[tuple[str, str, list[str], str]]) -> None:
    """Tags and index keys of any length (31**n wraps 2**32 from n = 7) and any UTF-8 text."""
    data = _file(
        [cl.MessageRecord(topic=t, body=b"b", properties={"UNIQ_KEY": u, "KEYS": "  ".join(k), "TAGS": g}) for t, u, k, g in records]
    )
    cols = walk_columns(data, BASE).columns
    assert len(cols) == len(records)
    for i, (topic, uniq, keys, tags) in enumerate(records):
        assert cols.topics[int(cols.topic[i])] == topic
        assert int(cols.tags_code[i]) == dispatch_tags_code(topic, tags, None, 0)
        expected = [index_key_hash(f"{topic}#{uniq}")] + [index_key_hash(f"{topic}#{k}") for k in keys]
        assert cols.key_hash[cols.key_record == i].tolist() == expected


def _record(i: int, **props: str) -> cl.MessageRecord:
    return cl.MessageRecord(topic="T", queue_id=0, body=b"x" * 10, properties={"TAGS": "a", **props}, queue_offset=i)


def test_every_kind_of_damage_is_an_anomaly() -> None:
    good = _file([_record(i) for i in range(3)])
    first = cl.encode_message(cl.with_offsets(_record(0), queue_offset=0, physical_offset=BASE))
    size = len(first)
    body_at = cl.body_position(0)
    cases = {
        "body byte": (body_at, 1),
        "magic": (4, 1),
        "physical offset": (cl.PHYSICAL_OFFSET_POSITION + 7, 1),
        "topic length": (body_at + 10, 3),
    }
    for name, (at, xor) in cases.items():
        data = bytearray(good)
        data[at] ^= xor
        assert walk_columns(bytes(data), BASE).stop.kind == "anomaly", name
    # a QUEUEOFFSET that does not follow its queue: the columns' queue runs refuse it
    skipped = bytearray(good)
    skipped[size + cl.QUEUE_OFFSET_POSITION + 7] ^= 5
    assert walk_columns(bytes(skipped), BASE).columns.queue_runs() is None
    dropped = _file([cl.MessageRecord(topic="T", body=b"", properties={"TAGS": "a"})]).replace(b"TAGS\x01a", b"TAGSxxa")
    assert walk_columns(dropped, BASE).stop.kind == "anomaly"
    crc = _file([cl.MessageRecord(topic="T", body=b"", properties={"TAGS": "a", cl.CRC32: "0000000000"})])
    assert walk_columns(crc, BASE).stop.kind == "anomaly"
    torn = bytearray(good)
    torn[len(torn) - 1] = 0
    assert walk_columns(bytes(torn), BASE).stop.kind == "anomaly"
    assert walk_columns(good[:-5], BASE).stop.kind == "partial"


def test_chunks_concatenate_to_the_whole() -> None:
    data = _file([_record(i, KEYS=f"k{i} z") for i in range(10)])
    whole = walk_columns(data, BASE).columns
    cut = int(whole.position[4])
    parts = [(0, walk_columns(data[:cut], BASE).columns), (cut, walk_columns(data[cut:], BASE + cut).columns)]
    joined = concat_columns(parts)
    for name in ("position", "size", "queue_offset", "tags_code", "key_record", "key_hash"):
        assert getattr(joined, name).tolist() == getattr(whole, name).tolist(), name
    assert record_key_table(joined).tolist() == record_key_table(whole).tolist()
    assert joined.queue_runs() == whole.queue_runs()


def test_queue_runs_need_offsets_that_follow() -> None:
    data = _file([_record(i) for i in range(4)])
    cols = walk_columns(data, BASE).columns
    runs = cols.queue_runs()
    assert runs is not None and runs[("T", 0)].first == 0 and runs[("T", 0)].last == 3 and runs[("T", 0)].count == 4
    cols.queue_offset[2] = 7
    assert cols.queue_runs() is None


@given(st.lists(st.text(max_size=20), max_size=30))
def test_vectorised_key_hashes_equal_java_string_hash(keys: list[str]) -> None:
    raw = [k.encode("utf-8", "surrogatepass") for k in keys]
    assert index_key_hashes(raw).tolist() == [index_key_hash(k) for k in keys]


def test_cq_units_read_big_endian_units() -> None:
    data = encode_cq_unit(CqUnit(123, 45, -6)) + encode_cq_unit(CqUnit(1 << 40, 1, 7)) + b"\x01"
    units = cq_units(data)
    assert [(int(u["offset"]), int(u["size"]), int(u["tags_code"])) for u in units] == [(123, 45, -6), (1 << 40, 1, 7)]
    assert zlib.crc32(data)  # the buffer is not modified
