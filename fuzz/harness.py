"""Mutation fuzzing: damage one file of a valid store, run the read-only commands on it.

Each *family* names a store (a bundled fixture, or a smaller store built with the fixture
generators so an input runs in milliseconds), the file inside it that gets mutated, and the
commands to run (``info``, ``dump``, ``validate``, ``query``, ``recover`` — the last as a plan
only, so nothing is written).  A command slot may hold several variants (``info`` as a table
and as JSON, ``query`` by offset and by time); input *i* runs variant ``i % len(slot)``.
Families are gathered into *groups*, the file families of the reliability issue (RocketMQ
CommitLog, ConsumeQueue, IndexFile, checkpoint, config JSON; Kafka logs, compressed payloads,
indexes, checkpoints, snapshots; Jafka; MetaQ); input *i* of a group goes to member
``i % len(members)``.

Every input must end with a documented exit code: ``70`` (an internal error, i.e. an uncaught
Python exception) is a failure, and so is an input whose commands together run longer than the
time limit (a hang) — a length field claiming 2 GiB must neither allocate nor loop.  Peak RSS
is reported.  Input *i* of a group is derived from ``(group, seed, i)`` alone, so any input is
reproducible on its own and a campaign can be split into chunks run anywhere.

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
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.cli.app import run

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
INTERNAL = 70

Command = tuple[str, ...]
Slot = tuple[Command, ...]  # variants of one command


def _build_rocketmq_small(root: Path) -> None:
    sys.path.insert(0, str(FIXTURES))
    try:
        from generate import build_rocketmq_store
    finally:
        sys.path.remove(str(FIXTURES))
    build_rocketmq_store(root, messages=24, commitlog_file_size=8192)


# Stores built on demand (name -> builder); any other store name is a directory under fixtures/.
BUILDERS: dict[str, Callable[[Path], None]] = {"rocketmq-small": _build_rocketmq_small}


@dataclass(frozen=True)
class Family:
    name: str
    group: str  # the file family of the reliability issue this input kind belongs to
    store: str  # a BUILDERS name, or a fixture directory under fixtures/
    target: str  # the file (relative to the store) that is mutated
    commands: tuple[Slot, ...]  # argv after "mqtool"; "{store}" and "{target}" substituted
    keep: tuple[str, ...] = ()  # glob patterns of the store to copy (default: all of it)

    def available(self) -> bool:
        if self.store in BUILDERS:
            return True
        return (FIXTURES / self.store / self.target).is_file()


def variants(*commands: Command) -> Slot:
    return tuple(commands)


def info_slot() -> Slot:
    """``info`` as JSON, and one input in ten as the rich table (rendering is slower)."""
    return variants(*([("info", "{store}", "--json")] * 9), ("info", "{store}"))


RMQ_COMMANDS: tuple[Slot, ...] = (
    info_slot(),
    variants(("validate", "{store}", "--jobs", "1", "--jsonl")),
    variants(("recover", "{store}", "--json"), ("recover", "{store}", "--mode", "abnormal", "--json")),
)

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "rocketmq-commitlog",
            "rocketmq-commitlog",
            "rocketmq-small",
            "commitlog/00000000000000008192",
            (
                *RMQ_COMMANDS,
                variants(("dump", "commitlog", "{target}", "--jsonl")),
                variants(("query", "{store}", "--key", "KEY23"), ("query", "{store}", "--key", "KEY22", "--scan")),
            ),
        ),
        Family(
            "rocketmq-commitlog-first",
            "rocketmq-commitlog",
            "rocketmq-small",
            "commitlog/00000000000000000000",
            (
                *RMQ_COMMANDS,
                variants(("dump", "commitlog", "{target}", "--jsonl")),
                variants(("query", "{store}", "--msg-id", "C0A8000A00002A9F0000000000000000"), ("query", "{store}", "--key", "KEY7")),
            ),
        ),
        Family(
            "rocketmq-consumequeue",
            "rocketmq-consumequeue",
            "rocketmq-small",
            "consumequeue/TopicTest/2/00000000000000000000",
            (
                *RMQ_COMMANDS,
                variants(("dump", "consumequeue", "{target}", "--jsonl")),
                variants(("query", "{store}", "--topic", "TopicTest", "--queue-id", "2", "--queue-offset", "1")),
            ),
        ),
        Family(
            "rocketmq-index",
            "rocketmq-index",
            "rocketmq-small",
            "index/20231114221320037",
            (
                *RMQ_COMMANDS,
                variants(("dump", "index", "{target}", "--jsonl")),
                variants(("query", "{store}", "--key", "KEY18", "--topic", "TopicTest"), ("query", "{store}", "--key", "KEY3")),
            ),
        ),
        Family(
            "rocketmq-checkpoint",
            "rocketmq-checkpoint",
            "rocketmq-small",
            "checkpoint",
            (*RMQ_COMMANDS, variants(("dump", "checkpoint", "{target}", "--json"))),
        ),
        Family(
            "rocketmq-config",
            "rocketmq-config",
            "rocketmq-small",
            "config/consumerOffset.json",
            (
                *RMQ_COMMANDS,
                variants(("dump", "config", "{target}", "--json")),
                variants(("clean", "{store}", "--protect-unconsumed", "--json")),
            ),
        ),
        Family(
            "rocketmq-config-topics",
            "rocketmq-config",
            "rocketmq-small",
            "config/topics.json",
            (*RMQ_COMMANDS, variants(("dump", "config", "{target}", "--json"))),
        ),
    )
}


def register(family: Family) -> None:
    """Add a family (other layouts register theirs from fuzz/families.py)."""
    FAMILIES[family.name] = family


def groups() -> dict[str, list[Family]]:
    """Group name -> its available member families, in registration order."""
    out: dict[str, list[Family]] = {}
    for fam in FAMILIES.values():
        if fam.available():
            out.setdefault(fam.group, []).append(fam)
    return out


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


def input_rng(group: str, seed: int, index: int) -> random.Random:
    """The generator of input ``index`` of ``group``'s campaign with ``seed``."""
    return random.Random(f"{group}:{seed}:{index}")


# --- running ---------------------------------------------------------------------------------


class Hang(BaseException):
    """Raised by the timer; a BaseException so no ``except Exception`` in mqtool swallows it."""


@dataclass
class Outcome:
    inputs: int = 0
    runs: int = 0
    internal_errors: list[tuple[str, Command, str]] = field(default_factory=list)
    hangs: list[tuple[str, Command]] = field(default_factory=list)
    exit_codes: dict[int, int] = field(default_factory=dict)
    peak_rss_mb: float = 0.0  # the peak resident set from the outcome's creation on
    slowest_input_s: float = 0.0
    #: the resident set when the outcome was created: what the process held before its runs
    #: (in a test session, every earlier test's memory)
    baseline_rss_mb: float = 0.0

    def __post_init__(self) -> None:
        reset_peak_rss()
        self.baseline_rss_mb = peak_rss_mb()

    @property
    def growth_mb(self) -> float:
        """How far the runs' peak rose above the resident set they started from."""
        return max(0.0, self.peak_rss_mb - self.baseline_rss_mb)

    @property
    def ok(self) -> bool:
        return not self.internal_errors and not self.hangs


class Workspace:
    """A private copy of a family's store whose target file can be replaced quickly."""

    def __init__(self, family: Family, directory: Path) -> None:
        self.family = family
        self.store = Path(directory) / family.store
        if not self.store.exists():
            self._materialize()
        self.target = self.store / family.target
        self.original = self.target.read_bytes()

    def _materialize(self) -> None:
        fam = self.family
        if fam.store in BUILDERS:
            BUILDERS[fam.store](self.store)
            return
        source = FIXTURES / fam.store
        if not fam.keep:
            shutil.copytree(source, self.store)
            return
        self.store.mkdir(parents=True)
        for pattern in fam.keep:
            for path in sorted(source.glob(pattern)):
                dest = self.store / path.relative_to(source)
                if path.is_dir():
                    shutil.copytree(path, dest)
                else:
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, dest)

    def argv(self, command: Command) -> list[str]:
        return [a.replace("{store}", str(self.store)).replace("{target}", str(self.target)) for a in command]

    def run_input(self, data: bytes, outcome: Outcome, *, time_limit: float = 5.0, label: str = "", index: int = 0) -> None:
        """Run every command slot (variant ``index``) on the store with ``data`` as the target;
        the whole input must finish within ``time_limit`` seconds."""
        self.target.write_bytes(data)
        outcome.inputs += 1
        current: list[Command] = [()]

        def on_alarm(signum, frame):
            raise Hang()

        previous = signal.signal(signal.SIGALRM, on_alarm)
        started = _monotonic()
        signal.setitimer(signal.ITIMER_REAL, time_limit)
        try:
            for slot in self.family.commands:
                current[0] = slot[index % len(slot)]
                self._run_one(current[0], outcome, label)
        except Hang:
            outcome.hangs.append((label, current[0]))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            outcome.slowest_input_s = max(outcome.slowest_input_s, _monotonic() - started)
            self.target.write_bytes(self.original)
            # the plans take mqtool's lock at the store root; nothing else may be left behind
            for leftover in self.store.glob(".mqtool*"):
                if leftover.is_file():
                    leftover.unlink()

    def _run_one(self, command: Command, outcome: Outcome, label: str) -> None:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = run(self.argv(command))
        outcome.runs += 1
        outcome.exit_codes[code] = outcome.exit_codes.get(code, 0) + 1
        if code == INTERNAL:
            outcome.internal_errors.append((label, command, err.getvalue()[-500:]))
        outcome.peak_rss_mb = max(outcome.peak_rss_mb, peak_rss_mb())


def reset_peak_rss() -> None:
    """Start measuring the peak resident set afresh (Linux ``/proc/self/clear_refs`` 5 resets
    ``VmHWM``): in a long-lived process (a test session) the lifetime peak says nothing about the
    inputs run since."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_rss_mb() -> float:
    """The peak resident set since :func:`reset_peak_rss` (``VmHWM``), in MiB; elsewhere than on
    Linux the process's lifetime peak (``ru_maxrss``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _monotonic() -> float:
    import time

    return time.monotonic()


def run_chunk(
    group: str,
    members: list[Family],
    workspaces: Callable[[Family], Workspace],
    seed: int,
    start: int,
    count: int,
    *,
    time_limit: float = 5.0,
) -> Outcome:
    """Inputs ``start .. start+count-1`` of ``group``'s campaign."""
    outcome = Outcome()
    for i in range(start, start + count):
        family = members[i % len(members)]
        ws = workspaces(family)
        data = mutate(ws.original, input_rng(group, seed, i))
        ws.run_input(data, outcome, time_limit=time_limit, label=f"group={group} seed={seed} input={i} family={family.name}", index=i // len(members))
    return outcome
