"""The gate's strength: linear in the goldens, and a typical check well under one `mcptape ci`.

    python bench/bench_strength.py [--rounds 3] [--quick]

Three figures, each side by side in one run (medians over interleaved rounds, CPU time of the
measuring process, so a loaded machine moves them less than wall time):
  sessions  `measure` over 25, 50 and 100 sessions of one synthetic golden each (a server of
            eight tools, a tools/list, five calls, an error, a log, a resource): the time per
            session at 100 over the time per session at 25 (1.0 = linear);
  calls     `measure` of one golden of 500, 1,000 and 2,000 calls to the same tools: the time per
            call at 2,000 over the time per call at 500 (1.0 = linear; mutants are drawn per tool
            and kind, so their number stays, and each judgement is linear in the tape);
  example   `mcptape check --strength` against `mcptape ci` on the bundled example (fixtures/example:
            three sessions of the calc server), whole processes, wall time: the ratio.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT, compile_package, mcptape_env, median  # noqa: E402

TOOLS = 8


def _tools() -> list[dict[str, Any]]:
    return [{"name": f"tool_{i}", "description": f"Tool number {i}: it looks things up, in order.",
             "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
                             "required": ["q"]},
             "annotations": {"readOnlyHint": True}} for i in range(TOOLS)]


def golden_events(calls: int, called: int = 5) -> list[dict[str, Any]]:
    """A canonical golden: handshake, tools/list, `calls` calls over the first `called` tools, an
    error, a resource read and a log notification after the last step."""
    events: list[dict[str, Any]] = []

    def exchange(ident: int, method: str, params: Any, answer: dict[str, Any], step: int) -> None:
        request = {"jsonrpc": "2.0", "id": ident, "method": method, **({"params": params} if params else {})}
        events.append({"kind": "request", "dir": "c2s", "id": ident, "method": method, "msg": request, "step": step})
        kind = "error" if "error" in answer else "response"
        echo = {"params": params} if params else {}
        events.append({"kind": kind, "dir": "s2c", "id": ident, "method": method, **echo,
                       "msg": {"jsonrpc": "2.0", "id": ident, **answer}, "step": step})

    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcptape", "version": "0"}}
    events.append({"kind": "request", "dir": "c2s", "id": 0, "method": "initialize",
                   "msg": {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}})
    events.append({"kind": "response", "dir": "s2c", "id": 0, "method": "initialize", "params": hello,
                   "msg": {"jsonrpc": "2.0", "id": 0, "result": {
                       "protocolVersion": "2025-06-18", "serverInfo": {"name": "bench", "version": "1"},
                       "capabilities": {"tools": {}, "resources": {}, "logging": {}}}}})
    exchange(1, "tools/list", None, {"result": {"tools": _tools()}}, 1)
    for i in range(calls):
        args = {"q": f"query {i}", "n": i}
        items = [f"item {i}-{k}" for k in range(3)]
        result = {"content": [{"type": "text", "text": json.dumps({"items": items, "count": i})}],
                  "structuredContent": {"items": items, "count": i}}
        exchange(2 + i, "tools/call", {"name": f"tool_{i % called}", "arguments": args}, {"result": result}, 2 + i)
    n = 2 + calls
    exchange(n, "tools/call", {"name": "tool_0", "arguments": {}}, {"error": {"code": -32602, "message": "q is required"}},
             n)
    exchange(n + 1, "resources/read", {"uri": "mem://notes"},
             {"result": {"contents": [{"uri": "mem://notes", "text": "first note\nsecond note"}]}}, n + 1)
    events.append({"kind": "notification", "dir": "s2c", "method": "notifications/message",
                   "msg": {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}})
    return events


def _measure_cpu(directory: Path, sessions: int, calls: int) -> tuple[float, int]:
    """CPU seconds of `measure` over `sessions` goldens of `calls` calls each, and the mutants judged."""
    from mcptape.ci.session import RunContext
    from mcptape.config.load import load_config
    from mcptape.strength.measure import measure
    from mcptape.tape.format import Tape

    config = directory / "mcptape.yml"
    lines = ["version: 1", "servers:", "  s:", "    command: [python3, -c, pass]", "sessions:"]
    for i in range(sessions):
        lines += [f"  - name: s{i}", "    server: s", "    steps: [list_tools]"]
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    loaded = load_config(config)
    ctx = RunContext(loaded=loaded, update=False, out_dir=None, golden_dir=loaded.golden_dir)
    events = golden_events(calls)
    goldens = {f"s{i}": Tape(header={"name": f"s{i}"}, events=[dict(e) for e in events],
                             event_lines=[k + 2 for k in range(len(events))]) for i in range(sessions)}
    start = time.process_time()
    measured = measure(ctx, loaded.config.sessions, goldens=goldens)
    spent = time.process_time() - start
    assert all(s.problem is None for s in measured.sessions), [s.problem for s in measured.sessions]
    return spent, len(measured.judged)


def _process(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mcptape", *args], cwd=cwd, env=mcptape_env(), capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"mcptape {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    return time.perf_counter() - start


def run(rounds: int = 3, quick: bool = False) -> dict[str, Any]:
    compile_package()
    session_counts = (10, 20, 40) if quick else (25, 50, 100)
    call_counts = (250, 500, 1000) if quick else (500, 1000, 2000)
    out: dict[str, Any] = {"rounds": rounds, "sessions": {}, "calls": {}, "example": {}}
    with tempfile.TemporaryDirectory(prefix="mcptape-bench-strength-") as scratch:
        base = Path(scratch)
        from mcptape.conformance import gate

        gate.load()  # imported once, before any timing: a first import is not the measure's
        per_session: dict[int, list[float]] = {n: [] for n in session_counts}
        per_call: dict[int, list[float]] = {n: [] for n in call_counts}
        mutants: dict[str, int] = {}
        for r in range(rounds):
            order = session_counts if r % 2 == 0 else tuple(reversed(session_counts))
            for n in order:
                spent, judged = _measure_cpu(base, n, 5)
                per_session[n].append(spent / n)
                mutants[f"sessions={n}"] = judged
            order = call_counts if r % 2 == 0 else tuple(reversed(call_counts))
            for n in order:
                spent, judged = _measure_cpu(base, 1, n)
                per_call[n].append(spent / n)
                mutants[f"calls={n}"] = judged
        out["mutants"] = mutants
        out["sessions"] = {n: median(v) for n, v in per_session.items()}
        out["calls"] = {n: median(v) for n, v in per_call.items()}
        out["sessions_linearity"] = out["sessions"][session_counts[-1]] / out["sessions"][session_counts[0]]
        out["calls_linearity"] = out["calls"][call_counts[-1]] / out["calls"][call_counts[0]]

        example = base / "example"
        shutil.copytree(ROOT / "fixtures" / "example", example)
        config = example / "mcptape.yml"
        config.write_text(config.read_text(encoding="utf-8").replace(
            "python3, ../servers/", f"{sys.executable}, {ROOT / 'fixtures' / 'servers'}/"), encoding="utf-8")
        check, ci = [], []
        for r in range(rounds):
            pair = [("check", check), ("ci", ci)] if r % 2 == 0 else [("ci", ci), ("check", check)]
            for name, times in pair:
                times.append(_process(["check", "--strength"] if name == "check" else ["ci"], example))
        out["example"] = {"check_strength_s": median(check), "ci_s": median(ci), "ratio": median(check) / median(ci)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    result = run(args.rounds, args.quick)
    for label in ("sessions", "calls"):
        per = ", ".join(f"{n}: {1000 * t:.2f} ms" for n, t in result[label].items())
        print(f"measure, CPU per {label[:-1]} ({per}): largest/smallest {result[f'{label}_linearity']:.2f}x")
    print(f"mutants judged: {result['mutants']}")
    ex = result["example"]
    print(f"bundled example: check --strength {ex['check_strength_s']:.2f} s, ci {ex['ci_s']:.2f} s: {ex['ratio']:.2f}x")


if __name__ == "__main__":
    main()
