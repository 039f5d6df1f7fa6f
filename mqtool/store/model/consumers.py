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
(every group's committed offsets, and the damage met reading them) and ``queue_bytes`` (the
bytes of a queue's messages in a range of queue offsets, from its ConsumeQueue units).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from mqtool.errors import MqError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import RMQ_CONFIG_PARSE, RMQ_CONSUMER_BEHIND, RMQ_CONSUMER_OFFSET, RMQ_CONSUMER_UNKNOWN_QUEUE
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import internal_topics as it
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.rocketmq import config as cfgf
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq.unit_columns import cq_units
from mqtool.store import kafka as ks
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, read_small_file

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


def kafka_committed(store: ks.KafkaStore) -> KafkaCommitted:
    """Every group's committed offsets (the latest commit wins, a tombstone removes one, commits
    in transactional or control batches are not counted, nor those below the partition's log
    start offset: the broker's ``GroupMetadataManager`` loads from there)."""
    parts = [p for p in store.partitions if p.topic == ks.CONSUMER_OFFSETS and p.suffix is None]
    if not parts and store.log_dir is not None and store.kind != "log-dir":
        parts = [p for p in ks.open_kafka(store.log_dir).partitions if p.topic == ks.CONSUMER_OFFSETS and p.suffix is None]
    out = KafkaCommitted(found=bool(parts))
    starts = _log_start_offsets(store)
    for part in parts:
        # the broker loads its groups from the log start offset on: commits below it are gone
        start = starts.get(part.key, 0) if part.key is not None else 0
        for seg in part.log_segments():
            if seg.log is None:
                continue
            try:
                with ReadOnlyFile(seg.log) as f:
                    walk = ks.LogFileWalk(f, 0, mode="full")
                    for _pos, entry in walk:
                        h = entry.header
                        if isinstance(h, rb.BatchHeader) and (h.is_control_batch or h.is_transactional):
                            continue
                        for record in entry.records or ():
                            if record.offset < start:
                                continue
                            try:
                                key, value = it.decode_consumer_offsets_record(record.key, record.value)
                            except MqError as exc:
                                if exc.path is None:
                                    exc.path = str(seg.log)
                                out.problems.append(exc)
                                continue
                            if not isinstance(key, it.OffsetCommitKey):
                                continue
                            groups = out.table.setdefault((key.topic, key.partition), {})
                            if isinstance(value, it.OffsetCommitValue):
                                groups[key.group] = value.offset
                            else:
                                groups.pop(key.group, None)
                    if walk.error is not None:
                        out.problems.append(walk.error)
            except MqError as exc:
                if exc.path is None:
                    exc.path = str(seg.log)
                out.problems.append(exc)
    return out


def _log_start_offsets(store: ks.KafkaStore) -> dict[tuple[str, int], int]:
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


def kafka_first_record(part: ks.KafkaPartition, offset: int) -> FirstRecord | None:
    """The first record at or after ``offset`` (the segment's ``.index`` gives where to start, as
    the broker's ``LogSegment.read`` does), None when the log holds none.  Damage before it
    raises the walk's ``MqError``."""
    segments = [s for s in part.log_segments() if s.log is not None]
    first = max((i for i, s in enumerate(segments) if s.base_offset <= offset), default=0)
    for i, seg in enumerate(segments[first:]):
        assert seg.log is not None
        position = 0
        if i == 0:
            try:
                entry, slot = ks.lookup_offset(seg.index, seg.base_offset, offset)
                position = entry.position if entry is not None and slot >= 0 else 0
            except MqError:
                position = 0  # a damaged index: scan the segment from its start
        with ReadOnlyFile(seg.log) as f:
            walk = ks.LogFileWalk(f, position, mode="full")
            for pos, found in walk:
                if found.last_offset < offset:
                    continue
                for record in found.records or ():
                    if record.offset >= offset and not record.is_control:
                        return FirstRecord(record.offset, record.timestamp, seg.log, pos)
            if walk.error is not None:
                raise walk.error
    return None


__all__ = [
    "CONFIG_LIMIT",
    "ConfigLoad",
    "FirstRecord",
    "KafkaCommitted",
    "config_findings",
    "kafka_committed",
    "kafka_first_record",
    "load_config",
    "load_consumer_offsets",
    "offset_findings",
    "parse_config",
    "queue_bytes",
]
