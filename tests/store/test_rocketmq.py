"""The RocketMQ store model: topic names read from damaged bytes never become paths."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.errors import TruncatedDataError, UnsupportedFormatError
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.config import encode_fastjson
from mqtool.store import rocketmq as rmq
from tests.conftest import FIXTURES
from mqtool.store.model.commitlog_walk import FileRecords
from mqtool.store.writer import StoreWriter, WriterConfig
from mqtool.formats import segment_names as segnames

SMALL = WriterConfig(commitlog_file_size=4096, cq_file_size=200, index_hash_slot_num=16, index_num=64, index_tz=dt.timezone.utc)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(list(argv))
    return code, out.getvalue(), err.getvalue()


def _store(root: Path, topic: str = "ab", n: int = 5) -> Path:
    with StoreWriter(root, SMALL, clock=iter(range(1_700_000_000_000, 1_800_000_000_000, 10)).__next__) as w:
        for i in range(n):
            w.append(cl.MessageRecord(topic=topic, body=f"m{i}".encode(), properties={"KEYS": f"k{i}"}, queue_id=0))
    return root


@pytest.mark.parametrize("topic", ["TopicTest", "%RETRY%g1", "OrderEvents." + "x" * 130, "日本語"])
def test_topic_dir_names_accepted(topic):
    assert rmq.is_topic_dir_name(topic)


@pytest.mark.parametrize("topic", ["", ".", "..", "a/b", "../../etc", "a\0b", "x" * 256, "é" * 128])
def test_topic_dir_names_refused(tmp_path, topic):
    assert not rmq.is_topic_dir_name(topic)
    store = rmq.open_store(_store(tmp_path / "s"))
    assert store.cq_segments(topic, 0) == []  # no OS error, no path outside consumequeue/


def test_config_topic_with_nul_is_not_an_internal_error(tmp_path):
    """Found by the fuzz campaign: a NUL in a consumerOffset.json topic made clean crash."""
    root = _store(tmp_path / "s")
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "consumerOffset.json").write_text(encode_fastjson({"offsetTable": {"a\0b@g": {0: 1}, "ab@g": {0: 2}}}))
    for argv in (("clean", str(root), "--protect-unconsumed", "--json"), ("validate", str(root), "--json"), ("info", str(root), "--json")):
        code, _, err = _cli(*argv)
        assert code in (0, 1), (argv, err)


def test_record_topic_dotdot_never_creates_a_directory(tmp_path):
    """A record whose topic bytes read ``..``: recover plans no queue for it, applies nothing outside."""
    root = _store(tmp_path / "s")
    seg = root / "commitlog" / "00000000000000000000"
    data = bytearray(seg.read_bytes())
    rec = cl.decode_message(bytes(data), 0)
    topic_at = data.index(b"\x02ab", 0, rec.total_size) + 1
    data[topic_at : topic_at + 2] = b".."
    seg.write_bytes(bytes(data))
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    code, out, err = _cli("recover", str(root), "--json")
    assert code in (0, 1), err
    plan = json.loads(out)
    assert all("/../" not in json.dumps(step) for step in plan["steps"])
    code, _, err = _cli("recover", str(root), "--apply", "--force")
    assert code in (0, 1, 3), err
    after = sorted(p.relative_to(root) for p in root.rglob("*"))
    created = set(after) - set(before)
    assert not any(p.parts[0] not in ("consumequeue", "index", "checkpoint", ".mqtool-quarantine", "abort") for p in created), created
    assert not (root / "0").exists()


def test_torn_tail_at_tells_a_crash_from_damage(tmp_path):
    root = _store(tmp_path / "s", n=3)
    seg = sorted((root / "commitlog").iterdir())[0]
    clean = seg.read_bytes()
    with rmq.ReadOnlyFile(seg) as f:
        records = list(FileRecords(f))
    pos, rec = records[-1]
    end = pos + rec.total_size
    # the last record's second half never written (zeros): a torn tail
    seg.write_bytes(clean[: pos + rec.total_size // 2] + bytes(len(clean) - pos - rec.total_size // 2))
    with rmq.ReadOnlyFile(seg) as f:
        torn = rmq.torn_tail_at(f, pos, 4096)
    assert torn is not None and (torn.position, torn.total) == (pos, rec.total_size) and pos < torn.stop <= pos + rec.total_size // 2
    # written whole with one byte flipped: damage, not a torn tail
    data = bytearray(clean)
    data[pos + cl.body_position(0)] ^= 0x01
    seg.write_bytes(bytes(data))
    with rmq.ReadOnlyFile(seg) as f:
        assert rmq.torn_tail_at(f, pos, 4096) is None
    # other bytes after the record: not a torn tail either
    data = bytearray(clean[: pos + rec.total_size // 2] + bytes(len(clean) - pos - rec.total_size // 2))
    data[end + 10] = 0x55
    seg.write_bytes(bytes(data))
    with rmq.ReadOnlyFile(seg) as f:
        assert rmq.torn_tail_at(f, pos, 4096) is None


def test_index_files_and_queue_dirs_never_follow_links_or_open_special_files(tmp_path):
    """Like CommitLog and ConsumeQueue files: a symbolic link (wherever it leads, in the store or
    out of it) is never followed and a FIFO or device is never opened; both are listed apart."""
    import os

    root = _store(tmp_path / "s")
    (index,) = rmq.open_store(root).index_files()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "20991231235959999").write_bytes(index.read_bytes())
    (root / "index" / "20991231235959999").symlink_to(outside / "20991231235959999")
    (root / "index" / "20000101000000000").symlink_to(index.name)  # inside the store: not followed either
    os.mkfifo(root / "index" / "20991231235959998")
    (root / "index" / "sub").mkdir()
    topic = root / "consumequeue" / "ab"
    (topic / "7").symlink_to("../..")
    (topic / "8").symlink_to(topic / "0")  # a real queue directory behind it: still not followed
    os.mkfifo(topic / "9")
    (root / "consumequeue" / "cd").symlink_to(topic)
    store = rmq.open_store(root)
    assert store.index_files() == [index]
    assert store.irregular_index_files() == [
        (root / "index" / "20000101000000000", "a symlink"),
        (root / "index" / "20991231235959998", "a FIFO"),
        (root / "index" / "20991231235959999", "a symlink"),
        (root / "index" / "sub", "a directory"),
    ]
    assert store.queues() == [("ab", 0)]
    assert store.irregular_queue_dirs() == [(topic / "7", "a symlink"), (topic / "8", "a symlink"), (topic / "9", "a FIFO"), (root / "consumequeue" / "cd", "a symlink")]
    assert store.cq_segments("ab", 0) and store.cq_segments("ab", 8) == [] and store.cq_segments("cd", 0) == [] and store.cq_segments("ab", 7) == []
    assert rmq.list_index_files(root / "index") == [index]


def _torn_copy(tmp_path: Path) -> tuple[Path, Path, int, int]:
    """The fixture with the newest record's bytes after its first 100 zeroed (a torn write)."""
    import shutil

    from mqtool.store.files import ReadOnlyFile
    from tests.conftest import FIXTURES

    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    path = rmq.open_store(root).commitlog[-1].path
    with ReadOnlyFile(path) as f:
        positions = [(p, r.total_size) for p, r in FileRecords(f)]
    position, total = positions[-1]
    data = bytearray(path.read_bytes())
    data[position + 100 : position + total] = bytes(total - 100)
    path.write_bytes(bytes(data))
    return root, path, position, total


def test_torn_tail_ends_the_walk_of_the_newest_file_only(tmp_path):
    from mqtool.store.files import ReadOnlyFile

    _, path, position, total = _torn_copy(tmp_path)
    with ReadOnlyFile(path) as f:
        torn = rmq.torn_tail_at(f, position, f.size)
        assert (torn.position, torn.total, torn.stop) == (position, total, position + 100)
        walk = FileRecords(f, last=True)
        records = list(walk)
        assert walk.error is None and (walk.end.kind, walk.end.position, walk.end.length) == ("torn", position, total)
        assert walk.valid_end == position and walk.torn == torn
        older = FileRecords(f)  # not known to be the newest file: damage, as before
        assert len(list(older)) == len(records) and older.error is not None and older.failed_at == position


def test_torn_tail_is_not_a_whole_record_with_a_bad_body(tmp_path):
    from mqtool.store.files import ReadOnlyFile

    _, path, position, total = _torn_copy(tmp_path)
    data = bytearray(path.read_bytes())
    data[position + total - 1] = 0x02  # its last byte is on disk: written whole, the zeros are damage
    path.write_bytes(bytes(data))
    with ReadOnlyFile(path) as f:
        assert rmq.torn_tail_at(f, position, f.size) is None
        walk = FileRecords(f, last=True)
        list(walk)
        assert walk.error is not None and walk.end is None


def test_a_decodable_last_record_with_a_zero_tail_is_a_torn_tail(tmp_path):
    """The newest record's last properties bytes never written: it decodes (only the body has a
    CRC) but ends in zeros; the walk of the newest file ends there as validate's does, without
    yielding it, and a walk not told it is the newest file reads it."""
    import shutil

    from mqtool.store.files import ReadOnlyFile
    from tests.conftest import FIXTURES

    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    path = rmq.open_store(root).commitlog[-1].path
    with ReadOnlyFile(path) as f:
        records = list(FileRecords(f))
    position, rec = records[-1]
    data = bytearray(path.read_bytes())
    data[position + rec.total_size - 5 : position + rec.total_size] = bytes(5)
    path.write_bytes(bytes(data))
    with ReadOnlyFile(path) as f:
        assert len(list(FileRecords(f))) == len(records)  # it decodes
        walk = FileRecords(f, last=True)
        assert [p for p, _ in walk] == [p for p, _ in records[:-1]]
        assert walk.error is None and (walk.end.kind, walk.end.position, walk.end.length) == ("torn", position, rec.total_size)
        assert walk.torn is not None and walk.torn.stop == position + rec.total_size - 5
    code, out, _ = _cli("validate", str(root), "--jsonl")
    first = json.loads(out.splitlines()[0])
    assert (first["code"], first["position"]) == ("RMQ-CL-TORN-TAIL", position)


def test_active_file_skips_preallocated_zero_files(tmp_path):
    root, path, _, _ = _torn_copy(tmp_path)
    segments = rmq.open_store(root).commitlog
    assert rmq.active_file_index(segments) == len(segments) - 1
    nxt = path.parent / segnames.rocketmq_file_name(int(path.name) + path.stat().st_size)
    nxt.write_bytes(bytes(path.stat().st_size))  # the broker's pre-allocated next file
    segments = rmq.open_store(root).commitlog
    assert segments[-1].path == nxt and rmq.active_file_index(segments) == len(segments) - 2


@pytest.mark.parametrize("command", [["dump", "commitlog"], ["info"], ["stats"]])
def test_readers_call_a_torn_tail_what_validate_calls_it(tmp_path, command):
    root, path, position, _ = _torn_copy(tmp_path)
    code, _, err = _cli(*command, str(root))
    assert code == 0 and "CRC" not in err  # it was a body CRC error, exit 1
    code, out, _ = _cli("validate", str(root), "--jsonl")
    assert code == 0 and json.loads(out.splitlines()[0])["code"] == "RMQ-CL-TORN-TAIL"


# --- ConsumeQueue file size ---------------------------------------------------------------------


def _segs(*sizes: int) -> list[rmq.Segment]:
    return [rmq.Segment(Path(segnames.rocketmq_file_name(i)), i, size, 0.0) for i, size in enumerate(sizes)]


@pytest.mark.parametrize(
    "sizes, expected",
    [
        ((1000,) * 12 + (500,), 1000),  # a queue's only file cut short is outvoted by the store
        ((1000,) * 12 + (990,), 1000),
        ((1000, 500), 1000),  # a tie: the larger (damage cuts files short, never grows them)
        ((500, 1000), 1000),
        ((200, 200, 0, 1000), 200),  # zero-length files say nothing
        ((990, 990, 1000), 1000),  # sizes of partial units are no candidates
        ((6_000_000,), 6_000_000),
    ],
)
def test_common_cq_file_size(sizes, expected):
    assert rmq.common_cq_file_size(_segs(*sizes)) == expected
    assert rmq.detect_cq_file_size(_segs(*sizes)) == expected


@pytest.mark.parametrize("sizes", [(), (0,), (990,), (990, 10)])
def test_cq_file_size_without_evidence(sizes):
    assert rmq.common_cq_file_size(_segs(*sizes)) is None
    assert rmq.detect_cq_file_size(iter(_segs(*sizes))) == rmq.DEFAULT_CQ_FILE_SIZE == 300_000 * 20


# --- IndexFileView: the geometry from the file's own bytes ------------------------------------


def _index_of(tmp_path: Path, slots: int, num: int, messages: int = 12) -> Path:
    config = WriterConfig(commitlog_file_size=4096, cq_file_size=200, index_hash_slot_num=slots, index_num=num, index_tz=dt.timezone.utc)
    with StoreWriter(tmp_path / "store", config) as writer:
        for i in range(messages):
            writer.append(cl.MessageRecord(topic="T", body=b"x" * 10, properties={"KEYS": f"k{i}"}))
    (path,) = (tmp_path / "store" / "index").iterdir()
    return path


def test_index_view_reads_the_geometry_from_the_file(tmp_path):
    path = _index_of(tmp_path, 500, 3000)
    with rmq.IndexFileView(path) as view:
        assert view.geometry == idxf.IndexGeometry(500, 3000) and view.header.index_count == 13
    # explicit values win, and a length they do not fit stays an error located in the file
    with rmq.IndexFileView(path, hash_slot_num=505, index_num=2999) as view:
        assert view.geometry == idxf.IndexGeometry(505, 2999)
    with pytest.raises(TruncatedDataError) as info:
        rmq.IndexFileView(path, hash_slot_num=500, index_num=3001)
    assert info.value.path == str(path)


def test_index_view_of_an_empty_file_of_unlisted_size_asks_for_the_geometry(tmp_path):
    path = tmp_path / "20240101000000000"
    path.write_bytes(bytes(idxf.index_file_size(500, 3000)))
    with pytest.raises(UnsupportedFormatError, match="--index-hash-slots N --index-num N"):
        rmq.IndexFileView(path)
    with rmq.IndexFileView(path, hash_slot_num=500) as view:
        assert view.geometry == idxf.IndexGeometry(500, 3000)


def test_a_chunk_cut_inside_a_record_header_is_not_the_end_of_data() -> None:
    """A read chunk that ends 1..7 bytes into a record header whose bytes so far are zero (the
    high bytes of TOTALSIZE) is not a zero tail: every reader reads on and sees every record, and
    validate's report does not depend on where its chunks end."""
    from mqtool.ops.validate import ValidateOptions
    from mqtool.ops.validate.rocketmq import validate_rocketmq
    from mqtool.store.files import ReadOnlyFile, read_in_pieces

    store = rmq.open_store(FIXTURES / "rocketmq-store")
    seg = store.commitlog[0]
    with ReadOnlyFile(seg.path) as f:
        whole = [pos for pos, _ in FileRecords(f)]
        cuts = [pos + k for pos in whole[1:6] for k in (1, 2, 3)]
        for chunk in cuts:
            walk = FileRecords(f, piece=chunk)
            assert [pos for pos, _ in walk] == whole, chunk
            assert walk.end is not None and walk.end.kind == "blank"
    baseline = validate_rocketmq(FIXTURES / "rocketmq-store", ValidateOptions()).to_dict()
    for chunk in cuts[:3]:
        with read_in_pieces(chunk):
            for fast in (True, False):
                assert validate_rocketmq(FIXTURES / "rocketmq-store", ValidateOptions(fast=fast)).to_dict() == baseline, (chunk, fast)
