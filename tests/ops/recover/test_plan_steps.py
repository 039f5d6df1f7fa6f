"""Plan steps are typed values: every action a recover or clean plan takes is one of
``ops.recover.StepAction``, and a plan read back with any other action is refused, naming the file,
before anything is applied."""

from __future__ import annotations

import json
import typing
from pathlib import Path

from mqtool.ops.recover import STEP_ACTIONS, Step, StepAction
from tests.conftest import copy_fixture, run_cli


def test_the_actions_are_the_literal_type() -> None:
    assert STEP_ACTIONS == set(typing.get_args(StepAction))
    step = Step("truncate", "commitlog/00000000000000000000", "why", 10, 5)
    assert Step.from_dict(step.to_dict()) == step


def test_a_plan_with_an_unknown_action_is_refused_before_applying(tmp_path: Path) -> None:
    root = copy_fixture("rocketmq-store", tmp_path / "store")
    last = sorted((root / "commitlog").iterdir())[-1]
    data = bytearray(last.read_bytes())
    end = len(data.rstrip(b"\0"))
    data[end - 30 : end] = b"\xff" * 30  # a torn last record: the plan has a cut
    last.write_bytes(bytes(data))
    code, out, _ = run_cli("recover", root, "--json")
    plan = json.loads(out)
    assert code == 1 and plan["steps"]
    plan["steps"][0]["action"] = "shred"
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps(plan))
    before = last.read_bytes()
    code, _, err = run_cli("recover", "--from-plan", bad, "--apply", "--quarantine", tmp_path / "q")
    assert code != 0 and str(bad) in err and "'shred'" in err
    assert last.read_bytes() == before
