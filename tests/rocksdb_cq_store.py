"""A test writer of RocketMQ 5.2+ RocksDB ConsumeQueues, built from the upstream layout with rocksdict.

Keys and values are packed here with ``struct`` as the upstream classes lay them out, not with
mqtool's encoders:

* ``RocksDBConsumeQueueTable.buildCQKeyByteBuffer``: ``int topicLen, CTRL_1, topic, CTRL_1, int
  queueId, CTRL_1, long queueOffset``; ``buildCQValueByteBuffer``: ``long phyOffset, int size, long
  tagsCode, long storeTimestamp``; in the ``default`` column family;
* ``RocksDBConsumeQueueOffsetTable.buildOffsetKeyByteBuffer``: ``int topicLen, CTRL_1, topic,
  CTRL_1, "max"|"min", CTRL_1, int queueId`` -> ``long phyOffset, long queueOffset`` (the last and
  first unit), and ``appendMaxPhyOffset``'s ``CHECKPOINT_TOPIC``/max/0 -> ``long maxPhyOffset``; in
  the ``offset`` column family (``ConsumeQueueRocksDBStorage.OFFSET_COLUMN_FAMILY``);
* the database is ``<root>/consumequeue`` itself (``RocksDBConsumeQueueStore``:
  ``StorePathConfigHelper.getStorePathConsumeQueue``), its units LZ4-compressed as
  ``RocksDBOptionsFactory.createCQCFOptions`` sets by default.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from mqtool.formats.rocketmq.commitlog import MessageRecord
from mqtool.store.writer import StoreWriter, WriterConfig

CTRL_1 = b"\x01"


def require_rocksdict() -> None:
    """Skip without rocksdict (the ``rocksdb`` extra); under CI, which installs it, fail."""
    import pytest

    if importlib.util.find_spec("rocksdict") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("rocksdict is not installed (CI installs mqtool[rocksdb] with the test extra: see .ci/run)")
        pytest.skip("rocksdict is not installed (pip install 'mqtool[rocksdb]')")
T0 = 1_700_000_000_000


def cq_key(topic: str, queue_id: int, queue_offset: int) -> bytes:
    tb = topic.encode("utf-8")
    return struct.pack(">i", len(tb)) + CTRL_1 + tb + CTRL_1 + struct.pack(">i", queue_id) + CTRL_1 + struct.pack(">q", queue_offset)


def cq_value(phy: int, size: int, tags_code: int, store_ts: int) -> bytes:
    return struct.pack(">qiqq", phy, size, tags_code, store_ts)


def offset_key(topic: str, kind: str, queue_id: int) -> bytes:
    tb = topic.encode("utf-8")
    return struct.pack(">i", len(tb)) + CTRL_1 + tb + CTRL_1 + kind.encode() + CTRL_1 + struct.pack(">i", queue_id)


def java_hash(text: str) -> int:
    h = 0
    for ch in text:  # ASCII tags in these tests
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >> 31 else h


@dataclass(frozen=True)
class Unit:
    topic: str
    queue_id: int
    queue_offset: int
    phy: int
    size: int
    tags_code: int
    store_ts: int


def write_db(db_path: Path, units: list[Unit], *, checkpoint: int | None = None, offsets: bool = True) -> None:
    """Write ``units`` (and each queue's max/min entries, and the dispatch checkpoint) into a RocksDB at ``db_path``."""
    from rocksdict import DBCompressionType, Options, Rdict

    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    opts.set_compression_type(DBCompressionType.lz4())
    db = Rdict(str(db_path), options=opts, column_families={"offset": Options(raw_mode=True)})
    try:
        off = db.get_column_family("offset")
        spans: dict[tuple[str, int], tuple[Unit, Unit]] = {}
        for u in units:
            db[cq_key(u.topic, u.queue_id, u.queue_offset)] = cq_value(u.phy, u.size, u.tags_code, u.store_ts)
            first, last = spans.get((u.topic, u.queue_id), (u, u))
            spans[(u.topic, u.queue_id)] = (first if first.queue_offset <= u.queue_offset else u, u if u.queue_offset >= last.queue_offset else last)
        if offsets:
            for (topic, qid), (first, last) in spans.items():
                off[offset_key(topic, "max", qid)] = struct.pack(">qq", last.phy, last.queue_offset)
                off[offset_key(topic, "min", qid)] = struct.pack(">qq", first.phy, first.queue_offset)
            if checkpoint is None:
                checkpoint = max((u.phy + u.size for u in units), default=0)
            off[offset_key("CHECKPOINT_TOPIC", "max", 0)] = struct.pack(">q", checkpoint)
        db.flush()
    finally:
        db.close()
    # rocksdict's own config file is no part of a broker's database
    (db_path / "rocksdict-config.json").unlink(missing_ok=True)


def make_rocksdb_store(root: Path, *, messages: int = 12, keep_file_cq: bool = False, extra_units: list[Unit] | None = None,
                       drop: set[tuple[str, int, int]] | None = None, checkpoint: int | None = None) -> list[Unit]:
    """A store of ``messages`` records over two topics and queues, whose ConsumeQueue is a RocksDB
    (``storeType=defaultRocksDB``); ``keep_file_cq`` keeps the file ConsumeQueue too (the double
    write); ``drop`` leaves those (topic, queue, offset) units out of the RocksDB; ``extra_units`` adds units."""
    clock = iter(range(T0, T0 + 10_000_000, 7))
    units: list[Unit] = []
    with StoreWriter(root, WriterConfig(commitlog_file_size=1 << 20), clock=lambda: next(clock)) as w:
        for i in range(messages):
            topic, qid, tags = ("TopicA", i % 2, f"tag{i % 3}") if i % 3 else ("TopicB", 0, "b")
            res = w.append(MessageRecord(topic=topic, queue_id=qid, body=b"body %d" % i, properties={"TAGS": tags, "KEYS": f"k{i}"}))
            units.append(Unit(topic, qid, res.queue_offset, res.commitlog_offset, res.size, java_hash(tags), res.store_timestamp))
    cq = root / "consumequeue"
    if not keep_file_cq:
        for child in cq.iterdir():
            shutil.rmtree(child)
    kept = [u for u in units if drop is None or (u.topic, u.queue_id, u.queue_offset) not in drop]
    write_db(cq, kept + list(extra_units or []), checkpoint=checkpoint)
    return units
