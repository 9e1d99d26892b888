"""Added latency of the HTTP recorder (`mcptape rec --listen`) per MCP round trip, vs going direct.

One upstream server (server-everything in streamableHttp mode if installed, else the MCPServer
fixture), one `mcptape rec --listen` in front of it, two client sessions (direct and through
the recorder) open side by side; rounds interleave one direct and one recorded `tools/call`
so load on the machine hits both alike. Reports medians. Loopback only.

    python bench/bench_http.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcptape.transports.http import StreamableHttpTransport  # noqa: E402
from tests.integration.http_helpers import (  # noqa: E402
    LOOPBACK,
    Rpc,
    background,
    calc_http_cmd,
    free_port,
    mcptape_listening,
)

EVERYTHING = ROOT / "fixtures/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def _upstream(port: int) -> tuple[list[str], dict[str, str], str, dict[str, Any]]:
    if EVERYTHING.exists():
        return (["node", str(EVERYTHING), "streamableHttp"], {"PORT": str(port)}, "server-everything",
                {"name": "echo", "arguments": {"message": "bench"}})
    return calc_http_cmd(port), {}, "http_calc_server (MCPServer)", {"name": "add", "arguments": {"a": 2, "b": 3}}


def bench(rounds: int = 300, warmup: int = 20) -> dict[str, Any]:
    port = free_port()
    cmd, env, label, call = _upstream(port)
    upstream = f"http://{LOOPBACK}:{port}/mcp"
    direct_ms: list[float] = []
    recorded_ms: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, background(cmd, port, env=env, timeout=60):
        tape = os.path.join(tmp, "bench.tape.jsonl")
        with mcptape_listening("rec", "--upstream", upstream, "--out", tape) as rec:
            direct = StreamableHttpTransport(upstream, {})
            proxied = StreamableHttpTransport(rec.url, {})
            try:
                clients = [Rpc(direct), Rpc(proxied)]
                for c in clients:
                    c.initialize()
                for i in range(warmup + rounds):
                    # Alternate which goes first so neither always runs on a warmer cache.
                    order = [(0, direct_ms), (1, recorded_ms)] if i % 2 == 0 else [(1, recorded_ms), (0, direct_ms)]
                    for which, sink in order:
                        t0 = time.perf_counter()
                        clients[which].request("tools/call", call, timeout=30)
                        if i >= warmup:
                            sink.append((time.perf_counter() - t0) * 1000)
            finally:
                direct.close()
                proxied.close()
        recorded_lines = len(Path(tape).read_text(encoding="utf-8").splitlines())
    d, r = statistics.median(direct_ms), statistics.median(recorded_ms)
    return {
        "upstream": label,
        "rounds": rounds,
        "direct_ms_median": round(d, 3),
        "recorded_ms_median": round(r, 3),
        "added_ms_median": round(r - d, 3),
        "ratio": round(r / d, 2),
        "tape_lines": recorded_lines,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    result = bench(parser.parse_args().rounds)
    print(json.dumps(result, indent=2))
