"""dump (and read by offset) for the Jafka and MetaQ layouts.

``JafkaDump`` and ``MetaqDump`` yield one item per message, lazily, partition by partition and
segment by segment in offset order, applying ``topic``/``partition``/``from_offset``/``limit``.
Problems met are collected (``problems``: located ``MqError``s) and notices (``notes``: torn
tails, zero tails, names) instead of printed.  A CRC mismatch does not stop a walk (both formats
frame by length, so the next message is still found) and the item says ``crc_valid`` False; a
broken frame ends the walk of its file, where the broker's own recovery would stop too.

Jafka gzip wrappers are expanded (unless ``deep=False``): the wrapper itself, then every inner
message with the offsets a consumer sees (Jafka's deep iterator: every inner message but the last
reports the wrapper's start as its next fetch offset, the last reports the offset after the
wrapper).  Inflating is bounded (``formats.jafka.MAX_INFLATED_SIZE``): a gzip bomb is reported, not expanded.

MetaQ archives are read too (``.meta.arc`` as a file, ``.meta.zip`` inflated on the fly), in
offset order with the live segments; a ``.meta.zip`` dumps exactly like the segment it archives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

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
from mqtool.store.jafka import starts_at as jafka_starts_at
from mqtool.store.legacy import (
    DataDir,
    Framing,
    Partition,
    Segment,
    SegmentReader,
    SegmentWalk,
    WalkEnd,
    end_damage,
)
from mqtool.store.metaq import split_message as split_metaq
from mqtool.store.metaq import starts_at as metaq_starts_at

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


def findings_on_path(path: str | Path, data: DataDir, partitions: list[Partition]) -> list[Finding]:
    """validate's errors and warnings in ``partitions`` of the store at ``path`` (or in the one
    file ``path`` names), with validate's codes and positions (``ops.log_findings``)."""
    if not partitions:
        return []
    within = [data.only] if data.only is not None else [p.path for p in partitions]
    return log_findings.on_path(path, data.layout, within)


def _start_position(
    reader: SegmentReader, segment: Segment, from_offset: int | None, check: Callable[[SegmentReader, int], bool]
) -> tuple[int, str | None]:
    """Where to start reading ``segment`` for ``--from-offset``: the exact position when a valid
    message starts there (what a consumer fetch does), else 0 with a note."""
    if from_offset is None or from_offset <= segment.start_offset:
        return 0, None
    pos = from_offset - segment.start_offset
    if segment.archive == "zip":
        return 0, None  # no random access into an archive: read it from the start
    if check(reader, pos):
        return pos, None
    return 0, f"{segment.path}: offset {from_offset} is not the start of a valid message; starting at the next message after it"


def record_end(
    part: Partition, seg: Segment, reader: SegmentReader, framing: Framing, walk: SegmentWalk, problems: list[MqError], notes: list[str]
) -> None:
    """After a walk: its broken message, or an end that is damage (``store.legacy.end_damage``: a
    length running past the end of a segment before the last, or over valid messages), goes to
    ``problems``; a tail the broker's recovery repairs (torn message, zeros) to ``notes``."""
    if walk.error is not None:
        problems.append(walk.error)
        return
    try:
        damage = end_damage(reader, framing, walk.end, last=seg is part.last)
    except MqError as exc:  # the reader failed looking past the end (I/O, a damaged archive)
        problems.append(exc)
        return
    if damage is not None:
        problems.append(damage)
        return
    note = _end_note(seg, walk.end, reader.size)
    if note:
        notes.append(note)


def _end_note(segment: Segment, end: WalkEnd | None, size: int) -> str | None:
    if end is None or end.kind == "eof":
        return None
    if end.kind == "zeros":
        return f"{segment.path}:{end.position}: data ends with {size - end.position} zero bytes"
    return f"{segment.path}:{end.position}: data ends with a partial message ({size - end.position} of {end.length} bytes)"


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
class JafkaDump:
    data: DataDir
    topic: str | None = None
    partition: int | None = None
    from_offset: int | None = None
    limit: int | None = None
    deep: bool = True
    problems: list[MqError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bytes_done: int = 0
    _magic0_noted: set[Path] = field(default_factory=set, repr=False)

    @property
    def partitions(self) -> list[Partition]:
        return select_partitions(self.data, self.topic, self.partition)

    @property
    def total_bytes(self) -> int:
        return sum(s.size or 0 for p in self.partitions for s in self.data.selected(p))

    def __iter__(self) -> Iterator[JafkaItem]:
        self.notes.extend(self.data.notes)
        emitted = 0
        if self.limit == 0:  # --limit 0: no rows (the check after each yield would let one out)
            return
        for part in self.partitions:
            for seg in self.data.selected(part):
                if self.from_offset is not None and seg.end_offset is not None and seg.end_offset <= self.from_offset:
                    self.bytes_done += seg.size or 0
                    continue
                for item in self._segment(part, seg):
                    yield item
                    emitted += 1
                    if self.limit is not None and emitted >= self.limit:
                        return

    def _segment(self, part: Partition, seg: Segment) -> Iterator[JafkaItem]:
        try:
            reader = sj.open_segment(seg)
        except MqError as exc:
            self.problems.append(exc)
            return
        with reader:
            start, note = _start_position(reader, seg, self.from_offset, jafka_starts_at)
            if note:
                self.notes.append(note)
            walk = SegmentWalk(reader, sj.FRAMING, start, keep_damaged=True)
            done = 0
            try:
                for pos, message in walk:
                    self.bytes_done += walk.bytes_read - done
                    done = walk.bytes_read
                    offset = seg.start_offset + pos
                    if self.from_offset is not None and offset < self.from_offset:
                        continue
                    assert isinstance(message, jf.Message)  # a walk with Jafka's framing
                    yield from self._items(Where(part, seg, pos, offset), message, walk.damaged.get(pos))
            except MqError as exc:  # the reader failed (I/O)
                self.problems.append(exc)
                return
            self.bytes_done += max(0, (seg.size or 0) - start - done)
            record_end(part, seg, reader, sj.FRAMING, walk, self.problems, self.notes)

    def _items(self, where: Where, message: jf.Message, damage: MqError | None) -> Iterator[JafkaItem]:
        """The rows of the message the store's walk yielded at ``where``; ``damage``: the error it
        kept the message despite (its CRC fails, its frame holds), None for a healthy one."""
        computed = message.crc if damage is None else crc32(message.payload)  # the walk checked it
        after = where.offset + message.serialized_size
        magic = jf.magic_error(message.magic, where.position + jf.LOG_OVERHEAD, crc_mismatch=damage is not None)
        finding = None
        if damage is not None:
            # Jafka reads the magic before the CRC: the same error validate reports (JAFKA-MAGIC)
            problem = magic.at(where.segment.path) if magic is not None else damage
            self.problems.append(problem)
            finding = sj.error_code(problem)
        elif magic is not None and where.segment.path not in self._magic0_noted:
            # a whole Kafka 0.7 magic-0 message: shown (Kafka 0.7 files are read), but Jafka cannot read it
            self._magic0_noted.add(where.segment.path)
            self.notes.append(f"{magic.at(where.segment.path)} (the first of this file; `mqtool validate` lists them)")
        if not message.compressed:
            yield JafkaItem(where, "message", message, computed, after, finding=finding)
            return
        yield JafkaItem(where, "wrapper", message, computed, after, finding=finding)
        if not self.deep:
            return
        inner: list[jf.InnerMessage] = []
        try:
            for m in jf.iter_wrapper(message):
                inner.append(m)
        except MqError as exc:
            if damage is not None:  # the wrapper's own damage: stated once, by its finding
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
            if m.crc_computed != m.message.crc and damage is None:
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
            yield JafkaItem(where, kind, m.message, m.crc_computed, nxt, m.depth, m.index, m.position, finding)


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
class MetaqDump:
    data: DataDir
    topic: str | None = None
    partition: int | None = None
    from_offset: int | None = None
    limit: int | None = None
    archives: bool = True
    problems: list[MqError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bytes_done: int = 0

    @property
    def partitions(self) -> list[Partition]:
        return select_partitions(self.data, self.topic, self.partition)

    @property
    def total_bytes(self) -> int:
        return sum(s.size or 0 for p in self.partitions for s in self.data.selected(p, archives=self.archives))

    def __iter__(self) -> Iterator[MetaqItem]:
        self.notes.extend(self.data.notes)
        emitted = 0
        if self.limit == 0:  # --limit 0: no rows (the check after each yield would let one out)
            return
        for part in self.partitions:
            for seg in self.data.selected(part, archives=self.archives or self.data.only is not None):
                if self.from_offset is not None and seg.end_offset is not None and seg.end_offset <= self.from_offset:
                    self.bytes_done += seg.size or 0
                    continue
                for item in self._segment(part, seg):
                    yield item
                    emitted += 1
                    if self.limit is not None and emitted >= self.limit:
                        return

    def _segment(self, part: Partition, seg: Segment) -> Iterator[MetaqItem]:
        try:
            reader = sm.open_segment(seg)
        except MqError as exc:
            self.problems.append(exc)
            return
        with reader:
            if reader.zip is not None:
                expected = segnames.metaq_zip_entry_name(seg)
                if len(reader.zip.entries) != 1:
                    self.problems.append(
                        CorruptDataError(path=seg.path, expected="exactly one entry in a .meta.zip", found=f"{len(reader.zip.entries)} entries")
                    )
                if expected is not None and reader.zip.entry_name != expected:
                    self.problems.append(
                        CorruptDataError(path=seg.path, expected=f"an entry named {expected}", found=repr(reader.zip.entry_name[:120]))
                    )
            start, note = _start_position(reader, seg, self.from_offset, metaq_starts_at)
            if note:
                self.notes.append(note)
            walk = SegmentWalk(reader, sm.FRAMING, start, keep_damaged=True)
            done = 0
            try:
                for pos, message in walk:
                    self.bytes_done += walk.bytes_read - done
                    done = walk.bytes_read
                    offset = seg.start_offset + pos
                    if self.from_offset is not None and offset < self.from_offset:
                        continue
                    assert isinstance(message, mq.Message)  # a walk with MetaQ's framing
                    yield self._item(Where(part, seg, pos, offset), message, walk.damaged.get(pos))
                if walk.error is None and walk.end is not None and walk.end.kind == "eof":
                    reader.verify()  # a zip's CRC is checked once its entry has been read to the end
            except MqError as exc:  # the reader failed (I/O, a damaged archive)
                self.problems.append(exc)
                return
            self.bytes_done += max(0, (seg.size or 0) - start - done)
            record_end(part, seg, reader, sm.FRAMING, walk, self.problems, self.notes)

    def _item(self, where: Where, message: mq.Message, damage: MqError | None) -> MetaqItem:
        """The row of the message the store's walk yielded at ``where``; ``damage``: the error it
        kept the message despite (its checksum fails, its frame holds), None for a healthy one."""
        computed = message.checksum if damage is None else masked_crc32(message.data)  # the walk checked it
        finding = None
        if damage is not None:
            self.problems.append(damage)
            finding = sm.error_code(damage)
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
        return MetaqItem(
            where, message, computed, attribute, payload, None if error is None else f"expected {error.expected}, found {error.found}", finding
        )


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
    framing = sj.FRAMING if jafka else sm.FRAMING
    position = offset - seg.start_offset
    dump: JafkaDump | MetaqDump = JafkaDump(data) if jafka else MetaqDump(data)
    with (sj.open_segment(seg) if jafka else sm.open_segment(seg)) as reader:
        starts = jafka_starts_at if jafka else metaq_starts_at
        direct = seg.archive != "zip" and starts(reader, position)
        walk = SegmentWalk(reader, framing, position if direct else 0, keep_damaged=True)
        for pos, message in walk:
            if pos < position:
                result.previous_offset = seg.start_offset + pos
                continue
            if pos > position:
                result.next_offset = seg.start_offset + pos
                break
            where = Where(partition, seg, pos, offset)
            if isinstance(dump, JafkaDump):
                assert isinstance(message, jf.Message)  # a walk with Jafka's framing
                result.items.extend(dump._items(where, message, walk.damaged.get(pos)))
            else:
                assert isinstance(message, mq.Message)  # a walk with MetaQ's framing
                result.items.append(dump._item(where, message, walk.damaged.get(pos)))
            break
    if not result.items:
        result.reason = f"offset {offset} is not the start of a valid message in {seg.path}"
        if walk.error is not None and (walk.failed_at or 0) <= position:
            result.problems.append(walk.error)
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
