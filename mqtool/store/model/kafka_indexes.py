"""A Kafka segment's index files as the store model's walk of its ``.log`` consumes them, side by side
with the log (``store.model.kafka_segment``'s checker).

``_IndexStream`` streams one ``.index`` (``OffsetIndex``), ``.timeindex`` (``TimeIndex``) or
``.txnindex`` (``TransactionIndex``) entry by entry, in bounded reads: its size and entries as the
broker's index readers take them (a trailing partial entry, a pre-allocated zero tail, the unused
slot of an empty index), stated as findings on the segment's result; the checker matches each
entry against the batch it points at.  ``IndexFileResult`` is what the stream says of its file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar, cast

from mqtool.errors import MqError, StoreIOError
from mqtool.findings import Finding, Severity
from mqtool.findings.code_ids import (
    KAFKA_FILE_UNREADABLE,
    KAFKA_INDEX_ORDER,
    KAFKA_INDEX_SIZE,
    KAFKA_INDEX_ZERO_TAIL,
    KAFKA_TXNINDEX_ENTRY,
)
from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import txn_index as ktxn
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model import kafka_broker

if TYPE_CHECKING:
    from mqtool.store.model.kafka_segment import SegmentResult

W = Severity.warning

#: The entry type of an ``_IndexStream``: ``OffsetPosition``, ``TimestampOffset`` or ``AbortedTxn``.
IndexEntry = TypeVar("IndexEntry")


@dataclass
class IndexFileResult:
    path: str
    family: str
    size: int
    entries: int = 0
    valid_bytes: int | None = None


class _IndexStream(Generic[IndexEntry]):
    """One index file consumed in step with the log: ``current`` / ``advance()`` over its entries.

    Walker errors become findings (and end the stream); a pre-allocated zero tail is reported
    once; entry 0 that is all zero with nothing after it is an unused slot, not an entry.
    """

    STEP = {"index": kidx.OFFSET_ENTRY_SIZE, "timeindex": kidx.TIME_ENTRY_SIZE, "txnindex": ktxn.ENTRY_SIZE}

    def __init__(self, path: str | None, kind: str, base_offset: int, res: SegmentResult, is_last: bool) -> None:
        self.path = path
        self.kind = kind
        self.res = res
        self.is_last = is_last
        self.current: tuple[int, IndexEntry] | None = None
        self.last_entry: IndexEntry | None = None
        self.count = 0
        self.summary: IndexFileResult | None = None
        self._file: ReadOnlyFile | None = None
        self._walk: ks.IndexFileWalk | None = None
        self._gen: Iterator[tuple[int, IndexEntry]] | None = None
        self._dropped_zero_slot = False
        if path is None:
            return
        try:
            self._file = ReadOnlyFile(path)
        except MqError as exc:
            res.findings.append(Finding(KAFKA_FILE_UNREADABLE, path, None, str(exc)))
            return
        self.summary = IndexFileResult(path, "index", self._file.size)
        res.indexes.append(self.summary)
        step = self.STEP[kind]
        extra = self._file.size % step
        if extra and kind != "txnindex":
            res.findings.append(
                Finding(
                    KAFKA_INDEX_SIZE,
                    path,
                    self._file.size - extra,
                    f"expected a size that is a multiple of {step} bytes, found {self._file.size} ({extra} trailing bytes): " + kafka_broker.INDEX_SIZE_CONSEQUENCE,
                    length=extra,
                )
            )
        self._walk = ks.IndexFileWalk(self._file, kind, base_offset)  # type: ignore[arg-type]
        self._gen = self._entries()
        self.advance()

    @property
    def file(self) -> str:
        """The index file's path (only a stream with a file has entries and findings)."""
        assert self.path is not None
        return self.path

    def _entries(self) -> Iterator[tuple[int, IndexEntry]]:
        walk = self._walk
        assert walk is not None
        # the walk yields the entry type of its kind, which this stream was made for
        it = cast(Iterator[tuple[int, IndexEntry]], iter(walk))
        first = next(it, None)
        if first is None:
            return
        if walk.first_is_zero:
            second = next(it, None)
            if second is None:
                self._dropped_zero_slot = True  # entry 0 all zero, nothing after it: no entry
                return
            yield first
            yield second
        else:
            yield first
        yield from it

    def advance(self) -> None:
        if self._gen is None:
            self.current = None
            return
        try:
            self.current = next(self._gen)
        except StopIteration:
            self.current = None
            self._gen = None
            self._finish()
            return
        except StoreIOError as exc:
            self.current = None
            self._gen = None
            self.res.findings.append(Finding(KAFKA_FILE_UNREADABLE, self.file, exc.position, str(exc)))
            return
        self.count += 1
        self.last_entry = self.current[1]

    def _finish(self) -> None:
        walk = self._walk
        assert walk is not None and self.summary is not None
        if walk.error is not None:
            code = KAFKA_TXNINDEX_ENTRY if self.kind == "txnindex" else KAFKA_INDEX_ORDER
            self.res.findings.append(Finding(code, self.file, walk.error.position, walk.error.reason))
            return
        end = walk.end
        assert end is not None  # the walk ended without an error
        if self._dropped_zero_slot:
            self._zero_tail(0)
        elif end.kind == "zeros":
            self._zero_tail(end.position)
        elif end.kind == "partial" and self.kind == "txnindex":
            self.res.findings.append(
                Finding(
                    KAFKA_TXNINDEX_ENTRY,
                    self.file,
                    end.position,
                    f"{end.length} trailing bytes, less than a {ktxn.ENTRY_SIZE}-byte entry (a torn append; the broker ignores them)",
                    length=end.length,
                    severity=W,
                )
            )
        else:
            self.summary.valid_bytes = end.position

    def _zero_tail(self, position: int) -> None:
        assert self.summary is not None and self._file is not None
        self.summary.valid_bytes = position
        length = self._file.size - position
        if length <= 0:
            return
        if self.kind == "txnindex":
            self.res.findings.append(Finding(KAFKA_TXNINDEX_ENTRY, self.file, position, f"{length} zero bytes after the last entry", length=length, severity=W))
            return
        why = (
            "the active segment's index stays pre-allocated until the broker rolls or closes it"
            if self.is_last
            else "a segment before the last should have a trimmed index (the broker trusts fileLength/entrySize entries)"
        )
        self.res.findings.append(
            Finding(
                KAFKA_INDEX_ZERO_TAIL,
                self.file,
                position,
                f"{length} bytes of unused zero slots after {self.count} entr{'y' if self.count == 1 else 'ies'}: {why}",
                length=length,
                severity=None if self.is_last else W,
            )
        )

    def close(self) -> None:
        if self.summary is not None:
            self.summary.entries = self.count
        if self._file is not None:
            self._file.close()
