"""dump: stream every record of a file family, with filters.

Each ``iter_*`` engine yields ``(location, item)`` pairs lazily and collects the problems it met
(``problems``) instead of printing: the CLI decides how to show them.  A broken record ends the
walk of *its file* (where the broker's own recovery would stop too) and the next file is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from mqtool.errors import MqError, StoreLayoutError
from mqtool.formats.rocketmq.commitlog import DataEnd, MessageRecord
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, is_directory, is_regular_file


@dataclass(frozen=True)
class RecordFilter:
    topic: str | None = None
    queue_id: int | None = None
    from_offset: int | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    key: str | None = None

    def accepts(self, record: MessageRecord) -> bool:
        if self.topic is not None and record.topic != self.topic:
            return False
        if self.queue_id is not None and record.queue_id != self.queue_id:
            return False
        if self.since_ms is not None and record.store_timestamp < self.since_ms:
            return False
        if self.until_ms is not None and record.store_timestamp > self.until_ms:
            return False
        if self.key is not None and self.key not in record.keys and record.uniq_key != self.key:
            return False
        return True


@dataclass(frozen=True)
class Located:
    """Where an item sits: file, byte position, and the global (commitlog/queue) address."""

    path: Path
    position: int
    address: int


@dataclass(frozen=True)
class FileEnd:
    """How one file's walk ended (for the summary line and JSON trailer)."""

    path: Path
    end: DataEnd | None
    records: int
    error: MqError | None


@dataclass
class CommitLogDump:
    """Iterate the records of CommitLog files in order, applying a filter and a limit."""

    files: list[rmq.Segment]
    filter: RecordFilter = field(default_factory=RecordFilter)
    limit: int | None = None
    check_crc: bool = True
    problems: list[MqError] = field(default_factory=list)
    ends: list[FileEnd] = field(default_factory=list)
    bytes_done: int = 0

    def __iter__(self) -> Iterator[tuple[Located, MessageRecord]]:
        emitted = 0
        start_at = self.filter.from_offset
        for seg in self.files:
            if start_at is not None and seg.size and seg.base + seg.size <= start_at:
                self.bytes_done += seg.size
                continue
            if seg.size == 0:
                self.ends.append(FileEnd(seg.path, DataEnd("eof", 0), 0, None))
                continue
            with ReadOnlyFile(seg.path) as f:
                walk = rmq.CommitLogFileWalk(f, check_crc=self.check_crc)
                last = 0
                for pos, record in walk:
                    self.bytes_done += pos + record.total_size - last
                    last = pos + record.total_size
                    if start_at is not None and seg.base + pos < start_at:
                        continue
                    if not self.filter.accepts(record):
                        continue
                    yield Located(seg.path, pos, seg.base + pos), record
                    emitted += 1
                    if self.limit is not None and emitted >= self.limit:
                        return
                self.bytes_done += f.size - last
                if walk.error is not None:
                    self.problems.append(walk.error)
                self.ends.append(FileEnd(seg.path, walk.end, walk.count, walk.error))

    @property
    def total_bytes(self) -> int:
        return sum(s.size for s in self.files)


def commitlog_files(path: Path) -> list[rmq.Segment]:
    """CommitLog files for PATH: a store root, the ``commitlog/`` dir, or one file."""
    path = Path(path)
    if is_regular_file(path):
        st = path.stat()
        base = int(path.name) if rmq.SEGMENT_NAME.match(path.name) else 0
        return [rmq.Segment(path, base, st.st_size, st.st_mtime)]
    if is_directory(path):
        if rmq.is_rocketmq_root(path):
            return rmq.list_segments(path / "commitlog")
        segments = rmq.list_segments(path)
        if segments:
            return segments
    if not path.exists():
        raise StoreLayoutError("no such file or directory", path=path)
    raise StoreLayoutError(expected="a store root, a commitlog/ directory or a CommitLog file", found="none of them", path=path)
