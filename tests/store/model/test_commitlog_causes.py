"""The store model's cause rule for RocketMQ past-end findings, as every reader of IndexFile
entries (dump index, query by key) asks it: ``DataExtent.index_entry_finding`` links an entry
pointing past the valid end to the damage that ends the data, the finding validate reports there."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mqtool.findings import Finding
from mqtool.store import rocketmq as rmq
from mqtool.store.model import commitlog as model_cl
from mqtool.store.model import rocketmq as model
from tests.conftest import FIXTURES

LAST = "00000000000000081920"


def _copy(tmp: Path) -> Path:
    root = tmp / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    return root


def test_entry_past_a_torn_tail_names_it(tmp_path):
    root = _copy(tmp_path)
    os.truncate(root / "commitlog" / LAST, 3000)
    extent = model_cl.data_extent(rmq.open_store(root))
    finding = extent.index_entry_finding("index/x", 40, 1, extent.end + 10_000)
    assert finding is not None and finding.code == "RMQ-IDX-PAST-END"
    assert finding.cause is not None
    assert (finding.cause.code, Path(finding.cause.path).name, 81920 + (finding.cause.position or 0)) == ("RMQ-CL-TORN-TAIL", LAST, extent.end)


def test_entry_past_a_clean_end_is_its_own_root():
    extent = model_cl.data_extent(rmq.open_store(FIXTURES / "rocketmq-store"))
    finding = extent.index_entry_finding("index/x", 40, 1, extent.end + 10_000)
    assert finding is not None and finding.cause is None


def test_valid_end_cause_takes_the_first_damage_at_the_end():
    bases = {"cl/0": 0, "cl/100": 100}
    found = [
        Finding("RMQ-FILE-SIZE", "cl/100", 30, "cut short"),
        Finding("RMQ-CL-TORN-TAIL", "cl/100", 20, "torn"),
        Finding("RMQ-CL-BODY-CRC", "cl/0", 50, "before the end: not the cause"),
        Finding("RMQ-CL-VALID-END", "cl/100", 20, "an info note, not damage"),
    ]
    cause = model.valid_end_cause(found, bases, 120)
    assert cause is not None and cause.code == "RMQ-CL-TORN-TAIL"
    assert model.valid_end_cause(found[2:], bases, 120) is None
    knock = Finding("RMQ-CQ-PAST-END", "cq/0", 0, "past the end")
    assert model.link_knock_on(knock, cause).cause == cause.ref
    assert model.link_knock_on(Finding("RMQ-CQ-MISMATCH", "cq/0", 0, "a root"), cause).cause is None
    assert model.link_knock_on(knock, None).cause is None
