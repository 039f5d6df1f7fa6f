"""A Kafka segment's batches judged one by one as the store model's walk reads them
(``kafka_segment``'s checker): what ``LogSegment.recover`` and the log loader check of each entry.

A v2 batch (``DefaultRecordBatch``): its length and CRC-32C, the end-transaction marker of a control
batch with a producer id (``LogSegment.recover`` -> ``ProducerStateManager``: a COMMIT or ABORT
control record), partition leader epochs that do not go back (``LeaderEpochFileCache``).  A v0/v1
message (``AbstractLegacyRecordBatch``): its CRC-32 and framing.  Every entry: offsets above the
previous entry's and within the segment's 32-bit relative range (``LogSegment``'s
``LogSegmentOffsetOverflowException``), gaps between batches counted.  A batch whose CRC fails but
whose framing holds keeps the offset and index accounting in step (``damaged``).  Each batch is
handed on to the index cross-checks (:mod:`mqtool.store.model.kafka_index_checks`) and, with
``deep``, to the record checks (:mod:`mqtool.store.model.kafka_record_checks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from mqtool.errors import ChecksumError, CorruptDataError, MqError, UnsupportedFormatError
from mqtool.findings import Finding
from mqtool.findings.code_ids import (
    KAFKA_LOG_CONTROL,
    KAFKA_LOG_CRC,
    KAFKA_LOG_EPOCH,
    KAFKA_LOG_MAGIC,
    KAFKA_LOG_SIZE,
    KAFKA_LOG_UNSUPPORTED,
    KAFKA_OFFSET_GAP,
    KAFKA_OFFSET_ORDER,
    KAFKA_OFFSET_RANGE,
)
from mqtool.formats.kafka import legacy as klegacy
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka.log import LogEntry, decode_entry
from mqtool.store.model.kafka_index_checks import IndexChecks
from mqtool.store.model.kafka_record_checks import V2_MIN_LENGTH, RecordChecks

if TYPE_CHECKING:
    from mqtool.store.model.kafka_segment import SegmentResult, SegmentTask

INT32_MAX = 2**31 - 1


class BatchChecks:
    """The checks of one segment's entries, in the order its walk reads them: the findings and
    counts go to ``res``; ``prev_last`` / ``prev_pos`` are the last offset and position read so far,
    ``first_break`` the position of the first entry that does not read (where recovery truncates)."""

    def __init__(self, task: SegmentTask, res: SegmentResult) -> None:
        self.t = task
        self.res = res
        self.path = task.log
        self.base = task.base_offset
        self.prev_last: int | None = None
        self.prev_pos: int | None = None
        self.max_epoch = -1
        self.gaps = 0
        self.first_gap: tuple[int, int, int] | None = None
        self.first_break: int | None = None
        #: the index cross-checks (None: the indexes are not read)
        self.indexes: IndexChecks | None = None
        self.records = RecordChecks(task, res)

    def find(self, code: str, position: int | None, message: str, **kw: Any) -> None:
        self.res.findings.append(Finding(code, self.path, position, message, **kw))

    def broken(self, position: int) -> None:
        if self.first_break is None:
            self.first_break = position

    def truncation_note(self, position: int) -> str:
        if self.t.kraft_snapshot:
            return ""
        later = "" if self.t.is_last else " and deletes every later segment"
        return f" (recovery truncates the segment at {position}{later})"

    def entry(self, pos: int, entry: LogEntry, buf: bytes, rel: int) -> None:
        """Judge the entry at ``pos`` of the walk (``buf[rel:]``), its framing read."""
        res = self.res
        prior = self.prev_last
        size = entry.size
        magic = entry.magic
        res.entries += 1
        res.magics.add(magic)
        control_abort: int | None = None
        if magic == 2:
            if size - 12 < V2_MIN_LENGTH:
                self._entry_error(pos, buf, rel)
                return
            (base, _blen, ple, _m, stored, attrs, lod, base_ts, max_ts, pid, _pep, _bseq, count) = rb.peek_v2_header(buf, rel)
            if not rb.crc_matches(buf, rel, size, stored):
                self._entry_error(pos, buf, rel)
                self._damaged(pos, base, base + lod)
                return
            lower = base
            last = base + lod
            res.codecs.add(attrs & 7)
            if attrs & rb.CONTROL_FLAG_MASK and pid >= 0:
                control_abort = self._control(pos, buf, rel, pid)
            if ple >= 0:
                self._epoch(pos, ple, base, last)
        else:
            try:
                # a v0/v1 entry's header is its shallow message
                message = cast(klegacy.LegacyRecord, decode_entry(buf, rel, mode="header").header)
            except MqError as exc:
                self._entry_exception(pos, rel, exc)
                if isinstance(exc, ChecksumError):
                    prev = self.prev_last
                    self._damaged(pos, min(prev + 1, entry.offset) if prev is not None else entry.offset, entry.offset)
                return
            last = message.offset
            compressed = message.is_compressed
            lower = (self.prev_last + 1 if self.prev_last is not None else (self.base if self.t.named else last)) if compressed else last
            if compressed and lower > last:
                lower = last
            max_ts = message.timestamp
            res.codecs.add(message.compression_type)
            count = -1
            attrs = message.attributes
        before = self.prev_pos  # the entry an index position below ``pos`` falls inside
        self._offsets(pos, magic, lower, last)
        indexes = self.indexes
        if indexes is not None:
            indexes.batch(pos, lower, last, before, max_ts)
            if control_abort is not None:
                indexes.abort(pos, control_abort, last)
        if self.t.deep and pos >= self.t.deep_from:
            if magic == 2:
                self.records.v2(pos, buf, rel, size, attrs, lod, base_ts, max_ts, count)
            else:
                self.records.legacy(pos, message, prior, last)
        elif not self.t.deep:
            res.records += max(count, 0) if magic == 2 else 1
        if res.first_offset is None:
            res.first_offset = lower
        res.last_offset = last if res.last_offset is None else max(res.last_offset, last)
        if max_ts > res.max_timestamp:
            res.max_timestamp = max_ts

    def _damaged(self, pos: int, lower: int, last: int) -> None:
        """A batch whose CRC fails but whose framing holds (the walk went on after it): its header's
        offsets, when they fit between its neighbours, keep the offset and index accounting in step,
        so its offsets are not reported again as a gap, nor index entries pointing at it as
        misplaced.  Its records stay unverified; the CRC error is the finding."""
        prev = self.prev_last
        if lower > last or (prev is not None and lower <= prev) or (self.t.named and not self.t.kraft_snapshot and lower < self.base):
            return
        if prev is not None and lower > prev + 1:
            self.gaps += 1
            if self.first_gap is None:
                self.first_gap = (pos, prev + 1, lower - 1)
        before = self.prev_pos
        self.prev_last = last
        self.prev_pos = pos
        if self.indexes is not None:
            self.indexes.damaged(pos, lower, last, before)

    def _entry_error(self, pos: int, buf: bytes, rel: int) -> None:
        """The exact error of an entry the fast checks rejected (size or CRC)."""
        try:
            decode_entry(buf, rel, mode="header")
        except MqError as exc:
            self._entry_exception(pos, rel, exc)
            return
        self.broken(pos)
        self.find(KAFKA_LOG_SIZE, pos, "entry rejected" + self.truncation_note(pos))

    def _entry_exception(self, pos: int, rel: int, exc: MqError) -> None:
        """An error of ``decode_entry(buf, rel)``: its position is in the chunk buffer."""
        self.broken(pos)
        if isinstance(exc, ChecksumError):
            code = KAFKA_LOG_CRC
        elif exc.kind == "magic":
            code = KAFKA_LOG_MAGIC
        else:
            code = KAFKA_LOG_SIZE
        position = pos - rel + exc.position if exc.position is not None else pos
        self.find(code, position, exc.reason + self.truncation_note(pos))

    def _control(self, pos: int, buf: bytes, rel: int, pid: int) -> int | None:
        """Recovery decodes the first record of a control batch with a producer id as an
        end-transaction marker; returns the producer id when it is an ABORT."""
        try:
            batch = rb.decode_batch(buf, rel, check_crc=False, max_decompressed_size=self.t.max_decompressed_size)
            if not batch.records:
                raise CorruptDataError(position=rel + rb.RECORDS_COUNT_POSITION, expected="a control record in the control batch", found="no records")
            key, _value = rb.decode_control_record(batch.records[0])
            if key.type not in (rb.ABORT, rb.COMMIT):
                raise CorruptDataError(expected="an ABORT or COMMIT control record (a batch with a producer id)", found=key.type_name)
        except UnsupportedFormatError as exc:
            self.find(KAFKA_LOG_UNSUPPORTED, pos, f"control batch not decoded: {exc.reason}")
            return None
        except MqError as exc:
            self.broken(pos)
            self.find(KAFKA_LOG_CONTROL, pos, f"control batch of producer {pid}: {exc.reason}" + self.truncation_note(pos))
            return None
        return pid if key.type == rb.ABORT else None

    def _epoch(self, pos: int, epoch: int, first: int, last: int) -> None:
        runs = self.res.epochs
        if epoch < self.max_epoch:
            self.find(
                KAFKA_LOG_EPOCH,
                pos + rb.PARTITION_LEADER_EPOCH_POSITION,
                f"expected a partition leader epoch >= {self.max_epoch} (an earlier batch's), found {epoch}",
            )
        else:
            self.max_epoch = epoch
        if runs and runs[-1][0] == epoch:
            runs[-1][2] = last
        else:
            runs.append([epoch, first, last])

    def _offsets(self, pos: int, magic: int, lower: int, last: int) -> None:
        base = self.base
        if self.t.named and not self.t.kraft_snapshot:
            if lower < base:
                self.find(
                    KAFKA_OFFSET_RANGE,
                    pos,
                    f"expected offsets >= the segment's base offset {base}, found a batch starting at {lower} (offsets {lower}..{last})",
                )
            elif last - base > INT32_MAX:
                self.find(
                    KAFKA_OFFSET_RANGE,
                    pos,
                    f"expected offsets below {base + INT32_MAX + 1} (a 32-bit offset relative to the base {base}), found {last} "
                    "(LogSegmentOffsetOverflowException: the broker splits the segment)",
                )
        prev = self.prev_last
        if prev is not None:
            if lower <= prev or last <= prev:
                self.find(
                    KAFKA_OFFSET_ORDER,
                    pos,
                    f"expected offsets after {prev} (the previous entry at {self.prev_pos} ends there), found {lower}..{last}",
                )
            elif lower > prev + 1:
                self.gaps += 1
                if self.first_gap is None:
                    self.first_gap = (pos, prev + 1, lower - 1)
        if prev is None or last > prev:
            self.prev_last = last
        self.prev_pos = pos

    def finish(self) -> None:
        """Once the walk is over: the gaps between batches, in one finding."""
        if self.gaps:
            assert self.first_gap is not None  # set with the first gap
            pos, a, b = self.first_gap
            self.find(
                KAFKA_OFFSET_GAP,
                pos,
                f"{self.gaps} gap(s) between batches (first: offsets {a}..{b} absent before position {pos}); compaction leaves such gaps",
            )
