"""How a file ends, by the codes of the findings on it: one rule (``mqtool.findings.end_kind``,
from each code's ``CodeInfo.ends``) that info and the report both take, never message text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mqtool.findings import CODES, END_KINDS, CodeInfo, Severity, end_kind
from mqtool.ops.info import store_info
from mqtool.ops.report import gather

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "rocketmq-store"


def test_an_unknown_end_kind_is_refused():
    with pytest.raises(ValueError, match="unknown end kind"):
        CodeInfo(Severity.error, "log", "x", ends="shredded")


def test_the_strongest_kind_wins_and_other_codes_say_nothing():
    assert end_kind(set()) is None
    assert end_kind({"RMQ-CL-CRC", "RMQ-CL-VALID-END", "NOT-A-CODE"}) is None
    assert end_kind({"RMQ-CL-TORN-TAIL"}) == "torn"
    assert end_kind({"RMQ-CL-TORN-TAIL", "RMQ-CL-GARBAGE"}) == "torn"
    assert end_kind({"RMQ-CL-GARBAGE", "RMQ-FILE-UNREADABLE"}) == "unreadable"
    assert end_kind({"KAFKA-LOG-ZERO-TAIL", "KAFKA-LOG-MISSING"}) == "missing"


@pytest.mark.parametrize("prefix", ["RMQ-", "KAFKA-", "JAFKA-", "METAQ-"])
def test_every_layout_names_its_torn_garbage_and_unreadable_ends(prefix):
    said = {info.ends for code, info in CODES.items() if code.startswith(prefix)}
    assert {"torn", "garbage", "unreadable"} <= said
    assert said - {None} <= set(END_KINDS)


@pytest.mark.parametrize("damage", ["torn", "garbage"])
def test_info_and_the_report_say_the_same_end(tmp_path, damage):
    root = tmp_path / "store"
    shutil.copytree(FIXTURE, root)
    last = sorted((root / "commitlog").iterdir())[-1]
    data = bytearray(last.read_bytes())
    end = len(data.rstrip(b"\0"))
    if damage == "torn":
        last.write_bytes(bytes(data[: end - 40]) + bytes(len(data) - end + 40))
    else:
        data[end + 100 : end + 164] = b"\x5a" * 64
        last.write_bytes(bytes(data))
    info = store_info(root, "rocketmq").to_dict()  # type: ignore[attr-defined]
    report = gather(root, "rocketmq")
    drawn = next(s for s in report.logs[0].segments if s.path == f"commitlog/{last.name}")
    assert info["commitlog"]["end_kind"] == drawn.end_kind == damage
