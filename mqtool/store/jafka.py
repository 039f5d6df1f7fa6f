"""Jafka data dirs (``log.dir``) and Kafka 0.7 log dirs: detection, the partition/segment model,
streaming reads, a writer.

Layout (spec jafka.md B2)::

    <log.dir>/
      .jafka_cleanshutdown              written by a clean shutdown, deleted at start-up
      <topic>-<partition>/              split at the last '-'; anything else stops the broker
        00000000000000000000.jafka      segments named by their start offset (20 digits)
        00000000000000001030.jafka      next start = previous start + previous size

Offsets are byte positions in the partition's log.  At start-up Jafka lists ``*.jafka`` (a
non-numeric name fails), checks ``start + size == next start`` for every pair (else the
partition does not load), and re-opens the last segment for appending -- running recovery on it
only when ``.jafka_cleanshutdown`` was absent.  Non-last segments are never content-checked.

Kafka 0.7 (modelled: 0.7.2) is the broker Jafka was ported from, and a *dialect* of this layout
(``KAFKA07``): its log dirs are the same tree with ``<20-digit offset>.kafka`` segments
(``kafka.log.Log.FileSuffix``, ``Log.nameFromOffset``), the marker ``.kafka_cleanshutdown``
(``KafkaServer.CLEAN_SHUTDOWN_FILE``: present, recovery is skipped and the file deleted), the same
loader (``LogManager`` splits directory names at the last ``-``; ``Log.loadSegments`` parses names
with ``toLong`` and ``validateSegments`` checks ``start + size == next start``) and the same
recovery of the last segment (``FileMessageSet.recover``/``validateMessage``: keep messages while
``LENGTH >= Message.MinHeaderSize`` (5), the entry fits and ``Message.isValid``).  What differs is
the message: Kafka 0.7 reads magic 0 and magic 1 (``Message.crcOffset``; any other magic throws
``UnknownMagicByteException``) and knows the codecs none, gzip and snappy (``CompressionCodec``).
The dialect of a path is told by its segment names (``dialect_of``); every verb of the Jafka
layout reads both, with the dialect's rules.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from mqtool.errors import MqError
from mqtool.findings.code_ids import JAFKA_CRC, JAFKA_MAGIC, JAFKA_SIZE
from mqtool.formats import jafka as jf
from mqtool.formats import segment_names as segnames
from mqtool.store.files import is_directory, is_regular_file, safe_listdir
from mqtool.store.legacy import (
    MAX_MESSAGE_SIZE,
    DataDir,
    Framing,
    LayoutNames,
    Partition,
    Segment,
    SegmentReader,
    has_segments,
    is_layout_path,
    open_data_dir,
    parse_topic_partition,
)

NAMES = LayoutNames(
    layout="jafka",
    suffix=segnames.JAFKA_SUFFIX,
    segment=re.compile(r"([0-9]+)\.jafka"),
    archive=None,
    description="<20-digit offset>.jafka",
)

#: The code of a Jafka message the broker's ``MessageSet`` reader rejects, by its error's
#: ``kind`` (``Message.crcOffset`` throws ``UnknownMagicByteException`` for a magic other than
#: 1); anything else (a LENGTH that does not fit, a wrapper that does not inflate) is JAFKA-SIZE.
ERROR_CODES: dict[str | None, str] = {"crc": JAFKA_CRC, "magic": JAFKA_MAGIC}


def error_code(exc: MqError) -> str:
    """The code of a Jafka message a decode rejects (``ERROR_CODES``)."""
    return ERROR_CODES.get(exc.kind, JAFKA_SIZE)


FRAMING = Framing(
    walker=jf.MessageWalker,
    header_size=jf.LOG_OVERHEAD,
    length_field="LENGTH",
    overhead=jf.LOG_OVERHEAD,
    peek_length=jf.peek_length,
    min_length=jf.MIN_HEADER_SIZE_V0,
    # a message may start where LENGTH >= 0 (top byte < 0x80) is followed by MAGIC 1
    candidate=re.compile(rb"(?=[\x00-\x7f][\x00-\xff]{3}\x01)"),
    candidate_min_length=jf.MIN_HEADER_SIZE,
    decode=jf.decode_message,
    error_code=error_code,
)

CLEAN_SHUTDOWN_FILE = jf.CLEAN_SHUTDOWN_FILE

KAFKA07_NAMES = LayoutNames(
    layout="jafka",
    suffix=segnames.KAFKA07_SUFFIX,
    segment=re.compile(r"([0-9]+)\.kafka"),
    archive=None,
    description="<20-digit offset>.kafka",
)

#: Kafka 0.7's framing: the same entries, and a message may start with magic 0 or 1.
KAFKA07_FRAMING = Framing(
    walker=jf.MessageWalker,
    header_size=jf.LOG_OVERHEAD,
    length_field="LENGTH",
    overhead=jf.LOG_OVERHEAD,
    peek_length=jf.peek_length,
    min_length=jf.MIN_HEADER_SIZE_V0,
    candidate=re.compile(rb"(?=[\x00-\x7f][\x00-\xff]{3}[\x00\x01])"),
    candidate_min_length=jf.MIN_HEADER_SIZE_V0,
    decode=jf.decode_message,
    error_code=error_code,
)


@dataclass(frozen=True)
class Dialect:
    """One broker of the Jafka family: how it names segments and its marker, which message
    magics and compression codecs it reads."""

    name: str  # "jafka" | "kafka07": what ``info`` and JSON call it
    broker: str  # for texts: "Jafka" | "Kafka 0.7"
    names: LayoutNames
    framing: Framing
    marker: str
    magics: frozenset[int]
    codecs: frozenset[int]
    #: the smallest LENGTH its recovery keeps (Jafka ``Message.MinHeaderSize`` 6, Kafka 0.7 5)
    min_length: int

    def accepts_magic(self, magic: int) -> bool:
        return magic in self.magics

    def codec_text(self) -> str:
        return " or ".join(f"{c} ({jf.CODEC_NAMES[c]})" for c in sorted(self.codecs))


JAFKA = Dialect("jafka", "Jafka", NAMES, FRAMING, CLEAN_SHUTDOWN_FILE, frozenset({jf.MAGIC_V1}), frozenset({jf.CODEC_NONE, jf.CODEC_GZIP}), jf.MIN_HEADER_SIZE)
#: Kafka 0.7.2 (``kafka.message.Message``, ``CompressionCodec``, ``KafkaServer``)
KAFKA07 = Dialect(
    "kafka07",
    "Kafka 0.7",
    KAFKA07_NAMES,
    KAFKA07_FRAMING,
    ".kafka_cleanshutdown",
    frozenset({jf.MAGIC_V0, jf.MAGIC_V1}),
    frozenset({jf.CODEC_NONE, jf.CODEC_GZIP, jf.CODEC_SNAPPY}),
    jf.MIN_HEADER_SIZE_V0,
)
DIALECTS = {d.name: d for d in (JAFKA, KAFKA07)}


def _path_dialect(path: Path) -> Dialect:
    """KAFKA07 when ``path`` is a ``.kafka`` segment, or a directory holding Kafka 0.7 segments
    and no Jafka one; else JAFKA."""
    if is_regular_file(path):
        return KAFKA07 if KAFKA07_NAMES.looks_like_segment(path.name) else JAFKA
    if is_layout_path(path, KAFKA07_NAMES) and not is_layout_path(path, NAMES):
        return KAFKA07
    return JAFKA


def dialect_of(data: DataDir) -> Dialect:
    """The dialect ``open_jafka`` found for ``data``."""
    return DIALECTS.get(data.variant or "jafka", JAFKA)


def _classify_dir(name: str) -> tuple[str, tuple[str, int] | None, str | None]:
    """``LogManager.load``: every sub-directory must be ``<topic>-<int>``; anything else throws."""
    if "-" not in name:
        return "bad", None, 'no "-" in the name: Jafka stops loading ("error topic directory")'
    tp = parse_topic_partition(name)
    if tp is None:
        return "bad", None, "the text after the last '-' is not an int: Jafka's Integer.parseInt fails at start-up"
    return "partition", tp, None


def is_jafka_path(path: str | os.PathLike[str]) -> bool:
    """A ``.jafka`` segment, a partition directory holding one, or a data dir (the clean-shutdown
    marker, or a ``<topic>-<partition>`` directory holding a ``.jafka`` segment); the same for
    Kafka 0.7's ``.kafka`` segments (not its marker alone: Kafka 0.8 and later write it too)."""
    path = Path(path)
    return is_layout_path(path, NAMES, CLEAN_SHUTDOWN_FILE) or is_layout_path(path, KAFKA07_NAMES)


#: How many ``<topic>-<partition>`` directories ``is_kafka07_path`` looks into (a Kafka 0.8+ log
#: dir, which also holds ``.kafka_cleanshutdown``, is told apart in a bounded number of listings).
_PEEK_DIRS = 8


def is_kafka07_path(path: str | os.PathLike[str]) -> bool:
    """A Kafka 0.7 ``.kafka`` segment, a partition directory holding one, or a log dir whose
    first ``<topic>-<partition>`` directories hold one (looked at: at most ``_PEEK_DIRS``).  Kafka
    0.8 and later write ``.kafka_cleanshutdown`` too, and their ``.log`` segments never end in
    ``.kafka``: ``layouts`` asks this before it takes a directory for a Kafka log dir."""
    path = Path(path)
    if is_regular_file(path):
        return KAFKA07_NAMES.looks_like_segment(path.name)
    if not is_directory(path):
        return False
    try:
        entries = sorted(safe_listdir(path))
    except MqError:
        return False
    if has_segments(path, KAFKA07_NAMES):
        return True
    looked = 0
    for name in entries:
        sub = path / name
        if parse_topic_partition(name) is None or not is_directory(sub):
            continue
        if has_segments(sub, KAFKA07_NAMES):
            return True
        looked += 1
        if looked >= _PEEK_DIRS:
            break
    return False


def open_jafka(path: str | os.PathLike[str]) -> DataDir:
    """Open a Jafka data dir, partition directory or segment file (read-only), or a Kafka 0.7
    one (``DataDir.variant`` ``"kafka07"``)."""
    dialect = _path_dialect(Path(path))
    data = open_data_dir(path, dialect.names, _classify_dir, (dialect.marker,))
    data.variant = dialect.name
    return data


def clean_shutdown_marker(data: DataDir) -> bool | None:
    """Whether the dialect's marker (``.jafka_cleanshutdown``, ``.kafka_cleanshutdown``) is in the
    data dir (None when there is no data dir to look in)."""
    if data.data_dir is None:
        return None
    return (data.data_dir / dialect_of(data).marker).is_file()


def open_segment(segment: Segment) -> SegmentReader:
    return SegmentReader(segment)


def message_at(reader: SegmentReader, pos: int, dialect: Dialect = JAFKA) -> jf.Message | None:
    """The complete message with a valid CRC (magic 0 or 1) at ``pos``, at least ``dialect``'s
    smallest LENGTH long, read with one bounded read (the magic is judged by the caller:
    ``Dialect.accepts_magic``); None when there is none."""
    head = reader.pread(pos, 4)
    if len(head) < 4:
        return None
    length = jf.peek_length(head)
    if not dialect.min_length <= length <= min(MAX_MESSAGE_SIZE, reader.size - pos - 4):
        return None
    try:
        return jf.decode_message(reader.pread(pos, 4 + length), 0)
    except MqError:
        return None


def starts_at(reader: SegmentReader, pos: int, dialect: Dialect = JAFKA) -> bool:
    """Whether a complete message with a valid CRC starts at ``pos`` (``message_at``)."""
    return message_at(reader, pos, dialect) is not None


# --- writing (fixtures, tests) ----------------------------------------------------------------------


class JafkaLogWriter:
    """Append message sets to a partition directory like ``Log.append`` and roll like
    ``FixedSizeRollingStrategy``: after an append, when the last segment is *larger than*
    ``log_file_size``, a new segment named ``start + size`` is started."""

    def __init__(self, directory: str | os.PathLike[str], *, log_file_size: int = 1 << 30, start_offset: int = 0, dialect: Dialect = JAFKA) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.log_file_size = log_file_size
        self.suffix = dialect.names.suffix
        existing = sorted(self.directory.glob("*" + self.suffix))
        if existing:
            last = existing[-1]
            self.start = segnames.parse_jafka_file_name(last.name, self.suffix)
            self.size = last.stat().st_size
        else:
            self.start = start_offset
            self.size = 0
            (self.directory / self._name(start_offset)).touch()

    def _name(self, start: int) -> str:
        return f"{segnames.jafka_file_name(start)[: -len(segnames.JAFKA_SUFFIX)]}{self.suffix}"

    @property
    def next_offset(self) -> int:
        return self.start + self.size

    def append(self, messages: list[jf.Message]) -> list[int]:
        """Append; returns the offset of each (shallow) message."""
        offsets = []
        with open(self.directory / self._name(self.start), "ab") as f:
            for message in messages:
                raw = jf.encode_message(message)
                offsets.append(self.next_offset)
                f.write(raw)
                self.size += len(raw)
        if self.size > self.log_file_size:
            self.roll()
        return offsets

    def roll(self) -> None:
        self.start += self.size
        self.size = 0
        (self.directory / self._name(self.start)).touch()


def partition_dir(root: str | os.PathLike[str], topic: str, partition: int) -> Path:
    return Path(root) / f"{topic}-{partition}"


__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "DIALECTS",
    "FRAMING",
    "JAFKA",
    "KAFKA07",
    "KAFKA07_FRAMING",
    "KAFKA07_NAMES",
    "NAMES",
    "Dialect",
    "DataDir",
    "JafkaLogWriter",
    "Partition",
    "Segment",
    "clean_shutdown_marker",
    "dialect_of",
    "is_kafka07_path",
    "message_at",
    "is_jafka_path",
    "open_jafka",
    "open_segment",
    "partition_dir",
]
