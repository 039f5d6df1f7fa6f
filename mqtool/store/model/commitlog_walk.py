"""The one reading of a RocketMQ CommitLog file: a walk a piece at a time that yields typed events.

One task (:class:`CommitLogTask`) names a file: its path, the commitlog offset its name says
(``base``), the configured file size, whether it is the newest file holding data (``is_last``),
the base it would have after its predecessor when its name says otherwise (``alt_base``), the
piece size, and which columns its consumer wants.  :func:`read_events` yields, in file order,
:class:`Stretch` for each run of healthy records, :class:`Record`, :class:`Rebased` and
:class:`Damage` for what the precise decoder reads around an anomaly (each finding with its
position, the commitlog range it covers, the bytes it skips), then how the file ends (its findings
as :class:`Damage`) and one :class:`FileWalked`.  Every reader of a file's records takes them from
here: validate's judge (``store.model.commitlog_check``) folds them into its result, and the
readers that list, count or compare records (``store.model.commitlog.read_file_pieces``,
``read_file_rows``, ``read_file_columns``) take the stretches and records with ``handover``: the
walk then stops, with one :class:`Handover`, where the broker's normal recovery
(``CommitLog.recoverNormally``) stops reading a file -- its first broken record, a torn tail or
stale data in the newest file, or the end of its data -- and those readers read on from there
as that recovery does: the same walk's ``recovery`` reading (:class:`FileRecords`) from the handover.  The Spark CommitLog source reads
a byte range of a file with the same walk (``store.model.commitlog_range``): ``start`` (the
range's first record), ``stop`` (the range ends at the first sync point at or after it, one
:class:`FileWalked` of kind ``stop``), ``keep_damaged`` (a record whose frame holds around a failed
body CRC is yielded after its :class:`Damage`, as the broker serves it) and a file that is any
``store.files.Readable`` (a pyarrow file).

The reading is one walk over the file, a piece at a time (``CommitLogTask.piece`` bytes, default
:func:`mqtool.store.files.piece_size`), with two speeds inside it:

* **Healthy records as columns.** :func:`mqtool.formats.rocketmq.columns.walk_columns` frames the
  piece's records in vectorised steps and makes every check the precise decoder makes of a
  healthy record (TOTALSIZE, MAGICCODE, body CRC, lengths, properties, PHYSICALOFFSET = its
  address, a last byte that is not a torn write's zero); it stops at the first record it
  declines.
* **The precise decoder around an anomaly.** That record is decoded by
  :class:`mqtool.formats.rocketmq.commitlog.RecordWalker`, which judges it as upstream
  ``CommitLog.checkMessageAndReturnSize`` does and names each finding; then the columns take
  over again after it.  Where ``CommitLog.recoverAbnormally`` would stop (the first broken
  record), this walk reports the record, resynchronises -- right after the record when its frame
  still holds, else at the next valid record (:func:`mqtool.store.rocketmq.find_next_record`),
  the bytes between an RMQ-CL-UNREADABLE-REGION -- and goes on in the same piece, so that the
  rest of the file is checked too and each byte is read once.

A record that crosses a piece boundary is read whole by the next piece
(:func:`mqtool.store.rocketmq.piece_goes_on`, the one rule of every CommitLog walk).
``task.fast=False`` turns the columns off (every record by the precise decoder).

How the file ends follows the broker: a file before the last ends in an END_OF_FILE blank
(``CommitLog.BLANK_MAGIC_CODE``, RMQ-CL-NO-BLANK otherwise); the newest file's valid data ends at
zeros, a blank, or the end of the file (RMQ-CL-VALID-END says where), and what the broker would
overwrite after it is a torn tail (a crash while writing), stale data (a copy of records that
belong elsewhere), or garbage.  Each :class:`Damage` says which commitlog range it reported and
which bytes it skipped, so that a fold reports nothing twice.

Without ``handover`` the walk does not end at the first broken record as upstream
``CommitLog.recoverNormally`` does: it reports and resynchronises, decides a misnamed file's base from its first record, and keeps a
record whose TOTALSIZE reaches past the end of a file that was cut short for RMQ-FILE-SIZE.

With ``recovery`` the walk reads a file as that recovery takes its records, to where it stops
taking them, and says how the file ends as the record walker names it (no finding about it):
:class:`FileRecords` yields those records as ``(position, MessageRecord)`` to the readers that
want them one by one -- a reader reading on from a handover (``store.model.commitlog``), the
recovery window and a file's end in the store model (``store.model.queue_offsets``,
``store.model.rocketmq``), the keyed records of a range (``store.model.derived``, with a
``limit``: no byte after it read), a compaction log and a writer resuming its store (their
files' names are no commitlog offsets: no record is judged against its address).  This walk is
the only code that reads a CommitLog file in pieces.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from mqtool.errors import MqError, TruncatedDataError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import RMQ_CL_AFTER_BLANK, RMQ_CL_PHYS_OFFSET, RMQ_CL_UNREADABLE_REGION, RMQ_CL_VALID_END
from mqtool.formats import data_end as de
from mqtool.formats.rocketmq.commitlog import (
    BORNHOST_POSITION,
    DataEnd,
    EndKind,
    MessageRecord,
    RecordWalker,
    host_size,
    peek_physical_offset,
    peek_store_timestamp,
)
from mqtool.formats.rocketmq.properties import CRC32
from mqtool.store import rocketmq as rmq
from mqtool.store.files import Readable, ReadOnlyFile, nonzero_extent, piece_size
from mqtool.store.model import rocketmq as model

if TYPE_CHECKING:  # the columns (numpy) load with the first walk that takes them (``task.fast``)
    from mqtool.formats.rocketmq.columns import ColumnDataEnd, ColumnWalk, CommitLogColumns


@dataclass(frozen=True)
class CommitLogTask:
    path: str
    base: int
    file_size: int
    is_last: bool  # the last file holding data: ends in zeros, not END_OF_FILE
    check_properties: bool = True
    #: A writer holds the store's lock: a tail that changes while we read it is in progress.
    live: bool = False
    #: The base the file would have after its predecessor, when its name says otherwise.
    alt_base: int | None = None
    #: Bytes per read of the precise walk (0: ``store.files.piece_size()``).
    piece: int = 0
    #: The fast path (healthy files read as columns; see ``mqtool.store.model.commitlog``):
    #: the store root and ConsumeQueue file size to verify the file's units against (0: no
    #: ConsumeQueue check), the directory to leave the file's index key table in (None: no
    #: IndexFile check).  ``fast=False`` reads every file with the precise decoders.
    fast: bool = True
    root: str = ""
    cq_file_size: int = 0
    keys_dir: str | None = None
    #: Stop where the broker's normal recovery stops reading the file (:class:`Handover`)
    #: instead of resynchronising after a broken record and judging how the file ends.
    handover: bool = False
    #: The columns a reader that lists records wants (``walk_columns``'s ``key_hashes`` and
    #: ``tags_codes``); validate's fold asks for them through ``cq_file_size``/``keys_dir``.
    key_hashes: bool = False
    #: Judge each record's body CRC (a reader that lists records may not).
    check_crc: bool = True
    #: The ``tags_code`` column (``walk_columns``'s ``tags_codes``) for a reader that lists records.
    tags_codes: bool = False
    #: A byte range of the file (the Spark sources' splits, ``store.model.commitlog_range``): the
    #: walk starts at the record at ``start`` (0, or the sync point ``rmq.find_next_record`` finds
    #: at or after the range's start) and, with ``stop``, ends -- one :class:`FileWalked` of kind
    #: ``stop`` -- at the first *sync point* at or after ``stop``: a record there whose
    #: PHYSICALOFFSET is its own address (where the next range starts); a record after ``stop``
    #: that is not one still belongs to the range (the next range skips it).  A walk with a
    #: ``stop`` reads no more than ``PAST_STOP`` bytes past it a piece (a longer record there is
    #: read whole by the next read), states what it meets as the range reading needs it (each
    #: :class:`Damage` with its ``cause``; the findings about a record that decodes, stale data and
    #: how the file ends after its data -- garbage, END_OF_FILE -- are the whole file's, validate's)
    #: and takes ``f`` as a ``store.files.Readable`` (a pyarrow file: ``size``, ``path``, ``pread``).
    start: int = 0
    stop: int | None = None
    #: A record whose frame holds (TOTALSIZE, MAGICCODE, every length) but whose body CRC fails
    #: is yielded as a :class:`Record` after its :class:`Damage` (``cause`` ``kept``) and the walk
    #: goes on after it, as the broker serves it (the recovery reading's
    #: ``keep_damaged``); without it the walk reports it and resynchronises (validate).
    keep_damaged: bool = False
    #: Yield a :class:`Served` before the broken record it is (``keep_damaged`` off).
    served: bool = False
    #: A fold of the records the broker serves, fed by validate's fold as it reads them
    #: (``store.model.commitlog_check.RowsFold``; one per task, handed back in the result).
    rows: object = field(default=None, compare=False)
    #: Keep what a reader of the whole file would see of a healthy file
    #: (``store.model.queue_offsets.KeptReading``, ``CommitLogFileResult.kept``), with its
    #: columns too with ``keep_columns`` (the newest files: a recover plan's dispatch scan).
    keep_reading: bool = False
    keep_columns: bool = False
    #: Read the file as the broker's normal recovery (``CommitLog.recoverNormally``) takes its
    #: records: stop at the first broken record (one :class:`FileWalked` of kind ``broken`` with its
    #: located error; with ``keep_damaged`` a record whose frame holds around a failed body CRC is
    #: a :class:`Record` with its ``error`` and the reading goes on after it), at a torn tail or
    #: stale data in the newest file (``torn`` with the tail, ``stale`` with the offset claimed),
    #: or where the records end (the end's kind as the record walker names it: ``blank``,
    #: ``zeros``, ``eof``, ``partial``); how the file ends is not judged (no :class:`Damage` about
    #: it: ``store.model.rocketmq.commitlog_file_findings`` states it from the end).
    #: :class:`FileRecords` is this reading as ``(position, record)`` pairs.
    recovery: bool = False
    #: The file's ``base`` is known: each record is judged against its address (its findings as
    #: :class:`Damage`, stale data in the newest file).  False for a file whose name is no
    #: commitlog offset to judge by (a compaction log, a writer resuming its own file).
    judge_records: bool = True
    #: With ``recovery``: a stale copy in the newest file ends the reading (``stale``); False for
    #: a reader that takes every record the broker's recovery would (the keyed records of a range).
    stale_ends: bool = True
    #: No byte at or after this file position is read: the reading ends there (``eof``, or
    #: ``partial`` at a record it cuts) -- a reader of a range of records reads no more.
    limit: int | None = None


def _header_store_timestamp(f: ReadOnlyFile, base: int, pos: int) -> int:
    """STORETIMESTAMP of a broken record whose header can be trusted (its own PHYSICALOFFSET):
    the checkpoint may count it.  0 otherwise."""
    head = f.pread(pos, BORNHOST_POSITION + host_size(True) + 8)
    if len(head) < BORNHOST_POSITION + host_size(False) + 8:
        return 0
    if peek_physical_offset(head) != base + pos:
        return 0
    try:
        return peek_store_timestamp(head)
    except TruncatedDataError:  # an IPv6 BORNHOST pushes it past the bytes there are
        return 0


def walk_columns(data: bytes, base: int, *, start: int = 0, key_hashes: bool = True, tags_codes: bool = True) -> ColumnWalk:
    """``formats.rocketmq.columns.walk_columns`` (imported on first use: a reading without the
    columns, ``task.fast`` off, loads no numpy)."""
    from mqtool.formats.rocketmq.columns import walk_columns as walk

    return walk(data, base, start=start, key_hashes=key_hashes, tags_codes=tags_codes)


# --- the events of one file's reading ----------------------------------------------------------------


@dataclass(frozen=True)
class Stretch:
    """Healthy records the column walk framed in one piece read at file ``position``: ``data``
    is the piece, ``walk.columns`` the records (positions in ``data``); every check the precise
    decoder makes of a record holds for them (``formats.rocketmq.columns.walk_columns``)."""

    position: int
    data: bytes
    walk: ColumnWalk
    #: where in ``data`` the column walk started (after the record before it)
    start: int = 0
    #: how many of ``walk.columns`` are the reading's (-1: all; with ``CommitLogTask.stop``, the
    #: records before the range's stop: the walk ends after a stretch that has fewer)
    count: int = -1

    @property
    def columns(self) -> CommitLogColumns:
        return self.walk.columns

    @property
    def records(self) -> int:
        """How many of the column walk's records are the reading's (see ``count``)."""
        return len(self.walk.columns) if self.count < 0 else self.count


@dataclass(slots=True)
class Record:
    """One record the precise walk decoded at file ``position``; the findings about its own
    bytes (``model.record_findings``) are the :class:`Damage` events just before it, ``code``
    the first one's code (None: a healthy record)."""

    position: int
    record: MessageRecord
    code: str | None = None
    #: With ``CommitLogTask.recovery`` and ``keep_damaged``: the located error of a record whose
    #: frame holds around a failed body CRC, taken as the broker serves it (``code`` names it).
    error: MqError | None = None


@dataclass(slots=True)
class Served:
    """With ``CommitLogTask.served``: the broken record at file ``position`` has a frame that holds
    around a failed body CRC, so the broker serves it (``CommitLog.recoverNormally`` reads on after
    it); its :class:`Damage` (``cause`` ``broken``, ``at`` the same position) comes next, and the
    walk resynchronises after it as for any broken record.  A reader that counts what the broker
    serves (stats) takes it; validate's fold does not."""

    position: int
    record: MessageRecord


@dataclass(frozen=True)
class Rebased:
    """The file's records say it starts at commitlog offset ``base``, not at its name's (a
    misnamed file, RMQ-FILE-OVERLAP/GAP/ALIGN): every address after this event is from it."""

    base: int


@dataclass(frozen=True)
class Damage:
    """What the reading states about one region of the file, in file order: ``finding`` (a
    broken record, a region it skipped, a torn tail, stale data, garbage, a missing or odd
    END_OF_FILE; also the info RMQ-CL-VALID-END saying where the valid data ends), or None for
    an event that only covers or skips bytes or moves the valid end.  ``covers``: the commitlog
    range [start, stop) reported (what points into it is not reported again); ``skipped``: bytes
    the reading skipped (the records they may have held, ``FileQueueOffsets.skip``); ``torn``:
    it ended at one record it does not take; ``valid_end``: where the valid data ends as far as
    the reading knows, before it reads on (at a broken record, at the end of the records);
    ``store_timestamp``: a broken record's STORETIMESTAMP when its header is trusted.

    A broken record's finding has ``cause`` ``broken`` and ``at`` its file position in every
    reading (where a fold of the records the broker serves stops, unless a :class:`Served` at
    the same position came just before it).  What a range reading (``CommitLogTask.stop``) is
    told besides: ``cause`` names what the
    event is about -- ``broken`` (a broken record's finding; the commitlog range it spoils is the
    next event's ``covers``), ``region`` (where the walk resynchronised after it: ``covers``, and
    the RMQ-CL-UNREADABLE-REGION between when there is one), ``kept`` (a record served despite
    its body CRC, :class:`Record` next), ``torn`` (a torn tail), ``missing`` (the commitlog
    offsets a file cut short lacks, RMQ-FILE-SIZE's), "" for the rest; ``at`` the file position
    where the walk met it; ``tail``: the broken record is at bytes of the newest file the broker
    overwrites (``store.model.rocketmq.ignored_tail``, judged for each broken record of a range;
    validate's fold makes only the file's first one a warning)."""

    finding: Finding | None
    covers: tuple[int, int] | None = None
    skipped: int | None = None
    torn: bool = False
    valid_end: int | None = None
    store_timestamp: int = 0
    cause: str = ""
    at: int | None = None
    tail: bool = False
    #: What the reading judged of the bytes after file positions, for a reader judging the same
    #: bytes next (``CommitLogTask.keep_reading``): their non-zero extents (``nonzero_extent``;
    #: ``FileReading.tails``) and the records found after positions (``model.next_record``;
    #: ``FileReading.nexts``).
    tails: dict[int, tuple[int, int] | None] | None = None
    nexts: model.NextRecords | None = None


@dataclass(frozen=True)
class FileWalked:
    """How the reading of the file ended: ``end``, where its valid records stop (``position``, a
    file position: ``valid_end``) and why (``kind``) -- the clean ends ``blank``, ``zeros``,
    ``eof``, ``partial`` (a file cut short), ``stale`` and ``torn`` in the newest file, or
    ``broken`` (a broken record with no valid record after it) -- or ``stop`` (a range reading
    reached its stop: the sync point there); with ``CommitLogTask.recovery`` its ``length`` is what
    the kind measures (a blank's or a cut record's TOTALSIZE, a torn record's), its ``error`` the
    located error of a ``broken`` end and its ``unit`` the torn tail of a ``torn`` end.  Besides:
    ``first_broken`` (the file position of its first broken record; the reading went on past it),
    the bytes it read, and ``claim``, the commitlog offset the first record of a ``stale`` end
    claims (recovery)."""

    end: de.DataEnd[str]
    bytes_read: int
    first_broken: int | None = None
    claim: int = -1
    #: what the reading judged of the bytes after positions (``nonzero_extent``), for a reader
    #: judging them next (``FileRecords.tails``)
    tails: dict[int, tuple[int, int] | None] | None = field(default=None, compare=False)

    @property
    def kind(self) -> str:
        return self.end.kind

    @property
    def valid_end(self) -> int:
        return self.end.position

    @property
    def torn(self) -> rmq.TornTail | None:
        """The torn tail a recovery reading ended at (kind ``torn``)."""
        return cast("rmq.TornTail | None", self.end.unit)


@dataclass(frozen=True)
class Handover:
    """With ``CommitLogTask.handover``: the walk stops at file ``position``, where the broker's
    normal recovery stops taking the file's records as they are (its first broken record, a
    torn tail or stale data in the newest file) or where its records end (``kind``: the end's
    kind, ``length`` a blank's TOTALSIZE or the bytes a record claims past the data); the reader
    reads on from there as that recovery does.  ``bytes_read``: what the walk read."""

    position: int
    kind: str
    length: int
    bytes_read: int


@dataclass(frozen=True)
class RecoveryEnd:
    """With ``CommitLogTask.keep_reading`` (validate's reading, kept for a recover plan): where
    the broker's normal recovery stops taking the file's records as they are -- the position a
    ``handover`` reading hands over at -- and how the ``recovery`` reading, read on from there,
    ends (``walked``: its first broken record with its located error, a torn tail or stale data
    in the newest file, or where the records end).  Yielded once, before the events about that
    position; validate's reading goes on past it.  What the walk yielded before it is what the
    recovery reading takes of the file."""

    walked: FileWalked


Event = Stretch | Record | Served | Rebased | Damage | FileWalked | Handover | RecoveryEnd


def read_events(f: ReadOnlyFile | Readable, task: CommitLogTask) -> Iterator[Event]:
    """The judge's reading of one open CommitLog file, as events in file order (see the module
    docstring): :class:`Stretch` for each run of healthy records (with ``task.fast``),
    :class:`Record`, :class:`Rebased` and :class:`Damage` for what the precise decoder reads
    around an anomaly, then how the file ends (its :class:`Damage` findings) and one
    :class:`FileWalked`.  Raises ``StoreIOError`` when the file cannot be read.  ``f`` may be any
    ``Readable`` for a range reading (``task.stop``); the rules it calls read only ``size``,
    ``path`` and ``pread`` there (stale data, which opens the store's other files, is not judged)."""
    if task.stop is None and not isinstance(f, ReadOnlyFile):
        raise TypeError("a whole file's reading takes a ReadOnlyFile")
    return _walk_commitlog_file(cast("ReadOnlyFile", f), task)


#: The precise decoder's backoff (records) after the columns declined a record early in a stretch.
_PRECISE_FIRST = 64
_PRECISE_CAP = 4096

#: Bytes a range reading reads past its stop in one read (a longer record there is read whole
#: by the next read).
PAST_STOP = 64 << 10


# --- the precise walk ------------------------------------------------------------------------------


@dataclass
class _Walk:
    """Where the precise walk stands: the records' base, records so far, the first broken
    record, the valid end as far as known, bytes read."""

    base: int
    records: int = 0
    first_broken: int | None = None
    valid_end: int = 0
    bytes_read: int = 0
    #: how a walk that stops at a broken record stopped: ``torn`` or ``broken``
    stopped: str = "broken"
    #: a :class:`RecoveryEnd` was yielded (``CommitLogTask.keep_reading``; None: none is wanted)
    marked: bool | None = None

    def mark(self, at: int, kind: str, *, length: int = 0, error: MqError | None = None, torn: rmq.TornTail | None = None, claim: int = -1) -> RecoveryEnd:
        """The :class:`RecoveryEnd` at file position ``at`` (the walk's own state unchanged)."""
        self.marked = True
        return RecoveryEnd(FileWalked(de.DataEnd(kind, at, length, unit=torn, error=error), self.bytes_read, None, claim))

    #: the non-zero extents after positions the walk judged (``nonzero_extent``)
    tails: dict[int, tuple[int, int] | None] = field(default_factory=dict)

    def end(self, kind: str, *, length: int = 0, error: MqError | None = None, torn: rmq.TornTail | None = None, claim: int = -1) -> FileWalked:
        return FileWalked(de.DataEnd(kind, self.valid_end, length, unit=torn, error=error), self.bytes_read, self.first_broken, claim, self.tails or None)


def _walk_commitlog_file(f: ReadOnlyFile, task: CommitLogTask) -> Iterator[Event]:
    """The walk over the whole file, a piece (``task.piece``) at a time: healthy stretches as
    columns (:class:`Stretch`, with ``task.fast``), each record the column walk declines by the
    precise decoder (:class:`Record` and its :class:`Damage`), a broken record reported and
    resynchronised after, then how the file ends."""
    path = task.path
    st = _Walk(task.base)  # st.base becomes the records' base for a misnamed file
    pos = task.start
    piece = task.piece or piece_size()
    want = 0  # a read's size when it is not a piece's (a long record seen whole)
    fast = task.fast
    # the columns a fold asks for: key hashes for the IndexFile check, TAGS codes for the units'
    hashes = fast and (task.keys_dir is not None or task.key_hashes)
    codes = fast and (bool(task.cq_file_size and task.root) or task.key_hashes or task.tags_codes)
    if fast:
        import numpy as np
    handover = task.handover
    recovery = task.recovery
    judged = task.judge_records
    stop = task.stop
    ranged = stop is not None
    limit = max(pos, f.size if task.limit is None else min(task.limit, f.size))
    is_last = task.is_last
    ends_here = (handover or recovery) and is_last  # a record of the newest file may end its data
    judge_each = judged and not ranged  # a range's reader judges the record from its row
    stale_judged = judged and task.stale_ends
    if task.keep_reading and not (handover or recovery or ranged or task.keep_damaged):
        st.marked = False  # validate's reading says where the recovery's stops (:class:`RecoveryEnd`)
    # After the columns declined a record fewer than ``_PRECISE_FIRST`` records after they were
    # called, the precise decoder reads that many records (doubling up to ``_PRECISE_CAP``) before
    # they try again: a column walk frames its whole piece before it judges, so records it
    # declines one after another (a ``__CRC32#`` property on each) would be framed again for each.
    backoff = precise_left = 0
    while True:
        data = f.pread(pos, min(want or (piece if stop is None else min(piece, max(stop - pos, 0) + PAST_STOP)), limit - pos))
        want = 0
        st.bytes_read += len(data)
        more = pos + len(data) < limit
        at = 0  # where the walk stands in the piece
        end: ColumnDataEnd | DataEnd | None = None
        resume: int | None = -1  # -1: no broken record met in this piece
        while end is None:
            if fast and precise_left <= 0:
                cw = walk_columns(data, st.base + pos, start=at, key_hashes=hashes, tags_codes=codes)
                if stop is not None and len(cw.columns):
                    # every record the columns frame is a sync point: the range ends at the first at its stop
                    count = int(np.searchsorted(cw.columns.position, stop - pos))
                    if count < len(cw.columns):
                        if count:
                            yield Stretch(pos, data, cw, at, count)
                        st.valid_end = pos + int(cw.columns.position[count])
                        yield st.end("stop")
                        return
                if len(cw.columns):
                    yield Stretch(pos, data, cw, at)
                    st.records += len(cw.columns)
                at = cw.stop.position
                if cw.stop.kind != "anomaly" or rmq.piece_goes_on("anomaly", at, len(data), more):
                    end = cw.stop
                    break
                # a short stretch before a declined record: the precise decoder reads on for a while
                backoff = 0 if len(cw.columns) >= _PRECISE_FIRST else min(max(_PRECISE_FIRST, 2 * backoff), _PRECISE_CAP)
                precise_left = backoff + 1  # the record declined, then the backoff's
            # the precise decoder: the record the column walk declined (and, without ``fast``,
            # every record of the piece)
            walker = RecordWalker(data, at, check_crc=task.check_crc)
            try:
                for p, rec in walker:
                    here = pos + p
                    if ends_here:
                        ending = rmq.data_ends_at(f, here, rec, data[p + rec.total_size - 1], task.file_size, st.base if stale_judged else None)
                        if ending is not None:
                            if handover:
                                yield Handover(here, "ends", 0, st.bytes_read)  # a torn tail or stale data: the reader names it
                            else:
                                yield _ending(st, here, ending, rec)
                            return
                    # validate's reading, marking where the recovery's ends, judges the record as the
                    # recovery does first, and takes what that found (each rule's bytes read once)
                    marking = st.marked is False and is_last
                    marked: DataEnd | None = None
                    if marking:
                        marked = rmq.data_ends_at(f, here, rec, data[p + rec.total_size - 1], task.file_size, st.base if stale_judged else None)
                        if marked is not None:
                            yield st.mark(here, marked.kind, length=marked.length, torn=cast("rmq.TornTail | None", marked.unit), claim=rec.physical_offset)
                    if judged and rec.physical_offset != st.base + here:
                        if not st.records and task.alt_base is not None and rec.physical_offset == task.alt_base + here:
                            st.base = task.alt_base  # misnamed: RMQ-FILE-OVERLAP/GAP/ALIGN say so
                            yield Rebased(st.base)
                        elif task.is_last and not ranged and not recovery and _stale_copy(f, task, st.base, here, rec, marked, marking and stale_judged):
                            # A record at ``here`` of the last file that claims another place, with no
                            # record at its own place after it: valid data ends here and the rest is
                            # stale (copied or left behind) data.
                            extent = nonzero_extent(f, here)
                            stop = extent[1] if extent else here + rec.total_size
                            st.valid_end = here
                            yield Damage(model.stale_finding(path, here, stop, rec.physical_offset))
                            yield Damage(Finding(RMQ_CL_VALID_END, path, here, f"valid data ends at commitlog offset {st.base + here} (stale data follow)"))
                            yield st.end("stale")
                            return
                    if is_last and not data[p + rec.total_size - 1]:
                        if marking:  # the recovery's rule judged it already
                            torn = cast("rmq.TornTail | None", marked.unit) if marked is not None and marked.kind == "torn" else None
                        else:
                            torn = _torn_record(f, task, data, p, here, rec)
                        if torn is not None:
                            yield from _torn_end(task, st, torn, here)
                            return
                    if stop is not None and here >= stop and rec.physical_offset == st.base + here:
                        st.valid_end = here  # the range's stop: the next range starts here
                        yield st.end("stop")
                        return
                    found = (
                        model.record_findings(path, st.base, here, rec, memoryview(data)[p : p + rec.total_size], check_properties=task.check_properties)
                        if judge_each and (rec.physical_offset != st.base + here or rec.dropped_properties or CRC32 in rec.properties)
                        else ()
                    )
                    if found:
                        covers = (st.base + here, st.base + here + rec.total_size) if any(x.code == RMQ_CL_PHYS_OFFSET for x in found) else None
                        for x in found:
                            yield Damage(x)
                        if covers is not None:
                            yield Damage(None, covers=covers)
                        yield Record(here, rec, found[0].code)
                    else:
                        yield Record(here, rec)
                    st.records += 1
                    at = p + rec.total_size
                    precise_left -= 1
                    if fast and precise_left <= 0:
                        break  # back to the columns after it
                else:
                    end = walker.end
            except MqError as exc:
                if handover:
                    yield Handover(pos + (walker.failed_at or 0), "broken", 0, st.bytes_read)
                    return
                if recovery:
                    kept = yield from _recovery_broken(f, task, st, data, pos, walker.failed_at or 0, exc)
                    if kept is None:
                        return  # the reading ends at the broken record (or a torn tail, or stale data)
                    at = kept
                    precise_left -= 1
                    continue
                if task.keep_damaged:
                    kept = yield from _kept_record(f, task, st, data, pos, walker.failed_at or 0, exc)
                    if kept is None:
                        return  # a torn tail, or the range's stop
                    if kept:
                        at = kept
                        precise_left -= 1
                        continue
                elif task.served:
                    served = _servable(f, task, data, pos + (walker.failed_at or 0), walker.failed_at or 0, exc)
                    if served is not None:
                        yield Served(pos + (walker.failed_at or 0), served)
                resume = yield from _after_broken_record(f, task, pos + (walker.failed_at or 0), exc.at(path, pos), st)
                if resume is not None and pos + at < resume < pos + len(data) - rmq.JUDGED_HEADER:
                    at, resume = resume - pos, -1  # the walk goes on in the piece in hand
                    continue
                break
        if resume != -1:
            if resume is None:
                yield st.end(st.stopped)
                return
            pos = resume
            continue
        assert end is not None
        end_pos = pos + end.position
        cut_short = f.size < task.file_size and not task.is_last  # its end is RMQ-FILE-SIZE's
        huge = end.kind == "partial" and end.position == 0 and end.length > rmq.MAX_RECORD_SIZE
        if st.marked is False and not (rmq.piece_goes_on(end.kind, end.position, len(data), more) and not huge):
            if huge and more:  # as the recovery reading ends at a TOTALSIZE no record has
                yield st.mark(end_pos, "broken", error=rmq.past_the_end_error(f, end_pos, end.length))
            else:
                yield st.mark(end_pos, end.kind, length=end.length)
        if (handover or recovery) and not (rmq.piece_goes_on(end.kind, end.position, len(data), more) and not huge):
            if handover:
                yield Handover(end_pos, end.kind, end.length, st.bytes_read)  # the reader judges how the records end
                return
            st.valid_end = end_pos
            if huge and more:  # a TOTALSIZE no record has (RMQ-CL-SIZE): the reading ends at it
                yield st.end("broken", error=rmq.past_the_end_error(f, end_pos, end.length))
            else:
                yield st.end(end.kind, length=end.length)
            return
        if end.kind == "partial" and not cut_short and (not more or end.length > rmq.MAX_RECORD_SIZE) and not (handover or recovery):
            # A record reaching past the end of the file: a torn write in the last file, else a
            # broken TOTALSIZE (the broker never writes a record past the end of a file).  (A
            # reading that stops there reads on from the record, which ends it: ``huge``.)
            if st.marked is False:  # where the recovery's reading, read on from the record, ends
                kind, length, error = _huge_end(f, end_pos, end.length, limit)
                yield st.mark(end_pos, kind, length=length, error=error)
            resume = yield from _after_broken_record(f, task, end_pos, rmq.past_the_end_error(f, end_pos, end.length), st)
            if resume is None:
                yield st.end(st.stopped)
                return
            pos = resume
            continue
        if rmq.piece_goes_on(end.kind, end.position, len(data), more):
            if end.kind == "partial" and end.position == 0:
                want = max(end.length, piece)
            pos = end_pos
            continue
        break
    if ranged:
        # a range states where its data ends; how the file ends after it is the whole file's
        st.valid_end = end_pos
        if cut_short and end.kind in ("partial", "eof"):
            yield Damage(None, covers=(st.base + end_pos, st.base + task.file_size), skipped=task.file_size - end_pos, cause="missing", at=end_pos)
        yield st.end(end.kind)
        return
    yield from _end_damage(f, task, st, end_pos, end.kind, end.length)
    yield st.end(end.kind)


def _huge_end(f: ReadOnlyFile, at: int, length: int, limit: int) -> tuple[str, int, MqError | None]:
    """How a ``recovery`` reading that reads on from the record at ``at`` whose TOTALSIZE
    (``length``) reaches past the file ends (a :class:`RecoveryEnd`'s kind, length and error): at
    a TOTALSIZE no record has when its first piece (``piece_size``, from the record) leaves more
    of the file (``broken``), else at a record cut by the file's end (``partial``)."""
    if length > rmq.MAX_RECORD_SIZE and limit - at > piece_size():
        return "broken", 0, rmq.past_the_end_error(f, at, length)
    return "partial", length, None


def _stale_copy(f: ReadOnlyFile, task: CommitLogTask, base: int, here: int, rec: MessageRecord, marked: DataEnd | None, looked: bool) -> bool:
    """Validate's stale-copy rule (``rmq.is_stale_copy``) at the record at ``here`` of the newest
    file, taking the recovery rule's verdict when it judged the record first (``marked``:
    ``rmq.data_ends_at``'s end there; ``looked``: it looked for a stale copy, so none is there unless
    ``marked`` says so -- a torn end is found before it looks)."""
    if marked is not None and marked.kind == "stale":
        return True
    if looked and marked is None:
        return False
    return rmq.is_stale_copy(f, base, here, rec, task.file_size)


def _ending(st: _Walk, here: int, ending: DataEnd, rec: MessageRecord) -> FileWalked:
    """The end of a recovery reading at a record of the newest file where its data ends."""
    st.valid_end = here
    return st.end(ending.kind, length=ending.length, torn=cast("rmq.TornTail | None", ending.unit), claim=rec.physical_offset)


def _recovery_broken(f: ReadOnlyFile, task: CommitLogTask, st: _Walk, data: bytes, pos: int, p: int, exc: MqError) -> Generator[Event, None, int | None]:
    """With ``task.recovery``: the record at ``p`` of the piece read at ``pos`` failed with
    ``exc``.  A torn tail of the newest file ends the reading (``torn``); with
    ``task.keep_damaged`` a record whose frame holds around a failed body CRC is yielded (its
    findings, then a :class:`Record` with its error) unless the newest file's data ends there,
    and the reading goes on after it (returned: its position in ``data``); else the reading ends
    at it (``broken``, with its located error).  None: the reading ended."""
    here = pos + p
    st.valid_end = here
    torn = rmq.torn_tail_at(f, here, task.file_size, st.tails) if task.is_last else None
    if torn is not None:
        yield st.end("torn", length=torn.total, torn=torn)
        return None
    kept = rmq.framed_record(data, p, exc) if task.keep_damaged else None
    if kept is None:
        yield st.end("broken", error=exc.at(f.path, pos))
        return None
    if task.is_last:
        ending = rmq.data_ends_at(f, here, kept, data[p + kept.total_size - 1], task.file_size, st.base if task.judge_records and task.stale_ends else None)
        if ending is not None:
            yield _ending(st, here, ending, kept)
            return None
    located = exc.at(f.path, pos)
    if task.judge_records:
        for x in model.record_findings(task.path, st.base, here, kept, memoryview(data)[p : p + kept.total_size], check_properties=task.check_properties):
            yield Damage(x)
    yield Record(here, kept, rmq.broken_record_code(located), located)
    st.records += 1
    return p + kept.total_size


def _kept_record(f: ReadOnlyFile, task: CommitLogTask, st: _Walk, data: bytes, pos: int, p: int, exc: MqError) -> Generator[Event, None, int | None]:
    """With ``task.keep_damaged``: the record at ``p`` of the piece read at ``pos`` failed with
    ``exc``; when only its body CRC is wrong (its frame holds, ``rmq.framed_record``)
    and it is no torn tail, state it (``Damage`` with cause ``kept``), yield it and return where
    the walk goes on in the piece (after it).  0: its frame is broken (the walk resynchronises);
    None: the walk ended (a torn tail, or the range's stop)."""
    here = pos + p
    kept = _framed(f, task, data, here, p, exc)
    if kept is None:
        return 0
    torn = _torn_record(f, task, data, p, here, kept)
    if torn is not None:
        yield from _torn_end(task, st, torn, here)
        return None
    if task.stop is not None and here >= task.stop and kept.physical_offset == st.base + here:
        st.valid_end = here
        yield st.end("stop")
        return None
    code, located, _frames = rmq.classify_broken_record(f, here, exc.at(task.path, pos))
    covers = (st.base + here, st.base + here + kept.total_size)
    yield Damage(Finding(code, task.path, located.position, located.reason), covers=covers, cause="kept", at=here)
    yield Record(here, kept)
    st.records += 1
    return p + kept.total_size


def _framed(f: ReadOnlyFile, task: CommitLogTask, data: bytes, here: int, p: int, exc: MqError) -> MessageRecord | None:
    """The record at file position ``here`` (``p`` in ``data``) that failed with ``exc``, when its
    frame holds around a failed body CRC (``rmq.framed_record``) and it is no torn
    tail of the newest file; else None."""
    kept = rmq.framed_record(data, p, exc)
    if kept is None or (task.is_last and rmq.torn_tail_at(f, here, task.file_size) is not None):
        return None
    return kept


def _torn_record(f: ReadOnlyFile, task: CommitLogTask, data: bytes, p: int, here: int, rec: MessageRecord) -> rmq.TornTail | None:
    """The store model's rule (every reader's walk applies it): a record of the newest file that
    decodes at ``here`` (``p`` in ``data``) but whose last byte is zero is a torn tail when only
    zeros follow; None otherwise."""
    if not task.is_last or data[p + rec.total_size - 1]:
        return None
    return rmq.torn_record_tail(f, here, rec, 0, task.file_size)


def _torn_end(task: CommitLogTask, st: _Walk, torn: rmq.TornTail, here: int) -> Iterator[Event]:
    """The walk ends at the torn tail at ``here``: its damage, then the file's end."""
    yield _torn_damage(task, torn, st.base)
    st.valid_end = here
    yield st.end("torn")


def _servable(f: ReadOnlyFile, task: CommitLogTask, data: bytes, here: int, p: int, exc: MqError) -> MessageRecord | None:
    """What the broker serves of the broken record at ``here`` (see :class:`Served`): the record
    when its frame holds and it is no torn tail (``_kept_record``'s rule), else None."""
    kept = _framed(f, task, data, here, p, exc)
    if kept is None or _torn_record(f, task, data, p, here, kept) is not None:
        return None
    return kept


def _end_damage(f: ReadOnlyFile, task: CommitLogTask, st: _Walk, end_pos: int, kind: str, length: int) -> Iterator[Damage]:
    """How a file the precise walk read to its end ends (``kind`` at ``end_pos``)."""
    path = task.path
    base = st.base
    st.valid_end = end_pos
    yield Damage(None, valid_end=end_pos)  # known before the end's bytes are read
    if kind == "blank":
        yield from _blank_damage(f, task, base, end_pos, length)
        return
    if not task.is_last:
        if f.size < task.file_size and kind in ("partial", "eof"):
            # The file was cut short (RMQ-FILE-SIZE): what is missing is not a second finding.
            yield Damage(None, covers=(base + end_pos, base + task.file_size), skipped=task.file_size - end_pos)
            return
        yield Damage(model.no_blank_finding(path, end_pos, kind))
        return
    if kind == "zeros":
        extent = nonzero_extent(f, end_pos)
        # a reading kept for a recover plan keeps what it judged of the bytes after the data
        kept = st.marked is not None
        tails: dict[int, tuple[int, int] | None] | None = {end_pos: extent} if kept else None
        nexts: model.NextRecords | None = {} if kept else None
        if extent is not None:
            ignored = st.first_broken is None and model.ignored_tail(f, base, end_pos, nexts)
            yield Damage(model.garbage_finding(path, end_pos, extent, ignored=ignored), tails=tails, nexts=nexts)
        elif tails is not None:
            yield Damage(None, tails=tails)
    if st.first_broken is not None:  # where recover and the broker stop, not only where the records end
        bad = st.first_broken
        yield Damage(
            Finding(
                RMQ_CL_VALID_END,
                path,
                bad,
                f"valid data ends at commitlog offset {base + bad} (a broken record: the broker's recovery and "
                f"`mqtool recover` stop there); records go on to {base + end_pos} ({kind} follow)",
            )
        )
        return
    yield Damage(_valid_end_finding(path, base, end_pos, kind))


def _valid_end_finding(path: str, base: int, pos: int, kind: str) -> Finding:
    return Finding(RMQ_CL_VALID_END, path, pos, f"valid data ends at commitlog offset {base + pos} ({kind} follow)")


def _after_broken_record(f: ReadOnlyFile, task: CommitLogTask, bad: int, exc: MqError, st: _Walk) -> Generator[Damage | RecoveryEnd, None, int | None]:
    """Report the record that fails at ``bad`` (or the torn tail it is) and return where the walk
    goes on: right after it when its TOTALSIZE or its length fields end where the data goes on,
    else at the next valid record (the bytes between are an unreadable region).  None: stop."""
    st.valid_end = bad
    yield Damage(None, valid_end=bad)  # known before the record's bytes are read again
    base = st.base
    # a reading kept for a recover plan keeps what it judged of the bytes after the record
    tails: dict[int, tuple[int, int] | None] | None = {} if st.marked is not None else None
    if task.is_last:
        # In the last file, a record whose bytes stop early and are followed only by zeros is a
        # torn tail (a crash while writing), not damage (``rmq.torn_tail_at``).
        torn = rmq.torn_tail_at(f, bad, task.file_size, tails)
        if torn is not None:
            st.stopped = "torn"
            if st.marked is False:
                yield st.mark(bad, "torn", length=torn.total, torn=torn)
            yield _torn_damage(task, torn, base)
            return None
    if st.marked is False:
        yield st.mark(bad, "broken", error=exc)
    if st.first_broken is None:
        st.first_broken = bad
    code, located, frames = rmq.classify_broken_record(f, bad, exc)
    # at the valid end of the newest file, bytes the broker overwrites (the store model's rule): a warning
    ranged = task.stop is not None
    nexts: model.NextRecords | None = {} if st.marked is not None else None  # kept for a recover plan
    ignored = not ranged and task.is_last and st.first_broken == bad and model.ignored_tail(f, base, bad, nexts)
    level = Severity.warning if ignored else None
    reason = located.reason + (f"; {model.IGNORED_TAIL.format(end=bad)}" if ignored else "")
    if ranged:
        # a range judges each broken record it meets (which is its file's first, only the
        # whole file's reading tells); a file without a store around it (pyarrow) is not judged
        tail = task.is_last and isinstance(f, ReadOnlyFile) and model.ignored_tail(f, base, bad)
        yield Damage(Finding(code, task.path, located.position, reason), cause="broken", at=bad, tail=tail)
    else:
        finding = Finding(code, task.path, located.position, reason, severity=level)
        yield Damage(finding, store_timestamp=_header_store_timestamp(f, base, bad), cause="broken", at=bad, nexts=nexts, tails=tails)
    resume = next((bad + n for n in sorted(frames) if rmq.clean_at(f, base, bad + n)), None)
    region = None
    if resume is None:
        resume = model.next_record(f, base, bad + 1, nexts)
        if resume is None:
            extent = tails[bad] if tails is not None and bad in tails else nonzero_extent(f, bad)
            stop = extent[1] if extent else bad
            st.stopped = "broken"
            yield Damage(
                Finding(
                    RMQ_CL_UNREADABLE_REGION,
                    task.path,
                    bad,
                    f"no valid record after the broken one: {stop - bad} bytes up to position {stop} cannot be read",
                    length=stop - bad,
                    severity=level,
                ),
                covers=(base + bad, base + max(stop, bad + 1)),
                skipped=f.size - bad,
                cause="region",
                at=bad,
            )
            return None
        region = Finding(
            RMQ_CL_UNREADABLE_REGION,
            task.path,
            bad,
            f"{resume - bad} bytes between the broken record and the next valid record at {resume} were skipped",
            length=resume - bad,
            severity=level,
        )
    yield Damage(region, covers=(base + bad, base + resume), skipped=resume - bad, cause="region", at=bad)
    return resume


def _torn_damage(task: CommitLogTask, torn: rmq.TornTail, base: int) -> Damage:
    # what the judgement read of the bytes from the torn record on, for a reading kept for a recover plan
    tails: dict[int, tuple[int, int] | None] | None = {torn.position: torn.extent} if task.keep_reading and torn.extent is not None else None
    return Damage(model.torn_tail_finding(task.path, torn.position, torn), covers=torn.damaged(base), torn=True, cause="torn", at=torn.position, tails=tails)


def _blank_damage(f: ReadOnlyFile, task: CommitLogTask, base: int, pos: int, total: int) -> Iterator[Damage]:
    """The END_OF_FILE record at ``pos`` (``total`` its TOTALSIZE) and the bytes after its header."""
    # the configured size: a file of the wrong size is RMQ-FILE-SIZE
    blank = model.blank_size_finding(task.path, pos, total, task.file_size)
    if blank is not None:
        yield Damage(blank)
    if task.is_last:
        yield Damage(Finding(RMQ_CL_VALID_END, task.path, pos, f"valid data ends at commitlog offset {base + pos} (END_OF_FILE)"))
    extent = nonzero_extent(f, pos + 8)
    if extent is not None:
        first, stop = extent
        yield Damage(
            Finding(
                RMQ_CL_AFTER_BLANK,
                task.path,
                first,
                f"{stop - first} non-zero bytes after the END_OF_FILE header; never read by the broker "
                "(4.x writes the whole blank from its reused encode buffer, 5.x only the 8-byte header)",
                length=stop - first,
            )
        )


# --- the recovery reading as records -------------------------------------------------------------


class FileRecords:
    """``(position, MessageRecord)`` of one CommitLog file, in file order, from the walk's
    recovery reading (``CommitLogTask.recovery``, every record by the precise decoder): the
    records upstream ``CommitLog.recoverNormally`` takes, to where it stops taking them.

    After iteration: ``end`` is the clean end (a ``DataEnd`` with file positions: ``blank``,
    ``zeros``, ``eof``, ``partial``, and with ``last`` ``torn`` -- ``torn`` then holds the torn
    tail -- or ``stale``, ``stale_claim`` the offset its first record claims), or ``error`` is the
    located error of the first broken record, at ``failed_at``.  ``last``: the newest file (a
    torn tail or stale data ends its data, neither yielded); ``file_size``: the configured size
    (the file's own when not given).  ``base``: the commitlog offset the file's name says -- each
    record is judged against it (``record_findings``: what validate states about the records
    read, in file order; ``own``/``code``: those of the record just yielded); None for a file
    whose name is no such offset (nothing is judged, no stale copy looked for).
    ``keep_damaged``: a record whose frame holds around a failed body CRC is yielded too and the
    reading goes on after it (``damaged`` maps its position to its located error), as the broker
    serves it.  ``limit``: no byte at or after it is read (the reading ends there, ``eof``).
    ``piece``: bytes per read (0: ``store.files.piece_size()``)."""

    def __init__(
        self,
        f: ReadOnlyFile,
        start: int = 0,
        *,
        check_crc: bool = True,
        last: bool = False,
        file_size: int | None = None,
        base: int | None = None,
        keep_damaged: bool = False,
        limit: int | None = None,
        piece: int = 0,
    ) -> None:
        self.f = f
        self.base = base
        self.start = start
        self.file_size = file_size or f.size
        self.task = CommitLogTask(
            str(f.path),
            base or 0,
            self.file_size,
            last,
            piece=piece,
            fast=False,
            check_crc=check_crc,
            keep_damaged=keep_damaged,
            start=start,
            recovery=True,
            judge_records=base is not None,
            limit=limit,
        )
        self.end: DataEnd | None = None
        self.error: MqError | None = None
        self.failed_at: int | None = None
        self.torn: rmq.TornTail | None = None
        self.stale_claim = -1
        self.damaged: dict[int, MqError] = {}
        self.record_findings: list[Finding] = []
        self.own: list[Finding] = []
        self.code: str | None = None
        self.count = 0
        #: the non-zero extents after positions the reading judged (``nonzero_extent``), for a
        #: reader judging the same bytes next (``FileReading.tails``)
        self.tails: dict[int, tuple[int, int] | None] = {}

    @property
    def data_end(self) -> de.DataEnd[str] | None:
        """Where and why the reading ended: ``end``, or the broken record (kind ``broken``, its
        located ``error``, at ``failed_at``); None before the reading ended."""
        if self.error is not None and self.failed_at is not None:
            return de.DataEnd("broken", self.failed_at, error=self.error)
        return cast("de.DataEnd[str] | None", self.end)

    @property
    def valid_end(self) -> int:
        """Position where the valid records stop."""
        if self.end is not None:
            return self.end.position
        return self.failed_at if self.failed_at is not None else self.start

    def __iter__(self) -> Iterator[tuple[int, MessageRecord]]:
        own: list[Finding] = []
        for ev in read_events(self.f, self.task):
            if type(ev) is Record:
                self.count += 1
                if own or ev.error is not None or self.own:  # a record with findings, or the one after it
                    self.own, self.code = own, ev.code
                    if own:
                        self.record_findings.extend(own)
                        own = []
                    if ev.error is not None:
                        self.damaged[ev.position] = ev.error
                yield ev.position, ev.record
            elif type(ev) is Damage:
                if ev.finding is not None:
                    own.append(ev.finding)
            elif type(ev) is FileWalked:
                self.ended(ev)

    def ended(self, walked: FileWalked) -> None:
        """The reading ended as ``walked`` says: its own end, or, for a reading that starts where
        validate's reading marked the recovery's end (:class:`RecoveryEnd`, at ``start``), that
        end, taken without reading (no record lies between)."""
        if walked.tails:
            self.tails.update(walked.tails)
        if walked.kind == "broken":
            self.error, self.failed_at = walked.end.error, walked.valid_end
        else:
            self.end = DataEnd(cast("EndKind", walked.kind), walked.valid_end, walked.end.length)
            self.torn, self.stale_claim = walked.torn, walked.claim

    def finding_code(self, position: int) -> str | None:
        """The code of the first finding validate states about the record just yielded at file
        ``position`` (a kept record's body CRC, RMQ-CL-BODY-CRC; else ``record_findings``'s);
        None for a healthy record."""
        exc = self.damaged.get(position)
        if exc is not None:
            return rmq.broken_record_code(exc)
        return self.code if self.own else None
