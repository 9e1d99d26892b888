"""`python -m tests.fuzz --budget SECONDS --seed N [--target tape|config|server]...`: a longer campaign.

Prints each failure with its target and seed (reproduce it with `--seed SEED --cases 1 --target
TARGET`) and the counts; exit 1 if any run broke the property. `make fuzz` runs ten minutes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tests.fuzz.campaign import TARGETS, campaign


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz")
    parser.add_argument("--budget", type=float, default=600.0, help="seconds (default 600)")
    parser.add_argument("--seed", type=int, default=1, help="the first case's seed (default 1)")
    parser.add_argument("--cases", type=int, default=None, help="stop after this many cases")
    parser.add_argument("--target", action="append", choices=sorted(TARGETS), help="repeatable; default all")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcptape-fuzz-") as work:
        counts = campaign(Path(work), seed=args.seed, cases=args.cases, budget=args.budget,
                          targets=tuple(args.target or TARGETS), say=lambda line: print(line, flush=True))
    print(counts.line())
    return 1 if counts.failures else 0


if __name__ == "__main__":
    sys.exit(main())
