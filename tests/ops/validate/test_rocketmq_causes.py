"""Cause links of RocketMQ knock-on findings (issues 18 and 19): ConsumeQueue units and IndexFile
entries pointing past the CommitLog's valid end name the CommitLog damage that ends it (a torn
tail, a broken record, garbage after the valid end) as their ``cause``; the root has none, and
no link dangles or chains."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.test_cli import check_golden
from tests.conftest import FIXTURES, PROJECT_ROOT

LAST = "00000000000000081920"
KNOCK_ON = {"RMQ-CQ-PAST-END", "RMQ-IDX-PAST-END"}


def _validate(root: Path, *args: str, width: int = 80) -> tuple[int, str]:
    """``mqtool validate`` run from the store's parent on its relative name: output that holds
    no temporary path (whose length would change how the table wraps)."""
    env = {**os.environ, "COLUMNS": str(width), "TZ": "UTC", "PYTHONPATH": str(PROJECT_ROOT)}
    env.pop("PAGER", None)
    argv = [sys.executable, "-m", "mqtool", "validate", *args, root.name]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root.parent, check=False)
    return proc.returncode, proc.stdout


def _findings(root: Path) -> list[dict[str, object]]:
    _, out = _validate(root, "--json")
    findings = json.loads(out)["findings"]
    assert isinstance(findings, list)
    return findings


def _copy(tmp: Path) -> Path:
    root = tmp / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    return root


def _links_are_flat(findings: list[dict[str, object]]) -> None:
    """Every cause names a finding of the same report that has no cause of its own."""
    refs = {(f["code"], f["path"], f["position"]): f for f in findings}
    for f in findings:
        cause = f.get("cause")
        if cause is None:
            continue
        assert isinstance(cause, dict)
        root = refs.get((cause["code"], cause["path"], cause["position"]))
        assert root is not None, f"dangling cause {cause}"
        assert "cause" not in root, f"chained cause {cause}"


def test_truncated_last_file_knock_ons_name_the_torn_tail(tmp_path):
    root = _copy(tmp_path)
    os.truncate(root / "commitlog" / LAST, 3000)
    findings = _findings(root)
    knock_ons = [f for f in findings if f["code"] in KNOCK_ON]
    assert knock_ons
    causes = {json.dumps(f.get("cause"), sort_keys=True) for f in knock_ons}
    assert len(causes) == 1
    cause = knock_ons[0]["cause"]
    assert isinstance(cause, dict)
    assert cause["code"] == "RMQ-CL-TORN-TAIL" and Path(str(cause["path"])).name == LAST
    roots = [f for f in findings if f["code"] == "RMQ-CL-TORN-TAIL"]
    assert len(roots) == 1 and "cause" not in roots[0]
    assert all("cause" not in f for f in findings if f["code"] not in KNOCK_ON)
    _links_are_flat(findings)


def test_garbage_after_the_valid_end_is_the_cause(tmp_path):
    root = _copy(tmp_path)
    # cut the last file's records short at 3000 (zeros after them), then write garbage further on
    with open(root / "commitlog" / LAST, "r+b") as f:
        f.seek(2785)
        f.write(b"\x00" * (16384 - 2785))
        f.seek(6000)
        f.write(b"\xab" * 64)
    findings = _findings(root)
    knock_ons = [f for f in findings if f["code"] in KNOCK_ON]
    assert knock_ons
    garbage = [f for f in findings if f["code"] == "RMQ-CL-GARBAGE"]
    assert len(garbage) == 1 and "cause" not in garbage[0]
    for f in knock_ons:
        assert f.get("cause") == {"code": "RMQ-CL-GARBAGE", "path": garbage[0]["path"], "position": garbage[0]["position"]}
    _links_are_flat(findings)


def test_missing_middle_file_leaves_no_dangling_link(tmp_path):
    root = _copy(tmp_path)
    (root / "commitlog" / "00000000000000016384").unlink()
    findings = _findings(root)
    assert any(f["code"] == "RMQ-FILE-GAP" and "cause" not in f for f in findings)
    _links_are_flat(findings)


def test_healthy_store_has_no_causes():
    assert all("cause" not in f for f in _findings(FIXTURES / "rocketmq-store"))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(file_index=st.integers(0, 5), cut=st.integers(0, 16383), garbage=st.booleans())
def test_links_never_dangle_or_chain(tmp_path_factory, file_index, cut, garbage):
    root = _copy(tmp_path_factory.mktemp("rand"))
    path = sorted((root / "commitlog").iterdir())[file_index]
    if garbage:
        with open(path, "r+b") as f:
            f.seek(cut)
            f.write(b"\x5a" * 16)
    else:
        os.truncate(path, cut)
    _links_are_flat(_findings(root))


def test_table_folds_knock_ons_under_the_torn_tail(tmp_path):
    root = _copy(tmp_path)
    os.truncate(root / "commitlog" / LAST, 3000)
    code, out = _validate(root)
    assert code == 1
    assert out.count("knock-on finding(s) caused by it") == 1
    assert "RMQ-CQ-PAST-END  " not in out  # folded, not listed one by one
    check_golden("validate.rocketmq-truncated-cause.table80.txt", "".join(line.rstrip() + "\n" for line in out.splitlines()))


def test_unreadable_file_is_a_root(tmp_path, monkeypatch, capsys):
    """A ``chmod 000`` CommitLog file, refused at its open as EACCES does for a non-root user
    (root reads through ``chmod 000``): what points into it is not reported again, and no link
    dangles."""
    from mqtool.cli.app import run
    from mqtool.errors import StoreIOError
    from mqtool.store import files

    root = _copy(tmp_path)
    for name in (LAST, "00000000000000049152"):
        target = root / "commitlog" / name
        init = files.ReadOnlyFile.__init__

        def refuse(self: files.ReadOnlyFile, path: object, *args: object, _target: Path = target, _init: object = init, **kwargs: object) -> None:
            if Path(str(path)) == _target:
                raise StoreIOError("Permission denied", path=Path(str(path)))
            _init(self, path, *args, **kwargs)  # type: ignore[operator]

        monkeypatch.setattr(files.ReadOnlyFile, "__init__", refuse)
        assert run(["validate", str(root), "-j", "1", "--json"]) == 1
        monkeypatch.setattr(files.ReadOnlyFile, "__init__", init)
        findings = json.loads(capsys.readouterr().out)["findings"]
        unreadable = [f for f in findings if f["code"] == "RMQ-FILE-UNREADABLE"]
        assert [f["path"] for f in unreadable] == [str(target)] and "cause" not in unreadable[0]
        assert not [f for f in findings if f["code"].startswith(("RMQ-CQ-", "RMQ-IDX-")) and "cause" not in f]
        _links_are_flat(findings)
