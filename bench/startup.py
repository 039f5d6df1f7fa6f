"""Benchmark: start-up cost of ``mqtool --help`` and ``mqtool info`` next to importing typer and rich.

    python bench/startup.py [--runs 15]

The reference is ``python -c "import typer, rich.console"``: the floor any typer + rich CLI pays
before it does anything.  The commands run round-robin (reference, ``--help``, ``info``, bare
Python, one after the other, ``--runs`` times) so that a busy machine slows them alike; each is
reported as its median wall time and as the median of its per-round ratios to the reference
(``ratio ...`` lines, as ``bench/run_all.py`` collects them).  Issue 19's goals: ``mqtool --help``
<= 2x and ``mqtool info fixtures/rocketmq-store`` <= 2.5x; ``info`` on the Kafka and Jafka
fixtures is measured against the same 2.5x bar for comparison.  The script exits 1 when one of
the issue's goals is missed.

It also checks with ``-X importtime`` that neither command imports pyspark, pyarrow or a
compression codec, and lists the heavy modules ``--help`` must not import (numpy, the store
model, any ops module): they load inside the command that needs them.

``mqtool`` runs as ``python -m mqtool`` from this checkout (the installed script may point at
another one).  Every command runs with compiled bytecode, as an installed package does: the .pyc
files go to a temporary ``PYTHONPYCACHEPREFIX`` (written by a first, unmeasured run; the source
tree is left alone) even where ``PYTHONDONTWRITEBYTECODE`` is set.  ``--no-bytecode-cache`` keeps
the environment as it is (with ``PYTHONDONTWRITEBYTECODE=1`` every mqtool module is compiled
from source on every run, which then dominates the startup time).  Noisy machines: medians of per-round ratios; ``--check`` also exits 1 when a
forbidden module is imported.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
HEAVY = ("pyspark", "pyarrow", "lz4", "zstandard", "cramjam", "snappy")
#: modules ``mqtool --help`` must not import (prefixes): they belong inside the commands
NOT_AT_HELP = ("numpy", "mqtool.ops", "mqtool.store", "mqtool.formats", "mqtool.layouts", "mqtool.pipeline", "humanize")

REFERENCE = ("import typer, rich.console", ["-c", "import typer, rich.console"])
COMMANDS = {
    "mqtool --help": (["-m", "mqtool", "--help"], 2.0),
    **{f"mqtool info {store}": (["-m", "mqtool", "info", str(FIXTURES / store)], 2.5) for store in ("rocketmq-store", "kafka-logs", "jafka-data")},
}
#: the issue's goals (the exit status follows them); the other lines hold the same bar as a
#: comparison: Kafka's info also loads the crc32c package (~25 ms: it reads its own metadata)
ISSUE_GOALS = ("mqtool --help", "mqtool info rocketmq-store")
BARE = ("python -c pass", ["-c", "pass"])
#: what any typer CLI of this size pays for its help: 12 commands of 4 parameters, nothing imported
TYPER_APP = """
from typing import Annotated
import typer
app = typer.Typer(no_args_is_help=True, add_completion=False)
def command(path: Annotated[str, typer.Argument(help="A path.")], limit: Annotated[int, typer.Option(min=0, help="At most.")] = 0,
            fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table", json: Annotated[bool, typer.Option(help="JSON.")] = False) -> None:
    \"\"\"Do one thing to PATH.\"\"\"
for n in range(12):
    app.command(f"command-{n}")(command)
app()
"""


#: where compiled bytecode goes (None: as the environment says)
_PYCACHE: list[str] = []


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("COLUMNS", "100")
    if _PYCACHE:
        env["PYTHONPYCACHEPREFIX"] = _PYCACHE[0]
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _once(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd=ROOT, env=_env())
    return time.perf_counter() - t0


def measure(runs: int, typer_app: Path) -> tuple[dict[str, float], dict[str, float]]:
    """The median wall time of every command and the median of each command's per-round ratio to
    the reference, the commands run round-robin ``runs`` times."""
    jobs = {
        REFERENCE[0]: REFERENCE[1],
        **{label: argv for label, (argv, _) in COMMANDS.items()},
        "typer app of 12 commands --help": [str(typer_app), "--help"],
        BARE[0]: BARE[1],
    }
    for argv in jobs.values():  # warm the page cache and the .pyc files
        _once(argv)
    samples: dict[str, list[float]] = {label: [] for label in jobs}
    for _ in range(runs):
        for label, argv in jobs.items():
            samples[label].append(_once(argv))
    ref = samples[REFERENCE[0]]
    medians = {label: statistics.median(s) for label, s in samples.items()}
    ratios = {label: statistics.median(t / r for t, r in zip(s, ref)) for label, s in samples.items()}
    return medians, ratios


def imported(argv: list[str]) -> list[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, cwd=ROOT, env=_env())
    return [line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:") and "|" in line]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--check", action="store_true", help="also exit 1 when a forbidden module is imported")
    ap.add_argument("--no-bytecode-cache", action="store_true", help="run with the environment's bytecode settings as they are")
    args = ap.parse_args()
    if not args.no_bytecode_cache:
        _PYCACHE.append(tempfile.mkdtemp(prefix="mqtool-startup-pyc-"))
    try:
        return _report(args)
    finally:
        if _PYCACHE:
            shutil.rmtree(_PYCACHE[0], ignore_errors=True)


def _report(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        typer_app = Path(tmp) / "typer_app.py"
        typer_app.write_text(TYPER_APP)
        times, ratios = measure(args.runs, typer_app)
    cache = "compiled bytecode (a private PYTHONPYCACHEPREFIX)" if _PYCACHE else f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!s}"
    print(f"bytecode: {cache}")
    ok = met_all = True
    for label in times:
        print(f"{label:<34} {times[label] * 1000:6.0f} ms (median of {args.runs})")
    for label, (argv, goal) in COMMANDS.items():
        met = ratios[label] <= goal
        modules = imported(argv)
        heavy = sorted({m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY})
        early = sorted({m for m in modules if m.startswith(NOT_AT_HELP)}) if argv[-1] == "--help" else []
        issue_goal = label in ISSUE_GOALS
        ok &= (met or not issue_goal) and not heavy and not early
        met_all &= met or not issue_goal
        verdict = ("met" if met else "MISSED") if issue_goal else ("within" if met else "over") + " the same bar (not an issue goal)"
        print(f"ratio {label} / {REFERENCE[0]}: {ratios[label]:.2f}x (goal <= {goal}x): {verdict}")
        print(f"  {label}: pyspark, pyarrow, codecs imported: {', '.join(heavy) or 'none'}")
        if argv[-1] == "--help":
            shown = ", ".join(early[:8]) + (f" and {len(early) - 8} more" if len(early) > 8 else "")
            print(f"  {label}: numpy, store, ops, formats imported: {shown or 'none'}")
    for label in ("typer app of 12 commands --help", BARE[0]):
        print(f"ratio {label} / {REFERENCE[0]}: {ratios[label]:.2f}x (for comparison)")
    print(f"goals: {'all met' if met_all else 'MISSED'}")
    return 1 if not met_all or (args.check and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
