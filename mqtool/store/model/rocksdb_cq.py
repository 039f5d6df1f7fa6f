"""The RocksDB ConsumeQueue's one reading: its units and offset table walked and judged.

Modelled on RocketMQ 5.2.0-5.3.3 (``RocksDBConsumeQueueStore``, ``RocksDBConsumeQueueTable``,
``RocksDBConsumeQueueOffsetTable``, ``RocksDBConsumeQueue``).  Every command that reads a RocksDB
ConsumeQueue (validate, dump consumequeue, query, lag) takes its units from ``walk_units`` /
``queue_units`` here, and validate takes its judgement from ``judge``, in the finding vocabulary of
file ConsumeQueues.  A finding about a key is on the database directory, its key named in the
message and in ``details["key"]`` (hex), with its topic, queue id and queue offset; RocksDB has no
byte position to give.

What is judged, as the broker relies on it:

* keys and values not in RocketMQ's layout (a key length, control byte or topic that does not
  decode, a negative queue offset; a value of another length, a negative CommitLog offset or a
  size <= 0, what ``ConsumeQueue.recover`` takes for no unit): ``RMQ-CQ-ROCKSDB-ENTRY`` (the broker's ``forEach`` skips them
  as malformed; ``rangeQuery`` returns nothing for them);
* a unit against the CommitLog, as for a file unit: below the CommitLog's first file
  (``RMQ-CQ-EXPIRED``, counted per queue; compaction drops them), at or past its valid end
  (``RMQ-CQ-PAST-END``), where no record starts (``RMQ-CQ-NOT-A-RECORD``), at a record of another
  size, topic, queue, queue offset or store time (``RMQ-CQ-MISMATCH``), another tags hash
  (``RMQ-CQ-TAGS``);
* the queue offsets of a queue's keys: ``rangeQuery`` reads consecutive keys and stops at the first
  missing one, so a hole between a queue's units hides every unit after it until the consumer's
  offset passes it (``RMQ-CQ-ROCKSDB-GAP``);
* the offset table against the units: a queue with units but no ``max`` entry, a ``max`` entry
  that is not the queue's last unit (the broker's max offset is that entry's queue offset + 1:
  units past it are never served, a max past the units serves nothing), a ``min`` above the
  ``max`` (``RMQ-CQ-ROCKSDB-OFFSET``);
* the dispatch checkpoint (``CHECKPOINT_TOPIC``) past the CommitLog's valid end
  (``RMQ-CQ-ROCKSDB-CHECKPOINT``: the broker's ``truncateDirty`` cuts the queues back at start).

The queues' CommitLog coverage (``RMQ-CQ-LAG``, ``RMQ-CQ-MISSING-QUEUE``) and the comparison with a
file ConsumeQueue (``RMQ-CQ-ROCKSDB-DIVERGE``) are judged from the per-queue spans ``judge``
returns (``lag_findings``, ``divergence_findings``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from mqtool.errors import MqError, StoreIOError
from mqtool.findings import Finding
from mqtool.findings import code_ids as ids
from mqtool.formats.rocketmq import rocksdb_cq as rcq
from mqtool.store import rocketmq as rmq
from mqtool.store.rocksdb_cq import RocksCq
from mqtool.store.writer import cq_tags_code

QueueKey = tuple[str, int]


@dataclass(frozen=True)
class RocksUnit:
    """One unit: its raw key and the decoded key and value."""

    key: bytes
    cq: rcq.CqKey
    value: rcq.CqValue


@dataclass(frozen=True)
class BadEntry:
    """A key or value that does not decode (``error`` says where inside it, and what)."""

    family: str
    key: bytes
    error: MqError


def _location(key: bytes, cq: rcq.CqKey | None = None) -> str:
    where = f"key {rcq.key_hex(key)}"
    return f"{where} ({cq.topic}/{cq.queue_id} queue offset {cq.queue_offset})" if cq is not None else where


def _details(key: bytes, cq: rcq.CqKey | None = None) -> dict[str, object]:
    out: dict[str, object] = {"key": rcq.key_hex(key)}
    if cq is not None:
        out.update(topic=cq.topic, queue_id=cq.queue_id, queue_offset=cq.queue_offset)
    return out


def unit_finding(db: RocksCq, code: str, unit: RocksUnit, message: str) -> Finding:
    """A finding about ``unit``: on the database directory, at its key."""
    return Finding(code, str(db.path), None, f"{_location(unit.key, unit.cq)}: {message}", details=_details(unit.key, unit.cq))


def bad_entry_finding(db: RocksCq, bad: BadEntry) -> Finding:
    return Finding(
        ids.RMQ_CQ_ROCKSDB_ENTRY,
        str(db.path),
        None,
        f"column family {bad.family!r}, {_location(bad.key)}: {bad.error.reason}" + (f" (byte {bad.error.position})" if bad.error.position is not None else ""),
        details={"key": rcq.key_hex(bad.key), "column_family": bad.family},
    )


def decode_unit(key: bytes, value: bytes) -> RocksUnit | BadEntry:
    try:
        cq = rcq.decode_cq_key(key)
        if cq.queue_offset < 0:
            raise MqError("queue offset", position=len(key) - 8, expected="a queue offset >= 0", found=str(cq.queue_offset))
        unit = rcq.decode_cq_value(value)
        if unit.commitlog_offset < 0 or unit.size <= 0:  # what ConsumeQueue.recover calls no unit
            raise MqError("value", position=0, expected="a CommitLog offset >= 0 and a size > 0", found=f"offset {unit.commitlog_offset}, size {unit.size}")
        return RocksUnit(key, cq, unit)
    except MqError as exc:
        return BadEntry(rcq.UNITS_COLUMN_FAMILY, key, exc)


def walk_units(db: RocksCq, start: bytes | None = None) -> Iterator[RocksUnit | BadEntry]:
    """Every unit from key ``start`` on, in key order (by topic length, topic, queue id, queue offset)."""
    for key, value in db.units(start):
        yield decode_unit(key, value)


def queue_units(db: RocksCq, topic: str, queue_id: int, from_offset: int = 0) -> Iterator[RocksUnit | BadEntry]:
    """The units of ``topic``/``queue_id`` from queue offset ``from_offset`` on, in order."""
    prefix = rcq.cq_queue_prefix(topic, queue_id)
    for key, value in db.units(rcq.encode_cq_key(rcq.CqKey(topic, queue_id, max(from_offset, 0)))):
        if not key.startswith(prefix):
            return
        yield decode_unit(key, value)


def unit_at(db: RocksCq, topic: str, queue_id: int, queue_offset: int) -> RocksUnit | BadEntry | None:
    """The unit at ``queue_offset`` (``RocksDBConsumeQueueTable.getCQInKV``), or None."""
    key = rcq.encode_cq_key(rcq.CqKey(topic, queue_id, queue_offset))
    value = db.unit(key)
    return None if value is None else decode_unit(key, value)


@dataclass
class OffsetTable:
    """The ``offset`` column family: per queue its ``max`` and ``min`` entries, and the dispatch
    checkpoint (``getMaxPhyOffset``)."""

    max: dict[QueueKey, rcq.OffsetValue] = field(default_factory=dict)
    min: dict[QueueKey, rcq.OffsetValue] = field(default_factory=dict)
    checkpoint: int | None = None
    bad: list[BadEntry] = field(default_factory=list)


def offset_table(db: RocksCq) -> OffsetTable:
    out = OffsetTable()
    for key, value in db.offsets():
        try:
            okey = rcq.decode_offset_key(key)
            if rcq.is_checkpoint_key(okey):
                out.checkpoint = rcq.decode_checkpoint_value(value)
                continue
            ovalue = rcq.decode_offset_value(value)
        except MqError as exc:
            out.bad.append(BadEntry(rcq.OFFSET_COLUMN_FAMILY, key, exc))
            continue
        (out.max if okey.kind == rcq.MAX else out.min)[(okey.topic, okey.queue_id)] = ovalue
    return out


@dataclass
class QueueSpan:
    """What the units of one queue hold: first and last queue offset, units, the last unit's
    CommitLog offset, and the first unit kept by retention (``min_offset``)."""

    first: int
    last: int
    count: int = 0
    last_physical: int = 0
    min_offset: int | None = None

    @property
    def max_offset(self) -> int:
        return self.last + 1


def queue_range(table: OffsetTable, span: QueueSpan | None, key: QueueKey) -> tuple[int, int] | None:
    """``[min, max)`` of a queue as the broker serves it: its max offset is the ``max`` entry's queue
    offset + 1 (``getMaxOffsetInQueue``), its min the ``min`` entry (``getMinOffsetInQueue``, before
    the broker corrects it against the CommitLog) or the first unit; None for an unknown queue."""
    mx = table.max.get(key)
    if mx is None and span is None:
        return None
    high = mx.queue_offset + 1 if mx is not None else (span.max_offset if span is not None else 0)
    mn = table.min.get(key)
    low = mn.queue_offset if mn is not None else (span.min_offset if span is not None and span.min_offset is not None else (span.first if span else 0))
    return min(low, high), high


@dataclass
class Judged:
    findings: list[Finding] = field(default_factory=list)
    spans: dict[QueueKey, QueueSpan] = field(default_factory=dict)
    table: OffsetTable = field(default_factory=OffsetTable)
    units: int = 0
    expired: int = 0

    def ranges(self) -> dict[QueueKey, tuple[int, int]]:
        out = {}
        for key in sorted(set(self.spans) | set(self.table.max)):
            rng = queue_range(self.table, self.spans.get(key), key)
            if rng is not None:
                out[key] = rng
        return out


def _in_ranges(ranges: tuple[tuple[int, int], ...], offset: int) -> bool:
    i = bisect.bisect_right(ranges, (offset, float("inf"))) - 1
    return i >= 0 and ranges[i][0] <= offset < ranges[i][1]


def judge(
    db: RocksCq,
    store: rmq.RocketMQStore,
    *,
    commitlog_end: int,
    damaged: tuple[tuple[int, int], ...] = (),
) -> Judged:
    """Walk every unit and the offset table once and judge them (see the module docstring)."""
    out = Judged()
    expired_by_queue: dict[QueueKey, int] = {}
    commitlog_min = store.commitlog_min_offset
    with rmq.CommitLogReader(store, check_crc=False) as reader:
        for item in walk_units(db):
            if isinstance(item, BadEntry):
                out.findings.append(bad_entry_finding(db, item))
                continue
            out.units += 1
            cq = item.cq
            key = (cq.topic, cq.queue_id)
            span = out.spans.get(key)
            if span is None:
                span = out.spans[key] = QueueSpan(cq.queue_offset, cq.queue_offset)
            elif cq.queue_offset != span.last + 1:
                out.findings.append(
                    unit_finding(
                        db,
                        ids.RMQ_CQ_ROCKSDB_GAP,
                        item,
                        f"expected queue offset {span.last + 1} after {span.last}, found {cq.queue_offset}: "
                        f"{cq.queue_offset - span.last - 1} unit(s) missing (rangeQuery stops at the first missing key)",
                    )
                )
            span.last = cq.queue_offset
            span.count += 1
            span.last_physical = item.value.commitlog_offset
            if item.value.commitlog_offset < commitlog_min:
                expired_by_queue[key] = expired_by_queue.get(key, 0) + 1
                out.expired += 1
                continue
            if span.min_offset is None:
                span.min_offset = cq.queue_offset
            finding = _check_record(db, reader, item, commitlog_end, damaged)
            if finding is not None:
                out.findings.append(finding)
    for (topic, qid), n in sorted(expired_by_queue.items()):
        out.findings.append(
            Finding(
                ids.RMQ_CQ_EXPIRED,
                str(db.path),
                None,
                f"{topic}/{qid}: {n} unit(s) point below the CommitLog's first file ({commitlog_min}): expired by retention (compaction drops them)",
                details={"topic": topic, "queue_id": qid, "units": n},
            )
        )
    out.table = offset_table(db)
    out.findings.extend(bad_entry_finding(db, bad) for bad in out.table.bad)
    out.findings.extend(_offset_findings(db, out.table, out.spans))
    cp = out.table.checkpoint
    if cp is not None and cp > commitlog_end:
        out.findings.append(
            Finding(
                ids.RMQ_CQ_ROCKSDB_CHECKPOINT,
                str(db.path),
                None,
                f"{rcq.CHECKPOINT_TOPIC} max physical offset: expected at most {commitlog_end} (end of valid CommitLog data), found {cp} "
                "(the broker truncates the RocksDB ConsumeQueue back at start: truncateDirty)",
                details={"checkpoint": cp, "commitlog_end": commitlog_end},
            )
        )
    return out


def _check_record(db: RocksCq, reader: rmq.CommitLogReader, unit: RocksUnit, commitlog_end: int, damaged: tuple[tuple[int, int], ...]) -> Finding | None:
    """A unit against the record it points at, as validate checks a file unit."""
    off, value, cq = unit.value.commitlog_offset, unit.value, unit.cq
    if _in_ranges(damaged, off):
        return None  # the CommitLog finding there says what is wrong with this record
    if off >= commitlog_end:
        return unit_finding(db, ids.RMQ_CQ_PAST_END, unit, f"expected a commitlog offset below {commitlog_end} (end of valid CommitLog data), found {off}")
    try:
        rec = reader.read(off, size_hint=value.size if 0 < value.size <= rmq.MAX_RECORD_SIZE else 4096)
    except StoreIOError:
        raise
    except MqError as exc:
        return unit_finding(db, ids.RMQ_CQ_NOT_A_RECORD, unit, f"commitlog offset {off} is not the start of a valid record ({exc})")
    if rec.physical_offset != off:
        return unit_finding(db, ids.RMQ_CQ_NOT_A_RECORD, unit, f"the record at commitlog offset {off} says PHYSICALOFFSET {rec.physical_offset}")
    problems = []
    if rec.total_size != value.size:
        problems.append(f"size {value.size} vs record TOTALSIZE {rec.total_size}")
    if rec.topic != cq.topic or rec.queue_id != cq.queue_id:
        problems.append(f"queue {cq.topic}/{cq.queue_id} vs record {rec.topic}/{rec.queue_id}")
    if rec.queue_offset != cq.queue_offset:
        problems.append(f"queue offset {cq.queue_offset} vs record QUEUEOFFSET {rec.queue_offset}")
    if rec.store_timestamp != value.store_timestamp:
        problems.append(f"store time {value.store_timestamp} vs record STORETIMESTAMP {rec.store_timestamp}")
    if problems:
        return unit_finding(db, ids.RMQ_CQ_MISMATCH, unit, f"-> commitlog offset {off}: " + "; ".join(problems))
    if rec.dropped_properties and "TAGS" not in rec.properties:
        return None  # its tags may be in a segment the broker drops (RMQ-CL-PROPERTIES says so)
    expected = cq_tags_code(rec)
    if value.tags_code != expected:
        what = "delivery time (store time + delay level)" if rec.topic == "SCHEDULE_TOPIC_XXXX" else f"TAGS {rec.tags!r} hash"
        return unit_finding(db, ids.RMQ_CQ_TAGS, unit, f"expected tagsCode {expected} ({what}), found {value.tags_code}")
    return None


def _offset_findings(db: RocksCq, table: OffsetTable, spans: Mapping[QueueKey, QueueSpan]) -> list[Finding]:
    out: list[Finding] = []

    def finding(key: QueueKey, kind: str, message: str) -> Finding:
        okey = rcq.encode_offset_key(rcq.OffsetKey(key[0], kind, key[1]))
        return Finding(
            ids.RMQ_CQ_ROCKSDB_OFFSET,
            str(db.path),
            None,
            f"offset key {rcq.key_hex(okey)} ({key[0]}/{key[1]} {kind}): {message}",
            details={"key": rcq.key_hex(okey), "topic": key[0], "queue_id": key[1]},
        )

    for key in sorted(set(spans) | set(table.max) | set(table.min)):
        span, mx, mn = spans.get(key), table.max.get(key), table.min.get(key)
        if span is not None and mx is None:
            message = f"expected the queue's last unit (queue offset {span.last}), found no max entry: the broker serves none of its {span.count} unit(s)"
            out.append(finding(key, rcq.MAX, message))
        elif span is not None and mx is not None and (mx.queue_offset != span.last or mx.commitlog_offset != span.last_physical):
            out.append(
                finding(
                    key,
                    rcq.MAX,
                    f"expected the queue's last unit (queue offset {span.last}, commitlog offset {span.last_physical}), "
                    f"found queue offset {mx.queue_offset}, commitlog offset {mx.commitlog_offset}"
                    + (": units past it are never served" if mx.queue_offset < span.last else ": offsets past the last unit serve nothing"),
                )
            )
        if mx is not None and mn is not None and mn.queue_offset > mx.queue_offset + 1:
            out.append(finding(key, rcq.MIN, f"expected a min queue offset at most {mx.queue_offset + 1} (the max entry's + 1), found {mn.queue_offset}"))
    return out


def lag_findings(db: RocksCq, judged: Judged, last_queue_offsets: Mapping[QueueKey, int], *, live: bool = False) -> list[Finding]:
    """``RMQ-CQ-LAG`` for queues whose RocksDB units end before the CommitLog's last record of them,
    and ``RMQ-CQ-MISSING-QUEUE`` for CommitLog queues the RocksDB ConsumeQueue holds nothing of
    (``last_queue_offsets``: each queue's last QUEUEOFFSET in the CommitLog)."""
    from mqtool.findings import Severity

    out: list[Finding] = []
    ranges = judged.ranges()
    for key, last in sorted(last_queue_offsets.items()):
        rng = ranges.get(key)
        if rng is None:
            out.append(
                Finding(
                    ids.RMQ_CQ_MISSING_QUEUE,
                    str(db.path),
                    None,
                    f"CommitLog records of {key[0]}/{key[1]} (up to queue offset {last}) have no unit and no offset entry in the RocksDB ConsumeQueue",
                    details={"topic": key[0], "queue_id": key[1]},
                    severity=Severity.info if live else None,
                )
            )
        elif last + 1 > rng[1]:
            out.append(
                Finding(
                    ids.RMQ_CQ_LAG,
                    str(db.path),
                    None,
                    f"{key[0]}/{key[1]}: expected the RocksDB ConsumeQueue to reach offset {last + 1} (the CommitLog holds records up to queue offset {last}), "
                    f"found max offset {rng[1]}: {last + 1 - rng[1]} record(s) not dispatched"
                    + (" (a writer holds the lock: dispatch normally trails the CommitLog)" if live else ""),
                    details={"topic": key[0], "queue_id": key[1], "missing_units": last + 1 - rng[1]},
                    severity=Severity.info if live else None,
                )
            )
    return out


@dataclass
class Divergence:
    """How one queue's file and RocksDB units differ, from the first queue offset both should hold."""

    only_file: int = 0
    only_rocksdb: int = 0
    differ: int = 0
    first_only_file: int | None = None
    first_only_rocksdb: int | None = None
    first_differ: int | None = None


def divergence_findings(db: RocksCq, store: rmq.RocketMQStore, rocks_queues: set[QueueKey]) -> list[Finding]:
    """``RMQ-CQ-ROCKSDB-DIVERGE`` for each queue whose file ConsumeQueue and RocksDB ConsumeQueue
    do not hold the same units (the double write of ``CombineConsumeQueueStore`` /
    ``rocksdbCQDoubleWriteEnable``).  Units below the CommitLog's first file are left out: file
    retention and RocksDB compaction drop them at different times.  Each queue is read as a merge of
    its two sorted walks, so memory stays flat.  ``rocks_queues``: the queues the RocksDB holds
    units of (``Judged.spans``)."""
    commitlog_min = store.commitlog_min_offset
    file_queues = set(store.queues())
    out: list[Finding] = []
    for key in sorted(rocks_queues | file_queues):
        d = Divergence()
        files = (
            (qu.queue_offset, (qu.unit.commitlog_offset, qu.unit.size, qu.unit.tags_code))
            for qu in rmq.QueueWalk(store.cq_segments(*key), 0)
            if not qu.unit.is_filler and qu.unit.commitlog_offset >= commitlog_min
        )
        rocks = (
            (u.cq.queue_offset, (u.value.commitlog_offset, u.value.size, u.value.tags_code))
            for u in queue_units(db, *key)
            if isinstance(u, RocksUnit) and u.value.commitlog_offset >= commitlog_min
        )
        _merge(files, rocks, d)
        if d.only_file or d.only_rocksdb or d.differ:
            parts = []
            if d.only_file:
                parts.append(f"{d.only_file} unit(s) only in the file ConsumeQueue (first at queue offset {d.first_only_file})")
            if d.only_rocksdb:
                parts.append(f"{d.only_rocksdb} unit(s) only in the RocksDB ConsumeQueue (first at queue offset {d.first_only_rocksdb})")
            if d.differ:
                parts.append(f"{d.differ} unit(s) that differ (first at queue offset {d.first_differ})")
            out.append(
                Finding(
                    ids.RMQ_CQ_ROCKSDB_DIVERGE,
                    str(db.path),
                    None,
                    f"{key[0]}/{key[1]}: expected the file and RocksDB ConsumeQueues to hold the same units, found " + "; ".join(parts),
                    details={"topic": key[0], "queue_id": key[1], "only_file": d.only_file, "only_rocksdb": d.only_rocksdb, "differ": d.differ},
                )
            )
    return out


def _merge(files: Iterator[tuple[int, tuple[int, int, int]]], rocks: Iterator[tuple[int, tuple[int, int, int]]], d: Divergence) -> None:
    f, r = next(files, None), next(rocks, None)
    while f is not None or r is not None:
        if r is None or (f is not None and f[0] < r[0]):
            assert f is not None
            d.only_file += 1
            d.first_only_file = f[0] if d.first_only_file is None else d.first_only_file
            f = next(files, None)
        elif f is None or r[0] < f[0]:
            d.only_rocksdb += 1
            d.first_only_rocksdb = r[0] if d.first_only_rocksdb is None else d.first_only_rocksdb
            r = next(rocks, None)
        else:
            if f[1] != r[1]:
                d.differ += 1
                d.first_differ = f[0] if d.first_differ is None else d.first_differ
            f, r = next(files, None), next(rocks, None)
