"""A Kafka segment read with its indexes gives one answer whatever the size of the pieces its ``.log`` is read in.

``tests/store/model/test_kafka_pieces.py`` holds the ``.log`` reading alone (``indexes=False``) to
one answer at every piece size.  The reading also matches the ``.index`` and ``.timeindex`` entries
against the batches as it walks them (``store.model.kafka.check_segment``, ``SegmentTask.piece``):
here hypothesis builds segments through the partition writer -- batches of any sizes, so their
starts fall at every offset relative to the piece, an index entry every ``index.interval.bytes``
-- healthy or damaged (a flipped ``.log`` byte, a cut ``.log``, a flipped index byte), and the
result with pieces from 17 bytes to a few KiB must be the result with one piece holding the
whole file: the same entries, valid end, end kind, findings (code, position, length) and index
summaries.  Healthy: every batch, no error or warning.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats.kafka import record_batch as rb
from mqtool.store.kafka_writer import PartitionConfig, PartitionWriter
from mqtool.store.model.kafka import SegmentTask, check_segment

WHOLE = 1 << 30


def _partition(root: Path, sizes: list[list[int]], interval: int) -> tuple[Path, int]:
    """One segment (base 0) of batches whose records hold values of ``sizes``, with its indexes."""
    part = root / "orders-0"
    writer = PartitionWriter(part, PartitionConfig(index_interval_bytes=interval), snapshots=False)
    offset = 0
    for values in sizes:
        records = [rb.Record(offset_delta=i, timestamp_delta=i, key=b"k%d" % (offset + i), value=bytes([65 + i % 26]) * n) for i, n in enumerate(values)]
        writer.append(rb.build_batch(records, base_timestamp=1_700_000_000_000 + offset))
        offset += len(values)
    writer.close()
    return part, len(sizes)


def _read(part: Path, piece: int) -> tuple[object, ...]:
    stem = part / "00000000000000000000"
    task = SegmentTask(str(part), f"{stem}.log", 0, index=f"{stem}.index", timeindex=f"{stem}.timeindex", indexes=True, piece=piece)
    res = check_segment(task)
    return (
        res.entries,
        res.records,
        res.valid_end,
        res.end_kind,
        res.last_offset,
        sorted((f.code, f.level.value, f.path, f.position, f.length) for f in res.findings),
        [(i.path, i.entries, i.valid_bytes) for i in res.indexes],
    )


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    if data:
        data[at % len(data)] ^= 0x5A
        path.write_bytes(bytes(data))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.lists(st.integers(0, 400), min_size=1, max_size=3), min_size=1, max_size=25),
    interval=st.sampled_from([1, 100, 700, 4096]),
    piece=st.integers(17, 4096),
    kind=st.sampled_from(["healthy", "healthy", "flip-log", "cut-log", "flip-index", "flip-timeindex"]),
    at=st.integers(0, 10**6),
)
def test_pieces_of_any_size_read_as_one_with_the_indexes(tmp_path_factory, sizes, interval, piece, kind, at):
    part, batches = _partition(tmp_path_factory.mktemp("k"), sizes, interval)
    stem = part / "00000000000000000000"
    if kind == "flip-log":
        _flip(Path(f"{stem}.log"), at)
    elif kind == "cut-log":
        log = Path(f"{stem}.log")
        log.write_bytes(log.read_bytes()[: -1 - at % 40])
    elif kind in ("flip-index", "flip-timeindex"):
        _flip(Path(f"{stem}.{kind.removeprefix('flip-')}"), at)
    whole = _read(part, WHOLE)
    if kind == "healthy":
        assert whole[0] == batches and whole[3] == "eof"
        assert [f for f in whole[5] if f[1] in ("error", "warning")] == []  # type: ignore[attr-defined]
        assert len(whole[6]) == 2  # type: ignore[arg-type]  # both indexes read
    assert _read(part, piece) == whole
