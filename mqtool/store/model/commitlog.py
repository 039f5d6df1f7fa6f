"""The record readers of RocketMQ CommitLog files: healthy files as columns, cross-checked in bulk.

Every reader here takes a file's records from its one reading (``store.model.commitlog_walk``:
a walk a piece at a time, the column walk over healthy records and the precise decoder at the
record it declines) in its ``handover`` mode: the walk stops where the broker's normal recovery
(``CommitLog.recoverNormally``) stops taking the file's records as they are -- its first broken
record, a torn tail or stale data in the newest file, or the end of its records -- and the reader
reads on from there as that recovery does (the same walk's recovery reading,
``commitlog_walk.FileRecords``), so no byte
before the handover is read again.

* :func:`read_file_columns`: the file's records as columns when every record is healthy and the
  file ends the way the broker ends it (an END_OF_FILE record in a file before the last; zeros,
  END_OF_FILE or the end of the file in the last one, with nothing but zeros after the valid
  data); None otherwise, and the caller reads the file precisely.
* :func:`read_file_rows`: what stats and diff count and compare -- :class:`RecordRows` (records
  as columns) and one :class:`FileRead` (where and how the data ends, the findings validate
  states about the file, the file's queue offsets).
* :func:`read_file_pieces`: what dump lists -- the column pieces themselves, each other record
  decoded, then the :class:`FileRead`.
* :func:`read_file_records`: the precise walk alone, for a reader that wants the decoded records
  of a range (diff's description of the record holding a commitlog offset).

The columns answer the cross-file checks without decoding a record again:

* :func:`verify_queue_units` reads, for every topic/queue of the file, exactly the ConsumeQueue
  units of the file's QUEUEOFFSETs (a unit sits at ``queue offset * 20``) and compares them with
  the records in one vectorised step (commitlog offset, size, tagsCode).  The units that agree
  need no other check; the others go to the precise per-unit check.
* :func:`save_key_table` / :class:`KeyTables` keep, per file, the sorted
  ``position << 32 | key hash`` pairs of the records' ``IndexFile`` keys; an index entry whose
  pair is there is right (its record exists and has a key of that hash), every other entry goes
  to the precise per-entry check.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from mqtool.errors import MqError
from mqtool.findings import Finding
from mqtool.formats import data_end as de
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq.columns import (
    ColumnDataEnd,
    ColumnWalk,
    CommitLogColumns,
    QueueRun,
    concat_columns,
)
from mqtool.formats.rocketmq.commitlog import DataEnd, MessageRecord, decode_message
from mqtool.formats.rocketmq.record_fields import record_fields, repeated_property_names
from mqtool.formats.rocketmq.unit_columns import cq_units, record_key_table
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, nonzero_extent
from mqtool.store.model import commitlog_walk as cl_walk
from mqtool.store.model import rocketmq as model

if TYPE_CHECKING:
    from mqtool.store.model.queue_offsets import FileQueueOffsets, RecordsRead


@dataclass
class FileColumns:
    """A healthy CommitLog file: its records, their queue runs, and where and how data ends."""

    columns: CommitLogColumns
    queues: dict[tuple[str, int], QueueRun]
    end: ColumnDataEnd  # position is a file position
    bytes_read: int


def _healthy_end(f: ReadOnlyFile, end: ColumnDataEnd, is_last: bool) -> DataEnd | None:
    """The column walk's ``end`` when it is how the broker ends a file: END_OF_FILE in a file
    before the last; zeros (nothing but zeros after), END_OF_FILE or the end of the file in the
    last one.  None otherwise."""
    kind = end.kind
    if kind not in ("blank", "zeros", "eof"):  # a record the walk declined or cut, a broken record, a torn tail
        return None
    if not is_last and kind != "blank":
        return None
    if kind == "zeros" and nonzero_extent(f, end.position) is not None:
        return None
    return DataEnd(kind, end.position, end.length)


def _handover_events(f: ReadOnlyFile, base: int, file_size: int, is_last: bool, *, key_hashes: bool, check_crc: bool = True) -> Iterator[cl_walk.Event]:
    """The file's one reading (``store.model.commitlog_walk``) up to where the broker's normal
    recovery stops taking its records as they are (:class:`cl_walk.Handover`)."""
    task = cl_walk.CommitLogTask(str(f.path), base, file_size, is_last, handover=True, key_hashes=key_hashes, check_crc=check_crc)
    return cl_walk.read_events(f, task)


def read_file_columns(f: ReadOnlyFile, base: int, *, file_size: int, is_last: bool) -> FileColumns | None:
    """The records of the CommitLog file ``f`` (named ``base``) as columns, or None when anything
    about the file needs the precise reading: a record that is not healthy, a file of another
    size than ``file_size``, a file before the last that does not end in END_OF_FILE, non-zero
    bytes after the valid data of the last file."""
    if f.size != file_size:
        return None
    parts: list[tuple[int, CommitLogColumns]] = []
    for ev in _handover_events(f, base, file_size, is_last, key_hashes=True):
        if isinstance(ev, cl_walk.Stretch):
            parts.append((ev.position, ev.columns))
        elif isinstance(ev, cl_walk.Handover):
            end = ColumnDataEnd(ev.kind, ev.position, ev.length)  # type: ignore[arg-type]  # a kind of the column walk's stops
            if _healthy_end(f, end, is_last) is None:
                return None
            columns = concat_columns(parts)
            queues = columns.queue_runs()
            if queues is None:
                return None
            return FileColumns(columns, queues, end, ev.bytes_read)
        else:  # a record the column walk declined
            return None
    raise AssertionError("the walk ends with its handover")


@dataclass
class HandoverReading:
    """A CommitLog file read up to its handover (:func:`read_to_handover`): ``columns`` when every
    record is healthy and the file ends the way the broker ends it (as :func:`read_file_columns`),
    else ``position``, where a reader reads on as the broker's normal recovery does, with what
    validate states about the records decoded before it (``record_findings``, in file order);
    ``records`` read, the STORETIMESTAMP of the last one, ``bytes_read``."""

    columns: FileColumns | None
    position: int
    record_findings: list[Finding]
    records: int
    last_store_timestamp: int
    bytes_read: int


def read_to_handover(f: ReadOnlyFile, base: int, *, file_size: int, is_last: bool, offsets: FileQueueOffsets, kept: RecordsRead | None = None) -> HandoverReading:
    """The CommitLog file ``f`` (named ``base``) read once up to its handover, every record's
    QUEUEOFFSET given to ``offsets`` (and every record to ``kept``: what a reader keeps of a file
    that turns out not to be healthy): a reader that needs the whole file (its queue offsets, where
    its data ends) walks on from ``position`` and reads nothing before it again."""
    parts: list[tuple[int, CommitLogColumns]] = []
    said: list[Finding] = []
    own: list[Finding] = []
    records = last_ts = 0
    precise = False
    for ev in _handover_events(f, base, file_size, is_last, key_hashes=True):
        if isinstance(ev, cl_walk.Stretch):
            cols = ev.columns
            parts.append((ev.position, cols))
            offsets.add_columns(cols, ev.position)
            if kept is not None:
                kept.add_columns(ev.position, cols)
            records += len(cols)
            last_ts = int(cols.store_timestamp[-1])
        elif isinstance(ev, cl_walk.Damage):
            if ev.finding is not None:
                own.append(ev.finding)
        elif isinstance(ev, cl_walk.Record):
            precise = True
            said.extend(own)
            own = []
            offsets.record(ev.position, ev.record)
            if kept is not None:
                kept.add_record(ev.position, ev.record)
            records += 1
            last_ts = ev.record.store_timestamp
        elif isinstance(ev, cl_walk.Handover):
            end = ColumnDataEnd(ev.kind, ev.position, ev.length)  # type: ignore[arg-type]  # a kind of the column walk's stops
            columns = None
            if not precise and f.size == file_size and _healthy_end(f, end, is_last) is not None:
                joined = concat_columns(parts)
                queues = joined.queue_runs()
                if queues is not None:
                    columns = FileColumns(joined, queues, end, ev.bytes_read)
            return HandoverReading(columns, ev.position, said, records, last_ts, ev.bytes_read)
    raise AssertionError("the walk ends with its handover")


# --- the one reading of a CommitLog file's records (stats, diff) ----------------------------------

#: A TAGS value or KEYS token: text (the precise decoders') or its UTF-8 bytes (the column walk's,
#: which checked they are UTF-8), hashed alike by a consumer that encodes text as UTF-8.
TextValue = str | bytes

#: Records the precise walk hands over in one :class:`RecordRows`.
ROWS_BATCH = 4096


@dataclass(frozen=True)
class RecordRows:
    """Records of one CommitLog file, in file order, as columns (one element per record): file
    ``position``, TOTALSIZE ``size``, TOPIC, QUEUEID, QUEUEOFFSET, STORETIMESTAMP; with ``texts``
    (:func:`read_file_rows`) the TAGS value (None: none) and the non-empty KEYS tokens split on a
    space (``MessageRecord.tags``, ``MessageRecord.keys``), else None and no tokens; ``code``:
    the code of the first finding validate states about the record's own bytes
    (``commitlog_walk.FileRecords.finding_code``: a body CRC mismatch its frame survives, a PHYSICALOFFSET
    that is not its address, properties the broker drops), None for a healthy record."""

    position: list[int]
    size: list[int]
    topic: list[str]
    queue_id: list[int]
    queue_offset: list[int]
    store_timestamp: list[int]
    tags: list[TextValue | None]
    keys: list[tuple[TextValue, ...]]
    code: list[str | None]

    def __len__(self) -> int:
        return len(self.position)


@dataclass(frozen=True)
class DecodedRecord:
    """One record the precise walk decoded at file ``position``, with what validate states about
    its own bytes (``findings``, in position order; ``code``: the first one's code as
    ``commitlog_walk.FileRecords.finding_code`` names it); ``damaged``: a record whose frame holds but
    whose bytes do not decode (a body CRC mismatch), kept by a walk with ``keep_damaged``."""

    position: int
    record: MessageRecord
    findings: list[Finding]
    code: str | None
    damaged: bool = False


@dataclass(frozen=True)
class FileRead:
    """How the reading of one CommitLog file ended: ``data_end``, where its valid records stop
    (``position``, a file position: ``valid_end``) and why -- the clean ends of
    ``commitlog_walk.FileRecords.end`` (``blank``, ``zeros``, ``eof``, ``partial``, ``torn``,
    ``stale``: ``end``) or the first broken record (``broken``, its located ``error``, at
    ``failed_at``); None for a file after the last data file (no record read) -- the torn tail when
    the data ends in one; ``findings``: what validate states about the file (its records' findings
    in position order, then how the file ends: ``model.commitlog_file_findings``);
    ``queue_offsets``: the QUEUEOFFSETs of its records and the bytes the reading skipped
    (``store.model.queue_offsets``)."""

    data_end: de.DataEnd[str] | None
    torn: rmq.TornTail | None
    findings: list[Finding]
    queue_offsets: FileQueueOffsets | None

    @property
    def valid_end(self) -> int:
        return self.data_end.position if self.data_end is not None else 0

    @property
    def end(self) -> DataEnd | None:
        """The clean end (None at a broken record)."""
        return cast("DataEnd", self.data_end) if self.data_end is not None and self.data_end.kind != "broken" else None

    @property
    def error(self) -> MqError | None:
        return self.data_end.error if self.data_end is not None else None

    @property
    def failed_at(self) -> int | None:
        return self.data_end.position if self.data_end is not None and self.data_end.kind == "broken" else None


def read_file_rows(
    f: ReadOnlyFile,
    base: int,
    *,
    file_size: int | None,
    last: bool,
    after_last: bool = False,
    check_crc: bool = True,
    keep_damaged: bool = False,
    texts: bool = False,
    records: bool = True,
    judge: bool = True,
) -> Iterator[RecordRows | FileRead]:
    """The records of the CommitLog file ``f`` (named ``base``) as :class:`RecordRows`, then one
    :class:`FileRead`: the one reading of a file for the consumers that count or compare records,
    a fold of :func:`read_file_pieces` (its column pieces and decoded records as rows).

    The healthy records are read by the column walk a piece at a time (a file of the configured
    ``file_size``, at least ``queue_offsets.COLUMN_WALK_MIN_SIZE`` bytes); where it stops at a
    record it declines, or the file does not end the way the broker ends it, the precise walk
    (``commitlog_walk.FileRecords``) reads on from that record, so the records before it
    are not read again and the precise decoders name the damage.  ``last``: the last data file
    (``model.last_data_file``: a torn tail or stale data ends its data); ``after_last``: a
    pre-allocated file after it (no record is read: only its non-zero bytes are a finding).
    ``keep_damaged``: a record whose frame holds but whose body CRC fails is a record too (the
    broker serves it), its ``code`` says so; without it the file's data ends there, as upstream
    ``CommitLog.recoverNormally`` ends it.  ``check_crc=False``: no body CRC is judged.
    ``records=False``: only the :class:`FileRead` (a reader that wants where the data ends);
    ``judge=False``: a damaged file's ``FileRead.findings`` are not stated (that may read its tail)."""
    from mqtool.store.model.queue_offsets import COLUMN_WALK_MIN_SIZE, FileQueueOffsets

    size = file_size or f.size
    path = str(f.path)
    if after_last:
        yield FileRead(None, None, model.commitlog_file_findings(f, None, size, last=False, after_last=True), None)
        return
    batch: list[DecodedRecord] = []
    pieces = read_file_pieces(
        f,
        base,
        file_size=file_size,
        last=last,
        check_crc=check_crc,
        columns=f.size == size and f.size >= COLUMN_WALK_MIN_SIZE,
        offsets=FileQueueOffsets(path),
        keep_damaged=keep_damaged,
        judge=judge,
        healthy_end=True,
    )
    for item in pieces:
        if isinstance(item, FileRead):
            if batch:
                yield decoded_rows(batch, texts)
            yield item
            return
        if not records:
            continue
        if isinstance(item, ColumnPiece):
            if batch:
                yield decoded_rows(batch, texts)
                batch = []
            yield column_rows(item.data, item.position, item.walk, texts)
            continue
        batch.append(item)
        if len(batch) >= ROWS_BATCH:
            yield decoded_rows(batch, texts)
            batch = []


def read_file_records(
    f: ReadOnlyFile,
    base: int,
    start: int = 0,
    *,
    file_size: int | None = None,
    last: bool = False,
    judge: bool = True,
    keep_damaged: bool = False,
) -> Iterator[DecodedRecord | FileRead]:
    """The records of the CommitLog file ``f`` (named ``base``) from file position ``start`` on,
    decoded by the precise walk (``commitlog_walk.FileRecords``), then one :class:`FileRead`
    (its ``findings`` only with ``judge``: stating how the file ends may read its tail).  For a
    reader that wants a few decoded records (the record holding an offset), not the columns.
    ``keep_damaged``: a record whose frame holds but whose body CRC fails is yielded too, its
    ``findings`` saying so (as :func:`read_file_rows`); the walk is lazy, so a reader that takes
    one record reads no further than that record."""
    yield from _precise(f, base, start, file_size=file_size, last=last, check_crc=True, keep_damaged=keep_damaged, offsets=None, judge=judge)


def file_end(events: Iterable[RecordRows | DecodedRecord | FileRead]) -> FileRead:
    """The :class:`FileRead` of a file's reading, its records passed over."""
    for item in events:
        if isinstance(item, FileRead):
            return item
    raise AssertionError("a CommitLog file's reading ends with its FileRead")


@dataclass(frozen=True)
class ColumnPiece:
    """A run of healthy records the column walk framed in one piece of a file (``data``, read at
    file position ``position``): ``walk.columns`` from ``start`` (a position in ``data``) to
    ``walk.stop``; a record's position in ``data`` is its column ``position``."""

    position: int
    start: int
    data: bytes
    walk: ColumnWalk

    def record(self, row: int) -> MessageRecord:
        """Record ``row`` of the columns read by the precise decoder (a record whose properties
        repeat a name: its map is not its list of pairs)."""
        return decode_message(self.data, int(self.walk.columns.position[row]))


def read_file_pieces(
    f: ReadOnlyFile,
    base: int,
    *,
    file_size: int | None,
    last: bool,
    after_last: bool = False,
    check_crc: bool = True,
    columns: bool = True,
    key_hashes: bool = False,
    offsets: FileQueueOffsets | None = None,
    keep_damaged: bool = True,
    judge: bool = True,
    healthy_end: bool = False,
) -> Iterator[ColumnPiece | DecodedRecord | FileRead]:
    """Every record of the CommitLog file ``f`` (named ``base``), in file order, for a reader that
    lists them (dump): runs of healthy records as :class:`ColumnPiece` (the piece's bytes and its
    column walk, ``key_hashes``: with the key-hash and tagsCode columns), each other record as a
    :class:`DecodedRecord`, then one :class:`FileRead`.

    The column walk reads the file a piece at a time (a record a piece boundary cuts is read again
    from its start with the next piece, ``rmq.piece_goes_on``); a record it declines is decoded by
    the precise decoder and, when it reads and is not where the newest file's data ends
    (``rmq.data_ends_at``: a torn tail, a stale copy), comes with what validate states about its
    own bytes (``model.record_findings``) and the column walk reads on after it.  Where the precise
    decoder refuses a record, or the data ends, the precise walk (``commitlog_walk.FileRecords``
    with ``keep_damaged``: a record whose frame holds but whose body CRC fails is listed with its
    finding) reads the rest of the file and names how it ends.  ``columns=False``: the precise walk
    reads the whole file.  The reading is lazy: a reader that stops early reads nothing after the
    piece in hand.  ``FileRead.findings``: what validate states about the records read, in position
    order, then how the file ends (``after_last``: a pre-allocated file after the last data file,
    ``model.commitlog_file_findings``); ``offsets`` (``store.model.queue_offsets``) is given every
    record read.  ``keep_damaged=False``: the file's data ends at such a record, as upstream
    ``CommitLog.recoverNormally`` ends it; ``judge=False``: a damaged file's findings are not
    stated (that may read its tail); ``healthy_end``: a file of the configured size whose every
    record the column walk read, ending the way the broker ends a file (``_healthy_end``), ends
    there -- no precise walk reads its end again (:func:`read_file_rows`, a fold of this reading)."""
    size = file_size or f.size
    said: list[Finding] = []  # what validate states about the records the column stretch decoded
    handover = 0
    if columns:
        decoded = False
        for got in _stretch_items(f, base, size, last, check_crc, key_hashes, offsets, said):
            if isinstance(got, cl_walk.Handover):
                handover = got.position
                if healthy_end and not decoded and f.size == size:
                    healthy = _healthy_end(f, ColumnDataEnd(got.kind, got.position, got.length), last)  # type: ignore[arg-type]  # a kind of the column walk's stops
                    if healthy is not None:
                        blank = model.blank_size_finding(str(f.path), healthy.position, healthy.length, size) if healthy.kind == "blank" else None
                        yield FileRead(cast("de.DataEnd[str]", healthy), None, [blank] if blank is not None else [], offsets)
                        return
            else:
                decoded = decoded or isinstance(got, DecodedRecord)
                yield got
    for item in _precise(
        f, base, handover, file_size=file_size, last=last, check_crc=check_crc, keep_damaged=keep_damaged, offsets=offsets, judge=judge, after_last=after_last
    ):
        if isinstance(item, FileRead):
            item = replace(item, findings=said + item.findings)
        yield item


def _stretch_items(
    f: ReadOnlyFile,
    base: int,
    size: int,
    last: bool,
    check_crc: bool,
    key_hashes: bool,
    offsets: FileQueueOffsets | None,
    said: list[Finding],
) -> Iterator[ColumnPiece | DecodedRecord | cl_walk.Handover]:
    """The file's one reading (``store.model.commitlog_walk``) up to its handover, as a lister
    takes it: runs of healthy records as :class:`ColumnPiece`, each record the column walk
    declined as a :class:`DecodedRecord` with what validate states about its own bytes (also
    appended to ``said``), then the :class:`cl_walk.Handover`; ``offsets`` is given every record."""
    own: list[Finding] = []
    for ev in _handover_events(f, base, size, last, key_hashes=key_hashes, check_crc=check_crc):
        if isinstance(ev, cl_walk.Stretch):
            if offsets is not None:
                offsets.add_columns(ev.columns, ev.position)
            yield ColumnPiece(ev.position, ev.start, ev.data, ev.walk)
        elif isinstance(ev, cl_walk.Damage):
            if ev.finding is not None:
                own.append(ev.finding)
        elif isinstance(ev, cl_walk.Record):
            said.extend(own)
            if offsets is not None:
                offsets.record(ev.position, ev.record)
            yield DecodedRecord(ev.position, ev.record, own, own[0].code if own else None)
            own = []
        elif isinstance(ev, cl_walk.Handover):
            yield ev
            return


def _precise(
    f: ReadOnlyFile,
    base: int,
    start: int,
    *,
    file_size: int | None,
    last: bool,
    check_crc: bool,
    keep_damaged: bool,
    offsets: FileQueueOffsets | None,
    judge: bool = True,
    after_last: bool = False,
) -> Iterator[DecodedRecord | FileRead]:
    """The precise walk from ``start``: each record with what validate says of it, then the end
    (``after_last``: stated as for a pre-allocated file after the last data file)."""
    size = file_size or f.size
    path = str(f.path)
    walk = cl_walk.FileRecords(f, start, check_crc=check_crc, last=last, file_size=file_size, base=base, keep_damaged=keep_damaged)
    found: list[Finding] = []
    for pos, record in walk:
        if offsets is not None:
            offsets.record(pos, record)
        own: list[Finding] = []
        exc = walk.damaged.get(pos)
        if exc is not None:
            own.append(model.broken_record_finding(f, path, pos, exc, size, last))
        if walk.own:
            own.extend(walk.own)
            if exc is not None:  # a kept record's findings in position order, as the file's are
                own.sort(key=lambda x: x.position or 0)
        found.extend(own)
        yield DecodedRecord(pos, record, own, walk.code if own else None, exc is not None)
    if offsets is not None:
        offsets.walk_end(walk, file_size)
    findings: list[Finding] = []
    if judge:
        whole = model.commitlog_file_findings(f, walk, file_size, last=last, after_last=after_last)
        if walk.damaged:  # the kept records' findings among the others, in position order
            found.sort(key=lambda x: x.position or 0)
        findings = found + whole[len(walk.record_findings) :]
    yield FileRead(walk.data_end, walk.torn, findings, offsets)


def column_rows(data: bytes, pos: int, walk: ColumnWalk, texts: bool) -> RecordRows:
    """The healthy records of one piece (at file position ``pos``) as rows."""
    cols = walk.columns
    count = len(cols)
    topics = cols.topics
    tags: list[TextValue | None]
    keys: list[tuple[TextValue, ...]]
    if texts:
        tags, keys = _column_texts(data, walk)
    else:
        tags, keys = [None] * count, [()] * count
    return RecordRows(
        position=(cols.position + pos).tolist(),
        size=cols.size.tolist(),
        topic=[topics[i] for i in cols.topic.tolist()],
        queue_id=cols.queue_id.tolist(),
        queue_offset=cols.queue_offset.tolist(),
        store_timestamp=cols.store_timestamp.tolist(),
        tags=tags,
        keys=keys,
        code=[None] * count,
    )


def _column_texts(data: bytes, walk: ColumnWalk) -> tuple[list[TextValue | None], list[tuple[TextValue, ...]]]:
    """TAGS and KEYS tokens of a piece's healthy records, from their property pairs in bulk
    (``record_fields``); a record whose properties repeat a name is decoded (its map keeps the
    last value: ``repeated_property_names``)."""
    cols = walk.columns
    fields = record_fields(data, cols, np.arange(len(cols)), with_body=False, properties=walk.properties)
    raw, at = fields.values.values.tobytes(), fields.values.offsets.tolist()
    tags: list[TextValue | None] = [raw[at[p] : at[p + 1]] if p >= 0 else None for p in fields.tags_pair.tolist()]
    tokens, token_at, per = fields.key_tokens.values.tobytes(), fields.key_tokens.offsets.tolist(), fields.token_offsets.tolist()
    keys: list[tuple[TextValue, ...]] = [tuple(tokens[token_at[t] : token_at[t + 1]] for t in range(a, b)) for a, b in zip(per, per[1:])]
    for r in repeated_property_names(fields.names, fields.pair_offsets).tolist():
        record = decode_message(data, int(cols.position[r]))
        tags[r], keys[r] = record.tags, tuple(record.keys)
    return tags, keys


def decoded_rows(batch: list[DecodedRecord], texts: bool) -> RecordRows:
    records = [item.record for item in batch]
    return RecordRows(
        position=[item.position for item in batch],
        size=[r.total_size for r in records],
        topic=[r.topic for r in records],
        queue_id=[r.queue_id for r in records],
        queue_offset=[r.queue_offset for r in records],
        store_timestamp=[r.store_timestamp for r in records],
        tags=[r.tags for r in records] if texts else [None] * len(records),
        keys=[tuple(r.keys) for r in records] if texts else [()] * len(records),
        code=[item.code for item in batch],
    )


def verify_queue_units(store: rmq.RocketMQStore, base: int, cols: FileColumns, cq_file_size: int) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """For every topic/queue of a healthy CommitLog file: the runs ``[first, stop)`` of queue
    offsets whose ConsumeQueue unit points at exactly its record (commitlog offset, size and
    tagsCode agree).  Units that are missing, differ, or hold a ConsumeQueueExt address are left
    out: the precise per-unit check names what is wrong with them."""
    columns = cols.columns
    dispatched = columns.dispatched()
    verified: dict[tuple[str, int], list[tuple[int, int]]] = {}
    if not cols.queues:
        return verified
    topic_number = {name: i for i, name in enumerate(columns.topics)}
    for (topic, queue_id), run in cols.queues.items():
        if not rmq.is_topic_dir_name(topic):
            continue
        rows = np.flatnonzero(dispatched & (columns.topic == topic_number[topic]) & (columns.queue_id == queue_id))
        units = _read_units(store, topic, queue_id, run.first, run.count, cq_file_size)
        if units is None or len(units) != len(rows):
            continue
        ok = (
            (units["offset"] == columns.position[rows] + base)
            & (units["size"] == columns.size[rows])
            & (units["tags_code"] == columns.tags_code[rows])
            & ~_ext_address(units["tags_code"])
        )
        verified[(topic, queue_id)] = _runs(run.first, ok)
    return verified


def _ext_address(tags_code: np.ndarray) -> np.ndarray:
    return np.asarray(tags_code <= cqf.EXT_MAX_ADDRESS)


def _runs(first: int, ok: np.ndarray) -> list[tuple[int, int]]:
    """``[start, stop)`` queue-offset runs where ``ok`` holds (``ok[i]`` is offset ``first + i``)."""
    if ok.all():
        return [(first, first + len(ok))]
    edges = np.flatnonzero(np.diff(np.concatenate(([0], ok.astype(np.int8), [0]))))
    return [(first + int(a), first + int(b)) for a, b in zip(edges[0::2], edges[1::2])]


def _read_units(store: rmq.RocketMQStore, topic: str, queue_id: int, first: int, count: int, cq_file_size: int) -> np.ndarray | None:
    """Units ``first .. first + count - 1`` of a queue (None when a file holding them is missing,
    unreadable or of another size: the precise check reports it)."""
    try:
        segments = store.cq_segments(topic, queue_id)
    except MqError:
        return None
    by_base = {seg.base: seg for seg in segments}
    unit = cqf.CQ_UNIT_SIZE
    start, stop = first * unit, (first + count) * unit
    chunks: list[bytes] = []
    at = start
    while at < stop:
        file_base = at - at % cq_file_size
        seg = by_base.get(file_base)
        if seg is None or seg.size != cq_file_size:
            return None
        take = min(stop, file_base + cq_file_size) - at
        try:
            with ReadOnlyFile(seg.path) as f:
                data = f.pread(at - file_base, take)
        except MqError:
            return None
        if len(data) != take:
            return None
        chunks.append(data)
        at += take
    return cq_units(b"".join(chunks))


def save_key_table(directory: str, base: int, cols: FileColumns) -> None:
    """Write the file's sorted key pairs (see :func:`record_key_table`) for the index checks."""
    table = record_key_table(cols.columns)
    path = os.path.join(directory, segnames.rocketmq_file_name(base) + ".npy")
    np.save(path + ".tmp.npy", table)
    os.replace(path + ".tmp.npy", path)


class KeyTables:
    """The key tables :func:`save_key_table` wrote, loaded one file at a time."""

    def __init__(self, directory: str | None) -> None:
        self.bases: list[int] = []
        self.directory = directory
        if directory is not None:
            self.bases = sorted(int(p.name[:20]) for p in Path(directory).glob("*.npy") if not p.name.endswith(".tmp.npy"))
        self._loaded: tuple[int, np.ndarray] | None = None

    def verified(self, phy_offset: np.ndarray, key_hash: np.ndarray, file_size: int) -> np.ndarray:
        """Which ``(phy_offset, key_hash)`` entries name a record of a healthy file and one of
        its keys (bool array)."""
        ok = np.zeros(len(phy_offset), dtype=bool)
        if not self.bases or not len(phy_offset):
            return ok
        bases = np.array(self.bases, dtype=np.int64)
        slot = np.searchsorted(bases, phy_offset, side="right") - 1
        inside = (slot >= 0) & (phy_offset - bases[np.maximum(slot, 0)] < file_size) & (key_hash >= 0)
        for s in np.unique(slot[inside]):
            rows = np.flatnonzero(inside & (slot == s))
            file_base = int(bases[s])
            table = self._table(file_base)
            pairs = ((phy_offset[rows] - file_base).astype(np.uint64) << np.uint64(32)) | key_hash[rows].astype(np.uint64)
            at = np.searchsorted(table, pairs)
            found = at < len(table)
            found[found] = table[at[found]] == pairs[found]
            ok[rows] = found
        return ok

    def _table(self, base: int) -> np.ndarray:
        if self._loaded is None or self._loaded[0] != base:
            assert self.directory is not None
            self._loaded = (base, np.load(os.path.join(self.directory, segnames.rocketmq_file_name(base) + ".npy")))
        return self._loaded[1]


@contextlib.contextmanager
def key_table_directory() -> Iterator[str]:
    """A private temporary directory for the key tables of one validation (removed after)."""
    with tempfile.TemporaryDirectory(prefix="mqtool-keys-") as directory:
        yield directory


@dataclass(frozen=True)
class DataExtent:
    """The commitlog offsets a store's records occupy: ``first`` (the first byte it still
    holds), ``end`` (where its valid data ends) and ``damaged`` (the bytes a torn tail at the
    end would have covered: what points there is the torn tail's finding, not its own)."""

    first: int
    end: int
    damaged: tuple[tuple[int, int], ...] = ()
    #: The last data file (its path, base and configured size): where the damage that ends the
    #: valid data is, read only when an entry points past the end (``end_cause``).
    last: tuple[str, int, int] | None = None
    _cause: dict[str, Finding | None] = field(default_factory=dict, compare=False, repr=False)

    def end_cause(self) -> Finding | None:
        """The CommitLog finding that ends the valid data (``model.valid_end_cause`` over how the
        last data file ends, as validate states it: a torn tail, a broken record, garbage after
        the valid end); None when the data ends cleanly.  Reads the last file once, on demand."""
        if self.last is None:
            return None
        if "end" not in self._cause:
            path, base, size = self.last
            with ReadOnlyFile(Path(path)) as f:
                found = file_end(read_file_rows(f, base, file_size=size, last=True, records=False)).findings
            self._cause["end"] = model.valid_end_cause(found, {path: base}, self.end)
        return self._cause["end"]

    def past_end(self, offset: int) -> bool:
        """``offset`` lies past the valid data, outside the damaged bytes: validate's
        RMQ-IDX-PAST-END / RMQ-CQ-PAST-END."""
        return offset >= self.end and not any(a <= offset < b for a, b in self.damaged)

    def index_entry_finding(self, path: str, position: int, number: int, offset: int) -> Finding | None:
        """RMQ-IDX-PAST-END for IndexFile entry ``number`` (at ``position`` of ``path``) pointing
        at commitlog ``offset`` past the valid data (``past_end``), as validate names it; None
        when it does not.  Every reader of IndexFile entries (dump index, query by key) asks this."""
        if not self.past_end(offset):
            return None
        return model.link_knock_on(model.index_past_end_finding(path, position, number, self.end, offset), self.end_cause())


def data_extent(store: rmq.RocketMQStore) -> DataExtent:
    """Where a store's CommitLog data lies, as validate finds it: the last data file is read
    once (``read_file_rows``: the fast walk, the precise walk from where it declines)."""
    held = [seg for seg in store.commitlog if seg.size > 0]
    if not held:
        return DataExtent(0, 0)
    seg = store.commitlog[model.last_data_file(store.commitlog)]
    size = store.commitlog_file_size or seg.size
    with ReadOnlyFile(seg.path) as f:
        end = file_end(read_file_rows(f, seg.base, file_size=size, last=True, records=False, judge=False))
        damaged: tuple[tuple[int, int], ...] = (end.torn.damaged(seg.base),) if end.torn is not None else ()
        if end.error is not None and end.failed_at is not None:
            # a broken record: validate names it and reads on past it (its valid end lies further,
            # where it finds it), so no offset from it on is called past the end here
            damaged += ((seg.base + end.failed_at, seg.base + max(size, f.size)),)
        return DataExtent(held[0].base, seg.base + end.valid_end, damaged, last=(str(seg.path), seg.base, size))
