"""The lean reading of healthy CommitLog records: one ``struct`` unpack per record, plain tuples.

:func:`walk_records` frames the message records of one buffer exactly as
:func:`mqtool.formats.rocketmq.columns.walk_columns` frames them -- the same clean stops
(``zeros``, ``blank``, ``eof``, ``partial``) and the same ``anomaly`` rules (a broken frame or
body CRC, a PHYSICALOFFSET that is not the record's address, properties the broker would drop
or that carry the ``__CRC32#`` record CRC, bytes that are not UTF-8, a zero last byte when asked)
-- but keeps, for every healthy record, what ``MessageDecoder.decode`` would give: the fixed
header fields, the body, the topic, the properties (``MessageDecoder.string2messageProperties``),
the two hosts as text and the offsetMsgId (``MessageDecoder.createMessageId``).

On a healthy record the result equals :func:`mqtool.formats.rocketmq.commitlog.decode_message`'s
by construction (a test holds them to it); at an anomaly the walk stops and the caller decodes
the record with the precise decoder, which either reads it (an odd but readable record) or
names exactly what is wrong with it.
"""

from __future__ import annotations

import socket
import struct
import zlib
from dataclasses import dataclass
from typing import Any

from mqtool.formats._binary import I16, I32

# walk_columns' rules, one definition: the broker's canonical properties
from mqtool.formats.rocketmq.columns import PROPERTIES, ColumnStop
from mqtool.formats.rocketmq.commitlog import (
    _HEAD8,
    BLANK_MAGIC,
    MAGIC_V1,
    MAGIC_V2,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_POSITION,
    SYSFLAG_STOREHOST_V6,
    HostAddress,
)

#: One healthy record: ``(position, fields, body, topic, properties, born host, store host,
#: msg id)``.  ``position`` is the record's position in the buffer; ``fields`` the fixed part
#: as unpacked, in record order: TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET,
#: PHYSICALOFFSET, SYSFLAG, BORNTIMESTAMP, BORNHOST (packed IP and port), STORETIMESTAMP,
#: STOREHOST (packed), RECONSUMETIMES, PREPARED_TRANSACTION_OFFSET, BODYLEN; the hosts as
#: ``HostAddress`` prints them; the msg id as ``MessageRecord.msg_id`` gives it.
RecordRow = tuple[int, tuple[Any, ...], bytes, str, dict[str, str], str, str, str]


def _fixed(born_v6: bool, store_v6: bool) -> struct.Struct:
    """TOTALSIZE .. BODYLEN with each host (IP and port) as one packed field."""
    return struct.Struct(f">iIIiiqqiq{20 if born_v6 else 8}sq{20 if store_v6 else 8}siqi")


_HOST_BITS = SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6
#: The fixed part for each combination of the two IPv6 host bits.
_FIXED = {
    0: _fixed(False, False),
    SYSFLAG_BORNHOST_V6: _fixed(True, False),
    SYSFLAG_STOREHOST_V6: _fixed(False, True),
    _HOST_BITS: _fixed(True, True),
}
#: The smallest fixed part (both hosts IPv4): a TOTALSIZE below it cannot hold a record, and a
#: SYSFLAG is only read from a record that has one.
_SMALLEST_FIXED = _FIXED[0].size
#: The byte of SYSFLAG (big-endian) holding the two host bits.
_HOST_BITS_BYTE = SYSFLAG_POSITION + 3


@dataclass(frozen=True)
class RecordWalk:
    """The healthy records of one :func:`walk_records` and where and why it stopped."""

    rows: list[RecordRow]
    stop: ColumnStop


#: Host text and offsetMsgId prefix by packed host (hosts repeat on every record).
_HOST_TEXT: dict[bytes, str] = {}
_MSG_ID_PREFIX: dict[bytes, str] = {}


def _host_text(packed: bytes) -> str:
    if len(_HOST_TEXT) > 4096:
        _HOST_TEXT.clear()
    raw = packed[:-4]
    ip = socket.inet_ntop(socket.AF_INET6 if len(raw) == 16 else socket.AF_INET, raw)
    text = _HOST_TEXT[packed] = str(HostAddress(ip, I32.unpack_from(packed, len(raw))[0]))
    return text


def _msg_id_prefix(packed: bytes) -> str:
    """The store host part of an offsetMsgId: IP ‖ port (int), uppercase hex."""
    if len(_MSG_ID_PREFIX) > 4096:
        _MSG_ID_PREFIX.clear()
    prefix = _MSG_ID_PREFIX[packed] = packed.hex().upper()
    return prefix


def walk_records(
    buf: bytes, base: int, *, start: int = 0, check_crc: bool = True, stop_at_zero_last_byte: bool = False
) -> RecordWalk:
    """Decode the healthy records of ``buf`` from ``start`` until a clean end or the first
    anomaly, as ``walk_columns(buf, base, start=start, stop_at_zero_last_byte=...)`` frames them
    (``base``: the commitlog offset of ``buf[0]``).  ``check_crc=False`` leaves BODYCRC
    unchecked (as ``decode_message(check_crc=False)`` does); otherwise the stops are
    ``walk_columns``'s.

    The offsetMsgId is the store host's prefix followed by PHYSICALOFFSET as 16 hex digits:
    PHYSICALOFFSET equals the record's address here (``base + position``), never negative."""
    size = len(buf)
    pos = start
    head8 = _HEAD8.unpack_from
    fixed_v4 = _FIXED[0]
    fixed_v4_size = fixed_v4.size
    unpack_v4 = fixed_v4.unpack_from
    crc32 = zlib.crc32
    properties_of = PROPERTIES.fullmatch
    i16 = I16.unpack_from
    host_texts = _HOST_TEXT
    id_prefixes = _MSG_ID_PREFIX
    topics: dict[bytes, str] = {}
    rows: list[RecordRow] = []
    append = rows.append
    stop: ColumnStop
    while True:
        remaining = size - pos
        if remaining < 8:
            stop = ColumnStop("eof", pos) if not remaining else ColumnStop("zeros" if not any(buf[pos:size]) else "anomaly", pos)
            break
        total, magic = head8(buf, pos)
        if magic != MAGIC_V1 and magic != MAGIC_V2:
            if magic == BLANK_MAGIC:
                stop = ColumnStop("blank", pos, total)
            elif total == 0 and magic == 0:
                stop = ColumnStop("zeros", pos)
            else:
                stop = ColumnStop("anomaly", pos)
            break
        if total > remaining:
            stop = ColumnStop("partial", pos, total)
            break
        if total < _SMALLEST_FIXED:
            stop = ColumnStop("anomaly", pos)
            break
        host_bits = buf[pos + _HOST_BITS_BYTE] & _HOST_BITS
        if not host_bits:
            fields = unpack_v4(buf, pos)
            body_pos = pos + fixed_v4_size
        else:
            fixed = _FIXED[host_bits]
            if total < fixed.size:
                stop = ColumnStop("anomaly", pos)
                break
            fields = fixed.unpack_from(buf, pos)
            body_pos = pos + fixed.size
        body_len = fields[14]
        body_end = body_pos + body_len
        end = pos + total
        if fields[6] != base + pos or body_len < 0 or body_end + 3 > end:
            stop = ColumnStop("anomaly", pos)
            break
        body = buf[body_pos:body_end]
        if check_crc and (crc32(body) & 0x7FFFFFFF if body_len else 0) != fields[2]:
            stop = ColumnStop("anomaly", pos)
            break
        if magic == MAGIC_V1:
            topic_len = buf[body_end]  # a signed byte: 0x80 and up are negative
            if topic_len > 127:
                stop = ColumnStop("anomaly", pos)
                break
            topic_pos = body_end + 1
        else:
            topic_len = i16(buf, body_end)[0]
            topic_pos = body_end + 2
        props_pos = topic_pos + topic_len + 2
        if topic_len < 0 or props_pos > end or i16(buf, props_pos - 2)[0] != end - props_pos:
            stop = ColumnStop("anomaly", pos)
            break
        raw_topic = buf[topic_pos : props_pos - 2]
        topic = topics.get(raw_topic)
        if topic is None:
            try:
                topic = topics[raw_topic] = raw_topic.decode("utf-8")
            except UnicodeDecodeError:
                stop = ColumnStop("anomaly", pos)
                break
        properties: dict[str, str]
        if props_pos < end:
            raw = buf[props_pos:end]
            # name 0x01 value 0x02, names and values non-empty: anything else holds a segment
            # the broker drops, or the __CRC32# property (the precise decoder reads both)
            found = properties_of(raw)
            if (stop_at_zero_last_byte and not buf[end - 1]) or found is None or found.group("crc") is not None:
                stop = ColumnStop("anomaly", pos)
                break
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                stop = ColumnStop("anomaly", pos)
                break
            # canonical: name, value, name, value ... then the empty text after the last 0x02;
            # a repeated name keeps its first place and its last value, as decode_properties
            # keeps it
            parts = iter(text.replace("\x01", "\x02").split("\x02"))
            properties = dict(zip(parts, parts))
        else:
            properties = {}
        born = fields[9]
        store = fields[11]
        append(
            (
                pos,
                fields,
                body,
                topic,
                properties,
                host_texts.get(born) or _host_text(born),
                host_texts.get(store) or _host_text(store),
                f"{id_prefixes.get(store) or _msg_id_prefix(store)}{fields[6]:016X}",
            )
        )
        pos = end
    return RecordWalk(rows, stop)
