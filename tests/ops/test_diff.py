"""diff: an injected divergence is found at the exact record; a lagging replica is a clean prefix."""

from __future__ import annotations

import random
import shutil

from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq.commitlog import MessageRecord, body_position
from mqtool.ops.diff import diff_stores
from mqtool.store.writer import StoreWriter, WriterConfig
from tests.conftest import FIXTURES
from tests.ops.test_stats import write_kafka_partition

CONFIG = WriterConfig(commitlog_file_size=8192, enable_index=False)


def _clock():
    state = [1_700_000_000_000]

    def tick():
        state[0] += 7
        return state[0]

    return tick


def _write(root, bodies):
    results = []
    with StoreWriter(root, CONFIG, clock=_clock()) as w:
        for i, body in enumerate(bodies):
            results.append(w.append(MessageRecord(topic="T", queue_id=i % 3, body=body, properties={"KEYS": f"k{i}"})))
    return results


BODIES = [bytes([65 + i % 26]) * (100 + i * 13 % 400) for i in range(120)]


def test_identical_copies(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(FIXTURES / "rocketmq-store", a)
    shutil.copytree(FIXTURES / "rocketmq-store", b)
    report = diff_stores(a, b, "rocketmq")
    (log,) = report.logs
    assert report.verdict == "identical" and report.ok
    assert log.compared["bytes"] == log.a["end"] - log.a["start"] > 0
    assert log.only_a is None and log.only_b is None


def test_lagging_slave_is_a_clean_prefix(tmp_path):
    master = _write(tmp_path / "master", BODIES)
    _write(tmp_path / "slave", BODIES[:77])
    report = diff_stores(tmp_path / "master", tmp_path / "slave", "rocketmq")
    (log,) = report.logs
    assert log.verdict == "b-prefix" and report.ok and log.divergence is None
    assert log.damage == [] and log.problems == []
    assert log.b["end"] == master[76].commitlog_offset + master[76].size
    assert (log.only_a.records, log.only_a.start) == (120 - 77, master[77].commitlog_offset)
    assert log.only_a.bytes == sum(r.size for r in master[77:])
    # and the other way round: A lags
    reverse = diff_stores(tmp_path / "slave", tmp_path / "master", "rocketmq")
    assert reverse.verdict == "a-prefix" and reverse.logs[0].only_b.records == 43


def test_torn_tail_on_the_slave_is_still_a_prefix(tmp_path):
    master = _write(tmp_path / "master", BODIES)
    k = next(i for i in range(40, 100) if master[i].commitlog_offset // 8192 == master[i + 1].commitlog_offset // 8192)
    _write(tmp_path / "slave", BODIES[: k + 1])
    nxt = master[k + 1]
    name = segnames.rocketmq_file_name(nxt.commitlog_offset - nxt.commitlog_offset % 8192)
    seg = tmp_path / "slave" / "commitlog" / name
    data = bytearray(seg.read_bytes())
    pos = nxt.commitlog_offset % 8192
    half = (tmp_path / "master" / "commitlog" / name).read_bytes()[pos : pos + nxt.size // 2]
    data[pos : pos + len(half)] = half  # the first half of the next record, as a crash leaves it
    seg.write_bytes(bytes(data))
    report = diff_stores(tmp_path / "master", tmp_path / "slave", "rocketmq")
    (log,) = report.logs
    assert report.verdict == "b-prefix" and report.ok and log.only_a.records == 120 - (k + 1)
    assert log.b["end"] == nxt.commitlog_offset
    # a crash's torn tail is where the data ends, not damage: a note, no finding
    assert log.damage == [] and log.problems == []
    assert [n for n in log.notes if "torn tail" in n] == [f"B: torn tail at {seg}:{pos}: a {nxt.size}-byte record starts here but only {len(half)} of its bytes were written (a crash while writing): the data ends there"]


def test_injected_divergence_is_found_at_the_exact_record(tmp_path):
    master = _write(tmp_path / "master", BODIES)
    other = list(BODIES)
    other[64] = b"Z" * len(BODIES[64])  # same size: every later offset still lines up
    slave = _write(tmp_path / "slave", other[:100])
    report = diff_stores(tmp_path / "master", tmp_path / "slave", "rocketmq")
    (log,) = report.logs
    assert log.verdict == "diverged" and not report.ok
    d = log.divergence
    assert d["offset"] == master[64].commitlog_offset == slave[64].commitlog_offset
    assert master[64].commitlog_offset < d["byte_offset"] < master[64].commitlog_offset + master[64].size
    assert d["a"]["queue_offset"] == d["b"]["queue_offset"] == master[64].queue_offset
    assert d["a"]["body_crc"] != d["b"]["body_crc"]
    assert log.compared["to"] == d["byte_offset"]
    assert (log.only_a.records, log.only_b.records) == (120 - 64, 100 - 64)


def _flip_body_byte(root, result):
    """Flip one byte inside the body of the record ``result`` (an ``AppendResult``) in ``root``."""
    base = result.commitlog_offset - result.commitlog_offset % CONFIG.commitlog_file_size
    seg = root / "commitlog" / segnames.rocketmq_file_name(base)
    data = bytearray(seg.read_bytes())
    pos = result.commitlog_offset - base
    data[pos + body_position(0) + 3] ^= 0x01
    seg.write_bytes(bytes(data))
    return seg, pos


def test_flipped_body_byte_in_the_slaves_last_file_is_a_divergence(tmp_path):
    # the operator's report: a slave whose last record was damaged was a "clean prefix", exit 0
    master = _write(tmp_path / "master", BODIES)
    _write(tmp_path / "slave", BODIES[:77])
    k = 70  # in the slave's last file, records follow it
    assert master[k].commitlog_offset // 8192 == master[76].commitlog_offset // 8192
    seg, pos = _flip_body_byte(tmp_path / "slave", master[k])
    report = diff_stores(tmp_path / "master", tmp_path / "slave", "rocketmq")
    (log,) = report.logs
    assert log.verdict == "diverged" and report.verdict == "diverged" and not report.ok
    d = log.divergence
    assert d["offset"] == master[k].commitlog_offset and d["byte_offset"] == master[k].commitlog_offset + body_position(0) + 3
    assert d["a"]["body_crc"] is not None and d["a"]["position"] == pos
    assert (d["b"]["file"], d["b"]["position"]) == (str(seg), pos) and "body CRC" in d["b"]["error"]
    assert [(x["side"], x["file"], x["position"]) for x in log.damage] == [("B", str(seg), pos)]
    assert log.compared["to"] == d["byte_offset"]


def test_flipped_body_byte_in_a_copy_of_the_fixture(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(FIXTURES / "rocketmq-store", a)
    shutil.copytree(FIXTURES / "rocketmq-store", b)
    seg = sorted((b / "commitlog").iterdir())[-1]
    data = bytearray(seg.read_bytes())
    data[1242 + body_position(0) + 2] ^= 0x01  # the fourth record of the last file
    seg.write_bytes(bytes(data))
    report = diff_stores(a, b, "rocketmq")
    (log,) = report.logs
    assert report.verdict == "diverged" and not report.ok
    assert (log.divergence["b"]["file"], log.divergence["b"]["position"]) == (str(seg), 1242)


def test_slave_file_overwritten_with_random_bytes(tmp_path):
    master = _write(tmp_path / "master", BODIES)
    _write(tmp_path / "slave", BODIES[:77])
    seg = tmp_path / "slave" / "commitlog" / segnames.rocketmq_file_name(3 * 8192)  # the slave's last file
    seg.write_bytes(random.Random(7).randbytes(8192))
    report = diff_stores(tmp_path / "master", tmp_path / "slave", "rocketmq")
    (log,) = report.logs
    assert log.verdict == "diverged" and not report.ok
    d = log.divergence
    assert d["offset"] == 3 * 8192 and (d["b"]["file"], d["b"]["position"]) == (str(seg), 0) and "error" in d["b"]
    assert d["a"]["commitlog_offset"] == 3 * 8192 == master[next(i for i, r in enumerate(master) if r.commitlog_offset >= 3 * 8192)].commitlog_offset
    assert [(x["side"], x["offset"]) for x in log.damage] == [("B", 3 * 8192)]
    # a file before the last overwritten: the same, found by the byte comparison
    shutil.rmtree(tmp_path / "slave")
    _write(tmp_path / "slave", BODIES[:77])
    seg = tmp_path / "slave" / "commitlog" / segnames.rocketmq_file_name(8192)
    seg.write_bytes(random.Random(8).randbytes(8192))
    report = diff_stores(tmp_path / "master", tmp_path / "slave", "rocketmq")
    assert report.verdict == "diverged" and report.logs[0].divergence["offset"] == 8192
    assert report.logs[0].divergence["b"]["file"] == str(seg)


def test_damage_past_the_other_sides_end_is_a_finding(tmp_path):
    # B is ahead of A, and what only B holds is damaged: not a clean prefix (A's view)
    _write(tmp_path / "a", BODIES[:40])
    slave = _write(tmp_path / "b", BODIES)
    seg, pos = _flip_body_byte(tmp_path / "b", slave[70])  # a file before B's last
    report = diff_stores(tmp_path / "a", tmp_path / "b", "rocketmq")
    (log,) = report.logs
    assert log.verdict == report.verdict == "damaged" and not report.ok and log.divergence is None
    assert [(x["side"], x["file"], x["position"], x["offset"]) for x in log.damage] == [("B", str(seg), pos, slave[70].commitlog_offset)]
    assert log.only_b.records == 70 - 40  # counted up to the broken record
    # B's last file overwritten with random bytes, past A's end
    shutil.rmtree(tmp_path / "b")
    _write(tmp_path / "b", BODIES)
    seg = tmp_path / "b" / "commitlog" / segnames.rocketmq_file_name(5 * 8192)
    seg.write_bytes(random.Random(9).randbytes(8192))
    report = diff_stores(tmp_path / "a", tmp_path / "b", "rocketmq")
    assert report.verdict == "damaged" and [(x["side"], x["file"], x["position"]) for x in report.logs[0].damage] == [("B", str(seg), 0)]
    # the master damaged past the slave's end: the same, on side A
    shutil.rmtree(tmp_path / "b")
    _write(tmp_path / "b", BODIES)
    seg, pos = _flip_body_byte(tmp_path / "b", slave[100])
    report = diff_stores(tmp_path / "b", tmp_path / "a", "rocketmq")
    assert report.verdict == "damaged" and [(x["side"], x["file"], x["position"]) for x in report.logs[0].damage] == [("A", str(seg), pos)]


def test_slave_that_started_later(tmp_path):
    master = _write(tmp_path / "master", BODIES)
    shutil.copytree(tmp_path / "master", tmp_path / "slave")
    for seg in sorted((tmp_path / "slave" / "commitlog").iterdir())[:3]:
        seg.unlink()  # the slave copied from the master's 4th file on
    report = diff_stores(tmp_path / "master", tmp_path / "slave", "rocketmq")
    (log,) = report.logs
    assert log.verdict == "identical"
    assert (log.only_a_before.start, log.only_a_before.end) == (0, 3 * 8192)
    assert log.compared["from"] == 3 * 8192 and master[-1].commitlog_offset < log.compared["to"]


def test_kafka_replicas(tmp_path):
    t = 1_700_000_000_000
    batches = [[(f"k{i}".encode(), b"v" * (20 + i), t + i) for i in range(b * 4, b * 4 + 4)] for b in range(10)]
    write_kafka_partition(tmp_path / "leader" / "orders-0", batches, epoch=3)
    write_kafka_partition(tmp_path / "follower" / "orders-0", batches[:7], epoch=3, segment_every=2)  # rolls elsewhere
    report = diff_stores(tmp_path / "leader" / "orders-0", tmp_path / "follower" / "orders-0", "kafka")
    (log,) = report.logs
    assert log.verdict == "b-prefix" and report.ok
    assert log.compared == {"from": 0, "to": 28, "entries": 7}
    assert (log.only_a.start, log.only_a.end, log.only_a.records) == (28, 40, 12)

    diverged = batches[:5] + [[(b"other", b"x", t)]] + batches[6:]
    write_kafka_partition(tmp_path / "stale" / "orders-0", diverged[:6], epoch=[3, 3, 3, 3, 3, 2])
    report = diff_stores(tmp_path / "leader" / "orders-0", tmp_path / "stale" / "orders-0", "kafka")
    (log,) = report.logs
    assert log.verdict == "diverged" and log.divergence["offset"] == 20
    assert log.divergence["a"]["partition_leader_epoch"] == 3 and log.divergence["b"]["partition_leader_epoch"] == 2
    assert log.compared == {"from": 0, "to": 20, "entries": 5}
    assert (log.only_a.records, log.only_b.records) == (20, 1)


def test_kafka_log_dirs_pair_partitions(tmp_path):
    t = 1_700_000_000_000
    batches = [[(None, b"v", t)], [(None, b"w", t)]]
    for side in ("a", "b"):
        write_kafka_partition(tmp_path / side / "x-0", batches)
        (tmp_path / side / "meta.properties").write_text("version=0\nbroker.id=1\n")
    write_kafka_partition(tmp_path / "a" / "x-1", batches)
    report = diff_stores(tmp_path / "a", tmp_path / "b", "kafka")
    verdicts = {log.name: log.verdict for log in report.logs}
    assert verdicts == {"x-0": "identical", "x-1": "only-a"} and report.ok


def test_jafka_and_metaq_partitions(tmp_path):
    from mqtool.store.jafka import JafkaLogWriter
    from mqtool.store.metaq import MetaqStoreWriter

    messages = [jf.Message(bytes([i]) * (5 + i)) for i in range(30)]
    for side, count in (("a", 30), ("b", 18)):
        w = JafkaLogWriter(tmp_path / "jafka" / side / "t-0", log_file_size=120)
        for m in messages[:count]:
            w.append([m])
    report = diff_stores(tmp_path / "jafka" / "a", tmp_path / "jafka" / "b", "jafka")
    assert report.verdict == "b-prefix" and report.logs[0].only_a.records == 12

    for side, bad in (("a", None), ("b", 11)):
        w = MetaqStoreWriter(tmp_path / "metaq" / side / "t-0", max_segment_size=150)
        for i in range(20):
            payload = b"q" * (i + 1) if i != bad else b"Q" * (i + 1)
            w.append(mq.make_message(i + 1, payload))
    report = diff_stores(tmp_path / "metaq" / "a", tmp_path / "metaq" / "b", "metaq")
    (log,) = report.logs
    expected = sum(20 + i + 1 for i in range(11))
    assert log.verdict == "diverged" and log.divergence["offset"] == expected
    assert log.divergence["a"]["id"] == log.divergence["b"]["id"] == 12


def _flip(path, position):
    data = bytearray(path.read_bytes())
    data[position] ^= 0x01
    path.write_bytes(bytes(data))


def test_kafka_damaged_follower_is_not_a_clean_prefix(tmp_path):
    t = 1_700_000_000_000
    batches = [[(f"k{i}".encode(), b"v" * (20 + i), t + i) for i in range(b * 4, b * 4 + 4)] for b in range(10)]
    write_kafka_partition(tmp_path / "leader" / "orders-0", batches)
    written = write_kafka_partition(tmp_path / "follower" / "orders-0", batches[:7])
    seg = tmp_path / "follower" / "orders-0" / segnames.kafka_file_name(0, "log")
    last_at = sum(len(raw) for _, raw in written[:6])
    _flip(seg, last_at + len(written[6][1]) - 2)  # a record byte of the follower's last batch: its CRC fails
    report = diff_stores(tmp_path / "leader" / "orders-0", tmp_path / "follower" / "orders-0", "kafka")
    (log,) = report.logs
    assert log.verdict == "diverged" and not report.ok
    d = log.divergence
    assert d["offset"] == 24 and (d["b"]["file"], d["b"]["position"]) == (str(seg), last_at) and "CRC" in d["b"]["error"]
    assert log.compared == {"from": 0, "to": 24, "entries": 6}
    assert [(x["side"], x["file"], x["position"], x["offset"]) for x in log.damage] == [("B", str(seg), last_at, 24)]
    # a follower segment before the last overwritten with random bytes: diverged at its first batch
    written = write_kafka_partition(tmp_path / "follower3" / "orders-0", batches[:7], segment_every=2)
    seg = tmp_path / "follower3" / "orders-0" / segnames.kafka_file_name(8, "log")
    seg.write_bytes(random.Random(3).randbytes(seg.stat().st_size))
    report = diff_stores(tmp_path / "leader" / "orders-0", tmp_path / "follower3" / "orders-0", "kafka")
    (log,) = report.logs
    assert log.verdict == "diverged" and log.divergence["offset"] == 8
    assert (log.divergence["b"]["file"], log.divergence["b"]["position"]) == (str(seg), 0)
    assert [(x["side"], x["file"], x["position"], x["offset"]) for x in log.damage] == [("B", str(seg), 0, 8)]
    # the leader damaged past the follower's end: damaged, not a clean prefix
    write_kafka_partition(tmp_path / "follower2" / "orders-0", batches[:7])
    leader_seg = tmp_path / "leader" / "orders-0" / segnames.kafka_file_name(0, "log")
    _flip(leader_seg, leader_seg.stat().st_size - 2)
    report = diff_stores(tmp_path / "leader" / "orders-0", tmp_path / "follower2" / "orders-0", "kafka")
    (log,) = report.logs
    assert log.verdict == report.verdict == "damaged" and not report.ok
    assert [(x["side"], x["file"], x["offset"]) for x in log.damage] == [("A", str(leader_seg), 36)]
    assert log.only_a.records == 12 - 4  # counted up to the broken batch


def test_damaged_jafka_replica_is_not_a_clean_prefix(tmp_path):
    from mqtool.store.jafka import JafkaLogWriter

    messages = [jf.Message(bytes([65 + i]) * (5 + i)) for i in range(30)]
    for side, count in (("a", 30), ("b", 18)):
        w = JafkaLogWriter(tmp_path / side / "t-0", log_file_size=120)
        for m in messages[:count]:
            w.append([m])
    segments = sorted((tmp_path / "b" / "t-0").iterdir())
    if segments[-1].stat().st_size == 0:
        segments.pop().unlink()  # the writer rolled: B's last message ends the last segment
    last = segments[-1]
    clean = last.read_bytes()
    _flip(last, len(clean) - 2)  # the payload of B's last message
    report = diff_stores(tmp_path / "a", tmp_path / "b", "jafka")
    (log,) = report.logs
    assert log.verdict == "diverged" and not report.ok
    d = log.divergence
    assert d["b"]["file"] == str(last) and "CRC" in d["b"]["error"]
    assert [(x["side"], x["file"], x["position"]) for x in log.damage] == [("B", str(last), d["b"]["position"])]
    # random bytes over B's last segment
    last.write_bytes(random.Random(4).randbytes(len(clean)))
    report = diff_stores(tmp_path / "a", tmp_path / "b", "jafka")
    assert report.verdict == "diverged" and report.logs[0].divergence["b"]["position"] == 0
    # a torn tail (the last message's end never written: zeros) is still a clean prefix
    last.write_bytes(clean[:-3] + bytes(3))
    report = diff_stores(tmp_path / "a", tmp_path / "b", "jafka")
    (log,) = report.logs
    assert report.verdict == "b-prefix" and report.ok and log.damage == []
    assert any(n.startswith(f"B: torn tail at {last}:") for n in log.notes)
