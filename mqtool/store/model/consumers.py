"""Where consumers stand, as the broker's own files record it, for every command that asks.

RocketMQ keeps each group's next offset per queue in ``config/consumerOffset.json``
(``ConsumerOffsetManager``; ``offsetTable``: ``"topic@group" -> {queueId: offset}``) and, like
every config file, a ``.bak`` twin it loads when the file is missing, empty or unparseable
(``ConfigManager.load`` / ``loadBak``).  Kafka keeps the last committed offset of each group per
partition as records of the ``__consumer_offsets`` topic (``GroupMetadataManager``: an
``OffsetCommitKey`` / ``OffsetCommitValue`` pair, the latest winning, a tombstone deleting it;
commits inside a transaction count only once committed, so transactional batches are skipped).

This module states those facts once: ``load_config`` (which file the broker loads, and what is
wrong with each), ``config_findings`` (validate's ``RMQ-CONFIG-PARSE``), ``offset_findings``
(a committed offset ahead of its queue, or behind its first message), ``kafka_committed``
(every group's committed offsets, and the damage met reading them: what the store model's walk
of each ``__consumer_offsets`` segment folded, ``kafka_commits``), ``kafka_first_record(s)`` and
``FirstRecordSearches`` (a group's first unconsumed record, as the broker's fetch finds it, from
a reading of the partition under way when there is one) and ``queue_bytes`` (the bytes of a
queue's messages in a range of queue offsets, from its ConsumeQueue units).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from mqtool.errors import MqError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import RMQ_CONFIG_PARSE, RMQ_CONSUMER_BEHIND, RMQ_CONSUMER_OFFSET, RMQ_CONSUMER_UNKNOWN_QUEUE
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.rocketmq import config as cfgf
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq.unit_columns import cq_units
from mqtool.store import kafka as ks
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, read_small_file
from mqtool.store.model import kafka as km
from mqtool.store.model import kafka_commits as kc
from mqtool.store.model import kafka_reads as kr
from mqtool.store.model.kafka import SegmentRead

T = TypeVar("T")

#: The largest config file read (the broker's own are far smaller).
CONFIG_LIMIT = 256 << 20


@dataclass
class ConfigLoad(Generic[T]):
    """``config/<name>`` as the broker loads it: ``path`` and ``value`` of the file it uses (None
    when neither it nor its ``.bak`` parses or exists) and the error of each one that does not
    parse.  ``needed``: the ``.bak`` is what the broker falls back to (``<name>`` is missing or
    broken), so a broken ``.bak`` is an error, not a warning."""

    name: str
    main: Path | None
    bak: Path | None
    path: Path | None = None
    value: T | None = None
    main_error: MqError | None = None
    bak_error: MqError | None = None

    @property
    def needed(self) -> bool:
        return self.main is None or self.main_error is not None


def parse_config(path: Path, parse: Callable[[Any], T]) -> T:
    """One config file parsed and its shape checked (``dataVersion`` too); ``MqError`` located at
    the byte where the text stops making sense (no position for a wrong shape)."""
    doc = cfgf.parse_fastjson(read_small_file(path, CONFIG_LIMIT))
    value = parse(doc)
    cfgf.parse_data_version(doc)
    return value


def load_config(store: rmq.RocketMQStore, name: str, parse: Callable[[Any], T]) -> ConfigLoad[T]:
    """``config/<name>`` or, when it is missing, empty or unparseable, its ``.bak`` twin."""
    load: ConfigLoad[T] = ConfigLoad(name, store.config_file(name), store.config_file(name + ".bak"))
    if load.main is not None:
        try:
            load.path, load.value = load.main, parse_config(load.main, parse)
        except MqError as exc:
            load.main_error = exc
    if load.bak is not None:
        try:
            value = parse_config(load.bak, parse)
            if load.path is None:
                load.path, load.value = load.bak, value
        except MqError as exc:
            load.bak_error = exc
    return load


def config_findings(load: ConfigLoad[Any]) -> list[Finding]:
    """``RMQ-CONFIG-PARSE`` for each of ``<name>`` and ``<name>.bak`` that does not parse."""
    out: list[Finding] = []
    if load.main is not None and load.main_error is not None:
        fallback = f" (the broker loads {load.bak.name} instead)" if load.bak is not None and load.bak_error is None else ""
        out.append(Finding(RMQ_CONFIG_PARSE, str(load.main), load.main_error.position, load.main_error.reason + fallback))
    if load.bak is not None and load.bak_error is not None:
        why = f" (the backup the broker loads when {load.name} is missing or unparseable)" if load.needed else f" (the backup of {load.name}, which parses)"
        out.append(
            Finding(
                RMQ_CONFIG_PARSE,
                str(load.bak),
                load.bak_error.position,
                load.bak_error.reason + why,
                severity=None if load.needed else Severity.warning,
            )
        )
    return out


def load_consumer_offsets(store: rmq.RocketMQStore) -> ConfigLoad[dict[tuple[str, str], dict[int, int]]]:
    """``consumerOffset.json`` as the broker loads it: ``(topic, group) -> {queueId: offset}``."""
    return load_config(store, "consumerOffset.json", cfgf.parse_consumer_offsets)


def offset_findings(
    path: Path,
    offsets: dict[tuple[str, str], dict[int, int]],
    ranges: dict[tuple[str, int], tuple[int, int]],
    queues: set[tuple[str, int]],
) -> list[Finding]:
    """A group's offset for a queue with no ConsumeQueue (``RMQ-CONSUMER-UNKNOWN-QUEUE``), ahead
    of the queue's max offset (``RMQ-CONSUMER-OFFSET``: the broker resets it) or below its min
    offset (``RMQ-CONSUMER-BEHIND``: messages expired unconsumed).  ``ranges``: ``(topic, queue)
    -> (min offset, max offset)`` of the queues whose units were read; ``queues``: every queue
    directory of the store."""
    out: list[Finding] = []
    for (topic, group), table in sorted(offsets.items()):
        for qid, offset in sorted(table.items()):
            rng = ranges.get((topic, qid))
            if rng is None:
                if (topic, qid) not in queues:
                    out.append(Finding(RMQ_CONSUMER_UNKNOWN_QUEUE, str(path), None, f"group {group}: offset {offset} for {topic}/{qid}, which has no ConsumeQueue"))
                continue
            low, high = rng
            if offset > high:
                out.append(
                    Finding(
                        RMQ_CONSUMER_OFFSET,
                        str(path),
                        None,
                        f"group {group} on {topic}/{qid}: expected an offset in [{low}, {high}], found {offset} (ahead of the queue by {offset - high})",
                    )
                )
            elif offset < low:
                out.append(
                    Finding(
                        RMQ_CONSUMER_BEHIND,
                        str(path),
                        None,
                        f"group {group} on {topic}/{qid}: offset {offset} is below the queue's min offset {low} ({low - offset} messages expired unconsumed)",
                    )
                )
    return out


def queue_bytes(store: rmq.RocketMQStore, topic: str, queue_id: int, start: int, stop: int) -> int:
    """The summed sizes of the messages at queue offsets ``[start, stop)`` of a queue, from its
    ConsumeQueue units (filler units count nothing; units past a file's valid end are not read)."""
    total = 0
    for seg in store.cq_segments(topic, queue_id):
        first = seg.base // cqf.CQ_UNIT_SIZE
        last = first + seg.size // cqf.CQ_UNIT_SIZE
        lo, hi = max(start, first), min(stop, last)
        if lo >= hi:
            continue
        with ReadOnlyFile(seg.path) as f:
            units = cq_units(f.pread((lo - first) * cqf.CQ_UNIT_SIZE, (hi - lo) * cqf.CQ_UNIT_SIZE))
        filler = (units["offset"] == 0) & (units["size"] == cqf.FILLER_SIZE) & (units["tags_code"] == 0)
        total += int(units["size"][~filler & (units["size"] > 0)].astype("int64").sum())
    return total


@dataclass
class KafkaCommitted:
    """``{(topic, partition): {group: committed offset}}`` from the log dir's
    ``__consumer_offsets`` partitions; ``found``: any was there; ``problems``: damage met reading
    them (a segment whose entries stop early, a record that is not a coordinator record)."""

    table: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    found: bool = False
    problems: list[MqError] = field(default_factory=list)


def kafka_committed(store: ks.KafkaStore, reading: Iterable[SegmentRead] = ()) -> KafkaCommitted:
    """Every group's committed offsets (the latest commit wins, a tombstone removes one, commits
    in transactional or control batches are not counted, nor those below the partition's log
    start offset: the broker's ``GroupMetadataManager`` loads from there).

    Each ``__consumer_offsets`` segment's commits are what the store model's walk of it folded
    (``kafka_commits.CommitsFold``): taken from ``reading`` (the caller's own reading of the store,
    made with ``read_store_entries(commits=True)``: ``lag``), else from the reading kept inside
    ``kafka.shared_reading`` (``report``), else read here with the model's reading of those
    partitions (``clean``) -- each segment's bytes read once."""
    parts = [p for p in store.partitions if kc.is_commits_partition(p)]
    if not parts and store.log_dir is not None and store.kind != "log-dir":
        store = ks.open_kafka(store.log_dir)
        parts = [p for p in store.partitions if kc.is_commits_partition(p)]
    out = KafkaCommitted(found=bool(parts))
    if not parts:
        return out
    got: dict[str, kc.SegmentCommits] = {}
    for read in reading:
        commits = kc.commits_of(read.task, read.result)
        if commits is not None:
            got[read.result.path] = commits
    missing = [str(p.path) for p in parts if any(str(seg.log) not in got for seg in p.log_segments() if seg.log is not None)]
    if missing:
        for item in km.read_store_entries(store, km.EntryDecode("framing"), checks=frozenset(), partitions=missing, kept=True, fold=kc.CommitsFold()):
            if isinstance(item, km.SegmentRead):
                commits = kc.commits_of(item.task, item.result)
                if commits is not None:
                    got[item.result.path] = commits
    starts = log_start_offsets(store)
    merged = kc.Committed(out.table, out.problems)
    for part in parts:
        # the broker loads its groups from the log start offset on: commits below it are gone
        start = starts.get(part.key, 0) if part.key is not None else 0
        for seg in part.log_segments():
            if seg.log is None:
                continue
            commits = got.get(str(seg.log))
            if commits is None or commits.unread:  # the reading could not read it: its error, as a reader's own
                try:
                    ReadOnlyFile(seg.log).close()
                except MqError as exc:
                    if exc.path is None:
                        exc.path = str(seg.log)
                    out.problems.append(exc)
                continue
            kc.merge(merged, commits, start)
            kr.remember_from_zero(seg.log, commits.header_walk, commits.header_tail)  # clean's next offset of the segment
    return out


def log_start_offsets(store: ks.KafkaStore) -> dict[tuple[str, int], int]:
    """The log dir's ``log-start-offset-checkpoint`` (empty when it is absent or unreadable: each
    partition then starts at its first segment, as the broker falls back)."""
    path = store.log_dir_file(cpf.LOG_START_OFFSET_CHECKPOINT)
    if path is None:
        return {}
    try:
        return dict(cpf.decode_offset_checkpoint(read_small_file(path, 64 << 20)).as_dict())
    except MqError:
        return {}


@dataclass(frozen=True)
class FirstRecord:
    """The first record at or after an offset of a Kafka partition: its offset and timestamp, and
    where the entry holding it starts (``segment``: its ``.log``; ``position`` in it)."""

    offset: int
    timestamp: int
    segment: Path
    position: int


def _first_record_start(segments: list[ks.KafkaSegment], offset: int) -> tuple[int, int]:
    """(index in ``segments``, position) where the search for ``offset`` starts: the segment that
    holds it, at its ``.index`` entry (the broker's ``LogSegment.read`` after
    ``OffsetIndex.lookup``); position 0 with a damaged index."""
    first = max((i for i, s in enumerate(segments) if s.base_offset <= offset), default=0)
    seg = segments[first]
    try:
        entry, slot = ks.lookup_offset(seg.index, seg.base_offset, offset)
        return first, entry.position if entry is not None and slot >= 0 else 0
    except MqError:
        return first, 0  # a damaged index: scan the segment from its start


def kafka_first_record(part: ks.KafkaPartition, offset: int) -> FirstRecord | None:
    """The first record at or after ``offset`` (the segment's ``.index`` gives where to start, as
    the broker's ``LogSegment.read`` does), None when the log holds none.  Damage before it
    raises the walk's ``MqError``."""
    segments = [s for s in part.log_segments() if s.log is not None]
    if not segments:
        return None
    first, position = _first_record_start(segments, offset)
    for i, seg in enumerate(segments[first:]):
        assert seg.log is not None
        with ReadOnlyFile(seg.log) as f:
            walk = ks.LogFileWalk(f, position if i == 0 else 0, mode="full", first_piece=_FIRST_RECORD_PIECE)
            for pos, found in walk:
                if found.last_offset < offset:
                    continue
                for record in found.records or ():
                    if record.offset >= offset and not record.is_control:
                        return FirstRecord(record.offset, record.timestamp, seg.log, pos)
            if walk.error is not None:
                raise walk.error
    return None


#: The first read of a search for a record (``LogFileWalk(first_piece=...)``): an ``.index`` entry
#: points at most ``index.interval.bytes`` (4 KiB by default) and a batch before the record.
_FIRST_RECORD_PIECE = 16 << 10


def kafka_first_records(part: ks.KafkaPartition, offsets: Iterable[int]) -> dict[int, FirstRecord | MqError | None]:
    """``kafka_first_record`` of each of ``offsets`` in one partition, each answer the same -- the
    record, None, or the ``MqError`` it raises -- with each byte read once: the searches run in
    the order of where they start (their ``.index`` entries), a search whose start a walk under
    way meets at an entry boundary joins it instead of reading the same entries again, and a walk
    ends when it has no search left (the next one starts where its own search starts).  A search
    whose start a walk passes between two entries (a damaged index), or that damage keeps a walk
    from, is made on its own."""
    wanted = sorted(set(offsets))
    out: dict[int, FirstRecord | MqError | None] = {}
    segments = [s for s in part.log_segments() if s.log is not None]
    if not segments:
        return dict.fromkeys(wanted)
    starts = {o: _first_record_start(segments, o) for o in wanted}
    pending = sorted(wanted, key=lambda o: (starts[o], o))  # in the order a walk meets their starts
    alone: list[int] = []  # searched on their own
    while pending:
        first, position = starts[pending[0]]
        active: list[int] = []  # the walk's searches, their start met (the first ones: where it starts)
        while pending and starts[pending[0]] == (first, position):
            active.append(pending.pop(0))
        for i in range(first, len(segments)):
            seg = segments[i]
            assert seg.log is not None
            with ReadOnlyFile(seg.log) as f:
                walk = ks.LogFileWalk(f, position if i == first else 0, mode="full", first_piece=_FIRST_RECORD_PIECE)
                for pos, found in walk:
                    while pending and starts[pending[0]] <= (i, pos):
                        o = pending.pop(0)
                        (active if starts[o] == (i, pos) else alone).append(o)
                    for record in found.records or ():
                        if not active:
                            break
                        if record.is_control or found.last_offset < min(active):
                            continue
                        done = [o for o in active if found.last_offset >= o and record.offset >= o]
                        for o in done:
                            out[o] = FirstRecord(record.offset, record.timestamp, seg.log, pos)
                        active = [o for o in active if o not in done]
                    if not active:
                        break
                if active and walk.error is not None:
                    alone.extend(active)  # each raises here
                    active = []
            if not active:
                break
            while pending and starts[pending[0]][0] <= i:
                alone.append(pending.pop(0))  # its start lies past the segment's last entry
        for o in active:
            out[o] = None  # the log ends before a record at or after it
    for o in sorted(alone):
        try:
            out[o] = kafka_first_record(part, o)
        except MqError as exc:
            out[o] = exc
    return out


class FirstRecordSearches:
    """``kafka_first_records`` of one partition answered from a reading of the store that streams
    its entries (``kafka.read_store_entries``): fed each ``ScannedEntry`` and ``SegmentRead`` of the
    partition (``entry``, ``segment``) as the reading makes them, a search joins the segment's
    first walk at the entry where its own walk would start (its ``.index`` entry) and decodes the
    entries from there as that walk does (``full``, CRC checked) until its record -- the same
    answer, from bytes the reading reads anyway.  A search whose start the walk passes between two
    entries, that meets an entry that does not decode or a walk that stops, or whose segment the
    reading did not walk (a kept reading served it), is searched on its own (``results``)."""

    def __init__(self, part: ks.KafkaPartition, offsets: Iterable[int]) -> None:
        self.part = part
        self.segments = [s for s in part.log_segments() if s.log is not None]
        self.ordinal = {str(s.log): i for i, s in enumerate(self.segments)}
        wanted = sorted(set(offsets))
        self.starts = {o: _first_record_start(self.segments, o) for o in wanted} if self.segments else {}
        #: in the order the walk meets their starts
        self.pending = sorted(self.starts, key=lambda o: (self.starts[o], o))
        self.active: list[int] = []
        self.alone: list[int] = [] if self.segments else wanted
        self.out: dict[int, FirstRecord | MqError | None] = {}

    def entry(self, item: km.ScannedEntry) -> None:
        i = self.ordinal.get(item.task.log)
        if i is None or item.resumed or not (self.active or self.pending):
            return
        pos = item.position
        if item.entry is None:  # the first walk stops at a broken entry: each search raises there
            self._alone_active()
            return
        while self.pending and self.starts[self.pending[0]] <= (i, pos):
            o = self.pending.pop(0)
            (self.active if self.starts[o] == (i, pos) else self.alone).append(o)
        if not self.active:
            return
        try:
            found = item.decoded("full")
        except MqError:
            self._alone_active()
            return
        seg = self.segments[i]
        assert seg.log is not None
        for record in found.records or ():
            if not self.active:
                break
            if record.is_control:
                continue
            done = [o for o in self.active if found.last_offset >= o and record.offset >= o]
            for o in done:
                self.out[o] = FirstRecord(record.offset, record.timestamp, seg.log, pos)
            self.active = [o for o in self.active if o not in done]

    def segment(self, read: km.SegmentRead) -> None:
        i = self.ordinal.get(read.result.path)
        if i is None:
            return
        if read.first_walk is None or read.io_error is not None:  # not walked here (kept, unreadable)
            self._alone_active()
        while self.pending and self.starts[self.pending[0]][0] <= i:
            self.alone.append(self.pending.pop(0))  # its start not met at an entry

    def _alone_active(self) -> None:
        self.alone.extend(self.active)
        self.active = []

    def results(self, needed: Iterable[int]) -> dict[int, FirstRecord | MqError | None]:
        """The answer for each of ``needed``: the reading's, or searched now."""
        out: dict[int, FirstRecord | MqError | None] = dict(self.out)
        for o in self.active:
            out[o] = None  # the log ends before a record at or after it
        wanted = set(needed)
        out.update(kafka_first_records(self.part, [o for o in wanted if o not in out]))
        return {o: out[o] for o in wanted}


__all__ = [
    "CONFIG_LIMIT",
    "ConfigLoad",
    "FirstRecord",
    "FirstRecordSearches",
    "KafkaCommitted",
    "config_findings",
    "kafka_committed",
    "kafka_first_record",
    "kafka_first_records",
    "load_config",
    "load_consumer_offsets",
    "log_start_offsets",
    "offset_findings",
    "parse_config",
    "queue_bytes",
]
