"""Kafka's small text files, and the names of partition directories.

Checkpoint files (``server-common/.../CheckpointFile.java``; entry formats in
``storage/.../checkpoint/OffsetCheckpointFile.java`` and ``LeaderEpochCheckpointFile.java``),
UTF-8, one item per line::

    line   content                        meaning
    1      <version>                      int32, must be 0 for every file below
    2      <count>                        int32, number of entry lines that follow
    3..    <entry>                        one per line

    file                                 entry                          where
    recovery-point-offset-checkpoint     <topic> <partition> <offset>   log dir (flushed up to)
    log-start-offset-checkpoint          <topic> <partition> <offset>   log dir
    replication-offset-checkpoint        <topic> <partition> <offset>   log dir (high watermarks)
    cleaner-offset-checkpoint            <topic> <partition> <offset>   log dir (first dirty offset)
    leader-epoch-checkpoint              <epoch> <startOffset>          partition dir

Reading follows ``CheckpointReadBuffer``: lines end at ``\\n``, ``\\r`` or ``\\r\\n`` (Java
``readLine``); an empty file, or a file holding only the version line, is an empty list; an
entry line is split on runs of Java whitespace (``\\s+``, so a leading blank makes an extra
empty token) and must give exactly 3 (offsets) or 2 (epochs) tokens; numbers are Java
``Integer.parseInt``/``Long.parseLong`` (ASCII digits with an optional sign here; Java also
takes other Unicode digits); the count must equal the number of entry lines.  Anything else
raises ``CorruptDataError`` located at the byte position of the offending line.

``partition.metadata`` (``PartitionMetadataFile``/``PartitionMetadataReadBuffer``, 2.8.0+):
exactly ``version: 0\\ntopic_id: <uuid>`` with no trailing newline.  The reader splits each of
the first two lines on ``:\\s+`` and wants 2 tokens (the key names are not checked); the
version must be >= 0; the topic id is a Kafka ``Uuid``: 16 bytes as unpadded base64url
(22 characters; 24 with ``==`` are accepted too); the all-zero id is refused.  Later lines are
ignored.

``meta.properties`` (``metadata/.../properties/MetaProperties.java``): a Java properties file
(``Properties.load`` from a byte stream, i.e. ISO-8859-1 with ``\\uXXXX`` escapes, ``#``/``!``
comments, ``=``/``:``/blank separators, backslash continuation lines).  ``version`` 0
(ZooKeeper mode: ``broker.id``, ``cluster.id`` since 2.4) or 1 (KRaft: ``node.id`` and
``cluster.id`` required, ``directory.id`` since 3.7).  The broker writes
``#\\n#<date>\\n`` then the properties in hash order.

``.kafka_cleanshutdown`` (``CleanShutdownFileHandler``): empty up to 3.6, then JSON
``{"version":0,"brokerEpoch":N}``.  Its *existence* is what marks a clean shutdown; upstream
treats unreadable content as "no broker epoch".

Checksums: none of these files has one.

Partial writes: every file here is written to ``<name>.tmp``, fsynced and atomically renamed
(``.kafka_cleanshutdown`` is written in place, ``meta.properties`` via its own ``.tmp``), so
the live file is either the old or the new version; a crash can leave a stray ``*.tmp`` file
beside it (which decodes like the real file, possibly truncated: a missing last line shows as
a count mismatch).

Names (``storage/.../log/LogFileUtils.java``, ``core/.../log/LocalLog.scala``): segment file
names (``LogFileUtils.filenamePrefixFromOffset``) are in ``mqtool.formats.segment_names``.
Partition directories are ``<topic>-<partition>``, or
``<topic>-<partition>.<uuid32hex>-delete`` (also ``-future``, ``-stray``); for ``-delete`` and
``-stray`` the topic is cut so that the name stays within 255 characters.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from mqtool.errors import CorruptDataError, StoreLayoutError, UnsupportedFormatError
from mqtool.formats._binary import Buffer, decode_utf8

CURRENT_VERSION = 0

RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
OFFSET_CHECKPOINT_FILES = (
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CLEANER_OFFSET_CHECKPOINT,
)

#: ``Uuid.METADATA_TOPIC_ID`` (= ``ONE_UUID``) as written in ``__cluster_metadata-0/partition.metadata``.
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

# Java's ``\\s`` (without UNICODE_CHARACTER_CLASS) and ``\\S``.
_JAVA_SPACE = " \t\n\x0b\f\r"
_WHITESPACES = re.compile(f"[{_JAVA_SPACE}]+")
_COLON_WHITESPACES = re.compile(f":[{_JAVA_SPACE}]+")
_JAVA_INT = re.compile(r"[+-]?[0-9]+\Z")
_LINE_END = re.compile(rb"\r\n|\r|\n")
_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}(==)?")
#: ``String.trim``: every char <= U+0020.
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))


# --- shared helpers -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    position: int
    text: str


def _java_lines(buf: Buffer) -> list[_Line]:
    """``BufferedReader.readLine`` over UTF-8 bytes: ``\\n``, ``\\r`` and ``\\r\\n`` end a line."""
    data = bytes(buf)
    lines = []
    pos = 0
    for match in _LINE_END.finditer(data):
        lines.append(_Line(pos, decode_utf8(data[pos : match.start()], pos, "text line")))
        pos = match.end()
    if pos < len(data):
        lines.append(_Line(pos, decode_utf8(data[pos:], pos, "text line")))
    return lines


def _java_split(pattern: re.Pattern[str], text: str) -> list[str]:
    """``String.split(regex)``: a leading empty token is kept, trailing empty tokens dropped."""
    parts = pattern.split(text)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _bounded_int(text: str, bounds: tuple[int, int]) -> int | None:
    """Java ``parseInt``/``parseLong`` of ASCII text, or None (also for absurdly long input)."""
    if not _JAVA_INT.match(text) or len(text.lstrip("+-").lstrip("0")) > 20:
        return None
    value = int(text)
    return value if bounds[0] <= value <= bounds[1] else None


def _java_int(text: str, bounds: tuple[int, int], position: int, what: str) -> int:
    value = _bounded_int(text, bounds)
    if value is None:
        bits = 32 if bounds == INT32 else 64
        raise CorruptDataError(f"malformed {what}", position=position, expected=f"a base-10 int{bits}", found=repr(text[:80]))
    return value


def decode_kafka_uuid(text: str, position: int | None = None, what: str = "Uuid") -> bytes:
    """``Uuid.fromString``: unpadded (or ``==``-padded) base64url of exactly 16 bytes."""
    if not _UUID_TEXT.fullmatch(text):
        raise CorruptDataError(
            f"malformed {what}",
            position=position,
            expected="22 base64url characters (a Kafka Uuid)",
            found=repr(text[:40]),
        )
    # 22 characters carry 132 bits: like Java's decoder, ignore the 4 unused low bits.
    return base64.urlsafe_b64decode(text[:22] + "==")


def encode_kafka_uuid(raw: bytes) -> str:
    """``Uuid.toString``: 16 bytes as base64url without padding."""
    if len(raw) != 16:
        raise ValueError("a Kafka Uuid is 16 bytes")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


# --- checkpoint files ---------------------------------------------------------------------


@dataclass(frozen=True)
class TopicPartitionOffset:
    """One entry of an offset checkpoint file."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class EpochEntry:
    """One entry of ``leader-epoch-checkpoint`` (upstream ``EpochEntry``)."""

    epoch: int
    start_offset: int


@dataclass(frozen=True)
class OffsetCheckpoint:
    """``recovery-point-offset-checkpoint`` / ``log-start-offset-checkpoint`` /
    ``replication-offset-checkpoint`` / ``cleaner-offset-checkpoint`` contents, in file order."""

    entries: tuple[TopicPartitionOffset, ...] = ()

    def as_dict(self) -> dict[tuple[str, int], int]:
        """What ``OffsetCheckpointFile.read`` returns (a later duplicate wins)."""
        return {(e.topic, e.partition): e.offset for e in self.entries}


@dataclass(frozen=True)
class LeaderEpochCheckpoint:
    entries: tuple[EpochEntry, ...] = ()


T = TypeVar("T")


def _decode_checkpoint(buf: Buffer, parse_entry: Callable[[_Line], T], what: str) -> list[T]:
    lines = _java_lines(buf)
    if not lines:
        return []
    version = _java_int(lines[0].text, INT32, lines[0].position, f"version line in {what}")
    if version != CURRENT_VERSION:
        raise CorruptDataError(
            f"unrecognised {what} version",
            position=lines[0].position,
            expected=f"version {CURRENT_VERSION}",
            found=str(version),
        )
    if len(lines) == 1:
        return []
    count_line = lines[1]
    count = _java_int(count_line.text, INT32, count_line.position, f"entry count line in {what}")
    if count < 0:
        raise CorruptDataError(f"malformed entry count line in {what}", position=count_line.position, expected="a count >= 0", found=str(count))
    entries = [parse_entry(line) for line in lines[2:]]
    if len(entries) != count:
        raise CorruptDataError(
            f"entry count mismatch in {what}",
            position=count_line.position,
            expected=f"{count} entries",
            found=f"{len(entries)} entry lines",
        )
    return entries


def _malformed(line: _Line, what: str, expected: str) -> CorruptDataError:
    return CorruptDataError(f"malformed line in {what}", position=line.position, expected=expected, found=repr(line.text[:80]))


def _parse_offset_entry(line: _Line) -> TopicPartitionOffset:
    parts = _java_split(_WHITESPACES, line.text)
    if len(parts) != 3:
        raise _malformed(line, "offset checkpoint", "'<topic> <partition> <offset>'")
    return TopicPartitionOffset(
        parts[0],
        _java_int(parts[1], INT32, line.position, "partition in offset checkpoint"),
        _java_int(parts[2], INT64, line.position, "offset in offset checkpoint"),
    )


def _parse_epoch_entry(line: _Line) -> EpochEntry:
    parts = _java_split(_WHITESPACES, line.text)
    if len(parts) != 2:
        raise _malformed(line, "leader-epoch-checkpoint", "'<epoch> <startOffset>'")
    return EpochEntry(
        _java_int(parts[0], INT32, line.position, "epoch in leader-epoch-checkpoint"),
        _java_int(parts[1], INT64, line.position, "start offset in leader-epoch-checkpoint"),
    )


def decode_offset_checkpoint(buf: Buffer) -> OffsetCheckpoint:
    """Decode any of the four offset checkpoint files."""
    return OffsetCheckpoint(tuple(_decode_checkpoint(buf, _parse_offset_entry, "offset checkpoint")))


def decode_leader_epoch_checkpoint(buf: Buffer) -> LeaderEpochCheckpoint:
    return LeaderEpochCheckpoint(tuple(_decode_checkpoint(buf, _parse_epoch_entry, "leader-epoch-checkpoint")))


def _check_range(value: int, bounds: tuple[int, int], what: str) -> None:
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{what} {value} is out of range")


def _encode_checkpoint(lines: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in [str(CURRENT_VERSION), str(len(lines)), *lines]).encode("utf-8")


def encode_offset_checkpoint(checkpoint: OffsetCheckpoint) -> bytes:
    """``CheckpointWriteBuffer.write`` with ``\\n`` line ends: version, count, ``topic partition offset``."""
    lines = []
    for e in checkpoint.entries:
        if not e.topic or any(c in _JAVA_SPACE for c in e.topic):
            raise ValueError(f"topic {e.topic!r} is empty or contains whitespace")
        _check_range(e.partition, INT32, "partition")
        _check_range(e.offset, INT64, "offset")
        lines.append(f"{e.topic} {e.partition} {e.offset}")
    return _encode_checkpoint(lines)


def encode_leader_epoch_checkpoint(checkpoint: LeaderEpochCheckpoint) -> bytes:
    lines = []
    for e in checkpoint.entries:
        _check_range(e.epoch, INT32, "epoch")
        _check_range(e.start_offset, INT64, "start offset")
        lines.append(f"{e.epoch} {e.start_offset}")
    return _encode_checkpoint(lines)


# --- partition.metadata -------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionMetadata:
    """``partition.metadata``: the topic id (base64url ``Uuid``, as written) and the file version."""

    topic_id: str
    version: int = CURRENT_VERSION

    @property
    def topic_id_bytes(self) -> bytes:
        return decode_kafka_uuid(self.topic_id)


def decode_partition_metadata(buf: Buffer) -> PartitionMetadata:
    """``PartitionMetadataReadBuffer.read`` (stricter only in raising where upstream hits a null line)."""
    lines = _java_lines(buf)
    if not lines:
        raise CorruptDataError("empty partition.metadata", position=0, expected="'version: <n>'", found="end of data")
    first = lines[0]
    parts = _java_split(_COLON_WHITESPACES, first.text)
    if len(parts) != 2:
        raise _malformed(first, "partition.metadata", "'version: <n>'")
    version = _java_int(parts[1], INT32, first.position, "version in partition.metadata")
    if version < CURRENT_VERSION:
        raise CorruptDataError("unrecognized partition.metadata version", position=first.position, expected="version >= 0", found=str(version))
    if len(lines) < 2:
        raise CorruptDataError("partition.metadata has no topic_id line", position=len(buf), expected="'topic_id: <uuid>'", found="end of data")
    second = lines[1]
    parts = _java_split(_COLON_WHITESPACES, second.text)
    if len(parts) != 2:
        raise _malformed(second, "partition.metadata", "'topic_id: <uuid>'")
    raw = decode_kafka_uuid(parts[1], second.position, "topic_id")
    if raw == bytes(16):
        raise CorruptDataError("invalid topic ID in partition.metadata", position=second.position, expected="a non-zero Uuid", found=parts[1])
    return PartitionMetadata(parts[1], version)


def encode_partition_metadata(metadata: PartitionMetadata) -> bytes:
    """``PartitionMetadata.encode``: ``version: V\\ntopic_id: T`` without a final newline."""
    if decode_kafka_uuid(metadata.topic_id) == bytes(16):
        raise ValueError("the all-zero topic id is never written")
    _check_range(metadata.version, (0, INT32[1]), "version")
    return f"version: {metadata.version}\ntopic_id: {metadata.topic_id}".encode()


# --- meta.properties ----------------------------------------------------------------------

VERSION_PROP = "version"
CLUSTER_ID_PROP = "cluster.id"
BROKER_ID_PROP = "broker.id"
NODE_ID_PROP = "node.id"
DIRECTORY_ID_PROP = "directory.id"
META_PROPERTIES_VERSIONS = (0, 1)

_PROP_BLANK = " \t\f"


@dataclass(frozen=True)
class JavaProperty:
    key: str
    value: str
    #: Byte position of the logical line holding the property.
    position: int


def _utf16_join(text: str) -> str:
    """Turn surrogate pairs produced by ``\\uXXXX`` escapes into the characters they encode."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _load_convert(text: str, position: int) -> str:
    """``Properties.loadConvert``: backslash escapes, ``\\uXXXX`` with exactly 4 hex digits."""
    if "\\" not in text:
        return text
    out = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        i += 1
        if c != "\\" or i >= n:
            out.append(c)
            continue
        c = text[i]
        i += 1
        if c == "u":
            digits = text[i : i + 4]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise CorruptDataError("malformed \\uxxxx encoding in properties", position=position, expected="4 hex digits", found=repr(digits))
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append({"t": "\t", "r": "\r", "n": "\n", "f": "\f"}.get(c, c))
    return _utf16_join("".join(out))


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """``Properties.LineReader``: skip blanks and comments, join backslash-continued lines."""
    result = []
    i = 0
    n = len(text)
    while i < n:
        while i < n and text[i] in _PROP_BLANK + "\r\n":
            i += 1
        if i >= n:
            break
        start = i
        if text[i] in "#!":
            while i < n and text[i] not in "\r\n":
                i += 1
            continue
        parts = []
        while True:
            j = i
            while j < n and text[j] not in "\r\n":
                j += 1
            segment = text[i:j]
            backslashes = len(segment) - len(segment.rstrip("\\"))
            i = j
            if i < n:  # consume the line terminator
                i += 2 if text.startswith("\r\n", i) else 1
            if backslashes % 2 == 0:
                parts.append(segment)
                break
            parts.append(segment[:-1])
            if j >= n:
                break
            while i < n and text[i] in _PROP_BLANK:
                i += 1
        result.append((start, "".join(parts)))
    return result


def load_java_properties(buf: Buffer) -> list[JavaProperty]:
    """``Properties.load(InputStream)``: ISO-8859-1 text, every property in file order."""
    text = bytes(buf).decode("latin-1")
    props = []
    for start, line in _logical_lines(text):
        key_end = 0
        value_start = len(line)
        has_sep = False
        backslash = False
        while key_end < len(line):
            c = line[key_end]
            if c in "=:" and not backslash:
                value_start = key_end + 1
                has_sep = True
                break
            if c in _PROP_BLANK and not backslash:
                value_start = key_end + 1
                break
            backslash = (not backslash) if c == "\\" else False
            key_end += 1
        while value_start < len(line):
            c = line[value_start]
            if c not in _PROP_BLANK:
                if not has_sep and c in "=:":
                    has_sep = True
                else:
                    break
            value_start += 1
        key = _load_convert(line[:key_end], start)
        value = _load_convert(line[value_start:], start)
        props.append(JavaProperty(key, value, start))
    return props


def _save_convert(text: str, *, is_key: bool) -> str:
    """``Properties.saveConvert`` with ``escUnicode``: pure ASCII output."""
    out = []
    units = text.encode("utf-16-be", "surrogatepass")
    chars = [chr(int.from_bytes(units[k : k + 2], "big")) for k in range(0, len(units), 2)]
    for index, c in enumerate(chars):
        if c == " ":
            out.append("\\ " if is_key or index == 0 else " ")
        elif c in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[c])
        elif c in "=:#!\\":
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


def encode_java_properties(items: Iterable[tuple[str, str]], *, comments: Iterable[str] = ()) -> bytes:
    """``Properties.store``: ``#comment`` lines then ``key=value`` lines, escaped to ASCII."""
    lines = []
    for comment in comments:
        if any(not " " <= c <= "~" for c in comment):
            raise ValueError(f"comment {comment!r} must be printable ASCII on one line")
        lines.append(f"#{comment}")
    lines += [f"{_save_convert(k, is_key=True)}={_save_convert(v, is_key=False)}" for k, v in items]
    return "".join(f"{line}\n" for line in lines).encode("ascii")


@dataclass(frozen=True)
class MetaProperties:
    """``meta.properties`` of a log dir (upstream ``MetaProperties``).

    ``node_id`` is ``broker.id`` in version 0 and ``node.id`` in version 1; ``directory_id`` is
    the base64url ``Uuid`` as written.  ``extra`` holds every other property (upstream ignores
    them; a ``node.id`` in a version-0 file is one of them).
    """

    version: int
    node_id: int | None = None
    cluster_id: str | None = None
    directory_id: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def broker_id(self) -> int | None:
        return self.node_id

    def _modeled_keys(self) -> tuple[str, ...]:
        id_key = BROKER_ID_PROP if self.version == 0 else NODE_ID_PROP
        return (VERSION_PROP, id_key, CLUSTER_ID_PROP, DIRECTORY_ID_PROP)


def decode_meta_properties(buf: Buffer) -> MetaProperties:
    """``MetaProperties.Builder(Properties).build()``; every failure names the property's line."""
    props: dict[str, JavaProperty] = {}
    for prop in load_java_properties(buf):
        props.pop(prop.key, None)
        props[prop.key] = prop  # later duplicates win, as in the Hashtable

    def int_prop(key: str) -> int:
        prop = props[key]
        return _java_int(prop.value, INT32, prop.position, key)

    version_prop = props.get(VERSION_PROP)
    if version_prop is None:
        version = 0
    else:
        version = _java_int(version_prop.value.strip(_JAVA_TRIM), INT32, version_prop.position, VERSION_PROP)
    if version not in META_PROPERTIES_VERSIONS:
        raise UnsupportedFormatError(
            "unknown meta.properties version",
            position=version_prop.position if version_prop else None,
            expected="version 0 or 1",
            found=str(version),
        )
    id_key = BROKER_ID_PROP if version == 0 else NODE_ID_PROP
    node_id = int_prop(id_key) if id_key in props else None
    cluster = props.get(CLUSTER_ID_PROP)
    if version == 1:
        for key, present in ((CLUSTER_ID_PROP, cluster is not None), (NODE_ID_PROP, node_id is not None)):
            if not present:
                raise CorruptDataError(f"{key} was not found", position=0, expected=f"{key} in a version-1 meta.properties", found="none")
    directory = props.get(DIRECTORY_ID_PROP)
    if directory is not None:
        decode_kafka_uuid(directory.value, directory.position, DIRECTORY_ID_PROP)
    meta = MetaProperties(
        version=version,
        node_id=node_id,
        cluster_id=cluster.value if cluster is not None else None,
        directory_id=directory.value if directory is not None else None,
    )
    modeled = meta._modeled_keys()
    extra = {key: prop.value for key, prop in props.items() if key not in modeled}
    return MetaProperties(meta.version, meta.node_id, meta.cluster_id, meta.directory_id, extra)


def encode_meta_properties(meta: MetaProperties, *, date_comment: str | None = None) -> bytes:
    """``PropertiesUtils.writePropertiesFile``: ``#``, optional ``#<date>``, then the properties.

    Non-ASCII characters are written as ``\\uXXXX`` (upstream writes raw UTF-8 but reads
    ISO-8859-1, which garbles them).
    """
    if meta.version not in META_PROPERTIES_VERSIONS:
        raise ValueError(f"meta.properties version {meta.version} does not exist")
    if meta.version == 1 and (meta.node_id is None or meta.cluster_id is None):
        raise ValueError("version-1 meta.properties needs node.id and cluster.id")
    if meta.directory_id is not None:
        decode_kafka_uuid(meta.directory_id)
    if meta.node_id is not None:
        _check_range(meta.node_id, INT32, "node id")
    modeled = meta._modeled_keys()
    clash = [key for key in meta.extra if key in modeled]
    if clash:
        raise ValueError(f"extra properties repeat modeled keys: {clash}")
    items = [(VERSION_PROP, str(meta.version))]
    if meta.node_id is not None:
        items.append((modeled[1], str(meta.node_id)))
    if meta.cluster_id is not None:
        items.append((CLUSTER_ID_PROP, meta.cluster_id))
    if meta.directory_id is not None:
        items.append((DIRECTORY_ID_PROP, meta.directory_id))
    items += list(meta.extra.items())
    comments = [""] + ([date_comment] if date_comment is not None else [])
    return encode_java_properties(items, comments=comments)


# --- .kafka_cleanshutdown -----------------------------------------------------------------


@dataclass(frozen=True)
class CleanShutdown:
    """``.kafka_cleanshutdown`` content: ``version``/``broker_epoch`` are None for the empty (<= 3.6) file."""

    version: int | None = None
    broker_epoch: int | None = None


def decode_clean_shutdown(buf: Buffer) -> CleanShutdown:
    raw = bytes(buf)
    if not raw:
        return CleanShutdown()
    text = decode_utf8(raw, 0, ".kafka_cleanshutdown")
    try:
        doc = json.loads(text)
    except Exception as exc:  # json raises ValueError, RecursionError on deep nesting
        raise CorruptDataError("unreadable .kafka_cleanshutdown", position=getattr(exc, "pos", 0), expected="JSON", found=type(exc).__name__) from None
    if not isinstance(doc, dict):
        raise CorruptDataError(position=0, expected="a JSON object in .kafka_cleanshutdown", found=type(doc).__name__)
    version = doc.get("version", 0)
    epoch = doc.get("brokerEpoch")
    for name, value, bounds, nullable in (("version", version, INT32, False), ("brokerEpoch", epoch, INT64, True)):
        if value is None and nullable:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not bounds[0] <= value <= bounds[1]:
            raise CorruptDataError(f"bad {name} in .kafka_cleanshutdown", position=0, expected="an integer", found=repr(value)[:40])
    return CleanShutdown(version, epoch)


def encode_clean_shutdown(content: CleanShutdown) -> bytes:
    """Empty for the legacy marker, else ``{"version":V,"brokerEpoch":E}`` as Jackson writes it."""
    if content.version is None:
        if content.broker_epoch is not None:
            raise ValueError("a broker epoch needs a version")
        return b""
    _check_range(content.version, INT32, "version")
    if content.broker_epoch is not None:
        _check_range(content.broker_epoch, INT64, "broker epoch")
    return json.dumps({"version": content.version, "brokerEpoch": content.broker_epoch}, separators=(",", ":")).encode()


# --- file and directory names -------------------------------------------------------------

DIR_SUFFIXES: tuple[str, ...] = ("delete", "future", "stray")
MAX_DIR_NAME_LENGTH = 255


@dataclass(frozen=True)
class PartitionDirName:
    """A parsed partition directory name (``LocalLog.parseTopicPartitionName``).

    ``suffix`` is ``delete``/``future``/``stray`` for ``topic-partition.<unique_id>-<suffix>``.
    For ``-delete``/``-stray`` the topic may have been cut to keep the name within 255 chars.
    """

    topic: str
    partition: int
    suffix: Literal["delete", "future", "stray"] | None = None
    unique_id: str | None = None

    @property
    def name(self) -> str:
        return partition_dir_name(self.topic, self.partition, self.suffix, self.unique_id)


_NON_SPACE = f"[^{_JAVA_SPACE}]+"
_DIR_PATTERNS = {suffix: re.compile(f"({_NON_SPACE})-({_NON_SPACE})\\.({_NON_SPACE})-{suffix}") for suffix in DIR_SUFFIXES}


def parse_partition_dir_name(name: str) -> PartitionDirName:
    def layout_error() -> StoreLayoutError:
        return StoreLayoutError(
            expected="a partition directory topic-partition or topic-partition.uniqueId-delete|-future|-stray",
            found=repr(name[:300]),
        )

    if not name or "-" not in name:
        raise layout_error()
    suffix = next((s for s in DIR_SUFFIXES if name.endswith(f"-{s}")), None)
    unique_id = None
    base = name
    if suffix is not None:
        if not _DIR_PATTERNS[suffix].fullmatch(name):
            raise layout_error()
        dot = name.rindex(".")
        base = name[:dot]
        unique_id = name[dot + 1 : len(name) - len(suffix) - 1]
    dash = base.rfind("-")
    topic, partition_text = base[:dash], base[dash + 1 :]
    partition = _bounded_int(partition_text, INT32)
    if dash < 0 or not topic or partition is None:
        raise layout_error()
    return PartitionDirName(topic, partition, suffix, unique_id)  # type: ignore[arg-type]


def partition_dir_name(topic: str, partition: int, suffix: str | None = None, unique_id: str | None = None) -> str:
    """``LocalLog.logDirName`` / ``logDeleteDirName`` / ``logFutureDirName`` / ``logStrayDirName``.

    ``unique_id`` is a random UUID without dashes upstream; pass it in (this module is pure).
    """
    if not topic:
        raise ValueError("empty topic")
    _check_range(partition, INT32, "partition")
    if suffix is None:
        return f"{topic}-{partition}"
    if suffix not in DIR_SUFFIXES or not unique_id:
        raise ValueError("a suffixed partition directory needs suffix delete|future|stray and a unique id")
    full_suffix = f"-{partition}.{unique_id}-{suffix}"
    if suffix == "future":
        return f"{topic}{full_suffix}"
    keep = min(len(topic), MAX_DIR_NAME_LENGTH - len(full_suffix))
    return f"{topic[: max(keep, 0)]}{full_suffix}"
