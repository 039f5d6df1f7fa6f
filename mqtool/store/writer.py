"""A RocketMQ store writer that lays files out the way the broker does.

Used by the fixtures, the tests, ``bench`` and ``recover`` (rebuilds).  It appends messages like
``CommitLog.DefaultAppendMessageCallback.doAppend``:

* CommitLog files are created at their full size (sparse zeros, like the broker's mapping);
  a record is written only if it leaves at least 8 bytes in the file, otherwise a BLANK record
  (TOTALSIZE = bytes left, magic 0xCBD43194) closes the file and the record goes to the next one.
* QUEUEOFFSET comes from a per ``topic-queueId`` counter; PREPARED/ROLLBACK transaction records
  take queue offset 0 and get no ConsumeQueue unit; ROLLBACK records are not indexed.
* The ConsumeQueue unit gets ``tagsCode`` = ``TAGS.hashCode()``, or for ``SCHEDULE_TOPIC_XXXX``
  the delivery time (store time + delay of the ``DELAY`` level).
* Index keys ``topic#UNIQ_KEY`` and ``topic#key`` for every KEYS token go into IndexFiles of
  the configured geometry, a new file when one is full.
* ``close(clean=True)`` writes the checkpoint and removes ``abort`` (a clean shutdown);
  ``close(clean=False)`` leaves ``abort`` behind, like a crash.

How CommitLog bytes reach the disk (``bench`` drives these; the defaults keep the plain
``pwrite`` path of the fixtures):

* ``WriterConfig.io``: ``"write"`` puts records in the file with ``pwrite`` (the broker's
  ``writeWithoutMmap``); ``"mmap"`` maps each CommitLog file like the broker's
  ``MappedByteBuffer`` and copies records into the mapping.
* ``WriterConfig.write_buffer``: ``transientStorePoolEnable``: records land in a write buffer and
  reach the file only when ``commit()`` runs (CommitRealTimeService); until then they are not
  in the file at all.  A full file's buffer is committed when the next file opens.
* Three positions, as the broker's mapped files keep them: ``write_offset`` (appended),
  ``committed_offset`` (in the file, i.e. the page cache) and ``flushed_offset`` (synced).
  ``begin_flush(least_pages)`` snapshots what a flush covers (``isAbleToFlush``: a full file,
  or at least ``least_pages`` 4 KiB pages, or anything when 0) and returns a ``CommitLogSync``
  whose ``run()`` syncs without touching the writer's state, so another thread may keep
  appending meanwhile; ``end_flush`` records the result.  ``flush_commitlog`` does all three.
  A sync is ``fsync(2)`` for ``write``; for ``mmap`` it is ``fdatasync(2)`` on the mapped file,
  which is what ``msync(MS_SYNC)`` does on Linux (CPython's ``mmap.flush`` holds the GIL for
  the whole sync, which would stall every other thread of the process).
"""

from __future__ import annotations

import fcntl
import mmap
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import tzinfo
from pathlib import Path

from mqtool.errors import LockBusyError
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.commitlog import (
    END_FILE_MIN_BLANK_LENGTH,
    MAGIC_V1,
    MAGIC_V2,
    SYSFLAG_TRANSACTION_MASK,
    SYSFLAG_TRANSACTION_PREPARED,
    SYSFLAG_TRANSACTION_ROLLBACK,
    HostAddress,
    MessageRecord,
    encode_blank,
    encode_message,
    encode_offset_msg_id,
)
from mqtool.formats.rocketmq.hashing import DELAY_LEVELS_MS, SCHEDULE_TOPIC, delivery_tags_code, dispatch_tags_code  # noqa: F401  (re-exported)
from mqtool.formats.rocketmq.properties import split_keys


def cq_tags_code(record: MessageRecord) -> int:
    """The ConsumeQueue tagsCode the broker dispatches for ``record``."""
    return dispatch_tags_code(record.topic, record.tags, record.properties.get("DELAY"), record.store_timestamp)


@dataclass(frozen=True)
class AppendResult:
    commitlog_offset: int
    size: int
    queue_offset: int
    msg_id: str
    store_timestamp: int


@dataclass(frozen=True)
class WriterConfig:
    commitlog_file_size: int = 1 << 30
    cq_file_size: int = cqf.CQ_FILE_SIZE
    index_hash_slot_num: int = idxf.DEFAULT_HASH_SLOT_NUM
    index_num: int = idxf.DEFAULT_INDEX_NUM
    enable_index: bool = True
    store_host: HostAddress = HostAddress("127.0.0.1", 10911)
    #: Topics longer than 127 chars use magic v2 (autoMessageVersionOnTopicLen).
    auto_message_version: bool = True
    #: Pre-create the next CommitLog file when one is opened (AllocateMappedFileService).
    preallocate_next: bool = False
    append_crc_property: bool = False
    #: Time zone of IndexFile names (the broker uses its local zone; fixtures use UTC).
    index_tz: tzinfo | None = None
    #: How CommitLog bytes reach the file: ``"write"`` (pwrite) or ``"mmap"`` (a shared mapping).
    io: str = "write"
    #: transientStorePoolEnable: appends wait in a write buffer until ``commit()``.
    write_buffer: bool = False


#: ``OS_PAGE_SIZE``: the unit of ``flushCommitLogLeastPages`` / ``commitCommitLogLeastPages``.
OS_PAGE_SIZE = 4096
IO_MODES = ("write", "mmap")


def _datasync(fd: int) -> None:
    sync = getattr(os, "fdatasync", os.fsync)
    sync(fd)


class _CommitLogFile:
    """One open CommitLog file and how far its bytes got: ``written`` (appended), ``committed``
    (in the file) and ``flushed`` (synced), as positions in the file."""

    def __init__(self, path: Path, base: int, size: int, io: str, buffered: bool) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < size:
                os.ftruncate(fd, size)
            self.map = mmap.mmap(fd, size) if io == "mmap" and not buffered else None
        except BaseException:
            os.close(fd)
            raise
        self.path = path
        self.fd = fd
        self.base = base
        self.buffer = bytearray() if buffered else None  # holds [committed, written)
        self.written = self.committed = self.flushed = 0

    def start_at(self, position: int) -> None:
        """Resuming: what is already in the file counts as written, committed and flushed."""
        self.written = self.committed = self.flushed = position

    def write(self, position: int, data: bytes) -> None:
        if self.buffer is not None:
            if position != self.written:
                raise ValueError(f"buffered CommitLog writes are sequential: {position} after {self.written}")
            self.buffer += data
        elif self.map is not None:
            self.map[position : position + len(data)] = data
        else:
            os.pwrite(self.fd, data, position)
        self.written = position + len(data)
        if self.buffer is None:
            self.committed = self.written

    def commit(self) -> int:
        """Move the buffered bytes into the file; returns how many."""
        if not self.buffer:
            return 0
        size = len(self.buffer)
        os.pwrite(self.fd, self.buffer, self.committed)
        self.committed += size
        self.buffer.clear()
        return size

    def close(self) -> None:
        self.commit()
        if self.map is not None:
            self.map.close()
            self.map = None
        os.close(self.fd)


@dataclass(frozen=True)
class _Unsynced:
    """A CommitLog file closed by a roll before its bytes were synced."""

    path: Path
    end: int  # commitlog offset of the end of its bytes


@dataclass
class CommitLogSync:
    """One flush: once ``run()`` returns, CommitLog data below ``offset`` is on disk.

    ``run()`` touches only its own descriptors (a duplicate of the active file's, and the
    files a roll closed, opened read-only), so appends may go on in another thread."""

    offset: int
    datasync: bool
    fds: list[int] = field(default_factory=list)
    rolled: list[_Unsynced] = field(default_factory=list)
    syncs: int = 0

    def run(self) -> None:
        sync = _datasync if self.datasync else os.fsync
        try:
            for item in self.rolled:
                fd = os.open(item.path, os.O_RDONLY)
                try:
                    sync(fd)
                finally:
                    os.close(fd)
                self.syncs += 1
            for fd in self.fds:
                sync(fd)
                self.syncs += 1
        finally:
            self.release()

    def release(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


class StoreWriter:
    """Append messages to a RocketMQ store root (created if missing)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        config: WriterConfig = WriterConfig(),
        *,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.root = Path(root)
        if config.io not in IO_MODES:
            raise ValueError(f"io must be one of {', '.join(IO_MODES)}, not {config.io!r}")
        self.config = config
        self.clock = clock or (lambda: time.time_ns() // 1_000_000)
        for sub in ("commitlog", "consumequeue", "index", "config"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = self._take_broker_lock()
        (self.root / "abort").write_bytes(b"")
        self._queue_offsets: dict[tuple[str, int], int] = {}
        self._cq_files: dict[tuple[str, int, int], int] = {}
        self._cl: _CommitLogFile | None = None
        self._cl_base = -1
        self._cl_pos = 0
        self._unsynced: list[_Unsynced] = []
        self._flushed_offset = 0
        self._index: IndexBuilder | None = None
        self._index_full_end_ts = 0
        self.last_store_timestamp = 0
        self._resume()

    # --- state -------------------------------------------------------------------------------
    def _resume(self) -> None:
        """Continue an existing store: position after the last record of the last file."""
        from mqtool.store.files import ReadOnlyFile
        from mqtool.store.model.commitlog_walk import FileRecords
        from mqtool.store.rocketmq import list_segments, open_store

        segments = [s for s in list_segments(self.root / "commitlog") if s.size > 0]
        if not segments:
            return
        store = open_store(self.root)
        last = segments[-1]
        with ReadOnlyFile(last.path) as f:
            walk = FileRecords(f)
            for _ in walk:
                pass
        self._open_commitlog(last.base)
        self._cl_pos = walk.valid_end
        assert self._cl is not None
        self._cl.start_at(walk.valid_end)
        self._flushed_offset = last.base + walk.valid_end
        for topic, qid in store.queues():
            segs = store.cq_segments(topic, qid)
            if not segs:
                continue
            seg = segs[-1]
            with ReadOnlyFile(seg.path) as f:
                walker = cqf.CqWalker(f.read_all())
                walker.scan()
            assert walker.end is not None  # scan() always sets it
            self._queue_offsets[(topic, qid)] = cqf.cq_queue_offset(seg.base, walker.end.position)

    def next_queue_offset(self, topic: str, queue_id: int) -> int:
        return self._queue_offsets.get((topic, queue_id), 0)

    # --- CommitLog -----------------------------------------------------------------------------
    def _open_commitlog(self, base: int) -> None:
        old = self._cl
        if old is not None:
            self._cl = None
            old.close()  # commits a buffered tail first
            if old.flushed < old.written:
                self._unsynced.append(_Unsynced(old.path, old.base + old.written))
        path = self.root / "commitlog" / segnames.rocketmq_file_name(base)
        cfg = self.config
        self._cl = _CommitLogFile(path, base, cfg.commitlog_file_size, cfg.io, cfg.write_buffer)
        self._cl_base = base
        self._cl_pos = 0
        if self.config.preallocate_next:
            nxt = self.root / "commitlog" / segnames.rocketmq_file_name(base + self.config.commitlog_file_size)
            if not nxt.exists():
                with open(nxt, "wb") as f:
                    f.truncate(self.config.commitlog_file_size)

    def append(self, message: MessageRecord) -> AppendResult:
        """Append one message; fills queue offset, physical offset and store time."""
        cfg = self.config
        if self._cl is None:
            self._open_commitlog(0)
        assert self._cl is not None
        store_ts = message.store_timestamp or self.clock()
        magic = message.magic_code
        if cfg.auto_message_version:
            magic = MAGIC_V2 if len(message.topic) > 127 else MAGIC_V1
        tx = message.sys_flag & SYSFLAG_TRANSACTION_MASK
        in_queue = tx not in (SYSFLAG_TRANSACTION_PREPARED, SYSFLAG_TRANSACTION_ROLLBACK)
        key = (message.topic, message.queue_id)
        queue_offset = self._queue_offsets.get(key, 0) if in_queue else 0
        record = replace(
            message,
            magic_code=magic,
            queue_offset=queue_offset,
            store_timestamp=store_ts,
            store_host=message.store_host if message.store_host != HostAddress("127.0.0.1", 0) else cfg.store_host,
            physical_offset=self._cl_base + self._cl_pos,
        )
        data = encode_message(record, append_crc_property=cfg.append_crc_property)
        if len(data) + END_FILE_MIN_BLANK_LENGTH > cfg.commitlog_file_size:
            raise ValueError(f"a {len(data)}-byte record cannot fit a {cfg.commitlog_file_size}-byte CommitLog file")
        left = cfg.commitlog_file_size - self._cl_pos
        if len(data) + END_FILE_MIN_BLANK_LENGTH > left:
            self._cl.write(self._cl_pos, encode_blank(left))
            self._open_commitlog(self._cl_base + cfg.commitlog_file_size)
            record = replace(record, physical_offset=self._cl_base)
            data = encode_message(record, append_crc_property=cfg.append_crc_property)
        self._cl.write(self._cl_pos, data)
        offset = self._cl_base + self._cl_pos
        self._cl_pos += len(data)
        self.last_store_timestamp = store_ts
        if in_queue:
            self._put_cq_unit(record, offset, len(data))
            self._queue_offsets[key] = queue_offset + 1
        if cfg.enable_index and tx != SYSFLAG_TRANSACTION_ROLLBACK:
            self._put_index(record, offset)
        return AppendResult(offset, len(data), queue_offset, encode_offset_msg_id(record.store_host, offset), store_ts)

    # --- ConsumeQueue ----------------------------------------------------------------------------
    def _put_cq_unit(self, record: MessageRecord, offset: int, size: int) -> None:
        byte_offset = record.queue_offset * cqf.CQ_UNIT_SIZE
        file_size = self.config.cq_file_size
        base = byte_offset - byte_offset % file_size
        unit = cqf.encode_cq_unit(cqf.CqUnit(offset, size, cq_tags_code(record)))
        fd = self._cq_fd(record.topic, record.queue_id, base)
        os.pwrite(fd, unit, byte_offset - base)

    def _cq_fd(self, topic: str, queue_id: int, base: int) -> int:
        """The open ConsumeQueue file (created at full size like the broker's mapping); a few
        recently used files stay open."""
        key = (topic, queue_id, base)
        fd = self._cq_files.pop(key, None)
        if fd is None:
            qdir = self.root / "consumequeue" / topic / str(queue_id)
            qdir.mkdir(parents=True, exist_ok=True)
            fd = os.open(qdir / segnames.rocketmq_file_name(base), os.O_RDWR | os.O_CREAT, 0o644)
            if os.fstat(fd).st_size < self.config.cq_file_size:
                os.ftruncate(fd, self.config.cq_file_size)
            while len(self._cq_files) >= 64:
                os.close(self._cq_files.pop(next(iter(self._cq_files))))
        self._cq_files[key] = fd  # re-inserted last: most recently used
        return fd

    # --- IndexFile -------------------------------------------------------------------------------
    def _put_index(self, record: MessageRecord, offset: int) -> None:
        if self._index is None:
            cfg = self.config
            self._index = IndexBuilder(self.root / "index", cfg.index_hash_slot_num, cfg.index_num, cfg.index_tz, resume=True)
        self._index.put_record(record, offset)
        self._index_full_end_ts = self._index.full_end_timestamp

    # --- shutdown ---------------------------------------------------------------------------------
    def write_checkpoint(self) -> None:
        ts = self.last_store_timestamp
        data = cpf.encode_checkpoint(cpf.Checkpoint(ts, ts, self._index_full_end_ts))
        tmp = self.root / "checkpoint.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.root / "checkpoint")

    # --- commit and flush (the broker's CommitRealTimeService / flush services) ------------------
    @property
    def write_offset(self) -> int:
        """Commitlog offset where the next record goes."""
        return self._cl_base + self._cl_pos if self._cl is not None else 0

    @property
    def committed_offset(self) -> int:
        """Commitlog offset below which the bytes are in the file (page cache)."""
        return self._cl.base + self._cl.committed if self._cl is not None else 0

    @property
    def flushed_offset(self) -> int:
        """Commitlog offset below which the bytes were synced by a flush of this writer."""
        return self._flushed_offset

    def commit(self, least_pages: int = 0) -> int:
        """``commit(commitLeastPages)`` with a write buffer: move buffered bytes into the file
        when at least ``least_pages`` pages wait (any bytes when 0); returns the bytes moved."""
        cl = self._cl
        if cl is None or cl.buffer is None or cl.written <= cl.committed:
            return 0
        if least_pages > 0 and cl.written // OS_PAGE_SIZE - cl.committed // OS_PAGE_SIZE < least_pages:
            return 0
        return cl.commit()

    def begin_flush(self, least_pages: int = 0) -> CommitLogSync | None:
        """What a flush would cover now (None when ``isAbleToFlush`` says no): committed bytes
        past the flushed offset, when a closed file waits or ``least_pages`` pages do."""
        target = self.committed_offset
        flushed = self._flushed_offset
        if target <= flushed and not self._unsynced:
            return None
        if least_pages > 0 and not self._unsynced and target // OS_PAGE_SIZE - flushed // OS_PAGE_SIZE < least_pages:
            return None
        ticket = CommitLogSync(max(target, flushed), datasync=self.config.io == "mmap", rolled=list(self._unsynced))
        cl = self._cl
        if cl is not None and cl.committed > cl.flushed:
            ticket.fds.append(os.dup(cl.fd))
        return ticket

    def end_flush(self, ticket: CommitLogSync) -> None:
        """Record a flush whose ``run()`` returned."""
        self._flushed_offset = max(self._flushed_offset, ticket.offset)
        done = {id(item) for item in ticket.rolled}
        self._unsynced = [item for item in self._unsynced if id(item) not in done]
        cl = self._cl
        if cl is not None and cl.base <= ticket.offset:
            cl.flushed = max(cl.flushed, min(ticket.offset - cl.base, cl.committed))

    def flush_commitlog(self, least_pages: int = 0) -> bool:
        """Flush the CommitLog now if ``least_pages`` allows; True when a sync ran."""
        ticket = self.begin_flush(least_pages)
        if ticket is None:
            return False
        ticket.run()
        self.end_flush(ticket)
        return True

    def flush(self) -> None:
        if self._cl is not None:
            self._cl.commit()
        self.flush_commitlog()
        for fd in self._cq_files.values():
            os.fsync(fd)
        if self._index is not None:
            self._index.flush()

    def _take_broker_lock(self) -> int:
        """Hold ``<root>/lock`` like the broker (fcntl record lock on byte 0, content ``lock``),
        so readers can tell a store that is being written to."""
        fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError:
            os.close(fd)
            raise LockBusyError("another writer holds the store's lock", path=self.root / "lock") from None
        os.pwrite(fd, b"lock", 0)
        return fd

    def _release_broker_lock(self) -> None:
        fd = getattr(self, "_lock_fd", None)
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the record lock
            self._lock_fd = None

    def close(self, *, clean: bool = True) -> None:
        for fd in self._cq_files.values():
            os.close(fd)
        self._cq_files.clear()
        if self._index is not None:
            self._index.close()
            self._index = None
        if self._cl is not None:
            self._cl.close()
            self._cl = None
        if clean:
            self.write_checkpoint()
            abort = self.root / "abort"
            if abort.exists():
                abort.unlink()
        self._release_broker_lock()

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(clean=exc_type is None)


def index_keys(record: MessageRecord) -> list[str]:
    """Keys the index service puts for a record: ``topic#UNIQ_KEY`` then ``topic#key`` per KEYS token."""
    keys = []
    if record.uniq_key:
        keys.append(f"{record.topic}#{record.uniq_key}")
    keys.extend(f"{record.topic}#{k}" for k in split_keys(record.properties))
    return keys


class IndexBuilder:
    """IndexFiles in ``directory`` fed record by record (``IndexService.buildIndex``).

    A new file inherits the previous one's end values and is named after the store time of the
    record that opened it; a full file is closed and the next one opened.  ``resume`` continues
    the newest existing file of the directory."""

    def __init__(
        self,
        directory: Path,
        slots: int,
        num: int,
        tz: tzinfo | None = None,
        *,
        resume: bool = False,
        prev_end: tuple[int, int] = (0, 0),
    ) -> None:
        self.directory = Path(directory)
        self.slots = slots
        self.num = num
        self.tz = tz
        self.full_end_timestamp = 0
        self.files: list[Path] = []
        self._current: _IndexFileWriter | None = None
        self._prev_end = prev_end
        if resume:
            existing = sorted(p for p in self.directory.iterdir() if p.is_file()) if self.directory.is_dir() else []
            if existing:
                with open(existing[-1], "rb") as f:
                    header = idxf.decode_index_header(f.read(idxf.INDEX_HEADER_SIZE))
                self._prev_end = (header.end_phy_offset, header.end_timestamp)

    def put_record(self, record: MessageRecord, offset: int) -> None:
        if record.sys_flag & SYSFLAG_TRANSACTION_MASK == SYSFLAG_TRANSACTION_ROLLBACK:
            return
        for key in index_keys(record):
            while True:
                index = self._open(record.store_timestamp)
                if index.put(key, offset, record.store_timestamp):
                    break
                self.full_end_timestamp = index.end_timestamp
                self._prev_end = (index.end_phy_offset, index.end_timestamp)
                index.close()
                self._current = None

    def _open(self, now_ms: int) -> _IndexFileWriter:
        if self._current is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self.directory / segnames.rocketmq_index_file_name(now_ms, self.tz)
            while path.exists():  # two files created in the same millisecond
                now_ms += 1
                path = self.directory / segnames.rocketmq_index_file_name(now_ms, self.tz)
            self._current = _IndexFileWriter(path, self.slots, self.num, *self._prev_end)
            self.files.append(path)
        return self._current

    def flush(self) -> None:
        if self._current is not None:
            self._current.flush()

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None


class _IndexFileWriter:
    """One IndexFile mapped for writing (our own new file: the writer may map it writable)."""

    def __init__(self, path: Path, slots: int, num: int, prev_end_phy: int, prev_end_ts: int) -> None:
        size = idxf.index_file_size(slots, num)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(fd, size)
        self._fd = fd
        self._map = mmap.mmap(fd, size)
        # IndexWriter takes any writable buffer, an mmap too (its docstring); its annotation says bytearray | memoryview
        self._writer: idxf.IndexWriter | None = idxf.IndexWriter(self._map, slots, num)  # type: ignore[arg-type]
        self._writer.inherit(prev_end_phy, prev_end_ts)
        self._end_timestamp = self._writer.header.end_timestamp
        self.end_phy_offset = self._writer.header.end_phy_offset

    def put(self, key: str, offset: int, store_ts: int) -> bool:
        assert self._writer is not None  # not closed
        ok = self._writer.put_key(key, offset, store_ts)
        header = self._writer.header
        self._end_timestamp = header.end_timestamp
        self.end_phy_offset = header.end_phy_offset
        return ok

    @property
    def end_timestamp(self) -> int:
        return self._end_timestamp

    def flush(self) -> None:
        self._map.flush()

    def close(self) -> None:
        self._map.flush()
        self._writer = None  # drop the writer's view of the map before unmapping
        self._map.close()
        os.fsync(self._fd)
        os.close(self._fd)
