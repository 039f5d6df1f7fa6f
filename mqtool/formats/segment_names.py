"""Segment file names of every layout: the number a data file is named by, both ways.

Every layout names its data files after a number written as 20 zero-padded decimal digits (the
width of ``Long.MAX_VALUE``), followed by a layout suffix; RocketMQ's IndexFile alone is named
by a time::

    layout    name                                          upstream
    RocketMQ  <offset>                                      ``UtilAll.offset2FileName`` (CommitLog,
                                                            ConsumeQueue, ConsumeQueueExt,
                                                            BatchConsumeQueue: the byte offset of
                                                            the file's first byte in its queue)
    RocketMQ  yyyyMMddHHmmssSSS                             ``UtilAll.timeMillisToHumanString``
                                                            (IndexFile creation time, broker's
                                                            local time zone)
    Kafka     <base offset>.<kind>[.<operation>]            ``LogFileUtils.filenamePrefixFromOffset``;
                                                            kind log, index, timeindex, txnindex,
                                                            snapshot; operation deleted, cleaned,
                                                            swap (``LogFileUtils``, ``LocalLog``)
    Kafka     <end offset>-<10-digit epoch>.checkpoint      KRaft ``SnapshotPath`` (metadata log),
              [.part|.deleted]                              ``Snapshots.filenameFromSnapshotId``
    Jafka     <start offset>.jafka                          ``Log.nameFromOffset``
    Kafka 0.7 <start offset>.kafka                          ``kafka.log.Log.nameFromOffset``
                                                            (``Log.FileSuffix``, Kafka 0.7.2)
    MetaQ     <start offset>.meta[.arc|.zip]                ``MessageStore.nameFromOffset``, the
                                                            archive suffix as
                                                            ``ArchiveDeletePolicy`` appends it

Making a name: a negative offset (or, for Kafka, one beyond int64) is a ``ValueError``, as is an
unknown suffix.  Reading a name: readers accept what the broker itself accepts when it lists the
directory.  Kafka (``offsetFromFileName``), Jafka and MetaQ (``Long.parseLong``) take any number
of ASCII digits up to ``Long.MAX_VALUE``, so ``5.log`` is offset 5; a name that is not one of the
layout's names is a ``StoreLayoutError``.  RocketMQ lists only names of exactly 20 digits
(``ROCKETMQ_FILE_NAME``); an IndexFile name that is not a valid time reads as None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from typing import Literal, Protocol

from mqtool.errors import StoreLayoutError

_LONG_MAX = 2**63 - 1


def _long_digits(stem: str) -> bool:
    """ASCII digits whose value fits ``Long.parseLong`` (leading zeros allowed)."""
    return bool(stem) and stem.isascii() and stem.isdigit() and len(stem.lstrip("0")) <= 19 and int(stem) <= _LONG_MAX


# --- RocketMQ ------------------------------------------------------------------------------

#: A CommitLog / ConsumeQueue / ConsumeQueueExt / BatchConsumeQueue file name: 20 digits.
ROCKETMQ_FILE_NAME = re.compile(r"^\d{20}$")


def rocketmq_file_name(offset: int) -> str:
    """``UtilAll.offset2FileName``: the offset as 20 decimal digits."""
    if offset < 0:
        raise ValueError(f"a file offset cannot be negative: {offset}")
    return f"{offset:020d}"


def parse_rocketmq_file_name(name: str) -> int:
    """The offset a file named by ``ROCKETMQ_FILE_NAME`` starts at; ``StoreLayoutError`` otherwise."""
    if not ROCKETMQ_FILE_NAME.match(name):
        raise StoreLayoutError(expected="a 20-digit file offset", found=repr(name[:120]))
    return int(name)


_INDEX_NAME_LENGTH = 17


def parse_rocketmq_index_file_datetime(name: str) -> datetime | None:
    """The naive local ``datetime`` of a ``yyyyMMddHHmmssSSS`` name, or None for other names."""
    if len(name) != _INDEX_NAME_LENGTH or not name.isascii() or not name.isdigit():
        return None
    try:
        return datetime(
            int(name[0:4]),
            int(name[4:6]),
            int(name[6:8]),
            int(name[8:10]),
            int(name[10:12]),
            int(name[12:14]),
            int(name[14:17]) * 1000,
        )
    except ValueError:
        return None


def parse_rocketmq_index_file_name(name: str, tz: tzinfo | None = None) -> int | None:
    """Milliseconds since the epoch of an index file name, or None if ``name`` is not one.

    The broker writes its *local* time (``UtilAll.timeMillisToHumanString``); the name is read
    in ``tz``, by default this machine's local time zone.
    """
    moment = parse_rocketmq_index_file_datetime(name)
    if moment is None:
        return None
    try:
        aware = moment.replace(tzinfo=tz) if tz is not None else moment.astimezone()
    except (OverflowError, OSError, ValueError):
        return None
    delta = aware - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


def rocketmq_index_file_name(ms: int, tz: tzinfo | None = None) -> str:
    """``timeMillisToHumanString``: ``yyyyMMddHHmmssSSS`` in ``tz`` (default: local time).

    ``ValueError`` for a time outside years 1..9999.
    """
    try:
        moment = datetime.fromtimestamp(ms // 1000, tz=tz or timezone.utc)
        if tz is None:
            moment = moment.astimezone()
    except (OverflowError, OSError) as exc:
        raise ValueError(f"{ms} ms is outside the years an index file name can hold") from exc
    return f"{moment.year:04d}{moment.month:02d}{moment.day:02d}{moment.hour:02d}{moment.minute:02d}{moment.second:02d}{ms % 1000:03d}"


# --- Kafka ---------------------------------------------------------------------------------

KafkaFileKind = Literal["log", "index", "timeindex", "txnindex", "snapshot"]
KafkaOperation = Literal["deleted", "cleaned", "swap"]
KAFKA_FILE_KINDS: tuple[str, ...] = ("log", "index", "timeindex", "txnindex", "snapshot")
KAFKA_OPERATIONS: tuple[str, ...] = ("deleted", "cleaned", "swap")

#: ``<20-digit end offset>-<10-digit epoch>.checkpoint``: a KRaft snapshot (metadata log only);
#: group 3 is ``.part`` (being written) or ``.deleted``.
KAFKA_KRAFT_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint(\.part|\.deleted)?$")


def kafka_offset_prefix(offset: int) -> str:
    """``LogFileUtils.filenamePrefixFromOffset``: at least 20 digits, zero padded."""
    if not 0 <= offset <= _LONG_MAX:
        raise ValueError(f"offset {offset} is not a non-negative int64")
    return f"{offset:020d}"


@dataclass(frozen=True)
class KafkaFileName:
    """A parsed segment-file name: ``<base_offset>.<kind>[.<operation>]``."""

    base_offset: int
    kind: KafkaFileKind
    operation: KafkaOperation | None = None

    @property
    def name(self) -> str:
        """The canonical spelling (20-digit prefix)."""
        return kafka_file_name(self.base_offset, self.kind, self.operation)


def kafka_file_name(base_offset: int, kind: str, operation: str | None = None) -> str:
    if kind not in KAFKA_FILE_KINDS:
        raise ValueError(f"unknown segment file kind {kind!r}")
    if operation is not None and operation not in KAFKA_OPERATIONS:
        raise ValueError(f"unknown operation suffix {operation!r}")
    name = f"{kafka_offset_prefix(base_offset)}.{kind}"
    return f"{name}.{operation}" if operation else name


def parse_kafka_file_name(name: str) -> KafkaFileName:
    """Parse ``00000000000000368769.index`` or ``...log.deleted``; anything else is ``StoreLayoutError``.

    The offset is the text before the first ``.`` (``offsetFromFileName``); any number of
    ASCII digits is accepted, as upstream does.
    """
    parts = name.split(".")
    if not 2 <= len(parts) <= 3 or not _long_digits(parts[0]):
        raise StoreLayoutError(expected="a segment file name <offset>.<suffix>[.deleted|.cleaned|.swap]", found=repr(name[:120]))
    kind = parts[1]
    operation = parts[2] if len(parts) == 3 else None
    if kind not in KAFKA_FILE_KINDS or (operation is not None and operation not in KAFKA_OPERATIONS):
        raise StoreLayoutError(
            expected=f"suffix .{'|.'.join(KAFKA_FILE_KINDS)} optionally followed by .{'|.'.join(KAFKA_OPERATIONS)}",
            found=repr(name[:120]),
        )
    return KafkaFileName(int(parts[0]), kind, operation)  # type: ignore[arg-type]


def parse_kafka_file_name_or_none(name: str) -> KafkaFileName | None:
    """``parse_kafka_file_name``, or None for a name that is not a segment file's."""
    try:
        return parse_kafka_file_name(name)
    except StoreLayoutError:
        return None


# --- Jafka ---------------------------------------------------------------------------------

JAFKA_SUFFIX = ".jafka"


def jafka_file_name(start_offset: int) -> str:
    """``Log.nameFromOffset``: 20-digit zero-padded start offset + ``.jafka``."""
    if start_offset < 0:
        raise ValueError("a segment start offset is never negative")
    return f"{start_offset:020d}{JAFKA_SUFFIX}"


def parse_jafka_file_name(name: str, suffix: str = JAFKA_SUFFIX) -> int:
    """The start offset in a ``.jafka`` file name (any number of ASCII digits, as upstream);
    ``suffix``: ``KAFKA07_SUFFIX`` for a Kafka 0.7 segment."""
    stem = name[: -len(suffix)] if name.endswith(suffix) else ""
    if not _long_digits(stem):
        raise StoreLayoutError(expected=f"<digits>{suffix}", found=repr(name[:120]))
    return int(stem)


# --- Kafka 0.7 (the format Jafka follows) ---------------------------------------------------

#: Kafka 0.7's ``Log.FileSuffix``: ``Log.nameFromOffset`` pads the start offset to 20 digits.
KAFKA07_SUFFIX = ".kafka"


def kafka07_file_name(start_offset: int) -> str:
    """Kafka 0.7's ``Log.nameFromOffset``: 20-digit zero-padded start offset + ``.kafka``."""
    if start_offset < 0:
        raise ValueError("a segment start offset is never negative")
    return f"{start_offset:020d}{KAFKA07_SUFFIX}"


# --- MetaQ ---------------------------------------------------------------------------------

METAQ_SUFFIX = ".meta"
METAQ_ARCHIVE_SUFFIXES = {"arc": ".arc", "zip": ".zip"}
_METAQ_NAME = re.compile(r"([0-9]+)\.meta(?:\.(arc|zip))?")


@dataclass(frozen=True)
class MetaqFileName:
    """``NNN.meta`` (``archive`` None), ``NNN.meta.arc`` or ``NNN.meta.zip``."""

    start_offset: int
    archive: Literal["arc", "zip"] | None = None

    @property
    def name(self) -> str:
        return metaq_file_name(self.start_offset, self.archive)

    @property
    def segment_name(self) -> str:
        """The name of the live segment (what a zip archive's single entry is called)."""
        return metaq_file_name(self.start_offset)


def metaq_file_name(start_offset: int, archive: str | None = None) -> str:
    """``MessageStore.nameFromOffset`` (+ ``.arc``/``.zip`` as ``ArchiveDeletePolicy`` appends)."""
    if start_offset < 0:
        raise ValueError("a segment start offset is never negative")
    if archive is not None and archive not in METAQ_ARCHIVE_SUFFIXES:
        raise ValueError(f"unknown archive kind {archive!r}")
    return f"{start_offset:020d}{METAQ_SUFFIX}{METAQ_ARCHIVE_SUFFIXES[archive] if archive else ''}"


def parse_metaq_file_name(name: str) -> MetaqFileName:
    match = _METAQ_NAME.fullmatch(name)
    if not match or not _long_digits(match.group(1)):
        raise StoreLayoutError(expected="<digits>.meta, <digits>.meta.arc or <digits>.meta.zip", found=repr(name[:120]))
    return MetaqFileName(int(match.group(1)), match.group(2))  # type: ignore[arg-type]


def metaq_archive_name(segment_name: str, *, compress: bool) -> str:
    """The name ``ArchiveDeletePolicy.process`` gives an expired segment (``.zip`` or ``.arc``)."""
    parsed = parse_metaq_file_name(segment_name)
    if parsed.archive is not None:
        raise StoreLayoutError(expected="a live .meta segment name", found=repr(segment_name))
    return metaq_file_name(parsed.start_offset, "zip" if compress else "arc")


class MetaqSegmentFile(Protocol):
    """What the two functions below need of a segment file found on disk."""

    @property
    def name(self) -> str: ...

    @property
    def start_offset(self) -> int: ...

    @property
    def archive(self) -> str | None: ...

    @property
    def named(self) -> bool:
        """False when the file name does not carry an offset (a file given on the command line)."""
        ...


def metaq_zip_entry_name(segment: MetaqSegmentFile) -> str | None:
    """The entry a ``NNN.meta.zip`` must hold: ``NNN.meta`` (None for a file without such a name)."""
    if segment.archive != "zip" or not segment.named:
        return None
    return segment.name[: -len(".zip")]


def metaq_live_segment_name(segment: MetaqSegmentFile) -> str:
    """The live segment name a file stands for (``NNN.meta`` for ``NNN.meta.zip`` too)."""
    if segment.named:
        return metaq_file_name(segment.start_offset)
    return segment.name


_INT32 = re.compile(r"[+-]?\d+")  # \d: any Unicode decimal digit, as Character.digit accepts


def parse_topic_partition(name: str) -> tuple[str, int] | None:
    """``<topic>-<partition>`` split at the last ``-`` and parsed like Java's ``Integer.parseInt``
    (optional sign, decimal digits, 32-bit range); None when the broker would not accept it."""
    index = name.rfind("-")
    if index < 0:
        return None
    text = name[index + 1 :]
    if not _INT32.fullmatch(text):
        return None
    value = int(text)
    if not -(2**31) <= value < 2**31:
        return None
    return name[:index], value


__all__ = [
    "parse_topic_partition",
    "ROCKETMQ_FILE_NAME",
    "rocketmq_file_name",
    "parse_rocketmq_file_name",
    "rocketmq_index_file_name",
    "parse_rocketmq_index_file_name",
    "parse_rocketmq_index_file_datetime",
    "KafkaFileKind",
    "KafkaOperation",
    "KAFKA_FILE_KINDS",
    "KAFKA_OPERATIONS",
    "KAFKA_KRAFT_SNAPSHOT_NAME",
    "kafka_offset_prefix",
    "KafkaFileName",
    "kafka_file_name",
    "parse_kafka_file_name",
    "parse_kafka_file_name_or_none",
    "JAFKA_SUFFIX",
    "jafka_file_name",
    "parse_jafka_file_name",
    "KAFKA07_SUFFIX",
    "kafka07_file_name",
    "METAQ_SUFFIX",
    "METAQ_ARCHIVE_SUFFIXES",
    "MetaqFileName",
    "metaq_file_name",
    "parse_metaq_file_name",
    "metaq_archive_name",
    "MetaqSegmentFile",
    "metaq_zip_entry_name",
    "metaq_live_segment_name",
]
