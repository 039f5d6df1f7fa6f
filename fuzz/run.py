"""Long fuzzing campaigns.

    python -m fuzz.run --inputs 100000 --workers 2 --ledger fuzz-ledger.jsonl
    python -m fuzz.run --summary fuzz-ledger.jsonl
    python -m fuzz.run --list

Each group (the file families of the reliability issue) gets ``--inputs`` inputs, numbered from
``--start``; input *i* is a pure function of (group, seed, i), so the work is cut into chunks
of ``--chunk`` inputs run by ``--workers`` processes.  Every finished chunk is appended to the
ledger as one JSON line (group, seed, first input, count, command runs, exit-code histogram,
internal errors, hangs, peak RSS, slowest input, seconds); ``--resume`` skips chunks the ledger
already holds, so an interrupted campaign continues where it stopped.

Prints, per group: inputs, command runs, exit codes, internal errors (exit 70 = a traceback),
hangs (an input over --time-limit seconds), the slowest input and peak RSS; exits 1 if any
group had an internal error or a hang.  Each worker runs under an address-space limit
(--memory-limit-mib), so a length field that made mqtool allocate gigabytes fails the input
(an internal error) instead of going unnoticed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fuzz.harness import ROOT, Family, Outcome, Workspace, groups, run_chunk

_WORKSPACES: dict[str, Workspace] = {}
_WORKDIR: list[Path] = []


def _init_worker(workdir: str, memory_limit_mib: int) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the pool stops its workers with SIGTERM
    _WORKDIR[:] = [Path(workdir) / f"w{os.getpid()}"]
    if memory_limit_mib:
        limit = memory_limit_mib * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _workspace(family: Family) -> Workspace:
    ws = _WORKSPACES.get(family.name)
    if ws is None:
        ws = _WORKSPACES[family.name] = Workspace(family, _WORKDIR[0] / family.name)
    return ws


def _chunk(task: tuple[str, int, int, int, float, str]) -> dict:
    group, seed, start, count, time_limit, revision = task
    members = groups()[group]
    t0 = time.monotonic()
    out = run_chunk(group, members, _workspace, seed, start, count, time_limit=time_limit)
    return _record(group, seed, start, count, out, time.monotonic() - t0, revision)


def _revision() -> str:
    """The commit the harness and mqtool run from (recorded in the ledger), or ''."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "mqtool", "fuzz", "fixtures"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if out.returncode == 0 else ""


def _record(group: str, seed: int, start: int, count: int, out: Outcome, seconds: float, revision: str) -> dict:
    return {
        "revision": revision,
        "group": group,
        "seed": seed,
        "start": start,
        "count": count,
        "inputs": out.inputs,
        "runs": out.runs,
        "exit_codes": {str(k): v for k, v in sorted(out.exit_codes.items())},
        "internal_errors": [{"input": label, "command": list(cmd), "stderr": tail} for label, cmd, tail in out.internal_errors],
        "hangs": [{"input": label, "command": list(cmd)} for label, cmd in out.hangs],
        "peak_rss_mb": round(out.peak_rss_mb, 1),
        "slowest_input_s": round(out.slowest_input_s, 3),
        "seconds": round(seconds, 1),
    }


def read_ledger(path: Path) -> list[dict]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill: its chunk is simply run again
    return records


def summarize(records: list[dict]) -> tuple[list[str], bool]:
    """One line per group (distinct chunks counted once); whether all were clean."""
    totals: dict[str, dict] = {}
    seen: set[tuple] = set()
    for r in records:
        key = (r["group"], r["seed"], r["start"], r["count"])
        if key in seen:
            continue
        seen.add(key)
        t = totals.setdefault(r["group"], {"inputs": 0, "runs": 0, "codes": {}, "errors": [], "hangs": [], "rss": 0.0, "slowest": 0.0, "seconds": 0.0})
        t["inputs"] += r["inputs"]
        t["runs"] += r["runs"]
        for k, v in r["exit_codes"].items():
            t["codes"][k] = t["codes"].get(k, 0) + v
        t["errors"] += r["internal_errors"]
        t["hangs"] += r["hangs"]
        t["rss"] = max(t["rss"], r["peak_rss_mb"])
        t["slowest"] = max(t["slowest"], r["slowest_input_s"])
        t["seconds"] += r["seconds"]
    lines = []
    clean = True
    for group, t in totals.items():
        codes = ", ".join(f"{k}:{v:,}" for k, v in sorted(t["codes"].items(), key=lambda kv: int(kv[0])))
        lines.append(
            f"{group:<22} inputs {t['inputs']:>9,}  runs {t['runs']:>10,}  exit codes {{{codes}}}  "
            f"internal errors {len(t['errors'])}  hangs {len(t['hangs'])}  slowest input {t['slowest']:.2f} s  "
            f"peak RSS {t['rss']:.0f} MB  ({t['seconds']:,.0f} worker-s)"
        )
        for e in t["errors"][:5]:
            lines.append(f"  internal error: {e['input']} {' '.join(e['command'])}\n    {e['stderr'].strip()}")
        for h in t["hangs"][:5]:
            lines.append(f"  hang: {h['input']} {' '.join(h['command'])}")
        clean &= not t["errors"] and not t["hangs"]
    return lines, clean


def main() -> int:
    import fuzz.families  # noqa: F401  (registers the other layouts' families)

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--group", action="append", help="group name (default: all); --list shows them")
    ap.add_argument("--list", action="store_true", help="list the groups and their member families")
    ap.add_argument("--inputs", type=int, default=1000, help="inputs per group (default 1000)")
    ap.add_argument("--start", type=int, default=0, help="number of the first input (default 0)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=500, help="inputs per chunk / ledger line (default 500)")
    ap.add_argument("--time-limit", type=float, default=5.0, help="seconds allowed per input (default 5)")
    ap.add_argument("--memory-limit-mib", type=int, default=2048, help="address-space limit per worker (0: none)")
    ap.add_argument("--ledger", type=Path, help="append one JSON line per finished chunk here")
    ap.add_argument("--resume", action="store_true", help="skip chunks already in --ledger")
    ap.add_argument("--summary", type=Path, metavar="LEDGER", help="print the totals of a ledger and exit")
    args = ap.parse_args()

    all_groups = groups()
    if args.list:
        for name, members in all_groups.items():
            print(f"{name:<22} " + ", ".join(f"{m.name} ({m.store}/{m.target})" for m in members))
        return 0
    if args.summary:
        lines, clean = summarize(read_ledger(args.summary))
        print("\n".join(lines) if lines else "the ledger is empty")
        return 0 if clean else 1
    names = args.group or list(all_groups)
    unknown = [n for n in names if n not in all_groups]
    if unknown:
        ap.error(f"unknown group(s) {', '.join(unknown)}; --list shows them")

    done = set()
    if args.resume and args.ledger:
        done = {(r["group"], r["seed"], r["start"], r["count"]) for r in read_ledger(args.ledger)}
    tasks = []
    revision = _revision()
    # interleave the groups so a campaign cut short still covers every group
    for start in range(args.start, args.start + args.inputs, args.chunk):
        count = min(args.chunk, args.start + args.inputs - start)
        for name in names:
            if (name, args.seed, start, count) not in done:
                tasks.append((name, args.seed, start, count, args.time_limit, revision))

    records: list[dict] = []
    # SIGTERM (a stopped session, `kill`) ends the run like Ctrl-C: finished chunks stay in the
    # ledger and the work directory is removed
    signal.signal(signal.SIGTERM, lambda signum, frame: (_ for _ in ()).throw(KeyboardInterrupt()))
    workdir = tempfile.mkdtemp(prefix="mqtool-fuzz-")
    ledger = args.ledger.open("a", buffering=1) if args.ledger else None
    t0 = time.monotonic()
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(max(1, args.workers), initializer=_init_worker, initargs=(workdir, args.memory_limit_mib)) as pool:
            for n, rec in enumerate(pool.imap_unordered(_chunk, tasks), 1):
                records.append(rec)
                if ledger:
                    ledger.write(json.dumps(rec, sort_keys=True) + "\n")
                if sys.stderr.isatty() or os.environ.get("FUZZ_PROGRESS"):
                    elapsed = time.monotonic() - t0
                    sys.stderr.write(f"\r{n}/{len(tasks)} chunks, {elapsed:,.0f} s")
                    sys.stderr.flush()
    except KeyboardInterrupt:
        print("\ninterrupted: the finished chunks are in the ledger; rerun with --resume", file=sys.stderr)
    finally:
        if ledger:
            ledger.close()
        shutil.rmtree(workdir, ignore_errors=True)
    if sys.stderr.isatty() or os.environ.get("FUZZ_PROGRESS"):
        sys.stderr.write("\n")
    lines, clean = summarize(read_ledger(args.ledger) if (args.ledger and args.resume) else records)
    print("\n".join(lines))
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
