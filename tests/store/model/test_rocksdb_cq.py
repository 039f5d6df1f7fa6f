"""The RocksDB ConsumeQueue's store model (store.model.rocksdb_cq): damage placed anywhere in a
unit's key or value is found at that key.

One store (CommitLog from ``StoreWriter``, units from ``tests/rocksdb_cq_store.py``); each example
writes a RocksDB whose units are the store's with one byte of one key or value flipped, and judges it
against the store's CommitLog.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.store import rocketmq as rmq
from mqtool.store.model import rocksdb_cq as model
from mqtool.store.rocksdb_cq import RocksCq
from tests import rocksdb_cq_store as w


@pytest.fixture(scope="module", autouse=True)
def _rocksdict():
    w.require_rocksdict()


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("rocks-model") / "store"
    units = w.make_rocksdb_store(root)
    return rmq.open_store(root), units


def _write_raw(path: Path, pairs: list[tuple[bytes, bytes]]) -> None:
    from rocksdict import Options, Rdict

    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    db = Rdict(str(path), options=opts)
    for k, v in pairs:
        db[k] = v
    db.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_one_flipped_byte_is_found_at_its_key(base, data):
    store, units = base
    end = rmq.commitlog_end(store)
    pairs = [(w.cq_key(u.topic, u.queue_id, u.queue_offset), w.cq_value(u.phy, u.size, u.tags_code, u.store_ts)) for u in units]
    i = data.draw(st.integers(0, len(pairs) - 1), label="unit")
    in_key = data.draw(st.booleans(), label="in the key")
    key, value = pairs[i]
    target = bytearray(key if in_key else value)
    at = data.draw(st.integers(0, len(target) - 1), label="byte")
    target[at] ^= data.draw(st.integers(1, 255), label="xor")
    key, value = (bytes(target), value) if in_key else (key, bytes(target))
    # a flipped key that is another unit's key overwrites that unit: both keys stay well formed, and
    # what is wrong is the queue that lost a unit (found on that queue, not at the key)
    collides = in_key and key in {k for k, _ in pairs}
    pairs[i] = (key, value)
    with tempfile.TemporaryDirectory() as tmp:
        _write_raw(Path(tmp) / "db", pairs)
        with RocksCq(Path(tmp) / "db") as db:
            judged = model.judge(db, store, commitlog_end=end)
    at_key = [f for f in judged.findings if f.details.get("key") == key.hex()]
    if collides:
        at_key = [f for f in judged.findings if f.level.value == "error"]
    assert at_key, [f.message for f in judged.findings]
    assert all(f.level.value == "error" for f in at_key)


def test_healthy_units_judge_clean(base):
    store, units = base
    with tempfile.TemporaryDirectory() as tmp:
        w.write_db(Path(tmp) / "db", units)
        with RocksCq(Path(tmp) / "db") as db:
            judged = model.judge(db, store, commitlog_end=rmq.commitlog_end(store))
    assert judged.findings == [] and judged.units == len(units)
    assert judged.ranges() == {("TopicA", 0): (0, 4), ("TopicA", 1): (0, 4), ("TopicB", 0): (0, 4)}
