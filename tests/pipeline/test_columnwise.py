"""The column-wise CommitLog read (``read_commitlog``) gives exactly the rows of the per-record
read (``read_commitlog_records``): same schema, values and order, problem/damaged/end rows and
byte ranges included, on the fixture, on a generated store with every kind of record the fast
walk frames or refuses, and on damaged copies.  No Spark: the readers are called as the Python
worker calls them, and the Arrow tables are compared."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from mqtool.formats import column_ops
from mqtool.formats.rocketmq import columns as rcols
from mqtool.formats.rocketmq import record_fields as rfields
from mqtool.formats.rocketmq.commitlog import (
    MAGIC_V2,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_COMPRESSED,
    SYSFLAG_STOREHOST_V6,
    SYSFLAG_TRANSACTION_COMMIT,
    SYSFLAG_TRANSACTION_PREPARED,
    HostAddress,
    MessageRecord,
)
from mqtool.pipeline import sources as S
from mqtool.store.writer import StoreWriter, WriterConfig

from tests.pipeline import damage

OPTIONS = [
    {},
    {"withProblems": "true", "withKeyHashes": "true"},
    {"withBody": "false", "topic": "TopicTest,Mixed,ÜnïcødeTopic"},
    {"splitSize": "3000", "withProblems": "true", "withKeyHashes": "true"},
    {"splitSize": "5001", "withProblems": "true", "topic": "Mixed"},
]


def _table(reader, path: Path, options: dict) -> pa.Table:
    opts = S.parse_options({"path": str(path), **options})
    schema = S.arrow_schema(S._columns(S.COMMITLOG_COLUMNS, opts, "commitlog"))
    batches = [b for part in S.plan_commitlog(opts) for b in reader(part, opts, schema)]
    for batch in batches:
        assert batch.schema.equals(schema)
    return pa.Table.from_batches(batches, schema=schema)


def assert_same_rows(path: Path, options: dict) -> int:
    expected = _table(S.read_commitlog_records, path, options)
    found = _table(S.read_commitlog, path, options)
    for name in expected.schema.names:
        assert found[name].to_pylist() == expected[name].to_pylist(), (path, options, name)
    assert found.equals(expected)
    return expected.num_rows


def _mixed_store(root: Path, crc_property_at: int | None = None) -> Path:
    """Records of every shape: both magics, IPv6 hosts, compressed and transactional flags, delayed
    messages, empty bodies and properties, non-ASCII text, KEYS with runs of spaces."""
    config = WriterConfig(commitlog_file_size=64 << 10, auto_message_version=False)
    with StoreWriter(root, config) as writer:
        for i in range(400):
            v6 = i % 7 == 3
            props = {"KEYS": f"  k{i}  second{i % 3} ", "TAGS": f"Tag{i % 5}", "UNIQ_KEY": f"{i:032X}"}
            if i % 11 == 0:
                props = {}
            elif i % 13 == 0:
                props = {"TAGS": "tägß", "KEYS": "ключ"}
            elif i % 17 == 0:
                props = {"DELAY": str(i % 20), "REAL_TOPIC": "Mixed", "TAGS": "Late"}
            writer.append(
                MessageRecord(
                    topic="SCHEDULE_TOPIC_XXXX" if i % 17 == 0 else ("ÜnïcødeTopic" if i % 9 == 0 else "Mixed"),
                    body=b"" if i % 10 == 0 else bytes([i % 256]) * (i * 37 % 900),
                    properties=props,
                    queue_id=i % 3,
                    flag=i - 200,
                    sys_flag=(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6 if v6 else 0)
                    | (SYSFLAG_COMPRESSED | (i % 4) << 8 if i % 19 == 0 else 0)
                    | (SYSFLAG_TRANSACTION_PREPARED if i % 23 == 0 else SYSFLAG_TRANSACTION_COMMIT if i % 29 == 0 else 0),
                    born_timestamp=1_700_000_000_000 + i,
                    born_host=HostAddress("2001:db8::1", 5000 + i) if v6 else HostAddress("10.0.0.2", -i),
                    store_host=HostAddress("fe80::2", 10911) if v6 else HostAddress(f"192.168.1.{i % 3}", 10911),
                    reconsume_times=i % 4,
                    prepared_transaction_offset=i * 3,
                    magic_code=MAGIC_V2 if i % 5 == 1 else MessageRecord.magic_code,
                )
            )
    return root


def test_fixture_rows_are_the_per_record_rows():
    for options in OPTIONS:
        assert assert_same_rows(damage.STORE, options) > 0


def test_mixed_records_rows_are_the_per_record_rows(tmp_path):
    root = _mixed_store(tmp_path / "mixed")
    for options in OPTIONS:
        assert assert_same_rows(root, options) > 0


def test_repeated_property_names_and_crc_property(tmp_path):
    """A properties map that is not its list of pairs (a name twice: the fast walk accepts it,
    the map keeps the last value) and the ``__CRC32#`` property (the fast walk refuses it)."""
    root = _mixed_store(tmp_path / "mixed")
    first = min((root / "commitlog").iterdir())
    raw = first.read_bytes()
    at = raw.index(b"UNIQ_KEY\x01", 20_000)
    # KEYS, TAGS, UNIQ_KEY -> KEYS, TAGS, TAGS (same length, the body CRC still holds)
    patched = raw[:at] + b"TAGS\x01" + b"y" * 36 + b"\x02" + raw[at + 42 :]
    assert len(patched) == len(raw) and raw[at + 41] == 2
    first.write_bytes(patched)
    rows = _table(S.read_commitlog_records, root, {"withProblems": "true"})
    assert ("TAGS", "y" * 36) in [pair for m in rows["properties"].to_pylist() if m for pair in m]
    for options in OPTIONS:
        assert_same_rows(root, options)
    crc_root = tmp_path / "crc"
    with StoreWriter(crc_root, WriterConfig(commitlog_file_size=64 << 10, append_crc_property=True)) as writer:
        for i in range(150):
            writer.append(MessageRecord(topic="TopicTest", body=bytes(i), properties={"TAGS": "a", "KEYS": f"k{i}"}))
    for options in OPTIONS:
        assert_same_rows(crc_root, options)


@pytest.mark.parametrize("case", sorted(set(damage.CASES) | set(damage.AGREEMENT_CASES)))
def test_damaged_stores_give_the_per_record_rows(tmp_path, case):
    root = damage.copy_store(tmp_path / "store")
    (damage.CASES.get(case) or damage.AGREEMENT_CASES[case])(root)
    for options in OPTIONS:
        assert_same_rows(root, options)


def test_damage_in_a_generated_store(tmp_path):
    """A broken record in the middle of a long healthy stretch: the fast walk stops there, the
    per-record path reports it, and the fast walk takes over again after it."""
    root = _mixed_store(tmp_path / "mixed")
    path = sorted((root / "commitlog").iterdir())[1]
    raw = bytearray(path.read_bytes())
    for at in (9_000, 30_000, 30_001):
        raw[at] ^= 0x5A
    path.write_bytes(bytes(raw))
    for options in OPTIONS:
        assert assert_same_rows(root, options) > 0
    shutil.rmtree(root)


def _fields_dict(fields) -> dict:
    """The values of a ``RecordFields`` as plain lists (Spans as their bytes and offsets)."""
    out = {}
    for name, value in vars(fields).items():
        if isinstance(value, column_ops.Spans):
            out[name] = (value.values.tobytes(), value.offsets.tolist())
        elif isinstance(value, np.ndarray):
            out[name] = value.tolist()
        else:
            out[name] = value
    return out


def test_the_walks_properties_give_the_fields_split_again(tmp_path):
    """What the source takes from the walk instead of doing it twice: ``record_fields`` with the
    walk's split properties gives what it gives splitting them again (for all the records and
    for a subset, as a topic filter asks), and a walk without key hashes judges the bytes alike."""
    root = _mixed_store(tmp_path / "mixed")
    checked = hashes = 0
    for path in sorted((root / "commitlog").iterdir()):
        data = path.read_bytes()
        start = 0
        while start < len(data):  # each healthy stretch (the walk refuses some records of this store)
            walk = rcols.walk_columns(data, int(path.name), start=start)
            lean = rcols.walk_columns(data, int(path.name), start=start, key_hashes=False)
            assert lean.stop == walk.stop and len(lean.columns) == len(walk.columns)
            for name in ("position", "size", "queue_id", "queue_offset", "store_timestamp", "sys_flag", "topic", "tags_code"):
                assert getattr(lean.columns, name).tolist() == getattr(walk.columns, name).tolist(), name
            assert lean.columns.topics == walk.columns.topics and not len(lean.columns.key_hash)
            hashes += len(walk.columns.key_hash)
            for rows in (np.arange(len(walk.columns)), np.arange(1, len(walk.columns), 3)):
                split_again = rfields.record_fields(data, walk.columns, rows)
                taken = rfields.record_fields(data, walk.columns, rows, properties=walk.properties)
                assert _fields_dict(taken) == _fields_dict(split_again)
                checked += len(rows)
            size = int.from_bytes(data[walk.stop.position : walk.stop.position + 4], "big", signed=True)
            if walk.stop.kind != "anomaly" or size <= 0:
                break
            start = walk.stop.position + size  # past the refused record
    assert checked > 400 and hashes > 400
