"""scan states the bytes the broker overwrites as validate does (issue 28, point 4), through the CLI.

400 random bytes a few bytes past the valid end of the newest CommitLog file are no record, no
record follows them and nothing points at them: ``CommitLog.recoverNormally`` stops at the valid
end and the next append overwrites them, so validate states RMQ-CL-MAGIC / RMQ-CL-SIZE and
RMQ-CL-UNREADABLE-REGION there as warnings (``store.model.rocketmq.ignored_tail``).  scan takes the
same judgement from the store model: the same codes, severities, positions and messages, and
exit 0.  With a broken record earlier in the file (a body CRC error), the broker's recovery stops
there and the tail is an error to both, though scan reads the two in different byte ranges.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from mqtool.formats.rocketmq.commitlog import body_position
from mqtool.ops.dump.rocketmq import CommitLogDump, commitlog_files
from tests.conftest import FIXTURES, copy_fixture
from tests.conftest import run_cli as mqtool

FIXTURE = FIXTURES / "rocketmq-store"
ACTIVE = sorted(p.name for p in (FIXTURE / "commitlog").iterdir())[-1]
RECORDS = [(loc.path.name, loc.position, rec.total_size, rec.sys_flag, len(rec.body)) for loc, rec in CommitLogDump(commitlog_files(FIXTURE))]
IN_ACTIVE = [r for r in RECORDS if r[0] == ACTIVE]
VALID_END = IN_ACTIVE[-1][1] + IN_ACTIVE[-1][2]
GAPS = (0, 1, 4, 7)


def put(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def junk(seed: int, size: int = 400) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.randrange(1, 256) for _ in range(size))


def _case(root: Path, gap: int, crc_error: bool) -> Path:
    store = copy_fixture("rocketmq-store", root)
    active = store / "commitlog" / ACTIVE
    put(active, VALID_END + gap, junk(gap))
    if crc_error:
        _name, position, _total, sys_flag, _body_size = next(r for r in IN_ACTIVE[1:] if r[4])
        body = position + body_position(sys_flag)
        with open(active, "r+b") as f:
            f.seek(body)
            byte = f.read(1)[0]
            f.seek(body)
            f.write(bytes([byte ^ 0xFF]))
    return store


def _key(f: dict, root: Path) -> tuple:
    return (f["code"], f["severity"], f["path"][len(str(root)) :], f["position"], f["message"])


@pytest.fixture(scope="module")
def cases(spark, tmp_path_factory):
    """Every case scanned in ONE CLI run (each store is its own source), in 1 KiB byte ranges:
    the CRC error and the tail are met by different tasks."""
    base = tmp_path_factory.mktemp("tail")
    roots = {f"gap{gap}": _case(base / f"gap{gap}", gap, False) for gap in GAPS}
    roots["crc-then-tail"] = _case(base / "crc-then-tail", 1, True)
    code, out, err = mqtool("scan", *[f"{name}={root}" for name, root in roots.items()], "--out", base / "out", "--json", "--split-size", "1k")
    assert code in (0, 1), err
    return roots, code, json.loads(out)


@pytest.mark.parametrize("case", [f"gap{gap}" for gap in GAPS] + ["crc-then-tail"])
def test_scan_states_the_tail_as_validate_does(cases, case):
    from mqtool.pipeline.jobs import SCAN_CODES

    roots, _code, doc = cases
    root = roots[case]
    code, out, _err = mqtool("validate", root, "--json")
    expected = sorted(_key(f, root) for f in json.loads(out)["findings"] if f["code"] in SCAN_CODES)
    got = sorted(_key(f, root) for f in doc["findings"] if f["source"] == case)
    assert expected, "validate must see the bytes"
    assert got == expected
    severities = {f[1] for f in got}
    if case == "crc-then-tail":
        assert code == 1 and severities == {"error"}, got
    else:
        assert code == 0 and severities == {"warning"}, got
        assert {f[0] for f in got} & {"RMQ-CL-MAGIC", "RMQ-CL-SIZE", "RMQ-CL-TRUNCATED"} and "RMQ-CL-UNREADABLE-REGION" in {f[0] for f in got}


def test_scan_exits_as_validate_does(cases):
    """Only the CRC case has errors: scan fails (exit 1) for it, and counts the others' warnings."""
    _roots, code, doc = cases
    assert code == 1 and not doc["ok"]
    errors = {f["source"] for f in doc["findings"] if f["severity"] == "error"}
    assert errors == {"crc-then-tail"}, errors
    assert doc["counts"]["warning"] >= 2 * len(GAPS)
