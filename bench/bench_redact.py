"""Redaction throughput on a generated tape: scrubbing, verification and rec's line writer, side by side.

    python bench/bench_redact.py [--mb 50] [--seed 1]

Builds ~N MB of realistic events (tool calls with prose and progress tokens, JSON documents,
base64 images, progress notifications, stderr lines; about 1% carrying a planted secret, raw or
base64-encoded), then times on the same events, in one run (CPU seconds; wall-clock alongside):

    known       known values, decoding on: rec's redactor, and ci's without redact.patterns
    patterns    the same plus a user pattern (ci with redact.patterns: every line is walked)
    no-decode   known values, decoding off: what decoding costs

For each: redact_event over the events, then verify over the finished tape bytes; for `known`
also Redactor.line_bytes, rec's writer path (scrub, serialize and verify one line at a time).
Prints and returns a dict of MB/s and ratios.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcptape.jsonrpc import dumps  # noqa: E402
from mcptape.redact.redactor import Redactor  # noqa: E402
from mcptape.tape.events import EventBuilder, stderr_event  # noqa: E402
from mcptape.tape.format import make_header, tape_bytes  # noqa: E402

WORDS = ["the", "server", "returned", "a", "list", "of", "items", "for", "the", "query", "and", "each", "item", "has", "a", "name", "a", "value", "and", "a", "short", "description", "of", "what", "it", "does", "when", "called", "with", "the", "given", "arguments", "over", "the", "wire"]
ALNUM = string.ascii_letters + string.digits


def _prose(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def _secret(rng: random.Random, known: str) -> str:
    kind = rng.randrange(4)
    tok = "gh" + "p_" + "".join(rng.choice(ALNUM) for _ in range(36))
    if kind == 0:
        return f"token {tok}"
    if kind == 1:
        return f"config {known}"
    if kind == 2:
        return "blob " + base64.b64encode(f"Authorization: Bearer {tok}".encode()).decode()
    return '{"api_key": "' + "".join(rng.choice(ALNUM) for _ in range(32)) + '"}'


def generate(mb: float, seed: int, known: str) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    b = EventBuilder()
    events: list[dict[str, Any]] = []
    size = 0
    target = int(mb * 1_000_000)
    i = 0
    image = base64.b64encode(rng.randbytes(48_000)).decode()
    while size < target:
        i += 1
        choice = rng.random()
        args: dict[str, Any] = {"query": _prose(rng, 8), "limit": rng.randint(1, 100)}
        if choice < 0.01:
            args["note"] = _secret(rng, known)
        req = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "search", "arguments": args,
               "_meta": {"progressToken": f"p-{i}"}}}
        if choice < 0.05:
            content = [{"type": "image", "mimeType": "image/png", "data": image}]
        elif choice < 0.4:
            doc = {"items": [{"id": f"{rng.getrandbits(128):032x}", "name": _prose(rng, 3), "score": rng.random(),
                              "updated": "2026-07-28T12:00:00Z"} for _ in range(rng.randint(5, 60))]}
            content = [{"type": "text", "text": json.dumps(doc)}]
        else:
            content = [{"type": "text", "text": _prose(rng, rng.randint(20, 1500))}]
        if 0.01 <= choice < 0.02:
            content.append({"type": "text", "text": _secret(rng, known)})
        res = {"jsonrpc": "2.0", "id": i, "result": {"content": content, "isError": False}}
        note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": f"p-{i}",
                "progress": 1, "total": 2}}
        for direction, msg in (("c2s", req), ("s2c", note), ("s2c", res)):
            line = dumps(msg)
            events.append(b.line(direction, line.encode()))
            size += len(line) + 40
        if choice > 0.97:
            events.append(stderr_event(f"[info] handled request {i} in {rng.randint(1, 900)} ms".encode()))
    return events


def _mb(events: list[dict[str, Any]]) -> float:
    return sum(len(dumps(e)) + 1 for e in events) / 1_000_000


CONFIGS = {
    "known": {"patterns": [], "decode": True},
    "patterns": {"patterns": ["ACME-[A-Z0-9]{24}"], "decode": True},
    "no_decode": {"patterns": [], "decode": False},
}


def run(mb: float = 50.0, seed: int = 1) -> dict[str, Any]:
    known = "Kq9-" + "".join(random.Random(seed + 7).choice(ALNUM) for _ in range(20))
    events = generate(mb, seed, known)
    size = _mb(events)
    results: dict[str, Any] = {"tape_mb": round(size, 1), "events": len(events)}

    def redactor(config: str) -> Redactor:
        return Redactor(known={"env.CALC_TOKEN": known}, home="/home/bench-user", user="bench-user", **CONFIGS[config])

    for config in CONFIGS:
        r = redactor(config)
        # CPU time is the figure to compare (this machine may be shared); wall time is shown too.
        w0, c0 = time.perf_counter(), time.process_time()
        out = [r.redact_event(e) for e in events]
        w1, c1 = time.perf_counter(), time.process_time()
        data = tape_bytes(make_header("bench"), out)
        w2, c2 = time.perf_counter(), time.process_time()
        r.verify(data, "bench tape")
        w3, c3 = time.perf_counter(), time.process_time()
        mb = len(data) / 1_000_000
        results[f"redact_{config}_mb_s"] = round(size / (c1 - c0), 1)
        results[f"verify_{config}_mb_s"] = round(mb / (c3 - c2), 1)
        results[f"redact_{config}_wall_mb_s"] = round(size / (w1 - w0), 1)
        results[f"verify_{config}_wall_mb_s"] = round(mb / (w3 - w2), 1)
        results[f"redacted_{config}"] = dict(sorted(r.counts.items()))
        results[f"placeholders_{config}"] = data.count(b"<REDACTED:")
    r = redactor("known")
    c0 = time.process_time()
    written = sum(len(r.line_bytes(e, "bench tape")) for e in events)
    results["line_bytes_mb_s"] = round(written / 1_000_000 / (time.process_time() - c0), 1)
    results["redact_decode_cost_ratio"] = round(results["redact_no_decode_mb_s"] / results["redact_known_mb_s"], 2)
    results["verify_decode_cost_ratio"] = round(results["verify_no_decode_mb_s"] / results["verify_known_mb_s"], 2)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(json.dumps(run(args.mb, args.seed), indent=2))


if __name__ == "__main__":
    main()
