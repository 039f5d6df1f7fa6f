"""Severity by consequence at the end of the newest CommitLog file (issue 28, point 4), through the CLI.

``CommitLog.recoverNormally``/``recoverAbnormally`` stop where ``checkMessageAndReturnSize``
refuses a header (a magic code that is neither a message's nor BLANK's), and
``MappedFileQueue.truncateDirtyFiles`` only moves the write position there: bytes after the valid
end that are no record, with no record after them and nothing pointing at them, are overwritten
by the next append and lose nothing (a warning).  Bytes that hold a record the broker drops stay
errors: a record that decodes after them, or a ConsumeQueue unit pointing into them.

Every reader names validate's first finding and exits as validate does (the store model states
the judgement once: ``store.model.rocketmq.ignored_tail``); recover zeroes the bytes, and validate
after it is clean.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from mqtool.ops.dump.rocketmq import CommitLogDump, commitlog_files
from tests.conftest import FIXTURES, copy_fixture
from tests.conftest import run_cli as mqtool

FIXTURE = FIXTURES / "rocketmq-store"
ACTIVE = sorted(p.name for p in (FIXTURE / "commitlog").iterdir())[-1]
RECORDS = [(loc.path.name, loc.position, rec.total_size) for loc, rec in CommitLogDump(commitlog_files(FIXTURE))]
LAST = [r for r in RECORDS if r[0] == ACTIVE][-1]
VALID_END = LAST[1] + LAST[2]  # 4479: zeros from here


@pytest.fixture()
def pristine(tmp_path: Path) -> Path:
    root = tmp_path / "pristine"
    shutil.copytree(FIXTURE, root)
    return root


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    return copy_fixture("rocketmq-store", tmp_path / "store")


def put(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def junk(seed: int, size: int = 400) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.randrange(1, 256) for _ in range(size))


def validate(root: Path) -> tuple[int, list[dict]]:
    code, out, _err = mqtool("validate", root, "--json")
    return code, [f for f in json.loads(out)["findings"] if f["severity"] != "info"]


@pytest.mark.parametrize("gap", [0, 1, 4, 7, 8, 100])
def test_garbage_past_the_valid_end_is_a_warning_everywhere(store, pristine, tmp_path, gap):
    """400 random bytes ``gap`` bytes after the valid end of the active file: warnings only (the
    broken "record" the walk meets there, the region after it; or the garbage after the zeros),
    every reader names the first at its position and exits 0; recover zeroes them."""
    active = store / "commitlog" / ACTIVE
    put(active, VALID_END + gap, junk(gap))
    code, found = validate(store)
    assert code == 0
    assert found and {f["severity"] for f in found} == {"warning"}, found
    first = found[0]
    assert first["code"] in ("RMQ-CL-MAGIC", "RMQ-CL-SIZE", "RMQ-CL-GARBAGE", "RMQ-CL-TRUNCATED"), first
    assert "nothing is lost" in first["message"]
    line = f"{first['code']} {first['path']}:{first['position']}: "
    for args in (["dump", "commitlog", store, "--jsonl"], ["stats", store], ["info", store], ["diff", pristine, store]):
        code, _out, err = mqtool(*args)
        assert line in err, (args[0], err)
        assert code == 0, (args[0], err)
    code, out, _err = mqtool("recover", store, "--json")
    plan = json.loads(out)
    assert code == 1 and [(s["action"], s["position"]) for s in plan["steps"]] == [("cut", VALID_END)] and plan["records_dropped"] == 0
    code, _out, err = mqtool("recover", store, "--apply", "--quarantine", tmp_path / "q")
    assert code == 0, err
    assert validate(store) == (0, [])


def test_garbage_a_consumequeue_unit_points_into_is_an_error(store):
    """The last record's bytes replaced by random ones (TOTALSIZE zeroed): its ConsumeQueue unit
    points there, so a record the broker wrote (and dispatched) is lost: an error."""
    active = store / "commitlog" / ACTIVE
    put(active, LAST[1], b"\x00\x00\x00\x00" + junk(1, LAST[2] - 4))
    code, found = validate(store)
    assert code == 1
    first = found[0]
    assert (first["severity"], first["path"], first["position"]) == ("error", str(active), LAST[1] + 4), found
    assert "nothing is lost" not in first["message"]


def test_garbage_with_records_after_it_is_an_error(store):
    """Zeros over a record header in the middle of the active file: the broker stops there and
    drops every record after it, so the bytes after the zeros are an error."""
    active = store / "commitlog" / ACTIVE
    _name, position, _size = [r for r in RECORDS if r[0] == ACTIVE][2]
    put(active, position, bytes(8))
    code, found = validate(store)
    assert code == 1
    assert (found[0]["code"], found[0]["severity"], found[0]["position"]) == ("RMQ-CL-GARBAGE", "error", position + 8), found
