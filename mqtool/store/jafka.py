"""Jafka data dirs (``log.dir``): detection, the partition/segment model, streaming reads, a writer.

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
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mqtool.errors import MqError
from mqtool.formats import jafka as jf
from mqtool.formats import segment_names as segnames
from mqtool.store.legacy import (
    MAX_MESSAGE_SIZE,
    DataDir,
    Framing,
    LayoutNames,
    Partition,
    Segment,
    SegmentReader,
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
ERROR_CODES: dict[str | None, str] = {"crc": "JAFKA-CRC", "magic": "JAFKA-MAGIC"}


def error_code(exc: MqError) -> str:
    """The code of a Jafka message a decode rejects (``ERROR_CODES``)."""
    return ERROR_CODES.get(exc.kind, "JAFKA-SIZE")


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
    marker, or a ``<topic>-<partition>`` directory holding a ``.jafka`` segment)."""
    return is_layout_path(Path(path), NAMES, CLEAN_SHUTDOWN_FILE)


def open_jafka(path: str | os.PathLike[str]) -> DataDir:
    """Open a Jafka data dir, partition directory or segment file (read-only)."""
    return open_data_dir(path, NAMES, _classify_dir, (CLEAN_SHUTDOWN_FILE,))


def clean_shutdown_marker(data: DataDir) -> bool | None:
    """Whether ``.jafka_cleanshutdown`` is in the data dir (None when there is no data dir to look in)."""
    if data.data_dir is None:
        return None
    return (data.data_dir / CLEAN_SHUTDOWN_FILE).is_file()


def open_segment(segment: Segment) -> SegmentReader:
    return SegmentReader(segment)



def starts_at(reader: SegmentReader, pos: int) -> bool:
    """Whether a complete, valid magic-1 message starts at ``pos`` of the segment."""
    head = reader.pread(pos, 4)
    if len(head) < 4:
        return False
    length = jf.peek_length(head)
    if not jf.MIN_HEADER_SIZE <= length <= min(MAX_MESSAGE_SIZE, reader.size - pos - 4):
        return False
    try:
        jf.decode_message(reader.pread(pos, 4 + length), 0)
    except MqError:
        return False
    return True


# --- writing (fixtures, tests) ----------------------------------------------------------------------


class JafkaLogWriter:
    """Append message sets to a partition directory like ``Log.append`` and roll like
    ``FixedSizeRollingStrategy``: after an append, when the last segment is *larger than*
    ``log_file_size``, a new segment named ``start + size`` is started."""

    def __init__(self, directory: str | os.PathLike[str], *, log_file_size: int = 1 << 30, start_offset: int = 0) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.log_file_size = log_file_size
        existing = sorted(self.directory.glob("*" + segnames.JAFKA_SUFFIX))
        if existing:
            last = existing[-1]
            self.start = segnames.parse_jafka_file_name(last.name)
            self.size = last.stat().st_size
        else:
            self.start = start_offset
            self.size = 0
            (self.directory / segnames.jafka_file_name(start_offset)).touch()

    @property
    def next_offset(self) -> int:
        return self.start + self.size

    def append(self, messages: list[jf.Message]) -> list[int]:
        """Append; returns the offset of each (shallow) message."""
        offsets = []
        with open(self.directory / segnames.jafka_file_name(self.start), "ab") as f:
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
        (self.directory / segnames.jafka_file_name(self.start)).touch()


def partition_dir(root: str | os.PathLike[str], topic: str, partition: int) -> Path:
    return Path(root) / f"{topic}-{partition}"


__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "FRAMING",
    "NAMES",
    "DataDir",
    "JafkaLogWriter",
    "Partition",
    "Segment",
    "clean_shutdown_marker",
    "is_jafka_path",
    "open_jafka",
    "open_segment",
    "partition_dir",
]
