"""`mcptape ci` in parallel: 8 sessions against a server taking 300 ms per call, `--jobs 8` vs one alone.

    python bench/bench_ci.py [--sessions 8] [--calls 3] [--ms 300] [--rounds 3]

Each session starts its own calc fixture server and makes `calls` calls to its `slow` tool
(`ms` milliseconds each). Goldens are recorded first; then every round (order alternating)
times one `mcptape ci --jobs N` of all sessions and each session alone (`--session NAME`),
whole processes from spawn to exit, cores kept out of idle. The figure is the parallel run over
the slowest single session of the same round (1.0 = perfect overlap), median over rounds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, mcptape_env, median, spinning  # noqa: E402

CALC = ROOT / "fixtures" / "servers" / "calc_server.py"


def write_config(directory: Path, sessions: int, calls: int, ms: int) -> Path:
    lines = [
        "version: 1",
        "golden_dir: tapes",
        "servers:",
        "  slow:",
        f"    command: [{json.dumps(sys.executable)}, {json.dumps(str(CALC))}]",
        "sessions:",
    ]
    for i in range(1, sessions + 1):
        lines += [f"  - name: slow-{i}", "    server: slow", "    steps:"]
        lines += ["      - call: slow", f"        arguments: {{ms: {ms}}}"] * calls
    path = directory / "mcptape.yml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def ci(config: Path, *args: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mcptape", "ci", "-c", str(config), *args],
        capture_output=True, cwd=config.parent, env=mcptape_env(), timeout=600,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"mcptape ci {' '.join(args)} exited {proc.returncode}: {proc.stdout[-2000:]!r} {proc.stderr[-2000:]!r}")
    return elapsed


def run(sessions: int = 8, calls: int = 3, ms: int = 300, rounds: int = 3, spin: bool = True) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-ci-") as tmp:
        config = write_config(Path(tmp), sessions, calls, ms)
        ci(config, "--update-golden")
        names = [f"slow-{i}" for i in range(1, sessions + 1)]
        parallel: list[float] = []
        slowest: list[float] = []
        singles: list[float] = []
        with spinning(spin):
            for r in range(rounds):
                def all_at_once() -> None:
                    parallel.append(ci(config, "--jobs", str(sessions)))

                def one_by_one() -> None:
                    alone = [ci(config, "--session", name) for name in names]
                    singles.extend(alone)
                    slowest.append(max(alone))

                for step in (all_at_once, one_by_one) if r % 2 == 0 else (one_by_one, all_at_once):
                    step()
    ratios = [p / s for p, s in zip(parallel, slowest, strict=True)]
    return {
        "sessions": sessions,
        "calls_per_session": calls,
        "ms_per_call": ms,
        "rounds": rounds,
        "spinner": spin,
        "parallel_s": round(median(parallel), 3),
        "slowest_single_s": round(median(slowest), 3),
        "median_single_s": round(median(singles), 3),
        "serial_sum_s": round(median(singles) * sessions, 3),
        "parallel_over_slowest": round(median(ratios), 3),
        "server_time_per_session_s": round(calls * ms / 1000, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--ms", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-spin", action="store_true")
    args = parser.parse_args()
    print(json.dumps(run(args.sessions, args.calls, args.ms, args.rounds, spin=not args.no_spin), indent=2))


if __name__ == "__main__":
    main()
