"""Kafka compression codecs: round trips, framing details, upstream quirks, hostile input."""

from __future__ import annotations

import gzip
import struct
import subprocess
import sys
import time
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError, MqError, TruncatedDataError, UnsupportedFormatError
from mqtool.formats.kafka import compression as c

CODECS = [c.NONE, c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD]


def codec_params(codecs):
    """Codecs as pytest params, skipped when their library is not installed."""
    return [pytest.param(x, marks=pytest.mark.skipif(not c.is_available(x), reason="codec library not installed")) for x in codecs]


def need_codec(codec: int) -> None:
    if not c.is_available(codec):
        pytest.skip(f"{c.CODEC_NAMES[codec]} library not installed")


# --- names and ids ----------------------------------------------------------------------------


def test_codec_names_match_dump_log():
    assert [c.codec_name(i) for i in CODECS] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert c.CODEC_IDS["zstd"] == 4


@pytest.mark.parametrize("codec", [5, 6, 7, -1])
def test_unknown_codec_ids_are_corruption(codec):
    with pytest.raises(CorruptDataError, match="compression codec id 0..4"):
        c.decompress(codec, b"x")
    with pytest.raises(CorruptDataError):
        c.codec_name(codec)


def test_importing_mqtool_does_not_import_codec_libraries():
    code = (
        "import sys, mqtool, mqtool.formats.kafka.log, mqtool.formats.kafka.internal_topics;"
        "bad = [m for m in ('cramjam', 'lz4', 'zstandard', 'snappy') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_missing_library_is_unsupported_not_import_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def deny(name, *args, **kwargs):
        if name.split(".")[0] in ("cramjam", "lz4", "zstandard"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", deny)
    for codec in (c.SNAPPY, c.LZ4, c.ZSTD):
        assert not c.is_available(codec)
        with pytest.raises(UnsupportedFormatError, match=r"mqtool\[codecs\]"):
            c.decompress(codec, b"\x00" * 32)
        with pytest.raises(UnsupportedFormatError):
            c.compress(codec, b"data")
    assert c.decompress(c.GZIP, c.compress(c.GZIP, b"still fine")) == b"still fine"


# --- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", codec_params(CODECS))
@pytest.mark.parametrize("magic", [0, 1, 2])
@given(data=st.binary(max_size=3000) | st.binary(min_size=1, max_size=8).map(lambda b: b * 40000))
@settings(max_examples=15)
def test_round_trip(codec, magic, data):
    need_codec(codec)
    assert c.decompress(codec, c.compress(codec, data, magic=magic), magic=magic) == data


@pytest.mark.parametrize("codec", CODECS)
def test_large_input_spans_many_blocks(codec):
    need_codec(codec)
    data = bytes(range(256)) * 2000 + b"tail"  # 512 KiB: several xerial/LZ4 blocks
    assert c.decompress(codec, c.compress(codec, data)) == data


# --- gzip -------------------------------------------------------------------------------------


def test_gzip_concatenated_members_and_ignored_trailing_bytes():
    blob = gzip.compress(b"one ") + gzip.compress(b"two") + b"garbage after the last member"
    assert c.gzip_decompress(blob) == b"one two"


def test_gzip_truncated_member_is_truncated_data():
    blob = gzip.compress(b"x" * 5000 + bytes(range(256)) * 10)
    with pytest.raises(TruncatedDataError):
        c.gzip_decompress(blob[:-12])


def test_gzip_bad_magic_and_bad_deflate():
    with pytest.raises(CorruptDataError, match="gzip magic"):
        c.gzip_decompress(b"PK\x03\x04")
    blob = bytearray(gzip.compress(b"hello world" * 20))
    blob[12] ^= 0xFF
    with pytest.raises(CorruptDataError):
        c.gzip_decompress(bytes(blob))


def test_gzip_crc_is_checked():
    blob = bytearray(gzip.compress(b"hello world"))
    blob[-8] ^= 0x01  # CRC-32 of the member
    with pytest.raises(CorruptDataError):
        c.gzip_decompress(bytes(blob))


# --- snappy -----------------------------------------------------------------------------------


def test_xerial_header_layout():
    need_codec(c.SNAPPY)
    blob = c.snappy_compress(b"abc" * 30000)
    assert blob[:8] == b"\x82SNAPPY\x00" == c.XERIAL_MAGIC
    assert struct.unpack(">ii", blob[8:16]) == (1, 1)
    # 90000 bytes in 32 KiB blocks: three chunks
    pos, chunks = 16, 0
    while pos < len(blob):
        (n,) = struct.unpack_from(">i", blob, pos)
        pos += 4 + n
        chunks += 1
    assert pos == len(blob) and chunks == 3


def test_snappy_raw_block_without_xerial_magic():
    need_codec(c.SNAPPY)
    raw = c.snappy_compress(b"raw snappy " * 100, xerial=False)
    assert not raw.startswith(c.XERIAL_MAGIC)
    assert c.snappy_decompress(raw) == b"raw snappy " * 100
    assert c.snappy_decompress(b"") == b""


def test_xerial_concatenated_streams_and_little_endian_version():
    need_codec(c.SNAPPY)
    one = c.snappy_compress(b"first|")
    two = bytearray(c.snappy_compress(b"second"))
    two[8:16] = struct.pack("<ii", 1, 1)  # some producers write version/compat little-endian
    assert c.snappy_decompress(one + bytes(two)) == b"first|second"


def test_xerial_truncated_chunk_and_negative_length():
    need_codec(c.SNAPPY)
    blob = c.snappy_compress(b"0123456789" * 100)
    with pytest.raises(TruncatedDataError):
        c.snappy_decompress(blob[:-3])
    bad = blob[:16] + struct.pack(">i", -5) + blob[20:]
    with pytest.raises(CorruptDataError):
        c.snappy_decompress(bad)


def test_snappy_declared_length_is_checked_before_allocating():
    need_codec(c.SNAPPY)
    # raw block claiming 2**40 uncompressed bytes
    bomb = bytes([0x80, 0x80, 0x80, 0x80, 0x80, 0x20]) + b"\x00" * 10
    with pytest.raises(UnsupportedFormatError, match="exceeds the limit"):
        c.snappy_decompress(bomb)


# --- lz4 --------------------------------------------------------------------------------------


def test_lz4_frame_header_is_kafkas():
    need_codec(c.LZ4)
    blob = c.lz4_compress(b"x" * 100)
    assert struct.unpack_from("<I", blob)[0] == c.LZ4_MAGIC
    assert blob[4] == 0x60  # version 01, independent blocks, no checksums, no content size
    assert blob[5] == 0x40  # 64 KiB blocks
    assert blob[6] == (c.xxh32(blob[4:6]) >> 8) & 0xFF
    assert blob[-4:] == b"\x00\x00\x00\x00"  # end mark


def test_lz4_kafka_3160_broken_header_checksum():
    need_codec(c.LZ4)
    data = b"magic zero lz4 " * 50
    broken = c.compress(c.LZ4, data, magic=0)
    assert broken[6] == (c.xxh32(broken[0:6]) >> 8) & 0xFF  # over magic + descriptor
    assert broken[6] != (c.xxh32(broken[4:6]) >> 8) & 0xFF
    # magic 0 ignores HC; magic 1/2 verify it
    assert c.decompress(c.LZ4, broken, magic=0) == data
    with pytest.raises(CorruptDataError, match="descriptor"):
        c.decompress(c.LZ4, broken, magic=1)
    good = c.compress(c.LZ4, data, magic=1)
    assert c.decompress(c.LZ4, good, magic=0) == data  # ignoring works for correct HC too


def test_lz4_content_size_block_checksum_and_stored_blocks():
    need_codec(c.LZ4)
    import lz4.frame

    data = bytes(range(256)) * 300
    framed = lz4.frame.compress(data, block_linked=False, store_size=True, block_checksum=True, content_checksum=True)
    assert c.lz4_decompress(framed) == data
    corrupt = bytearray(framed)
    corrupt[-12] ^= 0xFF  # inside the last block's data or checksum
    with pytest.raises(CorruptDataError):
        c.lz4_decompress(bytes(corrupt))
    import os

    noise = os.urandom(5000)
    blob = c.lz4_compress(noise)
    assert struct.unpack_from("<I", blob, 7)[0] & c.LZ4_INCOMPRESSIBLE
    assert c.lz4_decompress(blob) == noise


def test_lz4_dependent_blocks_rejected_as_upstream():
    need_codec(c.LZ4)
    blob = bytearray(c.lz4_compress(b"dependent " * 100))
    blob[4] &= ~0x20  # clear "block independence"
    blob[6] = (c.xxh32(bytes(blob[4:6])) >> 8) & 0xFF
    with pytest.raises(CorruptDataError, match="independent"):
        c.lz4_decompress(bytes(blob))


def test_lz4_missing_end_mark_is_truncated():
    need_codec(c.LZ4)
    blob = c.lz4_compress(b"abc" * 1000)
    with pytest.raises(TruncatedDataError):
        c.lz4_decompress(blob[:-4])
    with pytest.raises(CorruptDataError, match="magic"):
        c.lz4_decompress(b"\x00" * 10)


def test_xxh32_reference_values():
    # published XXH32 test values (seed 0)
    assert c.xxh32(b"") == 0x02CC5D05
    assert c.xxh32(b"a") == 0x550D7456
    assert c.xxh32(b"abc") == 0x32D153FF
    assert c.xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_xxh32_against_xxhash_package():
    xxhash = pytest.importorskip("xxhash")
    import random

    rng = random.Random(7)
    for n in [0, 1, 3, 4, 15, 16, 17, 33, 100, 1000]:
        data = bytes(rng.randrange(256) for _ in range(n))
        assert c.xxh32(data) == xxhash.xxh32(data).intdigest()
        assert c.xxh32(data, 99) == xxhash.xxh32(data, seed=99).intdigest()


# --- zstd -------------------------------------------------------------------------------------


def test_zstd_concatenated_and_skippable_frames():
    need_codec(c.ZSTD)
    skippable = struct.pack("<II", 0x184D2A50, 3) + b"abc"
    blob = c.zstd_compress(b"one ") + skippable + c.zstd_compress(b"two")
    assert c.zstd_decompress(blob) == b"one two"


def test_zstd_truncated_and_trailing_garbage():
    need_codec(c.ZSTD)
    blob = c.zstd_compress(bytes(range(256)) * 100)
    with pytest.raises(TruncatedDataError):
        c.zstd_decompress(blob[:-5])
    with pytest.raises(CorruptDataError):
        c.zstd_decompress(blob + b"junk")
    with pytest.raises(TruncatedDataError):
        c.zstd_decompress(b"")


# --- hostile input ----------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [c.GZIP, c.LZ4, c.ZSTD, c.SNAPPY])
def test_decompression_bomb_is_capped(codec):
    need_codec(codec)
    bomb = c.compress(codec, b"\x00" * (8 << 20))
    start = time.perf_counter()
    with pytest.raises(UnsupportedFormatError, match="exceeds the limit of 1048576 bytes"):
        c.decompress(codec, bomb, max_size=1 << 20)
    assert time.perf_counter() - start < 2
    assert len(c.decompress(codec, bomb, max_size=8 << 20)) == 8 << 20


@pytest.mark.parametrize("codec", codec_params(CODECS))
@given(data=st.binary(max_size=300))
@settings(max_examples=150, deadline=None)
def test_arbitrary_bytes_raise_only_mq_errors(codec, data):
    need_codec(codec)
    for magic in (0, 2):
        try:
            c.decompress(codec, data, magic=magic, max_size=1 << 20)
        except MqError:
            pass


@pytest.mark.parametrize("codec", codec_params([c.GZIP, c.SNAPPY, c.LZ4, c.ZSTD]))
@given(data=st.data())
@settings(max_examples=100, deadline=None)
def test_mutated_streams_raise_only_mq_errors(codec, data):
    need_codec(codec)
    payload = data.draw(st.binary(min_size=1, max_size=2000))
    blob = bytearray(c.compress(codec, payload))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(blob) - 1))
        blob[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(blob)))
    for candidate in (bytes(blob), bytes(blob[:cut])):
        try:
            c.decompress(codec, candidate, max_size=1 << 20)
        except MqError:
            pass


def test_gzip_output_is_deterministic_and_standard():
    blob = c.gzip_compress(b"abc")
    assert blob[:4] == b"\x1f\x8b\x08\x00" and blob[4:8] == b"\x00\x00\x00\x00"  # mtime 0
    assert zlib.decompress(blob, 31) == b"abc"
