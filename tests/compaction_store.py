"""A writer of RocketMQ compaction stores (``compaction/``) for the tests, built from the broker's
own rules, not from mqtool's readers:

* ``CompactionService.putRequest`` copies each CommitLog record of a compaction topic, byte for
  byte, to its queue's compaction log (``CompactionLog.asyncPutMessage``); the records here are
  read back from a CommitLog the store writer wrote;
* ``CompactionLog.CompactionAppendMessageCallback.doAppend`` rewrites PHYSICALOFFSET (bytes 28..36)
  to the record's compaction-log offset and appends one 46-byte unit to the sparse consume queue
  (``BatchConsumeQueue.putBatchMessagePositionInfo``: offset, size, tagsCode, storeTime,
  msgBaseOffset, batchSize 1, compactedOffset -1, reserved 0); when the unit would fill the CQ file
  or the record plus 8 bytes does not fit the log file, it writes the end unit
  (``SparseConsumeQueue.putEndPositionInfo``: -1, 0, 0, 0, 0, 0, -1, 0) and a BLANK (bytes left,
  ``0xCBD43194``) and rolls both files (``TopicPartitionLog.roll``: the CQ file takes the log
  file's name);
* ``CompactionPositionMgr`` writes ``position-checkpoint`` as ``{"queueOffsetMap": {"topic_qid": n}}``.

``keep`` drops records as a compaction would (their queue offsets leave gaps).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.formats.rocketmq.commitlog import MessageRecord, RecordWalker
from mqtool.store.writer import StoreWriter, WriterConfig

UNIT_FMT = ">qiqqqhii"
UNIT_LEN = struct.calcsize(UNIT_FMT)  # 46
END_UNIT = struct.pack(UNIT_FMT, -1, 0, 0, 0, 0, 0, -1, 0)
BLANK_MAGIC = 0xCBD43194
PHYSICAL_OFFSET_AT = 28  # 4 + 4 + 4 + 4 + 4 + 8: TOTALSIZE, MAGIC, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET

T0 = 1_700_000_000_000


def java_hash(text: str) -> int:
    h = 0
    for ch in text.encode("utf-16-be").decode("utf-16-be"):
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@dataclass
class Placed:
    """A record the writer placed: its compaction-log offset, file, position, and unit's place."""

    topic: str
    queue_id: int
    offset: int
    log_file: Path
    position: int
    size: int
    queue_offset: int
    cq_file: Path
    cq_position: int


@dataclass
class _Queue:
    log_dir: Path
    cq_dir: Path
    log_files: dict[int, bytearray] = field(default_factory=dict)
    cq_files: dict[int, bytearray] = field(default_factory=dict)
    log_wrote: int = 0  # position in the current (last) log file
    cq_wrote: int = 0
    base: int | None = None


@dataclass
class CompactionWriter:
    root: Path
    cq_file_size: int = 20 * UNIT_LEN
    log_file_size: int = 5 * 20 * UNIT_LEN  # getCompactionLogSize: at least five CQ file sizes
    queues: dict[tuple[str, int], _Queue] = field(default_factory=dict)
    placed: list[Placed] = field(default_factory=list)

    def _queue(self, topic: str, qid: int) -> _Queue:
        key = (topic, qid)
        if key not in self.queues:
            base = self.root / "compaction"
            self.queues[key] = _Queue(base / "compactionLog" / topic / str(qid), base / "compactionCq" / topic / str(qid))
        return self.queues[key]

    def _roll(self, q: _Queue) -> None:
        q.base = 0 if q.base is None else q.base + self.log_file_size
        q.log_files[q.base] = bytearray(self.log_file_size)
        q.cq_files[q.base] = bytearray(self.cq_file_size)
        q.log_wrote = q.cq_wrote = 0

    def put(self, raw: bytes, tags: str | None) -> Placed:
        """``asyncPutMessage`` of one CommitLog record's bytes."""
        total, _magic, _crc, qid, _flag, queue_offset = struct.unpack_from(">iIiiiq", raw, 0)
        record_topic = _topic_of(raw)
        q = self._queue(record_topic, qid)
        if q.base is None or q.log_wrote == self.log_file_size or q.cq_wrote == self.cq_file_size:
            self._roll(q)
        assert q.base is not None
        max_blank = self.log_file_size - q.log_wrote
        if q.cq_wrote + UNIT_LEN >= self.cq_file_size or total + 8 > max_blank:
            cq = q.cq_files[q.base]
            if q.cq_wrote < self.cq_file_size:
                cq[q.cq_wrote : q.cq_wrote + UNIT_LEN] = END_UNIT
                q.cq_wrote += UNIT_LEN
            q.log_files[q.base][q.log_wrote : q.log_wrote + 8] = struct.pack(">iI", max_blank, BLANK_MAGIC)
            q.log_wrote = self.log_file_size
            self._roll(q)
            assert q.base is not None
        offset = q.base + q.log_wrote
        data = bytearray(raw)
        struct.pack_into(">q", data, PHYSICAL_OFFSET_AT, offset)
        q.log_files[q.base][q.log_wrote : q.log_wrote + total] = data
        store_ts = struct.unpack_from(">q", raw, _store_timestamp_at(raw))[0]
        tags_code = java_hash(tags) if tags else 0
        cq_pos = q.cq_wrote
        q.cq_files[q.base][cq_pos : cq_pos + UNIT_LEN] = struct.pack(UNIT_FMT, offset, total, tags_code, store_ts, queue_offset, 1, -1, 0)
        q.cq_wrote += UNIT_LEN
        name = f"{q.base:020d}"
        placed = Placed(record_topic, qid, offset, q.log_dir / name, q.log_wrote, total, queue_offset, q.cq_dir / name, cq_pos)
        q.log_wrote += total
        self.placed.append(placed)
        return placed

    def write(self, positions: dict[str, int] | None = None) -> None:
        for q in self.queues.values():
            q.log_dir.mkdir(parents=True, exist_ok=True)
            q.cq_dir.mkdir(parents=True, exist_ok=True)
            for base, buf in q.log_files.items():
                (q.log_dir / f"{base:020d}").write_bytes(bytes(buf))
            for base, buf in q.cq_files.items():
                (q.cq_dir / f"{base:020d}").write_bytes(bytes(buf))
        (self.root / "compaction").mkdir(parents=True, exist_ok=True)
        if positions is not None:
            (self.root / "compaction" / "position-checkpoint").write_text(json.dumps({"queueOffsetMap": positions}))


def _topic_of(raw: bytes) -> str:
    sys_flag = struct.unpack_from(">i", raw, 36)[0]
    born = 20 if sys_flag & 0x10 else 8
    store = 20 if sys_flag & 0x20 else 8
    body_len_at = 48 + born + 8 + store + 4 + 8
    body_len = struct.unpack_from(">i", raw, body_len_at)[0]
    topic_at = body_len_at + 4 + body_len
    n = raw[topic_at]
    return raw[topic_at + 1 : topic_at + 1 + n].decode()


def _store_timestamp_at(raw: bytes) -> int:
    sys_flag = struct.unpack_from(">i", raw, 36)[0]
    return 48 + (20 if sys_flag & 0x10 else 8)


def make_compaction_store(
    root: Path,
    messages: int = 60,
    *,
    topics: tuple[str, ...] = ("Compacted",),
    queues: int = 2,
    keep: Callable[[int], bool] = lambda i: True,
    cq_units_per_file: int = 20,
    log_file_size: int | None = None,
    positions: dict[str, int] | None = None,
) -> CompactionWriter:
    """A store whose CommitLog holds ``messages`` messages of the compaction ``topics`` (each with
    KEYS, as the compaction log keeps only keyed ones) spread over ``queues`` queues and a plain
    topic, and their compaction logs and sparse consume queues; message ``i`` is copied when
    ``keep(i)``."""
    clock = iter(range(T0, T0 + 10_000_000))
    with StoreWriter(root, WriterConfig(commitlog_file_size=1 << 20, enable_index=False), clock=lambda: next(clock)) as w:
        for i in range(messages):
            topic = topics[i % len(topics)]
            w.append(MessageRecord(topic=topic, queue_id=i % queues, body=b"v%d" % i * (i % 7 + 1), properties={"KEYS": f"k{i % 11}", "TAGS": f"t{i % 3}"}))
            if i % 5 == 0:
                w.append(MessageRecord(topic="Plain", body=b"plain", properties={"TAGS": "p"}))
    cq_size = cq_units_per_file * UNIT_LEN
    writer = CompactionWriter(root, cq_file_size=cq_size, log_file_size=log_file_size or 5 * cq_size)
    data = (root / "commitlog" / f"{0:020d}").read_bytes()
    n = 0
    for pos, record in RecordWalker(data):
        if record.topic not in topics:
            continue
        if keep(n):
            writer.put(data[pos : pos + record.total_size], record.properties.get("TAGS"))
        n += 1
    writer.write(positions)
    return writer
