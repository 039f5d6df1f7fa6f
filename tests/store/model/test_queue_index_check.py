"""The ConsumeQueue and IndexFile checks of the store model (``queue_check``, ``index_check``),
called directly as validate's workers call them: a healthy queue and index say nothing, a unit or
an entry that names the wrong record is found at its own position, and a unit or entry pointing
into a range the CommitLog phase already reported is not reported again."""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.store import rocketmq as rmq
from mqtool.store.model import index_check, queue_check
from mqtool.store.writer import StoreWriter, WriterConfig

CONFIG = WriterConfig(commitlog_file_size=64 * 1024, cq_file_size=60 * 20, index_hash_slot_num=64, index_num=256)


def _store(root: Path) -> rmq.RocketMQStore:
    with StoreWriter(root, CONFIG) as w:
        for i in range(12):
            w.append(cl.MessageRecord(topic="T", queue_id=0, body=b"body %d" % i, properties={"KEYS": f"k{i}", "TAGS": "a"}))
    return rmq.open_store(root, commitlog_file_size=CONFIG.commitlog_file_size)


def _queue_task(store: rmq.RocketMQStore, damaged: tuple[tuple[int, int], ...] = ()) -> queue_check.QueueTask:
    end = rmq.commitlog_end(store)
    return queue_check.QueueTask(str(store.root), "T", 0, CONFIG.cq_file_size, CONFIG.commitlog_file_size, 0, end, 11, None, damaged)


def _index_task(store: rmq.RocketMQStore, damaged: tuple[tuple[int, int], ...] = ()) -> index_check.IndexTask:
    end = rmq.commitlog_end(store)
    return index_check.IndexTask(str(store.root), str(store.index_files()[0]), CONFIG.commitlog_file_size, 0, end, 64, 256, damaged=damaged)


def test_a_healthy_queue_and_index_say_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    q = queue_check.check_queue(_queue_task(store))
    assert q.findings == [] and (q.min_offset, q.max_offset) == (0, 12)
    assert pickle.loads(pickle.dumps(q)) == q  # validate's workers send it back
    i = index_check.check_index_file(_index_task(store))
    assert i.findings == [] and i.entries == 12  # the KEYS key of each record (no UNIQ_KEY here)


def test_a_unit_naming_another_record_is_found_at_its_position(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    seg = store.cq_segments("T", 0)[0]
    data = bytearray(seg.path.read_bytes())
    second = struct.unpack_from(">q", data, cqf.CQ_UNIT_SIZE)[0]
    struct.pack_into(">q", data, 3 * cqf.CQ_UNIT_SIZE, second)  # unit 3 names record 1
    seg.path.write_bytes(bytes(data))
    q = queue_check.check_queue(_queue_task(store))
    assert [(f.code, f.position) for f in q.findings] == [("RMQ-CQ-MISMATCH", 3 * cqf.CQ_UNIT_SIZE)]
    # the record's range already reported by the CommitLog phase: not again
    assert queue_check.check_queue(_queue_task(store, damaged=((second, second + 1),))).findings == []


def test_an_entry_naming_no_record_is_found_at_its_position(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    path = store.index_files()[0]
    view = rmq.IndexFileView(path, hash_slot_num=64, index_num=256)
    at = view.geometry.entry_position(5)
    view.close()
    data = bytearray(path.read_bytes())
    off = struct.unpack_from(">q", data, at + 4)[0]
    struct.pack_into(">q", data, at + 4, off + 1)  # one byte into its record
    path.write_bytes(bytes(data))
    i = index_check.check_index_file(_index_task(store))
    assert [(f.code, f.position) for f in i.findings] == [("RMQ-IDX-ENTRY", at)]
    assert index_check.check_index_file(_index_task(store, damaged=((off + 1, off + 2),))).findings == []
