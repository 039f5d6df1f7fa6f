"""RocketMQ CommitLog records (``CommitLog``/``MessageExtEncoder``/``MessageDecoder``).

All integers big-endian.  Layout for magic v1 with IPv4 born and store hosts (positions shift
by +12 for each IPv6 host, and by +1 after BODY for magic v2)::

    pos  size  field                        meaning
    0    4     TOTALSIZE                    whole record length, this field included
    4    4     MAGICCODE                    0xDAA320A7 v1, 0xDAA320AB v2 (5.1.0+), 0xCBD43194 BLANK
    8    4     BODYCRC                      CRC-32 of the stored body & 0x7FFFFFFF (0 for empty)
    12   4     QUEUEID
    16   4     FLAG                         user flag
    20   8     QUEUEOFFSET                  logical offset in the ConsumeQueue
    28   8     PHYSICALOFFSET               commitlog offset of this record (file base + position)
    36   4     SYSFLAG                      see SYSFLAG_* below
    40   8     BORNTIMESTAMP                producer clock, ms
    48   8|20  BORNHOST                     IPv4 (4) or IPv6 (16, sysflag 0x10) + int port
    56   8     STORETIMESTAMP               broker clock, ms
    64   8|20  STOREHOST                    IPv4 or IPv6 (sysflag 0x20) + int port
    72   4     RECONSUMETIMES
    76   8     PREPARED_TRANSACTION_OFFSET
    84   4     BODYLEN
    88   B     BODY                         compressed when sysflag & 0x1
    88+B 1|2   TOPICLEN                     signed byte (v1) / signed short (v2)
         T     TOPIC                        UTF-8
         2     PROPLEN                      signed short
         P     PROPERTIES                   ``name 0x01 value 0x02`` ...; 5.2.0+ may end with the
                                            20-byte ``__CRC32#`` whole-record CRC property

``TOTALSIZE = 91 + BODYLEN + TOPICLEN + PROPLEN`` (v1, IPv4/IPv4); a mismatch is corruption.

End of a file: a BLANK record (TOTALSIZE = bytes left in the file, MAGIC 0xCBD43194, 8 bytes
written, the rest left as zeros) closes every completed file; the active (last) file ends in the
zeros of its pre-allocated mapping.  A crash can leave a *partial* record: a header whose
TOTALSIZE reaches past the data, or (in a pre-allocated file) a record whose tail is still zero,
which fails its body CRC or length check.

Checksums: BODYCRC covers only the stored body bytes.  The optional ``__CRC32#`` property holds
the masked CRC-32 of bytes ``[0, TOTALSIZE-20)`` of the record as 10 decimal digits written
least-significant first.
"""

from __future__ import annotations

import socket
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from mqtool.errors import ChecksumError, CorruptDataError, MqError, TruncatedDataError, UnsupportedFormatError, hexint
from mqtool.formats import data_end
from mqtool.formats._binary import I8, I16, I32, I64, Buffer, decode_utf8, need, take
from mqtool.formats.checksums import masked_crc32
from mqtool.formats.rocketmq.properties import (
    CRC32,
    CRC32_RESERVED_LEN,
    PROPERTY_SEPARATOR,
    decode_properties,
    encode_properties,
)

MAGIC_V1 = 0xDAA320A7
MAGIC_V2 = 0xDAA320AB
BLANK_MAGIC = 0xCBD43194
MESSAGE_MAGICS = (MAGIC_V1, MAGIC_V2)

SYSFLAG_COMPRESSED = 0x1
SYSFLAG_MULTI_TAGS = 0x2
SYSFLAG_TRANSACTION_MASK = 0xC
SYSFLAG_TRANSACTION_NOT = 0x0
SYSFLAG_TRANSACTION_PREPARED = 0x4
SYSFLAG_TRANSACTION_COMMIT = 0x8
SYSFLAG_TRANSACTION_ROLLBACK = 0xC
SYSFLAG_BORNHOST_V6 = 0x10
SYSFLAG_STOREHOST_V6 = 0x20
SYSFLAG_NEED_UNWRAP = 0x40
SYSFLAG_INNER_BATCH = 0x80
SYSFLAG_COMPRESSION_MASK = 0x700

TRANSACTION_TYPES = {0x0: "NOT", 0x4: "PREPARED", 0x8: "COMMIT", 0xC: "ROLLBACK"}
COMPRESSION_TYPES = {0: "ZLIB", 1: "LZ4", 2: "ZSTD", 3: "ZLIB"}

#: END_FILE_MIN_BLANK_LENGTH: a record is only written if it leaves room for this.
END_FILE_MIN_BLANK_LENGTH = 8

# Fixed parts.  Field positions are derived from the Struct sizes, never typed twice.
_PREFIX = struct.Struct(">iIIiiqqiq")  # TOTALSIZE .. BORNTIMESTAMP  (48 bytes)
_TIMESTAMP = struct.Struct(">q")
_TAIL_FIXED = struct.Struct(">iqi")  # RECONSUMETIMES, PREPARED_TRANSACTION_OFFSET, BODYLEN
_HEAD8 = struct.Struct(">iI")  # TOTALSIZE, MAGIC
BLANK_HEADER = _HEAD8


def _prefix_position(field_index: int) -> int:
    """Position of field ``field_index`` (0: TOTALSIZE) of the fixed prefix, from ``_PREFIX``."""
    return struct.calcsize(_PREFIX.format[: 1 + field_index])


QUEUE_OFFSET_POSITION = _prefix_position(5)  # 20
PHYSICAL_OFFSET_POSITION = _prefix_position(6)  # 28
SYSFLAG_POSITION = _prefix_position(7)  # 36
BORNHOST_POSITION = _PREFIX.size  # 48
_PHYSICAL_OFFSET = I64
_SYSFLAG = I32
_BODY_LENGTH = I32  # BODYLEN, the last field of _TAIL_FIXED
_PROPERTIES_LENGTH = I16


def host_size(ipv6: bool) -> int:
    return 20 if ipv6 else 8


def message_size(body_size: int, topic_size: int, properties_size: int, *, sys_flag: int = 0, magic_code: int = MAGIC_V1) -> int:
    """``calMsgLength``: the TOTALSIZE a record with these parts must have."""
    born = host_size(bool(sys_flag & SYSFLAG_BORNHOST_V6))
    store = host_size(bool(sys_flag & SYSFLAG_STOREHOST_V6))
    return (
        _PREFIX.size
        + born
        + _TIMESTAMP.size
        + store
        + _TAIL_FIXED.size
        + body_size
        + topic_length_size(magic_code)
        + topic_size
        + _PROPERTIES_LENGTH.size
        + properties_size
    )


def body_position(sys_flag: int) -> int:
    """Position of BODY inside a record (depends on the IPv6 host bits)."""
    return _PREFIX.size + host_size(bool(sys_flag & SYSFLAG_BORNHOST_V6)) + _TIMESTAMP.size + host_size(bool(sys_flag & SYSFLAG_STOREHOST_V6)) + _TAIL_FIXED.size


def body_length_position(sys_flag: int) -> int:
    """Position of BODYLEN inside a record: the field just before BODY."""
    return body_position(sys_flag) - _BODY_LENGTH.size


def store_timestamp_position(sys_flag: int) -> int:
    """Position of STORETIMESTAMP inside a record (after the IPv4 or IPv6 BORNHOST)."""
    return BORNHOST_POSITION + host_size(bool(sys_flag & SYSFLAG_BORNHOST_V6))


def _topic_length_field(magic_code: int) -> struct.Struct:
    """TOPICLEN: a signed short for magic v2, a signed byte otherwise."""
    return I16 if magic_code == MAGIC_V2 else I8


def topic_length_size(magic_code: int) -> int:
    """Bytes of TOPICLEN: 2 for magic v2, 1 otherwise."""
    return _topic_length_field(magic_code).size


#: Smallest possible message record (empty body, empty topic, no properties).
MIN_MESSAGE_SIZE = message_size(0, 0, 0)


@dataclass(frozen=True)
class HostAddress:
    ip: str
    port: int

    def __post_init__(self) -> None:
        # Canonical text (``::ffff:0:0`` and ``::ffff:0.0.0.0`` are the same address).
        family = socket.AF_INET6 if ":" in self.ip else socket.AF_INET
        canonical = socket.inet_ntop(family, socket.inet_pton(family, self.ip))
        if canonical != self.ip:
            object.__setattr__(self, "ip", canonical)

    def __str__(self) -> str:
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"

    @property
    def is_ipv6(self) -> bool:
        return ":" in self.ip

    def packed(self) -> bytes:
        """IP bytes (4 or 16) followed by the port as a big-endian int (cached)."""
        cached = self.__dict__.get("_packed")
        if cached is None:
            family = socket.AF_INET6 if self.is_ipv6 else socket.AF_INET
            cached = socket.inet_pton(family, self.ip) + struct.pack(">i", self.port)
            object.__setattr__(self, "_packed", cached)
        return cached


def _decode_host(buf: Buffer, position: int, ipv6: bool, what: str) -> HostAddress:
    size = 16 if ipv6 else 4
    need(buf, position, size + 4, what)
    raw = bytes(buf[position : position + size])
    ip = socket.inet_ntop(socket.AF_INET6 if ipv6 else socket.AF_INET, raw)
    (port,) = I32.unpack_from(buf, position + size)
    return HostAddress(ip, port)


@dataclass(frozen=True)
class MessageRecord:
    """One CommitLog message record (field names follow upstream, snake_case)."""

    topic: str
    body: bytes = b""
    properties: dict[str, str] = field(default_factory=dict)
    queue_id: int = 0
    flag: int = 0
    queue_offset: int = 0
    physical_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: HostAddress = HostAddress("127.0.0.1", 0)
    store_timestamp: int = 0
    store_host: HostAddress = HostAddress("127.0.0.1", 0)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    magic_code: int = MAGIC_V1
    #: BODYCRC as stored; filled by the decoder, recomputed by the encoder.
    body_crc: int = field(default=0, compare=False)
    #: TOTALSIZE as stored; filled by the decoder, recomputed by the encoder.
    total_size: int = field(default=0, compare=False)
    #: Property segments the broker would silently drop (not well-formed).
    dropped_properties: tuple[str, ...] = field(default=(), compare=False)

    @property
    def version(self) -> int:
        return 2 if self.magic_code == MAGIC_V2 else 1

    @property
    def transaction_type(self) -> str:
        return TRANSACTION_TYPES[self.sys_flag & SYSFLAG_TRANSACTION_MASK]

    @property
    def compressed(self) -> bool:
        return bool(self.sys_flag & SYSFLAG_COMPRESSED)

    @property
    def compression_type(self) -> str | None:
        if not self.compressed:
            return None
        return COMPRESSION_TYPES.get((self.sys_flag & SYSFLAG_COMPRESSION_MASK) >> 8, "UNKNOWN")

    @property
    def inner_batch(self) -> bool:
        return bool(self.sys_flag & SYSFLAG_INNER_BATCH)

    @property
    def tags(self) -> str | None:
        return self.properties.get("TAGS")

    @property
    def keys(self) -> list[str]:
        raw = self.properties.get("KEYS", "")
        return [k for k in raw.split(" ") if k]

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get("UNIQ_KEY")

    @property
    def msg_id(self) -> str:
        """offsetMsgId: store host ‖ physical offset, uppercase hex."""
        return encode_offset_msg_id(self.store_host, self.physical_offset)


@dataclass(frozen=True)
class BlankRecord:
    """The END_OF_FILE marker: ``TOTALSIZE`` = bytes left in the file, magic 0xCBD43194."""

    total_size: int


# --- peek ------------------------------------------------------------------------------------


def peek_record(buf: Buffer, position: int = 0) -> tuple[int, int]:
    """``(TOTALSIZE, MAGICCODE)`` at ``position`` (checked)."""
    need(buf, position, _HEAD8.size, "record header (TOTALSIZE, MAGICCODE)")
    return _HEAD8.unpack_from(buf, position)


# Single fields of a record that is not (or not yet) decoded: ``position`` is where the record
# starts, unless the field follows BODY.  Each is checked: fewer bytes than the field raise
# ``TruncatedDataError``.  No value is judged here; ``decode_message`` does that.


def peek_physical_offset(buf: Buffer, position: int = 0) -> int:
    """PHYSICALOFFSET of the record at ``position`` (the commitlog offset it was written at)."""
    need(buf, position + PHYSICAL_OFFSET_POSITION, _PHYSICAL_OFFSET.size, "PHYSICALOFFSET")
    value: int = _PHYSICAL_OFFSET.unpack_from(buf, position + PHYSICAL_OFFSET_POSITION)[0]
    return value


def peek_sys_flag(buf: Buffer, position: int = 0) -> int:
    """SYSFLAG of the record at ``position`` (signed, as stored)."""
    need(buf, position + SYSFLAG_POSITION, _SYSFLAG.size, "SYSFLAG")
    value: int = _SYSFLAG.unpack_from(buf, position + SYSFLAG_POSITION)[0]
    return value


def peek_store_timestamp(buf: Buffer, position: int = 0) -> int:
    """STORETIMESTAMP of the record at ``position``, found through its SYSFLAG (BORNHOST size)."""
    at = position + store_timestamp_position(peek_sys_flag(buf, position))
    need(buf, at, _TIMESTAMP.size, "STORETIMESTAMP")
    value: int = _TIMESTAMP.unpack_from(buf, at)[0]
    return value


def peek_body_length(buf: Buffer, position: int = 0) -> int:
    """The BODYLEN field at ``position`` (a record's ``body_length_position(sys_flag)``)."""
    need(buf, position, _BODY_LENGTH.size, "BODYLEN")
    value: int = _BODY_LENGTH.unpack_from(buf, position)[0]
    return value


def peek_topic_length(buf: Buffer, position: int, magic_code: int) -> int:
    """The TOPICLEN field at ``position`` (right after BODY): signed byte (v1) or short (v2)."""
    fmt = _topic_length_field(magic_code)
    need(buf, position, fmt.size, f"TOPICLEN ({fmt.size} byte(s))")
    value: int = fmt.unpack_from(buf, position)[0]
    return value


def peek_properties_length(buf: Buffer, position: int = 0) -> int:
    """The PROPLEN field at ``position`` (right after TOPIC): a signed short."""
    need(buf, position, _PROPERTIES_LENGTH.size, "PROPLEN")
    value: int = _PROPERTIES_LENGTH.unpack_from(buf, position)[0]
    return value


# --- decode ----------------------------------------------------------------------------------


def decode_message(buf: Buffer, position: int = 0, *, check_crc: bool = True) -> MessageRecord:
    """Decode the message record at ``position``; raise ``CorruptDataError`` if it is broken.

    Every field read stays inside the record's own TOTALSIZE, so a record whose fields claim
    more bytes than it has is reported at the field that overflows.
    """
    total_size, magic = peek_record(buf, position)
    if magic not in MESSAGE_MAGICS:
        raise CorruptDataError(
            position=position + 4,
            expected=f"message magic code {hexint(MAGIC_V1)} or {hexint(MAGIC_V2)}",
            found=hexint(magic),
            kind="magic",
        )
    if total_size < MIN_MESSAGE_SIZE:
        raise CorruptDataError(
            position=position,
            expected=f"TOTALSIZE >= {MIN_MESSAGE_SIZE}",
            found=str(total_size),
            kind="size",
        )
    need(buf, position, total_size, "message record")
    view = memoryview(buf)[position : position + total_size]
    try:
        return _decode_message_view(view, magic, total_size, check_crc)
    except MqError as exc:
        raise exc.at(None, position) from None


#: The whole fixed part when both hosts are IPv4 (the common case): one unpack per record.
_FIXED_V4 = struct.Struct(">iIIiiqqiq4siq4siiqi")
_HOST_CACHE: dict[tuple[bytes, int], HostAddress] = {}


def _host(raw: bytes, port: int) -> HostAddress:
    """HostAddress for packed ``raw`` + ``port``, cached (hosts repeat on every record)."""
    key = (raw, port)
    host = _HOST_CACHE.get(key)
    if host is None:
        if len(_HOST_CACHE) > 4096:
            _HOST_CACHE.clear()
        ip = socket.inet_ntop(socket.AF_INET6 if len(raw) == 16 else socket.AF_INET, raw)
        host = _HOST_CACHE[key] = HostAddress(ip, port)
    return host


def _decode_message_view(view: memoryview, magic: int, total_size: int, check_crc: bool) -> MessageRecord:
    (sys_flag,) = I32.unpack_from(view, SYSFLAG_POSITION)
    if not sys_flag & (SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6):
        (
            _,
            _,
            body_crc,
            queue_id,
            flag,
            queue_offset,
            physical_offset,
            _,
            born_timestamp,
            born_ip,
            born_port,
            store_timestamp,
            store_ip,
            store_port,
            reconsume_times,
            prepared_tx,
            body_len,
        ) = _FIXED_V4.unpack_from(view, 0)
        born_host = _host(born_ip, born_port)
        store_host = _host(store_ip, store_port)
        pos = _FIXED_V4.size
    else:
        (_, _, body_crc, queue_id, flag, queue_offset, physical_offset, _, born_timestamp) = _PREFIX.unpack_from(view, 0)
        pos = _PREFIX.size
        born_v6 = bool(sys_flag & SYSFLAG_BORNHOST_V6)
        store_v6 = bool(sys_flag & SYSFLAG_STOREHOST_V6)
        born_host = _decode_host(view, pos, born_v6, "BORNHOST")
        pos += host_size(born_v6)
        need(view, pos, _TIMESTAMP.size, "STORETIMESTAMP")
        (store_timestamp,) = _TIMESTAMP.unpack_from(view, pos)
        pos += _TIMESTAMP.size
        store_host = _decode_host(view, pos, store_v6, "STOREHOST")
        pos += host_size(store_v6)
        need(view, pos, _TAIL_FIXED.size, "RECONSUMETIMES, PREPARED_TRANSACTION_OFFSET, BODYLEN")
        reconsume_times, prepared_tx, body_len = _TAIL_FIXED.unpack_from(view, pos)
        pos += _TAIL_FIXED.size
    if body_len < 0:
        raise CorruptDataError(position=pos - 4, expected="BODYLEN >= 0", found=str(body_len), kind="size")
    body_pos = pos
    pos += body_len
    if pos > total_size:
        raise TruncatedDataError(
            position=body_pos,
            expected=f"{body_len} bytes of BODY (BODYLEN)",
            found=f"{total_size - body_pos} bytes before the end of the record",
        )
    body = bytes(view[body_pos:pos])
    if check_crc:
        crc = zlib.crc32(body) & 0x7FFFFFFF if body_len else 0
        if crc != body_crc:
            raise ChecksumError(
                "body CRC mismatch",
                position=8,
                expected=f"BODYCRC {crc} (masked CRC-32 of the {body_len}-byte body at +{body_pos})",
                found=str(body_crc),
            )
    # Tail: TOPICLEN, TOPIC, PROPLEN, PROPERTIES -- bounds checked by arithmetic, no copies
    # beyond the two slices.
    if magic == MAGIC_V2:
        if pos + 2 > total_size:
            need(view, pos, 2, "TOPICLEN (2 bytes, magic v2)")
        (topic_len,) = I16.unpack_from(view, pos)
        pos += 2
        topic_len_size = 2
    else:
        if pos + 1 > total_size:
            need(view, pos, 1, "TOPICLEN (1 byte, magic v1)")
        (topic_len,) = I8.unpack_from(view, pos)
        pos += 1
        topic_len_size = 1
    if topic_len < 0:
        raise CorruptDataError(position=pos - 1, expected="TOPICLEN >= 0", found=str(topic_len), kind="size")
    topic_pos = pos
    pos += topic_len
    if pos + 2 > total_size:
        need(view, topic_pos, topic_len + 2, "TOPIC (TOPICLEN) and PROPLEN")
    topic_raw = bytes(view[topic_pos:pos])
    try:
        topic = topic_raw.decode("utf-8")
    except UnicodeDecodeError:
        topic = decode_utf8(topic_raw, topic_pos, "TOPIC")
    (prop_len,) = I16.unpack_from(view, pos)
    pos += 2
    if prop_len < 0:
        raise CorruptDataError(position=pos - 2, expected="PROPLEN >= 0", found=str(prop_len), kind="size")
    props_pos = pos
    if pos + prop_len > total_size:
        need(view, pos, prop_len, "PROPERTIES (PROPLEN)")
    decoded = decode_properties(bytes(view[pos : pos + prop_len]), props_pos)
    expected_size = body_pos + body_len + topic_len_size + topic_len + 2 + prop_len
    if expected_size != total_size:
        raise CorruptDataError(
            position=0,
            expected=f"TOTALSIZE {expected_size} (from BODYLEN {body_len}, TOPICLEN {topic_len}, PROPLEN {prop_len})",
            found=str(total_size),
            kind="size",
        )
    # Built without __init__: a frozen dataclass's __init__ pays object.__setattr__ per field,
    # which dominated decoding.  Every field is set here, so the result equals the slow way.
    record = object.__new__(MessageRecord)
    record.__dict__.update(
        topic=topic,
        body=body,
        properties=decoded.properties,
        queue_id=queue_id,
        flag=flag,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
        sys_flag=sys_flag,
        born_timestamp=born_timestamp,
        born_host=born_host,
        store_timestamp=store_timestamp,
        store_host=store_host,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared_tx,
        magic_code=magic,
        body_crc=body_crc,
        total_size=total_size,
        dropped_properties=decoded.dropped,
    )
    return record


def decode_blank(buf: Buffer, position: int = 0) -> BlankRecord:
    total_size, magic = peek_record(buf, position)
    if magic != BLANK_MAGIC:
        raise CorruptDataError(position=position + 4, expected=f"BLANK magic {hexint(BLANK_MAGIC)}", found=hexint(magic), kind="magic")
    return BlankRecord(total_size)


# --- encode ----------------------------------------------------------------------------------


def encode_message(record: MessageRecord, *, append_crc_property: bool = False) -> bytes:
    """Encode a record exactly as the broker lays it out.

    ``BODYCRC`` is recomputed from the body; TOTALSIZE from the parts.  With
    ``append_crc_property`` the 20-byte ``__CRC32#`` property is reserved at the end of the
    properties (any existing one removed) and filled with the whole-record CRC (5.2.0+).
    """
    born_v6 = bool(record.sys_flag & SYSFLAG_BORNHOST_V6)
    store_v6 = bool(record.sys_flag & SYSFLAG_STOREHOST_V6)
    if record.born_host.is_ipv6 != born_v6 or record.store_host.is_ipv6 != store_v6:
        raise ValueError("host address families must match SYSFLAG bits 0x10/0x20")
    if record.magic_code not in MESSAGE_MAGICS:
        raise ValueError(f"not a message magic code: {hexint(record.magic_code)}")
    props = dict(record.properties)
    if append_crc_property:
        props.pop(CRC32, None)
    prop_bytes = encode_properties(props)
    if append_crc_property:
        if prop_bytes and not prop_bytes.endswith(PROPERTY_SEPARATOR.encode()):
            prop_bytes += PROPERTY_SEPARATOR.encode()
        prop_bytes += f"{CRC32}\x01{'0' * 10}\x02".encode()
    topic_bytes = record.topic.encode("utf-8")
    topic_max = 32767 if record.magic_code == MAGIC_V2 else 127
    if len(topic_bytes) > topic_max:
        raise ValueError(f"topic of {len(topic_bytes)} bytes does not fit magic {hexint(record.magic_code)}")
    if len(prop_bytes) > 32767:
        raise ValueError("properties longer than 32767 bytes")
    total = message_size(len(record.body), len(topic_bytes), len(prop_bytes), sys_flag=record.sys_flag, magic_code=record.magic_code)
    out = bytearray()
    out += _PREFIX.pack(
        total,
        record.magic_code,
        masked_crc32(record.body),
        record.queue_id,
        record.flag,
        record.queue_offset,
        record.physical_offset,
        record.sys_flag,
        record.born_timestamp,
    )
    out += record.born_host.packed()
    out += _TIMESTAMP.pack(record.store_timestamp)
    out += record.store_host.packed()
    out += _TAIL_FIXED.pack(record.reconsume_times, record.prepared_transaction_offset, len(record.body))
    out += record.body
    out += (I16 if record.magic_code == MAGIC_V2 else I8).pack(len(topic_bytes))
    out += topic_bytes
    out += I16.pack(len(prop_bytes))
    out += prop_bytes
    if append_crc_property:
        crc = masked_crc32(bytes(out[: total - CRC32_RESERVED_LEN]))
        digits = crc_property_digits(crc)
        out[total - 11 : total - 1] = digits.encode()
    assert len(out) == total
    return bytes(out)


def encode_blank(total_size: int) -> bytes:
    """The 8 bytes of a BLANK record; the remaining ``total_size - 8`` bytes stay zero."""
    if total_size < END_FILE_MIN_BLANK_LENGTH:
        raise ValueError("a BLANK record needs at least 8 bytes")
    return _HEAD8.pack(total_size, BLANK_MAGIC)


def with_offsets(record: MessageRecord, *, queue_offset: int, physical_offset: int, store_timestamp: int | None = None) -> MessageRecord:
    """A copy with the fields the broker fills in at append time."""
    changes: dict[str, Any] = {"queue_offset": queue_offset, "physical_offset": physical_offset}
    if store_timestamp is not None:
        changes["store_timestamp"] = store_timestamp
    return replace(record, **changes)


# --- whole-record CRC property (5.2.0+) -----------------------------------------------------


def crc_property_digits(crc: int) -> str:
    """10 decimal digits, least-significant first, zero padded (907060870 → ``0780607090``)."""
    return str(crc)[::-1].ljust(10, "0")


def parse_crc_property_digits(digits: str) -> int:
    if len(digits) != 10 or not digits.isdigit():
        raise CorruptDataError(expected="10 decimal digits in __CRC32#", found=repr(digits))
    return int(digits[::-1])


def check_crc_property(record_bytes: Buffer) -> tuple[int, int] | None:
    """``(stored, computed)`` for a record ending with ``__CRC32#``, or None when absent."""
    total = len(record_bytes)
    if total < CRC32_RESERVED_LEN:
        return None
    tail = bytes(record_bytes[total - CRC32_RESERVED_LEN :])
    if not tail.startswith(CRC32.encode() + b"\x01") or not tail.endswith(b"\x02"):
        return None
    try:
        stored = parse_crc_property_digits(tail[9:19].decode("ascii"))
    except UnicodeDecodeError:
        raise CorruptDataError(position=total - 11, expected="ASCII digits in __CRC32#", found=tail[9:19].hex()) from None
    computed = masked_crc32(bytes(record_bytes[: total - CRC32_RESERVED_LEN]))
    return stored, computed


# --- walking a file --------------------------------------------------------------------------

EndKind = Literal["blank", "zeros", "partial", "eof", "torn", "stale"]  # "torn", "stale": only the store model's recovery reading of the newest file


#: Where the valid records of a buffer stop, and why.
#:
#: ``blank``: a BLANK record at ``position`` of ``length`` bytes (TOTALSIZE).
#: ``zeros``: zero bytes where the next header would be (pre-allocated tail).
#: ``partial``: a header with a valid magic whose TOTALSIZE (``length``) reaches past the data.
#: ``eof``: the data ends exactly after the last record.
DataEnd = data_end.DataEnd[EndKind]


class RecordWalker:
    """Iterate ``(position, MessageRecord)`` from ``start`` until a clean end.

    After the loop, ``end`` says where and why the valid data stopped.  A broken record raises
    ``CorruptDataError`` (``position`` of the record is in ``failed_at``); in RocketMQ's own
    recovery that is also where valid data ends.
    """

    def __init__(self, buf: Buffer, start: int = 0, *, check_crc: bool = True) -> None:
        self.buf = buf
        self.start = start
        self.check_crc = check_crc
        self.end: DataEnd | None = None
        self.failed_at: int | None = None
        self.count = 0

    def __iter__(self) -> Iterator[tuple[int, MessageRecord]]:
        buf = self.buf
        size = len(buf)
        pos = self.start
        while True:
            remaining = size - pos
            if remaining == 0:
                self.end = DataEnd("eof", pos)
                return
            if remaining < _HEAD8.size:
                tail = bytes(buf[pos:size])
                if tail.count(0) == len(tail):
                    self.end = DataEnd("zeros", pos)
                else:
                    self.end = DataEnd("partial", pos, remaining)
                return
            total_size, magic = _HEAD8.unpack_from(buf, pos)
            if total_size == 0 and magic == 0:
                self.end = DataEnd("zeros", pos)
                return
            if magic == BLANK_MAGIC:
                self.end = DataEnd("blank", pos, total_size)
                return
            if magic in MESSAGE_MAGICS and total_size > remaining:
                self.end = DataEnd("partial", pos, total_size)
                return
            try:
                record = decode_message(buf, pos, check_crc=self.check_crc)
            except MqError:
                self.failed_at = pos
                raise
            self.count += 1
            yield pos, record
            pos += total_size


# --- message ids -----------------------------------------------------------------------------


def encode_offset_msg_id(store_host: HostAddress, physical_offset: int) -> str:
    """offsetMsgId = store IP ‖ port (int) ‖ physical offset (long), uppercase hex."""
    return (store_host.packed() + struct.pack(">q", physical_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[HostAddress, int]:
    """Inverse of ``encode_offset_msg_id``: 32 hex chars (IPv4) or 56 (IPv6)."""
    text = msg_id.strip()
    if len(text) not in (32, 56):
        raise CorruptDataError(expected="an offsetMsgId of 32 (IPv4) or 56 (IPv6) hex characters", found=f"{len(text)} characters")
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise CorruptDataError(expected="hexadecimal offsetMsgId", found=repr(text)) from None
    ipv6 = len(raw) == 28
    host = _decode_host(raw, 0, ipv6, "offsetMsgId host")
    (offset,) = struct.unpack_from(">q", raw, len(raw) - 8)
    return host, offset


@dataclass(frozen=True)
class UniqKeyInfo:
    """Fields of a client message id (``MessageClientIDSetter``)."""

    ip: str
    pid: int
    class_loader_hash: int
    millis_since_month_start: int
    counter: int


def decode_uniq_key(uniq_key: str) -> UniqKeyInfo:
    """Split a UNIQ_KEY: IP (4|16) ‖ pid short ‖ classloader hash int ‖ ms-in-month int ‖ counter short."""
    text = uniq_key.strip()
    if len(text) not in (32, 56):
        raise CorruptDataError(expected="a UNIQ_KEY of 32 (IPv4) or 56 (IPv6) hex characters", found=f"{len(text)} characters")
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise CorruptDataError(expected="hexadecimal UNIQ_KEY", found=repr(text)) from None
    ip_size = 16 if len(raw) == 28 else 4
    ip = socket.inet_ntop(socket.AF_INET6 if ip_size == 16 else socket.AF_INET, raw[:ip_size])
    pid, clh, millis, counter = struct.unpack_from(">HiiH", raw, ip_size)
    return UniqKeyInfo(ip, pid, clh, millis, counter)


def encode_uniq_key(info: UniqKeyInfo) -> str:
    family = socket.AF_INET6 if ":" in info.ip else socket.AF_INET
    raw = socket.inet_pton(family, info.ip) + struct.pack(">HiiH", info.pid, info.class_loader_hash, info.millis_since_month_start, info.counter)
    return raw.hex().upper()


# --- compression and inner batches ------------------------------------------------------------


def _decompressor(codec: str) -> Callable[[bytes], bytes]:
    """The decompress function for a RocketMQ compression type (imported on first use)."""
    if codec == "ZLIB":
        return zlib.decompress
    try:
        if codec == "LZ4":
            import lz4.frame

            lz4_decompress: Callable[[bytes], bytes] = lz4.frame.decompress
            return lz4_decompress
        if codec == "ZSTD":
            import zstandard

            return lambda data: zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except ImportError:
        raise UnsupportedFormatError(f"body compressed with {codec}: install mqtool[codecs]", expected=f"the {codec} codec", found="not installed") from None
    raise UnsupportedFormatError(expected="compression ZLIB, LZ4 or ZSTD", found=codec)


def decompress_body(record: MessageRecord) -> bytes:
    """The body as the producer sent it (stored bytes when not compressed)."""
    if not record.compressed:
        return record.body
    codec = record.compression_type or "UNKNOWN"
    decompress = _decompressor(codec)
    try:
        return decompress(record.body)
    except Exception as exc:  # each codec library raises its own error type
        raise CorruptDataError(expected=f"a valid {codec} stream in the body", found=f"{type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class InnerMessage:
    """A client-encoded message inside an inner-batch body (``MessageDecoder.encodeMessage``)."""

    body: bytes
    properties: dict[str, str] = field(default_factory=dict)
    flag: int = 0


_INNER_HEAD = struct.Struct(">iiiii")  # TOTALSIZE, MAGIC(0), BODYCRC(0), FLAG, BODYLEN


def encode_inner_message(msg: InnerMessage) -> bytes:
    props = encode_properties(msg.properties)
    total = _INNER_HEAD.size + len(msg.body) + 2 + len(props)
    return _INNER_HEAD.pack(total, 0, 0, msg.flag, len(msg.body)) + msg.body + I16.pack(len(props)) + props


def iter_inner_messages(body: Buffer) -> Iterator[tuple[int, InnerMessage]]:
    """Walk the TOTALSIZE-framed inner messages of an inner-batch body."""
    pos = 0
    size = len(body)
    while pos < size:
        need(body, pos, _INNER_HEAD.size, "inner message header")
        total, _magic, _crc, flag, body_len = _INNER_HEAD.unpack_from(body, pos)
        if total < _INNER_HEAD.size + 2 or total > size - pos:
            raise TruncatedDataError(position=pos, expected=f"inner TOTALSIZE between {_INNER_HEAD.size + 2} and {size - pos}", found=str(total))
        inner = memoryview(body)[pos : pos + total]
        q = _INNER_HEAD.size
        data = take(inner, q, body_len, "inner BODY") if body_len >= 0 else None
        if data is None:
            raise CorruptDataError(position=pos + 16, expected="inner BODYLEN >= 0", found=str(body_len))
        q += body_len
        need(inner, q, 2, "inner PROPLEN")
        (plen,) = I16.unpack_from(inner, q)
        q += 2
        props = decode_properties(take(inner, q, max(plen, 0), "inner PROPERTIES"), pos + q).properties
        if q + max(plen, 0) != total:
            raise CorruptDataError(position=pos, expected=f"inner TOTALSIZE {q + max(plen, 0)}", found=str(total))
        yield pos, InnerMessage(data, props, flag)
        pos += total
