"""MetaQ (Metamorphosis) messages, ``.meta`` segments and their archives.

Upstream: ``github:killme2008/Metamorphosis`` ``metamorphosis-commons/.../utils/MessageUtils.java``
(``makeMessageBuffer``, ``decodeMessage``, ``encodePayload``), ``CheckSum.java``,
``MessageFlagUtils.java``; ``metamorphosis-server/.../store/FileMessageSet.java`` (recovery),
``MessageStore.java`` (names), ``ArchiveDeletePolicy.java``/``DiscardDeletePolicy.java``.
A segment is a plain concatenation of messages, big-endian, no header, no padding::

    pos  size    field      meaning
    0    4       msgLen     int32, length of DATA only (not of this 20-byte header)
    4    4       checksum   int32, CRC-32 (IEEE) of DATA with the top bit cleared
    8    8       id         int64, broker IdWorker id (snowflake-like, not a timestamp)
    16   4       flag       int32, bit 0 = DATA starts with an attribute block
    20   msgLen  DATA       flag bit 0 clear: payload
                            flag bit 0 set:   attrLen int32 | attribute (UTF-8) | payload

The broker stores DATA exactly as the producer sent it and never parses the attribute block;
only consumers do (``decodeMessage``).  So ``Message`` keeps DATA whole and ``attribute`` /
``payload`` are parsed on access (a malformed block raises there, not while walking).

Checksum: ``CheckSum.crc32`` = CRC-32 of the ``msgLen`` DATA bytes ``& 0x7FFFFFFF``
(``masked_crc32``; empty DATA gives 0).  The header (length, id, flag) is not covered.

Offsets are byte positions: a segment is named after its start offset (20 digits +
``.meta``) and the message at position ``p`` has offset ``start + p``.

Partial writes: appends are not pre-allocated; a crash can leave a short header (< 20 bytes),
a header whose msgLen reaches past the end, or a file-system zero tail.  Upstream recovery
(every start-up, last segment only) keeps messages while a full header and DATA are present,
``msgLen >= 0`` and the checksum matches, and truncates the rest.  Quirk: 20 zero bytes are a
*valid* empty message upstream (msgLen 0, checksum 0 = CRC of nothing, id 0, flag 0), so
upstream recovery keeps a zero tail as a run of empty messages; the walker here ends at an
all-zero header instead (``zeros``) unless told ``zeros_are_end=False``.

Archives (``deletePolicy=archive,...``): an expired segment ``NNN.meta`` is renamed to
``NNN.meta.arc``, or (``archive,<T>,true``) zipped to ``NNN.meta.zip`` holding one entry named
``NNN.meta`` (``java.util.zip``, DEFLATE); neither is loaded again by the broker.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from mqtool.errors import (
    ChecksumError,
    CorruptDataError,
    MqError,
    StoreLayoutError,
    UnsupportedFormatError,
    hexint,
)
from mqtool.formats import data_end
from mqtool.formats._binary import I32, Buffer, need, take
from mqtool.formats.checksums import masked_crc32
from mqtool.formats.segment_names import parse_metaq_file_name

HEADER = struct.Struct(">iiqi")  # msgLen, checksum, id, flag
HEADER_LEN = HEADER.size  # 20
MSG_LEN = I32  # msgLen, HEADER's first field
CHECKSUM_POSITION = MSG_LEN.size  # after msgLen
ATTRIBUTE_LENGTH = I32

FLAG_HAS_ATTRIBUTE = 0x1
#: ``MessageUtils.MAX_READ_BUFFER_SIZE`` default: the client refuses longer payloads.
MAX_READ_BUFFER_SIZE = 2097152


@dataclass(frozen=True)
class Message:
    """One stored message; ``data`` is the whole DATA section (attribute block included)."""

    id: int
    data: bytes = b""
    flag: int = 0
    #: checksum as stored; filled by the decoder, recomputed by the encoder.
    checksum: int = field(default=0, compare=False)

    @property
    def has_attribute(self) -> bool:
        return bool(self.flag & FLAG_HAS_ATTRIBUTE)

    @property
    def attribute(self) -> bytes | None:
        """Attribute bytes (UTF-8 text upstream) or None when the flag says there is none."""
        return split_data(self.data, self.flag)[0]

    @property
    def attribute_text(self) -> str | None:
        """The attribute as Java decodes it (malformed UTF-8 becomes U+FFFD)."""
        raw = self.attribute
        return None if raw is None else raw.decode("utf-8", "replace")

    @property
    def payload(self) -> bytes:
        return split_data(self.data, self.flag)[1]

    @property
    def size(self) -> int:
        """Bytes on disk: header + DATA."""
        return HEADER_LEN + len(self.data)


def make_message(id: int, payload: bytes, attribute: bytes | str | None = None, flag: int = 0) -> Message:
    """A message as the producer builds it (``encodePayload`` + ``MessageFlagUtils.getFlag``).

    With an attribute, DATA = ``attrLen | attribute | payload`` and flag bit 0 is set; without,
    DATA = payload and bit 0 is cleared.  Other flag bits pass through.
    """
    if attribute is None:
        return Message(id, bytes(payload), flag & ~FLAG_HAS_ATTRIBUTE)
    raw = attribute.encode("utf-8") if isinstance(attribute, str) else bytes(attribute)
    return Message(id, ATTRIBUTE_LENGTH.pack(len(raw)) + raw + bytes(payload), flag | FLAG_HAS_ATTRIBUTE)


def split_data(data: Buffer, flag: int, position: int = HEADER_LEN) -> tuple[bytes | None, bytes]:
    """``(attribute, payload)`` of a DATA section, as ``MessageUtils.decodeMessage`` splits it.

    ``position`` is where DATA starts in the caller's buffer (for error positions).
    """
    if not flag & FLAG_HAS_ATTRIBUTE:
        return None, bytes(data)
    need(data, 0, ATTRIBUTE_LENGTH.size, "attrLen (flag bit 0 set)")
    (attr_len,) = ATTRIBUTE_LENGTH.unpack_from(data, 0)
    if attr_len < 0 or attr_len > len(data) - ATTRIBUTE_LENGTH.size:
        raise CorruptDataError(
            position=position,
            expected=f"attrLen between 0 and {len(data) - ATTRIBUTE_LENGTH.size}",
            found=str(attr_len),
        )
    start = ATTRIBUTE_LENGTH.size
    return bytes(data[start : start + attr_len]), bytes(data[start + attr_len :])


# --- peek / decode / encode ---------------------------------------------------------------


def peek_length(buf: Buffer, position: int = 0) -> int:
    """msgLen at ``position`` as stored (checked for its 4 bytes only, not judged)."""
    need(buf, position, MSG_LEN.size, "message msgLen")
    length: int = MSG_LEN.unpack_from(buf, position)[0]
    return length


def peek_message(buf: Buffer, position: int = 0) -> tuple[int, int, int, int]:
    """``(msgLen, checksum, id, flag)`` at ``position`` (checked)."""
    need(buf, position, HEADER_LEN, "message header (msgLen, checksum, id, flag)")
    return HEADER.unpack_from(buf, position)


def decode_message(buf: Buffer, position: int = 0, *, check_crc: bool = True) -> Message:
    """Decode the message at ``position``; raise if it is broken (attribute block not parsed)."""
    msg_len, checksum, msg_id, flag = peek_message(buf, position)
    if msg_len < 0:
        raise CorruptDataError(position=position, expected="msgLen >= 0", found=str(msg_len))
    data = take(buf, position + HEADER_LEN, msg_len, "message DATA (msgLen)")
    if check_crc:
        computed = masked_crc32(data)
        if computed != checksum:
            raise ChecksumError(
                "message checksum mismatch",
                position=position + CHECKSUM_POSITION,
                expected=f"checksum {hexint(computed)} (CRC-32 & 0x7FFFFFFF of the {msg_len}-byte DATA)",
                found=hexint(checksum),
            )
    return Message(msg_id, data, flag, checksum)


def encode_message(message: Message) -> bytes:
    """``makeMessageBuffer``: header with the checksum recomputed, then DATA."""
    try:
        header = HEADER.pack(len(message.data), masked_crc32(message.data), message.id, message.flag)
    except struct.error as exc:
        raise ValueError(f"message field out of range: {exc}") from None
    return header + message.data


# --- walking a segment --------------------------------------------------------------------

EndKind = Literal["zeros", "partial", "eof"]


#: Where the valid messages stop, and why (``position`` = upstream ``validUpTo``).
#:
#: ``zeros``: an all-zero 20-byte header (or fewer than 20 bytes, all zero).
#: ``partial``: fewer than 20 non-zero bytes (``length`` of them), or a header whose msgLen
#: reaches past the data (``length`` = 20 + msgLen).
#: ``eof``: the data ends exactly after the last message.
DataEnd = data_end.DataEnd[EndKind]


class MessageWalker:
    """Iterate ``(position, Message)`` until a clean end; ``end`` says where and why.

    A broken message (negative msgLen, checksum mismatch) raises; its position is in
    ``failed_at``.  ``start_offset`` (the number in the file name) turns positions into
    offsets via ``offset_of``.
    """

    def __init__(
        self,
        buf: Buffer,
        start: int = 0,
        *,
        check_crc: bool = True,
        zeros_are_end: bool = True,
        start_offset: int = 0,
    ) -> None:
        self.buf = buf
        self.start = start
        self.check_crc = check_crc
        self.zeros_are_end = zeros_are_end
        self.start_offset = start_offset
        self.end: DataEnd | None = None
        self.failed_at: int | None = None
        self.count = 0

    def offset_of(self, position: int) -> int:
        return self.start_offset + position

    def __iter__(self) -> Iterator[tuple[int, Message]]:
        buf = self.buf
        view = memoryview(buf)
        size = len(buf)
        zero = bytes(HEADER_LEN)
        pos = self.start
        while True:
            remaining = size - pos
            if remaining <= 0:
                self.end = DataEnd("eof", min(pos, size))
                return
            if remaining < HEADER_LEN:
                tail = bytes(view[pos:size])
                kind: EndKind = "zeros" if tail.count(0) == len(tail) else "partial"
                self.end = DataEnd(kind, pos, remaining)
                return
            if self.zeros_are_end and view[pos : pos + HEADER_LEN] == zero:
                self.end = DataEnd("zeros", pos, remaining)
                return
            msg_len = HEADER.unpack_from(buf, pos)[0]
            if msg_len >= 0 and msg_len > remaining - HEADER_LEN:
                self.end = DataEnd("partial", pos, HEADER_LEN + msg_len)
                return
            try:
                message = decode_message(buf, pos, check_crc=self.check_crc)
            except MqError:
                self.failed_at = pos
                raise
            self.count += 1
            yield pos, message
            pos += HEADER_LEN + msg_len


# --- archives (their names: segment_names.metaq_archive_name) ----------------------------

#: Largest segment a zip may expand to (MetaQ segments are int-sized).
MAX_SEGMENT_SIZE = 2**31 - 1


ZIP_LOCAL_HEADER = b"PK\x03\x04"
ZIP_CENTRAL_HEADER = b"PK\x01\x02"
ZIP_END_RECORD = b"PK\x05\x06"
#: the end-of-central-directory record: signature, 4 disk/count fields, directory size and
#: position, comment length (little-endian, APPNOTE 4.3.16)
_ZIP_END = struct.Struct("<4s4HIIH")
#: a zip is read from its end: the end record is in the last 22 + 65535 (longest comment) bytes
ZIP_TAIL_SEARCH = _ZIP_END.size + 0xFFFF
ZIP_HEAD = 8


def _show(data: bytes) -> str:
    return " ".join(f"{b:02x}" for b in data) if data else "nothing"


def describe_zip_damage(head: bytes, tail: bytes, size: int, reason: str = "") -> tuple[int, str, str]:
    """Why a ``size``-byte file is no readable zip archive, in plain words:
    ``(position in the file, expected, found)``.  ``head`` holds its first ``ZIP_HEAD`` bytes,
    ``tail`` its last ``min(size, ZIP_TAIL_SEARCH)``.  The position is where the zip structure
    fails: the end record's (or where it should be), the central directory's, or 0 when the file
    does not even start like a zip.  ``reason`` (the zip reader's own words) is only used when
    none of these checks finds the fault."""
    starts_like_zip = head.startswith(ZIP_LOCAL_HEADER)
    first = f"its first bytes are {_show(head[:ZIP_HEAD])}" + (" (a local file header)" if starts_like_zip else " (no zip signature PK\\x03\\x04)")
    if size < _ZIP_END.size:
        return 0, "a zip archive (at least a 22-byte end-of-central-directory record)", f"a {size}-byte file; {first}"
    tail_start = size - len(tail)
    end = tail.rfind(ZIP_END_RECORD)
    if end < 0 or end + _ZIP_END.size > len(tail):
        where = 0 if not starts_like_zip else size - _ZIP_END.size
        return (
            where,
            f"an end-of-central-directory record (PK\\x05\\x06) in the last {len(tail)} bytes (a zip is read from its end)",
            f"none; {first}" + ("" if not starts_like_zip else ": the archive is cut short or overwritten at its end"),
        )
    record = tail_start + end
    _, _, _, _, entries, cd_size, cd_offset, _ = _ZIP_END.unpack_from(tail, end)
    if cd_offset + cd_size > record:
        return (
            record + 16,
            f"a central directory that ends before the end record at position {record}",
            f"one at position {cd_offset} of {cd_size} bytes ({entries} entries)",
        )
    if cd_offset >= tail_start and cd_size:
        sig = tail[cd_offset - tail_start : cd_offset - tail_start + 4]
        if sig != ZIP_CENTRAL_HEADER:
            return (
                cd_offset,
                f"a central directory header (PK\\x01\\x02) at position {cd_offset}, where the end record at {record} puts it",
                f"bytes {_show(sig)}",
            )
    return record, "a zip archive whose end record, central directory and entries agree", f"{reason or 'a structure the zip reader rejects'}; {first}"


def decode_zip_archive(zip_bytes: Buffer, *, expected_name: str | None = None, max_size: int = MAX_SEGMENT_SIZE) -> bytes:
    """The segment bytes inside a ``.meta.zip`` archive, with its structure and CRC checked.

    The archive must hold exactly one entry named like a live segment (``expected_name`` when
    given, e.g. the ``segment_name`` of the parsed archive name).
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(bytes(zip_bytes)))
    except Exception as exc:  # zipfile raises BadZipFile, NotImplementedError, UnicodeDecodeError, ...
        raw = bytes(zip_bytes)
        position, expected, found = describe_zip_damage(raw[:ZIP_HEAD], raw[-ZIP_TAIL_SEARCH:], len(raw), str(exc))
        raise CorruptDataError("not a readable zip archive", position=position, expected=expected, found=found) from None
    with archive:
        infos = archive.infolist()
        if len(infos) != 1:
            raise CorruptDataError(expected="exactly one entry in a .meta.zip archive", found=f"{len(infos)} entries")
        info = infos[0]
        try:
            parsed = parse_metaq_file_name(info.filename)
        except StoreLayoutError:
            raise CorruptDataError(expected="an entry named <digits>.meta", found=repr(info.filename[:120])) from None
        if parsed.archive is not None or (expected_name is not None and info.filename != expected_name):
            raise CorruptDataError(expected=f"an entry named {expected_name or '<digits>.meta'}", found=repr(info.filename[:120]))
        if info.file_size > max_size:
            raise CorruptDataError(expected=f"at most {max_size} uncompressed bytes", found=str(info.file_size))
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise UnsupportedFormatError(expected="a stored or deflated zip entry", found=f"compression {info.compress_type}")
        try:
            with archive.open(info) as stream:
                data = stream.read(max_size + 1)
        except zipfile.BadZipFile as exc:
            # Whether the entry inflates to bytes whose CRC-32 is not the stored one is a fact
            # about the bytes, not about zipfile's wording: inflate again without its check.
            unchecked = _inflate_unchecked(archive, info, max_size)
            if unchecked is not None and zlib.crc32(unchecked) != info.CRC:
                raise ChecksumError(expected=f"the zip entry's CRC-32 0x{info.CRC:08X}", found=f"0x{zlib.crc32(unchecked):08X} ({exc})") from None
            raise CorruptDataError(expected="a readable zip entry", found=str(exc)) from None
        except Exception as exc:  # zlib.error, EOFError, NotImplementedError, RuntimeError (encrypted), ...
            raise CorruptDataError(expected="a readable zip entry", found=f"{type(exc).__name__}: {exc}") from None
    if len(data) != info.file_size:
        raise CorruptDataError(expected=f"{info.file_size} bytes in the zip entry", found=f"{len(data)} bytes")
    return data


def _inflate_unchecked(archive: zipfile.ZipFile, info: zipfile.ZipInfo, max_size: int) -> bytes | None:
    """The entry's bytes read with zipfile's CRC-32 check off (``ZipExtFile._update_crc`` skips
    the check when ``_expected_crc`` is None), or None when they cannot be inflated at all."""
    try:
        with archive.open(info) as stream:
            stream._expected_crc = None  # type: ignore[attr-defined]
            return stream.read(max_size + 1)
    except (zlib.error, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError, ValueError):
        return None


def encode_zip_archive(segment_name: str, segment: Buffer) -> bytes:
    """A ``.meta.zip`` as ``ArchiveDeletePolicy`` writes it: one DEFLATE entry named ``segment_name``.

    The entry time is fixed (1980-01-01) so the bytes are reproducible.
    """
    parsed = parse_metaq_file_name(segment_name)
    if parsed.archive is not None:
        raise ValueError("the zip entry is named after the live segment (NNN.meta)")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo(segment_name, (1980, 1, 1, 0, 0, 0)), bytes(segment), zipfile.ZIP_DEFLATED)
    return out.getvalue()


# --- delete policies ----------------------------------------------------------------------


@dataclass(frozen=True)
class DeletePolicy:
    """A parsed ``deletePolicy`` value (``DeletePolicyFactory.getDeletePolicy``)."""

    name: Literal["delete", "archive"]
    max_reserved_time_ms: int
    #: ``archive,<T>,true``: zip instead of rename.
    compress: bool = False


def parse_delete_policy(text: str) -> DeletePolicy:
    """``delete,168`` / ``delete,30m`` / ``archive,72h,true``: time in ``h``/``m``/``s``, bare = hours."""
    parts = text.split(",")
    while len(parts) > 1 and parts[-1] == "":  # Java String.split drops trailing empty strings
        parts.pop()
    name = parts[0]
    if name not in ("delete", "archive"):
        raise UnsupportedFormatError("unknown delete policy", expected="delete or archive", found=repr(name[:40]))
    if len(parts) < 2:
        raise CorruptDataError(expected=f"{name},<time>", found=repr(text[:80]))
    value = parts[1]
    units = {"m": 60_000, "s": 1000, "h": 3_600_000}
    unit = units.get(value[-1:], None)
    digits = value[:-1] if unit is not None else value
    if not re.fullmatch(r"[+-]?[0-9]{1,10}", digits) or not -(2**31) <= int(digits) < 2**31:
        raise CorruptDataError(expected="a time like 168, 72h, 30m or 10s", found=repr(value[:40]))
    compress = name == "archive" and len(parts) >= 3 and parts[2].lower() == "true"
    return DeletePolicy(name, int(digits) * (unit or 3_600_000), compress)  # type: ignore[arg-type]
