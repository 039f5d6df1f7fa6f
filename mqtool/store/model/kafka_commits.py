"""The committed offsets one ``__consumer_offsets`` segment holds, folded by the store model's walk
of the segment (a ``kafka_segment.SegmentFold``), so that whoever needs them (``lag``, ``clean``,
``report``) takes them from the reading that judges the segment instead of reading it again.

The broker's ``GroupMetadataManager`` loads a group coordinator partition from its log start
offset on, record by record: an ``OffsetCommitKey`` with an ``OffsetCommitValue`` sets a group's
committed offset of a partition, with a null value (a tombstone) it removes it, the latest record
winning; commits inside a transaction count only once committed, so transactional and control
batches are skipped here (as mqtool always did).  The walk stops at the first entry that does not
decode with its CRC checked (``FileRecords`` batches a consumer reads stop there too).

A segment's fold keeps, for each ``(topic, partition, group)``, the records that can be the last
one at or after any log start offset (``SegmentCommits.events``: each later record drops the
earlier ones at or below its offset, so a healthy segment keeps one), and the records' decoding
problems with their offsets: the log start offset, read when the segments are merged
(``merge``), is not the fold's business, so one fold serves every reader.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from mqtool.errors import ChecksumError, MqError, UnsupportedFormatError
from mqtool.formats.kafka import internal_topics as it
from mqtool.formats.kafka import record_batch as rb
from mqtool.store import kafka as ks
from mqtool.store.model.kafka_entries import EntryDecode, FirstWalk, Folds, ScannedEntry
from mqtool.store.model.kafka_segment import TAIL_KEPT, DeepRangeTask, SegmentResult, SegmentTask

#: ``(topic, partition, group)`` of an offset commit
CommitKey = tuple[str, int, str]
#: (record offset, committed offset; None for a tombstone)
Commit = tuple[int, int | None]


@dataclass
class SegmentCommits:
    """What :class:`CommitsFold` made of one segment: per commit key, the records that may be the
    last one at or after a log start offset, in file order with decreasing record offsets;
    ``problems``: (record offset, error) of each record that is not a coordinator record, then
    (None, error) for the broken entry that stopped the walk; ``unread``: the ``.log`` could not
    be read (its reader's own error says why); ``header_walk``."""

    events: dict[CommitKey, list[Commit]] = field(default_factory=dict)
    problems: list[tuple[int | None, MqError]] = field(default_factory=list)
    unread: bool = False
    #: the same walk's entries whose header and CRC read, up to the first that does not: (their
    #: largest last offset, None for none; their largest timestamp, -1 for none) -- what
    #: ``kafka_reads``' walk from 0 makes of the file (``next_offset_from``, ``largest_batch_timestamp``)
    header_walk: tuple[int | None, int] = (None, -1)
    #: that walk's last ``TAIL_KEPT`` entries as ``SegmentResult.tail`` keeps them (the walk from
    #: the last ``.index`` entry of ``next_offset_from``)
    header_tail: list[tuple[int, int, bool]] = field(default_factory=list)


@dataclass(frozen=True)
class CommitsFold:
    """The fold of a ``__consumer_offsets`` segment's commits (``kafka_segment.SegmentFold``):
    picklable, compared by value (it has no parameter: every reader folds alike)."""

    @property
    def decode(self) -> EntryDecode:
        return EntryDecode("full", True)

    def start(self, task: SegmentTask) -> CommitsFolder:
        return CommitsFolder(task)


class CommitsFolder:
    """The commits of one segment, fed each entry of the model's first walk of it."""

    def __init__(self, task: SegmentTask) -> None:
        self.task = task
        self.result = SegmentCommits()
        self.stopped = False
        self.headers_over = False
        self.tail: deque[tuple[int, int, bool]] = deque(maxlen=TAIL_KEPT)

    def _header(self, item: ScannedEntry) -> None:
        """``header_walk``: the entry as a ``header`` walk with its CRC checked reads it."""
        entry = item.entry if item.error is None or isinstance(item.error, UnsupportedFormatError) else None
        if entry is None and not isinstance(item.error, ChecksumError):  # its records do not decode: its header?
            try:
                entry = item.decoded("header")
            except MqError:
                entry = None
        h = entry.header if entry is not None else None
        if entry is None or h is None:
            self.headers_over = True
            self.tail.append((item.position, -1, False))
            return
        off = h.last_offset if isinstance(h, rb.BatchHeader) else entry.offset
        self.tail.append((item.position, off, True))
        last, best = self.result.header_walk
        self.result.header_walk = (
            off if last is None else max(last, off),
            max(best, h.max_timestamp if isinstance(h, rb.BatchHeader) else h.timestamp),
        )

    def entry(self, item: ScannedEntry) -> None:
        if item.resumed:
            return
        if not self.headers_over:
            self._header(item)
        if self.stopped:
            return
        entry, error = item.entry, item.error
        if entry is None or error is not None:  # the walk that stops at a broken entry stops here
            self.stopped = True
            if error is not None:
                self.result.problems.append((None, error))
            return
        h = entry.header
        if isinstance(h, rb.BatchHeader) and (h.is_control_batch or h.is_transactional):
            return
        events = self.result.events
        for record in entry.records or ():
            try:
                key, value = it.decode_consumer_offsets_record(record.key, record.value)
            except MqError as exc:
                if exc.path is None:
                    exc.path = self.task.log
                self.result.problems.append((record.offset, exc))
                continue
            if not isinstance(key, it.OffsetCommitKey):
                continue
            kept = events.setdefault((key.topic, key.partition, key.group), [])
            while kept and kept[-1][0] <= record.offset:
                kept.pop()  # never the last at or after any start: this record is later and not lower
            kept.append((record.offset, value.offset if isinstance(value, it.OffsetCommitValue) else None))

    def finish(self, result: SegmentResult, first_walk: FirstWalk | None) -> SegmentCommits:
        self.result.unread = first_walk is None
        self.result.header_tail = list(self.tail)
        return self.result


def commits_of(task: SegmentTask | DeepRangeTask, result: SegmentResult) -> SegmentCommits | None:
    """What :class:`CommitsFold` made of the segment ``task`` read (alone or among other folds:
    ``kafka_segment.Folds``), None when its walk did not fold the commits."""
    if not isinstance(task, SegmentTask):
        return None
    fold, made = task.fold, result.fold_result
    if isinstance(fold, Folds):
        _ok, made = fold.part(CommitsFold(), made)
    elif not isinstance(fold, CommitsFold):
        return None
    return made if isinstance(made, SegmentCommits) else None


def is_commits_partition(part: ks.KafkaPartition) -> bool:
    """A partition of the group coordinator's topic (not one being deleted or moved)."""
    return part.topic == ks.CONSUMER_OFFSETS and part.suffix is None


@dataclass
class Committed:
    """The merge of the segments' commits (``merge``): ``table`` as ``KafkaCommitted.table``,
    ``problems`` in file order."""

    table: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    problems: list[MqError] = field(default_factory=list)


def merge(into: Committed, got: SegmentCommits, start: int) -> None:
    """Apply one segment's commits to ``into`` (segments in file order), counting only the records
    at or after ``start`` (the partition's log start offset): each key's last such record sets or
    removes its group's offset; a partition any such record names is in the table, even when its
    last record removes the last group (as reading the records one by one makes it)."""
    for (topic, partition, group), kept in got.events.items():
        last = next((commit for commit in reversed(kept) if commit[0] >= start), None)
        if last is None:
            continue
        groups = into.table.setdefault((topic, partition), {})
        if last[1] is not None:
            groups[group] = last[1]
        else:
            groups.pop(group, None)
    into.problems.extend(exc for offset, exc in got.problems if offset is None or offset >= start)


__all__ = ["Commit", "CommitKey", "Committed", "CommitsFold", "CommitsFolder", "SegmentCommits", "commits_of", "is_commits_partition", "merge"]
