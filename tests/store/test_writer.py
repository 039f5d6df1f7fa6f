"""The store writer lays files out like the broker; the store readers read them back."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.checkpoint import decode_checkpoint
from mqtool.formats.rocketmq.hashing import tags_code
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model.commitlog_walk import FileRecords
from mqtool.store.writer import StoreWriter, WriterConfig, delivery_tags_code

SMALL = WriterConfig(commitlog_file_size=4096, cq_file_size=200, index_hash_slot_num=16, index_num=64, index_tz=dt.timezone.utc)


def _clock(start=1_700_000_000_000):
    state = [start]

    def tick():
        state[0] += 10
        return state[0]

    return tick


def _msg(i, topic="T", qid=0, **kw):
    return cl.MessageRecord(topic=topic, queue_id=qid, body=b"b" * (50 + i % 30), properties={"KEYS": f"k{i}", "TAGS": "TagA"}, **kw)


def _all_records(store):
    out = []
    for seg in store.commitlog:
        if seg.size == 0:
            continue
        with ReadOnlyFile(seg.path) as f:
            walk = FileRecords(f)
            out.extend((seg.base + pos, rec) for pos, rec in walk)
            assert walk.error is None
    return out


def test_roll_over_with_blank_and_cq_units(tmp_path):
    with StoreWriter(tmp_path, SMALL, clock=_clock()) as w:
        results = [w.append(_msg(i, qid=i % 2)) for i in range(120)]
    store = rmq.open_store(tmp_path)
    assert len(store.commitlog) > 2
    for seg in store.commitlog[:-1]:
        with ReadOnlyFile(seg.path) as f:
            walk = FileRecords(f)
            list(walk)
        assert walk.end.kind == "blank" and walk.end.length == seg.size - walk.end.position >= 8
    records = _all_records(store)
    assert [off for off, _ in records] == [r.commitlog_offset for r in results]
    for off, rec in records:
        assert rec.physical_offset == off
    for qid in (0, 1):
        units = list(rmq.QueueWalk(store.cq_segments("T", qid)))
        assert [u.queue_offset for u in units] == list(range(60))
        by_offset = dict(records)
        for u in units:
            rec = by_offset[u.unit.commitlog_offset]
            assert (rec.queue_id, rec.queue_offset, rec.total_size) == (qid, u.queue_offset, u.unit.size)
            assert u.unit.tags_code == tags_code("TagA")
    cp = decode_checkpoint((tmp_path / "checkpoint").read_bytes())
    assert cp.physic_msg_timestamp == results[-1].store_timestamp
    assert not (tmp_path / "abort").exists()


def test_index_rolls_and_finds_every_key(tmp_path):
    with StoreWriter(tmp_path, SMALL, clock=_clock()) as w:
        results = [w.append(_msg(i)) for i in range(100)]
    store = rmq.open_store(tmp_path)
    files = store.index_files()
    assert len(files) >= 2  # 64-entry files: 100 keys x 1 (no UNIQ_KEY) roll over
    for i, res in enumerate(results):
        found = []
        for path in files:
            with rmq.IndexFileView(path) as view:
                found += idxf.select_phy_offsets(view.buf, f"T#k{i}", 64, 0, 2**62, 16, 64)
        assert res.commitlog_offset in found


def test_transactions_and_delay(tmp_path):
    with StoreWriter(tmp_path, SMALL, clock=_clock()) as w:
        prepared = w.append(_msg(0, sys_flag=cl.SYSFLAG_TRANSACTION_PREPARED))
        rolled = w.append(_msg(1, sys_flag=cl.SYSFLAG_TRANSACTION_ROLLBACK))
        normal = w.append(_msg(2))
        delayed = w.append(cl.MessageRecord(topic="SCHEDULE_TOPIC_XXXX", queue_id=2, properties={"DELAY": "3"}))
    assert prepared.queue_offset == rolled.queue_offset == 0 and normal.queue_offset == 0
    store = rmq.open_store(tmp_path)
    units = list(rmq.QueueWalk(store.cq_segments("T", 0)))
    assert [u.unit.commitlog_offset for u in units] == [normal.commitlog_offset]
    sched = list(rmq.QueueWalk(store.cq_segments("SCHEDULE_TOPIC_XXXX", 2)))
    assert sched[0].unit.tags_code == delivery_tags_code(delayed.store_timestamp, "3") == delayed.store_timestamp + 10_000


def test_resume_continues_offsets(tmp_path):
    with StoreWriter(tmp_path, SMALL, clock=_clock()) as w:
        first = [w.append(_msg(i)) for i in range(30)]
    with StoreWriter(tmp_path, SMALL, clock=_clock(1_800_000_000_000)) as w:
        more = [w.append(_msg(i)) for i in range(30, 40)]
    assert more[0].queue_offset == 30
    assert more[0].commitlog_offset == first[-1].commitlog_offset + first[-1].size or more[0].commitlog_offset % 4096 == 0
    store = rmq.open_store(tmp_path)
    assert len(_all_records(store)) == 40


def test_unclean_close_leaves_abort(tmp_path):
    w = StoreWriter(tmp_path, SMALL, clock=_clock())
    w.append(_msg(0))
    w.close(clean=False)
    assert (tmp_path / "abort").exists()


def test_v2_magic_for_long_topic(tmp_path):
    with StoreWriter(tmp_path, SMALL, clock=_clock()) as w:
        w.append(cl.MessageRecord(topic="x" * 128, body=b"1"))
        w.append(cl.MessageRecord(topic="x" * 127, body=b"2"))
    magics = [rec.magic_code for _, rec in _all_records(rmq.open_store(tmp_path))]
    assert magics == [cl.MAGIC_V2, cl.MAGIC_V1]


@settings(max_examples=25)
@given(st.lists(st.tuples(st.integers(0, 3), st.binary(max_size=300)), min_size=1, max_size=40))
def test_writer_read_back_property(tmp_path_factory, items):
    root = tmp_path_factory.mktemp("store")
    with StoreWriter(root, SMALL, clock=_clock()) as w:
        for qid, body in items:
            w.append(cl.MessageRecord(topic="P", queue_id=qid, body=body))
    records = _all_records(rmq.open_store(root))
    assert [(r.queue_id, r.body) for _, r in records] == items
