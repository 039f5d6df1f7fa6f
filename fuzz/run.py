"""Long fuzzing campaigns: ``python -m fuzz.run [--family NAME ...] [--inputs N] [--seed S]``.

Prints, per family: inputs, command runs, exit-code histogram, internal errors (exit 70 =
a traceback), hangs (a command over --time-limit seconds) and peak RSS; exits 1 if any family
had an internal error or a hang.  An input that fails is reproducible from its seed and index.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from fuzz.harness import FAMILIES, campaign


def main() -> int:
    import fuzz.families  # noqa: F401  (registers the other layouts' families)

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", action="append", help="family name (default: all); --list to see them")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--inputs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.list:
        for name, fam in FAMILIES.items():
            print(f"{name:<32} {fam.store}/{fam.target}{'' if fam.available() else '  (fixture missing)'}")
        return 0
    names = args.family or [n for n, f in FAMILIES.items() if f.available()]
    failed = False
    with tempfile.TemporaryDirectory(prefix="mqtool-fuzz-") as tmp:
        for name in names:
            family = FAMILIES[name]
            t0 = time.monotonic()
            out = campaign(family, Path(tmp) / name, args.inputs, args.seed)
            secs = time.monotonic() - t0
            codes = ", ".join(f"{k}:{v}" for k, v in sorted(out.exit_codes.items()))
            print(
                f"{name:<28} inputs {out.inputs:>7,}  runs {out.runs:>8,}  exit codes {{{codes}}}  "
                f"internal errors {len(out.internal_errors)}  hangs {len(out.hangs)}  peak RSS {out.peak_rss_mb:.0f} MB  ({secs:.0f} s)"
            )
            for label, command, tail in out.internal_errors[:5]:
                print(f"  internal error: {label} {' '.join(command)}\n    {tail.strip()}")
            for label, command in out.hangs[:5]:
                print(f"  hang: {label} {' '.join(command)}")
            failed |= not out.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
