"""Mutation fuzzing: damage one file of a valid store, run the read-only commands on it.

Each *family* names a bundled fixture store, the file inside it that gets mutated, and the
commands to run (``info``, ``dump``, ``validate``, ``query``, ``recover`` — the last as a plan
only, so nothing is written).  Every input must end with a documented exit code: ``70`` (an
internal error, i.e. an uncaught Python exception) is a failure, and so is a command that runs
longer than the time limit (a hang) — a length field claiming 2 GiB must neither allocate nor
loop.  Peak RSS is reported.

Used two ways: ``tests/test_fuzz.py`` runs a short hypothesis-driven pass on every family in
the test suite; ``python -m fuzz.run`` runs long campaigns (see its --help).
"""

from __future__ import annotations

import contextlib
import io
import random
import resource
import shutil
import signal
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mqtool.cli.app import run

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
INTERNAL = 70


@dataclass(frozen=True)
class Family:
    name: str
    store: str  # fixture directory under fixtures/
    target: str  # the file (relative to the store) that is mutated
    commands: tuple[tuple[str, ...], ...]  # argv after "mqtool", "{store}" and "{target}" substituted

    def available(self) -> bool:
        return (FIXTURES / self.store / self.target).is_file()


RMQ_COMMANDS = (
    ("info", "{store}"),
    ("validate", "{store}", "--jobs", "1", "--jsonl"),
    ("recover", "{store}", "--json"),
)

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "rocketmq-commitlog",
            "rocketmq-store",
            "commitlog/00000000000000081920",
            (*RMQ_COMMANDS, ("dump", "commitlog", "{target}", "--jsonl"), ("query", "{store}", "--key", "KEY239")),
        ),
        Family(
            "rocketmq-commitlog-first",
            "rocketmq-store",
            "commitlog/00000000000000000000",
            (*RMQ_COMMANDS, ("dump", "commitlog", "{target}", "--jsonl"), ("query", "{store}", "--msg-id", "C0A8000A00002A9F0000000000003812")),
        ),
        Family(
            "rocketmq-consumequeue",
            "rocketmq-store",
            "consumequeue/TopicTest/2/00000000000000000000",
            (*RMQ_COMMANDS, ("dump", "consumequeue", "{target}", "--jsonl"), ("query", "{store}", "--topic", "TopicTest", "--queue-id", "2", "--queue-offset", "3")),
        ),
        Family(
            "rocketmq-index",
            "rocketmq-store",
            "index/20231114221324958",
            (*RMQ_COMMANDS, ("dump", "index", "{target}", "--jsonl"), ("query", "{store}", "--key", "KEY200", "--topic", "TopicTest")),
        ),
        Family("rocketmq-checkpoint", "rocketmq-store", "checkpoint", (*RMQ_COMMANDS, ("dump", "checkpoint", "{target}", "--json"))),
        Family(
            "rocketmq-config",
            "rocketmq-store",
            "config/consumerOffset.json",
            (*RMQ_COMMANDS, ("dump", "config", "{target}", "--json"), ("clean", "{store}", "--protect-unconsumed", "--json")),
        ),
    )
}


def register(family: Family) -> None:
    """Add a family (other layouts register theirs from fuzz/families.py)."""
    FAMILIES[family.name] = family


# --- mutations -------------------------------------------------------------------------------

_EXTREMES = [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFF0, 8, 20, 4096, 1 << 30]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to three random mutations of ``data``."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(9)
        n = len(buf)
        if n == 0:
            buf += rng.randbytes(rng.randint(1, 64))
            continue
        i = rng.randrange(n)
        if kind == 0:  # bit flip
            buf[i] ^= 1 << rng.randrange(8)
        elif kind == 1:  # random byte
            buf[i] = rng.randrange(256)
        elif kind == 2 and i + 4 <= n:  # an extreme 32-bit length field
            struct.pack_into(">I", buf, i, rng.choice(_EXTREMES))
        elif kind == 3 and i + 8 <= n:  # an extreme 64-bit field
            struct.pack_into(">q", buf, i, rng.choice([-1, 0, 1 << 62, -(1 << 63), (1 << 31) + 7]))
        elif kind == 4:  # truncate
            del buf[i:]
        elif kind == 5:  # zero a range
            j = min(n, i + rng.randint(1, 256))
            buf[i:j] = bytes(j - i)
        elif kind == 6:  # insert garbage
            buf[i:i] = rng.randbytes(rng.randint(1, 64))
        elif kind == 7:  # delete a range
            del buf[i : min(n, i + rng.randint(1, 64))]
        else:  # duplicate a chunk elsewhere
            j = min(n, i + rng.randint(1, 128))
            k = rng.randrange(n)
            buf[k:k] = buf[i:j]
    return bytes(buf)


# --- running ---------------------------------------------------------------------------------


class Hang(Exception):
    pass


@dataclass
class Outcome:
    inputs: int = 0
    runs: int = 0
    internal_errors: list[tuple[str, tuple[str, ...], str]] = field(default_factory=list)
    hangs: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    exit_codes: dict[int, int] = field(default_factory=dict)
    peak_rss_mb: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.internal_errors and not self.hangs


class Workspace:
    """A private copy of a family's fixture store whose target file can be replaced quickly."""

    def __init__(self, family: Family, directory: Path) -> None:
        self.family = family
        self.store = Path(directory) / family.store
        if not self.store.exists():
            shutil.copytree(FIXTURES / family.store, self.store)
        self.target = self.store / family.target
        self.original = self.target.read_bytes()

    def argv(self, command: tuple[str, ...]) -> list[str]:
        return [a.replace("{store}", str(self.store)).replace("{target}", str(self.target)) for a in command]

    def run_input(self, data: bytes, outcome: Outcome, *, time_limit: float = 5.0, label: str = "") -> None:
        self.target.write_bytes(data)
        try:
            outcome.inputs += 1
            for command in self.family.commands:
                self._run_one(command, outcome, time_limit, label)
        finally:
            self.target.write_bytes(self.original)
            for leftover in self.store.rglob(".mqtool*"):
                if leftover.is_file():
                    leftover.unlink()

    def _run_one(self, command: tuple[str, ...], outcome: Outcome, time_limit: float, label: str) -> None:
        def on_alarm(signum, frame):
            raise Hang()

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, time_limit)
        err = io.StringIO()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = run(self.argv(command))
        except Hang:
            outcome.hangs.append((label, command))
            return
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        outcome.runs += 1
        outcome.exit_codes[code] = outcome.exit_codes.get(code, 0) + 1
        if "Hang" in err.getvalue():
            outcome.hangs.append((label, command))
        elif code == INTERNAL:
            outcome.internal_errors.append((label, command, err.getvalue()[-500:]))
        outcome.peak_rss_mb = max(outcome.peak_rss_mb, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def campaign(family: Family, directory: Path, inputs: int, seed: int, progress: Callable[[int], None] | None = None) -> Outcome:
    ws = Workspace(family, directory)
    rng = random.Random(seed)
    outcome = Outcome()
    for i in range(inputs):
        ws.run_input(mutate(ws.original, rng), outcome, label=f"seed={seed} input={i}")
        if progress is not None:
            progress(i + 1)
    return outcome
