"""`mcptape ci` against a server that now lists many tools: the time each added tool costs, 1 000 vs 10 000.

    python bench/bench_surface.py [--sizes 1000,10000] [--rounds 3]

The golden lists one tool; the fresh run lists N (all of them added: the surface review, the
homoglyph check of every new name against the others, the headline, the tool-surface table).
Each round times `mcptape ci` whole (spawn to exit) at every size and at N = 1 (no drift: the
fixed cost), in alternating order. The figure is the time one added tool costs, (t(N) - t(1)) / N,
at the largest size over the smallest: 1.0 is linear; a check that compares every new name with
every other makes it about as large as the sizes' ratio (issue 40: 10 000 tools took 47 s of CPU,
most of it in text_rules.name_problem's pairwise skeletons).
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

from bench._common import mcptape_env, median  # noqa: E402

SERVER = """\
import json, sys
from pathlib import Path
n = int(Path(__file__).with_name("size").read_text())
tools = [{"name": f"t{i}", "description": f"Tool number {i}.", "inputSchema": {"type": "object"}} for i in range(n)]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "many", "version": "1"}}
    else:
        result = {"tools": tools} if msg["method"] == "tools/list" else {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
    sys.stdout.flush()
"""

CONFIG = """\
version: 1
golden_dir: tapes
servers:
  many:
    command: [{python}, server.py]
sessions:
  - name: many
    server: many
    steps: [list_tools]
"""


def ci(directory: Path, size: int, *args: str) -> float:
    (directory / "size").write_text(str(size), encoding="utf-8")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mcptape", "ci", *args], cwd=directory, env=mcptape_env(),
                          capture_output=True, timeout=900)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 2):  # 2: the tools added are structural drift
        raise RuntimeError(f"mcptape ci at {size} tools exited {proc.returncode}: {proc.stderr[-2000:]!r}")
    return elapsed


def run(sizes: tuple[int, ...] = (1000, 10_000), rounds: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-surface-") as tmp:
        work = Path(tmp)
        (work / "server.py").write_text(SERVER, encoding="utf-8")
        (work / "mcptape.yml").write_text(CONFIG.format(python=json.dumps(sys.executable)), encoding="utf-8")
        ci(work, 1, "--update-golden")
        times: dict[int, list[float]] = {n: [] for n in (1, *sizes)}
        for r in range(rounds):
            order = (1, *sizes) if r % 2 == 0 else (*reversed(sizes), 1)
            for n in order:
                times[n].append(ci(work, n))
    fixed = median(times[1])
    per_tool = {n: (median(times[n]) - fixed) / n for n in sizes}
    small, large = min(sizes), max(sizes)
    return {
        "rounds": rounds,
        "fixed_s": round(fixed, 3),
        "wall_s": {str(n): round(median(times[n]), 3) for n in sizes},
        "per_tool_ms": {str(n): round(per_tool[n] * 1000, 4) for n in sizes},
        "per_tool_growth": round(per_tool[large] / per_tool[small], 2) if per_tool[small] > 0 else None,
        "size_ratio": large / small,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(run(tuple(int(s) for s in args.sizes.split(",")), args.rounds), indent=2))


if __name__ == "__main__":
    main()
