"""The Kafka store model: detection, listing, the chunked walkers, index lookups and the writer."""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import txn_index as ktxn
from mqtool.formats.kafka.log import LogWalker
from mqtool.layouts import detect_layout
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile
from mqtool.store.kafka_writer import LogDirWriter, PartitionConfig, PartitionWriter
from tests.conftest import FIXTURES, REAL_ROOT

LOGS = FIXTURES / "kafka-logs"


def small_batch(n: int = 2, size: int = 40, ts: int = 1_700_000_000_000) -> rb.RecordBatch:
    records = [rb.Record(offset_delta=i, timestamp_delta=i, key=b"k%d" % i, value=bytes(size)) for i in range(n)]
    return rb.build_batch(records, base_timestamp=ts)


# --- detection ----------------------------------------------------------------------------------


def test_detects_log_dir_partition_and_files():
    assert ks.is_kafka_path(LOGS) and ks.is_log_dir(LOGS)
    assert ks.is_kafka_path(LOGS / "orders-0") and ks.is_partition_dir(LOGS / "orders-0")
    assert ks.is_kafka_path(LOGS / "orders-0" / "00000000000000000000.log")
    assert ks.is_kafka_path(LOGS / "orders-0" / "00000000000000000000.index")
    assert ks.is_kafka_path(LOGS / "orders-0" / "leader-epoch-checkpoint")
    assert ks.is_kafka_path(LOGS / "recovery-point-offset-checkpoint")
    assert ks.is_kafka_path(LOGS / "__cluster_metadata-0" / "00000000000000000003-0000000001.checkpoint")
    for path in (LOGS, LOGS / "events-0", LOGS / "events-0" / "00000000000000000000.log"):
        assert detect_layout(path) == "kafka"


def test_other_layouts_are_not_kafka(tmp_path):
    assert not ks.is_kafka_path(FIXTURES / "rocketmq-store")
    assert detect_layout(FIXTURES / "rocketmq-store") == "rocketmq"
    jafka = tmp_path / "data" / "topic-0"
    jafka.mkdir(parents=True)
    (jafka / "00000000000000000000.jafka").write_bytes(b"")
    metaq = tmp_path / "meta" / "topic-1"
    metaq.mkdir(parents=True)
    (metaq / "00000000000000000000.meta").write_bytes(b"")
    for path in (tmp_path / "data", jafka, tmp_path / "meta", metaq, tmp_path):
        assert not ks.is_kafka_path(path), path
    (tmp_path / "carved.records").write_bytes(rb.encode_batch(small_batch()))
    assert not ks.is_kafka_path(tmp_path / "carved.records")  # needs --layout kafka
    assert detect_layout(tmp_path / "carved.records", "kafka") == "kafka"


def test_open_log_dir_model():
    store = ks.open_kafka(LOGS)
    assert store.kind == "log-dir" and store.log_dir == LOGS
    names = [p.name for p in store.partitions]
    assert names == ["__cluster_metadata-0", "__consumer_offsets-0", "__transaction_state-0", "events-0", "legacy-0", "orders-0", "orders-1"]
    orders = store.find_partition("orders", 0)
    assert [s.base_offset for s in orders.segments] == [0, 30, 60, 90]
    assert all(s.log and s.index and s.timeindex for s in orders.segments)
    assert [s.offset for s in orders.snapshots] == [30, 60, 90, 110]
    assert orders.leader_epoch_checkpoint and orders.partition_metadata
    events = store.find_partition("events", None)
    assert events.segments[0].txnindex is not None and events.segments[1].txnindex is None
    metadata = store.find_partition("__cluster_metadata", 0)
    assert metadata.quorum_state is not None and [p.name for p in metadata.kraft_snapshots] == ["00000000000000000003-0000000001.checkpoint"]
    assert metadata.internal_topic == "__cluster_metadata"
    assert store.log_dir_file("bootstrap.checkpoint") is not None
    with pytest.raises(Exception, match="one partition matching"):
        store.find_partition("orders", None)


def test_open_partition_and_segment(tmp_path):
    part = ks.open_kafka(LOGS / "orders-1")
    assert part.kind == "partition" and part.log_dir == LOGS and part.partitions[0].key == ("orders", 1)
    seg = ks.open_kafka(LOGS / "orders-1" / "00000000000000000024.log")
    assert seg.kind == "segment" and seg.log_dir == LOGS
    (s,) = seg.partitions[0].segments
    assert s.base_offset == 24 and s.index is not None and s.named
    lone = tmp_path / "x.records"
    lone.write_bytes(b"")
    (s,) = ks.open_kafka(lone).partitions[0].segments
    assert s.base_offset == 0 and not s.named and s.index is None
    with pytest.raises(Exception, match="dump kafka"):
        ks.open_kafka(LOGS / "orders-1" / "00000000000000000024.index")


def test_listing_classifies_leftovers_and_unknown_files(tmp_path):
    root = tmp_path / "logs"
    shutil.copytree(LOGS, root)
    part = root / "orders-0"
    for name in ("00000000000000000030.log.deleted", "00000000000000000000.index.swap", "00000000000000000090.log.cleaned"):
        (part / name).write_bytes(b"")
    (part / "notes.txt").write_text("hi")
    (part / "sub").mkdir()
    (root / "recovery-point-offset-checkpoint.tmp").write_text("0\n0\n")
    (root / "backup").mkdir()
    (root / "README").write_text("x")
    store = ks.open_kafka(root)
    p = store.find_partition("orders", 0)
    assert sorted(x.name for x in p.leftovers) == ["00000000000000000000.index.swap", "00000000000000000030.log.deleted", "00000000000000000090.log.cleaned"]
    assert sorted(x.name for x in p.unexpected) == ["notes.txt", "sub"]
    assert [x.name for x in store.leftovers] == ["recovery-point-offset-checkpoint.tmp"]
    assert [x.name for x in store.other_dirs] == ["backup"] and [x.name for x in store.unexpected] == ["README"]


# --- LogFileWalk ---------------------------------------------------------------------------------


def _segment_bytes() -> bytes:
    return (LOGS / "orders-0" / "00000000000000000000.log").read_bytes()


@pytest.mark.parametrize("chunk", [64, 100, 999, 1 << 20])
def test_log_walk_chunks_see_every_entry(tmp_path, chunk):
    data = _segment_bytes()
    expected = [(e.position, e.offset, e.size) for e in LogWalker(data, mode="header")]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    with ReadOnlyFile(path) as f:
        walk = ks.LogFileWalk(f, chunk=chunk)
        got = [(pos, e.offset, e.size) for pos, e in walk]
        assert walk.buffer_start <= got[-1][0]
    assert got == expected and walk.end.kind == "eof" and walk.end.position == len(data)


def test_log_walk_ends(tmp_path):
    data = _segment_bytes()
    last = list(LogWalker(data))[-1]
    path = tmp_path / "x.log"
    cases = {
        "zeros": (data + bytes(5000), "zeros", len(data)),
        "partial": (data[: last.position + 30], "partial", last.position),
        "short": (data + b"\x01\x02", "partial", len(data)),
    }
    for name, (content, kind, position) in cases.items():
        path.write_bytes(content)
        with ReadOnlyFile(path) as f:
            walk = ks.LogFileWalk(f, chunk=512)
            list(walk)
        assert (walk.end.kind, walk.end.position) == (kind, position), name
    path.write_bytes(data + bytes(3000) + b"\x07" * 10 + bytes(100))
    with ReadOnlyFile(path) as f:
        walk = ks.LogFileWalk(f, chunk=1024)
        list(walk)
    assert walk.end.kind == "zeros" and walk.garbage_after_zeros == (len(data) + 3000, len(data) + 3010)


def test_log_walk_limit_and_hostile_size(tmp_path):
    data = _segment_bytes()
    entries = list(LogWalker(data))
    path = tmp_path / "x.log"
    path.write_bytes(data)
    cut = entries[3].position + 10
    with ReadOnlyFile(path) as f:
        walk = ks.LogFileWalk(f, limit=cut)
        assert [pos for pos, _ in walk] == [e.position for e in entries[:3]]
    assert walk.end.kind == "eof" and walk.end.position == entries[3].position and walk.limited
    huge = bytearray(data)
    huge[8:12] = (200 << 20).to_bytes(4, "big")  # a 200 MiB entry claimed...
    path.write_bytes(bytes(huge))
    os.truncate(path, len(huge) + (201 << 20))  # ...and present (sparse zeros)
    with ReadOnlyFile(path) as f:
        walk = ks.LogFileWalk(f, chunk=4096)
        assert list(walk) == []
    assert walk.error is not None and walk.failed_at == 0 and "at most" in str(walk.error)


@pytest.mark.parametrize("first", [None, 512, 4096])
@pytest.mark.parametrize("chunk", [2048, 8192, 65536])
def test_an_entry_larger_than_mqtool_reads_is_found_where_it_is(tmp_path, chunk, first):
    """A size field claiming more than mqtool reads, in the middle of a file: the walk stops at it
    with the size error where its header is in hand, not reading the file again from it (its next
    read is not the file's last: else the entry is cut by the end of the file, as before)."""
    from mqtool.store.files import observe_reads

    batches = [rb.encode_batch(rb.build_batch([rb.Record(offset_delta=0, timestamp_delta=0, key=b"k", value=bytes(300))], base_offset=i)) for i in range(400)]
    data = bytearray(b"".join(batches))
    at = sum(len(b) for b in batches[:150])
    data[at + 8 : at + 12] = (200 << 20).to_bytes(4, "big")
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    reads: list[tuple[int, int]] = []
    with observe_reads(lambda _path, pos, got: reads.append((pos, len(got)))), ReadOnlyFile(path) as f:
        walk = ks.LogFileWalk(f, chunk=chunk, first_piece=first)
        assert len(list(walk)) == 150
    assert walk.failed_at == at and walk.error is not None and walk.error.position == at + 8
    assert "at most" in str(walk.error) and "not a torn write" not in str(walk.error)
    pos, n = reads[-1]  # the walk's last read is the first that holds the entry's header
    assert pos <= at and at + 17 <= pos + n and not any(p <= at and at + 17 <= p + m for p, m in reads[:-1]), reads[-3:]


def test_read_entry_at():
    with ReadOnlyFile(LOGS / "orders-0" / "00000000000000000000.log") as f:
        e = ks.read_entry_at(f, 165, mode="full")
        assert e.header.base_offset == 1 and len(e.records) == 2
        with pytest.raises(Exception) as info:
            ks.read_entry_at(f, 166)
        assert str(info.value).startswith(str(f.path) + ":")


# --- IndexFileWalk and lookups ------------------------------------------------------------------


@settings(max_examples=40)
@given(
    count=st.integers(0, 60),
    zeros=st.integers(0, 30),
    chunk_entries=st.integers(2, 9),
    kind=st.sampled_from(["index", "timeindex"]),
)
def test_index_walk_in_chunks_matches_whole_file(tmp_path_factory, count, zeros, chunk_entries, kind):
    base = 1000
    if kind == "index":
        data = kidx.encode_offset_index([kidx.OffsetPosition(base + 3 * i + 1, 100 * i + 50) for i in range(count)], base)
        data += bytes(8 * zeros)
        whole = kidx.OffsetIndexWalker(data, base)
        size = 8
    else:
        data = kidx.encode_time_index([kidx.TimestampOffset(10 * i + 5, base + i) for i in range(count)], base)
        data += bytes(12 * zeros)
        whole = kidx.TimeIndexWalker(data, base)
        size = 12
    expected = list(whole)
    path = tmp_path_factory.mktemp("idx") / f"x.{kind}"
    path.write_bytes(data)
    with ReadOnlyFile(path) as f:
        walk = ks.IndexFileWalk(f, kind, base, chunk=size * chunk_entries)
        got = list(walk)
    assert got == expected
    if data:
        assert (walk.end.kind, walk.end.position) == (whole.end.kind, whole.end.position)


def test_index_walk_reports_order_errors_with_file_positions(tmp_path):
    entries = [kidx.OffsetPosition(10 + i, 100 * (i + 1)) for i in range(20)]
    data = bytearray(kidx.encode_offset_index(entries, 0))
    data[8 * 13 : 8 * 14] = kidx.encode_offset_entry(kidx.OffsetPosition(5, 50), 0)
    path = tmp_path / "0.index"
    path.write_bytes(bytes(data))
    with ReadOnlyFile(path) as f:
        walk = ks.IndexFileWalk(f, "index", 0, chunk=8 * 4)
        assert len(list(walk)) == 13
    assert walk.error is not None and walk.error.position == 8 * 13 and walk.error.path == str(path)


def test_txn_index_walk(tmp_path):
    entries = [ktxn.AbortedTxn(7, 10 * i, 10 * i + 5, 10 * i + 6) for i in range(1, 9)]
    path = tmp_path / "0.txnindex"
    path.write_bytes(ktxn.encode_txn_index(entries) + b"\x00\x01")
    with ReadOnlyFile(path) as f:
        walk = ks.IndexFileWalk(f, "txnindex", 0, chunk=34 * 3)
        assert [e for _, e in walk] == entries
    assert walk.end.kind == "partial" and walk.end.position == 34 * 8


def test_lookups_match_the_formats_functions():
    seg = ks.list_partition(LOGS / "orders-0").segments[1]
    buf = seg.index.read_bytes()
    tbuf = seg.timeindex.read_bytes()
    for target in range(seg.base_offset - 2, seg.base_offset + 40):
        entry, slot = ks.lookup_offset(seg.index, seg.base_offset, target)
        assert entry == kidx.lookup_offset(buf, seg.base_offset, target)
        assert (slot == -1) == (entry.position == 0)
    for ts in (0, 1_700_000_000_900, 1_700_000_001_200, 1 << 62):
        entry, _slot = ks.lookup_timestamp(seg.timeindex, seg.base_offset, ts)
        assert entry == kidx.lookup_timestamp(tbuf, seg.base_offset, ts)
    assert ks.last_time_entry(seg.timeindex, seg.base_offset) == kidx.last_time_entry(tbuf, seg.base_offset)
    assert ks.lookup_offset(None, 5, 9) == (kidx.OffsetPosition(5, 0), -1)


def test_index_count_skips_zero_tail(tmp_path):
    path = tmp_path / "x.index"
    path.write_bytes(kidx.encode_offset_index([kidx.OffsetPosition(3, 100), kidx.OffsetPosition(7, 300)], 0, size=8000))
    with ReadOnlyFile(path) as f:
        assert ks.index_entry_count(f, 8) == 2
    assert ks.lookup_offset(path, 0, 1_000_000)[0] == kidx.OffsetPosition(7, 300)


# --- the writer --------------------------------------------------------------------------------


def test_writer_rolls_and_indexes_like_the_append_path(tmp_path):
    w = PartitionWriter(tmp_path / "t-0", PartitionConfig(segment_bytes=1000, index_interval_bytes=200))
    for i in range(12):
        w.append(small_batch(2, 60, 1_700_000_000_000 + i))
    w.append([small_batch(1, 10), small_batch(1, 10), small_batch(1, 10)])  # one follower fetch
    w.close()
    part = ks.list_partition(tmp_path / "t-0")
    assert len(part.segments) > 2 and part.segments[0].base_offset == 0
    for seg in part.segments:
        data = seg.log.read_bytes()
        assert len(data) <= 1000
        entries = {e.position: e for e in LogWalker(data)}
        index = kidx.decode_offset_index(seg.index.read_bytes(), seg.base_offset).entries
        assert all(e.position > 0 and e.position in entries for e in index)  # never position 0
        times = kidx.decode_time_index(seg.timeindex.read_bytes(), seg.base_offset).entries
        assert times and times[-1].timestamp == max(e.header.max_timestamp for e in entries.values())
    assert w.next_offset == 27


def test_fixture_is_what_its_generator_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("generate_kafka", FIXTURES / "generate_kafka.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build_kafka_logs(tmp_path / "kafka-logs")

    def listing(root: Path) -> dict:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    assert listing(tmp_path / "kafka-logs") == listing(LOGS)
    assert sum(len(v) for v in listing(LOGS).values()) < 300 * 1024


def test_real_capture_detection():
    root = REAL_ROOT / "kafka"
    if not root.exists():
        pytest.skip("real fixtures not available")
    assert detect_layout(root / "DonaldY-kafka-2.7.1" / "kafka-logs") == "kafka"
    assert detect_layout(root / "Jeong-Rae-KafkaDemo" / "kraft-combined-logs" / "__cluster_metadata-0") == "kafka"
    assert detect_layout(root / "asayers-kafkalite" / "tests" / "test-data" / "fs-data") == "kafka"
    zero_index = root / "apache-kafka" / "904af08e24" / "core" / "data" / "kafka-573957" / "test-topic-1"
    assert ks.open_kafka(zero_index).partitions[0].segments[0].index_size == 1 << 20
    assert not ks.is_kafka_path(root / "apache-kafka" / "642da2f28c" / "core" / "src" / "test" / "resources" / "test-kafka-logs")


def test_log_dir_writer_checkpoints(tmp_path):
    w = LogDirWriter(tmp_path / "logs")
    p = w.partition("a", 0, PartitionConfig())
    p.append(small_batch())
    p.log_start_offset = 1
    w.close(clean=True, broker_epoch=3)
    names = sorted(os.listdir(tmp_path / "logs"))
    assert names == [
        ".kafka_cleanshutdown", ".lock", "a-0", "cleaner-offset-checkpoint", "log-start-offset-checkpoint",
        "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
    ]
    assert (tmp_path / "logs" / "log-start-offset-checkpoint").read_text() == "0\n1\na 0 1\n"
    assert (tmp_path / "logs" / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":3}'


def test_a_cut_entry_at_the_end_is_a_torn_write_only_when_the_broker_could_have_written_it(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    shutil.copyfile(LOGS / "orders-0" / "00000000000000000090.log", seg)
    end = seg.stat().st_size
    with open(seg, "ab") as out:
        out.write(struct.pack(">qii", 110, 500, 0) + bytes([2]) + b"\x01" * 40)
    with ReadOnlyFile(seg) as f:
        walk = ks.LogFileWalk(f)
        assert len(list(walk)) > 0 and walk.error is None and (walk.end.kind, walk.end.position) == ("partial", end)
    for head, at, words in (
        (struct.pack(">qii", 110, 540_319_531, 0) + bytes([236]), 8, "an entry size of at most"),
        (struct.pack(">qii", 110, 500, 0) + bytes([7]), 16, "magic 0, 1 or 2"),
        (struct.pack(">qii", 3, 500, 0) + bytes([2]), 0, "an offset above"),
    ):
        os.truncate(seg, end)
        with open(seg, "ab") as out:
            out.write(head + b"\x01" * 40)
        with ReadOnlyFile(seg) as f:
            walk = ks.LogFileWalk(f)
            list(walk)
            assert walk.end is None and walk.failed_at == end and walk.valid_end == end
            assert walk.error.position == end + at and words in walk.error.expected and "not a torn write" in str(walk.error)
