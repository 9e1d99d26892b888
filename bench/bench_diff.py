"""Diff time and peak memory on big tapes (not part of the test suite).

    python bench/bench_diff.py [EVENTS ...]      (default: 10000 100000 200000)

For each size, three cases, each in a fresh process so peak RSS is that case's alone:
  equal      two identical tapes (the common prefix pass pairs everything)
  drifted    one call inserted early and one result changed in the middle
  scrambled  every call's arguments differ (pass 3 on everything: the worst case)
Times are diff_tapes only (tapes already in memory); `read` is reading both files the way
`mcptape diff` does (tape/reader.py read_pair: the fresh tape shares the golden's parsed events
for identical lines, so identical events are the same objects). Wall and
CPU time are both shown: on a shared, loaded machine CPU time is the steadier figure. Growth
ratios compare each size's CPU time per event with the first size's.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def make_tape(path: Path, events: int, *, variant: str) -> None:
    from mcptape.tape.events import C2S, S2C, EventBuilder
    from mcptape.tape.format import make_header, tape_bytes

    b = EventBuilder()
    evs = []
    calls = events // 2
    for i in range(calls):
        args = {"a": i, "b": i % 7}
        if variant == "scrambled":
            args["b"] += 1
        if variant == "drifted" and i == 10:
            req = {"jsonrpc": "2.0", "id": 10**9, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
            evs.append(b.message(C2S, req))
            evs.append(b.message(S2C, {"jsonrpc": "2.0", "id": 10**9, "result": {"content": []}}))
        req = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "add", "arguments": args}}
        total = i + i % 7 + (1 if variant == "drifted" and i == calls // 2 else 0)
        res = {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": str(total)}], "isError": False}}
        evs.append(b.message(C2S, req))
        evs.append(b.message(S2C, res))
    path.write_bytes(tape_bytes(make_header("bench"), evs))


def child(golden: str, fresh: str) -> None:
    import gc

    from mcptape.diff.compare import diff_tapes
    from mcptape.tape.reader import read_pair

    gc.disable()  # as run_diff does while reading
    t0, c0 = time.perf_counter(), time.process_time()
    g, f = read_pair(golden, fresh)
    t1, c1 = time.perf_counter(), time.process_time()
    rss_read = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = diff_tapes(g, f)
    t2, c2 = time.perf_counter(), time.process_time()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"read_s": t1 - t0, "diff_s": t2 - t1, "read_cpu": c1 - c0, "diff_cpu": c2 - c1,
                      "rss_read_mb": rss_read, "rss_mb": rss_mb, "verdict": result.verdict, "drifts": len(result.drifts)}))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    sizes = [int(x) for x in sys.argv[1:]] or [10_000, 100_000, 200_000]
    base: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            golden = Path(tmp) / f"g{n}.tape.jsonl"
            make_tape(golden, n, variant="equal")
            for case in ("equal", "drifted", "scrambled"):
                fresh = Path(tmp) / f"{case}{n}.tape.jsonl"
                make_tape(fresh, n, variant=case)
                out = subprocess.run([sys.executable, __file__, "--child", str(golden), str(fresh)],
                                     capture_output=True, text=True, check=True, timeout=600)
                r = json.loads(out.stdout)
                per_event = r["diff_cpu"] / n
                base.setdefault(case, per_event)
                print(f"{n:>7} events/tape  {case:<9}  diff {r['diff_s']:.3f} s wall {r['diff_cpu']:.3f} s cpu  "
                      f"read {r['read_s']:.3f} s wall {r['read_cpu']:.3f} s cpu  "
                      f"peak RSS {r['rss_read_mb']:.0f} MB after read, {r['rss_mb']:.0f} MB after diff  "
                      f"{r['verdict']} ({r['drifts']} drifts)  cpu per event x{per_event / base[case]:.2f}",
                      flush=True)


if __name__ == "__main__":
    main()
