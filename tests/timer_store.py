"""A test writer of RocketMQ 5.x timer stores, built from the upstream layout, not from mqtool's encoders.

It packs the bytes itself with ``struct`` as the upstream classes lay them out, and enqueues the way
``TimerMessageStore.doEnqueue`` does:

* the timer message goes first into the CommitLog under ``rmq_sys_wheel_timer`` (queue 0) with
  ``REAL_TOPIC``, ``REAL_QID`` and ``TIMER_OUT_MS`` (the delivery time) as properties;
* a 52-byte unit ``(size 52, prevPos, magic, currWriteTime, delayTime, offsetPy, sizePy,
  hashTopic, reserved 0)`` is appended to the TimerLog (``TimerLog.append``: a 16-byte BLANK
  ``(rest, 0, 0xBBCCDDEE ^ 1880681586 + 8)`` closes a file when ``52 + 16`` bytes no longer fit);
  ``prevPos`` is the slot's ``lastPos`` (-1 for a slot not holding that time);
* the slot of ``delayedTime / precisionMs % (604800 * 2)`` becomes ``(delayedTime / precisionMs,
  firstPos or this unit, this unit, num + 1, magic)`` (``TimerWheel.putSlot``);
* ``timercheck`` is the 4096-byte page of ``TimerCheckpoint.flush`` (seven longs), ``timermetrics``
  the compact JSON of ``TimerMetrics.persist``.

The wheel file is 38,707,200 bytes, written sparse (only the used slots).
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.formats.rocketmq.commitlog import MessageRecord
from mqtool.store.writer import StoreWriter, WriterConfig

UNIT_FMT = ">iqiqiqiiq"  # size, prevPos, magic, currWriteTime, delayTime, offsetPy, sizePy, hashTopic, reserved
SLOT_FMT = ">qqqii"  # timeMs / precisionMs, firstPos, lastPos, num, magic
BLANK_FMT = ">iqi"
UNIT_LEN = 4 + 8 + 4 + 8 + 4 + 8 + 4 + 4 + 8
SLOT_LEN = 8 + 8 + 8 + 4 + 4
MIN_BLANK = 4 + 8 + 4
SLOTS = 7 * 86400 * 2
WHEEL_LEN = SLOTS * SLOT_LEN
BLANK_MAGIC = struct.unpack(">i", struct.pack(">I", (0xBBCCDDEE ^ (1880681586 + 8)) & 0xFFFFFFFF))[0]


def java_hash(text: str) -> int:
    h = 0
    for ch in text:  # ASCII topics in these tests: one UTF-16 unit per character
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >> 31 else h


def unit_bytes(prev: int, magic: int, write: int, delay: int, offset_py: int, size_py: int, topic_hash: int, reserved: int = 0) -> bytes:
    return struct.pack(UNIT_FMT, UNIT_LEN, prev, magic, write, delay, offset_py, size_py, topic_hash, reserved)


def checkpoint_bytes(read_ms: int, flush_pos: int, queue_offset: int, master_offset: int, state: int = 0, ts: int = 0, counter: int = 0) -> bytes:
    page = bytearray(4096)
    struct.pack_into(">7q", page, 0, read_ms, flush_pos, queue_offset, master_offset, state, ts, counter)
    return bytes(page)


def metrics_text(counts: dict[str, tuple[int, int]], counter: int = 0, ts: int = 0) -> str:
    timing = {t: {"count": c, "timeStamp": s} for t, (c, s) in counts.items()}
    return json.dumps({"dataVersion": {"counter": counter, "stateVersion": 0, "timestamp": ts}, "timingCount": timing}, separators=(",", ":"))


@dataclass
class Enqueued:
    """One enqueued timer message: its unit's TimerLog offset and file position, and its record."""

    unit_offset: int
    file_base: int
    position: int
    commitlog_offset: int
    size: int
    delayed_time: int
    real_topic: str


@dataclass
class TimerWriter:
    root: Path
    file_size: int = 100 * 1024 * 1024
    precision_ms: int = 1000
    slots: dict[int, tuple[int, int, int, int, int]] = field(default_factory=dict)
    files: dict[int, bytearray] = field(default_factory=dict)
    wrote: int = 0  # write offset in the TimerLog address space
    enqueued: list[Enqueued] = field(default_factory=list)

    def _slot(self, delayed: int) -> tuple[int, int, int, int, int]:
        t = delayed // self.precision_ms
        s = self.slots.get(t % SLOTS)
        if s is None or s[0] != t:
            return (-1, -1, -1, 0, 0)
        return s

    def _file(self, base: int) -> bytearray:
        if base not in self.files:  # a mapped file, created whole (zeros) when first written
            self.files[base] = bytearray(self.file_size)
        return self.files[base]

    def _append(self, data: bytes) -> int:
        base = self.wrote - self.wrote % self.file_size
        pos = self.wrote - base
        buf = self._file(base)
        if len(data) + MIN_BLANK > self.file_size - pos:
            buf[pos : pos + MIN_BLANK] = struct.pack(BLANK_FMT, self.file_size - pos, 0, BLANK_MAGIC)
            base += self.file_size
            pos = 0
            buf = self._file(base)
        buf[pos : pos + len(data)] = data
        self.wrote = base + pos + len(data)
        return base + pos

    def enqueue(self, offset_py: int, size_py: int, delayed: int, write: int, real_topic: str, magic: int = 1) -> Enqueued:
        t = delayed // self.precision_ms
        _, first, last, num, smagic = self._slot(delayed)
        ret = self._append(unit_bytes(last, magic, write, delayed - write, offset_py, size_py, java_hash(real_topic)))
        self.slots[t % SLOTS] = (t, ret if first == -1 else first, ret, num - 1 if magic & 4 else num + 1, smagic)
        base = ret - ret % self.file_size
        e = Enqueued(ret, base, ret - base, offset_py, size_py, delayed, real_topic)
        self.enqueued.append(e)
        return e

    def write(self, *, used_only_files: bool = False) -> None:
        """Write ``timerlog/`` (whole mapped files), and the sparse ``timerwheel``."""
        tdir = self.root / "timerlog"
        tdir.mkdir(parents=True, exist_ok=True)
        for base, buf in sorted(self.files.items()):
            (tdir / f"{base:020d}").write_bytes(bytes(buf))
        with open(self.root / "timerwheel", "wb") as f:
            f.truncate(WHEEL_LEN)
            for index, slot in self.slots.items():
                f.seek(index * SLOT_LEN)
                f.write(struct.pack(SLOT_FMT, *slot))

    def write_checkpoint(self, read_ms: int, queue_offset: int, *, flush_pos: int | None = None, counter: int = 1) -> None:
        (self.root / "config").mkdir(parents=True, exist_ok=True)
        pos = self.wrote if flush_pos is None else flush_pos
        (self.root / "config" / "timercheck").write_bytes(checkpoint_bytes(read_ms, pos, queue_offset, queue_offset, 0, read_ms, counter))

    def write_metrics(self) -> None:
        counts: dict[str, tuple[int, int]] = {}
        for e in self.enqueued:
            c, _ = counts.get(e.real_topic, (0, 0))
            counts[e.real_topic] = (c + 1, e.delayed_time)
        (self.root / "config" / "timermetrics").write_text(metrics_text(counts, counter=len(self.enqueued)))


#: The start of the tests' clock (ms).
T0 = 1_700_000_000_000


def timer_record(real_topic: str, deliver_ms: int, body: bytes = b"timer", delete_key: str | None = None) -> MessageRecord:
    props = {"REAL_TOPIC": real_topic, "REAL_QID": "0", "TIMER_OUT_MS": str(deliver_ms), "UNIQ_KEY": f"K{deliver_ms:x}"}
    if delete_key is not None:
        props["TIMER_DEL_UNIQKEY"] = delete_key
    return MessageRecord(topic="rmq_sys_wheel_timer", body=body, properties=props)


def make_timer_store(
    root: Path,
    delays: list[int] | None = None,
    *,
    timerlog_file_size: int = 64 * 1024,
    commitlog_file_size: int = 1 << 20,
    plain: int = 2,
    read_ms: int | None = None,
    precision_ms: int = 1000,
) -> TimerWriter:
    """A store with ``plain`` ordinary messages, then one timer message per entry of ``delays``
    (delivery time ``T0 + delay`` ms, enqueued at ``T0 + i``), its TimerLog, wheel, checkpoint and metrics."""
    delays = [5_000, 5_400, 65_000, 3_600_000, 5_900, 86_400_000] if delays is None else delays
    clock = iter(range(T0, T0 + 10_000_000))
    timer = TimerWriter(root, file_size=timerlog_file_size, precision_ms=precision_ms)
    with StoreWriter(root, WriterConfig(commitlog_file_size=commitlog_file_size, enable_index=False), clock=lambda: next(clock)) as w:
        for i in range(plain):
            w.append(MessageRecord(topic="TopicTest", body=b"plain %d" % i, properties={"TAGS": "a"}))
        placed = []
        for i, delay in enumerate(delays):
            topic = f"Real{i % 3}"
            res = w.append(timer_record(topic, T0 + delay, body=b"x" * (i % 64 + 1)))
            placed.append((res, T0 + delay, topic))
    for i, (res, deliver, topic) in enumerate(placed):
        timer.enqueue(res.commitlog_offset, res.size, deliver, T0 + 100 + i, topic)
    timer.write()
    timer.write_checkpoint(T0 if read_ms is None else read_ms, len(placed))
    timer.write_metrics()
    os.utime(root / "timerwheel")
    return timer
