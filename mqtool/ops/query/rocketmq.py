"""query: offline equivalents of mqadmin queryMsgByKey / ById / ByUniqueKey / ByOffset.

* by key: IndexFile chains for ``topic#key`` (newest file first, only files whose time range
  overlaps the window), then every candidate record is re-read and its topic and KEYS compared,
  so hash collisions never leak into results.  No hidden cap: ``max_results`` is the caller's.
* by offsetMsgId: decode store host + commitlog offset, read the record there directly.
* by UNIQ_KEY: the index key ``topic#UNIQ_KEY``, records whose UNIQ_KEY equals it.
* by queue offset: the ConsumeQueue unit, then the record it points at (checked against it).
* ``scan=True`` for key queries: a full CommitLog scan instead of the index (for stores whose
  index is missing or suspect).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import CorruptDataError, MqError, StoreIOError, StoreLayoutError
from mqtool.findings import Finding
from mqtool.findings.code_ids import RMQ_FILE_GAP
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.commitlog import MessageRecord, decode_offset_msg_id
from mqtool.formats.rocketmq.config import parse_topics
from mqtool.formats.rocketmq.hashing import SCHEDULE_TOPIC, tags_code
from mqtool.ops.dump.rocketmq import CommitLogDump, RecordFilter
from mqtool.store import rocketmq as rmq
from mqtool.store import rocksdb_cq as store_rcq
from mqtool.store.files import ReadOnlyFile, read_small_file
from mqtool.store.lock import probe_record_lock
from mqtool.store.model import commitlog as model_cl
from mqtool.store.model import derived, queue_offsets
from mqtool.store.model import rocketmq as model
from mqtool.store.model import rocksdb_cq as model_rcq

LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class Hit:
    commitlog_offset: int
    path: Path
    position: int
    record: MessageRecord
    via: str  # "index", "msg-id", "consumequeue", "scan"
    queue_offset_checked: bool = False
    #: the code of the first finding validate states about the record itself (``Located.finding``):
    #: a record whose frame is intact is found and served with it (RMQ-CL-BODY-CRC, ...); None: healthy
    finding: str | None = None


@dataclass
class QueryResult:
    hits: list[Hit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[MqError] = field(default_factory=list)
    #: every gap and damage on the query's path, as validate states them (``store.model.rocketmq``)
    findings: list[Finding] = field(default_factory=list)
    index_files_searched: int = 0
    candidates: int = 0
    collisions: int = 0


def known_topics(store: rmq.RocketMQStore) -> list[str]:
    """Topics named by ConsumeQueue directories and ``config/topics.json``."""
    topics = {topic for topic, _ in store.queues()}
    path = store.config_file("topics.json")
    if path is not None:
        try:
            topics.update(parse_topics(read_small_file(path).decode("utf-8", "replace")))
        except MqError:
            pass
    return sorted(topics)


def _index_views(store: rmq.RocketMQStore, hash_slot_num: int | None, index_num: int | None, result: QueryResult) -> Iterator[rmq.IndexFileView]:
    for path in reversed(store.index_files()):
        try:
            view = rmq.IndexFileView(path, hash_slot_num=hash_slot_num, index_num=index_num)
        except MqError as exc:
            result.problems.append(exc)
            continue
        yield view


def _index_lookup(
    store: rmq.RocketMQStore,
    index_keys: list[str],
    begin: int,
    end: int,
    result: QueryResult,
    hash_slot_num: int | None,
    index_num: int | None,
) -> list[int]:
    """Candidate commitlog offsets for any of ``index_keys``, newest file first, deduplicated.

    An entry pointing past the CommitLog's valid data is not a candidate: it is validate's
    RMQ-IDX-PAST-END at the entry (``DataExtent.index_entry_finding``, the rule ``dump index``
    applies), not whatever lies at that offset."""
    seen: set[int] = set()
    offsets: list[int] = []
    extent: model_cl.DataExtent | None = None
    tail_base = store.commitlog[model.last_data_file(store.commitlog)].base if store.commitlog else 0
    for view in _index_views(store, hash_slot_num, index_num, result):
        with view:
            buf = view.buf
            assert buf is not None  # the mapping is open until the view closes
            header = view.header
            result.index_files_searched += 1
            if header.effective_index_count <= 1:
                continue
            if header.end_timestamp < begin or header.begin_timestamp > end:
                continue
            for key in index_keys:
                try:
                    found = idxf.select_entries(buf, key, LONG_MAX, begin, end, view.geometry.hash_slot_num, view.geometry.index_num)
                except MqError as exc:
                    result.problems.append(exc.at(view.path))
                    continue
                for number, off in found:
                    # valid data ends in the last file holding records: only an offset there or
                    # after it may lie past the end (and needs that file read to say so)
                    if extent is None and off >= tail_base:
                        extent = model_cl.data_extent(store)
                    past = extent.index_entry_finding(str(view.path), view.geometry.entry_position(number), number, off) if extent else None
                    if past is not None:
                        if past not in result.findings:
                            result.findings.append(past)
                        continue
                    if off not in seen:
                        seen.add(off)
                        offsets.append(off)
    return offsets


def _read_hit(reader: rmq.CommitLogReader, offset: int, via: str, result: QueryResult) -> Hit | None:
    """The record at commitlog ``offset``; what stands in the way is stated as validate states it
    (``store.model.rocketmq``): the offset lies in a missing file (RMQ-FILE-GAP), the file holding
    it has the wrong size, or the record there is broken (its code and position) or a torn tail."""
    store = reader.store
    continuity = model.commitlog_findings(store)
    found = store.commitlog_segment_for(offset)
    if found is None:
        gap = model.gap_holding(continuity, offset)
        if gap is None:
            result.notes.append(f"commitlog offset {offset} is outside the CommitLog (expired or never written)")
            return None
        size = store.commitlog_file_size
        missing = f" {segnames.rocketmq_file_name(offset - offset % size)}" if size else ""
        low, high = gap.details["missing_from"], gap.details["missing_to"]
        upto = high - 1 if isinstance(high, int) else high
        result.notes.append(f"commitlog offset {offset} lies in the missing CommitLog file{missing} (offsets {low}..{upto} are missing: {gap.code})")
        if gap not in result.findings:
            result.findings.append(gap)
        return None
    seg, pos = found
    for finding in model.segment_findings_on_path(continuity, [seg.path]):
        if finding.code != RMQ_FILE_GAP and finding not in result.findings:
            result.findings.append(finding)
    last = store.commitlog.index(seg) == model.last_data_file(store.commitlog)
    said: list[Finding] = []
    try:
        record = reader.read(offset)
    except StoreIOError as exc:
        result.problems.append(exc)
        return None
    except MqError as exc:
        kept = _kept_record(store, seg, pos, last)
        if kept is None:
            for finding in model.unreadable_record_findings(store, seg, pos, exc):
                if finding not in result.findings:
                    result.findings.append(finding)
            return None
        record, said = kept
    else:
        if rmq.has_record_findings(record, offset):  # what validate says of the record itself
            said = model.record_findings_in(seg.path, seg.base, pos, record)
    for finding in said:
        if finding not in result.findings:
            result.findings.append(finding)
    if last:  # a record of the newest file that decodes may still be its torn tail (validate's rule)
        with ReadOnlyFile(seg.path) as f:
            torn = model.torn_record_finding(f, str(seg.path), pos, record, store.commitlog_file_size or f.size)
        if torn is not None:
            if torn not in result.findings:
                result.findings.append(torn)
            return None
    return Hit(offset, seg.path, pos, record, via, finding=said[0].code if said else None)


def _kept_record(store: rmq.RocketMQStore, seg: rmq.Segment, pos: int, last: bool) -> tuple[MessageRecord, list[Finding]] | None:
    """The record at ``pos`` of ``seg`` that does not decode, when the walk keeps it: its frame is
    intact and only its bytes are damaged (the store model's precise reading with
    ``keep_damaged``, ``store.model.commitlog.read_file_records``: a body CRC mismatch, the broker
    serves it), with what validate states about it; None otherwise."""
    with ReadOnlyFile(seg.path) as f:
        for item in model_cl.read_file_records(f, seg.base, pos, file_size=store.commitlog_file_size, last=last, keep_damaged=True):
            if isinstance(item, model_cl.DecodedRecord) and item.position == pos and item.damaged:
                return item.record, item.findings
            break
    return None


def query_by_key(
    store: rmq.RocketMQStore,
    key: str,
    *,
    topic: str | None = None,
    begin: int = 0,
    end: int = LONG_MAX,
    max_results: int | None = None,
    uniq: bool = False,
    scan: bool = False,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    tag: str | None = None,
) -> QueryResult:
    """Messages carrying ``key`` in KEYS (or as UNIQ_KEY with ``uniq``), newest first (with
    TAGS ``tag`` when given)."""
    result = QueryResult()

    def matches(record: MessageRecord, window: bool = True) -> bool:
        if topic is not None and record.topic != topic:
            return False
        if tag is not None and record.tags != tag:
            return False
        if window and not begin <= record.store_timestamp <= end:
            return False
        return record.uniq_key == key if uniq else key in record.keys

    if scan:
        engine = CommitLogDump(store.commitlog, RecordFilter(topic=topic), directory=store.commitlog_dir)
        for loc, record in engine:
            if matches(record):
                result.hits.append(Hit(loc.address, loc.path, loc.position, record, "scan", finding=loc.finding))
        result.problems.extend(engine.problems)
        result.findings.extend(engine.findings)
        result.hits.sort(key=lambda h: (-h.record.store_timestamp, -h.commitlog_offset))
        if max_results is not None:
            del result.hits[max_results:]
        return result

    if not store.index_files():
        result.notes.append("the store has no IndexFiles; use --scan to search the CommitLog")
        result.findings.extend(_unindexed_findings(store, hash_slot_num, index_num))
        return result
    topics = [topic] if topic is not None else known_topics(store)
    if not topics:
        result.notes.append("no topic known (no consumequeue/ dirs, no topics.json); pass --topic")
        return result
    # An IndexFile entry keeps its time in whole seconds after the file's beginTimestamp
    # (timeDiff), up to 999 ms before the message's store time: look 999 ms earlier than
    # ``begin`` and let ``matches`` apply the exact window to the record itself.
    offsets = _index_lookup(store, [f"{t}#{key}" for t in topics], max(begin - 999, 0), end, result, hash_slot_num, index_num)
    result.candidates = len(offsets)
    with rmq.CommitLogReader(store) as reader:
        for off in offsets:
            hit = _read_hit(reader, off, "index", result)
            if hit is None:
                continue
            if not matches(hit.record):
                if not begin <= hit.record.store_timestamp <= end and matches(hit.record, window=False):
                    continue  # the key's message, a few hundred ms outside the window
                result.collisions += 1
                continue
            result.hits.append(hit)
            if max_results is not None and len(result.hits) >= max_results:
                break
    result.hits.sort(key=lambda h: (-h.record.store_timestamp, -h.commitlog_offset))
    if not result.hits:
        result.findings.extend(_unindexed_findings(store, hash_slot_num, index_num))
    return result


def _unindexed_findings(store: rmq.RocketMQStore, hash_slot_num: int | None, index_num: int | None) -> list[Finding]:
    """Why a key may be in no IndexFile, as validate says it: keyed records the IndexFiles do not
    cover (RMQ-IDX-MISSING, ``store.model.derived``: only the uncovered runs of the CommitLog
    are read).  Asked when the index found nothing."""
    live = probe_record_lock(store.lock_path) is not None
    coverage = derived.index_coverage(store, hash_slot_num=hash_slot_num, index_num=index_num)
    finding = derived.index_missing_finding(store, coverage, derived.unindexed_records(store, coverage, model_cl.data_extent(store).end), live=live)
    return [finding] if finding is not None else []


def query_by_topic(store: rmq.RocketMQStore, topic: str, *, begin: int = 0, end: int = LONG_MAX, tag: str | None = None, max_results: int | None = None) -> QueryResult:
    """The messages of ``topic`` stored in ``[begin, end]`` (``mqadmin printMsg -b -e``), queue
    by queue in queue order, each queue's ConsumeQueue read from its first unit; with ``tag``,
    the units whose tagsCode is the tag's hash (as the broker filters a subscription), whose
    records' TAGS are then compared exactly."""
    result = QueryResult()
    queues = sorted(q for t, q in store.queues() if t == topic)
    if not queues and store_rcq.is_rocksdb_cq(store.root):
        return _rocksdb_topic(store, topic, begin, end, tag, max_results, result)  # a RocksDB ConsumeQueue (5.2+)
    if not queues:
        result.notes.append(f"no ConsumeQueue for topic {topic!r} (topics with one: {', '.join(known_topics(store)) or 'none'})")
        return result
    wanted = tags_code(tag) if tag is not None and topic != SCHEDULE_TOPIC else None
    with rmq.CommitLogReader(store) as reader:
        for qid in queues:
            for unit in rmq.QueueWalk(store.cq_segments(topic, qid)):
                if unit.unit.is_filler or (wanted is not None and unit.unit.tags_code != wanted):
                    continue
                if _take(reader, unit.unit.commitlog_offset, begin, end, tag, max_results, result):
                    return result
    return result


def _take(reader: rmq.CommitLogReader, offset: int, begin: int, end: int, tag: str | None, max_results: int | None, result: QueryResult) -> bool:
    """Read the record a unit points at (a candidate) and keep it when its store time is inside
    ``[begin, end]`` and its tag is ``tag``; True when ``max_results`` hits are kept."""
    result.candidates += 1
    hit = _read_hit(reader, offset, "consumequeue", result)
    if hit is None or not begin <= hit.record.store_timestamp <= end or (tag is not None and hit.record.tags != tag):
        return False
    result.hits.append(hit)
    return max_results is not None and len(result.hits) >= max_results


def _rocksdb_topic(store: rmq.RocketMQStore, topic: str, begin: int, end: int, tag: str | None, max_results: int | None, result: QueryResult) -> QueryResult:
    """``query_by_topic`` on a RocksDB ConsumeQueue: the topic's queues are those of the offset
    table (``RocksDBConsumeQueueOffsetTable.scanAllQueueIdInTopic``); a unit holds its record's
    store time, so only the records of units inside ``[begin, end]`` are read (a scan of the keys,
    not ``binarySearchInCQByTime``: it needs no queue to be in store-time order)."""
    wanted = tags_code(tag) if tag is not None and topic != SCHEDULE_TOPIC else None
    with store_rcq.RocksCq(store_rcq.db_dir(store.root)) as db:
        table = model_rcq.offset_table(db)
        queues = sorted({qid for t, qid in table.max if t == topic})
        if not queues:
            topics = sorted({t for t, _ in table.max})
            result.notes.append(f"no RocksDB ConsumeQueue unit of topic {topic!r} (topics with one: {', '.join(topics) or 'none'})")
            return result
        with rmq.CommitLogReader(store) as reader:
            for qid in queues:
                for item in model_rcq.queue_units(db, topic, qid):
                    if isinstance(item, model_rcq.BadEntry):
                        result.findings.append(model_rcq.bad_entry_finding(db, item))
                        continue
                    value = item.value
                    if (wanted is not None and value.tags_code != wanted) or not begin <= value.store_timestamp <= end:
                        continue
                    if _take(reader, value.commitlog_offset, begin, end, tag, max_results, result):
                        return result
    return result


def check_msg_id(msg_id: str) -> str:
    """``msg_id`` stripped, or ValueError saying why it is not an offsetMsgId (a usage error:
    the caller checks it before opening the store)."""
    try:
        decode_offset_msg_id(msg_id)
    except CorruptDataError as exc:
        raise ValueError(f"not an offsetMsgId: expected {exc.expected}, found {exc.found}") from None
    return msg_id.strip()


def query_by_msg_id(store: rmq.RocketMQStore, msg_id: str) -> QueryResult:
    """The record an offsetMsgId points at, when it carries the id's store host (another host's
    id names another broker's message, whatever this store holds at that offset)."""
    result = QueryResult()
    try:
        host, offset = decode_offset_msg_id(msg_id)
    except CorruptDataError as exc:
        raise StoreLayoutError(f"not an offsetMsgId: {exc}") from None
    with rmq.CommitLogReader(store) as reader:
        hit = _read_hit(reader, offset, "msg-id", result)
    if hit is not None:
        if hit.record.physical_offset != offset:
            result.notes.append(f"the record at {offset} says PHYSICALOFFSET {hit.record.physical_offset}: stale or misplaced data")
        if hit.record.store_host != host:  # same offset, another broker's message: not the one asked for
            result.notes.append(
                f"no match: the id names store host {host}, the record at {offset} ({hit.path}:{hit.position}) "
                f"carries {hit.record.store_host}: the message was stored by another broker"
            )
            return result
        result.hits.append(hit)
    return result


def _queue_end_findings(store: rmq.RocketMQStore, topic: str, queue_id: int, qr: rmq.QueueRange) -> list[Finding]:
    """Why a queue has no unit at or past its end ``qr.max_offset``, as validate says it: the
    CommitLog holds records of the queue and it has no ConsumeQueue directory
    (RMQ-CQ-MISSING-QUEUE), or its ConsumeQueue ends before the CommitLog's last record of it
    (RMQ-CQ-LAG); nothing when the CommitLog ends the queue there too.  Both compare with the
    queue's QUEUEOFFSETs in the CommitLog (``store.model.queue_offsets``): for a queue without
    files the whole CommitLog is read (the column walk), otherwise the files from the one its
    last unit points into (the queue's last record lies there or after)."""
    key = (topic, queue_id)
    live = probe_record_lock(store.lock_path) is not None
    if not rmq.queue_dir(store, topic, queue_id).is_dir():
        offsets = queue_offsets.commitlog_queue_offsets(store)
        edge = offsets.edges.get(key)
        return queue_offsets.missing_queue_findings(store, {key: edge}, live=live) if edge is not None else []
    start = 0
    if qr.max_physic_offset is not None:
        found = store.commitlog_segment_for(max(qr.max_physic_offset - 1, 0))  # offset + size of the last unit
        if found is not None:
            start = store.commitlog.index(found[0])
    offsets = queue_offsets.commitlog_queue_offsets(store, start)
    lag = queue_offsets.queue_lag_finding(store, topic, queue_id, offsets.last_queue_offset(key), qr.max_offset, live=live)
    return [lag] if lag is not None else []


def _queue_head_findings(store: rmq.RocketMQStore, topic: str, queue_id: int) -> list[Finding]:
    """Why a queue has no unit below its min offset, as validate says it: the CommitLog holds its
    records from a lower queue offset than its first ConsumeQueue file (RMQ-CQ-MISSING-HEAD,
    ``store.model.derived.queue_heads``, over the whole CommitLog's queue offsets); nothing when
    the records are gone too (retention)."""
    segments = store.cq_segments(topic, queue_id)
    if not segments:
        return []
    live = probe_record_lock(store.lock_path) is not None
    edges = queue_offsets.commitlog_queue_offsets(store).edges
    return [derived.queue_head_finding(store, head, live=live) for head in derived.queue_heads(edges, {(topic, queue_id): segments})]


def query_by_queue_offset(store: rmq.RocketMQStore, topic: str, queue_id: int, queue_offset: int) -> QueryResult:
    """The record behind ConsumeQueue unit ``queue_offset`` of ``topic``/``queue_id``."""
    result = QueryResult()
    if not rmq.queue_dir(store, topic, queue_id).is_dir() and store_rcq.is_rocksdb_cq(store.root):
        found = _rocksdb_unit(store, topic, queue_id, queue_offset, result)  # a RocksDB ConsumeQueue (5.2+)
        if found is None:
            return result
        return _unit_hit(store, topic, queue_id, queue_offset, found[0], found[1], result)
    # the queue's files are on the path: their sizes and continuity as validate states them
    if rmq.queue_dir(store, topic, queue_id).is_dir():
        result.findings.extend(model.queue_segment_findings(store, topic, queue_id))
    unit = rmq.read_cq_unit(store, topic, queue_id, queue_offset)
    if unit is None:
        qr = rmq.queue_range(store, topic, queue_id)
        result.notes.append(f"no ConsumeQueue unit for {topic}/{queue_id} offset {queue_offset} (queue holds [{qr.min_offset}, {qr.max_offset}))")
        if queue_offset >= qr.max_offset:
            result.findings.extend(_queue_end_findings(store, topic, queue_id, qr))
        elif queue_offset < qr.min_offset:
            result.findings.extend(_queue_head_findings(store, topic, queue_id))
        return result
    if unit.unit.is_filler:
        result.notes.append(f"queue offset {queue_offset} is a filler unit (before the queue's first message)")
        return result
    return _unit_hit(store, topic, queue_id, queue_offset, unit.unit.commitlog_offset, unit.unit.size, result)


def _rocksdb_unit(store: rmq.RocketMQStore, topic: str, queue_id: int, queue_offset: int, result: QueryResult) -> tuple[int, int] | None:
    """(commitlog offset, size) of the RocksDB ConsumeQueue unit at ``queue_offset``
    (``RocksDBConsumeQueueTable.getCQInKV``), or None with a note or finding saying why not."""
    with store_rcq.RocksCq(store_rcq.db_dir(store.root)) as db:
        item = model_rcq.unit_at(db, topic, queue_id, queue_offset)
        if isinstance(item, model_rcq.BadEntry):
            result.findings.append(model_rcq.bad_entry_finding(db, item))
            return None
        if item is None:
            table = model_rcq.offset_table(db)
            rng = model_rcq.queue_range(table, None, (topic, queue_id))
            held = f"queue holds [{rng[0]}, {rng[1]})" if rng is not None else "no unit and no offset entry of that queue"
            result.notes.append(f"no RocksDB ConsumeQueue unit for {topic}/{queue_id} offset {queue_offset} ({held})")
            return None
        return item.value.commitlog_offset, item.value.size


def _unit_hit(store: rmq.RocketMQStore, topic: str, queue_id: int, queue_offset: int, commitlog_offset: int, size: int, result: QueryResult) -> QueryResult:
    """The record a ConsumeQueue unit points at, checked against the unit."""
    with rmq.CommitLogReader(store) as reader:
        hit = _read_hit(reader, commitlog_offset, "consumequeue", result)
    if hit is None:
        return result
    rec = hit.record
    mismatches = []
    if rec.total_size != size:
        mismatches.append(f"size {rec.total_size} vs unit {size}")
    if rec.topic != topic or rec.queue_id != queue_id:
        mismatches.append(f"topic/queue {rec.topic}/{rec.queue_id}")
    if rec.queue_offset != queue_offset:
        mismatches.append(f"QUEUEOFFSET {rec.queue_offset}")
    if mismatches:
        result.notes.append("the record does not match its ConsumeQueue unit: " + ", ".join(mismatches))
        if rec.topic != topic or rec.queue_id != queue_id or rec.queue_offset != queue_offset:
            # a record of another queue or offset where the unit points: the QUEUEOFFSET sequences of
            # the unit's queue and of the record's, as validate checks them over the whole CommitLog
            offsets = queue_offsets.commitlog_queue_offsets(store)
            for finding in offsets.findings_of({(topic, queue_id), (rec.topic, rec.queue_id)}):
                if finding not in result.findings:
                    result.findings.append(finding)
    result.hits.append(Hit(hit.commitlog_offset, hit.path, hit.position, rec, "consumequeue", not mismatches, hit.finding))
    return result
