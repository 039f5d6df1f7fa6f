"""``validate`` on RocketMQ stores finds every kind of damage at its exact place and never reports
a healthy store as broken.

Stores are written by ``StoreWriter`` with small files (4 KiB CommitLog files, 10-unit
ConsumeQueue files, 16-slot / 64-entry IndexFiles) and a fixed clock.  The base store is built
once per module and copied per test; each damage test applies exactly one kind of damage and
checks the finding's code, file, byte position (and length), and that nothing else is reported at
warning or error level unless the test names it as a consequence.

Base store: 60 messages of topic ``T`` alternating between queues 0 and 1, 60-byte bodies,
properties ``KEYS=k<i>`` and ``TAGS=TagA``: three CommitLog files (23, 23 and 14 records, the
first two closed by END_OF_FILE), three ConsumeQueue files per queue, one IndexFile whose entry
``i + 1`` is message ``i``'s key.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import shutil
import struct
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.cli.app import run
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.config import encode_fastjson
from mqtool.formats.rocketmq.hashing import index_key_hash, tags_code
from mqtool.findings import CODES, Finding, Severity
from mqtool.ops.validate import ValidateOptions, ValidationReport
from mqtool.ops.recover.rocketmq import plan_rocketmq
from mqtool.ops.validate.rocketmq import validate_rocketmq
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model.commitlog_walk import FileRecords
from mqtool.store.writer import StoreWriter, WriterConfig, delivery_tags_code
from mqtool.formats import segment_names as segnames
from tests.conftest import FIXTURES, lock_held_elsewhere, real_path

SMALL = WriterConfig(commitlog_file_size=4096, cq_file_size=200, index_hash_slot_num=16, index_num=64, index_tz=dt.timezone.utc)
START_MS = 1_700_000_000_000
BODY_SIZE = 60
TOPIC_AT = cl.body_position(0) + BODY_SIZE  # TOPICLEN of a base-store record
PROPS_AT = TOPIC_AT + 1 + 1 + 2  # first byte of the properties ("KEYS\x01k<i>\x02TAGS\x01TagA\x02")
STORE_TS_AT = cl.BORNHOST_POSITION + 8  # STORETIMESTAMP with an IPv4 born host
ENTRY = 20  # IndexFile entry size
ENTRIES_AT = idxf.INDEX_HEADER_SIZE + 16 * idxf.HASH_SLOT_SIZE  # entry 0 of a 16-slot file


def _clock(start: int = START_MS):
    now = [start]

    def tick() -> int:
        now[0] += 10
        return now[0]

    return tick


def _message(i: int, **kw) -> cl.MessageRecord:
    fields = {"topic": "T", "queue_id": i % 2, "body": bytes([65 + i % 26]) * BODY_SIZE, "properties": {"KEYS": f"k{i}", "TAGS": "TagA"}}
    fields.update(kw)
    return cl.MessageRecord(**fields)


def _write_store(root: Path, messages, config: WriterConfig = SMALL) -> list:
    """Append ``messages`` and shut down cleanly (checkpoint written, no abort file)."""
    with StoreWriter(root, config, clock=_clock()) as writer:
        return [writer.append(m) for m in messages]


@dataclass(frozen=True)
class Rec:
    index: int  # append order
    path: Path  # CommitLog file
    position: int  # position in that file
    size: int
    queue_id: int
    queue_offset: int
    offset: int  # commitlog offset
    record: cl.MessageRecord


@dataclass(frozen=True)
class Store:
    root: Path
    records: tuple[Rec, ...]

    def cl(self, n: int) -> Path:
        """The n-th CommitLog file (by name order)."""
        return sorted((self.root / "commitlog").iterdir())[n]

    def in_file(self, n: int) -> list[Rec]:
        path = self.cl(n)
        return [r for r in self.records if r.path.name == path.name]

    def unit(self, queue_id: int, queue_offset: int) -> tuple[Path, int]:
        """(file, position) of a ConsumeQueue unit of topic T."""
        byte = queue_offset * cqf.CQ_UNIT_SIZE
        base = byte - byte % SMALL.cq_file_size
        return self.root / "consumequeue" / "T" / str(queue_id) / segnames.rocketmq_file_name(base), byte - base

    @property
    def index(self) -> Path:
        (path,) = (self.root / "index").iterdir()
        return path

    def queue_dir(self, queue_id: int) -> Path:
        return self.root / "consumequeue" / "T" / str(queue_id)


def _records(root: Path) -> tuple[Rec, ...]:
    store = rmq.open_store(root)
    out = []
    for seg in store.commitlog:
        if seg.size == 0:
            continue
        with ReadOnlyFile(seg.path) as f:
            for pos, rec in FileRecords(f):
                out.append(Rec(len(out), seg.path, pos, rec.total_size, rec.queue_id, rec.queue_offset, seg.base + pos, rec))
    return tuple(out)


@pytest.fixture(scope="module")
def base_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("base") / "store"
    _write_store(root, [_message(i) for i in range(60)])
    return root


def _copy(base: Path, dest: Path) -> Store:
    shutil.copytree(base, dest)
    return Store(dest, _records(dest))


@pytest.fixture
def store(base_root, tmp_path) -> Store:
    return _copy(base_root, tmp_path / "store")


def test_base_store_layout(store):
    """The positions the damage tests rely on."""
    assert [len(store.in_file(n)) for n in range(3)] == [23, 23, 14]
    assert len(list((store.root / "commitlog").iterdir())) == 3
    rec = store.in_file(1)[7]
    assert (rec.position, rec.size, rec.queue_id, rec.queue_offset) == (1197, 171, 0, 15)
    assert rec.record.body == bytes([65 + rec.index % 26]) * BODY_SIZE
    assert bytes(rec.path.read_bytes()[rec.position + PROPS_AT : rec.position + PROPS_AT + 4]) == b"KEYS"
    entry = idxf.decode_index_entry(store.index.read_bytes(), ENTRIES_AT + ENTRY * (rec.index + 1))
    assert entry.phy_offset == rec.offset and entry.key_hash == index_key_hash(f"T#k{rec.index}")


# --- helpers ----------------------------------------------------------------------------------


def flip(path: Path, position: int, mask: int = 0x01) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ mask]))


def put(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def validate(root: Path, **options) -> ValidationReport:
    return validate_rocketmq(root, ValidateOptions(**options))


def _describe(findings) -> str:
    return "\n".join(f"  {f.level.value} {f.code} {f.path}:{f.position} len={f.length} {f.message}" for f in findings)


def expect(report: ValidationReport, *expected: tuple, allow: tuple[str, ...] = ()) -> list[Finding]:
    """Each expected ``(code, path, position[, length])`` is reported, and every other finding at
    warning or error level has a code in ``allow``.  Returns the expected findings."""
    hits = []
    for code, path, position, *length in expected:
        match = [f for f in report.findings if f.code == code and f.path == str(path) and f.position == position]
        assert match, f"expected {code} at {path}:{position}; found:\n{_describe(report.findings)}"
        if length:
            assert match[0].length == length[0], _describe(match)
        hits.append(match[0])
    others = [f for f in report.findings if f.level is not Severity.info and f not in hits and f.code not in allow]
    assert not others, f"unexpected findings:\n{_describe(others)}"
    return hits


def assert_healthy(report: ValidationReport) -> None:
    """No error, no warning, and the only info is where the valid data ends."""
    assert report.counts["error"] == report.counts["warning"] == 0, _describe(report.findings)
    assert [f.code for f in report.findings] == ["RMQ-CL-VALID-END"], _describe(report.findings)


def test_base_store_is_healthy(store):
    assert_healthy(validate(store.root))


# --- CommitLog records ----------------------------------------------------------------------------


def test_body_bit_flip(store):
    rec = store.in_file(1)[7]
    flip(rec.path, rec.position + cl.body_position(0) + 5)
    (finding,) = expect(validate(store.root), ("RMQ-CL-BODY-CRC", rec.path, rec.position + 8))
    assert "expected BODYCRC" in finding.message


def test_body_bit_flip_in_the_last_record_is_damage_not_a_torn_tail(store):
    """A record whose bytes are all on disk is not a torn write, even at the very end."""
    rec = store.records[-1]
    flip(rec.path, rec.position + cl.body_position(0) + 59, 0x80)
    report = validate(store.root)
    expect(report, ("RMQ-CL-BODY-CRC", rec.path, rec.position + 8))
    end = [f for f in report.findings if f.code == "RMQ-CL-VALID-END"]
    # the valid end is where recover (and the broker) stop: the broken record, not the data's end
    assert [(f.path, f.position) for f in end] == [(str(rec.path), rec.position)]
    assert f"records go on to {int(Path(rec.path).name) + rec.position + rec.size}" in end[0].message
    assert plan_rocketmq(store.root).valid_end == int(Path(rec.path).name) + rec.position


def test_property_byte_to_invalid_utf8(store):
    rec = store.in_file(1)[7]
    at = rec.position + PROPS_AT + 6  # "3" of the KEYS value "k30" -> 0xB3, a lone continuation byte
    flip(rec.path, at, 0x80)
    (finding,) = expect(validate(store.root), ("RMQ-CL-ENCODING", rec.path, at))
    assert "UTF-8" in finding.message


def test_property_separator_flip_drops_the_property(store):
    """KEYS\\x01 -> KEYS\\x00: the broker drops the segment; the index entry for that key is not
    reported a second time (the record's keys are unknown)."""
    rec = store.in_file(1)[7]
    flip(rec.path, rec.position + PROPS_AT + 4)
    (finding,) = expect(validate(store.root), ("RMQ-CL-PROPERTIES", rec.path, rec.position))
    assert finding.level is Severity.warning and "KEYS\\x00k30" in finding.message


def test_property_length_flip_is_a_size_mismatch(store):
    rec = store.in_file(1)[7]
    flip(rec.path, rec.position + TOPIC_AT + 2 + 1)  # PROPLEN 19 -> 18
    (finding,) = expect(validate(store.root), ("RMQ-CL-SIZE", rec.path, rec.position))
    assert "PROPLEN 18" in finding.message and "found 171" in finding.message


def test_property_value_flip_without_crc_property_shows_in_the_queue(store):
    """A flipped TAGS character decodes fine (no checksum covers properties without __CRC32#):
    the ConsumeQueue unit's tagsCode no longer matches the record's tags."""
    rec = store.in_file(1)[7]
    flip(rec.path, rec.position + PROPS_AT + len(f"KEYS\x01k{rec.index}\x02TAGS\x01T"), 0x20)  # TagA -> TAgA
    path, pos = store.unit(rec.queue_id, rec.queue_offset)
    (finding,) = expect(validate(store.root), ("RMQ-CQ-TAGS", path, pos + cqf.CQ_TAGS_CODE_POSITION))
    assert f"expected tagsCode {tags_code('TAgA')}" in finding.message


def test_property_key_flip_without_crc_property_shows_in_the_index(store):
    rec = store.in_file(1)[7]
    flip(rec.path, rec.position + PROPS_AT + 7, 0x02)  # KEYS k30 -> k32: the index entry says k30
    entry_at = ENTRIES_AT + ENTRY * (rec.index + 1)
    expect(validate(store.root), ("RMQ-IDX-ENTRY", store.index, entry_at))


@pytest.fixture(scope="module")
def crc_root(tmp_path_factory) -> Path:
    """Records with the __CRC32# property and a property ("note") no index or queue looks at."""
    root = tmp_path_factory.mktemp("crc") / "store"
    messages = [_message(i, properties={"KEYS": f"k{i}", "TAGS": "TagA", "note": "hello"}) for i in range(30)]
    _write_store(root, messages, replace(SMALL, append_crc_property=True))
    return root


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(lambda raw, rec: STORE_TS_AT + 7, id="storetimestamp"),
        pytest.param(lambda raw, rec: 16 + 3, id="flag"),
        pytest.param(lambda raw, rec: raw.index(b"hello", rec.position) - rec.position + 1, id="property-value"),
    ],
)
def test_crc_property_mismatch(crc_root, tmp_path, where):
    """A byte the __CRC32# property covers but BODYCRC does not."""
    store = _copy(crc_root, tmp_path / "store")
    rec = store.in_file(1)[5]
    assert list(rec.record.properties)[-1] == cl.CRC32
    flip(rec.path, rec.position + where(rec.path.read_bytes(), rec))
    (finding,) = expect(validate(store.root), ("RMQ-CL-PROP-CRC", rec.path, rec.position + rec.size - 11))
    assert "expected __CRC32#" in finding.message


def test_crc_property_queue_offset_flip_reports_both(crc_root, tmp_path):
    """A QUEUEOFFSET flip breaks the CRC property and the queue's sequence: both are reported
    at their fields, and the queue's unit for that record is not reported a third time."""
    store = _copy(crc_root, tmp_path / "store")
    rec = store.in_file(1)[5]
    flip(rec.path, rec.position + cl.QUEUE_OFFSET_POSITION + 7, 0x08)
    expect(
        validate(store.root),
        ("RMQ-CL-PROP-CRC", rec.path, rec.position + rec.size - 11),
        ("RMQ-CL-QUEUE-OFFSET", rec.path, rec.position + cl.QUEUE_OFFSET_POSITION),
    )


def test_crc_property_store_is_healthy(crc_root):
    assert_healthy(validate(crc_root))


def test_bad_magic(store):
    rec = store.in_file(1)[7]
    put(rec.path, rec.position + 4, b"\x00\x00\x00\x01")
    (finding,) = expect(validate(store.root), ("RMQ-CL-MAGIC", rec.path, rec.position + 4))
    assert "found 0x00000001" in finding.message


@pytest.mark.parametrize("delta", [1, -1, 100])
def test_totalsize_mismatch(store, delta):
    rec = store.in_file(1)[7]
    put(rec.path, rec.position, struct.pack(">i", rec.size + delta))
    (finding,) = expect(validate(store.root), ("RMQ-CL-SIZE", rec.path, rec.position))
    assert f"expected TOTALSIZE {rec.size}" in finding.message and f"found {rec.size + delta}" in finding.message


def test_bodylen_past_the_record(store):
    rec = store.in_file(1)[7]
    put(rec.path, rec.position + cl.body_position(0) - 4, struct.pack(">i", 1000))
    expect(validate(store.root), ("RMQ-CL-TRUNCATED", rec.path, rec.position + cl.body_position(0)))


def test_physical_offset_damage(store):
    rec = store.in_file(1)[7]
    flip(rec.path, rec.position + cl.PHYSICAL_OFFSET_POSITION + 7, 0x04)
    (finding,) = expect(validate(store.root), ("RMQ-CL-PHYS-OFFSET", rec.path, rec.position + cl.PHYSICAL_OFFSET_POSITION))
    assert f"expected PHYSICALOFFSET {rec.offset}" in finding.message


def test_physical_offset_damage_in_the_last_file_is_not_a_stale_tail(store):
    rec = store.in_file(2)[3]
    flip(rec.path, rec.position + cl.PHYSICAL_OFFSET_POSITION + 6)
    expect(validate(store.root), ("RMQ-CL-PHYS-OFFSET", rec.path, rec.position + cl.PHYSICAL_OFFSET_POSITION))


def test_queue_offset_discontinuity(store):
    """A record re-encoded (valid CRC) with another QUEUEOFFSET: one finding at that record; the
    next record of its queue continues the old sequence and the queue's unit is not reported again."""
    rec = store.in_file(1)[7]
    put(rec.path, rec.position, cl.encode_message(replace(rec.record, queue_offset=rec.queue_offset + 5)))
    (finding,) = expect(validate(store.root), ("RMQ-CL-QUEUE-OFFSET", rec.path, rec.position + cl.QUEUE_OFFSET_POSITION))
    assert f"expected QUEUEOFFSET {rec.queue_offset} after {rec.queue_offset - 1}, found {rec.queue_offset + 5}" in finding.message


def test_queue_offset_jump_across_files(store):
    """Every record of queue 1 in the last file shifted by 3: one finding, at the file's first record
    of that queue."""
    for rec in store.in_file(2):
        if rec.queue_id == 1:
            put(rec.path, rec.position, cl.encode_message(replace(rec.record, queue_offset=rec.queue_offset + 3)))
    first = next(r for r in store.in_file(2) if r.queue_id == 1)
    report = validate(store.root, checks=frozenset({"files", "commitlog"}))
    expect(report, ("RMQ-CL-QUEUE-OFFSET", first.path, first.position + cl.QUEUE_OFFSET_POSITION))


def test_unreadable_region_between_records(store):
    """Garbage across three records: the first broken record, then the skipped bytes up to the next
    valid record; the records' units and index entries are not reported again."""
    recs = store.in_file(1)
    put(recs[7].path, recs[7].position + 50, b"\xaa" * 300)
    report = validate(store.root)
    expect(
        report,
        ("RMQ-CL-SIZE", recs[7].path, recs[7].position + cl.body_position(0) - 4),
        ("RMQ-CL-UNREADABLE-REGION", recs[7].path, recs[7].position, recs[10].position - recs[7].position),
    )


# --- CommitLog files ------------------------------------------------------------------------------


def test_missing_middle_file(store):
    middle, last = store.cl(1), store.cl(2)
    middle.unlink()
    (finding,) = expect(validate(store.root), ("RMQ-FILE-GAP", last, None, 4096))
    assert "00000000000000004096" in finding.message


@pytest.mark.parametrize("size", [4000, 5000])
def test_wrong_size_file(store, size):
    """Zeros cut from or added after the END_OF_FILE of a middle file."""
    os.truncate(store.cl(1), size)
    (finding,) = expect(validate(store.root), ("RMQ-FILE-SIZE", store.cl(1), min(size, 4096), abs(size - 4096)))
    assert f"expected 4096 bytes (the commitlog file size), found {size}" in finding.message


def test_zero_length_middle_file_is_an_error(store):
    os.truncate(store.cl(1), 0)
    (finding,) = expect(validate(store.root), ("RMQ-FILE-ZERO-LENGTH", store.cl(1), 0))
    assert finding.level is Severity.error


def test_zero_length_last_file_is_a_warning(store):
    extra = store.root / "commitlog" / segnames.rocketmq_file_name(3 * 4096)
    extra.touch()
    (finding,) = expect(validate(store.root), ("RMQ-FILE-ZERO-LENGTH", extra, 0))
    assert finding.level is Severity.warning


def test_overlapping_name(store):
    """The last file renamed 8192 -> 8000: the names overlap (and 8000 is not aligned); its records
    are checked at the offsets they say, so nothing else is reported."""
    moved = store.root / "commitlog" / segnames.rocketmq_file_name(8000)
    store.cl(2).rename(moved)
    expect(validate(store.root), ("RMQ-FILE-OVERLAP", moved, None, 192), ("RMQ-FILE-ALIGN", moved, None))


def test_misaligned_name(store):
    moved = store.root / "commitlog" / segnames.rocketmq_file_name(8200)
    store.cl(2).rename(moved)
    expect(validate(store.root), ("RMQ-FILE-ALIGN", moved, None), ("RMQ-FILE-GAP", moved, None, 8))


def test_unexpected_file(store):
    (store.root / "commitlog" / "notes.txt").write_text("x")
    (store.queue_dir(0) / "00000000000000000000.tmp").write_bytes(b"")
    expect(
        validate(store.root),
        ("RMQ-FILE-NAME", store.root / "commitlog" / "notes.txt", None),
        ("RMQ-FILE-NAME", store.queue_dir(0) / "00000000000000000000.tmp", None),
    )


def test_unreadable_file(store, monkeypatch):
    """An I/O error (a bad sector) while reading a CommitLog file."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to map file descriptors to paths")
    target = str(store.cl(1))
    real_pread = os.pread

    def pread(fd, size, position):
        if os.readlink(f"/proc/self/fd/{fd}") == target:
            raise OSError(5, "Input/output error")
        return real_pread(fd, size, position)

    monkeypatch.setattr(os, "pread", pread)
    (finding,) = expect(validate(store.root), ("RMQ-FILE-UNREADABLE", store.cl(1), 0))
    assert "Input/output error" in finding.message


def _within(seconds: int, fn, *args, **kw):
    """``fn(*args)``, failing instead of hanging (a FIFO opened for reading blocks forever)."""
    import signal

    def hung(*_):
        raise TimeoutError(f"still running after {seconds} s: something opened a FIFO?")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        return fn(*args, **kw)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_index_links_and_special_files_are_reported_not_read(store, tmp_path):
    """index/ follows the CommitLog's rule: a symbolic link is not followed (RMQ-FILE-LINK), a
    FIFO or device is never opened (RMQ-FILE-UNREADABLE) -- not read, not silently skipped."""
    outside = tmp_path / "outside-index"
    shutil.copy(store.index, outside)
    flip(outside, ENTRIES_AT + ENTRY * 3)  # what validate would report if it read the file
    link = store.root / "index" / "20991231235959999"
    link.symlink_to(outside)
    fifo = store.root / "index" / "20991231235959998"
    os.mkfifo(fifo)
    report = _within(60, validate, store.root)
    found_link, found_fifo = expect(report, ("RMQ-FILE-LINK", link, None), ("RMQ-FILE-UNREADABLE", fifo, None))
    assert found_link.message == f"expected a regular index file, found a symlink to {str(outside)!r}: not followed"
    assert found_fifo.message == "expected a regular index file, found a FIFO: not read"
    assert found_link.level is Severity.warning and found_fifo.level is Severity.error
    assert not [f for f in report.findings if str(outside) in (f.path or "")]


def test_queue_directory_links_are_reported_not_followed(store, tmp_path):
    """A topic or queue directory that is a symbolic link is not followed (wherever it leads):
    reported once, as the link -- its records are not reported again as a missing queue."""
    outside = tmp_path / "outside-queue"
    shutil.copytree(store.queue_dir(1), outside)
    shutil.rmtree(store.queue_dir(1))
    store.queue_dir(1).symlink_to(outside)
    up = store.root / "consumequeue" / "T" / "7"
    up.symlink_to("../..")
    loop = store.root / "consumequeue" / "Loop"
    loop.symlink_to(store.root / "consumequeue")
    fifo = store.root / "consumequeue" / "T" / "8"
    os.mkfifo(fifo)
    report = _within(60, validate, store.root)
    hits = expect(report, ("RMQ-FILE-LINK", store.queue_dir(1), None), ("RMQ-FILE-LINK", up, None), ("RMQ-FILE-LINK", loop, None), ("RMQ-FILE-UNREADABLE", fifo, None))
    assert hits[1].message == "expected a consumequeue directory, found a symlink to '../..': not followed"
    assert not [f for f in report.findings if f.code == "RMQ-CQ-MISSING-QUEUE" or str(outside) in (f.path or "")]


# --- how the CommitLog ends -----------------------------------------------------------------------


def test_torn_last_record(store):
    """The last record cut inside its body, the rest zero (file size kept): a torn tail, no error.
    The checkpoint still names the torn record's store time (a warning of its own)."""
    rec = store.records[-1]
    data = rec.path.read_bytes()
    cut = rec.position + 100
    rec.path.write_bytes(data[:cut] + bytes(len(data) - cut))
    report = validate(store.root)
    (finding,) = expect(report, ("RMQ-CL-TORN-TAIL", rec.path, rec.position, 100), allow=("RMQ-CHECKPOINT",))
    assert finding.level is Severity.warning and report.counts["error"] == 0


def test_torn_record_after_a_crash(store):
    """A crash while appending: part of the next record on disk, never dispatched, abort left."""
    last = store.records[-1]
    nxt = cl.encode_message(
        replace(last.record, queue_id=0, queue_offset=30, physical_offset=last.offset + last.size, store_timestamp=START_MS + 999)
    )
    put(last.path, last.position + last.size, nxt[:120])
    (store.root / "abort").touch()
    expect(
        validate(store.root),
        ("RMQ-CL-TORN-TAIL", last.path, last.position + last.size, 120),
        ("RMQ-ABORT", store.root / "abort", None),
    )


def test_stale_tail_after_a_truncation(store):
    """Earlier records copied after the valid end of the last file (stale data, as a truncation
    that only moves the write position leaves behind): each is a byte-for-byte copy of the record
    at the PHYSICALOFFSET it says, so valid data ends before them and they are one RMQ-CL-GARBAGE
    finding, not a PHYS-OFFSET and a QUEUE-OFFSET error per copy."""
    last = store.records[-1]
    end = last.position + last.size
    data = last.path.read_bytes()
    put(last.path, end, data[: 3 * 171])
    report = validate(store.root)
    (finding,) = expect(report, ("RMQ-CL-GARBAGE", last.path, end, 3 * 171))
    assert "stale records" in finding.message
    assert [f.position for f in report.findings if f.code == "RMQ-CL-VALID-END"] == [end]


def test_garbage_after_the_valid_end(store):
    put(store.cl(2), 3000, b"garbage!" * 4)
    (finding,) = expect(validate(store.root), ("RMQ-CL-GARBAGE", store.cl(2), 3000, 32))
    assert "found 32 bytes of other data (from 3000 to 3032)" in finding.message


def test_garbage_in_the_preallocated_next_file(store):
    nxt = store.root / "commitlog" / segnames.rocketmq_file_name(3 * 4096)
    nxt.write_bytes(bytes(100) + b"x" + bytes(4096 - 101))
    expect(validate(store.root), ("RMQ-CL-GARBAGE", nxt, 100, 1))


def test_middle_file_without_end_of_file(store):
    blank_at = store.in_file(1)[-1].position + 171
    put(store.cl(1), blank_at, bytes(8))
    expect(validate(store.root), ("RMQ-CL-NO-BLANK", store.cl(1), blank_at))


def test_blank_with_wrong_totalsize(store):
    blank_at = store.in_file(1)[-1].position + 171
    put(store.cl(1), blank_at, struct.pack(">i", 100))
    (finding,) = expect(validate(store.root), ("RMQ-CL-BLANK", store.cl(1), blank_at))
    assert f"expected END_OF_FILE TOTALSIZE {4096 - blank_at}" in finding.message


def test_bytes_after_the_blank_header_are_only_info(store):
    blank_at = store.in_file(1)[-1].position + 171
    put(store.cl(1), blank_at + 20, b"junk")
    report = validate(store.root)
    expect(report)
    assert [(f.code, f.position, f.length) for f in report.findings if f.code == "RMQ-CL-AFTER-BLANK"] == [
        ("RMQ-CL-AFTER-BLANK", blank_at + 20, 4)
    ]


# --- ConsumeQueue -----------------------------------------------------------------------------------


def test_cq_unit_with_wrong_size(store):
    rec = store.in_file(1)[7]
    path, pos = store.unit(rec.queue_id, rec.queue_offset)
    put(path, pos + 8, struct.pack(">i", rec.size - 1))
    (finding,) = expect(validate(store.root), ("RMQ-CQ-MISMATCH", path, pos))
    assert f"size {rec.size - 1} vs record TOTALSIZE {rec.size}" in finding.message


def test_cq_unit_pointing_into_a_record(store):
    rec = store.in_file(1)[7]
    path, pos = store.unit(rec.queue_id, rec.queue_offset)
    put(path, pos, struct.pack(">q", rec.offset + 10))
    expect(validate(store.root), ("RMQ-CQ-NOT-A-RECORD", path, pos))


def test_cq_unit_pointing_at_another_queues_record(store):
    rec = store.in_file(1)[7]
    other = store.in_file(1)[8]  # queue 1
    path, pos = store.unit(rec.queue_id, rec.queue_offset)
    put(path, pos, struct.pack(">q", other.offset))
    (finding,) = expect(validate(store.root), ("RMQ-CQ-MISMATCH", path, pos))
    assert "queue T/0 vs record T/1" in finding.message


def test_cq_unit_past_the_commitlog_end(store):
    rec = store.in_file(1)[7]
    path, pos = store.unit(rec.queue_id, rec.queue_offset)
    put(path, pos, struct.pack(">q", 20_000))
    (finding,) = expect(validate(store.root), ("RMQ-CQ-PAST-END", path, pos))
    last = store.records[-1]
    assert f"below {last.offset + last.size}" in finding.message


def test_cq_wrong_tags_code(store):
    rec = store.in_file(1)[7]
    path, pos = store.unit(rec.queue_id, rec.queue_offset)
    put(path, pos + 12, struct.pack(">q", 12345))
    (finding,) = expect(validate(store.root), ("RMQ-CQ-TAGS", path, pos + 12))
    assert f"expected tagsCode {tags_code('TagA')}" in finding.message and "found 12345" in finding.message


def test_cq_delayed_message_tags_are_the_delivery_time(tmp_path):
    """SCHEDULE_TOPIC_XXXX units hold the delivery time, not the TAGS hash: the store is healthy,
    and a unit holding the TAGS hash instead is the finding."""
    root = tmp_path / "store"
    (result,) = _write_store(root, [_delayed(3)])
    assert_healthy(validate(root))
    path = root / "consumequeue" / "SCHEDULE_TOPIC_XXXX" / "2" / segnames.rocketmq_file_name(0)
    put(path, cqf.CQ_TAGS_CODE_POSITION, struct.pack(">q", tags_code("TagD")))
    (finding,) = expect(validate(root), ("RMQ-CQ-TAGS", path, cqf.CQ_TAGS_CODE_POSITION))
    assert f"expected tagsCode {result.store_timestamp + 10_000} (delivery time" in finding.message


def test_cq_ext_addresses(store):
    """An ext address is not a tag hash: unchecked without consumequeue_ext/, checked against the
    ext unit's tags with it."""
    rec = store.in_file(1)[7]
    path, pos = store.unit(rec.queue_id, rec.queue_offset)
    put(path, pos + 12, struct.pack(">q", cqf.decorate_ext_address(0)))
    assert_healthy(validate(store.root))
    ext_dir = store.root / "consumequeue_ext" / "T" / "0"
    ext_dir.mkdir(parents=True)
    good = cqf.encode_cq_ext_unit(cqf.CqExtUnit(tags_code("TagA"), rec.record.store_timestamp))
    (ext_dir / segnames.rocketmq_file_name(0)).write_bytes(good + bytes(1000 - len(good)))
    assert_healthy(validate(store.root))
    bad = cqf.encode_cq_ext_unit(cqf.CqExtUnit(7, rec.record.store_timestamp))
    (ext_dir / segnames.rocketmq_file_name(0)).write_bytes(bad + bytes(1000 - len(bad)))
    (finding,) = expect(validate(store.root), ("RMQ-CQ-TAGS", path, pos + 12))
    assert "found 7" in finding.message


def test_cq_lag(store):
    path, pos = store.unit(0, 27)
    put(path, pos, bytes(60))  # units 27..29 of queue 0 never dispatched
    (finding,) = expect(validate(store.root), ("RMQ-CQ-LAG", store.queue_dir(0), None))
    assert finding.level is Severity.warning and finding.details == {"missing_units": 3}


def test_cq_invalid_unit_mid_queue(store):
    path, pos = store.unit(0, 15)
    put(path, pos, struct.pack(">q", -5))
    next_file, _ = store.unit(0, 20)
    expect(
        validate(store.root),
        ("RMQ-CQ-INVALID-UNIT", path, pos),
        ("RMQ-CQ-AFTER-END", path, pos + 20, 200 - pos - 20),
        ("RMQ-CQ-AFTER-END", next_file, 0, 200),
        ("RMQ-CQ-LAG", store.queue_dir(0), None),
    )


def test_cq_partial_unit(store):
    path, _ = store.unit(0, 29)
    os.truncate(path, 190)
    expect(
        validate(store.root),
        ("RMQ-FILE-SIZE", path, 190, 10),
        ("RMQ-CQ-PARTIAL-UNIT", path, 180, 10),
        ("RMQ-CQ-LAG", store.queue_dir(0), None),
    )


@pytest.mark.parametrize("size", [500, 990])
def test_cq_sole_file_of_the_wrong_size(tmp_path, size):
    """A queue whose only file is short (500: whole units; 990: a partial unit) is measured against
    the size the store's other ConsumeQueue files have (1000 bytes in the bundled fixture), not
    against its own size or the 6,000,000-byte default: the broker creates every ConsumeQueue
    file at full size and refuses to load one of another size."""
    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    path = root / "consumequeue" / "TopicTest" / "1" / segnames.rocketmq_file_name(0)
    assert path.stat().st_size == 1000 and len(list(path.parent.iterdir())) == 1
    os.truncate(path, size)
    report = validate(root)
    (finding,) = expect(report, ("RMQ-FILE-SIZE", path, size, 1000 - size))
    assert f"expected 1000 bytes (the consumequeue file size; detected: the most common size of the store's ConsumeQueue files), found {size}" in finding.message
    assert ("10 bytes of a partial unit" in finding.message) == (size == 990)
    assert report.facts["cq_file_size"] == 1000


def test_cq_file_size_option_is_rounded_up_to_whole_units(tmp_path):
    """``--cq-file-size`` is mappedFileSizeConsumeQueue, which the broker rounds up to 20-byte units."""
    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    report = validate(root, cq_file_size=990)
    assert_healthy(report)
    assert report.facts["cq_file_size"] == 1000
    sizes = [f for f in validate(root, cq_file_size=1200).findings if f.code == "RMQ-FILE-SIZE"]
    assert len(sizes) == len([p for p in (root / "consumequeue").rglob("*") if p.is_file()]) == 13
    assert "expected 1200 bytes (the consumequeue file size; --cq-file-size), found 1000" in sizes[0].message


def test_cq_size_default_when_no_file_holds_whole_units(store):
    """Every ConsumeQueue file cut mid-unit: nothing to detect from, the upstream default is
    named as such."""
    for qid in (0, 1):
        for path in sorted(store.queue_dir(qid).iterdir()):
            os.truncate(path, 190)
    report = validate(store.root)
    sizes = [f for f in report.findings if f.code == "RMQ-FILE-SIZE"]
    assert len(sizes) == 6 and report.facts["cq_file_size"] == rmq.DEFAULT_CQ_FILE_SIZE
    assert "expected 6000000 bytes (the consumequeue file size; the upstream default: no ConsumeQueue file holds whole 20-byte units" in sizes[0].message


def test_cq_filler_units_are_not_messages(store):
    """fillPreBlank units (0, 0x7FFFFFFF, 0) before a queue's first real unit: no finding; the
    queue's min offset starts after them."""
    path, _ = store.unit(0, 0)
    put(path, 0, cqf.encode_cq_unit(cqf.FILLER_UNIT) * 3)
    (store.root / "config" / "consumerOffset.json").write_text(encode_fastjson({"offsetTable": {"T@g": {0: 3, 1: 0}}}))
    assert_healthy(validate(store.root))
    (store.root / "config" / "consumerOffset.json").write_text(encode_fastjson({"offsetTable": {"T@g": {0: 1}}}))
    report = validate(store.root)
    expect(report)
    (behind,) = [f for f in report.findings if f.code == "RMQ-CONSUMER-BEHIND"]
    assert "below the queue's min offset 3" in behind.message


def test_cq_missing_queue_directory(store):
    shutil.rmtree(store.queue_dir(1))
    (finding,) = expect(validate(store.root), ("RMQ-CQ-MISSING-QUEUE", store.queue_dir(1), None))
    assert "30 CommitLog record(s) of T/1" in finding.message


def test_retention_expired_units_and_consumer_behind(store):
    """The first CommitLog file and first ConsumeQueue files deleted by retention: expired units
    and entries are infos, a consumer below the new min offset is an info."""
    store.cl(0).unlink()
    for qid in (0, 1):
        store.unit(qid, 0)[0].unlink()
    (store.root / "config" / "consumerOffset.json").write_text(encode_fastjson({"offsetTable": {"T@g": {0: 5, 1: 12}}}))
    report = validate(store.root)
    expect(report)
    infos = {(f.code, f.path) for f in report.findings}
    assert ("RMQ-CQ-EXPIRED", str(store.queue_dir(0))) in infos
    assert ("RMQ-IDX-EXPIRED", str(store.index)) in infos
    (behind,) = [f for f in report.findings if f.code == "RMQ-CONSUMER-BEHIND"]
    assert "T/0: offset 5 is below the queue's min offset 12" in behind.message  # first unit at or above the min


# --- IndexFile ----------------------------------------------------------------------------------------


def _entry_at(rec: Rec) -> int:
    return ENTRIES_AT + ENTRY * (rec.index + 1)


def test_index_entry_with_wrong_hash(store):
    """A hash of another slot: the chain holds an entry of the wrong slot, and the record has no
    such key."""
    rec = store.in_file(1)[7]
    wrong = index_key_hash(f"T#k{rec.index}") ^ 1
    put(store.index, _entry_at(rec), struct.pack(">i", wrong))
    expect(validate(store.root), ("RMQ-IDX-SLOT", store.index, _entry_at(rec)), ("RMQ-IDX-ENTRY", store.index, _entry_at(rec)))


def test_index_entry_with_wrong_hash_of_the_same_slot(store):
    rec = store.in_file(1)[7]
    wrong = index_key_hash(f"T#k{rec.index}") ^ 16
    put(store.index, _entry_at(rec), struct.pack(">i", wrong))
    (finding,) = expect(validate(store.root), ("RMQ-IDX-ENTRY", store.index, _entry_at(rec)))
    assert f"no key hashing to {wrong}" in finding.message


@pytest.mark.parametrize("prev", ["self", "newer"])
def test_index_chain_cycle(store, prev):
    """A prevIndex pointing at the entry itself or a newer one: reported once, the walk ends, and
    the older entries cut off that chain are not reported again."""
    rec = store.in_file(1)[7]
    number = rec.index + 1
    put(store.index, _entry_at(rec) + idxf.PREV_INDEX_POSITION, struct.pack(">i", number if prev == "self" else number + 9))
    (finding,) = expect(validate(store.root), ("RMQ-IDX-CHAIN", store.index, _entry_at(rec) + idxf.PREV_INDEX_POSITION))
    assert "(a cycle)" in finding.message


def test_index_slot_out_of_range(store):
    put(store.index, idxf.INDEX_HEADER_SIZE + 4 * 3, struct.pack(">i", 70))
    expect(validate(store.root), ("RMQ-IDX-CHAIN", store.index, idxf.INDEX_HEADER_SIZE + 4 * 3))


@pytest.mark.parametrize(
    ("position", "value", "text"),
    [
        (idxf.HASH_SLOT_COUNT_POSITION, 3, "expected hashSlotCount 16"),
        (idxf.INDEX_COUNT_POSITION, 50, "expected indexCount 61"),
        (idxf.INDEX_COUNT_POSITION, 63, "expected indexCount 61"),
    ],
)
def test_index_header_counts(store, position, value, text):
    put(store.index, position, struct.pack(">i", value))
    (finding,) = expect(validate(store.root), ("RMQ-IDX-HEADER", store.index, position))
    assert text in finding.message


def test_index_header_end_offset(store):
    put(store.index, idxf.END_PHY_OFFSET_POSITION, struct.pack(">q", 100))
    expect(validate(store.root), ("RMQ-IDX-HEADER", store.index, idxf.END_PHY_OFFSET_POSITION))


def test_index_entry_past_the_commitlog_end(store):
    rec = store.in_file(1)[7]
    put(store.index, _entry_at(rec) + 4, struct.pack(">q", 50_000))
    expect(validate(store.root), ("RMQ-IDX-PAST-END", store.index, _entry_at(rec)))


def test_index_entry_pointing_into_a_record(store):
    rec = store.in_file(1)[7]
    put(store.index, _entry_at(rec) + 4, struct.pack(">q", rec.offset + 3))
    expect(validate(store.root), ("RMQ-IDX-ENTRY", store.index, _entry_at(rec)))


def test_index_file_of_unknown_geometry(store):
    os.truncate(store.index, 1000)
    expect(validate(store.root), ("RMQ-IDX-GEOMETRY", store.index, None))


# IndexFile geometry read from the file's own bytes: no --index-hash-slots/--index-num needed.

ODD = replace(SMALL, index_hash_slot_num=500, index_num=3000)  # a length no known geometry has


def _odd_store(root: Path, config: WriterConfig = ODD, messages: int = 20) -> Path:
    _write_store(root, [_message(i) for i in range(messages)], config)
    (index,) = (root / "index").iterdir()
    return index


def _key_query(capsys, root: Path, key: str, *flags: str) -> tuple[int, list[dict]]:
    code = run(["query", str(root), "--key", key, "--jsonl", *flags])
    return code, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(slots=st.integers(1, 1000), entries=st.integers(2, 5000), messages=st.integers(1, 30), probe=st.integers(0, 29))
def test_any_index_geometry_validates_clean_and_answers_key_queries(tmp_path_factory, capsys, slots, entries, messages, probe):
    """A healthy store of whatever maxHashSlotNum/maxIndexNum: validate is clean and query --key
    finds the message through the index, with no geometry flags."""
    root = tmp_path_factory.mktemp("geometry") / "store"
    _write_store(root, [_message(i) for i in range(messages)], replace(SMALL, index_hash_slot_num=slots, index_num=entries))
    for path in (root / "index").iterdir():
        with rmq.IndexFileView(path) as view:
            assert view.geometry == idxf.IndexGeometry(slots, entries)
    assert_healthy(validate(root))
    assert run(["validate", str(root), "--jsonl"]) == 0, capsys.readouterr()
    capsys.readouterr()
    i = probe % messages
    code, rows = _key_query(capsys, root, f"k{i}")
    assert code == 0 and [(r["keys"], r["found_via"]) for r in rows] == [([f"k{i}"], "index")]


def test_index_geometry_flags_still_win(tmp_path, capsys):
    index = _odd_store(tmp_path / "store")
    root = tmp_path / "store"
    assert run(["validate", str(root), "--index-hash-slots", "500", "--index-num", "3000"]) == 0
    capsys.readouterr()
    # flags of another geometry of the same length: the file is read their way (and is damaged so)
    assert idxf.IndexGeometry(505, 2999).size == index.stat().st_size
    report = validate(root, index_hash_slot_num=505, index_num=2999)
    assert report.counts["error"] > 0 and "RMQ-IDX-GEOMETRY" not in {f.code for f in report.findings}
    code, _ = _key_query(capsys, root, "k3", "--index-hash-slots", "500", "--index-num", "3001")
    assert code == 1  # a length that does not fit the flags is a problem, as before
    expect(validate(root, index_hash_slot_num=500, index_num=3001), ("RMQ-IDX-GEOMETRY", index, index.stat().st_size))


def test_index_of_unlisted_geometry_with_a_flipped_begin_offset(tmp_path, capsys):
    """The damage is reported as the header's, not as an unknown geometry; queries still work."""
    index = _odd_store(tmp_path / "store")
    flip(index, idxf.BEGIN_PHY_OFFSET_POSITION + 7, 0x40)
    (finding,) = expect(validate(tmp_path / "store"), ("RMQ-IDX-HEADER", index, idxf.BEGIN_PHY_OFFSET_POSITION))
    assert "beginPhyOffset" in finding.message
    code, rows = _key_query(capsys, tmp_path / "store", "k7")
    assert code == 0 and [r["found_via"] for r in rows] == ["index"]


def test_index_of_unlisted_geometry_with_a_zeroed_slot_table(tmp_path):
    index = _odd_store(tmp_path / "store")
    put(index, idxf.INDEX_HEADER_SIZE, bytes(4 * ODD.index_hash_slot_num))
    report = validate(tmp_path / "store")
    codes = {f.code for f in report.findings if f.level is not Severity.info}
    assert codes == {"RMQ-IDX-HEADER"}, _describe(report.findings)


def test_empty_index_file_of_unlisted_geometry_is_still_unknown(tmp_path):
    """indexCount <= 1: nothing in the file tells its geometry; the flags are asked for as before."""
    index = _odd_store(tmp_path / "store")
    put(index, 0, bytes(idxf.INDEX_HEADER_SIZE))
    put(index, idxf.INDEX_HEADER_SIZE, bytes(index.stat().st_size - idxf.INDEX_HEADER_SIZE))
    (finding,) = expect(validate(tmp_path / "store"), ("RMQ-IDX-GEOMETRY", index, None))
    assert "--index-hash-slots" in finding.message
    report = validate(tmp_path / "store", index_hash_slot_num=500, index_num=3000)
    assert "RMQ-IDX-GEOMETRY" not in {f.code for f in report.findings}


# --- checkpoint, abort, config ------------------------------------------------------------------------


def test_abort_file(store):
    (store.root / "abort").touch()
    (finding,) = expect(validate(store.root), ("RMQ-ABORT", store.root / "abort", None))
    assert finding.level is Severity.warning


def test_checkpoint_newer_than_the_data(store):
    cp = cpf.decode_checkpoint((store.root / "checkpoint").read_bytes())
    assert cp.physic_msg_timestamp == store.records[-1].record.store_timestamp
    (store.root / "checkpoint").write_bytes(cpf.encode_checkpoint(replace(cp, physic_msg_timestamp=cp.physic_msg_timestamp + 5000)))
    (finding,) = expect(validate(store.root), ("RMQ-CHECKPOINT", store.root / "checkpoint", 0))
    assert f"found {cp.physic_msg_timestamp + 5000}" in finding.message


def test_checkpoint_cut_short(store):
    os.truncate(store.root / "checkpoint", 10)
    expect(validate(store.root), ("RMQ-CHECKPOINT-FORMAT", store.root / "checkpoint", 0))


def _offsets(store: Store, table: dict) -> Path:
    path = store.root / "config" / "consumerOffset.json"
    path.write_text(encode_fastjson({"offsetTable": table}))
    return path


def test_consumer_offset_beyond_max(store):
    path = _offsets(store, {"T@g1": {0: 31, 1: 30}})
    (finding,) = expect(validate(store.root), ("RMQ-CONSUMER-OFFSET", path, None))
    assert "group g1 on T/0: expected an offset in [0, 30], found 31" in finding.message


def test_consumer_offsets_in_range_and_unknown_queue(store):
    path = _offsets(store, {"T@g1": {0: 30, 1: 0}, "Other@g1": {0: 5}})
    report = validate(store.root)
    expect(report)
    assert [(f.code, f.path) for f in report.findings if f.code.startswith("RMQ-CONSUMER")] == [("RMQ-CONSUMER-UNKNOWN-QUEUE", str(path))]


#: A healthy document of every config file validate reads.
CONFIG_DOCS = {
    "topics.json": {"topicConfigTable": {"T": {"perm": 6, "readQueueNums": 2, "topicName": "T", "writeQueueNums": 2}}},
    "consumerOffset.json": {"offsetTable": {"T@g": {0: 30, 1: 30}}},
    "lmqConsumerOffset.json": {"offsetTable": {}},
    "delayOffset.json": {"offsetTable": {3: 1}},
    "subscriptionGroup.json": {"dataVersion": {"counter": 1, "timestamp": 0}, "subscriptionGroupTable": {"g": {"groupName": "g"}}},
    "consumerFilter.json": {"filterDataByTopic": {}},
}

#: The same files with the right syntax and the wrong shape.
CONFIG_SHAPES = {
    "topics.json": {"topicConfigTable": {"T": {"perm": "rw"}}},
    "consumerOffset.json": {"offsetTable": {"T@g": {0: "x"}}},
    "lmqConsumerOffset.json": {"offsetTable": {"noSeparator": {0: 1}}},
    "delayOffset.json": {"offsetTable": []},
    "subscriptionGroup.json": {"subscriptionGroupTable": {"g": {"consumeEnable": 1}}},
    "consumerFilter.json": {"filterDataByTopic": {"T": []}},
}


def test_config_files_list_every_file_validate_reads():
    import mqtool.store.model.rocketmq_read as engine

    assert [name for name, _ in engine.CONFIG_FILES] == list(CONFIG_DOCS) == list(CONFIG_SHAPES)


def test_healthy_config_files_and_backups(store):
    for name, doc in CONFIG_DOCS.items():
        (store.root / "config" / name).write_text(encode_fastjson(doc))
        (store.root / "config" / f"{name}.bak").write_text(encode_fastjson(doc))
    assert_healthy(validate(store.root))


@pytest.mark.parametrize("name", sorted(CONFIG_DOCS))
def test_config_file_unparseable(store, name):
    """A cut file (a crash while the broker overwrote it in place): the byte where parsing fails,
    expected vs found."""
    path = store.root / "config" / name
    text = encode_fastjson(CONFIG_DOCS[name])
    path.write_text(text[: text.index("{", 1) + 1])
    (finding,) = expect(validate(store.root), ("RMQ-CONFIG-PARSE", path, len(text[: text.index("{", 1) + 1])))
    assert finding.level is Severity.error
    assert "expected JSON with bare integer map keys, found" in finding.message


@pytest.mark.parametrize("name", sorted(CONFIG_SHAPES))
def test_config_file_of_the_wrong_shape(store, name):
    path = store.root / "config" / name
    path.write_text(encode_fastjson(CONFIG_SHAPES[name]))
    (finding,) = expect(validate(store.root), ("RMQ-CONFIG-PARSE", path, None))
    assert finding.message.startswith("expected ") and ", found " in finding.message


def test_config_file_with_a_bad_data_version(store):
    path = store.root / "config" / "topics.json"
    path.write_text(encode_fastjson({"dataVersion": {"counter": "one"}, "topicConfigTable": {}}))
    (finding,) = expect(validate(store.root), ("RMQ-CONFIG-PARSE", path, None))
    assert "dataVersion.counter" in finding.message


def test_config_file_empty_or_not_utf8(store):
    empty = store.root / "config" / "topics.json"
    empty.write_text("")
    binary = store.root / "config" / "delayOffset.json"
    binary.write_bytes(b'{"offsetTable":{3:\xff}}')
    expect(validate(store.root), ("RMQ-CONFIG-PARSE", empty, 0), ("RMQ-CONFIG-PARSE", binary, 18))


def test_consumer_offset_file_unparseable(store):
    path = store.root / "config" / "consumerOffset.json"
    path.write_text('{"offsetTable": {')
    expect(validate(store.root), ("RMQ-CONFIG-PARSE", path, 17))


def test_broken_config_file_with_a_good_backup(store):
    """The broker loads ``<name>.bak`` when ``<name>`` does not parse: the file is reported and the
    consumer offsets are checked as the backup holds them."""
    path = store.root / "config" / "consumerOffset.json"
    bak = store.root / "config" / "consumerOffset.json.bak"
    path.write_text('{"offsetTable": {')
    bak.write_text(encode_fastjson({"offsetTable": {"T@g": {0: 31}}}))
    (broken, ahead) = expect(validate(store.root), ("RMQ-CONFIG-PARSE", path, 17), ("RMQ-CONSUMER-OFFSET", bak, None))
    assert "(the broker loads consumerOffset.json.bak instead)" in broken.message
    assert "found 31" in ahead.message


def test_broken_backup_of_a_good_config_file_is_a_warning(store):
    (store.root / "config" / "topics.json").write_text(encode_fastjson(CONFIG_DOCS["topics.json"]))
    bak = store.root / "config" / "topics.json.bak"
    bak.write_text('{"topicConfigTable":{"T":')
    (finding,) = expect(validate(store.root), ("RMQ-CONFIG-PARSE", bak, 25))
    assert finding.level is Severity.warning
    assert "the backup of topics.json, which parses" in finding.message


def test_broken_backup_without_a_good_config_file_is_an_error(store):
    """Without ``<name>`` (or with a broken one) the broker needs the backup."""
    bak = store.root / "config" / "delayOffset.json.bak"
    bak.write_text('{"offsetTable":{3:')
    (finding,) = expect(validate(store.root), ("RMQ-CONFIG-PARSE", bak, 18))
    assert finding.level is Severity.error
    path = store.root / "config" / "delayOffset.json"
    path.write_text("{")
    findings = expect(validate(store.root), ("RMQ-CONFIG-PARSE", path, 1), ("RMQ-CONFIG-PARSE", bak, 18))
    assert [f.level for f in findings] == [Severity.error, Severity.error]
    assert "instead" not in findings[0].message


def test_backup_alone_is_what_the_broker_loads(store):
    """No ``consumerOffset.json``, only its ``.bak``: the offsets are checked as the backup holds them."""
    bak = store.root / "config" / "consumerOffset.json.bak"
    bak.write_text(encode_fastjson({"offsetTable": {"T@g": {1: 40}}}))
    expect(validate(store.root), ("RMQ-CONSUMER-OFFSET", bak, None))


def test_config_checks_follow_the_checks_option(store):
    (store.root / "config" / "topics.json").write_text("{")
    assert_healthy(validate(store.root, checks=frozenset({"files", "commitlog", "consumequeue", "index", "checkpoint"})))


def test_cli_unparseable_config_file_exits_1(store, capsys):
    path = store.root / "config" / "subscriptionGroup.json"
    path.write_text('{"subscriptionGroupTable":{')
    code, out = _cli(capsys, str(store.root), "--jobs", "1", "--jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    (row,) = [r for r in rows if r["code"] == "RMQ-CONFIG-PARSE"]
    assert (row["path"], row["position"], row["severity"], row["family"]) == (str(path), 27, "error", "config")


# --- a live writer ---------------------------------------------------------------------------------

@pytest.mark.parametrize("completed", [True, False])
def test_record_completed_while_validating_is_in_progress(tmp_path, monkeypatch, completed):
    """A writer holds the store's lock and the last record is half on disk.  validate reads the
    file again a moment later: when the record is complete by then, the tail is
    RMQ-CL-IN-PROGRESS (info) and the store passes; when nothing more arrives, the same tail stays
    damage (not in progress)."""
    import mqtool.store.model.commitlog_check as engine

    root = tmp_path / "store"
    with StoreWriter(root, SMALL) as w:
        for i in range(6):
            w.append(cl.MessageRecord(topic="T", queue_id=0, body=b"record %d " % i * 4, properties={"KEYS": f"k{i}"}))
    path = rmq.list_segments(root / "commitlog")[0].path
    original = path.read_bytes()
    last_pos, last = list(cl.RecordWalker(original, 0))[-1]
    half = last_pos + last.total_size // 2
    torn = original[:half] + bytes(last.total_size - last.total_size // 2) + original[last_pos + last.total_size :]
    path.write_bytes(torn)

    def sleep(_seconds: float) -> None:  # the moment between the two reads: the writer finishes
        if completed:
            path.write_bytes(original)

    monkeypatch.setattr(engine.time, "sleep", sleep)
    with lock_held_elsewhere(root / "lock"):
        report = validate(root)
    assert report.facts["live"] is True
    codes = {f.code for f in report.findings}
    if completed:
        [progress] = [f for f in report.findings if f.code == "RMQ-CL-IN-PROGRESS"]
        assert progress.level is Severity.info and progress.position == last_pos
        assert not report.failed, _describe(report.findings)
    else:
        assert "RMQ-CL-IN-PROGRESS" not in codes
        damage = [f for f in report.findings if f.level is not Severity.info and f.path == str(path)]
        assert damage and min(f.position for f in damage) == last_pos, _describe(report.findings)


#: Codes validate never produces, and why.
NOT_PRODUCED: dict[str, str] = {}


def test_every_code_has_a_test_or_a_reason():
    """Every RMQ code is asserted by a test (here, or for file-system oddities in another test
    module), or is listed above with the reason validate never produces it."""
    import mqtool.store.model.rocketmq_read as engine
    from mqtool.store.model import commitlog_check, commitlog_walk, compaction_check, index_check, queue_check, rocksdb_cq_check, timer_check

    # validate's checks live in the store model since issue 27: every module that produces its codes
    modules = (engine, commitlog_check, commitlog_walk, queue_check, index_check, rocksdb_cq_check, timer_check, compaction_check)
    engine_source = "".join(Path(m.__file__).read_text() for m in modules)
    here = Path(__file__)
    tests_source = here.read_text().split("#: Codes validate never produces")[0] + "".join(
        p.read_text() for p in here.parents[1].rglob("test_*.py") if p != here
    )
    for code in (c for c in CODES if c.startswith("RMQ-")):
        if code in NOT_PRODUCED:
            assert f'"{code}"' not in engine_source and code.replace("-", "_") not in engine_source, f"{code} is produced now: test it"
        else:
            assert code in tests_source, f"no test for {code}"


def test_rocksdb_consume_queue_that_does_not_open_is_unreadable(store):
    # a RocksDB ConsumeQueue is read since issue 29 (tests/ops/validate/test_rocksdb_cq.py); one
    # RocksDB cannot open (its MANIFEST missing) is a finding on consumequeue/, not exit 4
    from tests.rocksdb_cq_store import require_rocksdict

    require_rocksdict()
    (store.root / "consumequeue" / "CURRENT").write_text("MANIFEST-000001\n")
    report = validate(store.root)
    assert "RMQ-FILE-UNREADABLE" in {f.code for f in report.findings if f.path == str(store.root / "consumequeue")}


# --- healthy stores --------------------------------------------------------------------------------


def test_bundled_fixture_is_healthy():
    report = validate(FIXTURES / "rocketmq-store")
    assert_healthy(report)
    assert report.findings[0].level is Severity.info


def _ipv6(i: int) -> cl.MessageRecord:
    if i % 2:
        return _message(i)
    return _message(
        i,
        sys_flag=cl.SYSFLAG_BORNHOST_V6 | cl.SYSFLAG_STOREHOST_V6,
        born_host=cl.HostAddress("2001:db8::7", 50000),
        store_host=cl.HostAddress("2001:db8::10", 10911),
    )


def _mixed(i: int) -> cl.MessageRecord:
    """Several topics, UNIQ_KEY, multi-key KEYS, a zlib-compressed body, and records without
    properties (their last byte is PROPLEN's zero: not a torn tail)."""
    if i % 7 == 6:
        return cl.MessageRecord(topic="Bare", body=b"no properties at all")
    props = {"KEYS": f"a{i} b{i}  c{i}", "TAGS": f"Tag{i % 3}", "UNIQ_KEY": f"{i:032X}"}
    body = zlib.compress(b"z" * 300) if i % 5 == 0 else f"message {i}".encode()
    return cl.MessageRecord(topic=f"Topic{i % 3}", queue_id=i % 4, body=body, properties=props, sys_flag=cl.SYSFLAG_COMPRESSED if i % 5 == 0 else 0)


def _transactions(i: int) -> list[cl.MessageRecord]:
    half = cl.MessageRecord(topic="RMQ_SYS_TRANS_HALF_TOPIC", body=b"half", properties={"REAL_TOPIC": "T", "REAL_QID": "0", "TRAN_MSG": "true"})
    kind = [cl.SYSFLAG_TRANSACTION_PREPARED, cl.SYSFLAG_TRANSACTION_COMMIT, cl.SYSFLAG_TRANSACTION_ROLLBACK][i % 3]
    return [half, _message(i, sys_flag=kind, prepared_transaction_offset=64 * i if kind != cl.SYSFLAG_TRANSACTION_PREPARED else 0)]


def _delayed(i: int) -> cl.MessageRecord:
    level = i % 20  # 0..19: 19 is clamped to the last level, 0 means +1 s
    return cl.MessageRecord(
        topic="SCHEDULE_TOPIC_XXXX",
        queue_id=max(level - 1, 0),
        body=b"later",
        properties={"DELAY": str(level or 1), "REAL_TOPIC": "T", "REAL_QID": "0", "KEYS": f"d{i}", "TAGS": "TagD"},
    )


HEALTHY = {
    "ipv6-hosts": (lambda: [_ipv6(i) for i in range(60)], SMALL),
    "magic-v2-long-topic": (lambda: [_message(i, topic="L" * 200) if i % 3 == 0 else _message(i) for i in range(40)], SMALL),
    "transactions": (lambda: [m for i in range(30) for m in _transactions(i)], SMALL),
    "delayed": (lambda: [_delayed(i) for i in range(40)], SMALL),
    "crc32-property": (lambda: [_mixed(i) for i in range(50)], replace(SMALL, append_crc_property=True)),
    "preallocated-next-file": (lambda: [_message(i) for i in range(60)], replace(SMALL, preallocate_next=True)),
    "many-roll-overs": (lambda: [_mixed(i) for i in range(300)], replace(SMALL, commitlog_file_size=1024)),
    "mixed-ending-without-properties": (lambda: [_mixed(i) for i in range(35)], SMALL),
}


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_stores(tmp_path, name):
    messages, config = HEALTHY[name]
    _write_store(tmp_path / "store", messages(), config)
    assert_healthy(validate(tmp_path / "store"))


def test_healthy_store_details(tmp_path):
    """The stores above really have what their names say."""
    root = tmp_path / "ipv6"
    _write_store(root, HEALTHY["ipv6-hosts"][0](), SMALL)
    assert {r.record.store_host.is_ipv6 for r in _records(root)} == {True, False}
    root = tmp_path / "tx"
    _write_store(root, HEALTHY["transactions"][0](), SMALL)
    assert {r.record.transaction_type for r in _records(root)} == {"NOT", "PREPARED", "COMMIT", "ROLLBACK"}
    root = tmp_path / "v2"
    _write_store(root, HEALTHY["magic-v2-long-topic"][0](), SMALL)
    assert {r.record.magic_code for r in _records(root)} == {cl.MAGIC_V1, cl.MAGIC_V2}
    root = tmp_path / "pre"
    _write_store(root, HEALTHY["preallocated-next-file"][0](), HEALTHY["preallocated-next-file"][1])
    files = sorted((root / "commitlog").iterdir())
    assert len(files) == 4 and files[-1].read_bytes() == bytes(4096)
    root = tmp_path / "many"
    _write_store(root, HEALTHY["many-roll-overs"][0](), HEALTHY["many-roll-overs"][1])
    assert len(list((root / "commitlog").iterdir())) > 40
    root = tmp_path / "delay"
    results = _write_store(root, [_delayed(3)], SMALL)
    unit = cqf.decode_cq_unit((root / "consumequeue" / "SCHEDULE_TOPIC_XXXX" / "2" / segnames.rocketmq_file_name(0)).read_bytes())
    assert unit.tags_code == delivery_tags_code(results[0].store_timestamp, "3") != tags_code("TagD")
    root = tmp_path / "bare"
    _write_store(root, HEALTHY["mixed-ending-without-properties"][0](), SMALL)
    last = _records(root)[-1]
    assert last.record.properties == {} and last.path.read_bytes()[last.position + last.size - 1] == 0


def _damage_three_families(store: Store) -> Store:
    """One CommitLog error, one ConsumeQueue error, one index error, one warning (abort)."""
    rec = store.in_file(1)[7]
    flip(rec.path, rec.position + cl.body_position(0))
    path, pos = store.unit(1, 3)
    put(path, pos + 12, struct.pack(">q", 1))
    other = store.records[40]
    put(store.index, _entry_at(other), struct.pack(">i", index_key_hash(f"T#k{other.index}") ^ 16))
    (store.root / "abort").touch()
    return store


def test_store_without_messages_is_healthy(tmp_path):
    """A broker that started and took no message: all-zero (pre-allocated) CommitLog files."""
    root = tmp_path / "store"
    for sub in ("commitlog", "consumequeue", "index", "config"):
        (root / sub).mkdir(parents=True)
    files = [root / "commitlog" / segnames.rocketmq_file_name(base) for base in (0, 4096)]
    for path in files:
        path.write_bytes(bytes(4096))
    (root / "checkpoint").write_bytes(cpf.encode_checkpoint(cpf.Checkpoint(0, 0, 0)))
    report = validate(root)
    assert_healthy(report)
    assert (report.findings[0].path, report.findings[0].position) == (str(files[0]), 0)


def test_parallel_jobs_find_the_same(store):
    _damage_three_families(store)
    for root in (store.root, FIXTURES / "rocketmq-store"):
        one, two = validate(root, jobs=1), validate(root, jobs=2)
        assert set(one.findings) == set(two.findings) and len(one.findings) == len(two.findings)
        assert one.counts == two.counts
    assert validate(store.root, jobs=2).counts == {"error": 3, "warning": 1, "info": 1}


# --- real captures -------------------------------------------------------------------------------


def _levels(report: ValidationReport, *levels: Severity) -> list[str]:
    return sorted(f.code for f in report.findings if f.level in levels)


def test_real_pr3535_store_is_healthy():
    report = validate(real_path("rocketmq", "apache-rocketmq", "pr3535-4e25b979", "store"))
    assert _levels(report, Severity.error, Severity.warning) == []
    end, unindexed = report.findings
    assert (end.code, end.position) == ("RMQ-CL-VALID-END", 8084)
    # a unit test store's CommitLog alone: no index/, no checkpoint (messageIndexEnable=false)
    assert (unindexed.code, unindexed.level, unindexed.details["unindexed_records"]) == ("RMQ-IDX-MISSING", Severity.info, 47)


def test_real_shaoxubao_store_lacks_a_clean_shutdown_and_its_commitlog():
    """abort present, and a checkpoint saying records were flushed up to 2019 while the store holds
    no CommitLog (its unit test store's CommitLog lies in a directory of its own)."""
    root = real_path("rocketmq", "Shaoxubao-rocketmq-study", "store")
    report = validate(root)
    assert _levels(report, Severity.error, Severity.warning) == ["RMQ-ABORT", "RMQ-CHECKPOINT", "RMQ-CHECKPOINT"]
    assert [f.position for f in report.findings if f.code == "RMQ-CHECKPOINT"] == [0, 8]
    assert report.counts["info"] == len(report.findings) - 3


def test_real_crashed_store_shows_exactly_what_a_crash_leaves():
    """EricPanGopher's 4.2 ConsumeQueueTest store: zero-length last CommitLog file, a ConsumeQueue
    123 records behind, the abort file; its ConsumeQueue tagsCodes are ext addresses."""
    root = real_path("rocketmq", "EricPanGopher-rocketmq", "store", "unit_test_store")
    report = validate(root)
    assert _levels(report, Severity.error, Severity.warning) == ["RMQ-ABORT", "RMQ-CQ-LAG", "RMQ-FILE-ZERO-LENGTH"]
    by_code = {f.code: f for f in report.findings if f.level is not Severity.info}
    assert by_code["RMQ-FILE-ZERO-LENGTH"].path == str(root / "commitlog" / "00000000000000032768")
    assert by_code["RMQ-CQ-LAG"].details == {"missing_units": 123}
    assert by_code["RMQ-CQ-LAG"].path == str(root / "consumequeue" / "abc" / "0")
    ends = [(Path(f.path).name, f.position) for f in report.findings if f.code == "RMQ-CL-VALID-END"]
    assert ends == [("00000000000000024576", 6536)]


# --- every torn tail -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["truncate", "zero"])
def test_every_cut_inside_the_last_two_records(base_root, tmp_path, mode):
    """Cut the last file at every byte inside its last two records (truncate the file there, or
    keep its size and zero from there): always a torn tail at the start of the cut record, or a
    clean end there when no non-zero byte of it was written; never an exception, never an error
    (but the short file's size when truncated)."""
    store = _copy(base_root, tmp_path / "store")
    last_two = store.records[-2:]
    path = last_two[0].path
    original = path.read_bytes()
    options = ValidateOptions(checks=frozenset({"files", "commitlog"}))
    for cut in range(last_two[0].position, last_two[1].position + last_two[1].size):
        start = max(r.position for r in last_two if r.position <= cut)
        path.write_bytes(original[:cut] + (b"" if mode == "truncate" else bytes(len(original) - cut)))
        report = validate_rocketmq(store.root, options)
        written = len(original[start:cut].rstrip(b"\x00"))
        ends = [(f.code, f.position, f.length) for f in report.findings if f.code in ("RMQ-CL-TORN-TAIL", "RMQ-CL-VALID-END")]
        if written:
            assert ends == [("RMQ-CL-TORN-TAIL", start, written)], (cut, _describe(report.findings))
        else:
            assert ends == [("RMQ-CL-VALID-END", start, None)], (cut, _describe(report.findings))
        errors = [(f.code, f.position) for f in report.findings if f.level is Severity.error]
        assert errors == ([("RMQ-FILE-SIZE", cut)] if mode == "truncate" else []), (cut, _describe(report.findings))


# --- options and output -----------------------------------------------------------------------------


@pytest.fixture
def damaged(store) -> Store:
    return _damage_three_families(store)


def test_checks_limit_the_families(damaged):
    report = validate(damaged.root, checks=frozenset({"commitlog"}))
    assert {f.family for f in report.findings} == {"commitlog"}
    assert report.counts == {"error": 1, "warning": 0, "info": 1}
    report = validate(damaged.root, checks=frozenset({"consumequeue", "checkpoint"}))
    assert sorted(f.code for f in report.findings) == ["RMQ-ABORT", "RMQ-CQ-TAGS"]


def _cli(capsys, *args: str) -> tuple[int, str]:
    code = run(["validate", *args])
    return code, capsys.readouterr().out


def test_cli_checks_option(damaged, capsys):
    code, out = _cli(capsys, str(damaged.root), "--jobs", "1", "--json", "--checks", "index,checkpoint")
    doc = json.loads(out)
    assert code == 1
    assert sorted(f["code"] for f in doc["findings"]) == ["RMQ-ABORT", "RMQ-IDX-ENTRY"]
    assert doc["checks"] == ["checkpoint", "index"]


def test_cli_fail_on(store, capsys):
    (store.root / "abort").touch()
    assert _cli(capsys, str(store.root), "--jobs", "1")[0] == 0
    assert _cli(capsys, str(store.root), "--jobs", "1", "--fail-on", "warning")[0] == 1
    assert _cli(capsys, str(store.root), "--jobs", "1", "--fail-on", "info")[0] == 1
    (store.root / "abort").unlink()
    assert _cli(capsys, str(store.root), "--jobs", "1", "--fail-on", "warning")[0] == 0


def test_cli_max_findings(damaged, capsys):
    full = json.loads(_cli(capsys, str(damaged.root), "--jobs", "1", "--json")[1])
    code, out = _cli(capsys, str(damaged.root), "--jobs", "1", "--json", "--max-findings", "2")
    doc = json.loads(out)
    assert code == 1
    assert len(doc["findings"]) == 2 and doc["truncated"] is True and full["truncated"] is False
    assert doc["counts"] == full["counts"] == {"error": 3, "warning": 1, "info": 1}
    assert doc["findings"] == full["findings"][:2]


def test_cli_json_document(damaged, capsys):
    code, out = _cli(capsys, str(damaged.root), "--jobs", "1", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    assert {"ok", "counts", "files", "findings"} <= set(doc)
    crc = next(f for f in doc["findings"] if f["code"] == "RMQ-CL-BODY-CRC")
    rec = damaged.in_file(1)[7]
    assert (crc["path"], crc["position"], crc["severity"], crc["family"]) == (str(rec.path), rec.position + 8, "error", "commitlog")
    status = {f["path"]: f["status"] for f in doc["files"]}
    assert status[str(rec.path)] == "error" and status[str(damaged.cl(0))] == "ok"


def test_cli_json_healthy(store, capsys):
    code, out = _cli(capsys, str(store.root), "--jobs", "1", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True and doc["counts"] == {"error": 0, "warning": 0, "info": 1}


def test_cli_jsonl(damaged, capsys):
    code, out = _cli(capsys, str(damaged.root), "--jobs", "1", "--jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert sorted(r["code"] for r in rows) == ["RMQ-ABORT", "RMQ-CL-BODY-CRC", "RMQ-CL-VALID-END", "RMQ-CQ-TAGS", "RMQ-IDX-ENTRY"]


def test_cli_junit(damaged, capsys):
    report = json.loads(_cli(capsys, str(damaged.root), "--jobs", "1", "--json")[1])
    code, out = _cli(capsys, str(damaged.root), "--jobs", "1", "--format", "junit")
    assert code == 1
    tree = ET.fromstring(out)
    failed = {case.get("name") for case in tree.iter("testcase") if case.find("failure") is not None}
    error_files = {os.path.relpath(f["path"], damaged.root) for f in report["findings"] if f["severity"] == "error"}
    assert failed == error_files and len(failed) == 3
    assert sum(int(s.get("failures")) for s in tree.iter("testsuite")) == 3
    assert len(list(tree.iter("testcase"))) >= len(report["files"])


def test_cli_exit_codes(store, tmp_path, capsys):
    assert _cli(capsys, str(store.root), "--jobs", "1")[0] == 0
    flip(store.records[5].path, store.records[5].position + cl.body_position(0))
    assert _cli(capsys, str(store.root), "--jobs", "1")[0] == 1
    (tmp_path / "empty").mkdir()
    assert _cli(capsys, str(tmp_path / "empty"))[0] == 3
    assert _cli(capsys, str(tmp_path / "missing"))[0] == 3
    (store.root / "consumequeue" / "CURRENT").write_text("MANIFEST-000001\n")  # a RocksDB ConsumeQueue that does not open
    assert _cli(capsys, str(store.root), "--jobs", "1")[0] == (1 if importlib.util.find_spec("rocksdict") else 4)


# --- hostile input -----------------------------------------------------------------------------------

HOSTILE = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@HOSTILE
@given(data=st.binary(max_size=4096), which=st.integers(0, 2), keep_size=st.booleans())
def test_random_commitlog_files(base_root, tmp_path_factory, data, which, keep_size):
    store = _copy(base_root, tmp_path_factory.mktemp("hostile") / "store")
    store.cl(which).write_bytes(data + bytes(4096 - len(data)) if keep_size else data)
    report = validate(store.root)
    assert isinstance(report, ValidationReport)


@HOSTILE
@given(data=st.binary(max_size=400), queue_id=st.integers(0, 1), queue_offset=st.sampled_from([0, 10, 20]))
def test_random_consume_queue_files(base_root, tmp_path_factory, data, queue_id, queue_offset):
    store = _copy(base_root, tmp_path_factory.mktemp("hostile") / "store")
    store.unit(queue_id, queue_offset)[0].write_bytes(data)
    report = validate(store.root)
    assert isinstance(report, ValidationReport)


@HOSTILE
@given(
    flips=st.lists(
        st.tuples(st.integers(0, 59), st.integers(0, BODY_SIZE - 1), st.integers(1, 255)), min_size=1, max_size=8, unique_by=lambda t: t[:2]
    )
)
def test_random_body_flips_are_each_reported_once(base_root, tmp_path_factory, flips):
    """Flipped body bytes: exactly one RMQ-CL-BODY-CRC per damaged record, at its BODYCRC, and
    nothing else at warning or error level (adjacent broken records, the last record, queues,
    index and checkpoint included)."""
    store = _copy(base_root, tmp_path_factory.mktemp("hostile") / "store")
    for index, at, mask in flips:
        rec = store.records[index]
        flip(rec.path, rec.position + cl.body_position(0) + at, mask)
    damaged = sorted({index for index, _, _ in flips})
    expect(validate(store.root), *(("RMQ-CL-BODY-CRC", store.records[i].path, store.records[i].position + 8) for i in damaged))

