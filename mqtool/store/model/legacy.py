"""The Jafka and MetaQ store model: one streaming reading of a data dir, a partition or a segment.

What each broker's loader and recovery make of the files (Jafka's ``LogManager``/``Log``
load and ``Log.recover``; MetaQ's ``MessageStore`` load and ``MessageStore.recover``), stated
once as findings for every command: ``validate`` assembles them into its report, the readers
(dump, stats, info, diff, recover's plan) name them on their path.

``read_store`` yields, in this order:

1. the files (a ``list`` of findings): the data dir's entries as each broker's loader sees them
   (directory names, stray files, non-numeric segment names, links, special files), per
   partition the continuity of live segments (``start + size == next start``, else the broker
   refuses the partition), zero-length segments, MetaQ archives against each other and the
   first live segment;
2. one ``SegmentRead`` per segment file, read as independent tasks (the caller's ``run`` may
   spread them over processes): every message (frame, CRC, magic, codec and every inner message
   of a Jafka gzip wrapper; MetaQ checksum, attribute block, payload size), how the file ends,
   and resynchronisation after a broken message so the rest of the file is still checked.  A
   ``.meta.zip`` is inflated on the fly, its name and CRC checked;
3. Jafka: the missing clean-shutdown marker of a data dir (a list of at most one finding).

Readers that need less than a whole reading take it from the model too: ``JAFKA_RANGE`` and
``METAQ_RANGE`` are the families' framings for ``store.model.framed.read_range`` (one byte range
of a segment, as the Spark sources split a file); ``recovery_tail`` runs a broker's recovery loop
over a last segment and ``count_valid_from`` counts the valid messages after a point (recover's
plan); ``read_messages`` streams the messages from a position up to where they stop (diff's
closer look at a region).

How a file ends is judged as the broker would: only the last live segment of a partition is ever
repaired, by recovery at start-up (Jafka: only without ``.jafka_cleanshutdown``; MetaQ: always).
There a partial message followed by zeros or the end is a torn tail (warning: recovery truncates
it); anything else is damage, and valid messages found after the point where recovery stops are
reported as the messages recovery will throw away.  Jafka's recovery throws on a magic byte other
than 1 (the broker does not start); MetaQ's recovery reads 20 zero bytes as a valid empty message,
so a zero tail survives as empty messages with id 0.  In every other segment (and in archives)
any tail that is not a clean end is an error, because nothing ever repairs it.  In any segment, a
length running past the end of the file over valid messages is no partial message but a damaged
length (``SIZE``), followed by the unreadable span and the walk resumed at the next valid message
(``store.legacy.end_damage``, which dump, stats and info share).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, TypeVar, cast

from mqtool.errors import ChecksumError, CorruptDataError, MqError, StoreIOError, StoreLayoutError
from mqtool.findings import Finding
from mqtool.findings.code_ids import (
    JAFKA_MAGIC,
    JAFKA_UNCLEAN_SHUTDOWN,
    JAFKA_UNREADABLE_REGION,
    METAQ_ARCHIVE_DUPLICATE,
    METAQ_ARCHIVE_GAP,
    METAQ_DIR_IGNORED,
    METAQ_UNREADABLE_REGION,
    METAQ_ZERO_LENGTH,
    METAQ_ZIP,
    METAQ_ZIP_CRC,
    METAQ_ZIP_NAME,
)
from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.formats.data_end import DataEnd
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.files import Readable, nonzero_extent
from mqtool.store.legacy import (
    MAX_MESSAGE_SIZE,
    DataDir,
    Framing,
    Partition,
    Segment,
    SegmentReader,
    SegmentWalk,
    end_damage,
    framed_message,
    next_message,
    zero_run,
)
from mqtool.store.model.framed import Adapt, RangeFraming


class _ClosableFile(Readable, Protocol):
    def close(self) -> None: ...


_File = TypeVar("_File", bound=_ClosableFile)

# --- phase 2: one segment file ------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentTask:
    layout: str  # "jafka" | "metaq"
    path: str
    start_offset: int
    archive: str | None
    named: bool
    is_last: bool  # the last live segment of its partition: the one recovery repairs
    recovery_runs: bool  # Jafka: no clean-shutdown marker; MetaQ: always
    variant: str | None = None  # the Jafka family's dialect (``store.jafka.DIALECTS``): "jafka" or "kafka07"
    #: the piece size the segment's walk reads it in (``store.model.framed.PieceWalk``); None:
    #: ``store.files.piece_size()``.  No answer depends on it.
    piece: int | None = None
    #: also fold the segment's messages, as the walk reads them, into the fold this makes
    #: (``SegmentFold``; its answer: ``SegmentResult.folded``).  Not part of the judgement.
    fold: SegmentFolder | None = None


@dataclass
class SegmentResult:
    path: str
    size: int = 0
    records: int = 0
    inner: int = 0
    valid_end: int = 0  # position where valid data stops (first break)
    recovery_end: int | None = None  # last segment: where the broker's recovery stops
    recovery_crash: bool = False
    empty_messages: int = 0  # MetaQ: zero headers recovery keeps as messages
    lost: int = 0  # valid messages at or after recovery_end
    findings: list[Finding] = field(default_factory=list)
    opened: bool = False
    #: how the valid data first stops: ``eof``, ``zeros``, ``partial`` (as the walk ended) or
    #: ``corrupt`` (a broken message); None when the file was not read to a stop
    end_kind: str | None = None
    #: the walk's end where the valid data first stops at a zero or partial tail (position, length)
    end: DataEnd[str] | None = None
    #: ``end_kind`` ``corrupt``: what the decoder said of the broken message (``MqError.reason``)
    break_reason: str | None = None
    #: MetaQ, a last segment whose valid data first stops at zeros: where MetaQ's recovery loop,
    #: reading on through them, stops (``recovery_tail``'s answer, from this reading)
    metaq_tail: RecoveryTail | None = None
    #: ``SegmentTask.fold``'s answer (``SegmentFold.finish``), made during the same walk, and the
    #: folder that made it; None without a fold or when the file was not read to its end
    folded: object | None = None
    folded_by: SegmentFolder | None = None

    def tail(self) -> DataEnd[str] | None:
        """``end`` when it is a tail the broker's recovery repairs (the reading states a
        TORN-TAIL or ZERO-TAIL there), else None (no tail, or damage)."""
        end = self.end
        if end is None or not any(f.position == end.position and f.code.endswith(("-TORN-TAIL", "-ZERO-TAIL")) for f in self.findings):
            return None
        return end


@dataclass(frozen=True)
class ScannedMessage:
    """One message of a segment as the scan read it: its position in the file, the message
    (``formats.jafka.Message`` or ``formats.metaq.Message``) and, for a message whose frame holds
    but whose checksum (or Jafka magic) is damaged -- decoded without the check, and the scan reads
    on after it -- the code of the finding stated about it (JAFKA-CRC, JAFKA-MAGIC, METAQ-CRC)."""

    position: int
    message: object
    code: str | None = None


class SegmentFold(Protocol):
    """A reader's fold of one segment's messages (stats' count), fed by the walk that judges the
    segment: the reader's answer and the judgement come from one reading of the file.  Made in the
    process that reads the segment (a validate worker too) by the task's ``SegmentFolder``; its
    answer travels back in ``SegmentResult.folded``, so it must pickle."""

    def add(self, scanned: ScannedMessage) -> None:
        """A message as the walk reads it (a damaged one whose frame holds too, with its code)."""

    def finish(self, result: SegmentResult, error: MqError | None) -> object:
        """The walk has ended: ``result`` is the segment's judgement, ``error`` the reader's
        failure (``SegmentScan.reader_error``).  Returns the fold's answer."""


#: Makes a segment's fold (``SegmentTask.fold``).  It goes to the worker with the task, so it must
#: pickle, and equal folders make equal folds (``read_folded`` takes a kept answer by equality).
SegmentFolder = Callable[[SegmentTask], SegmentFold]


class SegmentScan:
    """One segment's reading as a stream: iterating yields every message (``ScannedMessage``) as
    the walk reads it, while ``result`` collects the findings, counts and ends (and the task's
    fold, fed the same messages, its answer: ``SegmentResult.folded``).  A consumer that stops
    early (``dump --limit``) reads no further: ``complete`` stays False and ``result`` holds what
    was judged so far.  ``read_segment`` consumes it whole."""

    def __init__(self, task: SegmentTask) -> None:
        self.task = task
        self.result = SegmentResult(task.path)
        self.complete = False
        #: the reader failed (I/O, a damaged archive), as raised: readers report it themselves
        self.reader_error: MqError | None = None
        self.fold = task.fold(task) if task.fold is not None else None

    def __iter__(self) -> Iterator[ScannedMessage]:
        task = self.task
        res = self.result
        prefix = "JAFKA" if task.layout == "jafka" else "METAQ"
        seg = Segment(Path(task.path), task.start_offset, None, 0, task.archive, task.named)
        try:
            reader = sj.open_segment(seg) if task.layout == "jafka" else sm.open_segment(seg)
        except (StoreIOError, StoreLayoutError) as exc:
            self.reader_error = exc
            res.findings.append(Finding(f"{prefix}-UNREADABLE", task.path, exc.position, exc.reason))
            self._end(whole=False)
            return
        except MqError as exc:  # a zip archive whose structure is broken (position: in the archive file)
            self.reader_error = exc
            res.findings.append(Finding(METAQ_ZIP, task.path, exc.position, exc.reason))
            self._end(whole=False)
            return
        whole = False
        fold = self.fold
        with reader:
            res.size = reader.size
            res.opened = True
            if reader.zip is not None:
                _check_zip_entries(task, reader, res)
            try:
                if fold is None:
                    yield from _Scan(task, reader, res).run()
                else:
                    for scanned in _Scan(task, reader, res).run():
                        fold.add(scanned)
                        yield scanned
                reader.verify()
                whole = True
            except StoreIOError as exc:
                self.reader_error = exc
                res.findings.append(Finding(f"{prefix}-UNREADABLE", task.path, exc.position, exc.reason))
            except MqError as exc:  # the reader failed: for an archive, a damaged zip
                self.reader_error = exc
                if reader.zip is None:
                    res.findings.append(Finding(f"{prefix}-UNREADABLE", task.path, exc.position, exc.reason))
                else:
                    code = METAQ_ZIP_CRC if isinstance(exc, ChecksumError) else METAQ_ZIP
                    res.findings.append(Finding(code, task.path, None, exc.reason))
        self._end(whole=whole)

    def _end(self, *, whole: bool) -> None:
        """The reading is complete: the fold's answer, and (``whole``: the file read to its end
        without a reader failure) the reading kept inside ``shared_reading``."""
        if self.fold is not None:
            self.result.folded = self.fold.finish(self.result, self.reader_error)
            self.result.folded_by = self.task.fold
        if whole:
            _share(self.task, self.result)
        self.complete = True


def read_segment(task: SegmentTask) -> SegmentResult:
    """Every message of one segment file and how it ends.  Never raises on data."""
    scan = SegmentScan(task)
    for _ in scan:
        pass
    return scan.result


def _check_zip_entries(task: SegmentTask, reader: SegmentReader, res: SegmentResult) -> None:
    z = reader.zip
    assert z is not None
    if len(z.entries) != 1:
        res.findings.append(
            Finding(
                METAQ_ZIP,
                task.path,
                None,
                f"expected exactly one entry (ArchiveDeletePolicy writes the segment alone), found {len(z.entries)}: " + ", ".join(repr(e[:60]) for e in z.entries[:5]),
            )
        )
    expected = segnames.metaq_zip_entry_name(reader.segment)
    if expected is not None and z.entry_name != expected:
        res.findings.append(
            Finding(
                METAQ_ZIP_NAME,
                task.path,
                None,
                f"expected the entry to be named {expected} (the segment it archives), found {z.entry_name[:120]!r}: the archive's offsets cannot be trusted",
            )
        )


class _Scan:
    """Walk one segment, judging every break; collects findings into ``res``."""

    def __init__(self, task: SegmentTask, reader: SegmentReader, res: SegmentResult) -> None:
        self.task = task
        self.reader = reader
        self.res = res
        self.size = reader.size
        self.jafka = task.layout == "jafka"
        self.dialect = sj.DIALECTS.get(task.variant or "jafka", sj.JAFKA)
        self.framing = self.dialect.framing if self.jafka else sm.FRAMING
        self.prefix = "JAFKA" if self.jafka else "METAQ"
        self.first_break: int | None = None
        #: the damaged message ``on_error`` keeps (its frame holds), for ``run`` to yield
        self.kept: ScannedMessage | None = None
        self.recovery_point: int | None = None  # last segment: where recovery stops
        self.repaired = task.is_last  # recovery (if it runs) repairs this file's tail
        self.piece = task.piece

    # -- helpers -----------------------------------------------------------------------------
    def add(self, code: str, position: int | None, message: str, length: int | None = None) -> None:
        self.res.findings.append(Finding(f"{self.prefix}-{code}", self.task.path, position, message, length))

    def offset(self, position: int) -> int:
        return self.task.start_offset + position

    def where(self) -> str:
        if self.task.archive is not None:
            return "an archive"
        return "the last segment" if self.task.is_last else "a segment before the last one"

    def length_at(self, position: int) -> int | None:
        head = self.reader.pread(position, 4)
        return self.framing.peek_length(head, 0) if len(head) == 4 else None

    def starts_at(self, position: int) -> bool:
        if self.jafka:
            return sj.starts_at(self.reader, position, self.dialect)
        return sm.starts_at(self.reader, position)

    def mark_break(self, position: int) -> None:
        if self.first_break is None:
            self.first_break = position
            self.res.valid_end = position
            if self.task.is_last and self.recovery_point is None:
                self.recovery_point = position

    def magic_error(self, magic: int, position: int | None, *, crc_mismatch: bool = False) -> CorruptDataError | None:
        """``formats.jafka.magic_error`` with the dialect's magics (Jafka 1; Kafka 0.7 0 and 1)."""
        d = self.dialect
        return jf.magic_error(magic, position, crc_mismatch=crc_mismatch, magics=d.magics, broker=d.broker)

    # -- the walk ------------------------------------------------------------------------------
    def run(self) -> Iterator[ScannedMessage]:
        """Walk the file, yielding each message as it is read (and a damaged message whose frame
        holds, with its finding's code); the findings go to ``res``."""
        pos = 0
        while True:
            walk = SegmentWalk(self.reader, self.framing, pos, check_crc=True, chunk=self.piece)
            for p, message in walk:
                self.message(p, message)
                yield ScannedMessage(p, message)
            self.kept = None
            if walk.error is None:
                end = walk.end
                assert end is not None
                if end.kind == "eof":
                    if self.first_break is None:
                        self.res.valid_end = end.position
                        self.res.end_kind = "eof"
                    break
                if self.first_break is None:
                    self.res.end_kind, self.res.end = end.kind, end
                nxt = self.on_end(end)
            else:
                assert walk.failed_at is not None
                if self.first_break is None:
                    self.res.end_kind, self.res.break_reason = "corrupt", walk.error.reason
                nxt = self.on_error(walk.failed_at, walk.error)
                if self.kept is not None:
                    yield self.kept
            if nxt is None:
                break
            pos = nxt
        self.finish()

    def message(self, p: int, message: object) -> None:
        res = self.res
        res.records += 1
        if self.recovery_point is not None and p >= self.recovery_point:
            res.lost += 1
        if self.jafka:
            self.jafka_message(p, cast(jf.Message, message))
        else:
            self.metaq_message(p, cast(mq.Message, message))

    def jafka_message(self, p: int, m: jf.Message) -> None:
        magic = self.magic_error(m.magic, p + jf.LOG_OVERHEAD)
        if magic is not None:
            self.add(
                "MAGIC",
                magic.position,
                magic.reason + ("; its recovery throws on it" if self.task.is_last else ""),
            )
            if self.task.is_last and self.recovery_point is None:
                self.recovery_point = p
                self.res.recovery_crash = m.size >= self.dialect.min_length
            return
        if m.attributes & ~jf.COMPRESSION_CODEC_MASK & 0xFF:
            self.add("ATTRIBUTE", p + 5, f"expected attribute bits 2-7 clear, found attribute 0x{m.attributes:02X}")
        codec = m.compression_codec
        known = self.dialect.codecs
        if codec == jf.CODEC_SNAPPY and codec not in known:
            self.add("CODEC", p + 5, "expected codec 0 (none) or 1 (gzip), found 2 (snappy): Jafka has no snappy codec, consumers fail")
        elif codec not in known:
            exception = "UnKnownCodecException" if self.dialect is sj.JAFKA else "UnknownCodecException"  # (each broker's spelling)
            self.add("CODEC", p + 5, f"expected codec {self.dialect.codec_text()}, found {codec}: consumers fail ({exception})")
        elif codec != jf.CODEC_NONE:
            try:
                for inner in jf.iter_wrapper(m, snappy=jf.CODEC_SNAPPY in known):
                    self.res.inner += 1
                    if inner.crc_computed != inner.message.crc:
                        self.add(
                            "WRAPPER",
                            p,
                            f"inner message #{inner.index} at inflated byte {inner.position}: expected CRC 0x{inner.crc_computed:08X}, found 0x{inner.message.crc:08X}",
                        )
                    magic = self.magic_error(inner.message.magic, None)
                    if magic is not None:
                        self.add("WRAPPER", p, f"inner message #{inner.index}: {magic.reason}")
            except MqError as exc:
                self.add("WRAPPER", p, f"compressed wrapper ({self.res.inner} inner messages read): {exc.reason}")

    def metaq_message(self, p: int, m: mq.Message) -> None:
        attribute, payload, error = sm.split_message(m)
        if error is not None:
            self.add(
                "ATTRIBUTE",
                p + mq.HEADER_LEN,
                f"flag bit 0 says the data starts with an attribute block: expected {error.expected}, found {error.found}; consumers throw on this message",
            )
        elif attribute is not None:
            try:
                attribute.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.add(
                    "ATTRIBUTE-UTF8",
                    p + mq.HEADER_LEN + 4 + exc.start,
                    f"expected UTF-8 attribute text, found byte 0x{attribute[exc.start]:02X} (consumers see U+FFFD)",
                )
        if len(payload) > mq.MAX_READ_BUFFER_SIZE:
            self.add(
                "PAYLOAD-SIZE",
                p,
                f"expected a payload of at most {mq.MAX_READ_BUFFER_SIZE} bytes (the client's read limit), found {len(payload)}",
            )

    # -- breaks --------------------------------------------------------------------------------
    def on_error(self, b: int, exc: MqError) -> int | None:
        self.mark_break(b)
        if self.repaired:
            torn = self.torn_at(b)
            if torn is not None:
                return None
        code, position, text = "SIZE", exc.position, exc.reason
        if self.jafka and len(head := self.reader.pread(b, jf.LOG_OVERHEAD + 1)) > jf.LOG_OVERHEAD:
            # (fewer bytes than LENGTH and MAGIC before the end of the data: the error says so)
            length, magic_byte = jf.peek_message(head)
            # Jafka reads the magic before the CRC (crcOffset throws first): a magic byte other than
            # 1 is JAFKA-MAGIC even when, read as Kafka 0.7's magic 0, the CRC does not match either
            magic = self.magic_error(magic_byte, b + jf.LOG_OVERHEAD, crc_mismatch=isinstance(exc, ChecksumError))
            if length < jf.MIN_HEADER_SIZE_V0:
                header = "the magic-1 header" if self.dialect.min_length == jf.MIN_HEADER_SIZE else "the magic-0 header"
                position, text = b, f"expected LENGTH >= {self.dialect.min_length} ({header}), found {length}"
            elif magic is not None:
                code, position, text = "MAGIC", magic.position, magic.reason
            elif isinstance(exc, ChecksumError):
                code = "CRC"
        elif isinstance(exc, ChecksumError):
            code = "CRC"
        self.add(code, position, text)
        if code in ("CRC", "MAGIC"):
            nxt = self.framed_next(b)
            if nxt is not None:
                self.keep(b, nxt, f"{self.prefix}-{code}")
                return nxt
        return self.resync_from(b, b + 1)

    def keep(self, b: int, nxt: int, code: str) -> None:
        """The message at ``b`` whose frame holds (the next one starts at ``nxt``) but whose check
        failed: decoded without the check and handed to the consumer with its finding's code
        (``self.kept``); not counted among the valid messages."""
        try:
            message = self.framing.decode(self.reader.pread(b, nxt - b), 0, check_crc=False)  # type: ignore[misc]
        except MqError:
            return
        self.kept = ScannedMessage(b, message, code)

    def on_end(self, end: DataEnd[str]) -> int | None:
        b = end.position
        if end.kind == "partial":
            declared = end.length - self.framing.overhead
            if declared > self.framing.max_message_size:
                self.mark_break(b)
                self.add("SIZE", b, f"expected {self.framing.length_field} at most {self.framing.max_message_size}, found {declared}")
                return self.resync_from(b, b + 1)
            self.mark_break(b)
            nxt, _ = next_message(self.reader, self.framing, b + 1, piece=self.piece)
            if nxt is not None:
                # valid messages inside the span the length claims: the length is damaged, this is no tail
                damage = end_damage(self.reader, self.framing, end, last=self.task.is_last, piece=self.piece)
                assert damage is not None
                self.add("SIZE", b, damage.reason)
                return self.resync_from(b, b + 1)
            if self.repaired:
                if self.torn_at(b) is None:
                    self.add("GARBAGE", b, f"{self.size - b} bytes after the end of valid data that are not a message", self.size - b)
                return None
            self.add(
                "SEGMENT-TAIL",
                b,
                f"{self.where()} ends in a partial message: {self.size - b} of its {end.length} bytes; nothing ever repairs it "
                "(consumers fetching this offset get no complete message)",
                self.size - b,
            )
            return None
        # zeros
        if not self.jafka and self.task.is_last and self.first_break is None:
            self.metaq_recovery_from(b)
        self.mark_break(b)
        extent = nonzero_extent(self.reader, b)
        if extent is None:
            n = self.size - b
            if self.repaired:
                self.add("ZERO-TAIL", b, self.zero_tail_text(b, n), n)
            else:
                self.add("SEGMENT-TAIL", b, f"{self.where()} ends in {n} zero bytes after its last message; nothing ever repairs it", n)
            return None
        return self.resync_from(b, b, zeros_first=extent[0])

    def zero_tail_text(self, b: int, n: int) -> str:
        if self.jafka:
            if self.task.recovery_runs:
                return f"{n} zero bytes after the last message (a crash before the data was written); recovery truncates them"
            return f"{n} zero bytes after the last message; recovery would truncate them but is skipped ({self.dialect.marker} present)"
        kept, rest = divmod(n, mq.HEADER_LEN)
        text = f"{n} zero bytes after the last message: MetaQ's recovery reads 20 zero bytes as a valid empty message, so "
        if kept:
            text += f"it keeps {kept} empty message(s) (msgLen 0, id 0) that consumers will receive"
            text += f" and truncates the last {rest} bytes" if rest else ""
        else:
            text += f"with fewer than 20 it truncates all {n}"
        return text

    def torn_at(self, b: int) -> int | None:
        """A torn tail at ``b`` (the last segment): a message that breaks off, followed only by
        zeros or the end.  Reports it and returns its written length, else None."""
        rem = self.size - b
        overhead = self.framing.overhead
        if rem < self.framing.header_size:
            data = self.reader.pread(b, rem)
            if not data.strip(b"\x00"):
                return None
            self.add("TORN-TAIL", b, f"torn tail: {rem} bytes of a message header at the end of the file; recovery truncates them", rem)
            return rem
        length = self.length_at(b)
        minimum = jf.MIN_HEADER_SIZE_V0 if self.jafka else 0
        if length is None or length < minimum or length > self.framing.max_message_size:
            return None
        entry_end = b + overhead + length
        if entry_end <= self.size:
            if entry_end < self.size and nonzero_extent(self.reader, entry_end) is not None:
                return None
            extent = nonzero_extent(self.reader, b, entry_end)
            written = (extent[1] if extent else b) - b
            if written == overhead + length:
                # its last byte holds data: the message was written whole, and its damage is no
                # torn write (``store.legacy.is_torn_message``, the rule every reader applies)
                return None
            how = f"only {written} of its bytes hold data, the rest are zeros"
            length_out = self.size - b
        else:
            written = rem
            how = f"only {rem} of its bytes were written"
            length_out = rem
        repair = "recovery truncates it" if self.task.recovery_runs else f"recovery would truncate it but is skipped ({self.dialect.marker} present)"
        self.add(
            "TORN-TAIL",
            b,
            f"torn tail: a {overhead + length}-byte message starts at offset {self.offset(b)} but {how} (a crash while writing); {repair}",
            length_out,
        )
        return written

    def framed_next(self, b: int) -> int | None:
        """After a message whose payload is damaged but whose length is sane: where the next
        message starts, when the bytes there are a valid message, zeros, or the end."""
        length = self.length_at(b)
        if length is None or length < (jf.MIN_HEADER_SIZE_V0 if self.jafka else 0):
            return None
        nxt = b + self.framing.overhead + length
        if nxt > self.size:
            return None
        if nxt == self.size or self.starts_at(nxt) or nonzero_extent(self.reader, nxt, nxt + self.framing.header_size) is None:
            return nxt
        return None

    def resync_from(self, b: int, start: int, *, zeros_first: int | None = None) -> int | None:
        nxt, scanned_to = self.resync(start)
        if nxt is not None:
            if zeros_first is not None and zeros_first >= nxt:
                extra = ""
                if not self.jafka and (nxt - b) % mq.HEADER_LEN == 0:
                    extra = f"; MetaQ's recovery reads them as {(nxt - b) // mq.HEADER_LEN} empty messages"
                text = f"{nxt - b} zero bytes between messages (offset {self.offset(b)} to {self.offset(nxt)}){extra}"
            elif zeros_first is not None:
                text = f"zeros then {nxt - zeros_first} bytes of other data before the next valid message at offset {self.offset(nxt)}"
            else:
                text = f"{nxt - b} bytes between the broken message and the next valid message at offset {self.offset(nxt)} were skipped"
            self.add("UNREADABLE-REGION", b, text, nxt - b)
            return nxt
        extent = nonzero_extent(self.reader, b)
        if extent is None:
            return None
        first, stop = extent
        if zeros_first is not None:
            self.add(
                "GARBAGE",
                first,
                f"expected zeros after the end of valid data at offset {self.offset(b)}, found {stop - first} bytes of other data "
                f"(positions {first} to {stop}) that hold no valid message",
                stop - first,
            )
            return None
        unchecked = f"; the {self.size - scanned_to} bytes after position {scanned_to} were not searched" if scanned_to < stop else ""
        self.add(
            "UNREADABLE-REGION",
            b,
            f"no valid message after the broken one: {stop - b} bytes up to position {stop} cannot be read{unchecked}",
            stop - b,
        )
        return None

    def resync(self, start: int) -> tuple[int | None, int]:
        """The first position >= ``start`` where a valid message starts (CRC-checked), searching at
        most ``RESYNC_LIMIT`` bytes; also returns how far the search went."""
        return next_message(self.reader, self.framing, start, piece=self.piece)

    # -- MetaQ recovery simulation -------------------------------------------------------------------
    def metaq_recovery_from(self, b: int) -> None:
        """MetaQ's recovery continues through zero headers (valid empty messages): where does it
        stop?  The loop is ``_metaq_recovery``'s, recover's plan takes its answer (``metaq_tail``)."""
        tail = _metaq_recovery(self.reader, b, self.piece)
        self.recovery_point = tail.broker_end
        self.res.empty_messages = sum(n for _p, n in tail.gaps)
        self.res.metaq_tail = tail

    # -- the end -------------------------------------------------------------------------------------
    def finish(self) -> None:
        res = self.res
        task = self.task
        if not task.is_last:
            return
        point = self.recovery_point if self.recovery_point is not None else self.size
        res.recovery_end = point
        valid_end = res.valid_end
        if self.jafka and point < self.size and task.recovery_runs:
            res.recovery_crash = self.jafka_recovery_crashes(point)
            if res.recovery_crash:
                magics = " or ".join(str(m) for m in sorted(self.dialect.magics))
                self.add(
                    "RECOVERY-CRASH",
                    point + jf.LOG_OVERHEAD,
                    f"{self.dialect.broker}'s recovery reads a complete entry at offset {self.offset(point)} whose magic byte is not {magics} and "
                    "throws UnknownMagicByteException: the broker does not start until this segment is repaired (`mqtool recover`)",
                )
        if task.recovery_runs and res.lost and not res.recovery_crash:
            self.add(
                "RECOVERY-LOSS",
                point,
                f"the broker's recovery stops at offset {self.offset(point)} and truncates the {self.size - point} bytes after it, "
                f"which hold {res.lost} valid message(s)",
                self.size - point,
            )
        if self.jafka and not task.recovery_runs and valid_end < self.size:
            self.add(
                "UNRECOVERED",
                valid_end,
                f"{self.dialect.marker} is present, so {self.dialect.broker} skips recovery: consumers stop at offset {self.offset(valid_end)} and new "
                f"messages are appended after the {self.size - valid_end} bytes that follow",
                self.size - valid_end,
            )
        text = f"valid data ends at offset {self.offset(valid_end)} (position {valid_end} of {self.size})"
        if not self.jafka and point != valid_end:
            text += f"; MetaQ's recovery keeps {point} bytes ({res.empty_messages} empty message(s) from zeros), log end offset {self.offset(point)}"
        elif point < self.size and task.recovery_runs and not res.recovery_crash:
            text += f"; recovery truncates the segment to {point} bytes"
        self.add("VALID-END", valid_end, text)

    def jafka_recovery_crashes(self, point: int) -> bool:
        head = self.reader.pread(point, jf.LOG_OVERHEAD + 1)
        if len(head) < jf.LOG_OVERHEAD + 1:
            return False
        length, magic = jf.peek_message(head)
        if length < self.dialect.min_length or point + jf.LOG_OVERHEAD + length > self.size:
            return False
        return not self.dialect.accepts_magic(magic)


# --- phase 1: files --------------------------------------------------------------------------------------


def _check_links(links: list[Path], out: list[Finding], prefix: str) -> None:
    for path in links:
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        out.append(Finding(f"{prefix}-FILE-LINK", str(path), None, f"expected a regular file or directory, found a symbolic link to {target!r}: not followed"))


def _check_data_dir(data: DataDir, out: list[Finding], prefix: str) -> None:
    _check_links(data.links, out, prefix)
    for path in data.unexpected:
        out.append(Finding(f"{prefix}-UNEXPECTED-FILE", str(path), None, f"a file in the data dir: the broker skips it ({path.name!r})"))
    for path in data.ignored_dirs:
        if path.name == sm.TRANSACTIONS_DIR:
            continue
        out.append(Finding(METAQ_DIR_IGNORED, str(path), None, f"no '-' in {path.name!r}: MetaQ ignores this directory (\"Ignore invlaid directory\")"))
    for path, reason in data.bad_dirs:
        out.append(Finding(f"{prefix}-DIR-NAME", str(path), None, f"expected <topic>-<int partition>, found {path.name!r}: {reason}"))


def _check_partition(part: Partition, out: list[Finding], prefix: str) -> None:
    suffix = ".jafka" if prefix == "JAFKA" else ".meta"
    for path in part.bad_names:
        out.append(
            Finding(
                f"{prefix}-FILE-NAME",
                str(path),
                None,
                f"expected <digits>{suffix}, found {path.name!r}: the broker parses the name as the start offset and fails to load the partition",
            )
        )
    _check_links(part.links, out, prefix)
    for path, kind in part.irregular:
        out.append(Finding(f"{prefix}-UNREADABLE", str(path), None, f"expected a regular segment file, found {kind}: not read"))
    for path in part.unexpected:
        kind = "directory" if path.is_dir() else "file"
        out.append(Finding(f"{prefix}-UNEXPECTED-FILE", str(path), None, f"a {kind} the broker ignores in a partition directory: {path.name!r}"))
    segs = part.segments
    if not segs:
        archived = f"; archives reach offset {max(a.end_offset or a.start_offset for a in part.archives)}" if part.archives else ""
        restart = "00000000000000000000.jafka (offset 0)" if prefix == "JAFKA" else "a segment at its offsetIfCreate (usually 0)"
        out.append(Finding(f"{prefix}-NO-SEGMENTS", str(part.path), None, f"no live segment: the broker creates {restart}{archived}"))
    for i, seg in enumerate(segs):
        if seg.size == 0 and i < len(segs) - 1:
            out.append(Finding(f"{prefix}-ZERO-LENGTH", str(seg.path), 0, "a zero-length segment before the last one"))
        if i:
            prev = segs[i - 1]
            expected = prev.start_offset + (prev.size or 0)
            if seg.start_offset != expected:
                code = f"{prefix}-SEGMENT-GAP" if seg.start_offset > expected else f"{prefix}-SEGMENT-OVERLAP"
                what = (
                    f"offsets {expected}..{seg.start_offset - 1} are missing"
                    if seg.start_offset > expected
                    else f"it overlaps the previous segment by {expected - seg.start_offset} bytes"
                )
                out.append(
                    Finding(
                        code,
                        str(seg.path),
                        None,
                        f"expected the segment after {prev.name} ({prev.start_offset} + {prev.size} bytes) to start at offset {expected}, "
                        f'found {seg.name}: {what}; the broker refuses to load the partition ("The following segments don\'t validate")',
                        length=abs(seg.start_offset - expected),
                        details={"missing_from": expected, "missing_to": seg.start_offset} if seg.start_offset > expected else {},
                    )
                )
    if prefix == "METAQ":
        _check_archives(part, out)


def _check_archives(part: Partition, out: list[Finding]) -> None:
    live = {s.start_offset: s for s in part.segments}
    seen: dict[int, Segment] = {}
    chain: list[Segment] = []
    for arc in part.archives:
        if arc.size == 0:
            out.append(Finding(METAQ_ZERO_LENGTH, str(arc.path), 0, "a zero-length archive"))
        twin = live.get(arc.start_offset) or seen.get(arc.start_offset)
        if twin is not None:
            out.append(
                Finding(
                    METAQ_ARCHIVE_DUPLICATE,
                    str(arc.path),
                    None,
                    f"{twin.name} starts at the same offset {arc.start_offset}"
                    + (" and is still live (an archive run interrupted before it deleted the segment?)" if twin.archive is None else ""),
                )
            )
            continue
        seen[arc.start_offset] = arc
        chain.append(arc)
    if not chain:
        return
    if part.segments:
        chain.append(part.segments[0])
    chain.sort(key=lambda s: s.start_offset)
    for prev, seg in zip(chain, chain[1:]):
        if prev.size is None:
            continue
        expected = prev.start_offset + prev.size
        if seg.start_offset != expected:
            what = f"offsets {expected}..{seg.start_offset - 1} are in no file" if seg.start_offset > expected else f"they overlap by {expected - seg.start_offset} bytes"
            out.append(
                Finding(
                    METAQ_ARCHIVE_GAP,
                    str(seg.path),
                    None,
                    f"expected {seg.name} to start where {prev.name} ends ({expected}), found {seg.start_offset}: {what}",
                    length=abs(seg.start_offset - expected),
                )
            )


# --- the reading ------------------------------------------------------------------------------------------

#: How the reading's segment tasks run: ``run(fn, tasks)`` yields ``fn(task)`` for each task, in
#: order (``map``; validate spreads them over processes for ``--jobs``).
Runner = Callable[[Callable[[SegmentTask], SegmentResult], list[SegmentTask]], Iterable[SegmentResult]]


@dataclass(frozen=True)
class SegmentRead:
    """What the walk of one segment file found, and the partition it belongs to."""

    task: SegmentTask
    partition: Partition
    result: SegmentResult


def _serial(fn: Callable[[SegmentTask], SegmentResult], tasks: list[SegmentTask]) -> Iterable[SegmentResult]:
    return map(fn, tasks)


@dataclass
class StoreReading:
    """The parts of ``read_store`` before any log byte is read, for a reader that runs the segment
    scans itself (``SegmentScan``, lazily: dump) and states the findings they make: ``files`` (the
    first item), the segment ``tasks`` with their partitions, in order, and ``closing`` (the last
    item: Jafka's missing clean-shutdown marker)."""

    files: list[Finding]
    tasks: list[tuple[SegmentTask, Partition]]
    closing: list[Finding]


def plan_reading(data: DataDir, layout: str) -> StoreReading:
    """What ``read_store`` states without reading a log byte, and the segment tasks it runs."""
    prefix = layout.upper()
    out: list[Finding] = []
    if data.kind == "data-dir":
        _check_data_dir(data, out, prefix)
    tasks: list[tuple[SegmentTask, Partition]] = []
    # the broker recovers the last segment of each partition at its next start: MetaQ always,
    # Jafka without .jafka_cleanshutdown (None: no data dir known, as if absent)
    marker = sj.clean_shutdown_marker(data) if layout == "jafka" else None
    runs = not marker
    for part in data.partitions:
        if data.only is None:
            _check_partition(part, out, prefix)
        last = part.last
        for seg in data.selected(part):
            tasks.append((SegmentTask(layout, str(seg.path), seg.start_offset, seg.archive, seg.named, seg is last, runs, data.variant), part))
    closing: list[Finding] = []
    if marker is False and data.data_dir is not None and data.only is None:
        name = sj.dialect_of(data).marker
        closing.append(
            Finding(
                JAFKA_UNCLEAN_SHUTDOWN,
                str(data.data_dir / name),
                None,
                f"no {name} in {data.data_dir}: the broker is running or did not stop cleanly; at the next start "
                "recovery checks and truncates the last segment of every partition",
            )
        )
    return StoreReading(out, tasks, closing)


def read_store(data: DataDir, layout: str, *, run: Runner = _serial) -> Iterator[list[Finding] | SegmentRead]:
    """Everything the model states about ``data`` (a Jafka or MetaQ data dir, partition or
    segment: ``layout``), streamed in the order of the module docstring.  Inside
    ``shared_reading`` a segment read before in the block, unchanged since, is not read again, and
    a segment read now also feeds the block's fold (``shared_reading(fold=...)``)."""
    reading = plan_reading(data, layout)
    yield reading.files
    shared = _SHARED.get()
    if shared is None:
        results = run(read_segment, [task for task, _ in reading.tasks])
    else:
        fold = shared.fold
        tasks = [task if fold is None else replace(task, fold=fold(task, part)) for task, part in reading.tasks]
        results = _shared_results(shared.kept, tasks, run)
    for (task, part), res in zip(reading.tasks, results):
        yield SegmentRead(task, part, res)
    if reading.closing:
        yield reading.closing


# --- one reading for several commands (report) ------------------------------------------------------------

#: A segment file as read: its task (without its fold) and the file's identity and state when it
#: was read.
_Key = tuple[SegmentTask, int, int, int, int]

#: Which fold a reading inside ``shared_reading`` feeds for a segment of a partition (None: none).
FoldMaker = Callable[[SegmentTask, Partition], SegmentFolder | None]


@dataclass
class _Shared:
    kept: dict[_Key, SegmentResult] = field(default_factory=dict)
    fold: FoldMaker | None = None


#: The segment readings kept inside ``shared_reading`` (None: outside, nothing is kept).
_SHARED: ContextVar[_Shared | None] = ContextVar("mqtool_legacy_shared_reading", default=None)


@contextmanager
def shared_reading(*, fold: FoldMaker | None = None) -> Iterator[None]:
    """Inside the block every segment reading (``read_store``'s, and a ``SegmentScan`` read to the
    end) is kept, and ``read_store`` hands it to the next reading of the same segment -- the same
    task, the file unchanged since (device, inode, size and modification time) -- instead of
    reading the file again: a command that runs several verbs over one store (``report``:
    validate, recover's plan, clean's plan, stats) reads each segment once.  ``fold``: the fold a
    segment ``read_store`` reads in the block feeds (``SegmentTask.fold``, in validate's worker
    processes too), whose answer a reader of the messages takes from the kept reading instead of
    walking them again (``read_folded``: stats' count of a segment).  The kept results are
    findings, positions and the folds' answers, a few per segment; each reader gets a copy of its
    own."""
    token = _SHARED.set(_Shared(fold=fold))
    try:
        yield
    finally:
        _SHARED.reset(token)


def _key(task: SegmentTask) -> _Key | None:
    try:
        st = os.stat(task.path, follow_symlinks=False)
    except OSError:
        return None
    return (replace(task, fold=None), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _share(task: SegmentTask, res: SegmentResult) -> None:
    """Keep a segment's complete reading for the next reader inside ``shared_reading``."""
    shared = _SHARED.get()
    if shared is not None and res.opened and (key := _key(task)) is not None:
        shared.kept[key] = copy.deepcopy(res)


def _judgement(res: SegmentResult) -> SegmentResult:
    """A copy of a kept reading for a reader of the judgement (the fold's answer left out)."""
    return copy.deepcopy(replace(res, folded=None, folded_by=None))


def read_folded(task: SegmentTask, folder: SegmentFolder) -> SegmentResult:
    """``read_segment`` of ``task`` with ``folder``'s fold of its messages (``SegmentResult.folded``).
    Inside ``shared_reading``, the reading kept there of the same segment, unchanged since and
    folded by an equal folder (validate's reading in ``report``), is handed over instead -- a copy
    -- and the segment is not read again."""
    task = replace(task, fold=folder)
    shared = _SHARED.get()
    if shared is not None and (key := _key(task)) is not None:
        kept = shared.kept.get(key)
        if kept is not None and kept.folded is not None and kept.folded_by == folder:
            return copy.deepcopy(kept)
    return read_segment(task)


def _shared_results(shared: dict[_Key, SegmentResult], tasks: list[SegmentTask], run: Runner) -> Iterator[SegmentResult]:
    """``run(read_segment, tasks)`` for the tasks not read before in the block, the kept readings
    for the others, in the order of ``tasks``."""
    keys = [_key(task) for task in tasks]
    fresh = iter(run(read_segment, [task for task, key in zip(tasks, keys) if key is None or key not in shared]))
    for key in keys:
        kept = shared.get(key) if key is not None else None
        if kept is not None:
            yield _judgement(kept)
            continue
        res = next(fresh)
        if key is not None and res.opened and key not in shared:  # (an in-process reading kept itself)
            shared[key] = copy.deepcopy(res)
        yield res


def findings(data: DataDir, layout: str) -> Iterator[Finding]:
    """Every finding of ``read_store``, in its order."""
    for item in read_store(data, layout):
        yield from item.result.findings if isinstance(item, SegmentRead) else item


# --- ranges of a segment (the Spark sources' splits) ------------------------------------------------------
# Both layouts frame a log as a chain of length-prefixed messages with a CRC (upstream Jafka's
# ``ByteBufferMessageSet`` and MetaQ's ``MessageUtils.decodeMessage``): a range is read by
# ``store.model.framed.read_range`` with the ``formats`` message walker over each piece, a sync
# point where a message decodes with a good checksum, the store's codes for a broken message
# (``store.jafka.error_code``, ``store.metaq.error_code``) and its rule for a frame that holds
# around a failed checksum (``store.legacy.framed_message``).


def _jafka_decodes(f: Readable, pos: int) -> int | None:
    head = f.pread(pos, 5)
    if len(head) < 5:
        return None
    length, magic = jf.peek_message(head)
    if magic not in jf.MAGICS:
        return None
    if length <= jf.HEADER_SIZES[magic] or 4 + length > min(f.size - pos, MAX_MESSAGE_SIZE):
        return None
    try:
        jf.decode_message(f.pread(pos, 4 + length), 0)
    except MqError:
        return None
    return 4 + length


def _jafka_candidates(chunk: bytes) -> Iterator[int]:
    for i in range(max(0, len(chunk) - 4)):
        if chunk[i + 4] <= 1 and chunk[i] == 0:
            yield i


def _range_framed(framing: Framing) -> Callable[[bytes, int, MqError], tuple[object, int] | None]:
    """The layout's rule for a message whose frame holds around a failed checksum."""

    def framed(data: bytes, rel: int, exc: MqError) -> tuple[object, int] | None:
        message = framed_message(framing, data, rel, exc)
        return (message, framing.overhead + framing.peek_length(data, rel)) if message is not None else None

    return framed


def _jafka_item(item: object) -> tuple[int, object, int]:
    position, message = cast("tuple[int, jf.Message]", item)
    return position, message, message.serialized_size


class MemoryFile:
    """An inflated ``.meta.zip`` segment with ``ReadOnlyFile``'s read interface."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        self.size = len(data)

    def pread(self, position: int, size: int) -> bytes:
        return self.data[position : position + max(0, size)]

    def close(self) -> None:
        self.data = b""

    def __enter__(self) -> MemoryFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_range_segment(path: str, open_file: Callable[[str], _File]) -> _File | MemoryFile:
    """A segment for a range reading: a MetaQ ``.meta.zip`` archive inflated in memory (its one
    entry, named as the archive less ``.zip``), else the file ``open_file`` opens."""
    if not path.endswith(".meta.zip"):
        return open_file(path)
    f = open_file(path)
    try:
        if f.size > mq.MAX_SEGMENT_SIZE:
            raise StoreLayoutError("file too large to read at once", path=path, expected=f"at most {mq.MAX_SEGMENT_SIZE} bytes", found=f"{f.size} bytes")
        raw = f.pread(0, f.size)
    finally:
        f.close()
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return MemoryFile(path, mq.decode_zip_archive(raw, expected_name=name[: -len(".zip")]))


#: Jafka's range framing (``store.model.framed.read_range``)
JAFKA_RANGE = RangeFraming(
    walker=lambda data: Adapt(jf.MessageWalker(data), _jafka_item),
    framed=_range_framed(sj.FRAMING),
    decodes=_jafka_decodes,
    candidates=_jafka_candidates,
    classify=sj.error_code,
    region_code=JAFKA_UNREADABLE_REGION,
    max_record=MAX_MESSAGE_SIZE,
    judged=jf.MIN_HEADER_SIZE,
)


def _metaq_decodes(f: Readable, pos: int) -> int | None:
    head = f.pread(pos, mq.HEADER_LEN)
    if len(head) < mq.HEADER_LEN:
        return None
    msg_len = mq.peek_length(head)
    if msg_len <= 0 or mq.HEADER_LEN + msg_len > min(f.size - pos, MAX_MESSAGE_SIZE):
        return None
    try:
        mq.decode_message(f.pread(pos, mq.HEADER_LEN + msg_len), 0)
    except MqError:
        return None
    return mq.HEADER_LEN + msg_len


def _metaq_candidates(chunk: bytes) -> Iterator[int]:
    for i in range(max(0, len(chunk) - mq.HEADER_LEN)):
        if chunk[i] == 0:  # msgLen < 16 MiB: its first byte is zero
            yield i


def _metaq_item(item: object) -> tuple[int, object, int]:
    position, message = cast("tuple[int, mq.Message]", item)
    return position, message, message.size


#: MetaQ's range framing (``store.model.framed.read_range``)
METAQ_RANGE = RangeFraming(
    walker=lambda data: Adapt(mq.MessageWalker(data), _metaq_item),
    framed=_range_framed(sm.FRAMING),
    decodes=_metaq_decodes,
    candidates=_metaq_candidates,
    classify=sm.error_code,
    region_code=METAQ_UNREADABLE_REGION,
    max_record=MAX_MESSAGE_SIZE,
    judged=mq.HEADER_LEN,
)


# --- the brokers' recovery loop over a last segment (recover's plan) ---------------------------------------


@dataclass
class RecoveryTail:
    """Where the valid data of a last segment ends, as the broker's recovery loop reads it.

    ``cut_from``: the cut point (after the last real message); ``broker_end``: where the
    broker's own recovery stops; ``kind``: why the data ends there (``eof``, ``zeros``,
    ``partial``, ``broken``, ``magic``); ``kept_gaps``: MetaQ zero runs before ``cut_from``
    (``(position, length)``) the loader reads as empty messages."""

    size: int
    cut_from: int
    broker_end: int
    kind: str
    detail: str = ""
    trailing_empties: int = 0  # MetaQ: empty messages the broker would keep after cut_from
    kept_gaps: list[tuple[int, int]] | None = None
    #: MetaQ: every zero run the loop read as empty messages, ``(position, whole 20-byte blocks)``
    gaps: list[tuple[int, int]] = field(default_factory=list)


def _segment_reader(layout: str, seg: Segment) -> SegmentReader:
    return sj.open_segment(seg) if layout == "jafka" else sm.open_segment(seg)


def recovery_tail(layout: str, seg: Segment, dialect: sj.Dialect = sj.JAFKA, *, piece: int | None = None) -> RecoveryTail:
    """Run the broker's recovery loop over a last segment (read-only); ``dialect``: Jafka's or
    Kafka 0.7's (magic 0 and 1).  Jafka (``FileMessageSet.recover``): messages are kept while the
    entry fits, its CRC matches and its magic is one the dialect reads; MetaQ
    (``MessageStore.recover``): the same loop, zero headers read as valid empty messages."""
    with _segment_reader(layout, seg) as reader:
        return _scan_jafka(reader, dialect, piece) if layout == "jafka" else _scan_metaq(reader, piece)


def _scan_jafka(reader: SegmentReader, dialect: sj.Dialect, piece: int | None) -> RecoveryTail:
    walk = SegmentWalk(reader, dialect.framing, 0, check_crc=True, chunk=piece)
    for pos, item in walk:
        message = cast(jf.Message, item)  # the dialect's framing walks Jafka messages (``Framing.walker`` is untyped)
        if not dialect.accepts_magic(message.magic):
            magics = " and ".join(str(m) for m in sorted(dialect.magics))
            return RecoveryTail(reader.size, pos, pos, "magic", f"magic byte {message.magic} ({dialect.broker} reads only magic {magics}; its recovery throws here)")
    if walk.error is not None:
        assert walk.failed_at is not None
        return RecoveryTail(reader.size, walk.failed_at, walk.failed_at, "broken", walk.error.reason)
    assert walk.end is not None
    return RecoveryTail(reader.size, walk.end.position, walk.end.position, walk.end.kind)


def tail_from_reading(layout: str, res: SegmentResult, seg: Segment, dialect: sj.Dialect = sj.JAFKA) -> RecoveryTail | None:
    """``recovery_tail``'s answer from the model's reading of the last segment (``res``), without
    walking it again: Jafka always (the reading stops the broker's recovery at the first message
    with a magic the dialect does not read, a broken message, or the end of the valid data);
    MetaQ when the valid data ends without zeros, or at zeros (the reading ran MetaQ's loop on
    through them: ``SegmentResult.metaq_tail``); None otherwise (a length field larger than mqtool
    reads: ``recovery_tail`` walks on)."""
    if layout != "jafka":
        return _metaq_tail_from(res)
    size = res.size
    cut = res.recovery_end if res.recovery_end is not None else size
    if cut >= size:
        return RecoveryTail(size, size, size, "eof")
    magic = next((f for f in res.findings if f.code == JAFKA_MAGIC and f.position == cut + jf.LOG_OVERHEAD), None)
    if magic is not None and res.valid_end > cut:  # an intact message the dialect cannot read (no break there)
        with _segment_reader("jafka", seg) as reader:
            value = reader.pread(cut + jf.LOG_OVERHEAD, 1)[0]
        magics = " and ".join(str(m) for m in sorted(dialect.magics))
        return RecoveryTail(size, cut, cut, "magic", f"magic byte {value} ({dialect.broker} reads only magic {magics}; its recovery throws here)")
    if res.end_kind == "corrupt":
        return RecoveryTail(size, cut, cut, "broken", res.break_reason or "")
    return RecoveryTail(size, cut, cut, res.end_kind or "eof")


def _metaq_tail_from(res: SegmentResult) -> RecoveryTail | None:
    if res.metaq_tail is not None:
        return res.metaq_tail
    size, b = res.size, res.valid_end
    if res.end_kind == "eof":
        return _metaq_tail(size, size, size, "eof", "", [])
    if res.end_kind == "corrupt":
        return _metaq_tail(size, b, b, "broken", res.break_reason or "", [])
    if res.end_kind == "partial" and res.end is not None and res.end.length - mq.HEADER_LEN <= MAX_MESSAGE_SIZE:
        return _metaq_tail(size, b, b, "partial", "", [])
    return None


def _scan_metaq(reader: SegmentReader, piece: int | None) -> RecoveryTail:
    return _metaq_recovery(reader, 0, piece)


def _metaq_recovery(reader: SegmentReader, start: int, piece: int | None) -> RecoveryTail:
    """MetaQ's loop from ``start`` (a message boundary), zero headers included: they are valid
    empty messages to the broker.

    The walk goes on after a zero run from its last whole 20-byte block, as the loader does.
    An empty message read right there (msgLen 0, checksum 0: the rest of the zeros and the start
    of the next bytes) is no message anybody wrote, so it does not move the valid end."""
    size = reader.size
    pos = start
    last_real = start  # end of the last message that is not an all-zero header
    gaps: list[tuple[int, int]] = []  # zero runs read as empty messages: (position, whole blocks)
    while True:
        walk = SegmentWalk(reader, sm.FRAMING, pos, check_crc=True, chunk=piece)
        for p, item in walk:
            message = cast(mq.Message, item)  # ``sm.FRAMING`` walks MetaQ messages (``Framing.walker`` is untyped)
            if not (gaps and p == pos and not message.data):
                last_real = p + message.size
        if walk.error is not None:
            assert walk.failed_at is not None
            return _metaq_tail(size, last_real, walk.failed_at, "broken", walk.error.reason, gaps)
        end = walk.end
        assert end is not None
        if end.kind == "zeros" and size - end.position >= mq.HEADER_LEN:
            blocks = zero_run(reader, end.position, piece=piece) // mq.HEADER_LEN
            gaps.append((end.position, blocks))
            pos = end.position + blocks * mq.HEADER_LEN
            if pos >= size:
                return _metaq_tail(size, last_real, pos, "zeros", "", gaps)
            continue
        return _metaq_tail(size, last_real, end.position, end.kind, "", gaps)


def _metaq_tail(size: int, last_real: int, broker_end: int, kind: str, detail: str, gaps: list[tuple[int, int]]) -> RecoveryTail:
    kept = [(p, n * mq.HEADER_LEN) for p, n in gaps if p < last_real]
    trailing = sum(n for p, n in gaps if p >= last_real)
    if last_real < broker_end and kind != "zeros":
        kind = "zeros"  # the data ends in zeros the loader reads up to a point, then fails
    return RecoveryTail(size, last_real, broker_end, kind, detail, trailing, kept, gaps)


def count_valid_from(layout: str, seg: Segment, start: int, dialect: sj.Dialect = sj.JAFKA, *, piece: int | None = None) -> int:
    """Valid messages at or after ``start`` (what cutting there drops), resynchronising after
    every break (``store.legacy.next_message``, the family's one scan, to the end of the file)."""
    framing = dialect.framing if layout == "jafka" else sm.FRAMING
    count = 0
    with _segment_reader(layout, seg) as reader:
        pos = start
        while pos < reader.size:
            found, _ = next_message(reader, framing, pos, reader.size, piece=piece)
            if found is None:
                break
            walk = SegmentWalk(reader, framing, found, check_crc=True, chunk=piece)
            for _p, message in walk:
                # a Jafka framing walks Jafka messages (``Framing.walker`` is untyped)
                if layout == "metaq" or dialect.accepts_magic(cast(jf.Message, message).magic):
                    count += 1
            if walk.error is not None:
                assert walk.failed_at is not None  # set with ``error``
                stop = walk.failed_at
            else:
                stop = walk.end.position if walk.end is not None else reader.size
            pos = max(stop, found + 1)
    return count


# --- the messages from a position (diff's closer look) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessageRead:
    """A message read at file ``position``: the ``message`` and its ``size`` on disk."""

    position: int
    message: object
    size: int


def message_size(message: object) -> int:
    """Bytes a message takes on disk (Jafka: LENGTH included; MetaQ: its 20-byte header included)."""
    if isinstance(message, jf.Message):
        return message.serialized_size
    assert isinstance(message, mq.Message)
    return message.size


def read_messages(reader: SegmentReader, framing: Framing, start: int = 0, *, piece: int | None = None) -> Iterator[MessageRead | DataEnd[str]]:
    """The messages from ``start`` (CRC checked) as ``MessageRead``, then one ``DataEnd`` where
    they stop (a file position): ``broken`` with the located ``MqError`` of the broken message
    there, else the clean end (``zeros``, ``partial``, ``eof``).  No resynchronisation: the caller
    learns where the chain breaks."""
    walk = SegmentWalk(reader, framing, start, chunk=piece)
    for pos, message in walk:
        yield MessageRead(pos, message, message_size(message))
    if walk.error is not None or walk.end is None:
        yield DataEnd("broken", walk.valid_end, error=walk.error)
    else:
        yield walk.end
