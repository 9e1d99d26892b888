"""Replay speed: the same session of N tools/call round trips against the live calc server and
against `mcptape play` of its tape, measured side by side in one run.

Reports throughput (sequential round trips per second) and time to first response (spawn ->
initialize answered, for the N-call tape and for a 10-call one: play reads a tape's lines
before it answers, and parses them as requests need them), as medians of interleaved rounds
so drift in machine load hits both sides alike. Low-priority spinners keep the cores out of
idle, or wake-up latency from idle swamps sub-millisecond round trips.
Run: `python bench/bench_replay.py [--calls N] [--rounds R]`.

A third side, `play_parsed`, plays the same tape with its footer's sha256 removed, as a tape
edited by hand is (played with --allow-edited): play then parses every line and every request (no verbatim shortcut, see
mcptape/replay/engine.py), which is also what a client whose lines differ from the recording's gets.

`--baseline DIR` adds two sides, `play_before` and `play_parsed_before`: `python -m mcptape play` run
from DIR, a directory holding another version of the `mcptape` package (e.g. a detached git worktree
of the last commit), so a change to play is measured against the old code in the same run, on
both paths.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import compile_package, spinning  # noqa: E402
from mcptape.tape.events import C2S, S2C, EventBuilder  # noqa: E402
from mcptape.tape.format import TapeWriter, make_header  # noqa: E402

CALC = [sys.executable, str(ROOT / "fixtures" / "servers" / "calc_server.py")]
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(i: int) -> bytes:
    msg = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": i, "b": 1}}}
    return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


def _session(command: list[str], calls: int, tape: TapeWriter | None = None, cwd: Path = ROOT) -> dict[str, float]:
    """One session: spawn, initialize, `calls` sequential tools/call round trips, close."""
    builder = EventBuilder()
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd)
    stdin: IO[bytes] = proc.stdin  # type: ignore[assignment]
    stdout: IO[bytes] = proc.stdout  # type: ignore[assignment]

    def send(line: bytes) -> None:
        if tape is not None:
            tape.write(builder.line(C2S, line.rstrip(b"\n")))
        stdin.write(line)
        stdin.flush()

    def receive() -> bytes:
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"{command}: EOF before the answer")
        if tape is not None:
            tape.write(builder.line(S2C, line.rstrip(b"\n")))
        return line

    try:
        send(json.dumps(INIT).encode() + b"\n")
        receive()
        first = time.perf_counter() - start
        send(json.dumps(INITIALIZED).encode() + b"\n")
        lines = [_call(i) for i in range(calls)]
        t0 = time.perf_counter()
        for line in lines:
            send(line)
            answer = receive()
        elapsed = time.perf_counter() - t0
        if b'"result"' not in answer:
            raise RuntimeError(f"{command}: last call failed: {answer[:200]!r}")
    finally:
        stdin.close()
        proc.wait(10)
    return {"first_ms": first * 1000, "calls_per_s": calls / elapsed, "us_per_call": elapsed / calls * 1e6}


def bench(calls: int = 2000, rounds: int = 7, baseline: Path | None = None) -> dict[str, Any]:
    small = 10
    for tree in (ROOT, baseline):
        if tree is not None:
            compile_package(tree)
    with tempfile.TemporaryDirectory() as tmp:
        plays, parsed = {}, {}
        for n in (calls, small):
            tape_path = Path(tmp) / f"bench{n}.tape.jsonl"
            writer = TapeWriter(tape_path, make_header("bench", server={"command": ["calc_server.py"]}))
            _session(CALC, n, writer)
            writer.close()
            plays[n] = [sys.executable, "-m", "mcptape", "play", str(tape_path)]
            edited = Path(tmp) / f"bench{n}.edited.tape.jsonl"
            edited.write_bytes(re.sub(rb',"sha256":"[0-9a-f]+"', b"", tape_path.read_bytes()))
            parsed[n] = [sys.executable, "-m", "mcptape", "play", str(edited), "--allow-edited"]
        sides = [
            ("live", CALC, CALC, ROOT),
            ("play", plays[calls], plays[small], ROOT),
            ("play_parsed", parsed[calls], parsed[small], ROOT),
        ]
        if baseline is not None:
            sides.append(("play_before", plays[calls], plays[small], baseline))
            sides.append(("play_parsed_before", parsed[calls], parsed[small], baseline))
        results: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in sides}
        first_small: dict[str, list[float]] = {name: [] for name, *_ in sides}
        with spinning():
            for r in range(rounds):
                for name, command, small_command, cwd in sides if r % 2 == 0 else sides[::-1]:
                    results[name].append(_session(command, calls, cwd=cwd))
                    first_small[name].append(_session(small_command, small, cwd=cwd)["first_ms"])

    def med(name: str, key: str) -> float:
        return round(statistics.median(x[key] for x in results[name]), 2)

    out: dict[str, Any] = {"calls": calls, "rounds": rounds, "cpus": os.cpu_count()}
    for name in results:
        out[name] = {k: med(name, k) for k in ("calls_per_s", "us_per_call", "first_ms")}
        out[name]["first_ms_10_call_tape"] = round(statistics.median(first_small[name]), 2)
    out["throughput_ratio_play_over_live"] = round(out["play"]["calls_per_s"] / out["live"]["calls_per_s"], 3)
    out["throughput_ratio_play_parsed_over_live"] = round(
        out["play_parsed"]["calls_per_s"] / out["live"]["calls_per_s"], 3
    )
    out["first_response_ratio_play_over_live"] = round(out["play"]["first_ms"] / out["live"]["first_ms"], 3)
    out["first_response_ratio_10_call_tape"] = round(
        out["play"]["first_ms_10_call_tape"] / out["live"]["first_ms_10_call_tape"], 3
    )
    if "play_before" in out:
        before = out["play_before"]
        out["before_throughput_ratio_play_over_live"] = round(before["calls_per_s"] / out["live"]["calls_per_s"], 3)
        out["before_first_response_ratio_play_over_live"] = round(before["first_ms"] / out["live"]["first_ms"], 3)
        out["before_first_response_ratio_10_call_tape"] = round(
            before["first_ms_10_call_tape"] / out["live"]["first_ms_10_call_tape"], 3
        )
        out["before_throughput_ratio_play_parsed_over_live"] = round(
            out["play_parsed_before"]["calls_per_s"] / out["live"]["calls_per_s"], 3
        )
    try:  # how busy the machine was (Linux only)
        with open("/proc/loadavg", encoding="utf-8") as fh:
            out["loadavg"] = fh.read().split()[:3]
    except OSError:
        pass
    return out


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--baseline", type=Path, help="a directory holding another mcptape package to compare with")
    args = parser.parse_args()
    result = bench(args.calls, args.rounds, args.baseline.resolve() if args.baseline else None)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
