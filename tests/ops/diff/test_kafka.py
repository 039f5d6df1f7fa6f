"""Kafka diff from the two readings alone: identical partitions and a replica lagging at any batch.

``ops.diff.kafka.from_readings`` answers from the store model's reading of each side (segment
results and block digests); the batch-by-batch walk (``compare_kafka_partitions``) is the
reference it must equal, on a leader and a copy cut at a batch boundary hypothesis draws (a
follower behind), or with its newest segments gone, in both directions -- and diff then reads
each ``.log`` byte about once.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats.kafka import record_batch as rb
from mqtool.ops.diff import diff_stores
from mqtool.ops.diff.kafka import compare_kafka_partitions, from_readings, read_side
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, count_reads
from mqtool.store.kafka_writer import PartitionConfig, PartitionWriter


@pytest.fixture(scope="module")
def leader(tmp_path_factory: pytest.TempPathFactory) -> Path:
    part = tmp_path_factory.mktemp("leader") / "orders-0"
    writer = PartitionWriter(part, PartitionConfig(segment_bytes=96 << 10), snapshots=False)
    offset = 0
    while offset < 3000:
        count = 1 + offset % 7
        records = [rb.Record(offset_delta=i, timestamp_delta=i, key=b"k%d" % (offset + i), value=bytes(range(256))[: 20 + (offset + i) % 230]) for i in range(count)]
        writer.append(rb.build_batch(records, base_timestamp=1_700_000_000_000 + offset))
        offset += count
    writer.close()
    return part


def _batches(part: Path) -> list[tuple[Path, int]]:
    out = []
    for seg in ks.list_partition(part).log_segments():
        assert seg.log is not None
        with ReadOnlyFile(seg.log) as f:
            out += [(seg.log, pos) for pos, _entry in ks.LogFileWalk(f, mode="header")]
    return out


def _follower(leader: Path, where: Path, cut: int) -> Path:
    """A copy of the leader that holds its batches before batch ``cut`` (the segments after it gone)."""
    part = where / "orders-0"
    shutil.copytree(leader, part)
    log, pos = _batches(leader)[cut]
    os.truncate(part / log.name, pos)
    for later in sorted(part.glob("*.log")):
        if later.name > log.name:
            later.unlink()
    return part


def _both(pa: Path, pb: Path) -> tuple[dict[str, object] | None, dict[str, object]]:
    a, b = read_side(pa), read_side(pb)
    known = from_readings("orders-0", a.store.partitions[0], b.store.partitions[0], a, b)
    walked = compare_kafka_partitions("orders-0", ks.list_partition(pa), ks.list_partition(pb))
    return (known.to_dict() if known is not None else None), walked.to_dict()


def test_identical_replicas_from_the_readings(leader: Path, tmp_path: Path) -> None:
    copy = tmp_path / "orders-0"
    shutil.copytree(leader, copy)
    known, walked = _both(leader, copy)
    assert known == walked and walked["verdict"] == "identical"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_lagging_replica_from_the_readings(leader: Path, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(_batches(leader)) - 1), label="first batch the follower lacks")
    follower = _follower(leader, tmp_path_factory.mktemp("follower"), cut)
    for pa, pb, verdict in ((leader, follower, "b-prefix"), (follower, leader, "a-prefix")):
        known, walked = _both(pa, pb)
        assert walked["verdict"] == verdict
        assert known == walked
        logs = [p for side in (pa, pb) for p in side.glob("*.log")]
        with count_reads() as reads:
            report = diff_stores(pa, pb, "kafka")
        assert report.ok
        read = sum(n for path, n in reads.items() if path.endswith(".log"))
        assert read <= 1.1 * sum(p.stat().st_size for p in logs) + 4096 * len(logs)


def test_a_diverged_replica_is_walked(leader: Path, tmp_path: Path) -> None:
    """A copy whose bytes differ is not a prefix: the readings do not answer, the walk does."""
    copy = tmp_path / "orders-0"
    shutil.copytree(leader, copy)
    log, pos = _batches(leader)[40]
    with open(copy / log.name, "r+b") as f:  # another leader epoch: the CRC does not cover it
        f.seek(pos + 12)
        f.write(b"\x00\x00\x00\x07")
    known, walked = _both(leader, copy)
    assert known is None and walked["verdict"] == "diverged"
