"""Short fuzzing pass in the suite: every family, mutated by hypothesis, through every command.

No input may end in an internal error (exit 70: an uncaught exception) or run past the time
limit; the long campaigns are ``python -m fuzz.run`` (README, Reliability).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzz.families  # noqa: F401  (registers the other layouts)
from fuzz.harness import (
    FAMILIES,
    ROOT,
    Outcome,
    Workspace,
    groups,
    input_rng,
    mutate,
    run_chunk,
)

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
    @given(st.integers(0, 2**32 - 1), st.integers(0, 9))
    def one(seed, variant):
        ws.run_input(mutate(ws.original, random.Random(seed)), outcome, time_limit=10.0, label=f"seed={seed}", index=variant)

    one()
    assert not outcome.internal_errors, outcome.internal_errors[:3]
    assert not outcome.hangs, outcome.hangs[:3]
    assert outcome.growth_mb < 500


def test_every_issue_family_has_a_group():
    """The file families the reliability issue names each have a fuzzing group."""
    assert set(groups()) >= {
        "rocketmq-commitlog", "rocketmq-consumequeue", "rocketmq-index", "rocketmq-checkpoint", "rocketmq-config",
        "kafka-log", "kafka-compressed", "kafka-index", "kafka-checkpoint", "kafka-snapshot", "jafka", "metaq",
    }  # fmt: skip


def test_absurd_length_does_not_allocate(workspaces):
    """A TOTALSIZE of 2 GiB at the first record: reported, not allocated."""
    ws = workspaces["rocketmq-commitlog-first"]
    data = bytearray(ws.original)
    data[0:4] = (0x7FFFFFF0).to_bytes(4, "big")
    outcome = Outcome()
    ws.run_input(bytes(data), outcome)
    assert outcome.ok and outcome.growth_mb < 500
    assert outcome.exit_codes.get(1, 0) >= 1


def test_inputs_are_reproducible_one_by_one(workspaces):
    """Input i of a campaign depends on (group, seed, i) only: a chunk run alone sees the same bytes."""
    ws = workspaces["kafka-v2-log"]
    a = mutate(ws.original, input_rng("kafka-log", 7, 123))
    b = mutate(ws.original, input_rng("kafka-log", 7, 123))
    c = mutate(ws.original, input_rng("kafka-log", 7, 124))
    assert a == b and a != c


def test_a_hang_is_caught(workspaces, monkeypatch):
    """The per-input timer turns a command that never returns into a reported hang."""
    from fuzz import harness

    def forever(argv):
        while True:
            pass

    monkeypatch.setattr(harness, "run", forever)
    ws = workspaces["jafka-segment"]
    outcome = run_chunk("jafka", [ws.family], lambda fam: ws, 1, 0, 1, time_limit=0.3)
    assert len(outcome.hangs) == 1 and outcome.hangs[0][1][0] == "info"
    assert not outcome.ok


def test_campaign_script_writes_a_ledger_and_resumes(tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    cmd = [sys.executable, "-m", "fuzz.run", "--group", "metaq", "--inputs", "6", "--chunk", "3", "--ledger", str(ledger)]
    first = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert first.returncode == 0, first.stderr
    lines = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert sorted(r["start"] for r in lines) == [0, 3] and sum(r["inputs"] for r in lines) == 6
    assert all(r["internal_errors"] == [] and r["hangs"] == [] for r in lines)
    again = subprocess.run([*cmd, "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0 and len(ledger.read_text().splitlines()) == 2  # nothing rerun
    assert "metaq" in again.stdout and "inputs         6" in again.stdout
    summary = subprocess.run([sys.executable, "-m", "fuzz.run", "--summary", str(ledger)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert summary.returncode == 0 and "internal errors 0  hangs 0" in summary.stdout
