"""The crash tests' shared steps for ``recover --apply`` (RocketMQ, Kafka, Jafka, MetaQ).

Each test module brings its damaged store and its ``rerun(store, quarantine)`` (plan + apply in
process, returning the apply result); these steps do the rest the same way for every layout:
kill the real command at mutation ``n`` (SIGKILL through ``MQTOOL_FAULT_INJECT``) or fail it
there with ENOSPC/EIO, rerun, and check that the store equals the uninterrupted run's byte for
byte and that the quarantines of both runs hold every byte that went (``fuzz.faults`` checks).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from fuzz.faults import check_quarantine, cli, tree
from mqtool.cli.exit_codes import ExitCode, exit_code_for
from mqtool.errors import StoreIOError
from mqtool.store.mutate import Mutator
from tests.conftest import PROJECT_ROOT

#: ``rerun(store, quarantine_root)``: plan and apply in process; returns the apply result.
Rerun = Callable[[Path, Path], object]

IO_FAULTS = [("enospc", "No space left on device"), ("eio", "Input/output error")]


@dataclasses.dataclass(frozen=True)
class CrashCase:
    damaged: Path
    original: dict  # tree of the damaged store
    expected: dict  # tree after an uninterrupted run
    mutations: int  # how many mutations the uninterrupted run does
    recover_args: tuple[str, ...] = ()  # extra options of the real command (e.g. --force)
    layout: str = ""


def subprocess_recover(store: Path, quarantine: Path, fault: str | None, *extra: str) -> subprocess.CompletedProcess:
    """The real command in a child process, with ``MQTOOL_FAULT_INJECT=fault`` (or none)."""
    env = {k: v for k, v in os.environ.items() if k != "MQTOOL_FAULT_INJECT"}
    if fault:
        env["MQTOOL_FAULT_INJECT"] = fault
    args = [sys.executable, "-m", "mqtool", "recover", str(store), "--apply", *extra, "--quarantine", str(quarantine), "--jobs", "1"]
    return subprocess.run(args, env=env, capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120, check=False)


class _CountingMutator(Mutator):
    made: ClassVar[list[Mutator]] = []

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.made.append(self)


def count_mutations(apply: Callable[[], object]) -> int:
    """How many mutations ``apply()`` (an in-process run without faults) makes."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("mqtool.ops.recover.Mutator", _CountingMutator)
        mp.delenv("MQTOOL_FAULT_INJECT", raising=False)
        apply()
    return _CountingMutator.made[-1].count


def make_case(base: Path, damaged: Path, rerun: Rerun, *recover_args: str, layout: str = "") -> CrashCase:
    """The damaged store with the result of an uninterrupted run of the real command on a copy;
    the mutations are counted by an in-process run on another copy, which must end the same."""
    reference = base / "reference"
    shutil.copytree(damaged, reference)
    done = subprocess_recover(reference, base / "reference-q", None, *recover_args)
    assert done.returncode == 0, done.stderr
    counted = base / "counted"
    shutil.copytree(damaged, counted)
    mutations = count_mutations(lambda: rerun(counted, base / "counted-q"))
    assert tree(counted) == tree(reference)
    return CrashCase(damaged, tree(damaged), tree(reference), mutations, tuple(recover_args), layout)


def kill_points(total: int, most: int = 60) -> list[int]:
    """Mutations to fail at: all of them when few, else ``most`` spread evenly (the first and last
    few always)."""
    if total <= most:
        return list(range(1, total + 1))
    return sorted({1, 2, 3, total - 2, total - 1, total} | {1 + round(i * (total - 1) / (most - 1)) for i in range(most)})


def _manifests(q: Path) -> list[Path]:
    return sorted(q.glob("*/manifest.json"))


def _rerun_and_check(case: CrashCase, store: Path, q: Path, rerun: Rerun, what: str, clean: Callable[[Path], None] | None) -> None:
    """Rerun after a failed run: the uninterrupted run's store, and the quarantines of both runs
    hold every byte that went."""
    first = _manifests(q)
    result = rerun(store, q)
    assert not result.verification.failed and not getattr(result, "notes", None), f"rerun after {what}"
    final = tree(store)
    diff = sorted(k for k in set(final) | set(case.expected) if final.get(k) != case.expected.get(k))
    assert final == case.expected, f"{what}: differs from the uninterrupted run: {diff}"
    if clean is not None:
        clean(store)
    check_quarantine(case.original, final, first + [m for m in _manifests(q) if m not in first])
    shutil.rmtree(store)


def kill_and_rerun(base: Path, case: CrashCase, n: int, rerun: Rerun, clean: Callable[[Path], None] | None = None) -> bool:
    """Kill the real command at mutation ``n``, rerun and check; False when run ``n`` was not
    killed (it had fewer mutations) and completed instead, to the uninterrupted run's store."""
    store, q = base / f"store-{n}", base / f"q-{n}"
    shutil.copytree(case.damaged, store)
    killed = subprocess_recover(store, q, f"kill@{n}", *case.recover_args)
    if killed.returncode != -signal.SIGKILL:
        assert killed.returncode == 0, (n, killed.stderr)
        assert tree(store) == case.expected
        return False
    _rerun_and_check(case, store, q, rerun, f"kill@{n}", clean)
    return True


def io_error_and_rerun(
    base: Path,
    case: CrashCase,
    n: int,
    kind: str,
    text: str,
    rerun: Rerun,
    monkeypatch: pytest.MonkeyPatch,
    *,
    via_cli: bool,
    still_work: Callable[[Path], bool] | None = None,
) -> bool:
    """ENOSPC/EIO at mutation ``n``: a one-line error (through the CLI: exit 3) naming the fault,
    the store untouched at mutation 1, and a plain rerun to the uninterrupted run's store.  False
    when run ``n`` met no fault (it had fewer mutations) and finished."""
    store, q = base / f"store-{n}", base / f"q-{n}"
    shutil.copytree(case.damaged, store)
    monkeypatch.setenv("MQTOOL_FAULT_INJECT", f"{kind}@{n}")
    try:
        if via_cli:
            code, _, err = cli(["recover", str(store), "--apply", *case.recover_args, "--quarantine", str(q), "--jobs", "1"])
            if code == ExitCode.OK:
                assert tree(store) == case.expected
                return False
            assert code == ExitCode.IO, (n, err)
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("mqtool: error: ") and text in lines[0], (n, err)
        else:
            try:
                rerun(store, q)
            except StoreIOError as failure:
                err = str(failure)
                assert exit_code_for(failure) == ExitCode.IO and text in err and "\n" not in err
            else:
                assert tree(store) == case.expected
                return False
    finally:
        monkeypatch.delenv("MQTOOL_FAULT_INJECT")
    assert f"injected at mutation {n}" in err
    if n == 1:
        assert tree(store) == case.original
    if still_work is not None:
        assert still_work(store), f"{kind}@{n}: the store is no longer one the planner reads with work left"
    _rerun_and_check(case, store, q, rerun, f"{kind}@{n}", None)
    return True


def kill_at(base: Path, case: CrashCase, points, rerun: Rerun, clean: Callable[[Path], None] | None = None) -> None:
    """``kill_and_rerun`` at each of ``points`` (every one must fire), then one past the last
    mutation: that run is not killed and completes."""
    for n in points:
        assert kill_and_rerun(base, case, n, rerun, clean), f"kill@{n} did not fire"
    assert not kill_and_rerun(base, case, case.mutations + 1, rerun)


def io_error_at(
    base: Path,
    case: CrashCase,
    points,
    kind: str,
    text: str,
    rerun: Rerun,
    monkeypatch: pytest.MonkeyPatch,
    *,
    cli_every: int,
    still_work: Callable[[Path], bool] | None = None,
) -> None:
    """``io_error_and_rerun`` at each of ``points`` (every one must fail; through the CLI every
    ``cli_every``-th time), then one past the last mutation: that run meets no fault."""
    for n in points:
        faulted = io_error_and_rerun(base, case, n, kind, text, rerun, monkeypatch, via_cli=n % cli_every == 1, still_work=still_work)
        assert faulted, f"{kind}@{n} did not fire"
    assert not io_error_and_rerun(base, case, case.mutations + 1, kind, text, rerun, monkeypatch, via_cli=True)


def check_undo(base: Path, case: CrashCase) -> None:
    """``recover --apply`` then ``recover --undo MANIFEST`` gives the damaged store back byte for byte."""
    store = base / "store"
    shutil.copytree(case.damaged, store)
    code, out, err = cli(["recover", str(store), "--apply", *case.recover_args, "--quarantine", str(base / "q"), "--json", "--jobs", "1"])
    assert code == 0, err
    assert tree(store) == case.expected
    code, _, err = cli(["recover", "--undo", json.loads(out)["manifest"], "--json"])
    assert code == 0, err
    assert tree(store) == case.original
