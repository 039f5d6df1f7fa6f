"""The fast path of ``validate`` (healthy bytes read as columns, cross-checks in bulk) gives exactly
the report of the precise path (every record decoded, every unit and entry read back), on healthy
stores and on damage that hypothesis places anywhere in any file.

Both paths run over the same damaged copy; the whole JSON report (findings with code, severity,
path, position, length and message; per-file summaries; facts) must be equal.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from mqtool.store.writer import StoreWriter, WriterConfig
from tests.conftest import FIXTURES

SMALL = WriterConfig(commitlog_file_size=4096, cq_file_size=200, index_hash_slot_num=16, index_num=64, index_tz=dt.timezone.utc)


def _generated(root: Path) -> Path:
    now = [1_700_000_000_000]

    def clock() -> int:
        now[0] += 7
        return now[0]

    with StoreWriter(root, SMALL, clock=clock) as writer:
        for i in range(60):
            writer.append(
                cl.MessageRecord(
                    topic="T" if i % 3 else "Other",
                    queue_id=i % 2,
                    body=bytes([i % 256]) * 60,
                    properties={"KEYS": f"k{i} shared", "TAGS": "TagA" if i % 2 else "TagB", "UNIQ_KEY": f"{i:032X}"},
                )
            )
    return root


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("fast-path")
    return {"fixture": FIXTURES / "rocketmq-store", "generated": _generated(base / "generated")}


def _report(root: Path, fast: bool) -> dict[str, object]:
    doc = validate_rocketmq(root, ValidateOptions(fast=fast)).to_dict()
    return doc


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.stat().st_size and p.parent.name != "config" and p.name not in ("lock",))


@pytest.mark.parametrize("name", ["fixture", "generated"])
def test_healthy_stores_give_the_same_report(stores: dict[str, Path], name: str) -> None:
    fast = _report(stores[name], True)
    assert fast == _report(stores[name], False)
    assert fast["ok"]


DAMAGE = st.sampled_from(["flip", "zero", "random", "truncate", "append"])


@settings(max_examples=int(__import__("os").environ.get("MQTOOL_FAST_PATH_EXAMPLES", "60")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_damage_anywhere_gives_the_same_report(stores: dict[str, Path], tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(["fixture", "generated"]))
    root = tmp_path_factory.mktemp("copy") / "store"
    shutil.copytree(stores[name], root)
    files = _files(root)
    target = data.draw(st.sampled_from(files), label="file")
    raw = bytearray(target.read_bytes())
    kind = data.draw(DAMAGE, label="damage")
    at = data.draw(st.integers(0, len(raw) - 1), label="position")
    if kind == "flip":
        raw[at] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "zero":
        length = data.draw(st.integers(1, 64))
        raw[at : at + length] = bytes(len(raw[at : at + length]))
    elif kind == "random":
        chunk = data.draw(st.binary(min_size=1, max_size=64))
        raw[at : at + len(chunk)] = chunk
    elif kind == "truncate":
        del raw[at:]
    else:
        raw += data.draw(st.binary(min_size=1, max_size=300))
    target.write_bytes(bytes(raw))
    assert _report(root, True) == _report(root, False)


@pytest.mark.parametrize("name", ["fixture", "generated"])
def test_healthy_stores_take_the_fast_path_everywhere(stores: dict[str, Path], name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No record, unit or entry of a healthy store is read back one by one."""
    import mqtool.store.model.commitlog_check as v
    import mqtool.store.model.commitlog_walk as w
    import mqtool.store.model.queue_check as q

    calls = {"walk": 0, "unit": 0, "structure": 0}

    def count(key: str, real):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls[key] += 1
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(w, "RecordWalker", count("walk", w.RecordWalker))  # a record decoded one by one
    monkeypatch.setattr(q, "_check_unit", count("unit", q._check_unit))
    real_reader = v.rmq.CommitLogReader.read
    monkeypatch.setattr(v.rmq.CommitLogReader, "read", count("unit", real_reader))
    report = validate_rocketmq(stores[name], ValidateOptions())
    assert report.to_dict()["ok"]
    assert calls == {"walk": 0, "unit": 0, "structure": 0}
