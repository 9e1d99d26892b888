"""Cold start: `mcptape --version` and `mcptape play` start-up vs bare `python -c pass`.

    python bench/bench_startup.py [--rounds 21]

Three commands, interleaved in rounds (shuffled order each round) with the cores kept out of
idle; figures are medians. `python -c pass` and `mcptape --version` are timed from spawn to
exit; `mcptape play` from spawn to the answer of its `initialize` (what a client waits for).
Then each mcptape path runs once under `-X importtime`: the heavy packages it imports are
listed, and any of rich/ghapi/jsonschema/pydantic/httpx on these paths is a failure
(`forbidden` in the result; the runner fails loudly) — they belong inside the functions that
use them, not on the path every `play` pays for.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, compile_package, mcptape_env, median, spinning  # noqa: E402

FORBIDDEN = ("rich", "ghapi", "jsonschema", "pydantic", "httpx")
TAPE = ROOT / "fixtures" / "example" / "tapes" / "surface.tape.jsonl"
INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
)


def _commands() -> dict[str, list[str]]:
    return {
        "python": [sys.executable, "-c", "pass"],
        "version": [sys.executable, "-m", "mcptape", "--version"],
        "play": [sys.executable, "-m", "mcptape", "play", str(TAPE)],
    }


def time_exit(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=mcptape_env(), timeout=60, check=True)
    return time.perf_counter() - t0


def time_first_answer(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT, env=mcptape_env())
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(INIT)
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - t0
        if b'"result"' not in line:
            raise RuntimeError(f"mcptape play did not answer initialize: {line[:200]!r}")
    finally:
        proc.stdin.close()
        proc.wait(30)
    return elapsed


def imported_modules(cmd: list[str], stdin: bytes | None) -> list[tuple[str, int]]:
    """(module, cumulative µs) of every module `cmd` imports, from `python -X importtime`."""
    traced = [cmd[0], "-X", "importtime", *cmd[1:]]
    proc = subprocess.run(traced, input=stdin or b"", capture_output=True, cwd=ROOT, env=mcptape_env(), timeout=60)
    mods = []
    for line in proc.stderr.decode("utf-8", "replace").splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
        mods.append((name, int(cumulative)))
    return mods


def import_report(cmd: list[str], stdin: bytes | None) -> dict[str, Any]:
    mods = imported_modules(cmd, stdin)
    tops = {name.split(".")[0] for name, _ in mods}
    third_party = sorted(
        ((name, us) for name, us in mods if "." not in name and name not in sys.stdlib_module_names and name != "mcptape"),
        key=lambda m: -m[1],
    )
    return {
        "modules": len(mods),
        "forbidden": sorted(t for t in tops if t in FORBIDDEN),
        "third_party": [f"{name} ({us / 1000:.1f} ms)" for name, us in third_party[:8]],
        "slowest_mcptape": [
            f"{name} ({us / 1000:.1f} ms)"
            for name, us in sorted(((n, u) for n, u in mods if n.startswith("mcptape")), key=lambda m: -m[1])[:5]
        ],
    }


def run(rounds: int = 21, spin: bool = True) -> dict[str, Any]:
    compile_package()
    commands = _commands()
    times: dict[str, list[float]] = {name: [] for name in commands}
    with spinning(spin):
        for name, cmd in commands.items():  # warm the page cache and .pyc files first
            (time_first_answer if name == "play" else time_exit)(cmd)
        order = list(commands)
        for _ in range(rounds):
            random.shuffle(order)
            for name in order:
                cmd = commands[name]
                times[name].append((time_first_answer if name == "play" else time_exit)(cmd))
    ms = {name: round(median(v) * 1000, 1) for name, v in times.items()}
    out: dict[str, Any] = {"rounds": rounds, "spinner": spin, "median_ms": ms}
    out["version_over_python"] = round(ms["version"] / ms["python"], 2)
    out["play_over_python"] = round(ms["play"] / ms["python"], 2)
    out["imports"] = {
        "version": import_report(commands["version"], None),
        "play": import_report(commands["play"], INIT),
    }
    out["forbidden"] = sorted({m for r in out["imports"].values() for m in r["forbidden"]})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--no-spin", action="store_true")
    args = parser.parse_args()
    result = run(args.rounds, spin=not args.no_spin)
    print(json.dumps(result, indent=2))
    if result["forbidden"]:
        print(f"FAIL: heavy modules on the start-up path: {', '.join(result['forbidden'])}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
