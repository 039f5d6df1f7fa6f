"""Short fuzzing pass in the suite: every family, mutated by hypothesis, through every command.

No input may end in an internal error (exit 70: an uncaught exception) or run past the time
limit; the long campaigns are ``python -m fuzz.run`` (README, Reliability).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzz.families  # noqa: F401  (registers the other layouts)
from fuzz.harness import FAMILIES, Outcome, Workspace, mutate

AVAILABLE = [name for name, fam in FAMILIES.items() if fam.available()]


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    return {name: Workspace(FAMILIES[name], root / name) for name in AVAILABLE}


@pytest.mark.parametrize("name", AVAILABLE)
def test_family_survives_mutations(workspaces, name):
    ws = workspaces[name]
    outcome = Outcome()

    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(st.integers(0, 2**32 - 1))
    def one(seed):
        ws.run_input(mutate(ws.original, random.Random(seed)), outcome, time_limit=10.0, label=f"seed={seed}")

    one()
    assert not outcome.internal_errors, outcome.internal_errors[:3]
    assert not outcome.hangs, outcome.hangs[:3]
    assert outcome.peak_rss_mb < 500


def test_absurd_length_does_not_allocate(workspaces):
    """A TOTALSIZE of 2 GiB at the first record: reported, not allocated."""
    ws = workspaces["rocketmq-commitlog-first"]
    data = bytearray(ws.original)
    data[0:4] = (0x7FFFFFF0).to_bytes(4, "big")
    outcome = Outcome()
    ws.run_input(bytes(data), outcome)
    assert outcome.ok and outcome.peak_rss_mb < 500
    assert outcome.exit_codes.get(1, 0) >= 1
