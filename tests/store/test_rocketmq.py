"""The RocketMQ store model: topic names read from damaged bytes never become paths."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.formats.rocketmq.config import encode_fastjson
from mqtool.store import rocketmq as rmq
from mqtool.store.writer import StoreWriter, WriterConfig

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


# --- ConsumeQueue file size ---------------------------------------------------------------------


def _segs(*sizes: int) -> list[rmq.Segment]:
    return [rmq.Segment(Path(f"{i:020d}"), i, size, 0.0) for i, size in enumerate(sizes)]


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
