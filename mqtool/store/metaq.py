"""MetaQ (Metamorphosis) data dirs (``dataPath``): detection, partitions, archives, streaming reads,
and a writer.

Layout (spec metaq.md C2, C5)::

    <dataPath>/
      transactions/                       the transaction journal (no '-': skipped by the loader)
      <topic>-<partition>/                split at the last '-' and Integer.parseInt'ed
        00000000000000000000.meta.zip     archived by deletePolicy=archive,<T>,true (one entry NNN.meta)
        00000000000000001024.meta.arc     archived by deletePolicy=archive,<T> (a rename)
        00000000000000002050.meta         live segments, named by their start offset (20 digits)

At start-up MetaQ lists ``*.meta`` (a non-numeric name fails), checks ``start + size == next
start`` for every pair of live segments (else the partition and the broker fail), and re-opens
the last one, which **always** runs recovery (unless ``-Dmeta.fast_boot=true``).  Archives are
never loaded again; the partition's first offset moves past them.  A directory without ``-`` is
skipped with a warning; one whose partition is not an int stops the broker; and since the store
re-creates the path as ``<topic>-<int>``, a partition written ``01`` is loaded from ``<topic>-1``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mqtool.errors import MqError
from mqtool.findings.code_ids import METAQ_CRC, METAQ_SIZE
from mqtool.formats import metaq as mq
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
    layout="metaq",
    suffix=segnames.METAQ_SUFFIX,
    segment=re.compile(r"([0-9]+)\.meta"),
    archive=re.compile(r"([0-9]+)\.meta\.(arc|zip)"),
    description="<20-digit offset>.meta (or .meta.arc / .meta.zip)",
)


def error_code(exc: MqError) -> str:
    """The code of a message MetaQ's ``MessageUtils`` rejects: a checksum mismatch is METAQ-CRC,
    anything else (msgLen) METAQ-SIZE."""
    return METAQ_CRC if exc.kind == "crc" else METAQ_SIZE


FRAMING = Framing(
    walker=mq.MessageWalker,
    header_size=mq.HEADER_LEN,
    length_field="msgLen",
    overhead=mq.HEADER_LEN,
    peek_length=mq.peek_length,
    # a message may start where 0 < msgLen < 2**24 and the checksum's top bit is clear
    candidate=re.compile(rb"(?=\x00(?!\x00\x00\x00)[\x00-\xff]{3}[\x00-\x7f])"),
    candidate_min_length=1,
    decode=mq.decode_message,
    error_code=error_code,
)

#: The transaction journal directory in the data dir (``<dataLogPath>/transactions``).
TRANSACTIONS_DIR = "transactions"


def _classify_dir(name: str) -> tuple[str, tuple[str, int] | None, str | None]:
    """``MessageStoreManager.loadDataDir``: no ``-`` is skipped; a non-int partition throws."""
    if "-" not in name:
        return "ignored", None, None
    tp = parse_topic_partition(name)
    if tp is None:
        return "bad", None, "the text after the last '-' is not an int: MetaQ's Integer.parseInt fails at start-up"
    topic, number = tp
    if name != f"{topic}-{number}":
        return "bad", None, f"partition written {name[len(topic) + 1 :]!r}: MetaQ opens {topic}-{number} instead and never reads this directory"
    return "partition", tp, None


def is_metaq_path(path: str | os.PathLike[str]) -> bool:
    """A ``.meta``/``.meta.arc``/``.meta.zip`` segment, a partition directory holding one, or a data
    dir with a ``<topic>-<partition>`` directory holding one."""
    return is_layout_path(Path(path), NAMES)


def open_metaq(path: str | os.PathLike[str]) -> DataDir:
    """Open a MetaQ data dir, partition directory or segment/archive file (read-only)."""
    return open_data_dir(path, NAMES, _classify_dir)


def open_segment(segment: Segment) -> SegmentReader:
    return SegmentReader(segment, segnames.metaq_zip_entry_name(segment))


def message_at(reader: SegmentReader, pos: int) -> mq.Message | None:
    """The complete, valid message at ``pos`` of the segment (a zero header is none), read with one
    bounded read; None when there is none."""
    head = reader.pread(pos, mq.HEADER_LEN)
    if len(head) < mq.HEADER_LEN or head == bytes(mq.HEADER_LEN):
        return None
    length = mq.peek_length(head)
    if not 0 <= length <= min(MAX_MESSAGE_SIZE, reader.size - pos - mq.HEADER_LEN):
        return None
    try:
        return mq.decode_message(reader.pread(pos, mq.HEADER_LEN + length), 0)
    except MqError:
        return None


def starts_at(reader: SegmentReader, pos: int) -> bool:
    """Whether a complete, valid message starts at ``pos`` of the segment (``message_at``)."""
    return message_at(reader, pos) is not None


def split_message(message: mq.Message) -> tuple[bytes | None, bytes, MqError | None]:
    """``(attribute, payload, error)``: a malformed attribute block leaves the whole data as payload."""
    try:
        attribute, payload = mq.split_data(message.data, message.flag)
    except MqError as exc:
        return None, message.data, exc
    return attribute, payload, None


# --- writing (fixtures, tests) ----------------------------------------------------------------------


class MetaqStoreWriter:
    """Append messages to a partition directory like ``MessageStore.append`` and roll like
    ``mayBeRoll``: after an append, when the last segment has *at least* ``max_segment_size``
    bytes, a new segment named ``start + size`` is started."""

    def __init__(self, directory: str | os.PathLike[str], *, max_segment_size: int = 1 << 30, offset_if_create: int = 0) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_segment_size = max_segment_size
        existing = sorted(self.directory.glob("*" + segnames.METAQ_SUFFIX))
        if existing:
            self.start = segnames.parse_metaq_file_name(existing[-1].name).start_offset
            self.size = existing[-1].stat().st_size
        else:
            self.start = offset_if_create
            self.size = 0
            (self.directory / segnames.metaq_file_name(offset_if_create)).touch()

    @property
    def next_offset(self) -> int:
        return self.start + self.size

    def append(self, message: mq.Message) -> int:
        """Append one message; returns its offset."""
        raw = mq.encode_message(message)
        offset = self.next_offset
        with open(self.directory / segnames.metaq_file_name(self.start), "ab") as f:
            f.write(raw)
        self.size += len(raw)
        if self.size >= self.max_segment_size:
            self.start += self.size
            self.size = 0
            (self.directory / segnames.metaq_file_name(self.start)).touch()
        return offset

    def archive(self, start_offset: int, *, compress: bool) -> Path:
        """``ArchiveDeletePolicy.process`` on the segment starting at ``start_offset``: rename to
        ``.meta.arc``, or write ``.meta.zip`` (one entry named like the segment) and delete it."""
        if start_offset == self.start:
            raise ValueError("the active (last) segment is never archived")
        source = self.directory / segnames.metaq_file_name(start_offset)
        target = self.directory / segnames.metaq_archive_name(source.name, compress=compress)
        if compress:
            target.write_bytes(mq.encode_zip_archive(source.name, source.read_bytes()))
            source.unlink()
        else:
            source.rename(target)
        return target


def partition_dir(root: str | os.PathLike[str], topic: str, partition: int) -> Path:
    return Path(root) / f"{topic}-{partition}"


__all__ = [
    "FRAMING",
    "NAMES",
    "TRANSACTIONS_DIR",
    "DataDir",
    "MetaqStoreWriter",
    "Partition",
    "Segment",
    "is_metaq_path",
    "open_metaq",
    "open_segment",
    "partition_dir",
]
