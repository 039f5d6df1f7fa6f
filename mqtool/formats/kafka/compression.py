"""Kafka compression codecs (``CompressionType``, ``clients/.../common/compress/*``).

    id  name    stream format                                              library (lazy import)
    0   none    the bytes themselves                                       -
    1   gzip    gzip members (``GZIPOutputStream``); concatenated members  zlib (stdlib)
                are read, bytes after the last member are ignored
    2   snappy  xerial snappy-java framing (``SnappyOutputStream``), or    cramjam (raw snappy)
                one raw snappy block when the magic is absent
    3   lz4     Kafka's LZ4 frame (``Lz4BlockOutputStream``), see below    lz4 (``lz4.block``)
    4   zstd    zstd frames (``ZstdOutputStream``); v2 batches only        zstandard
    5-7         ``IllegalArgumentException`` "Unknown compression type id"

xerial snappy framing (big-endian)::

    pos  size  field
    0    8     magic 82 53 4E 41 50 50 59 00 ("\\x82SNAPPY\\0")
    8    4     version (1)
    12   4     compatible version (1)
    16   4     chunk length n          repeated until the end of the stream; another 16-byte
    20   n     raw snappy block        header may appear where a chunk length is expected
                                       (concatenated streams)

Kafka's LZ4 frame (``Lz4BlockInputStream``; integers little-endian)::

    pos  size  field
    0    4     magic 0x184D2204
    4    1     FLG: version 01 (bits 6-7), block independence 1 (bit 5), block checksum (bit 4),
               content size (bit 3), content checksum (bit 2), reserved 0 (bits 0-1)
    5    1     BD: block maximum size id 4..7 (bits 4-6) = 64 KiB, 256 KiB, 1 MiB, 4 MiB
    6    0|8   content size (only if FLG bit 3; skipped)
    ..   1     HC = (xxh32(FLG .. content size) >> 8) & 0xFF
    ..         blocks: uint32 size (bit 31 set = stored uncompressed) + data [+ xxh32 if FLG bit 4]
    ..   4     end mark 0 [+ content checksum, read and not verified]

KAFKA-3160: Kafka 0.8/0.9 computed HC over the magic *and* the descriptor.  Readers ignore HC
for magic-0 messages (``ignoreFlagDescriptorChecksum``) and writers reproduce the broken value
for magic 0 (``useBrokenFlagDescriptorChecksum``); magic 1 and 2 use the correct HC.

Checksums: gzip carries a CRC-32 of the data (checked by zlib); the xerial framing and raw
snappy carry none; LZ4 optional block checksums are verified, the content checksum is not (as
upstream); zstd frames may carry a checksum (checked by the library).

Hostile input: every decompressor stops at ``max_size`` output bytes and raises
``UnsupportedFormatError`` ("decompressed data exceeds the limit ..."), so a small bomb cannot
allocate unboundedly.  A stream cut short (a partial write) raises ``TruncatedDataError``; other
malformed streams raise ``CorruptDataError``; a codec whose library is not installed raises
``UnsupportedFormatError``.  Positions in errors are relative to the compressed bytes.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

from mqtool.errors import CorruptDataError, TruncatedDataError, UnsupportedFormatError
from mqtool.formats._binary import Buffer, read_uvarint

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_IDS = {name: codec for codec, name in CODEC_NAMES.items()}

#: Default cap on decompressed bytes per compressed stream.  Kafka batches are at most
#: ``max.message.bytes`` (1 MiB by default) compressed; 128 MiB leaves room for very
#: compressible real data and still stops a decompression bomb.
DEFAULT_MAX_DECOMPRESSED_SIZE = 128 << 20

_PACKAGES = {SNAPPY: "cramjam", LZ4: "lz4", ZSTD: "zstandard"}


def codec_name(codec: int) -> str:
    """``none``/``gzip``/``snappy``/``lz4``/``zstd`` (what ``kafka-dump-log`` prints)."""
    check_codec(codec)
    return CODEC_NAMES[codec]


def check_codec(codec: int, position: int | None = None) -> None:
    """Raise ``CorruptDataError`` for ids 5..7 ("Unknown compression type id")."""
    if codec not in CODEC_NAMES:
        raise CorruptDataError(position=position, expected="a compression codec id 0..4", found=str(codec), kind="compression")


def _missing(codec: int) -> UnsupportedFormatError:
    package = _PACKAGES[codec]
    return UnsupportedFormatError(
        f"{CODEC_NAMES[codec]} compression needs the '{package}' package (pip install 'mqtool[codecs]')",
        expected=f"the {CODEC_NAMES[codec]} codec",
        found="not installed",
    )


def is_available(codec: int) -> bool:
    """True when ``codec`` can be used here (its library imports)."""
    check_codec(codec)
    try:
        _library(codec)
    except UnsupportedFormatError:
        return False
    return True


def _library(codec: int) -> Any:
    try:
        if codec == SNAPPY:
            import cramjam

            return cramjam
        if codec == LZ4:
            import lz4.block

            return lz4.block
        if codec == ZSTD:
            import zstandard

            return zstandard
    except ImportError:
        raise _missing(codec) from None
    return None


def _too_big(max_size: int, codec: int) -> UnsupportedFormatError:
    return UnsupportedFormatError(
        f"decompressed {CODEC_NAMES[codec]} data exceeds the limit of {max_size} bytes (raise max_size to read it)",
        expected=f"at most {max_size} decompressed bytes",
        found="more",
    )


def _broken(codec: int, exc: BaseException, position: int | None = None) -> CorruptDataError:
    return CorruptDataError(
        position=position,
        expected=f"a valid {CODEC_NAMES[codec]} stream",
        found=f"{type(exc).__name__}: {exc}",
        kind="compression",
    )


# --- dispatch ----------------------------------------------------------------------------------


def compress(codec: int, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
    """Compress ``data`` the way a Kafka producer of message format ``magic`` does."""
    check_codec(codec)
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return gzip_compress(data, level=level)
    if codec == SNAPPY:
        return snappy_compress(data)
    if codec == LZ4:
        return lz4_compress(data, broken_header_checksum=magic == 0, level=level)
    return zstd_compress(data, level=level)


def decompress(codec: int, data: Buffer, *, magic: int = 2, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decompress one Kafka compressed stream (a v2 batch's records, a legacy wrapper's value)."""
    check_codec(codec)
    if codec == NONE:
        if len(data) > max_size:
            raise _too_big(max_size, codec)
        return bytes(data)
    if codec == GZIP:
        return gzip_decompress(data, max_size=max_size)
    if codec == SNAPPY:
        return snappy_decompress(data, max_size=max_size)
    if codec == LZ4:
        return lz4_decompress(data, ignore_header_checksum=magic == 0, max_size=max_size)
    return zstd_decompress(data, max_size=max_size)


# --- gzip --------------------------------------------------------------------------------------

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16


def gzip_compress(data: Buffer, *, level: int | None = None) -> bytes:
    """One gzip member, mtime 0 (deterministic)."""
    import gzip

    return gzip.compress(bytes(data), compresslevel=9 if level is None else level, mtime=0)


def gzip_decompress(data: Buffer, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """``GZIPInputStream``: members back to back; anything after the last member is ignored."""
    view = memoryview(data)
    if len(view) < len(_GZIP_MAGIC) or view[:2] != _GZIP_MAGIC:
        raise CorruptDataError(position=0, expected="gzip magic 1F8B", found=bytes(view[:2]).hex().upper() or "end of data", kind="compression")
    out = bytearray()
    pos = 0
    while True:
        d = zlib.decompressobj(wbits=31)
        member_start = pos
        tail: memoryview | bytes = view[pos:]
        while True:
            try:
                chunk = d.decompress(tail, max_size - len(out) + 1)
            except zlib.error as exc:
                raise _broken(GZIP, exc, member_start) from None
            out += chunk
            if len(out) > max_size:
                raise _too_big(max_size, GZIP)
            if d.eof:
                break
            if not d.unconsumed_tail:
                # All input consumed and the member is not complete: a cut stream.
                raise TruncatedDataError(
                    position=len(view),
                    expected="the rest of the gzip member (deflate data and trailer)",
                    found="end of data",
                    kind="compression",
                )
            tail = d.unconsumed_tail
        pos = len(view) - len(d.unused_data)
        if len(view) - pos < 2 or view[pos : pos + 2] != _GZIP_MAGIC:
            return bytes(out)


# --- snappy ------------------------------------------------------------------------------------

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
XERIAL_HEADER_SIZE = _XERIAL_HEADER.size
_CHUNK_LENGTH = struct.Struct(">i")
#: ``SnappyOutputStream.DEFAULT_BLOCK_SIZE``.
XERIAL_BLOCK_SIZE = 32 * 1024


def snappy_compress(data: Buffer, *, xerial: bool = True, block_size: int = XERIAL_BLOCK_SIZE) -> bytes:
    """xerial framing (what Kafka writes), or one raw snappy block with ``xerial=False``."""
    cramjam = _library(SNAPPY)
    view = memoryview(data)
    if not xerial:
        return bytes(cramjam.snappy.compress_raw(bytes(view)))
    out = bytearray(_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1))
    for start in range(0, len(view), block_size):
        block = bytes(cramjam.snappy.compress_raw(bytes(view[start : start + block_size])))
        out += _CHUNK_LENGTH.pack(len(block))
        out += block
    return bytes(out)


def _snappy_raw(cramjam: Any, block: memoryview, position: int, budget: int, max_size: int) -> bytes:
    # A raw snappy block starts with its uncompressed length (uvarint): check before allocating.
    length, _ = read_uvarint(block, 0, "snappy uncompressed length")
    if length > budget:
        raise _too_big(max_size, SNAPPY)
    try:
        return bytes(cramjam.snappy.decompress_raw(bytes(block)))
    except Exception as exc:  # cramjam.DecompressionError
        raise _broken(SNAPPY, exc, position) from None


def snappy_decompress(data: Buffer, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """``SnappyInputStream``: xerial framing, or a raw block when the magic is absent."""
    cramjam = _library(SNAPPY)
    view = memoryview(data)
    size = len(view)
    if size == 0:
        return b""
    if size < XERIAL_HEADER_SIZE or view[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
        return _snappy_raw(cramjam, view, 0, max_size, max_size)
    out = bytearray()
    pos = 0
    while pos < size:
        if view[pos : pos + len(XERIAL_MAGIC)] == XERIAL_MAGIC:
            if size - pos < XERIAL_HEADER_SIZE:
                raise TruncatedDataError(position=pos, expected=f"{XERIAL_HEADER_SIZE}-byte xerial header", found=f"{size - pos} bytes", kind="compression")
            _, version, _compat = _XERIAL_HEADER.unpack_from(view, pos)
            if version < 1:
                raise CorruptDataError(position=pos + 8, expected="xerial snappy version >= 1", found=str(version), kind="compression")
            pos += XERIAL_HEADER_SIZE
            continue
        if size - pos < _CHUNK_LENGTH.size:
            # snappy-java stops quietly when fewer than 4 bytes are left for a chunk length.
            break
        (chunk,) = _CHUNK_LENGTH.unpack_from(view, pos)
        if chunk < 0:
            raise CorruptDataError(position=pos, expected="a non-negative xerial chunk length", found=str(chunk), kind="compression")
        pos += _CHUNK_LENGTH.size
        if chunk > size - pos:
            raise TruncatedDataError(position=pos, expected=f"{chunk} bytes of snappy chunk", found=f"{size - pos} bytes", kind="compression")
        out += _snappy_raw(cramjam, view[pos : pos + chunk], pos, max_size - len(out), max_size)
        pos += chunk
    return bytes(out)


# --- lz4 ---------------------------------------------------------------------------------------

LZ4_MAGIC = 0x184D2204
_LZ4_MAGIC = struct.Struct("<I")
_LZ4_BLOCK = struct.Struct("<I")
LZ4_INCOMPRESSIBLE = 0x80000000
_FLG_VERSION = 0x40
_FLG_BLOCK_INDEPENDENCE = 0x20
_FLG_BLOCK_CHECKSUM = 0x10
_FLG_CONTENT_SIZE = 0x08
_FLG_CONTENT_CHECKSUM = 0x04
#: BD block-size id 4 = 64 KiB (``Lz4BlockOutputStream.BLOCKSIZE_64KB``).
LZ4_BLOCKSIZE_64KB = 4


def _lz4_header_checksum(header: bytes, *, broken: bool) -> int:
    """HC byte for ``header`` = magic + descriptor (without HC)."""
    covered = header if broken else header[_LZ4_MAGIC.size :]
    return (xxh32(covered) >> 8) & 0xFF


def lz4_compress(data: Buffer, *, broken_header_checksum: bool = False, level: int | None = None, block_size_id: int = LZ4_BLOCKSIZE_64KB) -> bytes:
    """Kafka's LZ4 frame (independent blocks, no checksums, no content size)."""
    block = _library(LZ4)
    if not 4 <= block_size_id <= 7:
        raise ValueError("LZ4 block size id must be 4..7")
    max_block = 1 << (2 * block_size_id + 8)
    header = _LZ4_MAGIC.pack(LZ4_MAGIC) + bytes([_FLG_VERSION | _FLG_BLOCK_INDEPENDENCE, block_size_id << 4])
    out = bytearray(header)
    out.append(_lz4_header_checksum(header, broken=broken_header_checksum))
    view = memoryview(data)
    mode = {} if level is None or level <= 0 else {"mode": "high_compression", "compression": level}
    for start in range(0, len(view), max_block):
        raw = bytes(view[start : start + max_block])
        packed = block.compress(raw, store_size=False, **mode)
        if len(packed) >= len(raw):
            out += _LZ4_BLOCK.pack(len(raw) | LZ4_INCOMPRESSIBLE)
            out += raw
        else:
            out += _LZ4_BLOCK.pack(len(packed))
            out += packed
    out += _LZ4_BLOCK.pack(0)
    return bytes(out)


def lz4_decompress(data: Buffer, *, ignore_header_checksum: bool = False, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """``Lz4BlockInputStream``; ``ignore_header_checksum`` for magic-0 wrappers (KAFKA-3160)."""
    block = _library(LZ4)
    view = memoryview(data)
    size = len(view)
    if size < 6:
        raise TruncatedDataError(position=0, expected="an LZ4 frame header (at least 6 bytes)", found=f"{size} bytes", kind="compression")
    (magic,) = _LZ4_MAGIC.unpack_from(view, 0)
    if magic != LZ4_MAGIC:
        raise CorruptDataError(position=0, expected=f"LZ4 frame magic 0x{LZ4_MAGIC:08X}", found=f"0x{magic:08X}", kind="compression")
    flg, bd = view[4], view[5]
    if flg & 0x03 or flg >> 6 != 1:
        raise CorruptDataError(position=4, expected="LZ4 FLG with version 01 and reserved bits 0", found=f"0x{flg:02X}", kind="compression")
    if not flg & _FLG_BLOCK_INDEPENDENCE:
        raise CorruptDataError(position=4, expected="LZ4 independent blocks (FLG bit 5)", found=f"0x{flg:02X}", kind="compression")
    block_size_id = (bd >> 4) & 0x07
    if bd & 0x8F or block_size_id < 4:
        raise CorruptDataError(position=5, expected="LZ4 BD with block size id 4..7 and reserved bits 0", found=f"0x{bd:02X}", kind="compression")
    max_block = 1 << (2 * block_size_id + 8)
    pos = 6
    if flg & _FLG_CONTENT_SIZE:
        pos += 8
    if size < pos + 1:
        raise TruncatedDataError(position=6, expected="the rest of the LZ4 frame descriptor", found="end of data", kind="compression")
    if not ignore_header_checksum:
        expected_hc = _lz4_header_checksum(bytes(view[:pos]), broken=False)
        if view[pos] != expected_hc:
            raise CorruptDataError(
                "LZ4 frame descriptor corrupted",
                position=pos,
                expected=f"HC 0x{expected_hc:02X}",
                found=f"0x{view[pos]:02X}",
                kind="compression",
            )
    pos += 1
    out = bytearray()
    while True:
        if size - pos < _LZ4_BLOCK.size:
            raise TruncatedDataError(position=pos, expected="an LZ4 block size or end mark", found=f"{size - pos} bytes", kind="compression")
        (word,) = _LZ4_BLOCK.unpack_from(view, pos)
        block_pos = pos
        pos += _LZ4_BLOCK.size
        stored = bool(word & LZ4_INCOMPRESSIBLE)
        length = word & ~LZ4_INCOMPRESSIBLE
        if length == 0:
            if flg & _FLG_CONTENT_CHECKSUM:
                if size - pos < 4:
                    raise TruncatedDataError(position=pos, expected="the 4-byte LZ4 content checksum", found=f"{size - pos} bytes", kind="compression")
            return bytes(out)
        if length > max_block:
            raise CorruptDataError(position=block_pos, expected=f"an LZ4 block of at most {max_block} bytes", found=str(length), kind="compression")
        if size - pos < length:
            raise TruncatedDataError(position=pos, expected=f"{length} bytes of LZ4 block", found=f"{size - pos} bytes", kind="compression")
        payload = bytes(view[pos : pos + length])
        if stored:
            chunk = payload
        else:
            try:
                chunk = block.decompress(payload, uncompressed_size=max_block)
            except Exception as exc:  # lz4.block.LZ4BlockError
                raise _broken(LZ4, exc, block_pos) from None
        pos += length
        if flg & _FLG_BLOCK_CHECKSUM:
            if size - pos < 4:
                raise TruncatedDataError(position=pos, expected="the 4-byte LZ4 block checksum", found=f"{size - pos} bytes", kind="compression")
            (stored_hash,) = _LZ4_BLOCK.unpack_from(view, pos)
            computed = xxh32(payload)
            if stored_hash != computed:
                raise CorruptDataError(
                    "LZ4 block checksum mismatch",
                    position=pos,
                    expected=f"0x{computed:08X}",
                    found=f"0x{stored_hash:08X}",
                    kind="compression",
                )
            pos += 4
        out += chunk
        if len(out) > max_size:
            raise _too_big(max_size, LZ4)


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF
_U32X4 = struct.Struct("<4I")
_U32 = struct.Struct("<I")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: Buffer, seed: int = 0) -> int:
    """XXH32 (used by the LZ4 frame format for HC and block checksums)."""
    view = memoryview(data)
    n = len(view)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        limit = n - 16
        while i <= limit:
            a, b, c, d = _U32X4.unpack_from(view, i)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (k,) = _U32.unpack_from(view, i)
        h = (_rotl((h + k * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + view[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


# --- zstd --------------------------------------------------------------------------------------

#: Compressed bytes fed to zstd per step: bounds how far one step can overshoot ``max_size``.
_ZSTD_FEED = 256


def zstd_compress(data: Buffer, *, level: int | None = None) -> bytes:
    zstandard = _library(ZSTD)
    compressed: bytes = zstandard.ZstdCompressor(level=3 if level is None else level).compress(bytes(data))
    return compressed


def zstd_decompress(data: Buffer, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """``ZstdInputStream``: one or more zstd (or skippable) frames, all consumed."""
    zstandard = _library(ZSTD)
    view = memoryview(data)
    size = len(view)
    if size == 0:
        raise TruncatedDataError(position=0, expected="a zstd frame", found="end of data", kind="compression")
    out = bytearray()
    pos = 0
    while pos < size:
        frame_start = pos
        d = zstandard.ZstdDecompressor().decompressobj()
        try:
            while True:
                piece = bytes(view[pos : pos + _ZSTD_FEED])
                pos += len(piece)
                out += d.decompress(piece)
                if len(out) > max_size:
                    raise _too_big(max_size, ZSTD)
                if d.eof:
                    pos -= len(d.unused_data)
                    break
                if pos >= size:
                    raise TruncatedDataError(position=size, expected="the rest of the zstd frame", found="end of data", kind="compression")
        except zstandard.ZstdError as exc:
            raise _broken(ZSTD, exc, frame_start) from None
    return bytes(out)


__all__ = [
    "NONE",
    "GZIP",
    "SNAPPY",
    "LZ4",
    "ZSTD",
    "CODEC_NAMES",
    "CODEC_IDS",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "XERIAL_MAGIC",
    "LZ4_MAGIC",
    "codec_name",
    "check_codec",
    "is_available",
    "compress",
    "decompress",
    "gzip_compress",
    "gzip_decompress",
    "snappy_compress",
    "snappy_decompress",
    "lz4_compress",
    "lz4_decompress",
    "zstd_compress",
    "zstd_decompress",
    "xxh32",
]
