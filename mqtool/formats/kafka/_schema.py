"""Primitives of Kafka's generated message classes (``clients/.../common/protocol``).

Control-record values (``LeaderChangeMessage``, ``VotersRecord``...), the ``__consumer_offsets``
and ``__transaction_state`` keys/values and the ``__cluster_metadata`` records are all written
by classes generated from ``*.json`` schemas.  Their wire types:

    type              non-flexible version              flexible version ("compact")
    int8..int64       big-endian, signed                same
    uint16            big-endian, unsigned              same
    uuid              16 bytes (printed base64url)      same
    string            int16 length (-1 = null) + UTF-8  uvarint (length + 1, 0 = null) + UTF-8
    bytes             int32 length (-1 = null) + bytes  uvarint (length + 1, 0 = null) + bytes
    array             int32 count (-1 = null) + items   uvarint (count + 1, 0 = null) + items
    tagged fields     (absent)                          uvarint count, then per field:
                                                        uvarint tag, uvarint size, size bytes

No checksum at this level (the enclosing record batch carries the CRC).  A short buffer raises
``TruncatedDataError`` at the field that overflows; counts and lengths are checked against the
remaining bytes before anything is allocated.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterable

from mqtool.errors import CorruptDataError, TruncatedDataError
from mqtool.formats._binary import (
    I8,
    I16,
    I32,
    I64,
    U16,
    Buffer,
    decode_utf8,
    encode_uvarint,
    need,
    read_uvarint,
)

#: ``(tag, raw bytes)`` of tagged fields this module does not interpret, kept for re-encoding.
TaggedFields = tuple[tuple[int, bytes], ...]

UUID_SIZE = 16


def uuid_to_str(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: base64url without padding (22 characters)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_from_str(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != UUID_SIZE:
        raise ValueError(f"not a 16-byte Kafka Uuid: {text!r}")
    return raw


class Reader:
    """Sequential checked reader over ``buf[position:end]``; ``pos`` is absolute in ``buf``."""

    __slots__ = ("buf", "pos", "end", "what")

    def __init__(self, buf: Buffer, position: int = 0, end: int | None = None, what: str = "message") -> None:
        self.buf = memoryview(buf)
        self.pos = position
        self.end = len(buf) if end is None else end
        self.what = what
        if self.end > len(buf):
            raise TruncatedDataError(position=position, expected=f"{self.end - position} bytes of {what}", found=f"{len(buf) - position}")

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _fixed(self, fmt: struct.Struct, name: str) -> int:
        if self.end - self.pos < fmt.size:
            raise TruncatedDataError(position=self.pos, expected=f"{fmt.size} bytes of {self.what}.{name}", found=f"{max(self.end - self.pos, 0)} bytes")
        value: int
        (value,) = fmt.unpack_from(self.buf, self.pos)
        self.pos += fmt.size
        return value

    def int8(self, name: str) -> int:
        return self._fixed(I8, name)

    def int16(self, name: str) -> int:
        return self._fixed(I16, name)

    def uint16(self, name: str) -> int:
        return self._fixed(U16, name)

    def int32(self, name: str) -> int:
        return self._fixed(I32, name)

    def int64(self, name: str) -> int:
        return self._fixed(I64, name)

    def boolean(self, name: str) -> bool:
        return self._fixed(I8, name) != 0

    def uvarint(self, name: str) -> int:
        value, nxt = read_uvarint(self.buf[: self.end], self.pos, f"{self.what}.{name}")
        self.pos = nxt
        return value

    def uuid(self, name: str) -> str:
        raw = self._raw(UUID_SIZE, name)
        return uuid_to_str(raw)

    def _raw(self, size: int, name: str) -> bytes:
        if size > self.end - self.pos:
            raise TruncatedDataError(position=self.pos, expected=f"{size} bytes of {self.what}.{name}", found=f"{max(self.end - self.pos, 0)} bytes")
        raw = bytes(self.buf[self.pos : self.pos + size])
        self.pos += size
        return raw

    def _length(self, flexible: bool, wide: bool, name: str) -> int:
        """A length prefix; -1 means null."""
        start = self.pos
        if flexible:
            length = self.uvarint(name) - 1
        else:
            length = self.int32(name) if wide else self.int16(name)
        if length < -1:
            raise CorruptDataError(position=start, expected=f"a length >= -1 for {self.what}.{name}", found=str(length))
        return length

    def nullable_string(self, name: str, flexible: bool) -> str | None:
        length = self._length(flexible, False, name)
        if length < 0:
            return None
        start = self.pos
        return decode_utf8(self._raw(length, name), start, f"{self.what}.{name}")

    def string(self, name: str, flexible: bool) -> str:
        start = self.pos
        value = self.nullable_string(name, flexible)
        if value is None:
            raise CorruptDataError(position=start, expected=f"a non-null string in {self.what}.{name}", found="null")
        return value

    def nullable_bytes(self, name: str, flexible: bool) -> bytes | None:
        length = self._length(flexible, True, name)
        if length < 0:
            return None
        return self._raw(length, name)

    def bytes_field(self, name: str, flexible: bool) -> bytes:
        start = self.pos
        value = self.nullable_bytes(name, flexible)
        if value is None:
            raise CorruptDataError(position=start, expected=f"non-null bytes in {self.what}.{name}", found="null")
        return value

    def nullable_array(self, name: str, flexible: bool, min_item_size: int = 1) -> int | None:
        """An array count (None for null), checked against the bytes left."""
        start = self.pos
        count = self._length(flexible, True, name)
        if count < 0:
            return None
        if count * min_item_size > self.remaining:
            raise CorruptDataError(
                position=start,
                expected=f"at most {self.remaining // max(min_item_size, 1)} items in {self.what}.{name}",
                found=str(count),
            )
        return count

    def array(self, name: str, flexible: bool, min_item_size: int = 1) -> int:
        start = self.pos
        count = self.nullable_array(name, flexible, min_item_size)
        if count is None:
            raise CorruptDataError(position=start, expected=f"a non-null array in {self.what}.{name}", found="null")
        return count

    def tagged_fields(self) -> list[tuple[int, int, bytes]]:
        """``[(tag, position of the data, data)]`` of a flexible struct's tagged-field section."""
        start = self.pos
        count = self.uvarint("tagged fields")
        if count * 2 > self.remaining:
            raise CorruptDataError(position=start, expected=f"at most {self.remaining // 2} tagged fields", found=str(count))
        out = []
        last = -1
        for _ in range(count):
            tag_pos = self.pos
            tag = self.uvarint("tag")
            if tag <= last:
                raise CorruptDataError(position=tag_pos, expected=f"tagged fields in ascending order after tag {last}", found=f"tag {tag}")
            last = tag
            size = self.uvarint("tagged field size")
            data_pos = self.pos
            out.append((tag, data_pos, self._raw(size, f"tagged field {tag}")))
        return out

    def unknown_tagged_fields(self) -> TaggedFields:
        """Read a tagged-field section none of whose tags this reader interprets."""
        return tuple((tag, data) for tag, _, data in self.tagged_fields())

    def finish(self) -> None:
        """Raise unless every byte up to ``end`` was read."""
        if self.pos != self.end:
            raise CorruptDataError(position=self.pos, expected=f"the end of {self.what}", found=f"{self.end - self.pos} more bytes")


class Writer:
    """The inverse of ``Reader``: appends to a bytearray."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self.out)

    def int8(self, value: int) -> None:
        self.out += I8.pack(value)

    def int16(self, value: int) -> None:
        self.out += I16.pack(value)

    def uint16(self, value: int) -> None:
        self.out += U16.pack(value)

    def int32(self, value: int) -> None:
        self.out += I32.pack(value)

    def int64(self, value: int) -> None:
        self.out += I64.pack(value)

    def boolean(self, value: bool) -> None:
        self.out += I8.pack(1 if value else 0)

    def uvarint(self, value: int) -> None:
        self.out += encode_uvarint(value)

    def uuid(self, value: str) -> None:
        self.out += uuid_from_str(value)

    def _length(self, length: int, flexible: bool, wide: bool) -> None:
        if flexible:
            self.uvarint(length + 1)
        elif wide:
            self.int32(length)
        else:
            if length > 32767:
                raise ValueError("a non-flexible string is limited to 32767 bytes")
            self.int16(length)

    def nullable_string(self, value: str | None, flexible: bool) -> None:
        if value is None:
            self._length(-1, flexible, False)
            return
        raw = value.encode("utf-8")
        self._length(len(raw), flexible, False)
        self.out += raw

    string = nullable_string

    def nullable_bytes(self, value: bytes | None, flexible: bool) -> None:
        if value is None:
            self._length(-1, flexible, True)
            return
        self._length(len(value), flexible, True)
        self.out += value

    bytes_field = nullable_bytes

    def array(self, count: int | None, flexible: bool) -> None:
        self._length(-1 if count is None else count, flexible, True)

    def tagged_fields(self, fields: Iterable[tuple[int, bytes]]) -> None:
        items = sorted(fields)
        self.uvarint(len(items))
        for tag, data in items:
            self.uvarint(tag)
            self.uvarint(len(data))
            self.out += data


def read_version_prefix(buf: Buffer, what: str) -> int:
    """The int16 schema version that prefixes coordinator keys and values."""
    need(buf, 0, I16.size, f"{what} version")
    version: int
    (version,) = I16.unpack_from(buf, 0)
    return version


__all__ = ["Reader", "Writer", "TaggedFields", "uuid_to_str", "uuid_from_str", "read_version_prefix"]
