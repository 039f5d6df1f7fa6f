"""The RocketMQ broker model (``store.model.rocketmq_broker``): which version is modelled, where
each version's clean-shutdown recovery starts, and the ConsumeQueue maximum it starts from."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.store import rocketmq as rmq
from mqtool.store.broker_config import read_broker_settings
from mqtool.store.model import rocketmq_broker as brokers

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "rocketmq-store"
UNIT = struct.Struct(">qiq")


@pytest.mark.parametrize(
    ("text", "model", "version"),
    [("4.9.8", "4.x-5.3.1", "4.9.8"), ("5.3.1", "4.x-5.3.1", "5.3.1"), ("5.3.2", "5.3.2+", "5.3.2"), ("5.4", "5.3.2+", "5.4.0"), ("3.2.6", "4.x-5.3.1", "3.2.6")],
)
def test_a_given_version_chooses_its_model(tmp_path: Path, text: str, model: str, version: str) -> None:
    broker = brokers.resolve_broker(tmp_path, text)
    assert (broker.model, broker.version, broker.source) == (model, version, "--broker-version")
    assert broker.starts_at_cq_max is (model == "5.3.2+")


@pytest.mark.parametrize("text", ["", "5", "5.x", "five", "5.3.3-SNAPSHOT", "5..3"])
def test_a_version_that_is_no_version_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(CorruptDataError, match="X.Y.Z"):
        brokers.resolve_broker(tmp_path, text)


@pytest.mark.parametrize(
    ("bases", "cq_max", "third_last", "cq_rule"),
    [
        ([0, 100, 200, 300, 400], 450, 2, 4),  # every record dispatched: the last file
        ([0, 100, 200, 300, 400], 400, 2, 4),  # at or below: a file starting at the maximum is the start
        ([0, 100, 200, 300, 400], 399, 2, 3),
        ([0, 100, 200, 300, 400], 150, 2, 1),  # dispatch far behind: further back than the third-last
        ([0, 100, 200, 300, 400], -1, 2, 0),  # no unit at all: the first file
        ([0, 100], 150, 0, 1),
        ([0], 50, 0, 0),
        ([], 0, 0, 0),
    ],
)
def test_where_a_clean_restart_starts(bases: list[int], cq_max: int, third_last: int, cq_rule: int) -> None:
    old = brokers.model_for((5, 3, 1), exact=True, source="test")
    new = brokers.model_for((5, 3, 2), exact=True, source="test")
    assert old.normal_start_index(bases, cq_max) == third_last
    assert new.normal_start_index(bases, cq_max) == cq_rule


def test_the_consume_queue_maximum_is_the_highest_unit_end_of_the_last_three_files(tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    store = rmq.open_store(root)
    ends = []
    for topic, qid in store.queues():
        for seg in store.cq_segments(topic, qid)[-3:]:
            data = seg.path.read_bytes()
            for pos in range(0, len(data), UNIT.size):
                offset, size, _ = UNIT.unpack_from(data, pos)
                if offset < 0 or size <= 0:
                    break
                ends.append(offset + size)
    assert brokers.consume_queue_max_physic_offset(store) == max(ends)
    # no ConsumeQueue at all: -1, and 5.3.2+ starts at the first CommitLog file
    shutil.rmtree(root / "consumequeue")
    assert brokers.consume_queue_max_physic_offset(rmq.open_store(root)) == -1


def test_the_store_marks_of_5x(tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    assert brokers.store_marks(root) == []
    newest = brokers.resolve_broker(root)
    assert newest.model == "5.3.2+" and newest.source.startswith("no version given")
    (root / "timerlog").mkdir()
    (root / "abort").write_bytes(b"4242")
    (root / "checkpoint").write_bytes(cpf.encode_checkpoint(cpf.Checkpoint(1, 1, 1, 0, 77)))
    assert [m.text() for m in brokers.store_marks(root)] == [
        "timerlog (5.0.0+)",
        "abort holds the broker pid (5.0.0+)",
        "checkpoint confirmPhyOffset in use (5.1.1+)",
    ]
    (root / "config" / "rdb").mkdir()
    broker = brokers.resolve_broker(root)
    assert broker.model == "5.3.2+" and broker.source == "store marks of 5.3.2+, newest model assumed"
    assert broker.evidence[0] == "config/rdb (5.3.2+)"


@pytest.mark.parametrize(
    ("conf", "model", "version", "evidence"),
    [
        ("rocketmqHome=/opt/rocketmq-all-4.9.8-bin-release\n", "4.x-5.3.1", "4.9.8", ["rocketmqHome=/opt/rocketmq-all-4.9.8-bin-release (4.9.8)"]),
        ("rocketmqHome=/srv/rocketmq-5.3.3\nstoreType=default\n", "5.3.2+", "5.3.3", ["rocketmqHome=/srv/rocketmq-5.3.3 (5.3.3)"]),
        ("storeType=default\ntimerWheelEnable=true\n", "5.3.2+", "5.3.2+", ["storeType (5.1.4+)", "timerWheelEnable (5.0.0+)"]),
        ("configManagerVersion=v2\n", "5.3.2+", "5.3.2+", ["configManagerVersion (5.3.2+)"]),
    ],
)
def test_the_version_a_broker_conf_shows(tmp_path: Path, conf: str, model: str, version: str, evidence: list[str]) -> None:
    path = tmp_path / "broker.conf"
    path.write_text("brokerName=broker-a\n" + conf)
    hints = read_broker_settings(path).version_hints
    broker = brokers.resolve_broker(FIXTURE, None, hints, str(path))
    assert (broker.model, broker.version, list(broker.evidence)) == (model, version, evidence)
    assert broker.source.startswith(f"--config {path}")
    assert read_broker_settings(_write(tmp_path / "plain.conf", "brokerName=b\nrocketmqHome=/opt/mq\n")).version_hints == ()


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


_units = st.tuples(
    st.one_of(st.integers(0, 1 << 40), st.integers(-(1 << 63), -1), st.just(0)),
    st.one_of(st.integers(1, 1 << 20), st.integers(-(1 << 31), 0), st.sampled_from([0, 1, 256, 1 << 24])),
    st.integers(-(1 << 63), (1 << 63) - 1),
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(_units, max_size=40), st.binary(max_size=19))
def test_peek_valid_units_reads_as_the_walker_does(units: list[tuple[int, int, int]], tail: bytes) -> None:
    """``peek_valid_units``' column scans (the ConsumeQueue maximum the restart model starts from) give the unit walk's answer (``CqWalker``: the first unit with a
    negative offset or a size not above zero ends it), whatever the units and a partial tail --
    through numpy's columns (the size gate lowered to none) as through the walk small buffers take."""
    data = b"".join(UNIT.pack(*u) for u in units) + tail
    walker = cqf.CqWalker(data)
    walker.scan()
    assert cqf.peek_valid_units(data) == (walker.count, walker.max_physic_offset)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cqf, "PEEK_NUMPY_MIN_UNITS", 0)
        assert cqf.peek_valid_units(data) == (walker.count, walker.max_physic_offset)
