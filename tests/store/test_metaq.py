"""MetaQ data dirs: detection, partitions and archives, zip entries read with bounded memory, the writer."""

from __future__ import annotations

import io
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.errors import (
    ChecksumError,
    CorruptDataError,
    StoreLayoutError,
    UnsupportedFormatError,
)
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.layouts import detect_layout
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.legacy import SegmentWalk, ZipEntryReader
from tests.conftest import FIXTURES, PROJECT_ROOT

DATA = FIXTURES / "metaq-data"


def _messages(n, base=1):
    return [mq.make_message(base + i, f"payload {i}".encode(), "k=v" if i % 2 else None) for i in range(n)]


def _segment(messages):
    return b"".join(mq.encode_message(m) for m in messages)


def _zip(entries, method=zipfile.ZIP_DEFLATED):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data, method)
    return out.getvalue()


# --- detection and opening -------------------------------------------------------------------------


def test_detects_the_fixture_partitions_segments_and_archives():
    part = DATA / "trade-0"
    for path in (DATA, part, part / "00000000000000001602.meta", part / "00000000000000000000.meta.zip", part / "00000000000000000780.meta.arc"):
        assert sm.is_metaq_path(path), path
        assert detect_layout(path) == "metaq"
    for path in (FIXTURES / "rocketmq-store", FIXTURES / "jafka-data", PROJECT_ROOT / "tests", FIXTURES):
        assert not sm.is_metaq_path(path), path
    assert not sj.is_jafka_path(DATA)


def test_open_data_dir_model():
    data = sm.open_metaq(DATA)
    assert data.kind == "data-dir"
    assert [p.name for p in data.partitions] == ["meta-test-2", "trade-0", "trade-1"]
    trade = data.partitions[1]
    assert [s.name for s in trade.archives] == ["00000000000000000000.meta.zip", "00000000000000000780.meta.arc"]
    zipped, arc = trade.archives
    assert zipped.archive == "zip" and zipped.size == 780 and zipped.file_size < zipped.size
    assert arc.archive == "arc" and arc.size == arc.file_size == 822
    assert trade.segments[0].start_offset == 780 + 822
    assert [s.start_offset for s in trade.all_segments()] == [0, 780, 1602, 2382, 3162]
    assert trade.segment_for(800) is arc and trade.segment_for(800, archives=False) is None
    assert data.partitions[0].segments[0].start_offset == 2**31


def test_loader_rules_for_directories(tmp_path):
    for name in ("ok-0", "backup", "transactions", "t-x", "t-01"):
        (tmp_path / name).mkdir()
    (tmp_path / "ok-0" / segnames.metaq_file_name(0)).write_bytes(_segment(_messages(2)))
    (tmp_path / "ok-0" / "abc.meta").write_bytes(b"")
    (tmp_path / "ok-0" / "x.meta.zip").write_bytes(b"")
    (tmp_path / "server.ini").write_text("[system]")
    data = sm.open_metaq(tmp_path)
    assert [p.name for p in data.partitions] == ["ok-0"]
    assert sorted(p.name for p in data.ignored_dirs) == ["backup", "transactions"]
    bad = dict((p.name, reason) for p, reason in data.bad_dirs)
    assert set(bad) == {"t-x", "t-01"} and "t-1" in bad["t-01"]
    assert [p.name for p in data.unexpected] == ["server.ini"]
    part = data.partitions[0]
    assert [p.name for p in part.bad_names] == ["abc.meta"] and [p.name for p in part.unexpected] == ["x.meta.zip"]


def test_not_a_store(tmp_path):
    (tmp_path / "transactions").mkdir()
    with pytest.raises(StoreLayoutError):
        sm.open_metaq(tmp_path)


# --- zip archives ---------------------------------------------------------------------------------------


def test_zip_entry_reads_like_the_segment_in_any_order(tmp_path):
    segment = _segment(_messages(300))
    path = tmp_path / "00000000000000000000.meta.zip"
    path.write_bytes(mq.encode_zip_archive("00000000000000000000.meta", segment))
    with ZipEntryReader(path, "00000000000000000000.meta") as z:
        assert z.size == len(segment) and z.entries == ["00000000000000000000.meta"]
        assert z.pread(100, 50) == segment[100:150]
        assert z.pread(5000, 10) == segment[5000:5010]  # forward, dropping the window
        assert z.pread(10, 10) == segment[10:20]  # backwards: inflated again from the start
        assert z.pread(len(segment) - 5, 100) == segment[-5:]
        z.verify()


def test_zip_walk_equals_file_walk(tmp_path):
    segment = _segment(_messages(200))
    zpath = tmp_path / "00000000000000000000.meta.zip"
    zpath.write_bytes(mq.encode_zip_archive("00000000000000000000.meta", segment))
    fpath = tmp_path / "00000000000000000000.meta.arc"
    fpath.write_bytes(segment)
    data = sm.open_metaq(tmp_path)
    results = []
    for seg in data.partitions[0].archives:
        with sm.open_segment(seg) as reader:
            walk = SegmentWalk(reader, sm.FRAMING, chunk=333)
            results.append(([(p, m) for p, m in walk], walk.end))
    assert results[0] == results[1] and len(results[0][0]) == 200


def test_zip_crc_mismatch_is_a_checksum_error(tmp_path):
    segment = _segment(_messages(5))
    raw = bytearray(_zip([("00000000000000000000.meta", segment)], zipfile.ZIP_STORED))
    at = raw.index(segment) + 9  # an id byte: not covered by the message checksum
    raw[at] ^= 0xFF
    path = tmp_path / "00000000000000000000.meta.zip"
    path.write_bytes(bytes(raw))
    with ZipEntryReader(path) as z:
        z.pread(0, 20)
        with pytest.raises(ChecksumError) as err:
            z.verify()
    assert str(path) in str(err.value) and "CRC" in str(err.value)


def test_zip_structure_errors(tmp_path):
    bad = tmp_path / "00000000000000000000.meta.zip"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(CorruptDataError):
        ZipEntryReader(bad)
    empty = tmp_path / "00000000000000000001.meta.zip"
    empty.write_bytes(_zip([]))
    with pytest.raises(CorruptDataError, match="one entry"):
        ZipEntryReader(empty)
    lzma = tmp_path / "00000000000000000002.meta.zip"
    lzma.write_bytes(_zip([("00000000000000000002.meta", b"x")], zipfile.ZIP_LZMA))
    with pytest.raises(UnsupportedFormatError):
        ZipEntryReader(lzma)
    two = tmp_path / "00000000000000000003.meta.zip"
    two.write_bytes(_zip([("other.txt", b"a"), ("00000000000000000003.meta", b"b")]))
    with ZipEntryReader(two, "00000000000000000003.meta") as z:
        assert z.entries == ["other.txt", "00000000000000000003.meta"] and z.entry_name == "00000000000000000003.meta"
        assert z.pread(0, 10) == b"b"


def test_zip_structure_errors_say_where_and_what_in_plain_words(tmp_path):
    good = _zip([("00000000000000000000.meta", _segment(_messages(3)))])
    end = good.rindex(b"PK\x05\x06")
    directory = int.from_bytes(good[end + 16 : end + 20], "little")
    bad_directory = bytearray(good)
    bad_directory[directory] = ord("Q")
    cases = [
        (bytes(100), 0, "found none; its first bytes are 00 00 00 00 00 00 00 00 (no zip signature"),
        (good[:-30], len(good) - 30 - 22, "(a local file header): the archive is cut short or overwritten at its end"),
        (bytes(bad_directory), directory, f"expected a central directory header (PK\\x01\\x02) at position {directory}, where the end record at {end} puts it, found bytes 51 4b 01 02"),
        (b"PK", 0, "a 2-byte file"),
    ]
    for i, (raw, position, text) in enumerate(cases):
        path = tmp_path / segnames.metaq_file_name(i, "zip")
        path.write_bytes(raw)
        with pytest.raises(CorruptDataError) as err:
            ZipEntryReader(path)
        assert err.value.position == position and text in str(err.value), str(err.value)
        assert "BadZipFile" not in str(err.value) and str(err.value).startswith(f"{path}:{position}: not a readable zip archive")
        with pytest.raises(CorruptDataError) as err:
            mq.decode_zip_archive(raw)
        assert err.value.position == position and text in str(err.value)


def test_truncated_deflate_stream(tmp_path):
    segment = _segment(_messages(400))
    raw = mq.encode_zip_archive("00000000000000000000.meta", segment)
    path = tmp_path / "00000000000000000000.meta.zip"
    data_start = raw.index(b"00000000000000000000.meta") + len("00000000000000000000.meta")
    broken = bytearray(raw)
    broken[data_start + 40 : data_start + 200] = bytes(160)
    path.write_bytes(bytes(broken))
    with ZipEntryReader(path) as z:
        with pytest.raises(CorruptDataError):
            z.pread(0, len(segment))
            z.verify()


# --- writer ----------------------------------------------------------------------------------------------


def test_writer_rolls_at_the_limit_and_archives_like_the_delete_policy(tmp_path):
    w = sm.MetaqStoreWriter(tmp_path / "t-0", max_segment_size=50)
    assert w.append(mq.Message(10000, b"hello")) == 0  # 25 bytes
    assert w.append(mq.Message(10001, b"hello")) == 25  # 50 >= 50: roll
    assert w.start == 50 and w.append(mq.Message(1, b"123456789")) == 50
    assert (tmp_path / "t-0" / segnames.metaq_file_name(0)).read_bytes()[:25] == bytes.fromhex(
        "000000053610a6860000000000002710000000006865" "6c6c6f"
    )
    with pytest.raises(ValueError):
        w.archive(w.start, compress=False)
    zipped = w.archive(0, compress=True)
    assert zipped.name == "00000000000000000000.meta.zip" and not (tmp_path / "t-0" / segnames.metaq_file_name(0)).exists()
    with zipfile.ZipFile(zipped) as z:
        assert z.namelist() == ["00000000000000000000.meta"]


@settings(max_examples=40)
@given(
    payloads=st.lists(st.tuples(st.binary(max_size=70), st.none() | st.text(max_size=8)), min_size=1, max_size=20),
    chunk=st.integers(min_value=8, max_value=300),
    tail=st.sampled_from([b"", bytes(7), bytes(45), b"\x00\x00\x00\x40" + bytes(16)]),
)
def test_walk_in_small_chunks_equals_one_read(tmp_path_factory, payloads, chunk, tail):
    d = tmp_path_factory.mktemp("walk")
    data = _segment(mq.make_message(i + 1, p, a) for i, (p, a) in enumerate(payloads)) + tail
    path = d / segnames.metaq_file_name(0)
    path.write_bytes(data)
    (seg,) = sm.open_metaq(path).partitions[0].segments
    with sm.open_segment(seg) as reader:
        walk = SegmentWalk(reader, sm.FRAMING, chunk=chunk)
        got = [(p, m) for p, m in walk]
    whole = mq.MessageWalker(data)
    assert got == list(whole)
    assert (walk.end.kind, walk.end.position) == (whole.end.kind, whole.end.position)
