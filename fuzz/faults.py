"""The fault matrix of the destructive commands: kill -9, ENOSPC and EIO at every mutation.

    python -m fuzz.faults                      # every scenario, every fault kind
    python -m fuzz.faults --layout kafka --command clean --fault kill
    python -m fuzz.faults --list

A *scenario* is a damaged (``recover``) or ageing (``clean``) store built from mqtool's own
writers or the bundled fixtures, and the ``--apply`` command line that repairs or cleans it.
For each scenario the uninterrupted run gives the expected store; then for n = 1, 2, ... the
real command runs in a forked process with ``MQTOOL_FAULT_INJECT=<fault>@n`` (the n-th mutation
SIGKILLs the process or fails with ENOSPC/EIO) until a run is no longer interrupted — every
mutation point of the run is covered, and the count is printed.  After each interrupted run:

* an I/O fault gave exit 3 and a one-line error naming the injected fault, and at the first
  mutation the store is untouched;
* a plain rerun exits 0 and leaves exactly the uninterrupted run's store (byte for byte), so no
  valid record the uninterrupted run keeps is lost;
* ``validate`` finds no error in it;
* ``recover``: the quarantine manifests of both runs hold every byte that was changed or removed,
  each entry equal to the original bytes, and every added file has a ``created`` entry;
* ``clean``: the files that went are exactly those the plan listed (a ``rename`` of Kafka's
  ``.deleted`` protocol counts as going), nothing else changed but derived files the plan
  rewrites.

Exit 0 when every point passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.cli.app import run
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.store import rocketmq as rmq
from mqtool.store.lock import MQTOOL_LOCK_NAME
from mqtool.store.writer import StoreWriter, WriterConfig

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
DIR = "<dir>"
T0 = 1_700_000_000_000
HOUR_MS = 3_600_000
KAFKA_LATER = T0 + 30 * 24 * HOUR_MS  # everything in the Kafka fixture is older than 7 days
RMQ_NOW = 1_800_000_000_000
EVERY_HOUR = ";".join(f"{h:02d}" for h in range(24))  # the broker policy's deleteWhen gate always open
ALL_AT_ONCE = ("--batch-max", "1000", "--interval-ms", "0")  # one run deletes every expired file
SMALL = WriterConfig(commitlog_file_size=4096, cq_file_size=200, index_hash_slot_num=16, index_num=64, index_tz=dt.timezone.utc)


class CheckFailed(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


# --- observing stores ---------------------------------------------------------------------------


def tree(root: Path) -> dict[str, bytes | str]:
    """Every file (bytes) and directory under ``root``; mqtool's lock file left out."""
    out: dict[str, bytes | str] = {}
    for p in sorted(Path(root).rglob("*")):
        if p.name == MQTOOL_LOCK_NAME:
            continue
        out[p.relative_to(root).as_posix()] = DIR if p.is_dir() else p.read_bytes()
    return out


def manifest_entries(manifest: Path) -> list[tuple[dict, bytes]]:
    doc = json.loads(Path(manifest).read_text())
    check(doc.get("tool") == "mqtool" and doc.get("command") == "recover", f"{manifest}: not a manifest of mqtool recover")
    out = []
    for e in doc["entries"]:
        data = bytes(e["length"]) if e["zero"] else (Path(manifest).parent / e["file"]).read_bytes()
        check(len(data) == e["length"] and zlib.crc32(data) & 0xFFFFFFFF == e["crc32"], f"{manifest}: entry {e} does not match its bytes")
        out.append((e, data))
    return out


def check_quarantine(original: dict, final: dict, manifests: list[Path]) -> None:
    """Every byte the runs changed or removed is held by an entry with the original bytes, and
    every file the runs added has a ``created`` entry."""
    kept_files: dict[str, bytes] = {}
    kept: dict[str, dict[int, int]] = {}
    created: set[str] = set()
    for manifest in manifests:
        for e, data in manifest_entries(manifest):
            path = e["path"]
            check(not Path(path).is_absolute(), f"absolute path in a manifest: {e}")
            if e["kind"] == "created":
                created.add(path)
            elif e["kind"] == "extended":  # zeros appended past the original end: nothing to hold
                continue
            elif e["kind"] == "file":
                kept_files.setdefault(path, data)
            else:
                ranges = kept.setdefault(path, {})
                for i, b in enumerate(data):
                    ranges.setdefault(e["position"] + i, b)
    for path, before in original.items():
        after = final.get(path)
        if before == DIR or after == before:
            continue
        if path in kept_files:
            check(kept_files[path] == before, f"{path}: the kept file is not the original")
            continue
        check(after is not None, f"{path}: removed without being quarantined")
        held = kept.get(path, {})
        for i in range(len(before)):
            if i >= len(after) or after[i] != before[i]:
                check(held.get(i) == before[i], f"{path}@{i}: changed but the original byte is not quarantined")
    for path in final:
        check(path in original or path in created, f"{path}: added without a 'created' entry")


# --- running the real command in a child -------------------------------------------------------


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(argv)
    return code, out.getvalue(), err.getvalue()


def run_forked(argv: list[str], fault: str | None, workdir: Path) -> tuple[int | None, int | None, str]:
    """Run ``mqtool argv`` in a forked child (with ``MQTOOL_FAULT_INJECT=fault``); returns
    (exit code or None, terminating signal or None, stderr)."""
    errfile = workdir / "child.stderr"
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 70
        try:
            if fault:
                os.environ["MQTOOL_FAULT_INJECT"] = fault
            else:
                os.environ.pop("MQTOOL_FAULT_INJECT", None)
            fd = os.open(errfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(fd, 2)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the child exits below
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            code = run(argv)
            sys.stderr.flush()
        finally:
            os._exit(int(code))
    _, status = os.waitpid(pid, 0)
    err = errfile.read_text(errors="replace") if errfile.exists() else ""
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status), err
    return os.WEXITSTATUS(status), None, err


# --- scenarios -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    layout: str
    command: str  # recover | clean
    name: str
    build: Callable[[Path], None]
    args: tuple[str, ...] = ()  # options after "<command> <store>" (the runner adds --apply etc.)

    def argv(self, store: Path, quarantine: Path, *, apply: bool = True) -> list[str]:
        argv = [self.command, str(store), *self.args]
        if self.command == "recover":
            argv += ["--quarantine", str(quarantine), "--jobs", "1", "--force"]
        if apply:
            argv.append("--apply")
        else:
            argv.append("--json")
        return argv


def _rmq_message(i: int, queues: int = 3) -> cl.MessageRecord:
    return cl.MessageRecord(
        topic=("T", "U")[i % 2],
        queue_id=i % queues,
        body=bytes([97 + i % 26]) * (40 + i * 7 % 45),
        properties={"KEYS": f"k{i}", "TAGS": f"Tag{i % 3}", "UNIQ_KEY": f"U{i:05d}"},
    )


def _rmq_store(root: Path, count: int, *, crash: bool = True, step_ms: int = 10, start: int = T0) -> None:
    now = [start]

    def clock() -> int:
        now[0] += step_ms
        return now[0]

    writer = StoreWriter(root, SMALL, clock=clock)
    for i in range(count):
        writer.append(_rmq_message(i))
    writer.close(clean=not crash)


def _write_at(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def _last_records(root: Path, n: int) -> list[tuple[Path, int, int]]:
    """(file, position, size) of the last ``n`` records of the CommitLog."""
    found: list[tuple[Path, int, int]] = []
    for seg in rmq.open_store(root).commitlog:
        with open(seg.path, "rb") as f:
            data = f.read()
        pos = 0
        while pos + 8 <= len(data):
            size = int.from_bytes(data[pos : pos + 4], "big")
            magic = int.from_bytes(data[pos + 4 : pos + 8], "big")
            if size <= 0 or magic == cl.BLANK_MAGIC or pos + size > len(data):
                break
            found.append((seg.path, pos, size))
            pos += size
    return found[-n:]


def rmq_torn(count: int, tail_records: int) -> Callable[[Path], None]:
    """A crashed broker whose last ``tail_records`` records were torn: the first of them cut in
    its middle, garbage after it; ConsumeQueues and IndexFiles point past the valid end."""

    def build(root: Path) -> None:
        _rmq_store(root, count)
        recs = _last_records(root, tail_records)
        path, pos, size = recs[0]
        end = recs[-1][1] + recs[-1][2]
        _write_at(path, pos + size // 2, bytes((i * 37 + 11) % 256 for i in range(end - pos - size // 2)))

    return build


def rmq_lost_derived(count: int) -> Callable[[Path], None]:
    """A crash that lost one queue's ConsumeQueue and the newest IndexFile."""

    def build(root: Path) -> None:
        _rmq_store(root, count)
        shutil.rmtree(root / "consumequeue" / "U" / "1")
        newest = sorted((root / "index").iterdir())[-1]
        newest.unlink()

    return build


def rmq_zero_tail_and_cq_ahead(count: int) -> Callable[[Path], None]:
    """The last two records zeroed (page cache lost): every derived file is ahead of the log."""

    def build(root: Path) -> None:
        _rmq_store(root, count)
        recs = _last_records(root, 2)
        path, pos, _ = recs[0]
        end = recs[-1][1] + recs[-1][2]
        _write_at(path, pos, bytes(end - pos))

    return build


def rmq_cut_last_file(count: int, *, torn: bool) -> Callable[[Path], None]:
    """The last CommitLog file cut short (a file system that lost its pre-allocated tail):
    ``torn`` cuts it in the middle of its last record, else after its zeros began; the broker
    refuses the file's length until recover zero-fills it to the configured size."""

    def build(root: Path) -> None:
        _rmq_store(root, count)
        path, pos, size = _last_records(root, 1)[0]
        os.truncate(path, pos + size // 2 if torn else pos + size + 100)

    return build


def rmq_oversize_last_file(count: int) -> Callable[[Path], None]:
    """Garbage after the valid end of the last CommitLog file, running past the configured size."""

    def build(root: Path) -> None:
        _rmq_store(root, count)
        path, pos, size = _last_records(root, 1)[0]
        length = SMALL.commitlog_file_size + 700 - (pos + size + 10)
        _write_at(path, pos + size + 10, bytes((i * 53 + 7) % 256 or 1 for i in range(length)))

    return build


def rmq_ageing(count: int, step_ms: int) -> Callable[[Path], None]:
    """A cleanly shut down store whose files span hours: the old ones are past retention."""

    def build(root: Path) -> None:
        start = RMQ_NOW - count * step_ms - HOUR_MS
        _rmq_store(root, count, crash=False, step_ms=step_ms, start=start)
        store = rmq.open_store(root)
        for seg in store.commitlog:  # files are written in order: the mtime follows the offset
            t = (start + (seg.base // 300 + 1) * step_ms) / 1000
            os.utime(seg.path, (t, t))

    return build


def _kafka_fixture(root: Path) -> None:
    shutil.copytree(FIXTURES / "kafka-logs", root)


def _offsets(path: Path) -> dict:
    return cpf.decode_offset_checkpoint(path.read_bytes()).as_dict()


def _write_offsets(path: Path, table: dict) -> None:
    entries = tuple(cpf.TopicPartitionOffset(t, p, o) for (t, p), o in table.items())
    path.write_bytes(cpf.encode_offset_checkpoint(cpf.OffsetCheckpoint(entries)))


def _cut(path: Path, nbytes: int) -> None:
    size = path.stat().st_size
    os.truncate(path, max(0, size - nbytes))


def _batch_starts(path: Path) -> list[int]:
    """Positions of the batches of a .log (baseOffset int64, batchLength int32, then the rest)."""
    data = path.read_bytes()
    starts, pos = [], 0
    while pos + 12 <= len(data):
        starts.append(pos)
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    return starts


def kafka_everything(root: Path) -> None:
    """Every kind of damage Kafka's recovery handles, in one log dir."""
    _kafka_fixture(root)
    _cut(root / "orders-0" / "00000000000000000090.log", 50)  # torn tail
    table = _offsets(root / "recovery-point-offset-checkpoint")
    table[("orders", 1)] = 30
    _write_offsets(root / "recovery-point-offset-checkpoint", table)
    seg48 = root / "orders-1" / "00000000000000000048.log"
    _write_at(seg48, _batch_starts(seg48)[4] + 70, b"\x00\x01\x02")  # in a CRC-covered record: later segments go
    with open(root / "events-0" / "00000000000000000053.log", "ab") as f:
        f.write(bytes(3000))  # zero tail
    with open(root / "__transaction_state-0" / "00000000000000000000.index", "ab") as f:
        f.write(bytes(4096))  # a pre-allocated index
    (root / "legacy-0" / "00000000000000000000.log.deleted").write_bytes(b"gone")
    (root / "legacy-0" / "00000000000000000000.timeindex.cleaned").write_bytes(b"cleaner")
    (root / "replication-offset-checkpoint.tmp").write_bytes(b"0\n0\n")
    (root / ".kafka_cleanshutdown").unlink(missing_ok=True)


def kafka_unclean_torn(partitions: tuple[str, ...], cut: int) -> Callable[[Path], None]:
    """An unclean shutdown with the active segment of each partition torn by ``cut`` bytes and
    every index of those partitions lost (--full rebuilds them)."""

    def build(root: Path) -> None:
        _kafka_fixture(root)
        (root / ".kafka_cleanshutdown").unlink(missing_ok=True)
        for part in partitions:
            logs = sorted((root / part).glob("*.log"))
            _cut(logs[-1], cut)
            for idx in (root / part).glob("*.index"):
                idx.unlink()
            for idx in (root / part).glob("*.timeindex"):
                os.truncate(idx, 0)

    return build


def kafka_ageing(log_start: dict | None = None) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        _kafka_fixture(root)
        if log_start:
            table = _offsets(root / "log-start-offset-checkpoint")
            table.update(log_start)
            _write_offsets(root / "log-start-offset-checkpoint", table)

    return build


def scenarios() -> list[Scenario]:
    return [
        Scenario("rocketmq", "recover", "torn-tail-60", rmq_torn(60, 3)),
        Scenario("rocketmq", "recover", "torn-tail-150", rmq_torn(150, 5)),
        Scenario("rocketmq", "recover", "lost-cq-and-index-90", rmq_lost_derived(90)),
        Scenario("rocketmq", "recover", "lost-cq-and-index-160", rmq_lost_derived(160)),
        Scenario("rocketmq", "recover", "zero-tail-120", rmq_zero_tail_and_cq_ahead(120)),
        Scenario("rocketmq", "recover", "rebuild-all-80", rmq_torn(80, 2), ("--rebuild-cq", "--rebuild-index")),
        Scenario("rocketmq", "recover", "cut-last-file-torn-70", rmq_cut_last_file(70, torn=True)),
        Scenario("rocketmq", "recover", "cut-last-file-zeros-100", rmq_cut_last_file(100, torn=False)),
        Scenario("rocketmq", "recover", "oversize-last-file-110", rmq_oversize_last_file(110)),
        Scenario("rocketmq", "clean", "safe-reserved-1h-200", rmq_ageing(200, 60_000), ("--now", str(RMQ_NOW), "--reserved-hours", "1", *ALL_AT_ONCE)),
        Scenario("rocketmq", "clean", "safe-reserved-2h-300", rmq_ageing(300, 40_000), ("--now", str(RMQ_NOW), "--reserved-hours", "2", *ALL_AT_ONCE)),
        Scenario("rocketmq", "clean", "safe-reserved-1h-500", rmq_ageing(500, 20_000), ("--now", str(RMQ_NOW), "--reserved-hours", "1", *ALL_AT_ONCE)),
        Scenario(
            "rocketmq",
            "clean",
            "manual-400",
            rmq_ageing(400, 30_000),
            ("--now", str(RMQ_NOW), "--manual", "--reserved-hours", "1", *ALL_AT_ONCE),
        ),
        Scenario(
            "rocketmq",
            "clean",
            "broker-every-hour-250",
            rmq_ageing(250, 50_000),
            ("--policy", "broker", "--delete-when", EVERY_HOUR, "--now", str(RMQ_NOW), "--reserved-hours", "1", *ALL_AT_ONCE),
        ),
        Scenario("kafka", "recover", "everything", kafka_everything),
        Scenario("kafka", "recover", "unclean-orders-full", kafka_unclean_torn(("orders-0", "orders-1"), 70), ("--full",)),
        Scenario("kafka", "recover", "unclean-events-legacy-full", kafka_unclean_torn(("events-0", "legacy-0", "__consumer_offsets-0"), 30), ("--full",)),
        Scenario("kafka", "clean", "retention-7d-safe", kafka_ageing(), ("--now", str(KAFKA_LATER), "--interval-ms", "0")),
        Scenario(
            "kafka",
            "clean",
            "retention-7d-broker-log-start",
            kafka_ageing({("__consumer_offsets", 0): 15}),
            ("--policy", "broker", "--now", str(KAFKA_LATER), "--interval-ms", "0"),
        ),
        Scenario("kafka", "clean", "retention-bytes", kafka_ageing(), ("--now", str(T0), "--retention-bytes", "2000", "--interval-ms", "0")),
        Scenario("kafka", "clean", "retention-1ms", kafka_ageing(), ("--now", str(KAFKA_LATER), "--retention-ms", "1", "--interval-ms", "0")),
    ]


# --- the matrix ----------------------------------------------------------------------------------


@dataclass
class Tally:
    points: int = 0  # distinct mutation points interrupted and checked
    scenarios: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _validate_errors(store: Path) -> list[str]:
    code, out, err = cli(["validate", str(store), "--jobs", "1", "--json"])
    if code not in (0, 1):
        return [f"validate exit {code}: {err.strip()}"]
    doc = json.loads(out)
    return [f"{f['code']} {f['path']}:{f.get('position')}: {f['message']}" for f in doc["findings"] if f["severity"] == "error"]


def _planned_removals(plan: dict) -> set[str]:
    return {s["path"] for s in plan["steps"] if s["action"] in ("remove", "delete", "rename")}


def run_scenario(sc: Scenario, base: Path, faults: list[str], tally: dict[str, Tally], *, limit: int = 1000) -> None:
    damaged = base / "damaged"
    sc.build(damaged)
    original = tree(damaged)
    code, out, err = cli(sc.argv(damaged, base / "plan-q", apply=False))
    check(code in (0, 1), f"{sc.name}: plan exit {code}: {err}")
    plan = json.loads(out)
    check(code == 1 and plan["steps"], f"{sc.name}: the scenario leaves nothing to do")
    planned = _planned_removals(plan)

    reference = base / "reference"
    shutil.copytree(damaged, reference)
    code, _, err = cli(sc.argv(reference, base / "reference-q"))
    check(code == 0, f"{sc.name}: the uninterrupted run exited {code}: {err}")
    expected = tree(reference)
    errors = _validate_errors(reference)
    check(not errors, f"{sc.name}: the uninterrupted run leaves errors: {errors[:3]}")
    if sc.command == "clean":
        gone = {p for p in original if p not in expected and original[p] != DIR}
        check(gone, f"{sc.name}: the clean deletes nothing")
        for p in gone:
            check(p in planned or any(q.startswith(p + ".") for q in planned), f"{sc.name}: {p} went but the plan did not list it")
    again = [sc.command, str(reference), "--json", *(a for a in sc.args if a not in ("--rebuild-cq", "--rebuild-index"))]
    again_code, again_out, _ = cli(again)
    check(again_code == 0, f"{sc.name}: a second plan after the run still has work (exit {again_code}): {again_out[:300]}")

    for fault in faults:
        t = tally.setdefault(f"{sc.layout} {sc.command} {fault}", Tally())
        t.scenarios += 1
        started = time.monotonic()
        n = 0
        while True:
            n += 1
            check(n <= limit, f"{sc.name}: still interrupted after {limit} mutations")
            store, q = base / f"{fault}-{n}", base / f"{fault}-{n}-q"
            shutil.copytree(damaged, store)
            try:
                code, sig, err = run_forked(sc.argv(store, q), f"{fault}@{n}", base)
                if code == 0 and sig is None:  # fewer mutations than n: the run completed
                    check(tree(store) == expected, f"{sc.name}: {fault}@{n} completed but differs from the uninterrupted run")
                    break
                where = f"{sc.layout} {sc.command} {sc.name} {fault}@{n}"
                if fault == "kill":
                    check(sig == signal.SIGKILL, f"{where}: expected SIGKILL, got exit {code} signal {sig}: {err.strip()}")
                else:
                    lines = err.strip().splitlines()
                    check(code == 3, f"{where}: expected exit 3, got {code} signal {sig}: {err.strip()}")
                    check(len(lines) == 1 and lines[0].startswith("mqtool: error: ") and f"injected at mutation {n}" in lines[0], f"{where}: not a one-line error: {err!r}")
                    if n == 1:
                        check(tree(store) == original, f"{where}: the store changed before the first mutation completed")
                first = sorted(q.glob("*/manifest.json"))
                code, sig, err = run_forked(sc.argv(store, q), None, base)
                check(code == 0 and sig is None, f"{where}: the rerun exited {code} signal {sig}: {err.strip()}")
                final = tree(store)
                check(final == expected, f"{where}: the rerun's store differs from the uninterrupted run's: {_diff(final, expected)}")
                if sc.command == "recover":
                    check_quarantine(original, final, first + [m for m in sorted(q.glob("*/manifest.json")) if m not in first])
                errors = _validate_errors(store)
                check(not errors, f"{where}: validate finds errors after the rerun: {errors[:3]}")
                t.points += 1
            except CheckFailed as failure:
                t.failures.append(str(failure))
                if len(t.failures) > 5:
                    return
            finally:
                shutil.rmtree(store, ignore_errors=True)
                shutil.rmtree(q, ignore_errors=True)
        t.seconds += time.monotonic() - started


def _diff(a: dict, b: dict) -> str:
    only_a = sorted(set(a) - set(b))[:3]
    only_b = sorted(set(b) - set(a))[:3]
    changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])[:3]
    return f"only in the rerun {only_a}, only in the reference {only_b}, different {changed}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layout", choices=["rocketmq", "kafka"], action="append")
    ap.add_argument("--command", choices=["recover", "clean"], action="append")
    ap.add_argument("--fault", choices=["kill", "enospc", "eio"], action="append")
    ap.add_argument("--scenario", action="append", help="scenario name (default: all)")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    chosen = [
        s
        for s in scenarios()
        if (not args.layout or s.layout in args.layout)
        and (not args.command or s.command in args.command)
        and (not args.scenario or s.name in args.scenario)
    ]
    if args.list:
        for s in chosen:
            print(f"{s.layout:<9} {s.command:<8} {s.name}  {' '.join(s.args)}")
        return 0
    os.environ.pop("MQTOOL_FAULT_INJECT", None)
    faults = args.fault or ["kill", "enospc", "eio"]
    tally: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="mqtool-faults-") as tmp:
        for i, sc in enumerate(chosen):
            base = Path(tmp) / f"{i}-{sc.name}"
            base.mkdir()
            try:
                run_scenario(sc, base, faults, tally)
            except CheckFailed as failure:
                tally.setdefault(f"{sc.layout} {sc.command} setup", Tally()).failures.append(str(failure))
            shutil.rmtree(base, ignore_errors=True)
    ok = True
    for key, t in sorted(tally.items()):
        print(f"{key:<28} scenarios {t.scenarios:>2}  mutation points {t.points:>5}  failures {len(t.failures)}  ({t.seconds:.0f} s)")
        for f in t.failures[:5]:
            print(f"  FAIL {f}")
        ok &= not t.failures
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
