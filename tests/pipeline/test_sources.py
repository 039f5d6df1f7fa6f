"""The data sources: rows equal ``mqtool dump --jsonl`` (bundled fixture and real captures),
byte-range partitions give exactly the rows of one partition, topic pushdown, URIs."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mqtool.cli.app import run as cli_run
from mqtool.formats import segment_names as segnames
from tests.conftest import FIXTURES, PROJECT_ROOT, real_path

STORE = FIXTURES / "rocketmq-store"


def dump_jsonl(capsys, *args: str) -> list[dict]:
    capsys.readouterr()
    code = cli_run(["dump", *args, "--jsonl"])
    assert code == 0, capsys.readouterr().err
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def rows(frame) -> list[dict]:
    return [r.asDict(recursive=True) for r in frame.collect()]


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _real_rocketmq(name: str) -> Path:
    return real_path("rocketmq", *name.split("/"))


# --- RocketMQ ----------------------------------------------------------------------------------------


def assert_commitlog_equals_dump(spark, capsys, path: Path, **options) -> int:
    expected = dump_jsonl(capsys, "commitlog", str(path))
    reader = spark.read.format("rocketmq_commitlog")
    for key, value in options.items():
        reader = reader.option(key, value)
    got = {(r["file"], r["position"]): r for r in rows(reader.load(str(path)))}
    assert len(got) == len(expected)
    for want in expected:
        row = got[(want["file"], want["position"])]
        for name, value in want.items():
            assert (b64(row[name]) if name == "body" else row[name]) == value, (name, want["file"], want["position"])
    return len(expected)


def test_commitlog_rows_equal_dump_on_the_fixture(spark, capsys):
    assert assert_commitlog_equals_dump(spark, capsys, STORE) == 245


@pytest.mark.parametrize(
    "store",
    ["EricPanGopher-rocketmq/store/unit_test_store", "Shaoxubao-rocketmq-study/store/unit_test_store", "apache-rocketmq/pr3535-4e25b979/store"],
)
def test_commitlog_rows_equal_dump_on_real_captures(spark, capsys, store):
    assert assert_commitlog_equals_dump(spark, capsys, _real_rocketmq(store)) > 0


@pytest.mark.parametrize("store", [str(STORE), "real:EricPanGopher-rocketmq/store/unit_test_store"])
def test_consumequeue_rows_equal_dump(spark, capsys, store):
    path = _real_rocketmq(store[5:]) if store.startswith("real:") else Path(store)
    expected = dump_jsonl(capsys, "consumequeue", str(path))
    got = {(r["file"], r["position"]): r for r in rows(spark.read.format("rocketmq_consumequeue").load(str(path)))}
    assert len(got) == len(expected) > 0
    for want in expected:
        row = got[(want["file"], want["position"])]
        assert {k: row[k] for k in want} == want
    if store.startswith("real:"):  # every unit is a ConsumeQueueExt address, resolved to TAG1's hash
        assert {r["ext_tags_code"] for r in got.values()} == {2567159}


@pytest.mark.parametrize("store", [str(STORE), "real:apache-rocketmq/pr6495-65a086a2/store/100"])
def test_index_rows_equal_dump(spark, capsys, store):
    path = _real_rocketmq(store[5:]) if store.startswith("real:") else Path(store)
    expected = [r for r in dump_jsonl(capsys, "index", str(path)) if r["record"] == "entry"]
    got = {(r["file"], r["number"]): r for r in rows(spark.read.format("rocketmq_index").load(str(path)))}
    assert len(got) == len(expected)
    for want in expected:
        row = got[(want["file"], want["number"])]
        assert {k: row[k] for k in want if k not in ("record", "time")} == {k: v for k, v in want.items() if k not in ("record", "time")}


# --- Kafka, Jafka, MetaQ -----------------------------------------------------------------------------

KAFKA_FIELDS = ("file", "offset", "timestamp", "timestamp_type", "value_size", "sequence")


@pytest.mark.parametrize(
    "capture", ["asayers-kafkalite/tests/test-data/fs-data", "DonaldY-kafka-2.7.1/kafka-logs", "Jeong-Rae-KafkaDemo"]
)
def test_kafka_rows_equal_dump(spark, capsys, capture):
    path = real_path("kafka", *capture.split("/"))
    if capture.startswith("Jeong"):
        path = next(p.parent for p in sorted(path.rglob("*.log")))  # the KRaft metadata partition dir
    got = rows(spark.read.format("kafka_log").load(str(path)))
    expected = [r for r in dump_jsonl(capsys, "kafka-log", str(path), "--records-only") if r.get("kind") == "record"]
    assert len(got) == len(expected) > 0
    index = {(r["file"], r["batch_position"], r["offset"]): r for r in got}
    for want in expected:
        row = index[(want["file"], want["batch_position"], want["offset"])]
        assert {k: row[k] for k in KAFKA_FIELDS} == {k: want[k] for k in KAFKA_FIELDS}
        assert b64(row["key"]) == want["key"]
        if isinstance(want.get("payload"), str) or want.get("payload") is None:
            assert b64(row["payload"]) == want["payload"]


def write_legacy_dirs(base: Path, *, messages: int = 40) -> tuple[Path, Path]:
    """A Jafka and a MetaQ data dir (no real captures exist: synthesized with the formats'
    encoders), each with two partitions and, for Jafka, gzip wrappers."""
    from mqtool.formats import jafka as jf
    from mqtool.formats import metaq as mq

    jafka, metaq = base / "jafka", base / "metaq"
    for part in (0, 1):
        jdir = jafka / f"demo-{part}"
        jdir.mkdir(parents=True)
        data = bytearray()
        for i in range(messages):
            if i % 7 == 3:
                data += jf.encode_message(jf.compress_messages([jf.Message(b"inner-%d-%d" % (i, k)) for k in range(3)]))
            else:
                data += jf.encode_message(jf.Message(b"jafka message %d " % i * (1 + i % 5)))
        (jdir / segnames.jafka_file_name(0)).write_bytes(bytes(data))
        mdir = metaq / f"meta-test-{part}"
        mdir.mkdir(parents=True)
        blob = b"".join(
            mq.encode_message(mq.make_message(1000 + i, b"metaq payload %d " % i * (1 + i % 4), f"attr{i}" if i % 2 else None))
            for i in range(messages)
        )
        (mdir / segnames.metaq_file_name(0)).write_bytes(blob)
    return jafka, metaq


@pytest.fixture(scope="module")
def legacy_dirs(tmp_path_factory):
    return write_legacy_dirs(tmp_path_factory.mktemp("legacy"))


def test_jafka_rows_equal_dump(spark, capsys, legacy_dirs):
    jafka, _ = legacy_dirs
    expected = dump_jsonl(capsys, "jafka", str(jafka))
    got = rows(spark.read.format("jafka_log").load(str(jafka)))
    assert len(got) == len(expected) > 0
    key = lambda r: (r["file"], r["position"], r["kind"], r["inner_index"] if r["inner_index"] is not None else -1)  # noqa: E731
    index = {key(r): r for r in got}
    for want in expected:
        row = index[key(want)]
        for name in ("topic", "partition", "offset", "next_offset", "depth", "inner_position", "length", "magic", "attribute", "codec", "crc", "payload_size"):
            assert row[name] == want[name], name
        assert b64(row["payload"]) == want["payload"]


def test_metaq_rows_equal_dump(spark, capsys, legacy_dirs):
    _, metaq = legacy_dirs
    expected = dump_jsonl(capsys, "metaq", str(metaq))
    got = {(r["file"], r["position"]): r for r in rows(spark.read.format("metaq_log").load(str(metaq)))}
    assert len(got) == len(expected) > 0
    for want in expected:
        row = got[(want["file"], want["position"])]
        for name in ("topic", "partition", "offset", "next_offset", "msg_len", "checksum", "id", "flag", "attribute", "payload_size"):
            assert row[name] == want[name], name
        assert b64(row["payload"]) == want["payload"]


# --- byte ranges ---------------------------------------------------------------------------------------


def _split_vs_single(spark, fmt: str, path, split: int, **options):
    from pyspark.testing import assertDataFrameEqual

    def read(size):
        reader = spark.read.format(fmt).option("splitSize", str(size))
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load(str(path))

    many, one = read(split), read(1 << 40)
    assert many.rdd.getNumPartitions() > one.rdd.getNumPartitions()
    assertDataFrameEqual(many, one)
    return many


def test_byte_ranges_equal_one_partition_rocketmq(spark, tmp_path):
    """Ranges of 3000 bytes (six per 16 KiB file, most starting mid-record), on the fixture and
    on a damaged copy (broken records, resynchronisation and problem rows included)."""
    from tests.pipeline.damage import broken_magic, body_crc, copy_store, phys_offset, torn_tail

    _split_vs_single(spark, "rocketmq_commitlog", STORE, 3000)
    root = copy_store(tmp_path / "damaged")
    for damage in (broken_magic, body_crc, phys_offset, torn_tail):
        damage(root)
    frame = _split_vs_single(spark, "rocketmq_commitlog", root, 3000, withProblems="true", withKeyHashes="true")
    kinds = {r["row_kind"] for r in frame.select("row_kind").distinct().collect()}
    assert kinds == {"record", "problem", "end"}


def test_unit_and_entry_partitions_are_sized_in_rows(spark):
    """ConsumeQueue units and IndexFile entries are 20 bytes but cost a task about what a record
    does: a split carries ``splitSize / ROW_EQUIVALENT_BYTES`` rows, not ``splitSize / 20``."""
    import json

    from mqtool.pipeline import sources as src

    split = 100 * src.ROW_EQUIVALENT_BYTES  # 100 rows
    opts = src.parse_options({"sources": json.dumps([["s", str(STORE)]]), "splitSize": str(split)})
    entries = src.plan_index(opts)
    for path in {p.path for p in entries}:
        sizes = [p.stop - p.start for p in entries if p.path == path]
        assert sizes[:-1] == [100] * (len(sizes) - 1) and 0 < sizes[-1] <= 100, path
    used = sum(p.stop - p.start for p in entries)
    assert used == spark.read.format("rocketmq_index").load(str(STORE)).count() > 100
    for group in src.plan_consumequeue(opts)[:-1]:
        # queues are never split: a group closes at the first queue that reaches 100 units
        units = [sum(size for _, _, size in q[2]) // src.cqf.CQ_UNIT_SIZE for q in group.meta["queues"]]
        assert sum(units) >= 100 and sum(units[:-1]) < 100
    _split_vs_single(spark, "rocketmq_index", STORE, split)
    _split_vs_single(spark, "rocketmq_consumequeue", STORE, 20 * src.ROW_EQUIVALENT_BYTES)


def test_byte_ranges_equal_one_partition_kafka(spark):
    path = real_path("kafka", "asayers-kafkalite", "tests", "test-data", "fs-data")
    _split_vs_single(spark, "kafka_log", path, 64 << 10)


def test_byte_ranges_equal_one_partition_jafka_metaq(spark, legacy_dirs):
    jafka, metaq = legacy_dirs
    _split_vs_single(spark, "jafka_log", jafka, 300)
    _split_vs_single(spark, "metaq_log", metaq, 300)


# --- options -------------------------------------------------------------------------------------------


def test_topic_filter_pushdown_and_option(spark):
    full = spark.read.format("rocketmq_commitlog").option("withBody", "false").load(str(STORE))
    assert full.where("body is not null").count() == 0
    # Spark does not re-check a filter the source accepted: other topics here would mean the
    # reader ignored it.
    pushed = full.where("topic = 'TopicTest'")
    assert {r["topic"] for r in pushed.select("topic").distinct().collect()} == {"TopicTest"}
    assert pushed.count() == full.groupBy("topic").count().where("topic = 'TopicTest'").first()["count"]
    units = spark.read.format("rocketmq_consumequeue").load(str(STORE))
    in_list = units.where("topic in ('TopicTest', 'OrderTopic')")
    assert {r["topic"] for r in in_list.select("topic").distinct().collect()} == {"TopicTest", "OrderTopic"}
    option = spark.read.format("rocketmq_consumequeue").option("topic", "OrderTopic").load(str(STORE))
    assert option.count() == units.where("topic = 'OrderTopic'").count()


def test_paths_globs_uris_and_sources(spark, tmp_path):
    """A file:// URI (read through pyarrow.fs), a glob, and several paths give the same rows."""
    import shutil

    for name in ("broker-a", "broker-b"):
        shutil.copytree(STORE, tmp_path / name / "store")
    local = spark.read.format("rocketmq_index").load(str(STORE))
    uri = spark.read.format("rocketmq_index").load(f"file://{STORE.resolve()}")
    assert uri.count() == local.count() == 724
    assert uri.first()["file"].startswith("file:///")
    globbed = spark.read.format("rocketmq_index").load(str(tmp_path / "broker-*" / "store"))
    assert {r["source"] for r in globbed.select("source").distinct().collect()} == {str(tmp_path / n / "store") for n in ("broker-a", "broker-b")}
    listed = spark.read.format("rocketmq_commitlog").load([str(tmp_path / "broker-a" / "store"), str(tmp_path / "broker-b" / "store")])
    assert listed.count() == 2 * 245


def test_register_on_a_users_session(spark):
    """``mqtool.pipeline.register`` is all a PySpark user needs (idempotent)."""
    import mqtool.pipeline

    mqtool.pipeline.register(spark)
    names = set(mqtool.pipeline.FORMAT_NAMES)
    from mqtool.pipeline.sources import FORMAT_NAMES

    assert names == set(FORMAT_NAMES)
    assert spark.read.format("rocketmq_commitlog").load(str(STORE)).select("topic").distinct().count() >= 4


# --- no pyspark outside pipeline/ -----------------------------------------------------------------------


def test_help_does_not_import_pyspark_or_pyarrow():
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "mqtool", "--help"], capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert done.returncode == 0
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert "mqtool" in imported and not imported & {"pyspark", "pyarrow", "py4j"}


def test_cmd_scan_imports_the_pipeline_only_inside_the_command():
    import ast

    tree = ast.parse((PROJECT_ROOT / "mqtool" / "cli" / "cmd_scan.py").read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = [a.name for n in top for a in n.names] + [n.module or "" for n in top if isinstance(n, ast.ImportFrom)]
    assert not [n for n in names if n.startswith(("mqtool.pipeline", "pyspark", "pyarrow"))]


@pytest.mark.parametrize(
    "head, code",
    [
        (bytes(range(8)) + b"\x20" * 9, "KAFKA-LOG-SIZE"),  # random bytes: a 514 MiB "entry"
        ((110).to_bytes(8, "big") + (500).to_bytes(4, "big") + bytes(4) + bytes([7]), "KAFKA-LOG-MAGIC"),
        ((50).to_bytes(8, "big") + (500).to_bytes(4, "big") + bytes(4) + bytes([2]), "KAFKA-OFFSET-ORDER"),
        ((110).to_bytes(8, "big") + (500).to_bytes(4, "big") + bytes(4) + bytes([2]), None),  # a torn write
    ],
)
def test_scan_judges_a_cut_kafka_entry_as_validate_does(tmp_path, head, code):
    from mqtool.ops.validate import ValidateOptions
    from mqtool.ops.validate.kafka import validate_kafka
    from mqtool.pipeline.sources import KAFKA_FRAMING
    from mqtool.store.files import ReadOnlyFile
    from mqtool.store.model.framed import RangeProblem, read_range

    part = tmp_path / "t-0"
    part.mkdir()
    log = part / "00000000000000000090.log"
    log.write_bytes((FIXTURES / "kafka-logs" / "orders-0" / log.name).read_bytes() + head + b"\x01" * 40)
    with ReadOnlyFile(log) as f:
        events = list(read_range(KAFKA_FRAMING, f, 0, f.size))
    problems = [event.code for event in events if isinstance(event, RangeProblem)]
    report = validate_kafka(part, ValidateOptions())
    errors = [x.code for x in report.findings if x.level.name == "error"]
    if code is None:
        assert problems == [] and events[-1].kind == "partial" and errors == []
    else:
        assert problems == [code, "KAFKA-LOG-GARBAGE"] and events[-1].kind == "unreadable"
        assert errors == problems


def test_index_partitions_of_an_unlisted_geometry(tmp_path):
    """The Spark source plans an IndexFile of any geometry from its bytes, as validate reads it
    (no Spark session: planning only)."""
    import datetime as dt
    import json

    from mqtool.formats.rocketmq import commitlog as cl
    from mqtool.pipeline import sources as src
    from mqtool.store.writer import StoreWriter, WriterConfig

    config = WriterConfig(commitlog_file_size=4096, cq_file_size=200, index_hash_slot_num=500, index_num=3000, index_tz=dt.timezone.utc)
    with StoreWriter(tmp_path / "store", config) as writer:
        for i in range(12):
            writer.append(cl.MessageRecord(topic="T", body=b"x" * 10, properties={"KEYS": f"k{i}"}))
    opts = src.parse_options({"sources": json.dumps([["s", str(tmp_path / "store")]])})
    parts = src.plan_index(opts)
    assert sum(p.stop - p.start for p in parts) == 12
    assert {(p.meta["slots"], p.meta["entries_position"]) for p in parts} == {(500, 40 + 4 * 500)}
