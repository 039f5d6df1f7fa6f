"""Every reader of the TimerLog states what validate states about its files: ``validate``, ``dump
timerlog`` and ``stats`` take the findings on the TimerLog's files (how each one ends, a unit recovery
refuses, names and sizes: ``RMQ-TIMER-LOG-*``, ``RMQ-FILE-*``) from one store-model walk, so on
damaged copies (bytes changed anywhere in three TimerLog files) they name the same codes at the same
positions.  What ties a unit to its slot and record is validate's alone (as a ConsumeQueue unit
against its record), and is left out here."""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mqtool.ops.dump.timer import TimerLogDump
from mqtool.ops.stats import StatsOptions, store_stats
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from tests.timer_store import UNIT_LEN, make_timer_store

FILE_SIZE = UNIT_LEN * 4 + 20
NAMES = [f"{i * FILE_SIZE:020d}" for i in range(3)]


def _timerlog_findings(findings) -> list[tuple[str, str, int | None]]:
    return sorted((f.code, Path(f.path).name, f.position) for f in findings if "timerlog" in f.path and f.code.startswith(("RMQ-TIMER-LOG", "RMQ-FILE")))


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(edits=st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, FILE_SIZE - 1), st.binary(min_size=1, max_size=4)), min_size=1, max_size=2))
@example(edits=[(NAMES[0], 1, b"\x01")])  # a unit's size: RMQ-TIMER-LOG-UNIT, the rest of the TimerLog cut
@example(edits=[(NAMES[1], 4 * UNIT_LEN + 3, b"\x07")])  # a BLANK's size: RMQ-TIMER-LOG-BLANK
def test_validate_dump_and_stats_state_the_same_timerlog_findings(tmp_path_factory, edits):
    root = tmp_path_factory.mktemp("agree") / "s"
    make_timer_store(root, delays=[900 * i + 100 for i in range(1, 11)], timerlog_file_size=FILE_SIZE)
    for name, pos, data in edits:
        with open(root / "timerlog" / name, "r+b") as f:
            f.seek(pos)
            f.write(data)
    said = _timerlog_findings(validate_rocketmq(root, ValidateOptions(checks=frozenset({"timer", "files"}))).findings)
    dump = TimerLogDump(root)
    for _ in dump:
        pass
    assert _timerlog_findings(dump.findings) == said
    assert _timerlog_findings(store_stats(root, "rocketmq", StatsOptions()).findings) == said
    shutil.rmtree(root)
