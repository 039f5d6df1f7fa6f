"""dump (and read by offset) for the Jafka and MetaQ layouts (Jafka's dialects: Jafka and Kafka 0.7).

``JafkaDump`` and ``MetaqDump`` yield one item per message, lazily, partition by partition and
segment by segment in offset order, applying ``topic``/``partition``/``from_offset``/``limit``.
The messages are those of the store model's reading (``store.model.legacy.SegmentScan``: one
walk of each segment that judges it as validate does), consumed as it reads: the findings it
makes on the partitions dumped are collected (``findings``, validate's codes and positions) and
nothing is read past what ``limit`` needs -- the findings then cover what was read.  A message
whose frame holds but whose CRC (or Jafka magic) fails is listed with its finding's code, and
the walk goes on after it.  Problems the rows themselves meet (an inner message of a wrapper
that fails its CRC, a MetaQ attribute block that does not parse) are collected as located
``MqError``s (``problems``), notices as text (``notes``), instead of printed.

Jafka gzip wrappers (and Kafka 0.7 snappy ones) are expanded (unless ``deep=False``): the wrapper
itself, then every inner message with the offsets a consumer sees (the deep iterator of
``ByteBufferMessageSet``: every inner message but the last reports the wrapper's start as its
next fetch offset, the last reports the offset after the wrapper).  Inflating is bounded
(``formats.jafka.MAX_INFLATED_SIZE``): a gzip bomb is reported, not expanded.

MetaQ archives are read too (``.meta.arc`` as a file, ``.meta.zip`` inflated on the fly), in
offset order with the live segments; a ``.meta.zip`` dumps exactly like the segment it archives.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtool.errors import (
    ChecksumError,
    CorruptDataError,
    MqError,
    StoreLayoutError,
    hexint,
)
from mqtool.findings import Finding, Severity, finding_text, not_stated
from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.formats.checksums import crc32, masked_crc32
from mqtool.ops import log_findings
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.legacy import DataDir, Partition, Segment
from mqtool.store.metaq import split_message as split_metaq
from mqtool.store.model import legacy as lm

# --- common -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Where:
    """Where a message is: partition, segment, position in the segment, and its offset."""

    partition: Partition
    segment: Segment
    position: int
    offset: int


def select_partitions(data: DataDir, topic: str | None, partition: int | None) -> list[Partition]:
    """The partitions ``--topic``/``--partition`` pick; none is an error naming the topics there
    are (a typo printed nothing and exited 0)."""
    chosen = [p for p in data.partitions if (topic is None or p.topic == topic) and (partition is None or p.partition == partition)]
    if not chosen and (topic is not None or partition is not None):
        topics = sorted({p.topic for p in data.partitions if p.topic is not None})
        raise StoreLayoutError(
            path=data.root,
            expected=f"a partition {topic or '*'}-{'*' if partition is None else partition}",
            found=f"topics {', '.join(topics[:12])}{' ...' if len(topics) > 12 else ''}" if topics else "no partition",
        )
    return chosen


def _within(data: DataDir, partitions: list[Partition]) -> list[Path]:
    return [data.only] if data.only is not None else [p.path for p in partitions]


def findings_on_path(path: str | Path, data: DataDir, partitions: list[Partition]) -> list[Finding]:
    """validate's errors and warnings in ``partitions`` of the store at ``path`` (or in the one
    file ``path`` names), with validate's codes and positions (``ops.log_findings``)."""
    if not partitions:
        return []
    return log_findings.on_path(path, data.layout, _within(data, partitions))


def _tail_note(segment: Segment, result: lm.SegmentResult) -> str | None:
    """A notice of the tail the broker's recovery repairs (the reading's TORN-TAIL or ZERO-TAIL
    warning at where the data stops), in the reader's words."""
    end = result.tail()
    if end is None:
        return None
    if end.kind == "zeros":
        return f"{segment.path}:{end.position}: data ends with {result.size - end.position} zero bytes"
    return f"{segment.path}:{end.position}: data ends with a partial message ({result.size - end.position} of {end.length} bytes)"


@dataclass
class _ScanDump(ABC):
    """What the two dumps share: the store model's segment scans, in offset order, consumed lazily."""

    data: DataDir
    topic: str | None = None
    partition: int | None = None
    from_offset: int | None = None
    limit: int | None = None
    problems: list[MqError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: validate's errors and warnings on what was read (``ops.log_findings.select``), in its order
    findings: list[Finding] = field(default_factory=list)
    bytes_done: int = 0

    @property
    def partitions(self) -> list[Partition]:
        return select_partitions(self.data, self.topic, self.partition)

    def _segments(self, part: Partition) -> list[Segment]:
        return self.data.selected(part)

    @property
    def total_bytes(self) -> int:
        return sum(s.size or 0 for p in self.partitions for s in self._segments(p))

    @abstractmethod
    def _rows(self, where: Where, scanned: lm.ScannedMessage) -> Iterator[Any]:
        """The rows of one scanned message (``JafkaDump``'s, ``MetaqDump``'s)."""

    def __iter__(self) -> Iterator[Any]:
        self.notes.extend(self.data.notes)
        if self.limit == 0:  # --limit 0: no rows, nothing read
            return
        parts = self.partitions
        within = _within(self.data, parts)
        reading = lm.plan_reading(self.data, self.data.layout)
        self.findings.extend(log_findings.select(reading.files, within))
        chosen = {id(p): {str(s.path): s for s in self._segments(p)} for p in parts}
        emitted = 0
        for task, part in reading.tasks:
            seg = chosen.get(id(part), {}).get(task.path)
            if seg is None:
                continue
            before = self.bytes_done
            if self.from_offset is not None and seg.end_offset is not None and seg.end_offset <= self.from_offset:
                self.bytes_done += seg.size or 0
                continue
            scan = lm.SegmentScan(task)
            messages = iter(scan)
            try:
                first = True
                for scanned in messages:
                    self.bytes_done = before + scanned.position
                    offset = seg.start_offset + scanned.position
                    if self.from_offset is not None and offset < self.from_offset:
                        continue
                    if first and self.from_offset is not None and seg.start_offset < self.from_offset < offset:
                        self.notes.append(f"{seg.path}: offset {self.from_offset} is not the start of a valid message; starting at the next message after it")
                    first = False
                    for item in self._rows(Where(part, seg, scanned.position, offset), scanned):
                        yield item
                        emitted += 1
                        if self.limit is not None and emitted >= self.limit:
                            return  # read no further: what was read is judged (``finally``)
            finally:
                messages.close()  # type: ignore[attr-defined]
                self.findings.extend(log_findings.select(scan.result.findings, within))
            if scan.reader_error is not None:
                self.problems.append(scan.reader_error)
            note = _tail_note(seg, scan.result)
            if note:
                self.notes.append(note)
            self.bytes_done = before + (seg.size or 0)
        self.findings.extend(log_findings.select(reading.closing, within))


# --- Jafka ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JafkaItem:
    """One row of ``dump jafka``.

    ``kind``: ``message`` (uncompressed shallow message), ``wrapper`` (compressed message, its
    payload is the gzip stream) or ``inner`` (a message inside a wrapper).  ``next_offset`` is
    upstream's ``MessageAndOffset.offset`` (None for nested wrappers, which consumers never see).
    """

    where: Where
    kind: str
    message: jf.Message
    crc_computed: int
    next_offset: int | None
    depth: int = 0
    inner_index: int | None = None
    inner_position: int | None = None
    #: the code of the finding validate states about a message the walk kept despite damage that
    #: leaves its frame intact (JAFKA-CRC, JAFKA-MAGIC; the inner messages of such a wrapper carry
    #: it too); None when healthy
    finding: str | None = None

    @property
    def crc_valid(self) -> bool:
        return self.crc_computed == self.message.crc

    @property
    def codec(self) -> str:
        codec = self.message.compression_codec
        return jf.CODEC_NAMES.get(codec, str(codec))


@dataclass
class JafkaDump(_ScanDump):
    deep: bool = True
    _magic_noted: set[Path] = field(default_factory=set, repr=False)

    def _rows(self, where: Where, scanned: lm.ScannedMessage) -> Iterator[JafkaItem]:
        message = scanned.message
        assert isinstance(message, jf.Message)  # the scan of a Jafka segment
        return self._items(where, message, scanned.code)

    def _items(self, where: Where, message: jf.Message, code: str | None) -> Iterator[JafkaItem]:
        """The rows of the message the store's reading yielded at ``where``; ``code``: the finding
        it was kept despite (its CRC or magic fails, its frame holds), None for a healthy one."""
        dialect = sj.dialect_of(self.data)
        computed = message.crc if code is None else crc32(message.payload)  # the reading checked it
        after = where.offset + message.serialized_size
        if code is None and not dialect.accepts_magic(message.magic) and where.segment.path not in self._magic_noted:
            # a whole Kafka 0.7 magic-0 message in a Jafka file: shown, but Jafka cannot read it
            magic = jf.magic_error(message.magic, where.position + jf.LOG_OVERHEAD, magics=dialect.magics, broker=dialect.broker)
            assert magic is not None
            self._magic_noted.add(where.segment.path)
            self.notes.append(f"{magic.at(where.segment.path)} (the first of this file; `mqtool validate` lists them)")
        if not message.compressed:
            yield JafkaItem(where, "message", message, computed, after, finding=code)
            return
        yield JafkaItem(where, "wrapper", message, computed, after, finding=code)
        if not self.deep:
            return
        inner: list[jf.InnerMessage] = []
        try:
            for m in jf.iter_wrapper(message, snappy=jf.CODEC_SNAPPY in dialect.codecs):
                inner.append(m)
        except MqError as exc:
            if code is not None:  # the wrapper's own damage: stated once, by its finding
                return
            self.problems.append(
                CorruptDataError(
                    f"compressed wrapper: {exc.message}" if exc.message else "compressed wrapper",
                    path=where.segment.path,
                    position=where.position,
                    expected=exc.expected,
                    found=exc.found,
                )
            )
        leaves = [m for m in inner if not m.message.compressed]
        last_leaf = leaves[-1].index if leaves else None
        for m in inner:
            if m.message.compressed:
                nxt = None
            else:
                nxt = after if m.index == last_leaf else where.offset
            if m.crc_computed != m.message.crc and code is None:
                self.problems.append(
                    ChecksumError(
                        f"inner message #{m.index} of the wrapper: CRC mismatch",
                        path=where.segment.path,
                        position=where.position,
                        expected=f"CRC {hexint(m.crc_computed)}",
                        found=hexint(m.message.crc),
                    )
                )
            kind = "wrapper" if m.message.compressed else "inner"
            yield JafkaItem(where, kind, m.message, m.crc_computed, nxt, m.depth, m.index, m.position, code)


# --- MetaQ ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetaqItem:
    """One row of ``dump metaq``: the message, its checksum check and its attribute split."""

    where: Where
    message: mq.Message
    checksum_computed: int
    attribute: bytes | None
    payload: bytes
    attribute_error: str | None = None
    #: the code of the finding validate states about a message the walk kept despite damage that
    #: leaves its frame intact (METAQ-CRC); None when healthy
    finding: str | None = None

    @property
    def checksum_valid(self) -> bool:
        return self.checksum_computed == self.message.checksum

    @property
    def next_offset(self) -> int:
        return self.where.offset + self.message.size

    @property
    def segment_name(self) -> str:
        """The live segment name the message's file stands for (``NNN.meta`` for ``NNN.meta.zip`` too)."""
        return segnames.metaq_live_segment_name(self.where.segment)


def id_parts(message_id: int) -> dict[str, int]:
    """``IdWorker`` fields of a message id: time (ms since a nanoTime-based epoch, not wall-clock),
    worker (= brokerId) and sequence."""
    value = message_id & 0xFFFFFFFFFFFFFFFF
    return {"id_time": value >> 22, "broker_id": (value >> 12) & 0x3FF, "sequence": value & 0xFFF}


@dataclass
class MetaqDump(_ScanDump):
    archives: bool = True

    def _segments(self, part: Partition) -> list[Segment]:
        return self.data.selected(part, archives=self.archives or self.data.only is not None)

    def _rows(self, where: Where, scanned: lm.ScannedMessage) -> Iterator[MetaqItem]:
        message = scanned.message
        assert isinstance(message, mq.Message)  # the scan of a MetaQ segment
        yield self._item(where, message, scanned.code)

    def _item(self, where: Where, message: mq.Message, code: str | None) -> MetaqItem:
        """The row of the message the store's reading yielded at ``where``; ``code``: the finding
        it was kept despite (its checksum fails, its frame holds), None for a healthy one."""
        computed = message.checksum if code is None else masked_crc32(message.data)  # the reading checked it
        attribute, payload, error = split_metaq(message)
        if error is not None:
            self.problems.append(
                CorruptDataError(
                    "attribute block (flag bit 0 set)",
                    path=where.segment.path,
                    position=where.position + mq.HEADER_LEN,
                    expected=error.expected,
                    found=error.found,
                )
            )
        return MetaqItem(where, message, computed, attribute, payload, None if error is None else f"expected {error.expected}, found {error.found}", code)


# --- read by offset (``mqtool query --offset``) ----------------------------------------------------------


@dataclass
class OffsetLookup:
    """The message at one offset of one partition, as a consumer fetch at that offset reads it.

    ``items`` holds the ``JafkaItem`` rows (a wrapper and its inner messages) or the one
    ``MetaqItem``; when empty, ``reason`` says why and ``previous_offset``/``next_offset`` name the
    message starts around a non-boundary offset."""

    partition: Partition
    offset: int
    segment: Segment | None = None
    items: list[JafkaItem | MetaqItem] = field(default_factory=list)
    reason: str | None = None
    previous_offset: int | None = None
    next_offset: int | None = None
    #: damage met (``MqError``) and validate's errors on the partition (``CODE path:position: message``)
    problems: list[MqError | str] = field(default_factory=list)


def find_partition(data: DataDir, topic: str | None, partition: int | None) -> Partition:
    """The one partition a lookup addresses (``--topic``/``--partition`` needed in a data dir
    with more than one)."""
    chosen = select_partitions(data, topic, partition)
    if len(chosen) == 1:
        return chosen[0]
    if not chosen:  # no --topic/--partition and no partition at all
        raise StoreLayoutError(expected="a partition", found="none", path=data.root)
    names = ", ".join(p.name for p in chosen[:10])
    raise StoreLayoutError(expected="one partition (give --topic and --partition)", found=f"{len(chosen)}: {names}", path=data.root)


def lookup_offset(data: DataDir, partition: Partition, offset: int) -> OffsetLookup:
    """Read the message starting at ``offset`` (live segments, then MetaQ archives): one bounded
    read when a message starts there; otherwise the segment is walked to name the message offsets
    just before and after it.  Every gap and damage of the partition is named as validate names
    it (``name_findings``): a segment missing before the offset changes what consumers get."""
    return name_findings(_lookup_offset(data, partition, offset), findings_on_path(data.root, data, [partition]))


def _lookup_offset(data: DataDir, partition: Partition, offset: int) -> OffsetLookup:
    result = OffsetLookup(partition, offset)
    seg = partition.segment_for(offset)
    if seg is None:
        if offset < max((s.end_offset or 0 for s in partition.all_segments()), default=0):
            result.reason = f"offset {offset} is in no segment of the partition (a gap between its segments)"
            return result
        segs = [s for s in partition.all_segments() if s.size]
        span = f"[{min(s.start_offset for s in segs)}, {max(s.end_offset or 0 for s in segs)})" if segs else "(no data)"
        result.reason = f"offset {offset} is outside the partition's data {span}"
        return result
    result.segment = seg
    jafka = data.layout == "jafka"
    dialect = sj.dialect_of(data)
    position = offset - seg.start_offset
    dump: JafkaDump | MetaqDump = JafkaDump(data) if jafka else MetaqDump(data)
    direct: object | None = None
    if seg.archive != "zip":  # one bounded read when a valid message starts there
        with sj.open_segment(seg) if jafka else sm.open_segment(seg) as reader:
            direct = sj.message_at(reader, position, dialect) if jafka else sm.message_at(reader, position)
    found: lm.ScannedMessage | None = None
    if direct is not None:
        found = lm.ScannedMessage(position, direct)
    else:  # the store model's reading of the segment, up to the first message at or after the offset
        marker = sj.clean_shutdown_marker(data) if jafka else None
        task = lm.SegmentTask(data.layout, str(seg.path), seg.start_offset, seg.archive, seg.named, seg is partition.last, not marker, data.variant)
        messages = iter(lm.SegmentScan(task))
        try:
            for scanned in messages:
                if scanned.position < position:
                    result.previous_offset = seg.start_offset + scanned.position
                    continue
                if scanned.position > position:
                    result.next_offset = seg.start_offset + scanned.position
                    break
                found = scanned
                break
        finally:
            messages.close()  # type: ignore[attr-defined]
    if found is not None:
        where = Where(partition, seg, position, offset)
        if isinstance(dump, JafkaDump):
            assert isinstance(found.message, jf.Message)  # a Jafka segment's message
            result.items.extend(dump._items(where, found.message, found.code))
        else:
            assert isinstance(found.message, mq.Message)  # a MetaQ segment's message
            result.items.append(dump._item(where, found.message, found.code))
    if not result.items:
        result.reason = f"offset {offset} is not the start of a valid message in {seg.path}"
    result.problems.extend(dump.problems)
    return result


def name_findings(result: OffsetLookup, findings: list[Finding]) -> OffsetLookup:
    """A lookup's problems and reason with validate's findings: its errors after the problems,
    its warnings after the reason, each as ``CODE path:position: message``."""
    errors = log_findings.errors(findings)
    kept = not_stated(list(result.problems), errors)  # a problem a finding states is stated once, by it
    result.problems = [*(p for p in kept if isinstance(p, MqError)), *(finding_text(f) for f in errors)]
    warnings = [finding_text(f) for f in findings if f.level is Severity.warning]
    if warnings:
        result.reason = "; ".join(([result.reason] if result.reason else []) + warnings)
    return result
