"""Checked binary access: the ONE place where ``struct.error``/``IndexError`` become ``MqError``.

All format modules read through these helpers (or check bounds themselves before a raw
``Struct.unpack_from`` in a hot loop), so a short or hostile buffer always ends in a
``TruncatedDataError``/``CorruptDataError`` that names the position, never in a Python
exception.  Positions in errors are relative to the buffer; the store layer rebases them.

Varints follow the Protocol Buffers / Kafka encoding: unsigned LEB128 and the zig-zag
signed form used by Kafka v2 records.
"""

from __future__ import annotations

import mmap
import struct
from typing import Any

from mqtool.errors import CorruptDataError, TruncatedDataError

Buffer = bytes | bytearray | memoryview | mmap.mmap

I8 = struct.Struct(">b")
U8 = struct.Struct(">B")
I16 = struct.Struct(">h")
U16 = struct.Struct(">H")
I32 = struct.Struct(">i")
U32 = struct.Struct(">I")
I64 = struct.Struct(">q")
U64 = struct.Struct(">Q")

#: The longest varint we accept (10 bytes carries 64 bits); longer is corruption, not a loop.
MAX_VARINT_BYTES = 10


def need(buf: Buffer, position: int, size: int, what: str) -> None:
    """Raise ``TruncatedDataError`` unless ``size`` bytes are available at ``position``."""
    have = len(buf) - position
    if size < 0:
        raise CorruptDataError(position=position, expected=f"a non-negative length for {what}", found=str(size))
    if have < size:
        raise TruncatedDataError(
            position=position,
            expected=f"{size} bytes of {what}",
            found=f"{max(have, 0)} bytes before the end of data",
        )


def unpack(fmt: struct.Struct, buf: Buffer, position: int, what: str) -> tuple[Any, ...]:
    """``fmt.unpack_from`` with a bounds check that names ``what``."""
    need(buf, position, fmt.size, what)
    return fmt.unpack_from(buf, position)


def take(buf: Buffer, position: int, size: int, what: str) -> bytes:
    """Return ``size`` bytes at ``position`` as ``bytes`` (checked)."""
    need(buf, position, size, what)
    return bytes(buf[position : position + size])


def decode_utf8(raw: bytes, position: int, what: str) -> str:
    """Decode UTF-8 strictly; a bad byte is corruption located at its own position."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptDataError(
            position=position + exc.start,
            expected=f"UTF-8 text in {what}",
            found=f"byte 0x{raw[exc.start]:02X}",
            kind="encoding",
        ) from None


# --- varints ------------------------------------------------------------------------------


def read_uvarint(buf: Buffer, position: int, what: str = "varint") -> tuple[int, int]:
    """Read an unsigned LEB128 varint; return ``(value, next_position)``."""
    result = 0
    shift = 0
    start = position
    end = len(buf)
    while True:
        if position >= end:
            raise TruncatedDataError(position=start, expected=f"a complete {what}", found="end of data")
        if position - start >= MAX_VARINT_BYTES:
            raise CorruptDataError(position=start, expected=f"a {what} of at most {MAX_VARINT_BYTES} bytes", found="more")
        byte = buf[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def read_varint(buf: Buffer, position: int, what: str = "varint") -> tuple[int, int]:
    """Read a zig-zag signed varint (Kafka's ``varint``/``varlong``)."""
    raw, position = read_uvarint(buf, position, what)
    return (raw >> 1) ^ -(raw & 1), position


def encode_uvarint(value: int) -> bytes:
    if value < 0:
        raise ValueError("unsigned varint cannot encode a negative value")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_varint(value: int) -> bytes:
    """Zig-zag encode a signed 64-bit value."""
    return encode_uvarint((value << 1) ^ (value >> 63))


def is_zero(buf: Buffer, start: int = 0, end: int | None = None) -> bool:
    """True when ``buf[start:end]`` holds only zero bytes (chunked: no large copies)."""
    end = len(buf) if end is None else min(end, len(buf))
    chunk = 1 << 20
    view = memoryview(buf)
    zeros = bytes(min(chunk, max(end - start, 0)))
    pos = start
    while pos < end:
        n = min(chunk, end - pos)
        if view[pos : pos + n] != zeros[:n]:
            return False
        pos += n
    return True


def first_nonzero(buf: Buffer, start: int = 0, end: int | None = None) -> int | None:
    """Position of the first non-zero byte in ``buf[start:end]``, or None."""
    end = len(buf) if end is None else min(end, len(buf))
    view = memoryview(buf)
    chunk = 1 << 20
    pos = start
    while pos < end:
        n = min(chunk, end - pos)
        block = bytes(view[pos : pos + n])
        stripped = block.lstrip(b"\x00")
        if stripped:
            return pos + (n - len(stripped))
        pos += n
    return None
