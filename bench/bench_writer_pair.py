#!/usr/bin/env python3
"""Before/after of rec's tape writer and the redactor: two checkouts side by side, in one run.

    python bench/bench_writer_pair.py --baseline DIR [--baseline DIR2] [--rounds 3] [--calls 1000] [--reps 5] [--mb 10]

DIR is another checkout with its own `.venv` (say `git worktree add --detach DIR <commit>` and
`make install-python` there). Each round runs, in turn and in a random order, a fresh process of
each checkout (baselines and this one) (its own venv, its own bench/ files) measuring `bench_rec.py`'s in-process writer
figure (CPU µs per round trip, tiny and 1 KB, best of `reps`) and `bench_redact.py`'s redaction
throughput (CPU MB/s on a `--mb` tape; `--mb 0` leaves it out). Printed: each figure's min-max
over the rounds per checkout, and this checkout's ratio to the baseline pair by pair, so a
machine whose speed drifts during the run moves both sides alike.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run from the checkout's root with its own venv: bench_rec/bench_redact put that root first on
# sys.path, and the venv's editable install points at the same checkout.
PROBE = """\
import json, sys
from bench.bench_rec import writer_cpu_us
calls, reps, mb = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
out = {f"writer_{k}_us": v for k, v in writer_cpu_us(calls=calls, reps=reps).items()}
if mb > 0:
    from bench.bench_redact import run
    r = run(mb)
    out.update({k: r[k] for k in ("redact_known_mb_s", "verify_known_mb_s", "line_bytes_mb_s")})
print(json.dumps(out))
"""


def probe(checkout: Path, calls: int, reps: int, mb: float) -> dict[str, float]:
    python = checkout / ".venv" / "bin" / "python"
    done = subprocess.run(
        [str(python), "-c", PROBE, str(calls), str(reps), str(mb)],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, action="append", metavar="DIR",
                        help="another checkout (with its .venv); repeat for more")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=1000, help="round trips fed to the writer per rep")
    parser.add_argument("--reps", type=int, default=5, help="the writer figure is the best of these")
    parser.add_argument("--mb", type=float, default=10.0, help="bench_redact tape size (0: writer only)")
    parser.add_argument("--json", metavar="FILE", help="also write every round's figures here")
    args = parser.parse_args(argv)
    sides = {f"base{i + 1}": Path(d).resolve() for i, d in enumerate(args.baseline)}
    sides["this"] = ROOT
    rounds: list[dict[str, dict[str, float]]] = []
    for n in range(args.rounds):
        order = list(sides)
        random.shuffle(order)
        got = {side: probe(sides[side], args.calls, args.reps, args.mb) for side in order}
        rounds.append(got)
        print(f"round {n + 1}: " + "  ".join(f"{s} {json.dumps(got[s])}" for s in sides), file=sys.stderr)
    print(f"{args.rounds} interleaved rounds; " + ", ".join(f"{s} = {d}" for s, d in sides.items()))
    print(f"  {'figure':<20}" + "".join(f" {s + ' (min-max)':>18}" for s in sides)
          + "".join(f" {'this/' + s + ' (min-max)':>22}" for s in sides if s != "this"))
    for key in rounds[0]["this"]:
        line = f"  {key:<20}"
        for side in sides:
            values = [r[side][key] for r in rounds]
            line += f" {min(values):>8.1f}-{max(values):<9.1f}"
        for side in (s for s in sides if s != "this"):
            ratios = [r["this"][key] / r[side][key] for r in rounds]
            line += f" {min(ratios):>10.3f}-{max(ratios):<11.3f}"
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(rounds, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
