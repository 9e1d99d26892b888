"""`mcptape diff` as a user runs it: wall time and peak memory of the process, 10k/100k/200k events.

    python bench/bench_diff_cli.py [--sizes 10000,100000,200000] [--rounds 3]

bench_diff.py (C) times diff_tapes in-process; this one times the whole command — start-up,
reading both tapes, diffing, rendering — because that is what a CI job waits for. Tapes come from
bench_diff.make_tape: a golden and a fresh tape with one call inserted early and one result
changed in the middle (the realistic drift). Peak RSS is the child's own, from wait4(). Rounds
interleave the sizes; figures are medians. The growth ratios compare per-event cost of the
largest size with the middle one and with the smallest (1.0 = linear).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, mcptape_env, median  # noqa: E402

SIZES = (10_000, 100_000, 200_000)


def _make_tapes(n: int, golden: Path, fresh: Path) -> None:
    """The pair, written by a child process. Linux carries a process's peak RSS across fork and
    exec, so every diff spawned after this process had built a 200k-event tape in memory would
    report at least that peak as its own (a 10k-event diff read as 304 MB)."""
    code = "import sys\nfrom pathlib import Path\nfrom bench.bench_diff import make_tape\n"
    code += "make_tape(Path(sys.argv[2]), int(sys.argv[1]), variant='equal')\n"
    code += "make_tape(Path(sys.argv[3]), int(sys.argv[1]), variant='drifted')\n"
    subprocess.run([sys.executable, "-c", code, str(n), str(golden), str(fresh)], check=True, cwd=ROOT, env=mcptape_env())


def diff_once(golden: Path, fresh: Path) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MB, exit code) of one `mcptape diff golden fresh` process."""
    cmd = [sys.executable, "-m", "mcptape", "diff", str(golden), str(fresh)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=mcptape_env())
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4; keep Popen from waiting again
    return wall, usage.ru_maxrss / 1024, proc.returncode


def run(sizes: tuple[int, ...] = SIZES, rounds: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        pairs = {}
        for n in sizes:
            golden, fresh = Path(tmp) / f"g{n}.tape.jsonl", Path(tmp) / f"f{n}.tape.jsonl"
            _make_tapes(n, golden, fresh)
            pairs[n] = (golden, fresh)
        walls: dict[int, list[float]] = {n: [] for n in sizes}
        rss: dict[int, list[float]] = {n: [] for n in sizes}
        codes: dict[int, int] = {}
        for r in range(rounds):
            for n in sizes if r % 2 == 0 else sizes[::-1]:
                wall, peak, code = diff_once(*pairs[n])
                walls[n].append(wall)
                rss[n].append(peak)
                codes[n] = code
        tape_mb = {n: pairs[n][0].stat().st_size / 1e6 for n in sizes}
    out: dict[str, Any] = {"rounds": rounds, "sizes": {}}
    for n in sizes:
        out["sizes"][str(n)] = {
            "wall_s": round(median(walls[n]), 3),
            "peak_rss_mb": round(median(rss[n]), 1),
            "exit_code": codes[n],
            "tape_mb": round(tape_mb[n], 1),
        }
    big, small = sizes[-1], sizes[0]
    mid = sizes[-2] if len(sizes) > 2 else small

    def per_event(n: int) -> float:
        return float(out["sizes"][str(n)]["wall_s"]) / n

    out["growth_per_event_largest_vs_middle"] = round(per_event(big) / per_event(mid), 2)
    out["growth_per_event_largest_vs_smallest"] = round(per_event(big) / per_event(small), 2)
    out["rss_growth_largest_vs_middle"] = round(
        out["sizes"][str(big)]["peak_rss_mb"] / out["sizes"][str(mid)]["peak_rss_mb"], 2
    )
    out["size_ratio_largest_vs_middle"] = round(big / mid, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(run(tuple(int(x) for x in args.sizes.split(",")), args.rounds), indent=2))


if __name__ == "__main__":
    main()
