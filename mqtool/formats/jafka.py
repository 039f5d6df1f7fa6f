"""Jafka (Kafka 0.7 family) messages and ``.jafka`` segment files.

Upstream: ``github:adyliu/jafka`` ``io/jafka/message/Message.java``, ``FileMessageSet.java``,
``ByteBufferMessageSet.java``, ``CompressionUtils.java``; Kafka 0.7 ``Message.scala`` for
magic 0.  A segment is a plain concatenation of entries, big-endian, no file header::

    pos  size   field        meaning
    0    4      LENGTH       int32, bytes that follow (the message size N)
    4    1      MAGIC        1 (Jafka, Kafka 0.7 "v2"); 0 = Kafka 0.7's first format
    5    1      ATTRIBUTE    magic 1 only: bits 0-1 compression codec (0 none, 1 gzip,
                             2 snappy), bits 2-7 unused
    6|5  4      CRC          uint32, CRC-32 (IEEE) of PAYLOAD only
    10|9 N-6|5  PAYLOAD      the message bytes; for a compressed message the gzip stream
                             of an inner message set (``LENGTH``-framed messages again)

Header after LENGTH: 6 bytes (magic 1) or 5 (magic 0), so an entry is at least 10 (9) bytes;
an empty payload is legal (CRC 0).  Jafka itself accepts only magic 1 (``crcOffset`` throws
``UnknownMagicByteException`` for anything else); Kafka 0.7 read both, and its test segment
``MagicByte0-0/00000000000000000000.kafka`` is magic 0.  This module reads both; code judging
Jafka data checks ``magic_error`` (upstream wins: magic 0 is an error there, before any CRC).

Kafka 0.7.2 (``kafka.message.Message``) is the reference for both magics: ``crcOffset`` is 1 for
magic 0 and 2 for magic 1, ``MinHeaderSize`` is ``headerSize(0)`` = 5, the attribute byte's
``CompressionCodeMask`` 0x03 selects ``CompressionCodec`` 0 none, 1 gzip, 2 snappy (anything else
throws ``UnknownCodecException``); a snappy wrapper holds a snappy-java stream
(``SnappyOutputStream``, inflated here with the ``codecs`` extra).  Jafka's ``CompressionFactory``
knows no snappy.

Checksum: the CRC covers only the PAYLOAD (neither LENGTH, MAGIC nor ATTRIBUTE).  For a
compressed wrapper it covers the compressed bytes.

Offsets are byte positions: the segment file is named after its start offset (20 digits +
``.jafka``) and the message at position ``p`` has offset ``start + p``.  The offsets the
iterators report (``MessageAndOffset.offset``) are the position *after* the message (the next
fetch offset); for the inner messages of a wrapper every one but the last reports the wrapper's
own start and the last reports the position after the wrapper.

Partial writes: nothing is pre-allocated, but an unflushed append can leave a truncated last
entry (LENGTH reaching past the end, or fewer than 4 bytes), or a file-system zero tail.
Upstream recovery (last segment only, without ``.jafka_cleanshutdown``) keeps entries while
``LENGTH >= 6``, the entry fits and the CRC matches, and truncates the rest.  Here a LENGTH
of 0 is a ``zeros`` end, a LENGTH reaching past the data is a ``partial`` end, and a negative
or too small LENGTH, an unknown magic or a CRC mismatch raises (upstream recovery crashes on an
unknown magic; mqtool's recover treats any raise as the end of valid data).
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from mqtool.errors import ChecksumError, CorruptDataError, MqError, UnsupportedFormatError, hexint
from mqtool.formats import data_end
from mqtool.formats._binary import I32, U32, Buffer, need
from mqtool.formats.checksums import crc32

MAGIC_V0 = 0
MAGIC_V1 = 1
CURRENT_MAGIC = MAGIC_V1
MAGICS = (MAGIC_V0, MAGIC_V1)

LENGTH = I32  # the 4-byte size prefix
LOG_OVERHEAD = LENGTH.size
_HEADER_V1 = struct.Struct(">BBI")  # MAGIC, ATTRIBUTE, CRC
_HEADER_V0 = struct.Struct(">BI")  # MAGIC, CRC
HEADER_SIZES = {MAGIC_V0: _HEADER_V0.size, MAGIC_V1: _HEADER_V1.size}
#: Jafka's ``Message.MinHeaderSize`` (magic 1); upstream recovery stops below it.
MIN_HEADER_SIZE = _HEADER_V1.size
#: Kafka 0.7's ``MinHeaderSize`` (magic 0).
MIN_HEADER_SIZE_V0 = _HEADER_V0.size

COMPRESSION_CODEC_MASK = 0x03
CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_NAMES = {CODEC_NONE: "none", CODEC_GZIP: "gzip", CODEC_SNAPPY: "snappy"}

CLEAN_SHUTDOWN_FILE = ".jafka_cleanshutdown"

#: How deep compressed wrappers may nest before we call it corruption.
MAX_NESTING = 4


@dataclass(frozen=True)
class Message:
    """One message (upstream ``Message``); ``attributes`` is always 0 for magic 0."""

    payload: bytes = b""
    magic: int = CURRENT_MAGIC
    attributes: int = 0
    #: CRC as stored; filled by the decoder, recomputed by the encoder.
    crc: int = field(default=0, compare=False)

    @property
    def compression_codec(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK if self.magic == MAGIC_V1 else CODEC_NONE

    @property
    def compressed(self) -> bool:
        return self.compression_codec != CODEC_NONE

    @property
    def header_size(self) -> int:
        return HEADER_SIZES[self.magic]

    @property
    def size(self) -> int:
        """The LENGTH field: header plus payload."""
        return self.header_size + len(self.payload)

    @property
    def serialized_size(self) -> int:
        """Bytes on disk, LENGTH included (``serializedSize``)."""
        return LOG_OVERHEAD + self.size


# --- peek / decode / encode ---------------------------------------------------------------


def peek_length(buf: Buffer, position: int = 0) -> int:
    """The LENGTH prefix at ``position`` as stored (checked for its 4 bytes, not judged)."""
    need(buf, position, LOG_OVERHEAD, "message LENGTH")
    length: int = LENGTH.unpack_from(buf, position)[0]
    return length


def peek_message(buf: Buffer, position: int = 0) -> tuple[int, int]:
    """``(LENGTH, MAGIC)`` at ``position`` (checked)."""
    need(buf, position, LOG_OVERHEAD + 1, "message LENGTH and MAGIC")
    (length,) = LENGTH.unpack_from(buf, position)
    return length, buf[position + LOG_OVERHEAD]


def magic_error(
    magic: int, position: int | None = None, *, crc_mismatch: bool = False, magics: Iterable[int] = (MAGIC_V1,), broker: str = "Jafka"
) -> CorruptDataError | None:
    """The one check and message for the MAGIC byte, shared by ``dump`` and ``validate``
    (JAFKA-MAGIC): None for magic 1, else the error.  Jafka's ``Message.crcOffset`` knows only
    magic 1 and throws ``UnknownMagicByteException`` on anything else, magic 0 included (this
    module decodes magic 0 only so that Kafka 0.7 files can be read).  ``position`` is the MAGIC
    byte's; ``crc_mismatch``: the entry read as magic 0 fails its CRC too (a damaged magic-1
    message, most likely).  ``magics`` and ``broker``: Kafka 0.7 reads magic 0 and 1."""
    accepted = sorted(set(magics))
    if magic in accepted:
        return None
    what = f"{magic} (Kafka 0.7's first message format)" if magic == MAGIC_V0 else str(magic)
    if magic == MAGIC_V0 and crc_mismatch:
        what += ", and read that way its CRC does not match either (a damaged magic-1 message?)"
    return CorruptDataError(
        "unknown magic byte",
        position=position,
        expected=f"magic {' or '.join(map(str, accepted))}",
        found=f"{what}; {broker} reads no other magic (UnknownMagicByteException)",
        kind="magic",
    )


def decode_message(buf: Buffer, position: int = 0, *, check_crc: bool = True) -> Message:
    """Decode the entry (LENGTH included) at ``position``; raise if it is broken.  Magic 0 (Kafka
    0.7) is decoded too: callers that judge Jafka data check ``magic_error``."""
    length, magic = peek_message(buf, position)
    if magic not in MAGICS:
        error = magic_error(magic, position + LOG_OVERHEAD)
        assert error is not None
        raise error
    header = HEADER_SIZES[magic]
    if length < header:
        raise CorruptDataError(
            position=position,
            expected=f"LENGTH >= {header} (magic {magic} header)",
            found=str(length),
            kind="size",
        )
    need(buf, position + LOG_OVERHEAD, length, "message (LENGTH)")
    start = position + LOG_OVERHEAD
    if magic == MAGIC_V1:
        _, attributes, crc = _HEADER_V1.unpack_from(buf, start)
    else:
        _, crc = _HEADER_V0.unpack_from(buf, start)
        attributes = 0
    payload = bytes(buf[start + header : start + length])
    if check_crc:
        computed = crc32(payload)
        if computed != crc:
            raise ChecksumError(
                "message CRC mismatch",
                position=start + header - U32.size,
                expected=f"CRC {hexint(computed)} (CRC-32 of the {len(payload)}-byte payload)",
                found=hexint(crc),
            )
    return Message(payload, magic, attributes, crc)


def encode_message(message: Message) -> bytes:
    """LENGTH + header + payload, CRC recomputed from the payload."""
    crc = crc32(message.payload)
    if message.magic == MAGIC_V1:
        if not 0 <= message.attributes <= 0xFF:
            raise ValueError("attributes must fit one byte")
        header = _HEADER_V1.pack(MAGIC_V1, message.attributes, crc)
    elif message.magic == MAGIC_V0:
        if message.attributes:
            raise ValueError("magic 0 messages have no attribute byte")
        header = _HEADER_V0.pack(MAGIC_V0, crc)
    else:
        raise ValueError(f"unknown magic {message.magic}")
    return LENGTH.pack(len(header) + len(message.payload)) + header + message.payload


def encode_message_set(messages: Iterable[Message]) -> bytes:
    return b"".join(encode_message(m) for m in messages)


# --- compression --------------------------------------------------------------------------


def decompress_payload(message: Message) -> bytes:
    """The inner message-set bytes of a compressed wrapper (the payload itself when not compressed)."""
    codec = message.compression_codec
    if codec == CODEC_NONE:
        return message.payload
    if codec == CODEC_GZIP:
        try:
            return inflate_gzip(message.payload)
        except CorruptDataError as exc:
            raise CorruptDataError(expected=exc.expected, found=exc.found, kind="compression") from None
    if codec == CODEC_SNAPPY:
        raise UnsupportedFormatError("snappy wrapper", expected="gzip (Jafka's CompressionFactory knows no snappy codec)", found="snappy")
    raise CorruptDataError(expected="compression codec 0, 1 or 2", found=str(codec), kind="compression")


#: Largest inner message set a Jafka wrapper may inflate to.
MAX_INFLATED_SIZE = 64 << 20


def inflate_gzip(payload: bytes, limit: int | None = None) -> bytes:
    """gunzip ``payload`` (concatenated members allowed, as ``GZIPInputStream`` reads them),
    refusing to produce more than ``limit`` bytes (``MAX_INFLATED_SIZE``)."""
    limit = MAX_INFLATED_SIZE if limit is None else limit
    out = bytearray()
    data = payload
    try:
        while True:
            d = zlib.decompressobj(wbits=31)
            out += d.decompress(data, limit - len(out) + 1)
            if len(out) > limit:
                raise CorruptDataError(expected=f"a wrapper that inflates to at most {limit} bytes", found="more (a gzip bomb or damage)")
            if not d.eof:
                if d.unconsumed_tail:
                    raise CorruptDataError(expected=f"a wrapper that inflates to at most {limit} bytes", found="more")
                raise CorruptDataError(expected="a complete gzip stream in the wrapper payload", found="a stream that ends early")
            data = d.unused_data
            if not data:
                return bytes(out)
    except zlib.error as exc:
        raise CorruptDataError(expected="a gzip stream in the wrapper payload", found=f"zlib.error: {exc}") from None


@dataclass(frozen=True)
class InnerMessage:
    """A message inside a wrapper: its index (depth-first), position in the inflated set, depth."""

    index: int
    position: int
    depth: int
    message: Message
    crc_computed: int


def iter_wrapper(message: Message, *, depth: int = 1, limit: int | None = None, snappy: bool = False) -> Iterator[InnerMessage]:
    """Every message inside a compressed wrapper, depth-first (nested wrappers are yielded, then
    their own inner messages), each inflated set at most ``limit`` bytes (``MAX_INFLATED_SIZE``).
    ``snappy``: snappy wrappers are read too (Kafka 0.7; Jafka has no snappy codec).
    Raises ``CorruptDataError`` (or ``UnsupportedFormatError`` for snappy) at the first problem;
    messages before it have been yielded."""
    counter = [0]
    yield from _iter_wrapper(message, depth, MAX_INFLATED_SIZE if limit is None else limit, counter, snappy)


def _inflate_snappy(payload: bytes, limit: int) -> bytes:
    """A Kafka 0.7 snappy wrapper's payload (snappy-java's stream) inflated, at most ``limit`` bytes."""
    from mqtool.formats.kafka import compression

    try:
        return compression.decompress(CODEC_SNAPPY, payload, magic=MAGIC_V1, max_size=limit)
    except UnsupportedFormatError:
        raise
    except MqError as exc:
        raise CorruptDataError(expected="a snappy stream in the wrapper payload", found=exc.found or exc.reason) from None


def _iter_wrapper(message: Message, depth: int, limit: int, counter: list[int], snappy: bool = False) -> Iterator[InnerMessage]:
    if depth > MAX_NESTING:
        raise CorruptDataError(expected=f"at most {MAX_NESTING} nested compressed wrappers", found="more")
    codec = message.compression_codec
    if codec == CODEC_SNAPPY and snappy:
        inner = _inflate_snappy(message.payload, limit)
    elif codec == CODEC_SNAPPY:
        raise UnsupportedFormatError("snappy wrapper", expected="gzip (Jafka has no snappy codec)", found="snappy")
    elif codec != CODEC_GZIP:
        raise CorruptDataError(expected="compression codec 1 (gzip)", found=str(codec))
    else:
        inner = inflate_gzip(message.payload, limit)
    walker = MessageWalker(inner, check_crc=False)
    try:
        for pos, m in walker:
            computed = crc32(m.payload)
            yield InnerMessage(counter[0], pos, depth, m, computed)
            counter[0] += 1
            if m.compressed:
                yield from _iter_wrapper(m, depth + 1, limit, counter, snappy)
    except MqError as exc:
        raise CorruptDataError(
            f"inner message at inflated byte {walker.failed_at} (depth {depth})",
            expected=exc.expected or "a valid inner message",
            found=exc.found or exc.message,
        ) from None
    end = walker.end
    assert end is not None
    if end.kind != "eof":
        raise CorruptDataError(
            f"inner message set (depth {depth})",
            expected=f"the {len(inner)}-byte inflated set to end after its last message",
            found=f"a {end.kind} tail at inflated byte {end.position}",
        )


def compress_messages(messages: Iterable[Message], codec: int = CODEC_GZIP) -> Message:
    """A wrapper message holding ``messages`` (``MessageSet.createByteBuffer`` with a codec).

    The gzip header carries mtime 0 so the bytes are reproducible (the JDK writes its own
    header and deflate stream; compare decompressed content, not bytes).
    """
    if codec != CODEC_GZIP:
        raise ValueError("only gzip wrappers can be written")
    inner = encode_message_set(messages)
    return Message(gzip.compress(inner, mtime=0), MAGIC_V1, CODEC_GZIP)


def iter_inner_messages(message: Message, *, check_crc: bool = True) -> Iterator[tuple[int, Message]]:
    """``(position in the decompressed set, Message)`` for each message inside a wrapper.

    The inner set must be complete: any leftover (partial entry, zeros) is corruption.
    """
    inner = decompress_payload(message)
    walker = MessageWalker(inner, check_crc=check_crc)
    yield from walker
    assert walker.end is not None
    if walker.end.kind != "eof":
        raise CorruptDataError(
            "compressed message set does not end on a message boundary",
            position=walker.end.position,
            expected="end of the inner message set",
            found=f"{walker.end.kind} tail",
        )


def iter_message_and_offsets(buf: Buffer, start_offset: int = 0, *, check_crc: bool = True) -> Iterator[tuple[int, Message]]:
    """Deep iteration as a consumer sees it: ``(MessageAndOffset.offset, Message)``.

    ``offset`` is the next fetch offset: ``start_offset`` + the position after the message;
    inside a wrapper, the wrapper's own start for all but the last inner message (upstream
    ``ByteBufferMessageSet`` deep iterator).  Stops at the walker's clean end.
    """
    for position, message in MessageWalker(buf, check_crc=check_crc):
        after = start_offset + position + message.serialized_size
        if not message.compressed:
            yield after, message
            continue
        inner = list(_deep_inner(message, check_crc, 1))
        for i, inner_message in enumerate(inner):
            yield (after if i == len(inner) - 1 else start_offset + position), inner_message


def _deep_inner(message: Message, check_crc: bool, depth: int) -> Iterator[Message]:
    if depth > MAX_NESTING:
        raise CorruptDataError(expected=f"at most {MAX_NESTING} nested compressed wrappers", found="more", kind="compression")
    for _, inner in iter_inner_messages(message, check_crc=check_crc):
        if inner.compressed:
            yield from _deep_inner(inner, check_crc, depth + 1)
        else:
            yield inner


# --- walking a segment --------------------------------------------------------------------

EndKind = Literal["zeros", "partial", "eof"]


#: Where the valid messages of a buffer stop, and why.
#:
#: ``zeros``: a LENGTH of 0 (or fewer than 4 bytes, all zero) where the next entry would be.
#: ``partial``: an entry whose LENGTH (``length`` = 4 + LENGTH) reaches past the data, or
#: fewer than 4 non-zero bytes (``length`` of them).
#: ``eof``: the data ends exactly after the last message.
#: ``position`` is also the number of valid bytes (upstream ``validUpTo``).
DataEnd = data_end.DataEnd[EndKind]


class MessageWalker:
    """Iterate ``(position, Message)`` (shallow: wrappers are not opened) until a clean end.

    After the loop ``end`` says where and why the data stopped; a broken message raises and
    its position is in ``failed_at``.  ``start_offset`` (the number in the file name) turns
    positions into offsets: ``offset_of(position)``.
    """

    def __init__(self, buf: Buffer, start: int = 0, *, check_crc: bool = True, start_offset: int = 0) -> None:
        self.buf = buf
        self.start = start
        self.check_crc = check_crc
        self.start_offset = start_offset
        self.end: DataEnd | None = None
        self.failed_at: int | None = None
        self.count = 0

    def offset_of(self, position: int) -> int:
        return self.start_offset + position

    def __iter__(self) -> Iterator[tuple[int, Message]]:
        buf = self.buf
        size = len(buf)
        pos = self.start
        while True:
            remaining = size - pos
            if remaining <= 0:
                self.end = DataEnd("eof", min(pos, size))
                return
            if remaining < LOG_OVERHEAD:
                tail = bytes(buf[pos:size])
                kind: EndKind = "zeros" if tail.count(0) == len(tail) else "partial"
                self.end = DataEnd(kind, pos, remaining)
                return
            (length,) = LENGTH.unpack_from(buf, pos)
            if length == 0:
                self.end = DataEnd("zeros", pos, remaining)
                return
            if length > remaining - LOG_OVERHEAD and (
                remaining == LOG_OVERHEAD or (buf[pos + LOG_OVERHEAD] in MAGICS and length >= HEADER_SIZES[buf[pos + LOG_OVERHEAD]])
            ):
                self.end = DataEnd("partial", pos, LOG_OVERHEAD + length)
                return
            try:
                message = decode_message(buf, pos, check_crc=self.check_crc)
            except MqError:
                self.failed_at = pos
                raise
            self.count += 1
            yield pos, message
            pos += LOG_OVERHEAD + length
