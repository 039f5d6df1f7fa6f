"""lag on RocketMQ against offsets computed independently from the fixture's bytes (struct and a
regular expression, none of mqtool's decoders), and on damaged copies."""

from __future__ import annotations

import re
import shutil
import struct
from pathlib import Path

import pytest

from mqtool.ops.lag import store_lag
from mqtool.ops.validate import ValidateOptions, validate_path
from tests.conftest import FIXTURES

STORE = FIXTURES / "rocketmq-store"


def committed(root: Path) -> dict[tuple[str, str, int], int]:
    """(group, topic, queue) -> offset, read from consumerOffset.json's text."""
    text = (root / "config" / "consumerOffset.json").read_text()
    out = {}
    for topic, group, table in re.findall(r'"([^"@]+)@([^"]+)":\{([^}]*)\}', text):
        for qid, off in re.findall(r"(\d+):(\d+)", table):
            out[(group, topic, int(qid))] = int(off)
    return out


def units(root: Path, topic: str, qid: int) -> list[tuple[int, int]]:
    """(commitlog offset, size) of each unit of a queue, until the first all-zero unit."""
    out = []
    for path in sorted((root / "consumequeue" / topic / str(qid)).iterdir()):
        data = path.read_bytes()
        for at in range(0, len(data) - 19, 20):
            offset, size, tags = struct.unpack_from(">qiq", data, at)
            if offset == 0 and size == 0 and tags == 0:
                return out
            out.append((offset, size))
    return out


def store_time(root: Path, offset: int) -> int:
    files = sorted((root / "commitlog").iterdir())
    size = files[0].stat().st_size
    data = files[offset // size].read_bytes()
    at = offset % size
    (sys_flag,) = struct.unpack_from(">i", data, at + 36)
    born_host = 20 if sys_flag & 0x10 else 8  # an IPv6 BORNHOST (MessageSysFlag.BORNHOST_V6_FLAG)
    return struct.unpack_from(">q", data, at + 48 + born_host)[0]  # STORETIMESTAMP


def expected(root: Path) -> dict[tuple[str, str, int], tuple[int, int, int, int | None]]:
    """(group, topic, queue) -> (log end offset, lag, lag bytes, oldest unconsumed store time)."""
    out = {}
    for (group, topic, qid), off in committed(root).items():
        us = units(root, topic, qid)
        rest = us[off:]
        out[(group, topic, qid)] = (len(us), max(0, len(us) - off), sum(s for _, s in rest), store_time(root, rest[0][0]) if rest else None)
    return out


def rows(root: Path) -> dict[tuple[str, str, int], tuple[int | None, int | None, int | None, int | None]]:
    report = store_lag(root, "rocketmq")
    return {(r.group, r.topic, r.queue): (r.log_end_offset, r.lag_messages, r.lag_bytes, r.oldest_unconsumed_timestamp) for r in report.rows}


def test_fixture_lag_equals_independent_reading():
    want = expected(STORE)
    assert any(lag for _, lag, _, _ in want.values()), "the fixture has a group with lag"
    assert rows(STORE) == want


def test_lag_follows_a_rewritten_offsets_file(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(STORE, root)
    path = root / "config" / "consumerOffset.json"
    path.write_text(path.read_text().replace("{0:15,1:15", "{0:3,1:0"))
    want = expected(root)
    assert want[("order-consumer", "OrderTopic", 1)][1] == 20
    assert rows(root) == want
    report = store_lag(root, "rocketmq")
    assert not [f for f in report.findings if f.level.value == "error"]


def test_offset_ahead_of_the_queue_is_validates_finding(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(STORE, root)
    path = root / "config" / "consumerOffset.json"
    path.write_text(path.read_text().replace("{0:15,", "{0:99,"))
    report = store_lag(root, "rocketmq")
    row = next(r for r in report.rows if (r.group, r.queue) == ("order-consumer", 0))
    assert (row.lag_messages, row.lag_bytes, row.oldest_unconsumed_timestamp) == (0, 0, None)
    assert [(f.code, f.path) for f in report.findings] == [("RMQ-CONSUMER-OFFSET", str(path))]


def test_broken_offsets_file_falls_back_to_bak_as_the_broker_does(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(STORE, root)
    path = root / "config" / "consumerOffset.json"
    shutil.copy(path, path.with_name("consumerOffset.json.bak"))
    path.write_text('{"offsetTable":{')
    report = store_lag(root, "rocketmq")
    assert report.offsets_from == str(path.with_name("consumerOffset.json.bak"))
    assert [f.code for f in report.findings] == ["RMQ-CONFIG-PARSE"]
    assert {k: v for k, v in rows(root).items()} == expected(STORE)


def test_no_offsets_file_no_rows(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(STORE, root)
    (root / "config" / "consumerOffset.json").unlink()
    report = store_lag(root, "rocketmq")
    assert (report.rows, report.findings, report.offsets_from) == ([], [], None)


def test_unreadable_record_of_the_oldest_unconsumed_message_is_a_finding(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(STORE, root)
    offset, _ = units(root, "OrderTopic", 0)[15]
    files = sorted((root / "commitlog").iterdir())
    size = files[0].stat().st_size
    with open(files[offset // size], "r+b") as f:
        f.seek(offset % size + 4)
        f.write(b"\0\0\0\0")  # MAGICCODE
    report = store_lag(root, "rocketmq")
    row = next(r for r in report.rows if (r.group, r.queue) == ("order-consumer", 0))
    assert row.oldest_unconsumed_timestamp is None and row.lag_messages == 5
    validated = validate_path(root, ValidateOptions(jobs=1), "rocketmq")
    first = next(f for f in validated.findings if f.level.value == "error")
    assert (first.code, first.position) == ("RMQ-CL-MAGIC", offset % size + 4)  # validate's: the MAGICCODE field
    assert [(f.code, f.path, f.position) for f in report.findings] == [(first.code, first.path, first.position)]


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_layouts_without_offsets_on_disk_are_refused(layout):
    from mqtool.errors import UnsupportedFormatError

    with pytest.raises(UnsupportedFormatError):
        store_lag(FIXTURES / f"{layout}-data", layout)
