"""The fault matrix (``python -m fuzz.faults``) in the suite: a few scenarios, every mutation.

The full matrix (every scenario, SIGKILL/ENOSPC/EIO; README, Reliability) runs for minutes; here
one RocketMQ recover and one Kafka clean scenario are interrupted at each of their mutations,
and the checks themselves are shown to catch what they must.
"""

from __future__ import annotations

import pytest

from fuzz import faults


def _scenario(name: str) -> faults.Scenario:
    return next(s for s in faults.scenarios() if s.name == name)


def test_the_matrix_has_scenarios_for_each_layout_and_command():
    """RocketMQ and Kafka, recover and clean (the published counts come from running them all)."""
    kinds = {(s.layout, s.command) for s in faults.scenarios()}
    assert kinds == {("rocketmq", "recover"), ("rocketmq", "clean"), ("kafka", "recover"), ("kafka", "clean")}


@pytest.mark.parametrize(
    "name,fault",
    [("torn-tail-60", "kill"), ("torn-tail-60", "enospc"), ("retention-bytes", "kill"), ("cut-last-file-torn-70", "kill"), ("oversize-last-file-110", "eio")],
)
def test_every_mutation_point_of_a_scenario(tmp_path, name, fault):
    tally: dict[str, faults.Tally] = {}
    faults.run_scenario(_scenario(name), tmp_path, [fault], tally)
    (t,) = tally.values()
    assert not t.failures, t.failures
    assert t.points >= 10


def test_quarantine_check_catches_a_byte_that_went_unrecorded():
    original = {"commitlog/0": b"abcdef"}
    final = {"commitlog/0": b"abc\0\0\0"}
    with pytest.raises(faults.CheckFailed, match="not quarantined"):
        faults.check_quarantine(original, final, [])
    with pytest.raises(faults.CheckFailed, match="removed without being quarantined"):
        faults.check_quarantine(original, {}, [])
    with pytest.raises(faults.CheckFailed, match="added without"):
        faults.check_quarantine(original, {**original, "x": b""}, [])
