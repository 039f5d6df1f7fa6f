"""A Kafka segment's indexes checked against its ``.log`` as the store model's walk reads it
(``kafka_segment``'s checker): every ``.index`` entry must point at the start of a batch and hold
its last offset (``OffsetIndex``; a multi-batch append's entry the last offset of a later batch of
it), every ``.timeindex`` entry the largest timestamp so far at an offset of the batch holding it
(``TimeIndex``), every ``.txnindex`` entry an ABORT marker of its producer at its last offset and
every such marker an entry (``TransactionIndex``, ``LogSegment.recover`` ->
``ProducerStateManager``); the entries left when the walk is over lie past the valid data.

The index files are read side by side with the log (:mod:`mqtool.store.model.kafka_indexes`'
streams); :class:`IndexChecks` is told each batch the walk judges (``batch``), each damaged batch
whose framing holds (``damaged``), each ABORT marker (``abort``), and the end (``finish``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import (
    KAFKA_INDEX_MULTI_BATCH,
    KAFKA_INDEX_OFFSET,
    KAFKA_INDEX_POSITION,
    KAFKA_TIMEINDEX_ENTRY,
    KAFKA_TIMEINDEX_STALE,
    KAFKA_TXNINDEX_ENTRY,
    KAFKA_TXNINDEX_MISSING,
)
from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import txn_index as ktxn
from mqtool.store.model.kafka_indexes import _IndexStream

if TYPE_CHECKING:
    from mqtool.store.model.kafka_segment import SegmentResult, SegmentTask

W = Severity.warning


class IndexChecks:
    """The ``.index``, ``.timeindex`` and ``.txnindex`` of one segment, each entry matched against
    the batch the walk reads where it points (findings on ``res``)."""

    def __init__(self, task: SegmentTask, res: SegmentResult) -> None:
        self.t = task
        self.res = res
        self.path = task.log
        self.oi: _IndexStream[kidx.OffsetPosition] = _IndexStream(task.index, "index", task.base_offset, res, task.is_last)
        self.ti: _IndexStream[kidx.TimestampOffset] = _IndexStream(task.timeindex, "timeindex", task.base_offset, res, task.is_last)
        self.tx: _IndexStream[ktxn.AbortedTxn] = _IndexStream(task.txnindex, "txnindex", task.base_offset, res, task.is_last)
        #: an ``.index`` entry whose offset is past its batch's: a multi-batch append's, while
        #: a later batch of it may hold that offset
        self.pending: tuple[int, kidx.OffsetPosition] | None = None
        self.multi_batch = 0
        #: the largest timestamp of the batches so far
        self.running_max_ts = -1

    def close(self) -> None:
        for stream in (self.oi, self.ti, self.tx):
            stream.close()

    def batch(self, pos: int, lower: int, last: int, before: int | None, max_ts: int) -> None:
        """A batch the walk judged at ``pos``, holding offsets ``lower..last`` and ``max_ts``;
        ``before``: the position of the batch before it (None: none)."""
        self._match_offset_index(pos, lower, last, before)
        self._match_time_index(pos, lower, last, max_ts)
        if max_ts > self.running_max_ts:
            self.running_max_ts = max_ts

    def damaged(self, pos: int, lower: int, last: int, before: int | None) -> None:
        """A batch whose CRC fails but whose framing holds, its offsets in step with its
        neighbours': its ``.index`` entry is matched, its ``.timeindex`` entries passed over (its
        max timestamp cannot be checked)."""
        self._match_offset_index(pos, lower, last, before)
        ti = self.ti
        while ti.current is not None and ti.current[1].offset <= last:
            ti.advance()

    def abort(self, pos: int, pid: int, offset: int) -> None:
        """An ABORT marker of producer ``pid`` at ``offset`` (the control batch at ``pos``)."""
        self._match_abort(pos, pid, offset)

    def _match_offset_index(self, pos: int, lower: int, last: int, before: int | None) -> None:
        oi = self.oi
        pending = self.pending
        if pending is not None:
            nxt = oi.current
            if nxt is not None and nxt[1].position <= pos:
                self._index_offset_error(pending, "the batches of its append end before the next entry's position")
                self.pending = None
            elif last == pending[1].offset:
                self.multi_batch += 1
                self.pending = None
            elif last > pending[1].offset:
                self._index_offset_error(pending, f"the batches after it skip past it (the batch at {pos} holds {lower}..{last})")
                self.pending = None
        while oi.current is not None and oi.current[1].position < pos:
            ipos, e = oi.current
            where = f"inside the entry at {before}" if before is not None else "before the first entry"
            self.res.findings.append(
                Finding(
                    KAFKA_INDEX_POSITION,
                    oi.file,
                    ipos,
                    f"entry for offset {e.offset}: expected the position of a batch start, found {e.position} ({where})",
                )
            )
            oi.advance()
        cur = oi.current
        if cur is None or cur[1].position != pos:
            return
        offset = cur[1].offset
        if lower <= offset <= last:
            pass  # the batch's last offset (recovery, one-batch appends) or inside it (Kafka <= 0.10: the first)
        elif offset > last and self.pending is None:
            self.pending = cur
        else:
            self.res.findings.append(
                Finding(
                    KAFKA_INDEX_OFFSET,
                    oi.file,
                    cur[0],
                    f"entry at log position {pos}: expected offset {last} (the last offset of the batch there, {lower}..{last}) "
                    f"or the last offset of a later batch of the same append, found {offset}",
                )
            )
        oi.advance()

    def _index_offset_error(self, pending: tuple[int, kidx.OffsetPosition], why: str) -> None:
        ipos, e = pending
        self.res.findings.append(
            Finding(
                KAFKA_INDEX_OFFSET,
                self.oi.file,
                ipos,
                f"entry at log position {e.position}: expected an offset of the batch there or the last offset of a later batch "
                f"of the same append, found {e.offset} ({why})",
            )
        )

    def _match_time_index(self, pos: int, lower: int, last: int, max_ts: int) -> None:
        ti = self.ti
        while ti.current is not None and ti.current[1].offset <= last:
            ipos, e = ti.current
            if e.offset < lower:
                msg = f"entry ({e.timestamp}, offset {e.offset}): expected an offset inside a batch, found one before the batch at {pos} ({lower}..{last})"
            elif e.timestamp != max_ts:
                msg = f"entry for offset {e.offset}: expected timestamp {max_ts} (the max timestamp of the batch at {pos} holding it), found {e.timestamp}"
            elif self.running_max_ts > e.timestamp:
                msg = (
                    f"entry ({e.timestamp}, offset {e.offset}): an earlier batch has the larger timestamp {self.running_max_ts}, "
                    "so the entry is not the largest timestamp so far"
                )
            else:
                msg = None
            if msg is not None:
                self.res.findings.append(Finding(KAFKA_TIMEINDEX_ENTRY, ti.file, ipos, msg))
            ti.advance()

    def _match_abort(self, pos: int, pid: int, offset: int) -> None:
        tx = self.tx
        while tx.current is not None and tx.current[1].last_offset < offset:
            self._txn_no_marker(*tx.current)
            tx.advance()
        cur = tx.current
        if cur is not None and cur[1].last_offset == offset:
            ipos, e = cur
            if e.producer_id != pid:
                self.res.findings.append(
                    Finding(
                        KAFKA_TXNINDEX_ENTRY,
                        tx.file,
                        ipos + ktxn.PRODUCER_ID_POSITION,
                        f"aborted transaction ending at offset {offset}: expected producer {pid} (the ABORT marker's), found {e.producer_id}",
                    )
                )
            elif e.first_offset > offset:
                self.res.findings.append(
                    Finding(
                        KAFKA_TXNINDEX_ENTRY,
                        tx.file,
                        ipos + ktxn.FIRST_OFFSET_POSITION,
                        f"aborted transaction of producer {pid}: expected firstOffset <= lastOffset {offset}, found {e.first_offset}",
                    )
                )
            tx.advance()
            return
        self.res.findings.append(
            Finding(
                KAFKA_TXNINDEX_MISSING,
                self.path,
                pos,
                f"ABORT marker of producer {pid} at offset {offset} has no entry in "
                f"{Path(tx.path).name if tx.path else 'a .txnindex (there is none)'}: read_committed consumers would receive the aborted records",
                severity=W if self.t.is_last else None,
            )
        )

    def _txn_no_marker(self, ipos: int, e: ktxn.AbortedTxn) -> None:
        self.res.findings.append(
            Finding(
                KAFKA_TXNINDEX_ENTRY,
                self.tx.file,
                ipos + ktxn.LAST_OFFSET_POSITION,
                f"aborted transaction of producer {e.producer_id}: expected an ABORT marker of that producer at offset {e.last_offset}, found none",
            )
        )

    def finish(self, prev_pos: int | None, prev_last: int | None, first_break: int | None, size: int) -> None:
        """The index entries the walk did not reach, once it is over (``res.valid_end`` set):
        past the valid data, or stale; ``prev_pos``, ``prev_last``: the last batch's position and
        offset (None: none read), ``first_break``: the first broken entry's position, ``size``:
        the ``.log``'s."""
        end = self.res.valid_end
        sev = W if self.t.is_last else None
        if self.pending is not None:
            self._index_offset_error(self.pending, "no later batch has it")
            self.pending = None
        past = []
        while self.oi.current is not None:
            past.append(self.oi.current)
            self.oi.advance()
        if past:
            ipos, e = past[0]
            inside = e.position < end
            self.res.findings.append(
                Finding(
                    KAFKA_INDEX_POSITION,
                    self.oi.file,
                    ipos,
                    f"{len(past)} entr{'y' if len(past) == 1 else 'ies'} from offset {e.offset} at log position {e.position}: "
                    + (f"expected a batch start, found a position inside the last batch at {prev_pos}" if inside else f"past the end of the valid data at {end}"),
                    severity=None if inside else sev,
                )
            )
        if self.multi_batch:
            self.res.findings.append(
                Finding(
                    KAFKA_INDEX_MULTI_BATCH,
                    self.oi.file,
                    None,
                    f"{self.multi_batch} entr{'y was' if self.multi_batch == 1 else 'ies were'} written by multi-batch appends "
                    "(follower fetch or cleaner): the last batch's offset at the first batch's position; lookups are correct",
                )
            )
        past_t = []
        while self.ti.current is not None:
            past_t.append(self.ti.current)
            self.ti.advance()
        if past_t:
            ipos, te = past_t[0]
            past_what = _past_the_log(prev_last, first_break, size)
            self.res.findings.append(
                Finding(
                    KAFKA_TIMEINDEX_ENTRY,
                    self.ti.file,
                    ipos,
                    f"{len(past_t)} entr{'y' if len(past_t) == 1 else 'ies'} from offset {te.offset}: expected offsets of the log, found {past_what}",
                    severity=sev,
                )
            )
        if not self.t.is_last and self.running_max_ts >= 0 and first_break is None:
            last_entry = self.ti.last_entry
            if last_entry is None or last_entry.timestamp < self.running_max_ts:
                found = f"{last_entry.timestamp}" if last_entry is not None else "no entry"
                self.res.findings.append(
                    Finding(
                        KAFKA_TIMEINDEX_STALE,
                        self.t.timeindex or self.path,
                        None,
                        f"expected a last entry with the segment's largest timestamp {self.running_max_ts}, found {found}: "
                        "time-based retention judges the segment by that entry (or the file's mtime)",
                    )
                )
        while self.tx.current is not None:
            self._txn_no_marker(*self.tx.current)
            self.tx.advance()


def _past_the_log(prev_last: int | None, first_break: int | None, size: int) -> str:
    """What index entries left over after the walk lie past, in words (the segment may have
    no readable batch, so no last offset)."""
    if prev_last is not None:
        return f"offsets past its last offset {prev_last}"
    if first_break is not None:
        why = f"its first entry, at position {first_break}, is broken"
    elif size == 0:
        why = "the .log is empty"
    else:
        why = f"its {size} bytes hold no entry"
    return f"offsets of a segment with no readable batch, so no last offset ({why})"
