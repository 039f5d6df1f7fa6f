"""MetaQ message codec, segment walker, archive names and zip archives, delete policies."""

from __future__ import annotations

import io
import struct
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import ChecksumError, CorruptDataError, MqError, TruncatedDataError, UnsupportedFormatError
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.formats.checksums import masked_crc32

HELLO = bytes.fromhex("00000005 3610a686 0000000000002710 00000000 68656c6c6f".replace(" ", ""))
DIGITS = bytes.fromhex("00000009 4bf43926 0000000000000001 00000000 313233343536373839".replace(" ", ""))
WITH_ATTR = bytes.fromhex(
    "0000000d 4b62e51c 0000000000002711 00000001 00000004 61747472 68656c6c6f".replace(" ", "")
)

# --- spec vectors -------------------------------------------------------------------------


def test_checksum_vectors():
    assert masked_crc32(b"hello") == 0x3610A686
    assert masked_crc32(b"123456789") == 0x4BF43926  # top bit of 0xCBF43926 cleared
    assert masked_crc32(b"") == 0


def test_message_vectors():
    assert mq.encode_message(mq.Message(10000, b"hello")) == HELLO
    assert mq.encode_message(mq.Message(1, b"123456789")) == DIGITS
    message = mq.make_message(10001, b"hello", "attr")
    assert message.flag == 1 and message.data == bytes.fromhex("0000000461747472") + b"hello"
    assert mq.encode_message(message) == WITH_ATTR
    decoded = mq.decode_message(WITH_ATTR)
    assert decoded == message and decoded.checksum == 0x4B62E51C
    assert decoded.attribute == b"attr" and decoded.attribute_text == "attr" and decoded.payload == b"hello"
    plain = mq.decode_message(HELLO)
    assert plain.attribute is None and plain.payload == b"hello" and plain.size == 25
    assert mq.peek_message(HELLO) == (5, 0x3610A686, 10000, 0)


def test_segment_vector():
    segment = HELLO + WITH_ATTR
    assert len(segment) == 58
    walker = mq.MessageWalker(segment)
    positions = [p for p, _ in walker]
    assert positions == [0, 25]
    assert walker.end == mq.DataEnd("eof", 58)
    named = mq.MessageWalker(segment, start_offset=1073741845)
    assert [named.offset_of(p) for p, _ in named] == [1073741845, 1073741870]
    assert segnames.metaq_file_name(1073741845) == "00000000001073741845.meta"


def test_make_message_flag_bits():
    assert mq.make_message(1, b"x", flag=0x7).flag == 0x6  # no attribute: bit 0 cleared
    assert mq.make_message(1, b"x", b"", flag=0x6).flag == 0x7
    assert mq.make_message(1, b"x", b"").attribute == b""
    assert mq.make_message(1, b"p", "\u00e9").attribute == "\u00e9".encode()


# --- recovery ends (spec C3 examples) -----------------------------------------------------


def test_torn_header_is_partial():
    walker = mq.MessageWalker(HELLO + HELLO[:10])
    assert len(list(walker)) == 1
    assert walker.end == mq.DataEnd("partial", 25, 10)


def test_length_past_end_is_partial():
    header = struct.pack(">iiqi", 100, 0, 5, 0)
    walker = mq.MessageWalker(HELLO + header + bytes(30))
    assert len(list(walker)) == 1
    assert walker.end == mq.DataEnd("partial", 25, 120)  # 50 tail bytes truncated by recovery


def test_flipped_data_byte_fails_checksum():
    bad = bytearray(WITH_ATTR)
    bad[-1] ^= 1
    walker = mq.MessageWalker(HELLO + bytes(bad))
    with pytest.raises(ChecksumError) as info:
        list(walker)
    assert walker.failed_at == 25 and info.value.position == 29


def test_negative_length_is_corrupt():
    walker = mq.MessageWalker(HELLO + struct.pack(">iiqi", -1, 0, 0, 0))
    with pytest.raises(CorruptDataError) as info:
        list(walker)
    assert info.value.position == 25 and walker.failed_at == 25


def test_zero_tail():
    walker = mq.MessageWalker(HELLO + bytes(45))
    assert len(list(walker)) == 1
    assert walker.end == mq.DataEnd("zeros", 25, 45)
    # upstream recovery reads 20 zero bytes as a valid empty message; opt in to that reading
    upstream = mq.MessageWalker(HELLO + bytes(45), zeros_are_end=False)
    assert [m for _, m in upstream][1:] == [mq.Message(0), mq.Message(0)]
    assert upstream.end == mq.DataEnd("zeros", 65, 5)


def test_empty_message_with_id_is_valid():
    raw = mq.encode_message(mq.Message(77))
    assert raw == struct.pack(">iiqi", 0, 0, 77, 0)
    assert [m for _, m in mq.MessageWalker(raw)] == [mq.Message(77)]


def test_malformed_attribute_block_does_not_stop_the_walk():
    # the broker never parses attributes; only access to .attribute/.payload raises
    data = struct.pack(">i", 999) + b"abc"
    raw = mq.encode_message(mq.Message(5, data, mq.FLAG_HAS_ATTRIBUTE))
    [(_, message)] = list(mq.MessageWalker(raw))
    with pytest.raises(CorruptDataError):
        message.payload
    short = mq.Message(5, b"ab", mq.FLAG_HAS_ATTRIBUTE)
    with pytest.raises(TruncatedDataError):
        short.attribute
    negative = mq.Message(5, struct.pack(">i", -1), mq.FLAG_HAS_ATTRIBUTE)
    with pytest.raises(CorruptDataError):
        negative.attribute


def test_attribute_text_is_lenient_like_java():
    message = mq.make_message(1, b"p", b"\xffa")
    assert message.attribute_text == "\ufffda"


def test_decode_truncated():
    with pytest.raises(TruncatedDataError):
        mq.decode_message(HELLO[:19])
    with pytest.raises(TruncatedDataError):
        mq.decode_message(HELLO[:-1])


def test_encode_out_of_range():
    with pytest.raises(ValueError):
        mq.encode_message(mq.Message(2**63, b""))


# --- names, archives, delete policies -----------------------------------------------------


def test_zip_archive_round_trip_and_checks():
    segment = HELLO + WITH_ATTR
    archive = mq.encode_zip_archive("00000000000000000000.meta", segment)
    assert mq.decode_zip_archive(archive, expected_name="00000000000000000000.meta") == segment
    with pytest.raises(CorruptDataError):
        mq.decode_zip_archive(archive, expected_name="00000000000000000058.meta")
    with pytest.raises(CorruptDataError):
        mq.decode_zip_archive(b"not a zip")
    with pytest.raises(ValueError):
        mq.encode_zip_archive("00000000000000000000.meta.zip", segment)


def _zip(entries, method=zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return out.getvalue()


def test_zip_archive_shape_errors():
    with pytest.raises(CorruptDataError):
        mq.decode_zip_archive(_zip([]))
    with pytest.raises(CorruptDataError):
        mq.decode_zip_archive(_zip([("00000000000000000000.meta", b"a"), ("00000000000000000001.meta", b"b")]))
    with pytest.raises(CorruptDataError):
        mq.decode_zip_archive(_zip([("segment.bin", b"a")]))
    stored = _zip([("00000000000000000000.meta", HELLO)], zipfile.ZIP_STORED)
    assert mq.decode_zip_archive(stored) == HELLO
    with pytest.raises(CorruptDataError):
        mq.decode_zip_archive(_zip([("00000000000000000000.meta", bytes(100))]), max_size=10)


def test_zip_crc_mismatch():
    stored = bytearray(_zip([("00000000000000000000.meta", HELLO)], zipfile.ZIP_STORED))
    at = bytes(stored).index(HELLO)
    stored[at + 24] ^= 1  # flip a payload byte inside the stored entry
    with pytest.raises(ChecksumError):
        mq.decode_zip_archive(bytes(stored))


def test_java_zip_with_data_descriptor():
    # ZipOutputStream streams entries: sizes and CRC in a data descriptor after the data.
    class Unseekable(io.RawIOBase):
        def __init__(self):
            self.buffer = bytearray()

        def writable(self):
            return True

        def write(self, data):
            self.buffer += data
            return len(data)

    sink = Unseekable()
    with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("00000000000000000025.meta", "w") as entry:
            entry.write(WITH_ATTR)
    data = bytes(sink.buffer)
    assert struct.unpack_from("<H", data, 6)[0] & 0x8  # general purpose bit 3: data descriptor
    assert mq.decode_zip_archive(data) == WITH_ATTR


def test_delete_policy_vectors():
    assert mq.parse_delete_policy("delete,168") == mq.DeletePolicy("delete", 604800000)
    assert mq.parse_delete_policy("delete,30m") == mq.DeletePolicy("delete", 1800000)
    assert mq.parse_delete_policy("delete,10s") == mq.DeletePolicy("delete", 10000)
    assert mq.parse_delete_policy("archive,72h,true") == mq.DeletePolicy("archive", 259200000, True)
    assert mq.parse_delete_policy("archive,72") == mq.DeletePolicy("archive", 259200000, False)
    assert mq.parse_delete_policy("archive,72h,TRUE").compress
    assert not mq.parse_delete_policy("archive,72h,yes").compress
    with pytest.raises(UnsupportedFormatError):
        mq.parse_delete_policy("compact,1")
    for bad in ("delete", "delete,", "delete,h", "delete,1d", "delete,99999999999h"):
        with pytest.raises(CorruptDataError):
            mq.parse_delete_policy(bad)


# --- properties ---------------------------------------------------------------------------

INT64 = st.integers(-(2**63), 2**63 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
messages = st.one_of(
    st.builds(mq.Message, INT64, st.binary(max_size=150), INT32),
    st.builds(mq.make_message, INT64, st.binary(max_size=100), st.one_of(st.none(), st.binary(max_size=30)), INT32),
).filter(lambda m: m.data or m.id or m.flag)  # an all-zero header is the walker's zero tail


@given(st.lists(messages, max_size=8), st.integers(0, 2**40))
def test_segment_round_trip(items, start_offset):
    data = b"".join(mq.encode_message(m) for m in items)
    walker = mq.MessageWalker(data, start_offset=start_offset)
    decoded = [m for _, m in walker]
    assert decoded == items
    assert walker.end == mq.DataEnd("eof", len(data))


@given(INT64, st.binary(max_size=100), st.one_of(st.none(), st.binary(max_size=30)), INT32)
def test_attribute_round_trip(msg_id, payload, attribute, flag):
    message = mq.decode_message(mq.encode_message(mq.make_message(msg_id, payload, attribute, flag)))
    assert message.attribute == attribute and message.payload == payload


@given(st.binary(max_size=3000))
def test_zip_round_trip(segment):
    assert mq.decode_zip_archive(mq.encode_zip_archive("00000000000000000000.meta", segment)) == segment


@given(st.binary(max_size=400), st.integers(0, 64), st.booleans())
def test_arbitrary_bytes_raise_only_mq_errors(blob, start, zeros_are_end):
    walker = mq.MessageWalker(blob, min(start, len(blob)), zeros_are_end=zeros_are_end)
    try:
        for _, message in walker:
            try:
                message.attribute
                message.payload
            except MqError:
                pass
        assert walker.end is not None
    except MqError:
        assert walker.failed_at is not None
    try:
        mq.decode_message(blob)
    except MqError:
        pass
    try:
        mq.decode_zip_archive(blob)
    except MqError:
        pass


@given(st.binary(min_size=30, max_size=400), st.integers(0, 200))
def test_corrupted_zip_archives(segment, flip):
    archive = bytearray(mq.encode_zip_archive("00000000000000000000.meta", segment))
    archive[flip % len(archive)] ^= 0x5A
    try:
        mq.decode_zip_archive(bytes(archive))
    except MqError:
        pass


@given(st.text(max_size=40))
def test_arbitrary_policies(text):
    try:
        mq.parse_delete_policy(text)
    except MqError:
        pass


def test_peek_length_reads_msglen_only():
    data = mq.encode_message(mq.make_message(7, b"payload"))
    assert mq.peek_length(data) == mq.peek_message(data)[0] == len(b"payload")
    assert mq.peek_length(data[:4]) == len(b"payload")  # 4 bytes are enough, unlike peek_message
    assert mq.peek_length(b"\xff\xff\xff\xff") == -1
    with pytest.raises(TruncatedDataError):
        mq.peek_length(data[:3])
