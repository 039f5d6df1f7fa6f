"""Run every benchmark and print one table of the ratios they measured.

    python bench/run_all.py            # the sizes the issues ask for (takes a while)
    python bench/run_all.py --quick    # small sizes, for a smoke run

Each benchmark measures its contenders side by side in one run and prints ratio lines
(``ratio <what>: <x>x (goal ...)``); this script collects those lines into one table.  Missing
optional pieces (kafka-python, pyspark/Java) make the corresponding benchmark report itself as
skipped rather than fail the run.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: script -> (full-size args, quick args)
BENCHES = {
    "startup.py": ([], ["--runs", "3"]),
    "dump_throughput.py": (["--size-mib", "256"], ["--size-mib", "32"]),
    "validate_throughput.py": (["--size-mib", "512", "--file-mib", "128"], ["--size-mib", "64", "--file-mib", "16"]),
    "recover_throughput.py": (["--size-mib", "512", "--file-mib", "128"], ["--size-mib", "64", "--file-mib", "16"]),
    "kafka_throughput.py": (["--size-mib", "256"], ["--size-mib", "32"]),
    "spark_scan.py": (["--size-mib", "1024"], ["--size-mib", "64"]),
}

RATIO = re.compile(r"^(ratio .*|.*\bratio\b.*x.*)$", re.IGNORECASE)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", action="append", help="run only this script (repeatable)")
    args = ap.parse_args()
    rows = []
    for script, (full, quick) in BENCHES.items():
        if args.only and script not in args.only:
            continue
        path = HERE / script
        if not path.exists():
            rows.append((script, "not present", ""))
            continue
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, str(path), *(quick if args.quick else full)], capture_output=True, text=True)
        secs = time.monotonic() - t0
        lines = [line.strip() for line in proc.stdout.splitlines() if RATIO.match(line.strip()) or "ratio" in line]
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["failed"]
            rows.append((script, f"exit {proc.returncode}: {tail[0]}", f"{secs:.0f} s"))
            continue
        if not lines:
            lines = [proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "(no ratio printed)"]
        for i, line in enumerate(lines):
            rows.append((script if i == 0 else "", line, f"{secs:.0f} s" if i == 0 else ""))
    width = max(len(r[0]) for r in rows) if rows else 10
    print(f"{'benchmark':<{width}}  {'result':<90}  time")
    for name, line, secs in rows:
        print(f"{name:<{width}}  {line:<90}  {secs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
