"""validate --ignore CODE: those findings leave the report and the verdict, counted apart."""

from __future__ import annotations

import json
import os
import shutil

from mqtool.cli.app import run
from tests.conftest import FIXTURES


def validate(capsys, *args):
    code = run(["validate", *map(str, args)])
    return code, capsys.readouterr()


def test_ignored_codes_leave_the_verdict_and_are_counted(capsys, tmp_path):
    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    os.truncate(root / "commitlog" / "00000000000000081920", 4000)
    code, cap = validate(capsys, root, "--json")
    doc = json.loads(cap.out)
    assert code == 1 and "ignored" not in doc  # the document is as before without --ignore
    errors = sorted({f["code"] for f in doc["findings"] if f["severity"] == "error"})
    code, cap = validate(capsys, root, "--json", *[a for c in errors for a in ("--ignore", c)])
    quiet = json.loads(cap.out)
    assert code == 0 and quiet["counts"]["error"] == 0
    assert quiet["ignored"] == {c: sum(f["code"] == c for f in doc["findings"]) for c in errors}
    assert not {f["code"] for f in quiet["findings"]} & set(errors)
    code, cap = validate(capsys, root, *[a for c in errors for a in ("--ignore", c)])
    assert code == 0 and "ignored (--ignore): " in cap.out


def test_an_unknown_code_is_a_usage_error(capsys):
    code, cap = validate(capsys, FIXTURES / "rocketmq-store", "--ignore", "RMQ-NO-SUCH")
    assert code == 2 and "RMQ-NO-SUCH" in cap.err
