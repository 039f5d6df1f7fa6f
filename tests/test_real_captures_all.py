"""Acceptance test over every real capture in ``../shared/fixtures-real``: ``validate`` exits 0
with no error on each, and ``dump`` returns every record (Kafka: the records kafka-python iterates
from the same file, file by file; RocketMQ: as many records as the CommitLog holds frames).

Captures are discovered from the data, never listed by hand: a new capture dropped into the folder
is tested without editing this module.  Everything runs through the CLI in-process (``run``), as a
user would type it.  Each capture is one parametrized case (named by its path under the folder);
without the folder every case skips (``real_path``).

Left out, on purpose:

- Kafka 0.7 ``.kafka`` segments (apache-kafka ``test-kafka-logs/MagicByte0-0``) are not Kafka log
  dirs: the Jafka message format, read as the Jafka layout's ``kafka07`` variant; ``test_kafka07_capture``
  holds them to the same rule (validate clean, every framed message dumped).
- RocketMQ files outside a store root (apache-rocketmq ``pr6495-*/store/100``, a lone IndexFile):
  no store to validate and no CommitLog to dump; tests/cli/test_cli.py reads it as a file.
- jafka/ and metaq/ hold only a README.md (no capture was found).
"""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import pytest

from mqtool.cli import app as cli_app
from mqtool.cli.app import run
from mqtool.store.kafka import is_log_dir, is_partition_dir
from mqtool.store.root_rocketmq import is_rocketmq_root
from tests.conftest import REAL_ROOT, real_path

KAFKA = REAL_ROOT / "kafka"
ROCKETMQ = REAL_ROOT / "rocketmq"
RECORD_FILES = (".log", ".records")  # what kafka-python is asked to read, file by file
KAFKA_07 = ".kafka"

# importing kafka-python loads its protocol schemas through importlib.resources' legacy API
pytestmark = pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")


def mqtool(capsys, *args) -> tuple[int, str, str]:
    cli_app._state["debug"] = False  # another test's --debug must not leak into this run
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


# --- discovery -------------------------------------------------------------------------------------


def _kafka_dir(path: Path) -> bool:
    """A directory mqtool opens as a Kafka log dir or partition dir (not a Kafka 0.7 one)."""
    if is_log_dir(path):
        return True
    return is_partition_dir(path) and not all(f.name.endswith(KAFKA_07) for f in path.iterdir() if f.is_file())


def _kafka_captures() -> list[str]:
    """The outermost Kafka log dirs / partition dirs, and every ``.log`` / ``.records`` file that
    lies in none of them (the carved record sets of segmentio-kafka-go and tulios-kafkajs)."""
    if not KAFKA.exists():
        return []
    dirs = {p for p in KAFKA.rglob("*") if p.is_dir() and _kafka_dir(p)}
    tops = {d for d in dirs if dirs.isdisjoint(d.parents)}
    loose = sorted(p for p in KAFKA.rglob("*") if p.is_file() and p.suffix in RECORD_FILES and tops.isdisjoint(p.parents))
    return [str(p.relative_to(KAFKA)) for p in [*sorted(tops), *loose]]


def _rocketmq_stores() -> list[str]:
    """Every directory mqtool takes for a RocketMQ store root (commitlog/, or checkpoint with config/
    ...); a root nested in another (Shaoxubao's store/unit_test_store) is a store of its own."""
    if not ROCKETMQ.exists():
        return []
    return sorted(str(p.relative_to(ROCKETMQ)) for p in ROCKETMQ.rglob("*") if is_rocketmq_root(p))


def _kafka07_captures() -> list[str]:
    """The directories holding Kafka 0.7 partition dirs (``<topic>-<partition>`` of ``.kafka``
    segments only): the log dirs of a Kafka 0.7 broker."""
    if not KAFKA.exists():
        return []
    parts = {f.parent for f in KAFKA.rglob(f"*{KAFKA_07}") if f.is_file() and f.parent.name.rpartition("-")[2].isdigit()}
    return sorted({str(p.parent.relative_to(KAFKA)) for p in parts if not _kafka_dir(p)})


KAFKA_CAPTURES = _kafka_captures()
KAFKA07_CAPTURES = _kafka07_captures()
ROCKETMQ_STORES = _rocketmq_stores()

# Torn by design: tulios-kafkajs/SOURCE.md says its carved record sets include "four 1,024-byte
# record sets that are ONE PARTIAL message each (fetch max-bytes cut: a real torn tail)", the ones
# carved from v2_response_partial_messages_* (tests/formats/kafka/test_real_captures.py ties the
# set to that sentence).  validate must report the torn tail (a warning, not an error), and the
# dump, like kafka-python, returns no record from them.
TORN_BY_DESIGN = frozenset(rel for rel in KAFKA_CAPTURES if rel.startswith("tulios-kafkajs/carved/") and "partial" in Path(rel).name)


# --- Kafka -----------------------------------------------------------------------------------------


def _kafka_python_records(data: bytes) -> list[tuple]:
    """kafka-python's reading of one file: every batch's records, control records included."""
    from kafka.record.memory_records import MemoryRecords

    records = MemoryRecords(data)
    out = []
    while (batch := records.next_batch()) is not None:
        for r in batch:
            timestamp = r.timestamp if r.timestamp is not None else -1  # magic 0: no timestamp (mqtool: -1)
            out.append((r.offset, timestamp, r.key, r.value, [(k, v) for k, v in r.headers]))
    return out


def _b64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _dumped_records(rows: list[dict]) -> dict[str, list[tuple]]:
    """The dump's record rows (base64, the default --decode) as kafka-python's tuples, by file."""
    by_file: dict[str, list[tuple]] = {}
    for row in rows:
        if row["kind"] == "record":
            record = (row["offset"], row["timestamp"], _b64(row["key"]), _b64(row["payload"]), [(h["key"], _b64(h["value"])) for h in row["headers"]])
            by_file.setdefault(row["file"], []).append(record)
    return by_file


@pytest.mark.parametrize("rel", KAFKA_CAPTURES or ["(no real fixtures)"])
def test_kafka_capture(capsys, rel):
    path = real_path("kafka", *Path(rel).parts)
    layout = ["--layout", "kafka"] if path.is_file() else []  # a carved record set is a Kafka target only when told

    code, out, err = mqtool(capsys, "validate", path, *layout, "--deep", "--json", "--jobs", "1")
    report = json.loads(out)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert code == 0 and report["counts"]["error"] == 0, (err, errors)
    if rel in TORN_BY_DESIGN:
        loud = [(f["code"], f["position"], f["length"]) for f in report["findings"] if f["severity"] != "info"]
        assert loud == [("KAFKA-LOG-TORN-TAIL", 0, path.stat().st_size)]

    # --records-only: the record rows of --deep without the batch rows (validate --deep checked the
    # batches); --no-decoders: key and payload bytes as stored, internal topics too
    code, out, err = mqtool(capsys, "dump", "kafka-log", path, "--records-only", "--jsonl", "--no-decoders")
    assert code == 0, err
    if rel in TORN_BY_DESIGN:
        assert "torn tail" in err
    dumped = _dumped_records([json.loads(line) for line in out.splitlines()])

    pytest.importorskip("kafka.record.memory_records")  # the test extra has it
    from kafka.errors import UnsupportedCodecError

    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in RECORD_FILES)
    # and any other file the dump read records from (none today: a log dir's dump reads its .log files);
    # a torn-by-design set gives no record on either side
    files += sorted({Path(f) for f in dumped} - set(files))
    uncompared = []
    for file in files:
        try:
            theirs = _kafka_python_records(file.read_bytes())
        except UnsupportedCodecError as exc:  # kafka-python without a codec this file needs
            uncompared.append(f"{file.relative_to(KAFKA)}: {exc}")
            continue
        ours = dumped.get(str(file), [])
        assert ours == theirs, f"{file.relative_to(KAFKA)}: dump has {len(ours)} records, kafka-python {len(theirs)}"
    if uncompared:
        pytest.skip(f"kafka-python lacks a codec: not compared {uncompared}")


# --- RocketMQ --------------------------------------------------------------------------------------

BLANK_MAGIC = 0xCBD43194
MESSAGE_MAGICS = (0xDAA320A7, 0xDAA320A8)  # v1, v2 (topic length in 2 bytes)


def _commitlog_frames(root: Path) -> int:
    """Messages in the CommitLog, read independently: TOTALSIZE (int32 BE) at +0, MAGICCODE at +4,
    file by file until a BLANK frame, a zero TOTALSIZE or the end of the file."""
    count = 0
    for file in sorted((root / "commitlog").glob("*")):
        data, pos = file.read_bytes(), 0
        while pos + 8 <= len(data):
            size, magic = struct.unpack_from(">iI", data, pos)
            if size == 0 or magic == BLANK_MAGIC:
                break
            assert magic in MESSAGE_MAGICS and 8 <= size <= len(data) - pos, (file, pos, size, hex(magic))
            count, pos = count + 1, pos + size
    return count


@pytest.mark.parametrize("rel", ROCKETMQ_STORES or ["(no real fixtures)"])
def test_rocketmq_store(capsys, rel):
    root = real_path("rocketmq", *Path(rel).parts)

    code, out, err = mqtool(capsys, "validate", root, "--json", "--jobs", "1")
    report = json.loads(out)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert code == 0 and report["counts"]["error"] == 0, (err, errors)

    code, out, err = mqtool(capsys, "dump", "commitlog", root, "--jsonl")
    assert code == 0, err
    assert len(out.splitlines()) == _commitlog_frames(root)


def _framed_messages(data: bytes) -> int:
    """Messages a Kafka 0.7 segment frames (``FileMessageSet``: a 4-byte LENGTH, then that many
    bytes), counted without mqtool's decoders, up to zeros or a frame past the end."""
    pos = count = 0
    while pos + 4 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos)
        if length <= 0 or pos + 4 + length > len(data):
            break
        pos += 4 + length
        count += 1
    return count


@pytest.mark.parametrize("rel", KAFKA07_CAPTURES or ["(no real fixtures)"])
def test_kafka07_capture(capsys, rel):
    if not KAFKA07_CAPTURES:
        pytest.skip("no Kafka 0.7 capture in ../shared/fixtures-real")
    path = real_path("kafka", rel)
    code, out, _ = mqtool(capsys, "info", path, "--json")
    assert code == 0 and json.loads(out)["variant"] == "kafka07"
    code, out, _ = mqtool(capsys, "validate", path, "-f", "json")
    assert code == 0 and not [f for f in json.loads(out)["findings"] if f["severity"] == "error"]
    code, out, _ = mqtool(capsys, "dump", "jafka", path, "--jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    framed = sum(_framed_messages(seg.read_bytes()) for seg in path.rglob(f"*{KAFKA_07}"))
    assert framed > 0 and len([r for r in rows if r.get("kind") == "message"]) == framed
