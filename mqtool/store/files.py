"""Read-only file access for every layout.

Reading never writes: files are opened ``O_RDONLY`` (``O_NONBLOCK`` so a FIFO planted in a store
cannot hang us, then rejected because it is not a regular file) and read with ``pread`` in bounded
chunks.  We do not ``mmap``: a file truncated by another process while mapped would kill the
process with SIGBUS, and bounded ``pread`` keeps memory flat whatever the file size.

A ``ReadOnlyFile`` snapshots the file size when opened; bytes appended later are not read (a
file that grows while we read it is reported as it was), and a file that shrinks turns into a
short read reported as ``StoreIOError`` naming the position.

It keeps the last large piece it read (``KEEP_PIECE`` bytes or more): a read that falls inside
it -- a walk that judges the bytes after the end of the data it just read in one piece, the tail
of a file checked for zeros -- takes them from there, so a reading reads each byte from disk once.
``count_reads`` counts the bytes read from disk per file, for the tests that hold a command to
reading each log byte once; ``observe_reads`` hands each read to a consumer that needs the bytes
a reading read (``diff`` digests them), so it need not read them again.
"""

from __future__ import annotations

import errno
import os
import stat
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Protocol

from mqtool.errors import MqError, PlanChangedError, StoreIOError, StoreLayoutError

#: Default chunk for streaming reads.
CHUNK_SIZE = 8 << 20

#: The piece size a reading in progress was given (``read_in_pieces``); None: each walker's default.
_PIECE: ContextVar[int | None] = ContextVar("mqtool_read_piece", default=None)

#: A read of at least this many bytes is kept by its ``ReadOnlyFile`` (one per file) for the
#: reads that fall inside it; smaller reads (headers, index slots) are neither kept nor evict it.
KEEP_PIECE = 64 << 10

#: Bytes read from disk per file path while ``count_reads`` is active.
_READS: ContextVar[Counter[str] | None] = ContextVar("mqtool_reads", default=None)


@contextmanager
def count_reads() -> Iterator[Counter[str]]:
    """Count, per file path, the bytes ``ReadOnlyFile`` reads from disk inside the block (a read
    answered from the piece a file keeps is not counted: it costs no I/O).  In this thread and
    the ones it starts with its context; not in child processes."""
    counter: Counter[str] = Counter()
    token = _READS.set(counter)
    try:
        yield counter
    finally:
        _READS.reset(token)


#: Called with ``(path, position, bytes)`` for every read from disk while ``observe_reads`` is active.
_OBSERVER: ContextVar[Callable[[str, int, bytes], None] | None] = ContextVar("mqtool_read_observer", default=None)


@contextmanager
def observe_reads(observer: Callable[[str, int, bytes], None]) -> Iterator[None]:
    """Hand ``observer(path, position, data)`` every read ``ReadOnlyFile`` makes from disk inside
    the block (not the reads the piece a file keeps answers: their bytes were handed over when it
    was read), in this thread and the ones it starts with its context."""
    token = _OBSERVER.set(observer)
    try:
        yield
    finally:
        _OBSERVER.reset(token)


def piece_size(default: int = CHUNK_SIZE) -> int:
    """Bytes a walker reads of a log file at a time: ``default``, or the size given to the reading
    in progress by ``read_in_pieces``.  No answer may depend on it: a record, batch or message
    that a piece boundary cuts is read again from its start with the next piece."""
    given = _PIECE.get()
    return default if given is None else given


@contextmanager
def read_in_pieces(size: int) -> Iterator[None]:
    """Every walk started inside the block reads log files ``size`` bytes at a time (at least 64:
    a piece holds any header a walker judges).  For tests that put piece boundaries everywhere."""
    token = _PIECE.set(max(int(size), 64))
    try:
        yield
    finally:
        _PIECE.reset(token)


class ReadOnlyFile:
    """A regular file opened read-only with a size fixed at open time."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise StoreIOError.from_os_error(exc, self.path) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise StoreLayoutError(expected="a regular file", found=_kind(st.st_mode), path=self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd
        self.size = st.st_size
        self.mtime = st.st_mtime
        self.stat = st
        #: ``(position, bytes)`` of the last read of at least ``KEEP_PIECE`` bytes
        self._kept: tuple[int, bytes] | None = None

    def pread(self, position: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``position`` (fewer only at the snapshot's end)."""
        if self._fd is None:
            raise StoreIOError("file already closed", path=self.path)
        size = max(0, min(size, self.size - position))
        if size == 0:
            return b""
        kept = self._kept
        if kept is not None and kept[0] <= position and position + size <= kept[0] + len(kept[1]):
            at = position - kept[0]
            return kept[1][at : at + size]
        try:
            data = os.pread(self._fd, size, position)
        except OSError as exc:
            raise StoreIOError(exc.strerror or str(exc), path=self.path, position=position) from None
        if len(data) < size:
            # The file shrank since we opened it (truncated by someone else).
            raise StoreIOError(
                "file shrank while being read",
                path=self.path,
                position=position + len(data),
                expected=f"{size} bytes (size at open {self.size})",
                found=f"{len(data)} bytes",
            )
        if size >= KEEP_PIECE:
            self._kept = (position, data)
        reads = _READS.get()
        if reads is not None:
            reads[str(self.path)] += size
        observer = _OBSERVER.get()
        if observer is not None:
            observer(str(self.path), position, data)
        return data

    def read_all(self, limit: int = 64 << 20) -> bytes:
        """The whole file, for small files only (configs, checkpoints, indexes under ``limit``)."""
        if self.size > limit:
            raise StoreLayoutError("file too large to read at once", path=self.path, expected=f"at most {limit} bytes", found=f"{self.size} bytes")
        return self.pread(0, self.size)

    def iter_chunks(self, start: int = 0, chunk: int = CHUNK_SIZE) -> Iterator[tuple[int, bytes]]:
        pos = start
        while pos < self.size:
            data = self.pread(pos, chunk)
            yield pos, data
            pos += len(data)

    def close(self) -> None:
        self._kept = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ReadOnlyFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_readonly(path: str | os.PathLike[str]) -> ReadOnlyFile:
    return ReadOnlyFile(path)


def read_small_file(path: str | os.PathLike[str], limit: int = 64 << 20) -> bytes:
    with ReadOnlyFile(path) as f:
        return f.read_all(limit)


def read_range(path: str | os.PathLike[str], position: int, size: int) -> bytes:
    """Bytes ``[position, position + size)`` of the file at ``path`` (fewer at its end): for a
    command that compares bytes a reading no longer holds (``diff``), not one that judges them."""
    with ReadOnlyFile(path) as f:
        return f.pread(position, size)


def file_holds(path: str | os.PathLike[str], data: bytes) -> bool:
    """Whether the file at ``path`` holds exactly ``data`` (False when it cannot be read)."""
    try:
        if os.stat(path).st_size != len(data):
            return False
        with ReadOnlyFile(path) as f:
            return f.read_all(len(data) + 1) == data
    except (OSError, MqError):
        return False


def copy_out(path: str | os.PathLike[str], size: int, write: Callable[[bytes], object]) -> int:
    """Hand the bytes of the file at ``path``, which a plan found ``size`` bytes long, to
    ``write`` in pieces, returning their CRC-32 (an archive copy checks it against what it
    wrote); raises ``PlanChangedError`` when the file is no longer that long."""
    crc = 0
    with ReadOnlyFile(path) as f:
        if f.size != size:
            raise PlanChangedError(f"{Path(path).name} changed since the plan was made; plan again", path=Path(path), expected=f"size {size}", found=f"size {f.size}")
        for _pos, chunk in f.iter_chunks(0):
            crc = zlib.crc32(chunk, crc)
            write(chunk)
    return crc & 0xFFFFFFFF


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def safe_listdir(path: Path) -> list[str]:
    """``os.listdir`` sorted, with OS errors turned into ``StoreIOError``."""
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            return []
        raise StoreIOError.from_os_error(exc, path) from None


def link_target(path: Path) -> str:
    """What the symbolic link ``path`` holds (never followed), for messages; ``"?"`` when it
    cannot be read (it vanished, or is no link any more)."""
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def is_regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def is_directory(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def file_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError as exc:
        raise StoreIOError.from_os_error(exc, path) from None


def check_path(path: Path) -> None:
    """Refuse a missing path, or one that is neither a directory nor a regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise StoreLayoutError("no such file or directory", path=path) from None
    except OSError as exc:
        raise StoreIOError.from_os_error(exc, path) from None
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise StoreLayoutError(expected="a regular file or a directory", found=_kind(st.st_mode), path=path)


class Readable(Protocol):
    """What the byte rules read: a ``size`` and ``pread`` (``ReadOnlyFile``, a zip entry's
    ``SegmentReader``, the pipeline's ``ArrowFile``)."""

    size: int

    @property
    def path(self) -> str | os.PathLike[str]: ...

    def pread(self, position: int, size: int) -> bytes: ...


_ZEROS = bytes(CHUNK_SIZE)


def _next_data(f: Readable, pos: int, end: int) -> int:
    """Where data may lie from ``pos`` on: the file system's next data extent
    (``lseek(SEEK_DATA)``; a hole reads as zeros, so it is skipped unread: a pre-allocated
    CommitLog file is mostly hole), ``end`` when only holes remain, or ``pos`` itself when the
    file is no ``ReadOnlyFile`` or its file system does not say."""
    fd = getattr(f, "_fd", None) if isinstance(f, ReadOnlyFile) else None
    seek_data = getattr(os, "SEEK_DATA", None)
    if fd is None or seek_data is None:
        return pos
    try:
        return min(os.lseek(fd, pos, seek_data), end)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # no data at or after pos: holes up to the end of the file
            return end
        return pos  # EINVAL and the like: SEEK_DATA not supported here, read on


def nonzero_extent(f: Readable, start: int, stop: int | None = None) -> tuple[int, int] | None:
    """``(first, last + 1)`` of the non-zero bytes in ``[start, stop)`` of ``f`` (``stop``: its
    size), or None when they are all zeros: the one rule for "only zeros follow" (a pre-allocated
    tail, ``MappedFile`` in RocketMQ, Kafka's preallocated segments) against garbage."""
    end = f.size if stop is None else min(stop, f.size)
    first: int | None = None
    last = start
    pos = start
    while pos < end:
        pos = _next_data(f, pos, end)
        if pos >= end:
            break
        data = f.pread(pos, min(CHUNK_SIZE, end - pos))
        if not data:
            break
        if data == _ZEROS[: len(data)]:  # a memcmp: the common case, a zero tail, at memory speed
            pos += len(data)
            continue
        stripped = data.lstrip(b"\x00")
        if stripped:
            if first is None:
                first = pos + len(data) - len(stripped)
            last = pos + len(data.rstrip(b"\x00"))
        pos += len(data)
    return (first, last) if first is not None else None
