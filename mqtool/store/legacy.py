"""What the Jafka and MetaQ layouts share: ``<topic>-<partition>`` directories of segments named
by the byte offset of their first byte, read in bounded chunks (also out of a ``.meta.zip``).

Both brokers keep a *data dir* (Jafka ``log.dir``, MetaQ ``dataPath``) holding one directory per
partition, ``<topic>-<partition>``, split at the **last** ``-`` (topics may contain ``-``).  A
partition directory holds segment files ``<20-digit start offset><suffix>``; the offset of a
message is ``segment start + position`` (Kafka 0.7 addressing), so segment ``n+1`` must start at
``start(n) + size(n)`` -- both brokers refuse to load a partition otherwise.

Reading is read-only and bounded: ``SegmentReader`` gives ``pread(position, size)`` over a plain
segment file (``ReadOnlyFile``) or over the single entry of a MetaQ ``.meta.zip`` archive (a
forward-only inflating window; going backwards re-inflates from the start), and ``SegmentWalk``
streams ``(position, message)`` through a format walker piece by piece: it is the family's one
piece loop (``store.model.framed.PieceWalk``, the piece size its parameter), and the one search
for the next valid message (``next_message``) and the end of a zero run (``zero_run``) is
``store.model.framed.scan``.  A length field larger than ``max_message_size`` is reported as
corruption, never allocated.
"""

from __future__ import annotations

import io
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal, cast

from mqtool.errors import (
    ChecksumError,
    CorruptDataError,
    MqError,
    StoreIOError,
    StoreLayoutError,
    UnsupportedFormatError,
)
from mqtool.formats.data_end import DataEnd
from mqtool.formats.metaq import ZIP_HEAD, ZIP_TAIL_SEARCH, describe_zip_damage
from mqtool.formats.segment_names import parse_topic_partition as parse_topic_partition  # the broker's <topic>-<partition> rule
from mqtool.store.files import (
    CHUNK_SIZE,
    ReadOnlyFile,
    check_path,
    is_directory,
    is_regular_file,
    nonzero_extent,
    safe_listdir,
)
from mqtool.store.lock import MQTOOL_LOCK_NAME
from mqtool.store.model.framed import PieceWalk, PieceWalker, scan
from mqtool.store.model.framed import zero_run as framed_zero_run

#: Largest message mqtool reads (Jafka's max.message.size and MetaQ's client limit are 1-2 MiB by
#: default).  A larger length field is corruption, never an allocation.
MAX_MESSAGE_SIZE = 64 << 20

Kind = Literal["data-dir", "partition", "segment"]


@dataclass(frozen=True)
class Segment:
    """One segment file: where it is, the offset in its name, and how many bytes of log it holds.

    ``size`` is the file length, or for a ``.meta.zip`` archive the uncompressed size of its
    entry (None when the archive's directory cannot be read).  ``archive`` is None for a live
    segment, ``"arc"`` or ``"zip"`` for a MetaQ archive.  ``named`` is False when the file name
    does not carry an offset (a file given on the command line): offsets are then positions.
    """

    path: Path
    start_offset: int
    size: int | None
    file_size: int
    archive: str | None = None
    named: bool = True

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def end_offset(self) -> int | None:
        return None if self.size is None else self.start_offset + self.size

    def contains(self, offset: int) -> bool:
        return self.size is not None and self.start_offset <= offset < self.start_offset + self.size


@dataclass
class Partition:
    """A ``<topic>-<partition>`` directory: live segments and (MetaQ) archives, by start offset."""

    path: Path
    topic: str | None
    partition: int | None
    segments: list[Segment] = field(default_factory=list)
    archives: list[Segment] = field(default_factory=list)
    #: entries the broker ignores (other names, sub-directories)
    unexpected: list[Path] = field(default_factory=list)
    #: files with the segment suffix whose name is not a number (the broker fails to parse them)
    bad_names: list[Path] = field(default_factory=list)
    #: symbolic links: never followed (a store is read without leaving it)
    links: list[Path] = field(default_factory=list)
    #: FIFOs, sockets, devices named like segments: never opened
    irregular: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}" if self.topic is not None else self.path.name

    @property
    def last(self) -> Segment | None:
        return self.segments[-1] if self.segments else None

    def all_segments(self) -> list[Segment]:
        """Archives and live segments together, by start offset (live first on a tie)."""
        return sorted([*self.segments, *self.archives], key=lambda s: (s.start_offset, s.archive or ""))

    def segment_for(self, offset: int, *, archives: bool = True) -> Segment | None:
        """The live segment (else, with ``archives``, the archive) whose bytes hold ``offset``."""
        for seg in reversed(self.segments):
            if seg.contains(offset):
                return seg
        if archives:
            for seg in reversed(self.archives):
                if seg.contains(offset):
                    return seg
        return None


@dataclass
class DataDir:
    """An opened Jafka or MetaQ path: a data dir, one partition, or one segment file."""

    layout: str
    root: Path
    kind: Kind
    partitions: list[Partition]
    #: regular files in the data dir (both brokers skip them with a warning)
    unexpected: list[Path] = field(default_factory=list)
    #: directories in the data dir the broker skips (MetaQ: no ``-`` in the name)
    ignored_dirs: list[Path] = field(default_factory=list)
    #: directories the broker refuses to load, with the reason
    bad_dirs: list[tuple[Path, str]] = field(default_factory=list)
    #: symbolic links in the data dir: never followed
    links: list[Path] = field(default_factory=list)
    #: the data dir the partitions live in (the parent of a partition given on the command line)
    data_dir: Path | None = None
    #: when ``kind == "segment"``: the one file to read (its partition is listed in full)
    only: Path | None = None
    notes: list[str] = field(default_factory=list)
    #: the broker of the layout's family the files are named for (Jafka layout: ``"jafka"`` or
    #: ``"kafka07"``, ``store.jafka.Dialect``); None for MetaQ
    variant: str | None = None

    def selected(self, partition: Partition, *, archives: bool = True) -> list[Segment]:
        """Segments to read in ``partition``: all of them, or just ``only``."""
        segs = partition.all_segments() if archives else list(partition.segments)
        if self.only is not None:
            segs = [s for s in segs if s.path == self.only]
        return segs


# --- listing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayoutNames:
    """How one layout names things: the segment pattern and how to classify a directory entry."""

    layout: str
    suffix: str  # ".jafka" / ".meta"
    segment: re.Pattern[str]  # a live segment name (group 1: the offset digits)
    archive: re.Pattern[str] | None  # an archive name (group 1: digits, group 2: kind)
    description: str  # for "expected ..." in errors

    def looks_like_segment(self, name: str) -> bool:
        return bool(self.segment.fullmatch(name) or (self.archive is not None and self.archive.fullmatch(name)))


def _stat_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError as exc:
        raise StoreIOError.from_os_error(exc, path) from None


def _valid_offset(digits: str) -> int | None:
    if len(digits.lstrip("0")) > 19:
        return None
    value = int(digits)
    return value if value < 2**63 else None


def _lstat_kind(path: Path) -> str | None:
    """``"file"``, ``"dir"``, ``"link"``, another kind's name, or None when it vanished."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device file"


def list_partition(path: Path, names: LayoutNames, topic: str | None, partition: int | None) -> Partition:
    """The entries of a partition directory as the broker sorts them.  Symbolic links and special
    files are listed apart and never opened."""
    part = Partition(path, topic, partition)
    for name in safe_listdir(path):
        if name == MQTOOL_LOCK_NAME:
            continue  # mqtool's own lock (recover/clean on a partition directory)
        entry = path / name
        kind = _lstat_kind(entry)
        if kind is None:
            continue
        if kind == "link":
            part.links.append(entry)
            continue
        if kind not in ("file", "dir"):
            if names.looks_like_segment(name) or name.endswith(names.suffix):
                part.irregular.append((entry, kind))
            else:
                part.unexpected.append(entry)
            continue
        regular = kind == "file"
        match = names.segment.fullmatch(name)
        if match and regular:
            start = _valid_offset(match.group(1))
            if start is None:
                part.bad_names.append(entry)
                continue
            size = _stat_size(entry)
            part.segments.append(Segment(entry, start, size, size))
            continue
        amatch = names.archive.fullmatch(name) if names.archive is not None else None
        if amatch and regular:
            start = _valid_offset(amatch.group(1))
            if start is None:
                part.unexpected.append(entry)
                continue
            part.archives.append(_archive_segment(entry, start, amatch.group(2)))
            continue
        if regular and name.endswith(names.suffix):
            part.bad_names.append(entry)  # the broker parses the name as a number and fails
            continue
        part.unexpected.append(entry)
    part.segments.sort(key=lambda s: s.start_offset)
    part.archives.sort(key=lambda s: (s.start_offset, s.archive or ""))
    return part


def _archive_segment(path: Path, start: int, kind: str, *, named: bool = True) -> Segment:
    file_size = _stat_size(path)
    if kind == "zip":
        try:
            with ZipEntryReader(path) as reader:
                size: int | None = reader.size
        except MqError:
            size = None
        return Segment(path, start, size, file_size, "zip", named)
    return Segment(path, start, file_size, file_size, kind, named)


def single_segment(path: Path, names: LayoutNames) -> Segment:
    """A segment file given on the command line (any name: offsets are positions without one)."""
    name = path.name
    match = names.segment.fullmatch(name)
    if match and _valid_offset(match.group(1)) is not None:
        size = _stat_size(path)
        return Segment(path, int(match.group(1)), size, size)
    amatch = names.archive.fullmatch(name) if names.archive is not None else None
    if amatch and _valid_offset(amatch.group(1)) is not None:
        return _archive_segment(path, int(amatch.group(1)), amatch.group(2))
    if names.archive is not None and name.endswith(".zip"):
        return _archive_segment(path, 0, "zip", named=False)
    size = _stat_size(path)
    return Segment(path, 0, size, size, "arc" if names.archive is not None and name.endswith(".arc") else None, False)


def has_segments(path: Path, names: LayoutNames) -> bool:
    try:
        return any(names.looks_like_segment(n) and is_regular_file(path / n) for n in safe_listdir(path))
    except MqError:
        return False


def is_layout_path(path: Path, names: LayoutNames, marker: str | None = None) -> bool:
    """A segment file of the layout, a partition directory holding one, or a data dir with a
    marker file or a ``<topic>-<partition>`` directory holding one."""
    path = Path(path)
    if is_regular_file(path):
        return names.looks_like_segment(path.name)
    if not is_directory(path):
        return False
    try:
        entries = safe_listdir(path)
    except MqError:
        return False
    if marker is not None and marker in entries and is_regular_file(path / marker):
        return True
    if any(names.looks_like_segment(n) and is_regular_file(path / n) for n in entries):
        return True
    for name in entries:
        sub = path / name
        if "-" in name and is_directory(sub) and has_segments(sub, names):
            return True
    return False


def open_data_dir(
    path: str | os.PathLike[str],
    names: LayoutNames,
    classify_dir: Callable[[str], tuple[str, tuple[str, int] | None, str | None]],
    expected_root_files: tuple[str, ...] = (),
) -> DataDir:
    """Open a data dir, a partition directory or a segment file of one layout.

    ``classify_dir(name)`` says what the broker does with a data-dir sub-directory:
    ``("partition", (topic, n), None)``, ``("ignored", None, None)`` or ``("bad", None, reason)``.
    """
    path = Path(path)
    check_path(path)
    if is_regular_file(path):
        parent = path.parent
        topic, number = parse_topic_partition(parent.name) or (None, None)
        part = list_partition(parent, names, topic, number)
        if any(s.path == path for s in part.all_segments()):
            return DataDir(names.layout, path, "segment", [part], data_dir=parent.parent, only=path)
        seg = single_segment(path, names)
        notes = [] if seg.named else [f"{path}: the name is not {names.description}: offsets shown are byte positions"]
        alone = Partition(parent, topic, number, segments=[] if seg.archive else [seg], archives=[seg] if seg.archive else [])
        return DataDir(names.layout, path, "segment", [alone], data_dir=parent.parent, only=path, notes=notes)

    entries = safe_listdir(path)
    if any(names.looks_like_segment(n) and is_regular_file(path / n) for n in entries):
        tp = parse_topic_partition(path.name)
        return DataDir(names.layout, path, "partition", [list_partition(path, names, *(tp or (None, None)))], data_dir=path.parent)

    data = DataDir(names.layout, path, "data-dir", [], data_dir=path)
    for name in entries:
        if name == MQTOOL_LOCK_NAME:
            continue  # mqtool's own lock (recover/clean): neither a stray file nor a partition
        entry = path / name
        kind = _lstat_kind(entry)
        if kind is None:
            continue
        if kind == "link":
            data.links.append(entry)
        elif kind == "dir":
            what, tp, reason = classify_dir(name)
            if what == "partition" and tp is not None:
                data.partitions.append(list_partition(entry, names, *tp))
            elif what == "ignored":
                data.ignored_dirs.append(entry)
            else:
                data.bad_dirs.append((entry, reason or "not <topic>-<partition>"))
        elif name not in expected_root_files:
            data.unexpected.append(entry)
    data.partitions.sort(key=lambda p: (p.topic or "", p.partition if p.partition is not None else -1, p.path.name))
    found_marker = any((path / n).exists() for n in expected_root_files)
    # Both brokers create a segment in every partition they load, so a data dir without a single
    # segment anywhere (and without Jafka's marker) is not one -- or is another layout's.
    if not found_marker and not data.links and not any(p.segments or p.archives or p.bad_names or p.links for p in data.partitions):
        tp = parse_topic_partition(path.name)
        if tp is not None and not entries:
            return DataDir(names.layout, path, "partition", [Partition(path, *tp)], data_dir=path.parent)
        raise StoreLayoutError(
            expected=f"a {names.layout} data dir (<topic>-<partition>/{names.description}), a partition directory or a segment file",
            found=f"no {names.suffix} segment in it or in a <topic>-<partition> directory",
            path=path,
        )
    return data


# --- reading --------------------------------------------------------------------------------------


class _PreadIO(io.RawIOBase):
    """A seekable raw stream over a ``ReadOnlyFile`` (for ``zipfile``), reading with ``pread``."""

    def __init__(self, f: ReadOnlyFile) -> None:
        self._f = f
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._f.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        data = self._f.pread(self._pos, len(b))
        b[: len(data)] = data
        self._pos += len(data)
        return len(data)


class ZipEntryReader:
    """The single entry of a ``.meta.zip`` archive, inflated on demand with bounded memory.

    Structure problems (not a zip, no entry, an encrypted or unknown-method entry) raise
    ``CorruptDataError``/``UnsupportedFormatError`` when opening.  ``entries`` and ``entry_name``
    let callers check the archive against its file name.  ``pread`` goes forward through a
    window; reading before the window re-inflates from the start.  Inflate errors raise
    ``CorruptDataError``; the CRC-32 is computed as the entry is inflated and checked by
    ``verify`` (which inflates what is left), so damaged bytes can still be read and located.
    Positions are positions in the uncompressed segment.
    """

    def __init__(self, path: str | os.PathLike[str], expected_name: str | None = None) -> None:
        self.path = Path(path)
        self._file = ReadOnlyFile(self.path)
        try:
            try:
                self._zip = zipfile.ZipFile(io.BufferedReader(_PreadIO(self._file), 1 << 20))
            except MqError:
                raise
            except Exception as exc:  # BadZipFile, ValueError, OSError, NotImplementedError ...
                size = self._file.size
                tail = self._file.pread(max(0, size - ZIP_TAIL_SEARCH), ZIP_TAIL_SEARCH)
                position, expected, found = describe_zip_damage(self._file.pread(0, ZIP_HEAD), tail, size, str(exc))
                raise CorruptDataError("not a readable zip archive", path=self.path, position=position, expected=expected, found=found) from None
            infos = self._zip.infolist()
            self.entries = [i.filename for i in infos]
            if not infos:
                raise CorruptDataError(expected="one entry in the zip archive", found="none", path=self.path)
            chosen = next((i for i in infos if i.filename == expected_name), infos[0])
            self.info = chosen
            self.entry_name = chosen.filename
            if chosen.flag_bits & 0x1:
                raise UnsupportedFormatError(expected="an unencrypted zip entry", found="an encrypted entry", path=self.path)
            if chosen.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise UnsupportedFormatError(
                    expected="a stored or deflated zip entry (java.util.zip writes DEFLATE)",
                    found=f"compression method {chosen.compress_type}",
                    path=self.path,
                )
            self.size = chosen.file_size
            self.crc = chosen.CRC
        except BaseException:
            self._file.close()
            raise
        self._stream: IO[bytes] | None = None
        self._buf = bytearray()
        self._buf_start = 0
        self._eof = False
        self._running_crc = 0
        #: None until the entry has been inflated to its end, then whether its CRC-32 matched
        self.crc_ok: bool | None = None

    # -- the forward window ------------------------------------------------------------------
    def _restart(self) -> None:
        if self._stream is not None:
            self._stream.close()
        try:
            self._stream = self._zip.open(self.info)
        except Exception as exc:
            raise self._error(exc, 0) from None
        # We check the CRC ourselves (``verify``) so that the entry's bytes stay readable up to
        # its end: zipfile raises on the last read and drops that read's data.
        if hasattr(self._stream, "_expected_crc"):
            setattr(self._stream, "_expected_crc", None)  # noqa: B010 (a zipfile.ZipExtFile internal)
        self._running_crc = 0
        self._buf = bytearray()
        self._buf_start = 0
        self._eof = False

    def _error(self, exc: BaseException, position: int) -> MqError:
        if isinstance(exc, MqError):
            return exc
        text = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, zipfile.BadZipFile) and "CRC" in str(exc):
            return ChecksumError(
                "zip entry CRC mismatch",
                path=self.path,
                expected=f"the entry's CRC-32 0x{self.crc:08X}",
                found="other bytes (the archive is damaged)",
            )
        return CorruptDataError(
            "zip entry cannot be inflated",
            path=self.path,
            expected=f"{self.size} bytes of DEFLATE data for entry {self.entry_name!r}",
            found=f"{text} near uncompressed byte {position}",
        )

    def _fill(self, until: int) -> None:
        """Inflate until the window reaches ``until`` (absolute) or the entry ends."""
        assert self._stream is not None
        while not self._eof and self._buf_start + len(self._buf) < until:
            want = min(max(until - self._buf_start - len(self._buf), 64 << 10), CHUNK_SIZE)
            try:
                data = self._stream.read(want)
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError) as exc:
                if isinstance(exc, StoreIOError):
                    raise
                raise self._error(exc, self._buf_start + len(self._buf)) from None
            if not data:
                self._eof = True
                if self._buf_start + len(self._buf) < self.size:
                    raise CorruptDataError(
                        "zip entry ends early",
                        path=self.path,
                        expected=f"{self.size} uncompressed bytes",
                        found=f"{self._buf_start + len(self._buf)} bytes",
                    )
                self.crc_ok = self._running_crc == self.crc
                break
            self._running_crc = zlib.crc32(data, self._running_crc)
            self._buf += data

    def pread(self, position: int, size: int) -> bytes:
        size = max(0, min(size, self.size - position))
        if size == 0:
            return b""
        if self._stream is None or position < self._buf_start:
            self._restart()
        assert self._stream is not None
        # drop what lies before ``position`` (inflating through it if needed)
        while self._buf_start + len(self._buf) < position and not self._eof:
            self._buf_start += len(self._buf)
            self._buf = bytearray()
            self._fill(min(position, self._buf_start + CHUNK_SIZE))
        drop = position - self._buf_start
        if drop > 0:
            del self._buf[:drop]
            self._buf_start = position
        self._fill(position + size)
        return bytes(self._buf[:size])

    def verify(self) -> None:
        """Inflate the rest of the entry (discarding it) so its CRC-32 and length are checked."""
        if self._stream is None:
            self._restart()
        assert self._stream is not None
        while not self._eof:
            self._buf_start += len(self._buf)
            self._buf = bytearray()
            self._fill(self._buf_start + CHUNK_SIZE)
        if self.crc_ok is False:
            raise ChecksumError(
                "zip entry CRC mismatch",
                path=self.path,
                expected=f"the entry's CRC-32 0x{self.crc:08X}",
                found=f"0x{self._running_crc:08X} over its {self.size} inflated bytes (the archive is damaged)",
            )

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self._zip.close()
        self._file.close()

    def __enter__(self) -> ZipEntryReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SegmentReader:
    """``pread`` over a segment, whatever it is stored as (a file, or a zip archive's entry)."""

    def __init__(self, segment: Segment, expected_entry: str | None = None) -> None:
        self.segment = segment
        self.path = segment.path
        self.zip: ZipEntryReader | None = None
        self.file: ReadOnlyFile | None = None
        if segment.archive == "zip":
            self.zip = ZipEntryReader(segment.path, expected_entry)
            self.size = self.zip.size
        else:
            self.file = ReadOnlyFile(segment.path)
            self.size = self.file.size

    def pread(self, position: int, size: int) -> bytes:
        if self.zip is not None:
            return self.zip.pread(position, size)
        assert self.file is not None
        return self.file.pread(position, size)

    def verify(self) -> None:
        if self.zip is not None:
            self.zip.verify()

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()
        if self.file is not None:
            self.file.close()

    def __enter__(self) -> SegmentReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- walking ----------------------------------------------------------------------------------------

#: The first piece a ``SegmentWalk`` reads; the next ones double up to its piece size.
FIRST_PIECE = 64 << 10


@dataclass(frozen=True)
class Framing:
    """How a layout frames messages, for ``SegmentWalk``.

    ``walker(buf, check_crc)`` is the format's ``MessageWalker``; ``header_size`` is how many
    bytes tell an entry's length (a shorter all-zero rest is only an end at the end of the file).
    """

    walker: Callable[..., object]
    header_size: int
    length_field: str
    #: bytes of an entry not counted by its length field (Jafka 4, MetaQ 20)
    overhead: int
    #: the format's ``peek_length(buf, position)``: the length field as stored
    peek_length: Callable[..., int]
    max_message_size: int = MAX_MESSAGE_SIZE
    #: the smallest length field the walker accepts (Jafka 5, the magic-0 header; MetaQ 0)
    min_length: int = 0
    #: resynchronisation: a look-ahead pattern matching where a message may start, the smallest
    #: length a real message there has, and the format's ``decode_message(buf, position)``
    candidate: re.Pattern[bytes] | None = None
    candidate_min_length: int = 1
    decode: Callable[..., object] | None = None
    #: the finding code of a message a decode rejects, by what its error says broke
    #: (``MqError.kind``, never its wording); None: the layout's walkers name no code
    error_code: Callable[[MqError], str] | None = None


class SegmentWalk(PieceWalk):
    """Stream ``(position, message)`` from a segment: the family's piece walk
    (``store.model.framed.PieceWalk``, the one loop that reads a log in pieces; ``chunk`` is its
    piece size, default ``store.files.piece_size()``) with the layout's message walker.

    After iteration either ``end`` is set (a clean end, file positions) or ``error`` is the
    located ``MqError`` of the first broken message at ``failed_at``.  Errors of the reader
    itself (I/O, a damaged zip) propagate.

    With ``keep_damaged`` a message whose frame is intact -- its length field holds, so the next
    message is where it says -- but whose checksum fails (Jafka's CRC-32 of the payload, MetaQ's
    masked CRC-32 of DATA) is yielded too, decoded without the check, and the walk goes on after
    it: ``damaged`` maps its file position to the error (located in the file; ``finding_code``
    names its finding, JAFKA-CRC / METAQ-CRC).  Jafka's and MetaQ's own recovery truncate the
    segment there; a reader that lists what is on disk lists it, with its finding.
    """

    def __init__(
        self,
        reader: SegmentReader,
        framing: Framing,
        start: int = 0,
        *,
        check_crc: bool = True,
        chunk: int | None = None,
        keep_damaged: bool = False,
    ) -> None:
        walker = framing.walker

        def walk_piece(data: bytes, resume: int) -> PieceWalker:
            return cast(PieceWalker, walker(data, resume, check_crc=check_crc))

        def keep(data: bytes, rel: int, exc: MqError) -> tuple[object, int] | None:
            message = framed_message(framing, data, rel, exc)
            return None if message is None else (message, framing.overhead + framing.peek_length(data, rel))

        super().__init__(
            reader,
            walk_piece,
            start,
            judged=framing.header_size,
            max_record=framing.max_message_size,
            piece=chunk,
            first=FIRST_PIECE if chunk is None else None,
            keep=keep if keep_damaged else None,
            # worded as the model's end of a whole read (``on_end``): one finding, however the file is read in pieces
            length_field=framing.length_field,
            overhead=framing.overhead,
        )
        self.reader = reader
        self.framing = framing
        self.check_crc = check_crc
        self.keep_damaged = keep_damaged

    def finding_code(self, position: int) -> str | None:
        """The code of the finding validate states about the message the walk yielded at file
        ``position`` despite its damage (``damaged``), None for a healthy message."""
        exc = self.damaged.get(position)
        if exc is None:
            return None
        return self.framing.error_code(exc) if self.framing.error_code is not None else None


def framed_message(framing: Framing, data: bytes, rel: int, exc: MqError) -> object | None:
    """The message at ``data[rel:]`` that ``exc`` rejected, when only its checksum failed (its
    length field holds, so the next message is where it says): decoded without the check (None
    when anything else is broken too).  The one rule of every walk that keeps such a message
    (``SegmentWalk(keep_damaged=True)``, the Spark walk)."""
    if not isinstance(exc, ChecksumError) or framing.decode is None:
        return None
    try:
        return framing.decode(data, rel, check_crc=False)
    except MqError:
        return None


def is_torn_message(reader: SegmentReader, position: int, framing: Framing) -> bool:
    """Whether the message that fails at ``position`` is a torn tail: its bytes stop before the
    end its length field gives (or fewer than a header's bytes are left) and only zeros follow --
    a crash while appending.  A message whose last byte is on disk was written whole: its damage
    is not a torn write."""
    rest = reader.size - position
    if rest < framing.header_size:
        return bool(reader.pread(position, rest).strip(b"\x00"))
    head = reader.pread(position, 4)
    length = framing.peek_length(head, 0) if len(head) == 4 else -1
    if not 0 <= length <= framing.max_message_size:
        return False
    extent = nonzero_extent(reader, position)
    stop = extent[1] if extent else position
    return stop < position + framing.overhead + length


def zero_run(reader: SegmentReader, start: int, *, piece: int | None = None) -> int:
    """How many zero bytes follow ``start`` (``store.model.framed.zero_run``)."""
    return framed_zero_run(reader, start, piece=piece)


# --- judging where the messages stop ----------------------------------------------------------------

#: How far past a broken message resynchronisation looks for the next valid one.
RESYNC_LIMIT = 16 << 20


def next_message(reader: SegmentReader, framing: Framing, start: int, limit: int | None = None, *, piece: int | None = None) -> tuple[int | None, int]:
    """The first position >= ``start`` where a valid message starts (decoded, checksum checked),
    searching at most ``limit`` (``RESYNC_LIMIT``) bytes; also returns where the search stopped.
    The search is the family's one scan (``store.model.framed.scan``, in pieces of ``piece``
    bytes) over the places the framing's ``candidate`` pattern matches."""
    candidate, decode = framing.candidate, framing.decode
    if candidate is None or decode is None:
        raise ValueError("this framing cannot resynchronise (no candidate pattern or decoder)")
    size = reader.size
    stop = min(size, start + (RESYNC_LIMIT if limit is None else limit))
    overhead = framing.overhead
    smallest, largest = framing.candidate_min_length, framing.max_message_size
    peek = framing.peek_length

    def candidates(chunk: bytes, span: int) -> Iterator[int]:
        for match in candidate.finditer(chunk, 0, span + overhead):
            i = match.start()
            if i >= span:
                return
            yield i

    def decodes(q: int, chunk: bytes, i: int) -> bool:
        length = peek(chunk, i)  # the candidate pattern spans more than 4 bytes
        if not smallest <= length <= min(largest, size - q - overhead):
            return False
        data = chunk[i : i + overhead + length] if i + overhead + length <= len(chunk) else reader.pread(q, overhead + length)
        try:
            decode(data, 0)
        except MqError:
            return False
        return True

    return scan(reader, start, stop, candidates, decodes, overlap=overhead, piece=piece), stop


def _role(reader: SegmentReader, last: bool) -> str:
    if reader.segment.archive is not None:
        return "an archive"
    return "the last segment" if last else "a segment before the last one"


def end_damage(reader: SegmentReader, framing: Framing, end: DataEnd[str] | None, *, last: bool, piece: int | None = None) -> CorruptDataError | None:
    """Whether the end a walk stopped at is damage rather than a clean end, judged as validate does.

    Only the last live segment of a partition is ever repaired (the broker's recovery at start-up):
    there a partial message, or zeros, running to the end of the file are what a crash leaves
    (None: a tail, not damage).  Everything else is damage, returned located with what was
    expected and found: a length field running past the end of a segment before the last (or of
    an archive: nothing ever repairs those), a length field running over valid messages that
    follow it (the length is corrupt, not the write torn), and zeros followed by other bytes."""
    if end is None or end.kind == "eof":
        return None
    b = end.position
    size = reader.size
    role = _role(reader, last)
    repaired = last and reader.segment.archive is None
    nothing = "nothing ever repairs it, consumers fetching there get no message"
    if end.kind == "partial":
        nxt, _ = next_message(reader, framing, b + 1, piece=piece)
        if nxt is not None:  # (fewer bytes than a header leave no room for another message)
            return CorruptDataError(
                f"damaged {framing.length_field}",
                path=reader.path,
                position=b,
                expected=f"{framing.length_field} at most {nxt - b - framing.overhead} (a valid message starts at position {nxt}, {nxt - b} bytes further on)",
                found=f"{end.length - framing.overhead}, which runs {end.length - (size - b)} bytes past the end of {role}: "
                f"the valid messages from position {nxt} on are hidden behind it",
            )
        if repaired:
            return None
        found = (
            f"{size - b} bytes, fewer than a {framing.header_size}-byte message header"
            if size - b < framing.header_size
            else f"a partial message: {size - b} of the {end.length} bytes its {framing.length_field} {end.length - framing.overhead} claims"
        )
        return CorruptDataError(path=reader.path, position=b, expected=f"{role} to end exactly after its last message ({nothing})", found=found)
    extent = nonzero_extent(reader, b)
    if extent is None:
        if repaired:
            return None
        return CorruptDataError(path=reader.path, position=b, expected=f"{role} to end exactly after its last message ({nothing})", found=f"{size - b} zero bytes")
    first, stop = extent
    nxt, _ = next_message(reader, framing, b, piece=piece)
    return CorruptDataError(
        path=reader.path,
        position=first,
        expected=f"only zeros after the end of the valid messages at position {b}",
        found=f"{stop - first} bytes of other data at positions {first} to {stop}" + (f", holding a valid message at position {nxt}" if nxt is not None else ""),
    )
