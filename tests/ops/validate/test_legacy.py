"""validate for Jafka and MetaQ: one damage scenario per finding code, each asserting the exact
file, byte position and length of its finding; then recovery semantics, resync and parallel runs.

Stores are built with mqtool's encoders in ``tmp_path``: a data dir with partition ``t-0``
whose segments hold 4 messages each.  Jafka messages with a 20-byte payload are 30 bytes long;
MetaQ messages with a 10-byte payload and no attribute are 30 bytes long too.
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.findings.codes_legacy import CODES
from mqtool.findings import Severity
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.legacy import validate_jafka, validate_metaq
from mqtool.store.model.legacy import SegmentTask
from mqtool.store.model.legacy import read_segment as validate_segment
from mqtool.formats import segment_names as segnames
from tests.conftest import FIXTURES

OPTIONS = ValidateOptions()
J = 30  # bytes of one test message (both layouts)


# --- builders ---------------------------------------------------------------------------------------


def jmsg(i: int = 0, **kw) -> bytes:
    return jf.encode_message(jf.Message(f"jafka message {i:05d}".encode()[:20].ljust(20, b"."), **kw))


def mmsg(i: int = 0, attribute=None, payload=None, flag=0) -> bytes:
    return mq.encode_message(mq.make_message(1000 + i, payload if payload is not None else f"metaq {i:04d}".encode()[:10].ljust(10, b"."), attribute, flag))


def jseg(n: int = 4, first: int = 0) -> bytes:
    return b"".join(jmsg(first + i) for i in range(n))


def mseg(n: int = 4, first: int = 0) -> bytes:
    return b"".join(mmsg(first + i) for i in range(n))


class Store:
    """A data dir with one partition ``t-0`` (segments named by their start offsets)."""

    def __init__(self, root: Path, layout: str, segments: list[bytes], *, marker: bool = True) -> None:
        self.root = root
        self.layout = layout
        self.part = root / "t-0"
        self.part.mkdir(parents=True)
        self.paths: list[Path] = []
        start = 0
        for data in segments:
            self.paths.append(self.write(start, data))
            start += len(data)
        self.end = start
        if layout == "jafka" and marker:
            (root / jf.CLEAN_SHUTDOWN_FILE).touch()

    def name(self, start: int, archive: str | None = None) -> str:
        return segnames.jafka_file_name(start) if self.layout == "jafka" else segnames.metaq_file_name(start, archive)

    def write(self, start: int, data: bytes, archive: str | None = None) -> Path:
        path = self.part / self.name(start, archive)
        path.write_bytes(data)
        return path

    def validate(self, path: Path | None = None, **kw):
        fn = validate_jafka if self.layout == "jafka" else validate_metaq
        return fn(path or self.root, ValidateOptions(**kw) if kw else OPTIONS)


def jstore(tmp_path, segments=None, **kw) -> Store:
    return Store(tmp_path / "jafka", "jafka", segments if segments is not None else [jseg(), jseg(4, 4)], **kw)


def mstore(tmp_path, segments=None) -> Store:
    return Store(tmp_path / "metaq", "metaq", segments if segments is not None else [mseg(), mseg(4, 4)])


def flip(data: bytes, at: int, xor: int = 0xFF) -> bytes:
    b = bytearray(data)
    b[at] ^= xor
    return bytes(b)


def put(data: bytes, at: int, raw: bytes) -> bytes:
    return data[:at] + raw + data[at + len(raw) :]


def zip_bytes(entries, method=zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data, method)
    return out.getvalue()


# --- scenarios: one per code ------------------------------------------------------------------------------


@dataclass
class Scenario:
    code: str
    build: Callable[[Path], tuple[Store, Path, int | None, int | None]]  # store, file, position, length
    text: str = ""  # a fragment of the finding's message


def _j_dir_name(tmp):
    s = jstore(tmp)
    (s.root / "lost+found").mkdir()
    return s, s.root / "lost+found", None, None


def _j_file_name(tmp):
    s = jstore(tmp)
    bad = s.part / "segment.jafka"
    bad.write_bytes(b"")
    return s, bad, None, None


def _j_unexpected(tmp):
    s = jstore(tmp)
    f = s.part / "00000000000000000000.jafka.bak"
    f.write_bytes(b"x")
    return s, f, None, None


def _j_zero_length(tmp):
    s = jstore(tmp, [jseg()])
    empty = s.write(s.end, b"")  # a zero-length segment before the last: the next one cannot join it
    s.write(s.end + 1, jseg(4, 4))
    return s, empty, 0, None


def _j_gap(tmp):
    s = jstore(tmp, [jseg()])
    s.write(s.end + 15, jseg(4, 4))
    return s, s.part / s.name(s.end + 15), None, 15


def _j_overlap(tmp):
    s = jstore(tmp, [jseg()])
    s.write(s.end - 30, jseg(4, 4))
    return s, s.part / s.name(s.end - 30), None, 30


def _j_no_segments(tmp):
    s = jstore(tmp)
    (s.root / "t-1").mkdir()
    return s, s.root / "t-1", None, None


def _j_unclean(tmp):
    s = jstore(tmp, marker=False)
    return s, s.root / jf.CLEAN_SHUTDOWN_FILE, None, None


def _j_size(tmp):
    first = put(jseg(), J, (3).to_bytes(4, "big"))  # LENGTH 3 < 6 in message 1 of segment 0
    s = jstore(tmp, [first, jseg(4, 4)])
    return s, s.paths[0], J, None


def _j_magic(tmp):
    s = jstore(tmp, [flip(jseg(), J + 4, 0x07), jseg(4, 4)])  # magic 1 -> 6
    return s, s.paths[0], J + 4, None


def _j_crc(tmp):
    s = jstore(tmp, [flip(jseg(), J + 15), jseg(4, 4)])
    return s, s.paths[0], J + 6, None


def _j_codec(tmp):
    snappy = jf.encode_message(jf.Message(b"x" * 20, attributes=jf.CODEC_SNAPPY))
    s = jstore(tmp, [jmsg(0) + snappy + jseg(2, 2), jseg(4, 4)])
    return s, s.paths[0], J + 5, None


def _j_attribute(tmp):
    s = jstore(tmp, [jmsg(0) + jf.encode_message(jf.Message(b"y" * 20, attributes=0x04)) + jseg(2, 2), jseg(4, 4)])
    return s, s.paths[0], J + 5, None


def _j_wrapper(tmp):
    bogus = jf.encode_message(jf.Message(b"not a gzip stream", attributes=jf.CODEC_GZIP))
    s = jstore(tmp, [jmsg(0) + bogus + jseg(2, 2), jseg(4, 4)])
    return s, s.paths[0], J, None


def _j_torn(tmp):
    s = jstore(tmp, [jseg(), jseg(4, 4) + jmsg(9)[:12]])
    return s, s.paths[1], 4 * J, 12


def _j_zero_tail(tmp):
    s = jstore(tmp, [jseg(), jseg(4, 4) + bytes(16)])
    return s, s.paths[1], 4 * J, 16


def _j_garbage(tmp):
    s = jstore(tmp, [jseg(), jseg(4, 4) + bytes(8) + b"\xff" * 5])
    return s, s.paths[1], 4 * J + 8, 5


def _j_segment_tail(tmp):
    s = jstore(tmp, [jseg() + jmsg(9)[:12], jseg(4, 4)])
    return s, s.paths[0], 4 * J, 12


def _j_unreadable_region(tmp):
    s = jstore(tmp, [jseg(2) + b"\xab" * 7 + jseg(2, 2), jseg(4, 4)])
    return s, s.paths[0], 2 * J, 7


def _j_recovery_loss(tmp):
    s = jstore(tmp, [jseg(), flip(jseg(4, 4), J + 15)], marker=False)
    return s, s.paths[1], J, 3 * J


def _j_recovery_crash(tmp):
    s = jstore(tmp, [jseg(), jseg(2, 4) + jf.encode_message(jf.Message(b"z" * 20, magic=0)) + jseg(1, 6)], marker=False)
    return s, s.paths[1], 2 * J + 4, None


def _j_unrecovered(tmp):
    s = jstore(tmp, [jseg(), jseg(4, 4) + jmsg(9)[:12]])
    return s, s.paths[1], 4 * J, 12


def _j_valid_end(tmp):
    s = jstore(tmp)
    return s, s.paths[1], 4 * J, None


def _j_unreadable(tmp):
    s = jstore(tmp)
    fifo = s.part / s.name(999)
    os.mkfifo(fifo)  # never opened: a FIFO would block a reader
    return s, fifo, None, None


def _j_link(tmp):
    s = jstore(tmp)
    outside = tmp / "outside.jafka"
    outside.write_bytes(jseg())
    link = s.part / s.name(s.end)
    link.symlink_to(outside)
    return s, link, None, None


def _m_dir_name(tmp):
    s = mstore(tmp)
    (s.root / "t-01").mkdir()
    return s, s.root / "t-01", None, None


def _m_dir_ignored(tmp):
    s = mstore(tmp)
    (s.root / "backup").mkdir()
    (s.root / "transactions").mkdir()  # the journal: no finding
    return s, s.root / "backup", None, None


def _m_file_name(tmp):
    s = mstore(tmp)
    bad = s.part / "old.meta"
    bad.write_bytes(b"")
    return s, bad, None, None


def _m_unexpected(tmp):
    s = mstore(tmp)
    (s.root / "server.ini").write_text("[system]\n")
    return s, s.root / "server.ini", None, None


def _m_zero_length(tmp):
    s = mstore(tmp, [mseg()])
    arc = s.write(s.end, b"", "arc")  # an archive after the only live segment
    return s, arc, 0, None


def _m_gap(tmp):
    s = mstore(tmp, [mseg()])
    s.write(s.end + 20, mseg(4, 4))
    return s, s.part / s.name(s.end + 20), None, 20


def _m_overlap(tmp):
    s = mstore(tmp, [mseg()])
    s.write(s.end - 5, mseg(4, 4))
    return s, s.part / s.name(s.end - 5), None, 5


def _m_archive_gap(tmp):
    s = mstore(tmp, [mseg(4, 4)])
    s.paths[0].rename(s.part / s.name(4 * J + 7))
    s.write(0, zip_bytes([(s.name(0), mseg())]), "zip")
    return s, s.part / s.name(4 * J + 7), None, 7


def _m_archive_duplicate(tmp):
    s = mstore(tmp)
    arc = s.write(0, zip_bytes([(s.name(0), mseg())]), "zip")
    return s, arc, None, None


def _m_zip(tmp):
    s = mstore(tmp, [mseg(4, 4)])
    s.paths[0].rename(s.part / s.name(4 * J))
    content = b"PK\x03\x04 this is not a zip archive"
    arc = s.write(0, content, "zip")
    return s, arc, len(content) - 22, None  # where the end-of-central-directory record should be


def _m_zip_name(tmp):
    s = mstore(tmp, [mseg(4, 4)])
    s.paths[0].rename(s.part / s.name(4 * J))
    arc = s.write(0, zip_bytes([("segment.meta", mseg())]), "zip")
    return s, arc, None, None


def _m_zip_crc(tmp):
    s = mstore(tmp, [mseg(4, 4)])
    s.paths[0].rename(s.part / s.name(4 * J))
    raw = zip_bytes([(s.name(0), mseg())], zipfile.ZIP_STORED)
    arc = s.write(0, flip(raw, raw.index(mseg()) + 9), "zip")  # an id byte: no message checksum covers it
    return s, arc, None, None


def _m_no_segments(tmp):
    s = mstore(tmp)
    other = s.root / "t-1"
    other.mkdir()
    (other / segnames.metaq_file_name(0, "arc")).write_bytes(mseg())
    return s, other, None, None


def _m_size(tmp):
    s = mstore(tmp, [put(mseg(), J, (-5).to_bytes(4, "big", signed=True)), mseg(4, 4)])
    return s, s.paths[0], J, None


def _m_crc(tmp):
    s = mstore(tmp, [flip(mseg(), J + 25), mseg(4, 4)])
    return s, s.paths[0], J + 4, None


def _m_attribute(tmp):
    bad = mq.encode_message(mq.Message(2000, b"\x00\x00\x10\x00abc", mq.FLAG_HAS_ATTRIBUTE))
    s = mstore(tmp, [mmsg(0) + bad + mseg(2, 2), mseg(4, 4)])
    return s, s.paths[0], J + 20, None


def _m_attribute_utf8(tmp):
    s = mstore(tmp, [mmsg(0) + mmsg(1, attribute=b"k=\xff") + mseg(2, 2), mseg(4, 4)])
    return s, s.paths[0], J + 20 + 4 + 2, None


def _m_payload_size(tmp):
    s = mstore(tmp, [mmsg(0) + mmsg(1, payload=b"p" * (mq.MAX_READ_BUFFER_SIZE + 1)), mseg(4, 4)])
    return s, s.paths[0], J, None


def _m_torn(tmp):
    header = mq.encode_message(mq.Message(77, b"d" * 100))[:50]  # msgLen 100, only 30 data bytes
    s = mstore(tmp, [mseg(), mseg(4, 4) + header])
    return s, s.paths[1], 4 * J, 50


def _m_zero_tail(tmp):
    s = mstore(tmp, [mseg(), mseg(4, 4) + bytes(45)])
    return s, s.paths[1], 4 * J, 45


def _m_garbage(tmp):
    s = mstore(tmp, [mseg(), mseg(4, 4) + bytes(20) + b"\xee" * 9])
    return s, s.paths[1], 4 * J + 20, 9


def _m_segment_tail(tmp):
    s = mstore(tmp, [mseg() + bytes(20), mseg(4, 4)])
    return s, s.paths[0], 4 * J, 20


def _m_unreadable_region(tmp):
    s = mstore(tmp, [mseg(2) + b"\xff" * 11 + mseg(2, 2), mseg(4, 4)])
    return s, s.paths[0], 2 * J, 11


def _m_recovery_loss(tmp):
    s = mstore(tmp, [mseg(), flip(mseg(4, 4), J + 25)])
    return s, s.paths[1], J, 3 * J


def _m_valid_end(tmp):
    s = mstore(tmp)
    return s, s.paths[1], 4 * J, None


def _m_unreadable(tmp):
    s = mstore(tmp)
    fifo = s.part / s.name(0, "zip")
    os.mkfifo(fifo)
    return s, fifo, None, None


def _m_link(tmp):
    s = mstore(tmp)
    elsewhere = tmp / "elsewhere-0"
    elsewhere.mkdir()
    (elsewhere / s.name(0)).write_bytes(mseg())
    link = s.root / "t-1"
    link.symlink_to(elsewhere)
    return s, link, None, None


SCENARIOS = [
    Scenario("JAFKA-DIR-NAME", _j_dir_name, "error topic directory"),
    Scenario("JAFKA-FILE-NAME", _j_file_name, "expected <digits>.jafka"),
    Scenario("JAFKA-UNEXPECTED-FILE", _j_unexpected, "ignores"),
    Scenario("JAFKA-ZERO-LENGTH", _j_zero_length, "zero-length"),
    Scenario("JAFKA-SEGMENT-GAP", _j_gap, "offsets 120..134 are missing"),
    Scenario("JAFKA-SEGMENT-OVERLAP", _j_overlap, "overlaps the previous segment by 30 bytes"),
    Scenario("JAFKA-NO-SEGMENTS", _j_no_segments, "00000000000000000000.jafka"),
    Scenario("JAFKA-UNCLEAN-SHUTDOWN", _j_unclean, "did not stop cleanly"),
    Scenario("JAFKA-SIZE", _j_size, "expected LENGTH >= 6 (the magic-1 header), found 3"),
    Scenario("JAFKA-MAGIC", _j_magic, "expected magic 1, found 6"),
    Scenario("JAFKA-CRC", _j_crc, "expected CRC"),
    Scenario("JAFKA-CODEC", _j_codec, "snappy"),
    Scenario("JAFKA-ATTRIBUTE", _j_attribute, "found attribute 0x04"),
    Scenario("JAFKA-WRAPPER", _j_wrapper, "gzip"),
    Scenario("JAFKA-TORN-TAIL", _j_torn, "only 12 of its bytes were written"),
    Scenario("JAFKA-ZERO-TAIL", _j_zero_tail, "16 zero bytes"),
    Scenario("JAFKA-GARBAGE", _j_garbage, "found 5 bytes of other data"),
    Scenario("JAFKA-SEGMENT-TAIL", _j_segment_tail, "partial message: 12 of its 30 bytes"),
    Scenario("JAFKA-UNREADABLE-REGION", _j_unreadable_region, "7 bytes between the broken message"),
    Scenario("JAFKA-RECOVERY-LOSS", _j_recovery_loss, "truncates the 90 bytes after it, which hold 2 valid message(s)"),
    Scenario("JAFKA-RECOVERY-CRASH", _j_recovery_crash, "UnknownMagicByteException"),
    Scenario("JAFKA-UNRECOVERED", _j_unrecovered, "skips recovery"),
    Scenario("JAFKA-VALID-END", _j_valid_end, "valid data ends at offset 240"),
    Scenario("JAFKA-UNREADABLE", _j_unreadable, "found a FIFO: not read"),
    Scenario("JAFKA-FILE-LINK", _j_link, "symbolic link to"),
    Scenario("METAQ-DIR-NAME", _m_dir_name, "opens t-1 instead"),
    Scenario("METAQ-DIR-IGNORED", _m_dir_ignored, "ignores this directory"),
    Scenario("METAQ-FILE-NAME", _m_file_name, "expected <digits>.meta"),
    Scenario("METAQ-UNEXPECTED-FILE", _m_unexpected, "skips it"),
    Scenario("METAQ-ZERO-LENGTH", _m_zero_length, "zero-length archive"),
    Scenario("METAQ-SEGMENT-GAP", _m_gap, "offsets 120..139 are missing"),
    Scenario("METAQ-SEGMENT-OVERLAP", _m_overlap, "overlaps the previous segment by 5 bytes"),
    Scenario("METAQ-ARCHIVE-GAP", _m_archive_gap, "offsets 120..126 are in no file"),
    Scenario("METAQ-ARCHIVE-DUPLICATE", _m_archive_duplicate, "still live"),
    Scenario("METAQ-ZIP", _m_zip, "expected an end-of-central-directory record"),
    Scenario("METAQ-ZIP-NAME", _m_zip_name, "found 'segment.meta'"),
    Scenario("METAQ-ZIP-CRC", _m_zip_crc, "CRC-32"),
    Scenario("METAQ-NO-SEGMENTS", _m_no_segments, "archives reach offset 120"),
    Scenario("METAQ-UNREADABLE", _m_unreadable, "found a FIFO: not read"),
    Scenario("METAQ-FILE-LINK", _m_link, "not followed"),
    Scenario("METAQ-SIZE", _m_size, "expected msgLen >= 0, found -5"),
    Scenario("METAQ-CRC", _m_crc, "expected checksum"),
    Scenario("METAQ-ATTRIBUTE", _m_attribute, "consumers throw"),
    Scenario("METAQ-ATTRIBUTE-UTF8", _m_attribute_utf8, "found byte 0xFF"),
    Scenario("METAQ-PAYLOAD-SIZE", _m_payload_size, f"found {mq.MAX_READ_BUFFER_SIZE + 1}"),
    Scenario("METAQ-TORN-TAIL", _m_torn, "a 120-byte message starts at offset 240 but only 50"),
    Scenario("METAQ-ZERO-TAIL", _m_zero_tail, "keeps 2 empty message(s) (msgLen 0, id 0) that consumers will receive and truncates the last 5 bytes"),
    Scenario("METAQ-GARBAGE", _m_garbage, "found 9 bytes of other data"),
    Scenario("METAQ-SEGMENT-TAIL", _m_segment_tail, "ends in 20 zero bytes"),
    Scenario("METAQ-UNREADABLE-REGION", _m_unreadable_region, "11 bytes between the broken message"),
    Scenario("METAQ-RECOVERY-LOSS", _m_recovery_loss, "truncates the 90 bytes after it, which hold 2 valid message(s)"),
    Scenario("METAQ-VALID-END", _m_valid_end, "valid data ends at offset 240"),
]


def test_scenarios_cover_every_code():
    assert sorted(s.code for s in SCENARIOS) == sorted(CODES)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.code)
def test_damage_is_found_at_its_exact_place(tmp_path, scenario):
    store, path, position, length = scenario.build(tmp_path)
    findings = store.validate().findings
    hits = [f for f in findings if f.code == scenario.code]
    assert hits, f"{scenario.code} not reported; got {[(f.code, f.path, f.position) for f in findings]}"
    assert any(f.path == str(path) and f.position == position and f.length == length for f in hits), [
        (f.path, f.position, f.length) for f in hits
    ]
    hit = next(f for f in hits if f.path == str(path))
    assert scenario.text in hit.message, hit.message
    assert hit.level is CODES[scenario.code].severity


# --- clean stores ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,fn", [("jafka-data", validate_jafka), ("metaq-data", validate_metaq)])
def test_fixtures_are_clean(name, fn):
    report = fn(FIXTURES / name, OPTIONS)
    assert not report.failed and report.counts["warning"] == 0
    assert {f.code.split("-", 1)[1] for f in report.findings} == {"VALID-END"}
    assert all(s.status == "ok" for s in report.files)


def test_fixture_facts():
    report = validate_jafka(FIXTURES / "jafka-data", OPTIONS)
    facts = {p["directory"]: p for p in report.facts["partitions"]}
    assert report.facts["clean_shutdown_marker"] is True
    assert facts["orders-0"]["inner_messages"] == 4 and facts["user-events-0"]["inner_messages"] == 3
    assert facts["orders-1"]["log_start_offset"] == 2**32 + 1000
    assert facts["orders-1"]["log_end_offset"] == facts["orders-1"]["recovery_end_offset"]
    report = validate_metaq(FIXTURES / "metaq-data", OPTIONS)
    facts = {p["directory"]: p for p in report.facts["partitions"]}
    assert facts["trade-0"]["archives"] == 2 and facts["trade-0"]["messages"] == 40
    assert len(report.files) == 8  # the archives are read too


# --- recovery semantics ------------------------------------------------------------------------------------


def _by_code(report):
    out: dict[str, list] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f)
    return out


def test_jafka_torn_tail_is_only_a_warning_while_recovery_will_run(tmp_path):
    s = jstore(tmp_path, [jseg(), jseg(4, 4) + jmsg(9)[:12]], marker=False)
    report = s.validate()
    codes = _by_code(report)
    assert set(codes) == {"JAFKA-TORN-TAIL", "JAFKA-VALID-END", "JAFKA-UNCLEAN-SHUTDOWN"}
    assert not report.failed and s.validate(fail_on=Severity.warning).failed
    (fact,) = report.facts["partitions"]
    assert fact["recovery_truncates"] == 12 and fact["log_end_offset"] == 240


def test_jafka_damage_in_a_segment_before_the_last_is_never_a_torn_tail(tmp_path):
    s = jstore(tmp_path, [jseg() + bytes(9), jseg(4, 4)])  # zeros in an immutable segment
    report = s.validate()
    (f,) = [f for f in report.findings if f.code == "JAFKA-SEGMENT-TAIL"]
    assert f.level is Severity.error and f.position == 120 and f.length == 9
    assert "JAFKA-ZERO-TAIL" not in _by_code(report)


def test_jafka_magic_zero_message_is_read_but_reported(tmp_path):
    v0 = jf.encode_message(jf.Message(b"kafka 0.7", magic=0))
    s = jstore(tmp_path, [jmsg(0) + v0 + jmsg(1), jseg(4, 4)])
    codes = _by_code(s.validate())
    (f,) = codes["JAFKA-MAGIC"]
    assert f.position == J + 4 and "Kafka 0.7" in f.message
    assert "JAFKA-UNREADABLE-REGION" not in codes and "JAFKA-RECOVERY-CRASH" not in codes


def _set_byte(path: Path, at: int, value: int) -> None:
    b = bytearray(path.read_bytes())
    b[at] = value
    path.write_bytes(bytes(b))


@pytest.mark.parametrize(
    "layout,fixture,segment,at,broken,next_valid",
    [
        ("jafka", "jafka-data", "orders-0/00000000000000000771.jafka", 61, 59, 208),
        ("metaq", "metaq-data", "trade-1/00000000000000000000.meta", 139, 138, 207),
    ],
)
def test_a_damaged_length_in_an_earlier_segment_is_damage_not_a_tail(tmp_path, layout, fixture, segment, at, broken, next_valid):
    """A length byte set to 0x7f in a segment before the last: its LENGTH runs past the end of the
    file, but the bytes it claims hold valid messages.  That is a size error, an unreadable region
    up to the next valid message and a resync, not a "partial message" tail."""
    root = tmp_path / fixture
    import shutil

    shutil.copytree(FIXTURES / fixture, root)
    path = root / segment
    clean = (validate_jafka if layout == "jafka" else validate_metaq)(FIXTURES / fixture, OPTIONS)
    before = next(f.records for f in clean.files if f.path.endswith(segment))
    _set_byte(path, at, 0x7F)
    report = (validate_jafka if layout == "jafka" else validate_metaq)(root, OPTIONS)
    prefix = layout.upper()
    mine = [f for f in report.findings if f.path == str(path)]
    assert [f.code for f in mine] == [f"{prefix}-SIZE", f"{prefix}-UNREADABLE-REGION"], [(f.code, f.message) for f in mine]
    size, region = mine
    assert size.position == broken and f"a valid message starts at position {next_valid}" in size.message
    assert "runs" in size.message and "past the end of a segment before the last one" in size.message
    assert (region.position, region.length) == (broken, next_valid - broken)
    # every message but the broken one is still read
    assert next(f.records for f in report.files if f.path == str(path)) == before - 1


def test_a_damaged_length_in_the_last_segment_is_no_torn_tail(tmp_path):
    """In the last segment too: valid messages after the length make it damage; recovery stops
    there and loses them."""
    last = put(jseg(4, 4), J + 2, b"\x7f")  # second message: LENGTH 0x00007f1a runs past the end
    s = jstore(tmp_path, [jseg(), last], marker=False)
    codes = _by_code(s.validate())
    assert "JAFKA-TORN-TAIL" not in codes
    assert [f.position for f in codes["JAFKA-SIZE"]] == [J] and [(f.position, f.length) for f in codes["JAFKA-UNREADABLE-REGION"]] == [(J, J)]
    (loss,) = codes["JAFKA-RECOVERY-LOSS"]
    assert loss.position == J and "2 valid message(s)" in loss.message


def test_a_torn_tail_of_the_last_segment_stays_a_tail(tmp_path):
    s = mstore(tmp_path, [mseg(), mseg(4, 4) + mmsg(9)[:25] + bytes(10)])
    codes = _by_code(s.validate())
    assert set(codes) == {"METAQ-TORN-TAIL", "METAQ-VALID-END"}


def test_jafka_magic_zero_on_a_jafka_message_is_a_magic_error(tmp_path):
    """Upstream Jafka reads the magic first and throws on 0 (UnknownMagicByteException): a magic
    byte set to 0 is JAFKA-MAGIC, not a CRC mismatch of a would-be Kafka 0.7 message."""
    s = jstore(tmp_path, [jseg(), put(jseg(4, 4), J + 4, b"\x00")])
    codes = _by_code(s.validate())
    assert "JAFKA-CRC" not in codes
    (f,) = codes["JAFKA-MAGIC"]
    assert f.position == J + 4 and "expected magic 1, found 0" in f.message and "CRC does not match either" in f.message
    assert s.validate().files[1].records == 3  # the framing holds: the messages after it are read


def test_jafka_magic_message_is_the_one_dump_gives(tmp_path):
    from mqtool.ops.dump.legacy import JafkaDump
    from mqtool.store.jafka import open_jafka

    for magic in (5, 0):
        s = jstore(tmp_path / str(magic), [jseg(), put(jseg(4, 4), J + 4, bytes([magic]))])
        (f,) = _by_code(s.validate())["JAFKA-MAGIC"]
        dump = JafkaDump(open_jafka(s.root))
        list(dump)
        # dump consumes the store model's reading: the finding it states is validate's own
        assert not dump.problems
        (problem,) = [x for x in dump.findings if x.code == "JAFKA-MAGIC"]
        assert f"{problem.path}:{problem.position}: {problem.message}" == f"{f.path}:{f.position}: {f.message}"


def test_jafka_crc_damage_keeps_the_framing(tmp_path):
    s = jstore(tmp_path, [flip(flip(jseg(), 15), 2 * J + 15), jseg(4, 4)])
    report = s.validate()
    assert [f.position for f in report.findings if f.code == "JAFKA-CRC"] == [6, 2 * J + 6]
    assert report.files[0].records == 2 and "JAFKA-UNREADABLE-REGION" not in _by_code(report)


def test_jafka_inner_crc_mismatch(tmp_path):
    inner = [jf.Message(b"inner one"), jf.Message(b"inner two")]
    raw = jf.encode_message(jf.compress_messages(inner))
    wrapper = jf.decode_message(raw)
    import gzip

    damaged_set = bytearray(gzip.decompress(wrapper.payload))
    damaged_set[-1] ^= 0x01
    bad = jf.encode_message(jf.Message(gzip.compress(bytes(damaged_set), mtime=0), attributes=jf.CODEC_GZIP))
    s = jstore(tmp_path, [jmsg(0) + bad, jseg(4, 4)])
    (f,) = _by_code(s.validate())["JAFKA-WRAPPER"]
    assert f.position == J and "inner message #1" in f.message


def test_jafka_gzip_bomb_is_refused(tmp_path, monkeypatch):
    import gzip

    monkeypatch.setattr(jf, "MAX_INFLATED_SIZE", 4096)
    bomb = jf.encode_message(jf.Message(gzip.compress(bytes(1 << 20), mtime=0), attributes=jf.CODEC_GZIP))
    with pytest.raises(Exception, match="at most 4096"):
        list(jf.iter_wrapper(jf.decode_message(bomb), limit=4096))
    s = jstore(tmp_path, [jmsg(0) + bomb, jseg(4, 4)])
    (f,) = _by_code(s.validate())["JAFKA-WRAPPER"]
    assert "inflates to at most" in f.message


def test_metaq_zero_hole_is_kept_by_recovery(tmp_path):
    s = mstore(tmp_path, [mseg(), mseg(2, 4) + bytes(40) + mseg(2, 6)])
    report = s.validate()
    codes = _by_code(report)
    (region,) = codes["METAQ-UNREADABLE-REGION"]
    assert region.position == 2 * J and region.length == 40 and "reads them as 2 empty messages" in region.message
    assert "METAQ-RECOVERY-LOSS" not in codes
    (fact,) = report.facts["partitions"]
    assert fact["recovery_empty_messages"] == 2 and fact["recovery_truncates"] == 0
    assert fact["log_end_offset"] == 4 * J + 2 * J


def test_metaq_zeros_then_damage_recovery_stops_after_the_empty_messages(tmp_path):
    tail = bytes(40) + flip(mseg(2, 6), 25)
    s = mstore(tmp_path, [mseg(), mseg(2, 4) + tail])
    report = s.validate()
    (fact,) = report.facts["partitions"]
    assert fact["recovery_empty_messages"] == 2
    assert fact["recovery_end_offset"] == 4 * J + 2 * J + 40
    (loss,) = _by_code(report)["METAQ-RECOVERY-LOSS"]
    assert loss.position == 2 * J + 40 and "hold 1 valid message(s)" in loss.message


def test_metaq_damaged_archive_content_is_an_error(tmp_path):
    s = mstore(tmp_path, [mseg(4, 4)])
    s.paths[0].rename(s.part / s.name(4 * J))
    arc = s.write(0, flip(mseg(), 25), "arc")
    report = s.validate()
    codes = _by_code(report)
    (crc,) = codes["METAQ-CRC"]
    assert crc.path == str(arc) and crc.position == 4
    assert "METAQ-RECOVERY-LOSS" not in codes


def test_metaq_zip_content_damage_is_located_in_the_segment(tmp_path):
    s = mstore(tmp_path, [mseg(4, 4)])
    s.paths[0].rename(s.part / s.name(4 * J))
    arc = s.write(0, zip_bytes([(s.name(0), flip(mseg(), J + 25))]), "zip")
    codes = _by_code(s.validate())
    (crc,) = codes["METAQ-CRC"]
    assert crc.path == str(arc) and crc.position == J + 4
    assert "METAQ-ZIP-CRC" not in codes  # the archive itself is intact: it holds damaged data


def test_metaq_zip_crc_still_checks_the_messages(tmp_path):
    s, arc, _, _ = _m_zip_crc(tmp_path)
    report = s.validate()
    summary = next(f for f in report.files if f.path == str(arc))
    assert summary.records == 4 and summary.status == "error"


# --- resync, single files, options ----------------------------------------------------------------------


def test_resync_after_a_long_garbage_region(tmp_path):
    noise = bytes((i * 131 + 7) % 256 for i in range(50_000)).replace(b"\x01", b"\x02")
    s = jstore(tmp_path, [jseg(2) + noise + jseg(2, 2), jseg(4, 4)])
    report = s.validate()
    (region,) = _by_code(report)["JAFKA-UNREADABLE-REGION"]
    assert region.position == 2 * J and region.length == len(noise)
    assert report.files[0].records == 4


def test_resync_finds_nothing(tmp_path):
    s = mstore(tmp_path, [mseg(2) + b"\xff" * 40, mseg(4, 4)])
    report = s.validate()
    (region,) = _by_code(report)["METAQ-UNREADABLE-REGION"]
    assert region.position == 2 * J and region.length == 40 and "no valid message after" in region.message


def test_validate_one_segment_knows_whether_it_is_the_last(tmp_path):
    s = jstore(tmp_path, [jseg() + bytes(9), jseg(4, 4) + bytes(9)])
    first = validate_jafka(s.paths[0], OPTIONS)
    assert [f.code for f in first.findings] == ["JAFKA-SEGMENT-TAIL"] and len(first.files) == 1
    last = validate_jafka(s.paths[1], OPTIONS)
    assert [f.code for f in last.findings] == ["JAFKA-ZERO-TAIL", "JAFKA-UNRECOVERED", "JAFKA-VALID-END"]


def test_parallel_jobs_give_the_same_report(tmp_path):
    s = mstore(tmp_path, [flip(mseg(), 25), mseg(4, 4) + bytes(3), mseg(4, 8) + b"\x01"])
    one = s.validate().to_dict()
    many = s.validate(jobs=3).to_dict()
    one.pop("checks"), many.pop("checks")
    assert one == many


def test_checks_and_max_findings(tmp_path):
    s = jstore(tmp_path, [flip(flip(jseg(), 15), J + 15), jseg(4, 4)], marker=False)
    only_files = s.validate(checks=frozenset({"files"}))
    assert only_files.findings == []
    capped = s.validate(max_findings=1)
    assert len(capped.findings) == 1 and capped.truncated and capped.counts["error"] == 2


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_a_segment_that_vanished_is_unreadable(tmp_path, layout):
    missing = tmp_path / ("00000000000000000000.jafka" if layout == "jafka" else "00000000000000000000.meta")
    res = validate_segment(SegmentTask(layout, str(missing), 0, None, True, True, True))
    (finding,) = res.findings
    assert finding.code == f"{layout.upper()}-UNREADABLE" and finding.path == str(missing) and "No such file" in finding.message


def test_links_are_not_followed_by_dump_either(tmp_path):
    s, link, _, _ = _j_link(tmp_path)
    from mqtool.ops.dump.legacy import JafkaDump
    from mqtool.store.jafka import open_jafka

    rows = list(JafkaDump(open_jafka(s.root)))
    assert rows and all(r.where.segment.path != link for r in rows)
