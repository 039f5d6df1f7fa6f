"""One judgement of a Kafka store for several verbs (issue 27, point 3): inside
``store.model.kafka.shared_reading`` validate's reading also folds each segment into
``LogSegment.recover`` and keeps it, and recover's plan takes the kept segments instead of reading
them again -- the same plan, the store's ``.log`` bytes read once for both (``report`` gathers
validate and recover's plan; ``ops/report`` is to enter the block)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats.kafka import record_batch as rb
from mqtool.ops.recover.kafka import plan_kafka
from mqtool.ops.validate import ValidateOptions, validate_path
from mqtool.store.files import count_reads
from mqtool.store.kafka_writer import PartitionConfig, PartitionWriter
from mqtool.store.model import kafka as km
from mqtool.store.model import kafka_broker

#: the speed the restart preview measures is the reading's, kept or not: not compared
_TIMING = ("read_bytes_per_second", "estimated_seconds")


def _store(root: Path) -> Path:
    for name in ("orders-0", "orders-1"):
        part = root / name
        part.mkdir(parents=True)
        writer = PartitionWriter(part, PartitionConfig(segment_bytes=256 << 10), snapshots=False)
        for b in range(700):
            records = [rb.Record(offset_delta=i, timestamp_delta=i, key=b"k%d" % i, value=b"v" * 150) for i in range(3)]
            writer.append(rb.build_batch(records, base_timestamp=1_700_000_000_000 + b))
        writer.close()
    return root


def _plan(root: Path) -> dict[str, object]:
    def strip(d: object) -> object:
        if isinstance(d, dict):
            return {k: strip(v) for k, v in d.items() if k not in _TIMING}
        if isinstance(d, list):
            return [strip(x) for x in d]
        return d

    return strip(plan_kafka(root).to_dict())  # type: ignore[return-value]


def _log_bytes(reads: dict[str, int]) -> int:
    return sum(n for p, n in reads.items() if p.endswith(".log"))


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("damage", [False, True])
def test_recover_plan_after_validate_reads_no_segment_again(tmp_path, jobs, damage) -> None:
    root = _store(tmp_path / "store")
    logs = sorted(root.rglob("*.log"))
    if damage:  # a batch whose CRC fails in the middle of a segment: the plan cuts there
        raw = bytearray(logs[1].read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        logs[1].write_bytes(bytes(raw))
    expected = _plan(root)
    with km.shared_reading():
        validate_path(root, ValidateOptions(jobs=jobs), "kafka")
        with count_reads() as reads:
            got = _plan(root)
    assert got == expected
    # what the plan reads of the logs: entry headers, 17 bytes each (index.interval.bytes is
    # inferred from the indexes: ``batch_starts``), and with damage, in the segment cut, what
    # follows the cut: the search for the next valid batch, the count of what the cut drops, and
    # the bytes it quarantines
    total = sum(log.stat().st_size for log in logs)
    cut = logs[1].stat().st_size // 2 + 4096 if damage else 0
    assert _log_bytes(reads) <= total // 20 + 3 * cut, dict(reads)
    # outside the block, nothing is kept
    with count_reads() as reads:
        assert _plan(root) == expected
    assert _log_bytes(reads) >= sum(log.stat().st_size for log in logs)


def test_a_segment_changed_since_is_read_again(tmp_path) -> None:
    root = _store(tmp_path / "store")
    logs = sorted(root.rglob("*.log"))
    with km.shared_reading():
        validate_path(root, ValidateOptions(jobs=1), "kafka")
        raw = logs[0].read_bytes()
        logs[0].write_bytes(raw[: len(raw) - 7])  # a torn tail now
        with count_reads() as reads:
            plan = plan_kafka(root)
    assert any(s.action == "truncate" and s.path.endswith(logs[0].name) for s in plan.steps)
    read = {p: n for p, n in reads.items() if p.endswith(".log") and n}
    assert read.get(str(logs[0]), 0) >= len(raw) - 7  # read again: it changed
    assert all(n <= Path(p).stat().st_size // 20 for p, n in read.items() if p != str(logs[0])), read  # the others: kept (headers)


def test_report_in_the_block_reads_validate_and_the_plan_once(tmp_path, monkeypatch) -> None:
    """``report`` inside the block: validate, recover's plan, clean's plan, stats and lag from one
    reading (``tests/test_read_once.py`` holds it to the log bytes once)."""
    root = _store(tmp_path / "store")
    total = sum(p.stat().st_size for p in root.rglob("*.log"))
    args = ["report", str(root), "--out", str(tmp_path / "r.html"), "--overwrite"]
    ratios = []
    import mqtool.ops.report as ops_report

    real_block = ops_report.one_judgement  # report enters the block itself
    for shared in (False, True):
        monkeypatch.setattr(kafka_broker, "_SPEEDS", {})
        if not shared:  # the report without its block (``ops.report.one_judgement``): every verb reads the store
            monkeypatch.setattr(ops_report, "one_judgement", lambda _layout: contextlib.nullcontext())
        else:
            monkeypatch.setattr(ops_report, "one_judgement", real_block)
        with count_reads() as reads, contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert run(args) == 0
        ratios.append(_log_bytes(reads) / total)
    assert ratios[1] <= ratios[0] - 0.9, ratios  # one whole reading less


# --- stats' count, lag's offsets and clean's timestamps from the same reading ----------------------


def _flip_a_value_byte(log: Path) -> None:
    """A byte of a record value in the middle of ``log`` flipped: that batch's CRC fails, its frame
    holds (stats counts its records, apart, as damaged)."""
    raw = bytearray(log.read_bytes())
    at = raw.index(b"v" * 150, len(raw) // 2) + 75
    raw[at] ^= 0x01
    log.write_bytes(bytes(raw))


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("damage", [False, True])
def test_stats_after_validate_takes_the_count_validates_reading_made(tmp_path, jobs, damage) -> None:
    """Inside ``shared_reading(fold=KafkaStatsFold())`` validate's reading (in-process, or in its
    worker processes: the fold goes there with each task and its count comes back) counts each
    segment for stats, and stats reads no ``.log`` byte: its counts are the fold's."""
    from mqtool.ops.stats import store_stats
    from mqtool.ops.stats.kafka import KafkaStatsFold

    root = _store(tmp_path / "store")
    logs = sorted(root.rglob("*.log"))
    if damage:
        _flip_a_value_byte(logs[1])
    with km.shared_reading(fold=KafkaStatsFold()):
        validate_path(root, ValidateOptions(jobs=jobs), "kafka")
        with count_reads() as reads:
            got = store_stats(root, "kafka").to_dict()
    assert _log_bytes(reads) == 0, dict(reads)
    assert got["totals"]["messages"] == 2 * 700 * 3  # every record written, the damaged batch's too
    assert got["totals"]["damaged_messages"] == (3 if damage else 0)
    assert [u["messages"] for u in got["units"]] == [700 * 3, 700 * 3]
    assert got["largest"] and got["bytes_written"]["buckets"]
    assert [f["code"] for f in got["findings"]] == (["KAFKA-LOG-CRC"] if damage else [])


def test_stats_with_another_fold_or_a_changed_segment_reads_it(tmp_path) -> None:
    """A count kept with other options (``--top``) is not stats' count: it reads the store; a
    segment changed since validate read it is read again, the others are taken."""
    from mqtool.ops.stats import StatsOptions, store_stats
    from mqtool.ops.stats.kafka import KafkaStatsFold

    root = _store(tmp_path / "store")
    logs = sorted(root.rglob("*.log"))
    total = sum(log.stat().st_size for log in logs)
    with km.shared_reading(fold=KafkaStatsFold()):
        validate_path(root, ValidateOptions(jobs=1), "kafka")
        with count_reads() as reads:
            store_stats(root, "kafka", StatsOptions(top=3))
        assert _log_bytes(reads) >= total
        raw = logs[0].read_bytes()
        logs[0].write_bytes(raw[: len(raw) - 7])  # a torn tail now
        with count_reads() as reads:
            got = store_stats(root, "kafka")
    read = {p: n for p, n in reads.items() if p.endswith(".log") and n}
    assert set(read) == {str(logs[0])} and read[str(logs[0])] >= len(raw) - 7, read
    assert got.to_dict()["totals"]["messages"] == 2 * 700 * 3 - 3  # the torn batch is not counted


def test_lag_and_clean_after_validate_read_no_segment(tmp_path) -> None:
    """Inside the block a ``read_store`` that reads no index (lag's: ``checks={"offsets"}``) takes
    validate's kept results less their index findings, and clean's largest batch timestamp of a
    segment comes from validate's walk: no ``.log`` byte read, the same answers."""
    from mqtool.store import kafka as ks
    from mqtool.store.model import kafka_reads as kr

    root = _store(tmp_path / "store")
    index = sorted(root.rglob("*.index"))[0]
    raw = bytearray(index.read_bytes())
    raw[12:16] = b"\xff\xff\xff\xf0"  # the second entry's position: out of order (KAFKA-INDEX-ORDER)
    index.write_bytes(bytes(raw))
    logs = sorted(root.rglob("*.log"))

    def lag_view() -> list[object]:
        out: list[object] = []
        for item in km.read_store(ks.open_kafka(root), checks=frozenset({"offsets"})):
            if isinstance(item, km.SegmentRead):
                r = item.result
                out.append((r.path, r.size, r.entries, r.records, r.valid_end, r.end_kind, r.first_offset, r.last_offset, r.findings, r.indexes))
            else:
                out.append(item)
        return out

    expected = lag_view()
    assert not any(f.family == "index" for item in expected if isinstance(item, tuple) for f in item[8])  # type: ignore[attr-defined]
    newest = [kr.largest_batch_timestamp(log) for log in logs]
    with km.shared_reading():
        report = validate_path(root, ValidateOptions(jobs=1), "kafka")
        assert "KAFKA-INDEX-ORDER" in {f.code for f in report.findings}  # kept, but not lag's
        with count_reads() as reads:
            assert lag_view() == expected
            assert [kr.largest_batch_timestamp(log) for log in logs] == newest
    assert _log_bytes(reads) == 0, dict(reads)
    assert newest[1] == 1_700_000_000_000 + 699 + 2  # the last batch's maxTimestamp
