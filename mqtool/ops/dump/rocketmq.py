"""dump: stream every record of a file family, with filters.

Each ``iter_*`` engine yields ``(location, item)`` pairs lazily and collects the problems it met
(``problems``) instead of printing: the CLI decides how to show them.  A broken frame ends the
walk of *its file* (where the broker's own recovery would stop too) and the next file is read; a
record whose frame holds around damaged bytes (a body CRC mismatch) is listed with its finding
(``Located.finding``) and the walk goes on after it.  CommitLog records come from the store
model's reading of each file (``store.model.commitlog.read_file_pieces``): dump judges no byte
itself, it filters, limits and collects what the reading states.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from mqtool.errors import CorruptDataError, MqError, StoreLayoutError
from mqtool.findings import Finding
from mqtool.formats import data_end
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import config as cfgf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.columns import ColumnWalk
from mqtool.formats.rocketmq.commitlog import DataEnd, decompress_body
from mqtool.formats.rocketmq.commitlog import MessageRecord as MessageRecord  # rows of cli.rows are built from them
from mqtool.formats.rocketmq.consume_queue import QueueDataEnd
from mqtool.formats.rocketmq.index_file import IndexGeometry as IndexGeometry  # header rows of cli.cmd_dump are built from them
from mqtool.formats.rocketmq.index_file import IndexHeader as IndexHeader  # header rows of cli.cmd_dump are built from them
from mqtool.formats.rocketmq.properties import TAGS, UNIQ_KEY, split_keys
from mqtool.formats.rocketmq.record_fields import RecordFields as RecordFields  # rows of cli.rows are built from them
from mqtool.formats.rocketmq.record_fields import record_fields, records_with_key, records_with_tag, repeated_property_names
from mqtool.store import rocketmq as rmq
from mqtool.store import rocksdb_cq as store_rcq
from mqtool.store.files import ReadOnlyFile, check_path, is_directory, is_regular_file, read_small_file
from mqtool.store.model import commitlog as model_cl
from mqtool.store.model import compaction as model_compaction
from mqtool.store.model import index as model_index
from mqtool.store.model import rocketmq as model
from mqtool.store.model import rocksdb_cq as model_rcq
from mqtool.store.model import timer as model_timer
from mqtool.store.model.queue_offsets import FileQueueOffsets, QueueOffsets
from mqtool.store.root_rocketmq import find_rocketmq_root, is_rocketmq_root


@dataclass(frozen=True)
class RecordFilter:
    topic: str | None = None
    queue_id: int | None = None
    from_offset: int | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    key: str | None = None
    tag: str | None = None  # TAGS equal to this (the tag a consumer subscribes by)

    def accepts(self, record: MessageRecord) -> bool:
        return self.accepts_fields(record.topic, record.queue_id, record.store_timestamp, record.properties)

    def accepts_fields(self, topic: str, queue_id: int, store_timestamp: int, properties: dict[str, str]) -> bool:
        """:meth:`accepts` on a record's decoded fields (the lean reading has no ``MessageRecord``)."""
        if self.topic is not None and topic != self.topic:
            return False
        if self.queue_id is not None and queue_id != self.queue_id:
            return False
        if self.since_ms is not None and store_timestamp < self.since_ms:
            return False
        if self.until_ms is not None and store_timestamp > self.until_ms:
            return False
        if self.key is not None and self.key not in split_keys(properties) and properties.get(UNIQ_KEY) != self.key:
            return False
        if self.tag is not None and properties.get(TAGS) != self.tag:
            return False
        return True


@dataclass(frozen=True)
class Located:
    """Where an item sits: file, byte position, and the global (commitlog/queue) address;
    ``finding``: the code of the finding validate states about the record there, for a record
    whose frame is intact but whose bytes are damaged (``store.model.commitlog.DecodedRecord.code``:
    RMQ-CL-BODY-CRC, RMQ-CL-PHYS-OFFSET, RMQ-CL-PROPERTIES, RMQ-CL-PROP-CRC); None when healthy."""

    path: Path
    position: int
    address: int
    finding: str | None = None


@dataclass(frozen=True)
class FileDumped:
    """How the dump's walk of one CommitLog file ended, after ``records`` records: ``end`` is
    where its valid records stop -- the clean ends of the store model's reading (``eof``,
    ``zeros``, ``blank``, ``partial``, ``torn``, ``stale``), or ``broken`` with the located error
    of the record it stopped at; None for a pre-allocated file after the last one holding data
    (no record is read there).  ``torn``: the newest file's record cut by a crash (``end.kind``
    ``torn``)."""

    path: Path
    records: int
    end: data_end.DataEnd[Any] | None  # the model's kinds, and broken
    torn: rmq.TornTail | None = None


@dataclass(frozen=True)
class ColumnChunk:
    """Healthy records of one piece of a CommitLog file, as the store model's reading frames
    them (``store.model.commitlog.ColumnPiece``): ``rows`` are the numbers (in ``walk.columns``)
    of the records the filter selects; a record's position is in the piece ``buf``, its file
    position ``offset + position``, its commitlog offset ``base + position``."""

    path: Path
    offset: int
    base: int
    piece: model_cl.ColumnPiece
    rows: np.ndarray

    @property
    def buf(self) -> bytes:
        return self.piece.data

    @property
    def walk(self) -> ColumnWalk:
        return self.piece.walk

    def __len__(self) -> int:
        return len(self.rows)

    def part(self, start: int, stop: int) -> ColumnChunk:
        """The same chunk with rows ``start:stop`` of these."""
        return replace(self, rows=self.rows[start:stop])

    def fields(self) -> RecordFields:
        """The fields of the rows the columns leave out (bodies as positions, KEYS not split)."""
        return record_fields(self.buf, self.walk.columns, self.rows, with_body=False, with_key_tokens=False, properties=self.walk.properties)

    def rows_repeating_names(self, fields: RecordFields) -> np.ndarray:
        """The rows (numbers in ``rows``, ascending) whose PROPERTIES repeat a name: their map
        is not their list of pairs."""
        return repeated_property_names(fields.names, fields.pair_offsets)

    def record(self, row: int) -> tuple[Located, MessageRecord]:
        """Row ``row`` read by the precise decoder."""
        number = int(self.rows[row])
        pos = int(self.walk.columns.position[number])
        return Located(self.path, self.offset + pos, self.base + pos), self.piece.record(number)


@dataclass
class CommitLogDump:
    """Iterate the records of CommitLog files in order, applying a filter and a limit.

    ``findings`` collects, as validate states them (``store.model.rocketmq``), the damage the
    walk met: each file's first broken record or how it ends wrong, the records that break their
    queue's QUEUEOFFSET sequence (``store.model.queue_offsets``, over the files walked), and, when
    ``directory`` is the CommitLog directory the files came from, the continuity facts (a missing
    file, a wrong size) of the files read.  A broken frame ends the walk of its file, as the broker's own
    recovery (``CommitLog.recoverNormally``) stops there; a record whose frame holds but whose body
    CRC fails is yielded, its ``Located.finding`` naming the finding, and the walk goes on."""

    files: list[rmq.Segment]
    filter: RecordFilter = field(default_factory=RecordFilter)
    limit: int | None = None
    check_crc: bool = True
    problems: list[MqError] = field(default_factory=list)
    ends: list[FileDumped] = field(default_factory=list)
    bytes_done: int = 0
    directory: Path | None = None
    findings: list[Finding] = field(default_factory=list)
    #: the queue offsets of the files walked so far, joined (``store.model.queue_offsets``)
    queue_offsets: QueueOffsets = field(default_factory=QueueOffsets)

    def __iter__(self) -> Iterator[tuple[Located, MessageRecord]]:
        if self.limit == 0:  # --limit 0: no rows (the check after each yield would let one out)
            return
        read: list[Path] = []
        file_size = rmq.detect_file_size(self.files)
        try:
            for item in self._read(read, file_size, columns=False):
                assert not isinstance(item, ColumnChunk)  # the precise reading yields no columns
                yield item
        finally:
            self._continuity(read, file_size)

    def lean(self) -> Iterator[ColumnChunk | tuple[Located, MessageRecord]]:
        """The same records as iterating the dump, in the same order and with the same
        ``findings`` and ``ends``, read the lean way: runs of healthy records come as
        :class:`ColumnChunk` columns (the model's ``ColumnPiece``); a record the column walk
        declines comes decoded, as ``(Located, MessageRecord)``; where the precise decoder refuses
        one, or where the file's data ends, the model's precise walk reads the rest of the file
        and names how it ends (``store.model.commitlog.read_file_pieces``)."""
        if self.limit == 0:
            return
        read: list[Path] = []
        file_size = rmq.detect_file_size(self.files)
        try:
            yield from self._read(read, file_size, columns=True)
        finally:
            self._continuity(read, file_size)

    def _continuity(self, read: list[Path], file_size: int | None) -> None:
        if self.directory is not None:
            continuity = model.segment_findings(self.directory, self.files, file_size, "commitlog")
            self.findings[:0] = model.segment_findings_on_path(continuity, read, self.filter.from_offset)

    def _files_to_walk(self, read: list[Path]) -> Iterator[tuple[int, rmq.Segment]]:
        """The files a dump walks, with their numbers in ``self.files``: files wholly before
        ``--from-offset`` are passed over, and a zero-length file ends at once (both are counted
        as done); every file yielded or ended is appended to ``read``."""
        start_at = self.filter.from_offset
        for i, seg in enumerate(self.files):
            if start_at is not None and seg.size and seg.base + seg.size <= start_at:
                self.bytes_done += seg.size
                continue
            read.append(seg.path)
            if seg.size == 0:
                self.ends.append(FileDumped(seg.path, 0, DataEnd("eof", 0)))
                continue
            yield i, seg

    def _file_walked(self, offsets: FileQueueOffsets | None, base: int, file_size: int | None) -> None:
        """The queue-offset breaks of a file walked to its end, inside it and against the files
        walked before it (None: a pre-allocated file after the last one holding records)."""
        if offsets is not None:
            self.findings.extend(offsets.findings)
            self.findings.extend(self.queue_offsets.add_file(offsets, base, file_size))

    def _select(self, buf: bytes, walk: ColumnWalk, base: int) -> np.ndarray:
        """The records of a walk of ``buf`` (at commitlog offset ``base``) the filter selects,
        as numbers in its columns, in order."""
        cols = walk.columns
        flt = self.filter
        keep = np.ones(len(cols), dtype=bool)
        if flt.from_offset is not None:
            keep &= cols.position + base >= flt.from_offset
        if flt.topic is not None:
            keep &= cols.topic == (cols.topics.index(flt.topic) if flt.topic in cols.topics else -1)
        if flt.queue_id is not None:
            keep &= cols.queue_id == flt.queue_id
        if flt.since_ms is not None:
            keep &= cols.store_timestamp >= flt.since_ms
        if flt.until_ms is not None:
            keep &= cols.store_timestamp <= flt.until_ms
        rows = np.flatnonzero(keep)
        if flt.key is not None:
            rows = rows[records_with_key(buf, cols, rows, flt.key)]
        if flt.tag is not None:
            rows = rows[records_with_tag(buf, cols, rows, flt.tag)]
        return rows

    def _read(self, read: list[Path], file_size: int | None, *, columns: bool) -> Iterator[ColumnChunk | tuple[Located, MessageRecord]]:
        """The rows of the files, from the store model's reading of each
        (``store.model.commitlog.read_file_pieces``), filtered and up to the limit; ``findings``,
        ``ends`` and the queue offsets as the reading states them.  ``columns=False``: every
        record comes decoded by the precise walk."""
        emitted = 0
        limit = self.limit
        start_at = self.filter.from_offset
        flt = self.filter
        last_index = model.last_data_file(self.files)
        selects_by_key_or_tag = flt.key is not None or flt.tag is not None  # the only users of key hashes and tagsCodes here
        for i, seg in self._files_to_walk(read):
            offsets = FileQueueOffsets(str(seg.path)) if i <= last_index else None
            with ReadOnlyFile(seg.path) as f:
                count = 0
                done = 0  # file position up to which bytes_done counts the file
                said: list[Finding] = []  # what validate states about the records read so far
                reading = model_cl.read_file_pieces(
                    f,
                    seg.base,
                    file_size=file_size,
                    last=i == last_index,
                    after_last=i > last_index,
                    check_crc=self.check_crc,
                    columns=columns,
                    key_hashes=selects_by_key_or_tag,
                    offsets=offsets,
                )
                for item in reading:
                    if isinstance(item, model_cl.ColumnPiece):
                        walk, offset = item.walk, item.position
                        cols = walk.columns
                        count += len(cols)
                        self.bytes_done += offset + walk.stop.position - done
                        done = offset + walk.stop.position
                        rows = self._select(item.data, walk, seg.base + offset)
                        if limit is not None and emitted + len(rows) > limit:
                            rows = rows[: limit - emitted]
                        if len(rows):
                            yield ColumnChunk(seg.path, offset, seg.base + offset, item, rows)
                            emitted += len(rows)
                            if limit is not None and emitted >= limit:
                                # the piece's columns hold records past the last row: name only
                                # what the records up to it show, as the precise walk stops there
                                # (a finding's position may be a field inside its record, e.g.
                                # QUEUEOFFSET at +20: the bound is the end of the last row)
                                last_row = rows[-1]
                                upto = offset + int(cols.position[last_row]) + int(cols.size[last_row])
                                found = offsets.findings if offsets is not None else []
                                self.findings.extend(said)
                                self.findings.extend(x for x in found if x.position is None or x.position < upto)
                                return
                    elif isinstance(item, model_cl.DecodedRecord):
                        pos, record = item.position, item.record
                        count += 1
                        self.bytes_done += pos + record.total_size - done
                        done = pos + record.total_size
                        said.extend(item.findings)
                        if start_at is not None and seg.base + pos < start_at:
                            continue
                        if not flt.accepts(record):
                            continue
                        yield Located(seg.path, pos, seg.base + pos, item.code), record
                        emitted += 1
                        if limit is not None and emitted >= limit:
                            self.findings.extend(said)  # the records read so far
                            self.findings.extend(offsets.findings if offsets is not None else [])
                            return
                    else:
                        self.bytes_done += f.size - done
                        self.findings.extend(item.findings)
                        end = item.end if item.error is None else data_end.DataEnd("broken", item.valid_end, error=item.error)
                        self.ends.append(FileDumped(seg.path, count, end, item.torn))
            self._file_walked(offsets, seg.base, file_size)

    @property
    def total_bytes(self) -> int:
        return sum(s.size for s in self.files)


def commitlog_files(path: Path) -> list[rmq.Segment]:
    """CommitLog files for PATH: a store root, the ``commitlog/`` dir, or one file."""
    path = Path(path)
    check_path(path)
    _not_compaction(path, "a store root, a commitlog/ directory or a CommitLog file")
    if is_regular_file(path):
        st = path.stat()
        base = int(path.name) if segnames.ROCKETMQ_FILE_NAME.match(path.name) else 0
        return [rmq.Segment(path, base, st.st_size, st.st_mtime)]
    if is_directory(path):
        if is_rocketmq_root(path):
            return rmq.list_segments(path / "commitlog")
        segments = rmq.list_segments(path)
        if segments:
            return segments
    if not path.exists():
        raise StoreLayoutError("no such file or directory", path=path)
    raise StoreLayoutError(expected="a store root, a commitlog/ directory or a CommitLog file", found="none of them", path=path)


def _not_compaction(path: Path, expected: str) -> None:
    """A path of the compaction store is refused with the family that reads it."""
    family = model_compaction.compaction_family(path)
    if family is not None:
        raise StoreLayoutError(expected=expected, found=f"a path of the compaction store: read it with `mqtool dump {family}`", path=path)


def commitlog_directory(path: Path) -> Path | None:
    """The CommitLog directory whose files ``commitlog_files(path)`` lists (None for one file):
    the files' continuity (``store.model.rocketmq.segment_findings``) is on the path of a dump."""
    path = Path(path)
    if is_directory(path):
        return path / "commitlog" if is_rocketmq_root(path) else path
    return None


def header_record(magic_code: int, sys_flag: int) -> MessageRecord:
    """A record with only MAGICCODE and SYSFLAG set: what a row derives from those two fields
    (version, transaction type, compression) read through ``MessageRecord``'s own properties."""
    return MessageRecord(topic="", sys_flag=sys_flag, magic_code=magic_code)


def body_bytes(record: MessageRecord, uncompress: bool) -> bytes:
    """The body to show: as stored, or uncompressed when asked and compressed."""
    if uncompress and record.compressed:
        return decompress_body(record)
    return record.body


# --- ConsumeQueue ------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueTarget:
    topic: str | None
    queue_id: int | None
    segments: list[rmq.Segment]


def consumequeue_targets(path: Path, *, topic: str | None = None, queue_id: int | None = None) -> list[QueueTarget]:
    """Queues for PATH: store root, ``consumequeue/``, a topic dir, a queue dir, or one file."""
    path = Path(path)
    check_path(path)
    _not_compaction(path, "a store root, a consumequeue/ directory, a topic or queue directory or a ConsumeQueue file")
    if is_regular_file(path):
        st = path.stat()
        base = int(path.name) if segnames.ROCKETMQ_FILE_NAME.match(path.name) else 0
        qid = int(path.parent.name) if path.parent.name.lstrip("-").isdigit() else None
        tname = path.parent.parent.name if qid is not None else None
        return [QueueTarget(tname, qid, [rmq.Segment(path, base, st.st_size, st.st_mtime)])]
    if is_rocketmq_root(path):
        path = path / "consumequeue"
    targets: list[QueueTarget] = []
    if rmq.list_segments(path):  # a queue directory
        qid = int(path.name) if path.name.lstrip("-").isdigit() else None
        targets.append(QueueTarget(path.parent.name, qid, rmq.list_segments(path)))
    else:
        # topic and queue directories that are symbolic links are never followed (validate reports them)
        children = [c for c in sorted(path.iterdir()) if rmq.is_real_directory(c)] if is_directory(path) else []
        if children and all(c.name.lstrip("-").isdigit() for c in children):  # a topic directory
            for c in children:
                targets.append(QueueTarget(path.name, int(c.name), rmq.list_segments(c)))
        else:  # consumequeue/
            for tdir in children:
                for qdir in sorted(tdir.iterdir()):
                    if rmq.is_real_directory(qdir) and qdir.name.lstrip("-").isdigit():
                        targets.append(QueueTarget(tdir.name, int(qdir.name), rmq.list_segments(qdir)))
    if not targets:
        raise StoreLayoutError(expected="ConsumeQueue files (consumequeue/<topic>/<queueId>/<20-digit name>)", found="none", path=path)
    return [t for t in targets if (topic is None or t.topic == topic) and (queue_id is None or t.queue_id == queue_id)]


@dataclass
class QueueDump:
    targets: list[QueueTarget]
    from_offset: int | None = None
    limit: int | None = None
    include_fillers: bool = True
    ends: list[tuple[QueueTarget, rmq.Segment, QueueDataEnd]] = field(default_factory=list)

    def __iter__(self) -> Iterator[tuple[QueueTarget, rmq.QueueUnit]]:
        emitted = 0
        if self.limit == 0:  # --limit 0: no rows (the check after each yield would let one out)
            return
        for target in self.targets:
            walk = rmq.QueueWalk(target.segments, self.from_offset or 0)
            for qu in walk:
                if not self.include_fillers and qu.unit.is_filler:
                    continue
                yield target, qu
                emitted += 1
                if self.limit is not None and emitted >= self.limit:
                    return
            for seg, end in walk.ends:
                self.ends.append((target, seg, end))


def consumequeue_findings(path: Path, dump: QueueDump) -> list[Finding]:
    """What validate says about the queues ``dump`` walked, in validate's order: each queue
    directory's segment findings (``store.model.rocketmq.queue_segment_findings``: a file of the
    wrong size, a missing file), then where a file's units end early (``cq_end_finding``: an
    invalid or partial unit).  The store's ConsumeQueue file size is known when ``path`` lies in a
    store (a root, ``consumequeue/``, a topic, queue or file); otherwise the dumped queues give it."""
    path = Path(path)
    root = next((p for p in [path, *path.parents][:5] if is_rocketmq_root(p)), None)
    out: list[Finding] = []
    if root is not None:
        store = rmq.open_store(root)
        for target in dump.targets:
            if target.topic is not None and target.queue_id is not None:
                out.extend(model.queue_segment_findings(store, target.topic, target.queue_id))
    else:
        size, source = model.cq_file_size(None, {(t.topic or "", t.queue_id or 0): t.segments for t in dump.targets})
        for target in dump.targets:
            if target.segments:
                out.extend(model.segment_findings(target.segments[0].path.parent, target.segments, size, "consumequeue", size_source=source))
    for _target, seg, end in dump.ends:
        finding = model.cq_end_finding(str(seg.path), end)
        if finding is not None:
            out.append(finding)
    return out


def rocksdb_cq_dir(path: Path, *, prefer_rocksdb: bool = False) -> Path | None:
    """The RocksDB ConsumeQueue (5.2+, ``store.rocksdb_cq``) ``dump consumequeue PATH`` reads: PATH
    a store root or its ``consumequeue`` directory holding one, and no file ConsumeQueue beside it
    (both: the file one, unless ``prefer_rocksdb``)."""
    found = store_rcq.find_db(Path(path))
    if found is None:
        return None
    has_files = any(rmq.is_real_directory(c) for c in found.iterdir())
    return found if prefer_rocksdb or not has_files else None


@dataclass
class RocksQueueDump:
    """The units of a RocksDB ConsumeQueue as ``dump consumequeue`` rows, read through the store
    model's walk (``store.model.rocksdb_cq``); keys and values not in RocketMQ's layout are
    ``findings`` (validate's ``RMQ-CQ-ROCKSDB-ENTRY``), not rows."""

    path: Path
    topic: str | None = None
    queue_id: int | None = None
    from_offset: int | None = None
    limit: int | None = None
    findings: list[Finding] = field(default_factory=list)

    def __iter__(self) -> Iterator[dict[str, object]]:
        if self.limit == 0:
            return
        emitted = 0
        with store_rcq.RocksCq(self.path) as db:
            if self.topic is not None and self.queue_id is not None:
                items = model_rcq.queue_units(db, self.topic, self.queue_id, self.from_offset or 0)
            else:
                items = model_rcq.walk_units(db)
            for item in items:
                if isinstance(item, model_rcq.BadEntry):
                    self.findings.append(model_rcq.bad_entry_finding(db, item))
                    continue
                cq, value = item.cq, item.value
                if (self.topic is not None and cq.topic != self.topic) or (self.queue_id is not None and cq.queue_id != self.queue_id):
                    continue
                if self.from_offset is not None and cq.queue_offset < self.from_offset:
                    continue
                yield {
                    "file": str(self.path),
                    "position": None,
                    "topic": cq.topic,
                    "queue_id": cq.queue_id,
                    "queue_offset": cq.queue_offset,
                    "commitlog_offset": value.commitlog_offset,
                    "size": value.size,
                    "tags_code": value.tags_code,
                    "ext_offset": None,
                    "kind": "message",
                    "store_timestamp": value.store_timestamp,
                    "key": item.key.hex(),
                }
                emitted += 1
                if self.limit is not None and emitted >= self.limit:
                    return


# --- IndexFile -----------------------------------------------------------------------------------


def index_extent(path: Path) -> model_cl.DataExtent | None:
    """Where the CommitLog data lies (``DataExtent``) in the store whose IndexFiles ``path`` names (its root, its
    ``index`` directory or one of its IndexFiles), or None for IndexFiles outside a store."""
    root = find_rocketmq_root(Path(path))
    if root is None:
        return None
    return model_cl.data_extent(rmq.open_store(root))


def index_targets(path: Path) -> list[Path]:
    path = Path(path)
    check_path(path)
    if is_regular_file(path):
        return [path]
    if is_rocketmq_root(path):
        path = path / "index"
    files = rmq.list_index_files(path)  # symbolic links and special files are never read
    if not files:
        raise StoreLayoutError(expected="IndexFiles (index/yyyyMMddHHmmssSSS)", found="none", path=path)
    return files


@dataclass(frozen=True)
class IndexEntryRow:
    path: Path
    number: int
    position: int
    slot: int
    entry: idxf.IndexEntry
    timestamp: int


@dataclass
class IndexDump:
    """Headers and used entries of IndexFiles (entries in write order)."""

    files: list[Path]
    hash_slot_num: int | None = None
    index_num: int | None = None
    limit: int | None = None
    headers_only: bool = False  # read the 40-byte headers, not the entries (a 400 MiB file holds 20M)
    problems: list[MqError] = field(default_factory=list)
    headers: list[tuple[Path, idxf.IndexHeader, idxf.IndexGeometry]] = field(default_factory=list)
    #: where the store's CommitLog data lies (``model_cl.data_extent``) when the files are a
    #: store's: an entry pointing at or past ``end`` is RMQ-IDX-PAST-END, as validate says
    extent: model_cl.DataExtent | None = None
    findings: list[Finding] = field(default_factory=list)

    def __iter__(self) -> Iterator[IndexEntryRow]:
        emitted = 0
        if self.limit == 0 and not self.headers_only:  # --limit 0: no rows (the check after each yield would let one out)
            return
        for path in self.files:
            try:
                view = rmq.IndexFileView(path, hash_slot_num=self.hash_slot_num, index_num=self.index_num)
            except MqError as exc:
                self.problems.append(exc)
                continue
            with view:
                geo = view.geometry
                self.headers.append((path, view.header, geo))
                if self.headers_only:
                    continue
                try:
                    for number, entry in model_index.read_entries(view):
                        past = self.extent.index_entry_finding(str(path), geo.entry_position(number), number, entry.phy_offset) if self.extent else None
                        if past is not None:
                            self.findings.append(past)
                        yield IndexEntryRow(
                            path,
                            number,
                            geo.entry_position(number),
                            entry.key_hash % geo.hash_slot_num if entry.key_hash >= 0 else -1,
                            entry,
                            entry.timestamp(view.header.begin_timestamp),
                        )
                        emitted += 1
                        if self.limit is not None and emitted >= self.limit:
                            return
                except MqError as exc:
                    self.problems.append(exc.at(path))


# --- checkpoint and config ------------------------------------------------------------------------


def read_checkpoint(path: Path) -> tuple[Path, cpf.Checkpoint]:
    path = Path(path)
    check_path(path)  # a missing path reads as every other command words it
    if is_rocketmq_root(path):
        path = path / "checkpoint"
    family = model_timer.timer_family(path)
    if family is not None:  # the timer store's checkpoint is another file of another layout
        raise StoreLayoutError(
            expected="the store's checkpoint (StoreCheckpoint)", found=f"the {family} of the timer store: read it with `mqtool dump {family}`", path=path
        )
    try:
        return path, cpf.decode_checkpoint(read_small_file(path, 1 << 20))
    except MqError as exc:
        raise exc.at(path) from None


def config_files(path: Path) -> list[Path]:
    path = Path(path)
    if is_regular_file(path):
        return [path]
    if is_rocketmq_root(path):
        path = path / "config"
    if not is_directory(path):
        raise StoreLayoutError(expected="a config/ directory or a config JSON file", found="none", path=path)
    return [p for p in sorted(path.iterdir()) if is_regular_file(p) and (p.name.endswith(".json") or p.name.endswith(".json.bak"))]


def read_config(path: Path) -> object:
    """A config JSON file as data (fastjson's unquoted integer keys accepted)."""
    family = model_timer.timer_family(Path(path))
    if family in ("timercheck", "timerwheel", "timerlog"):  # binary files of the timer store
        raise StoreLayoutError(expected="a config JSON file", found=f"the {family} of the timer store (binary): read it with `mqtool dump {family}`", path=path)
    raw = read_small_file(path, 256 << 20)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptDataError(path=path, position=exc.start, expected="UTF-8 JSON text", found=f"byte 0x{raw[exc.start]:02X}") from None
    try:
        return cfgf.parse_fastjson(text)
    except MqError as exc:
        raise exc.at(path) from None
