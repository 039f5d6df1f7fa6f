"""``dump kafka-log --limit`` reads what it shows (issue 27, point 3): the store model's reading
stops where the dump does (``store.model.kafka.EntryReading.stop``) and states what it read --
the damage among the entries shown, with validate's code and position, and an overlap of the
segments read -- but not the damage past them, which it never read."""

from __future__ import annotations

import json
from pathlib import Path

from mqtool.formats.kafka import record_batch as rb
from mqtool.store.files import count_reads
from mqtool.store.kafka_writer import PartitionConfig, PartitionWriter
from mqtool.store.model.kafka_segment import FIRST_PIECE
from tests.conftest import run_cli


def _partition(root: Path, batches: int = 800) -> list[Path]:
    part = root / "orders-0"
    part.mkdir(parents=True)
    writer = PartitionWriter(part, PartitionConfig(segment_bytes=256 << 10), snapshots=False)
    for b in range(batches):
        records = [rb.Record(offset_delta=i, timestamp_delta=i, key=b"k%d" % (b * 4 + i), value=b"v" * 200) for i in range(4)]
        writer.append(rb.build_batch(records, base_timestamp=1_700_000_000_000 + b))
    writer.close()
    return sorted(part.glob("*.log"))


def _flip(path: Path, position: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[position] ^= 0x01
    path.write_bytes(bytes(raw))


def _batches(root: Path, limit: int) -> list[dict[str, object]]:
    code, out, err = run_cli("dump", "kafka-log", root, "--jsonl", "--limit", limit)
    return [json.loads(line) for line in out.splitlines()]


def test_limit_reports_the_damage_it_shows_and_not_past_it(tmp_path) -> None:
    logs = _partition(tmp_path / "store")
    root = tmp_path / "store"
    assert len(logs) >= 3
    first, last = logs[0], logs[-1]
    second = _batches(root, 2)[1]
    crc = f"KAFKA-LOG-CRC {first}:{int(second['position']) + rb.CRC_POSITION}"  # validate's: at the batch's CRC field
    _flip(first, int(second["position"]) + int(second["size"]) - 1)  # a byte of the second batch's records
    _flip(last, last.stat().st_size - 1)  # and of the last batch of the last segment
    code, _, err = run_cli("dump", "kafka-log", root, "--jsonl")
    assert code == 1 and crc in err and f"KAFKA-LOG-CRC {last}:" in err
    # one batch shown: the damage after it is not read, so not reported
    with count_reads() as reads:
        code, out, err = run_cli("dump", "kafka-log", root, "--jsonl", "--limit", "1")
    assert code == 0 and len(out.splitlines()) == 1 and "KAFKA-LOG-CRC" not in err, err
    assert sum(n for p, n in reads.items() if p.endswith(".log")) <= FIRST_PIECE
    # two shown: the second one's damage, as validate states it; not the last segment's
    code, out, err = run_cli("dump", "kafka-log", root, "--jsonl", "--limit", "2")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and len(rows) == 2 and rows[1]["is_valid"] is False, err
    assert crc in err and str(last) not in err, err
    # records shown: the same (the lean reading's runs stop early too)
    code, out, err = run_cli("dump", "kafka-log", root, "--deep", "--jsonl", "--records-only", "--limit", "6")
    assert code == 1 and len(out.splitlines()) == 6 and crc in err and str(last) not in err, err


def test_limit_states_an_overlap_of_the_segments_it_read(tmp_path) -> None:
    """The segment being read when the dump stops counts from its base offset (its name): an
    overlap with the segment before it is stated, as validate states it."""
    logs = _partition(tmp_path / "store", batches=400)
    root = tmp_path / "store"
    assert len(logs) == 2
    shown = len(_batches(root, 10_000))
    in_first = sum(1 for row in _batches(root, 10_000) if row["file"] == str(logs[0]))
    moved = logs[1].with_name(f"{int(logs[1].stem) - 4:020d}.log")  # overlaps the first segment's last batch
    logs[1].rename(moved)
    for ext in (".index", ".timeindex"):
        logs[1].with_suffix(ext).rename(moved.with_suffix(ext))
    code, _, full = run_cli("dump", "kafka-log", root, "--jsonl")
    assert code == 1 and f"KAFKA-OFFSET-OVERLAP {moved}" in full, full
    code, out, err = run_cli("dump", "kafka-log", root, "--jsonl", "--limit", in_first + 1)
    assert len(out.splitlines()) == in_first + 1 < shown
    assert code == 1 and f"KAFKA-OFFSET-OVERLAP {moved}" in err, err
    code, out, err = run_cli("dump", "kafka-log", root, "--jsonl", "--limit", in_first - 1)
    assert code == 0 and "KAFKA-OFFSET-OVERLAP" not in err, err


def test_topic_reads_only_its_partitions() -> None:
    """``--topic``/``--partition`` read the partitions chosen through the model's reading, not the
    rest of the log dir (``read_store_entries(partitions=...)``), with or without ``--limit``."""
    root = Path(__file__).resolve().parents[3] / "fixtures" / "kafka-logs"
    for extra in ((), ("--limit", "2"), ("--partition", "1")):
        with count_reads() as reads:
            code, out, err = run_cli("dump", "kafka-log", root, "--topic", "orders", "--jsonl", *extra)
        assert code == 0 and out, err
        logs = {Path(p).parent.name for p, n in reads.items() if p.endswith(".log") and n}
        assert logs == ({"orders-1"} if "--partition" in extra else {"orders-0"} if "--limit" in extra else {"orders-0", "orders-1"}), (extra, logs)
