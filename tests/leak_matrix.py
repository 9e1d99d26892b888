"""The leak matrix: issue 38's families, each planted in every channel, through every door that writes.

    python -m tests.leak_matrix [--checkout DIR] [--door ci|rec|listen|fallback ...] [--seed N]

For the mcptape of DIR (a checkout with its own .venv; default this one), every family of
tests/redact_corpus.py's `structure_corpus` is planted in every channel a server has
(CHANNELS: a tool's result, structuredContent and its JSON text, an error, a log notification,
stderr, content blocks and notifications one line each, a resource's text and blob, a tool's
description, a `${ENV}` request argument), each with characters of its own, so a leak names its
family and channel. One server process per door carries all of them:

    ci        `mcptape ci --update-golden`, then `mcptape ci` with every report (--json --junit
              --summary --sarif --out-dir): goldens, views, fresh tapes, reports, terminal
    rec       `mcptape rec` between a JSON-lines client and the server: the tape and stderr
    listen    `mcptape rec --listen` in front of the server over streamable HTTP (no stderr
              channel there; the SDK server's errors are tool errors)
    fallback  `mcptape play TAPE --fallback -- SERVER`: calls the tape lacks, answered live and
              appended to the tape

A value leaks when any form of it (tests/redact_corpus.py's `forms`: raw, percent, JSON, base64
at every alignment, a middle slice) is in anything mcptape wrote: files, stdout (but rec's and
play's wire), stderr. The false-positive side: texts that hold no secret (`false_positive_corpus`,
the MCP-App bundle excerpt, `mysql://root:PW@db` with HOME=/root) go through `ci --update-golden`
and every placeholder in the golden that is not the one expected is counted.

tests/integration/test_redact_e2e.py asserts an empty matrix for each door; run as a script, it
prints the matrix (the before/after figures of issue 38's closing note come from it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, ROOT
from tests.redact_corpus import Planted, false_positive_corpus, leaks, structure_corpus

ECHO = FIXTURES / "servers" / "secret_echo_server.py"
ECHO_HTTP = FIXTURES / "servers" / "secret_echo_http_server.py"
MCP_APP_EXCERPT = ROOT / "fixtures" / "redact" / "mcp-app-excerpt.html"
WAIT = 120
# channel -> the tool that echoes a call's text there (None: served from the plants, or from the environment)
CHANNELS: dict[str, str | None] = {
    "result": "echo_result",
    "json": "echo_json",
    "error": "echo_error",
    "notify": "echo_notify",
    "stderr": "echo_stderr",
    "lines": "echo_lines",
    "notify-lines": "echo_notify_lines",
    "resource-text": None,
    "resource-blob": None,
    "description": None,
    "env-argument": None,
}
# What a door cannot carry: no stderr over HTTP, no per-line notifications in the SDK twin, no
# environment a client-side recorder knows of (rec --listen forwards a client's values only).
NOT_A_CHANNEL = {"listen": {"stderr", "notify-lines", "env-argument"}}


@dataclass(frozen=True)
class Plant:
    family: str
    channel: str
    planted: Planted
    index: int  # its place among the door's plants: plant_N, plant://text/N, PLANT_N


def family_name(p: Planted) -> str:
    """A family's name in the matrix: its kind, and what tells it from another of that kind."""
    words = re.findall(r"[A-Za-z][A-Za-z_\-]{2,}", p.carrier)
    hint = {"authorization": next((w for w in words if w in ("ApiKey", "SSWS", "Negotiate")), ""),
            "teams-webhook": "legacy" if "outlook" in p.carrier else ""}.get(p.kind, "")
    return f"{p.kind}/{hint}" if hint else p.kind


def plants(seed: int, door: str) -> list[Plant]:
    """Every family in every channel of `door`, each value fresh (the seed, the channel's number)."""
    out: list[Plant] = []
    for number, channel in enumerate(CHANNELS):
        if channel in NOT_A_CHANNEL.get(door, set()):
            continue
        for planted in structure_corpus(seed * 100 + number):
            out.append(Plant(family_name(planted), channel, planted, len(out)))
    return out


@dataclass
class Run:
    """What one door wrote: every file's text and the streams mcptape authors, and how it ended."""

    door: str
    codes: list[int] = field(default_factory=list)
    written: list[str] = field(default_factory=list)

    def leaked(self, planted: Sequence[Plant]) -> list[Plant]:
        text = "\n".join(self.written)
        return [p for p in planted if leaks(text, [p.planted])]


def _mcptape(checkout: Path) -> list[str]:
    python = checkout / ".venv" / "bin" / "python"
    return [str(python if python.exists() else sys.executable), "-m", "mcptape"]


def _env(checkout: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "MCPTAPE_DEBUG")}
    return {**env, "PYTHONPATH": str(checkout), **extra}


def _files(directory: Path, skip: Sequence[Path] = ()) -> list[str]:
    return [p.read_bytes().decode("utf-8", "replace") for p in sorted(directory.rglob("*"))
            if p.is_file() and p not in skip]


def _plants_file(directory: Path, planted: Sequence[Plant]) -> tuple[Path, dict[str, str]]:
    served = directory / "plants.json"
    served.write_text(json.dumps([p.planted.carrier for p in planted]), encoding="utf-8")
    env = {"SECRET_ECHO_PLANTS": str(served)}
    env.update({f"PLANT_{p.index}": p.planted.carrier for p in planted if p.channel == "env-argument"})
    return served, env


def _requests(planted: Sequence[Plant]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(method, params) of a client that reaches every plant (rec, listen, fallback)."""
    yield "tools/list", {}
    yield "resources/list", {}
    for p in planted:
        tool = CHANNELS[p.channel]
        if tool is not None:
            yield "tools/call", {"name": tool, "arguments": {"text": p.planted.carrier}}
        elif p.channel.startswith("resource-"):
            yield "resources/read", {"uri": f"plant://{p.channel.removeprefix('resource-')}/{p.index}"}
        elif p.channel == "env-argument":
            yield "tools/call", {"name": "echo_env", "arguments": {"name": f"PLANT_{p.index}"}}


def _client_lines(planted: Sequence[Plant]) -> bytes:
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "leak-matrix", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]  # fmt: skip
    lines += [{"jsonrpc": "2.0", "id": i, "method": m, "params": params}
              for i, (m, params) in enumerate(_requests(planted), start=2)]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


# -- the doors --------------------------------------------------------------------------------------


def run_ci(checkout: Path, work: Path, planted: Sequence[Plant]) -> Run:
    served, env = _plants_file(work, planted)
    steps = ["      - list_tools\n", "      - list_resources\n"]
    for p in planted:
        tool = CHANNELS[p.channel]
        if tool is not None:
            steps.append(f"      - call: {tool}\n        arguments: {{text: {json.dumps(p.planted.carrier)}}}\n")
        elif p.channel.startswith("resource-"):
            steps.append(f"      - read_resource: plant://{p.channel.removeprefix('resource-')}/{p.index}\n")
        elif p.channel == "env-argument":
            steps.append(f"      - call: echo_result\n        arguments: {{text: \"${{PLANT_{p.index}}}\"}}\n")
    config = work / "mcptape.yml"
    config.write_text(
        f"version: 1\nservers:\n  echo:\n    command: {json.dumps([sys.executable, str(ECHO)])}\n"
        f"    env:\n      SECRET_ECHO_PLANTS: {json.dumps(str(served))}\n"
        f"sessions:\n  - name: matrix\n    server: echo\n    steps:\n{''.join(steps)}",
        encoding="utf-8",
    )
    run = Run("ci")
    for args in (["--update-golden"], ["--json=r.json", "--junit=r.xml", "--summary=s.md", "--sarif=r.sarif",
                                       "--out-dir", "fresh"]):
        done = subprocess.run([*_mcptape(checkout), "ci", "-c", str(config), *args], capture_output=True, text=True,
                              cwd=work, env=_env(checkout, env), timeout=WAIT)
        run.codes.append(done.returncode)
        run.written += [done.stdout, done.stderr]
    run.written += _files(work, skip=(config, served))  # the user wrote the config and the plants
    return run


def run_rec(checkout: Path, work: Path, planted: Sequence[Plant]) -> Run:
    served, env = _plants_file(work, planted)
    tape = work / "out" / "rec.tape.jsonl"
    done = subprocess.run([*_mcptape(checkout), "rec", "--out", str(tape), "--", sys.executable, str(ECHO)],
                          input=_client_lines(planted), capture_output=True, cwd=work, env=_env(checkout, env),
                          timeout=WAIT)  # fmt: skip
    run = Run("rec", [done.returncode], [done.stderr.decode("utf-8", "replace")])  # stdout: the server's own wire
    run.written += _files(work, skip=(served,))
    return run


def run_fallback(checkout: Path, work: Path, planted: Sequence[Plant]) -> Run:
    """play --fallback over a tape of the handshake alone: every call is answered live and appended."""
    served, env = _plants_file(work, planted)
    tape = work / "out" / "fallback.tape.jsonl"
    lines = _client_lines([]).split(b"\n", 2)
    handshake = lines[0] + b"\n" + lines[1] + b"\n"  # initialize and initialized: nothing else is on the tape
    subprocess.run([*_mcptape(checkout), "rec", "--out", str(tape), "--", sys.executable, str(ECHO)],
                   input=handshake, capture_output=True, cwd=work, env=_env(checkout, {}), timeout=WAIT, check=True)
    done = subprocess.run([*_mcptape(checkout), "play", str(tape), "--fallback", "--", sys.executable, str(ECHO)],
                          input=_client_lines(planted), capture_output=True, cwd=work, env=_env(checkout, env),
                          timeout=WAIT)  # fmt: skip
    run = Run("fallback", [done.returncode], [done.stderr.decode("utf-8", "replace")])
    run.written += _files(work, skip=(served,))
    return run


def run_listen(checkout: Path, work: Path, planted: Sequence[Plant]) -> Run:
    from mcptape.transports.http import StreamableHttpTransport
    from tests.integration.http_helpers import LOOPBACK, Rpc, background, free_port

    served, env = _plants_file(work, planted)
    tape = work / "out" / "listen.tape.jsonl"
    port = free_port()
    server = [sys.executable, str(ECHO_HTTP), "--port", str(port)]
    run = Run("listen")
    with background(server, port, env={**os.environ, **env}, timeout=60), _listening(
        checkout, work, "rec", "--upstream", f"http://{LOOPBACK}:{port}/mcp", "--out", str(tape)
    ) as (url, stderr, code):
        transport = StreamableHttpTransport(url, {})
        try:
            rpc = Rpc(transport)
            rpc.initialize()
            for method, params in _requests(planted):
                rpc.request(method, params)
        finally:
            transport.close()
    run.written.append(stderr())
    run.codes.append(code())
    run.written += _files(work, skip=(served,))
    return run


@contextmanager
def _listening(checkout: Path, work: Path, *args: str) -> Iterator[tuple[str, Any, Any]]:
    """`mcptape ARGS --listen 127.0.0.1:0` of `checkout`, stopped with SIGINT like a user: its URL,
    then (once stopped) its stderr and its exit code."""
    import signal
    import time

    proc = subprocess.Popen([*_mcptape(checkout), *args, "--listen", "127.0.0.1:0"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=work, env=_env(checkout, {}), start_new_session=True)
    assert proc.stderr is not None
    seen: list[bytes] = []
    url = ""
    deadline = time.monotonic() + 60
    while not url and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(rb"http://127\.0\.0\.1:(\d+)", line)  # the first URL it names is its own
        url = f"http://127.0.0.1:{int(found.group(1))}/mcp" if found else ""
    assert url, f"rec --listen did not say where it listens: {b''.join(seen)!r}"
    try:
        yield url, lambda: b"".join(seen).decode("utf-8", "replace"), lambda: proc.returncode
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        _, rest = proc.communicate(timeout=WAIT)
        seen.append(rest)


DOORS = {"ci": run_ci, "rec": run_rec, "listen": run_listen, "fallback": run_fallback}


# -- the false-positive side ------------------------------------------------------------------------

ROOT_URL_PASSWORD = "Wq7vRt2zLp9x"  # a real password in a root container's URL: redacted, and `root` is no home


def false_positive_texts(seed: int) -> list[str]:
    return [*false_positive_corpus(seed), f"connect mysql://root:{ROOT_URL_PASSWORD}@db.internal:3306/app as root"]


def run_false_positives(checkout: Path, work: Path, seed: int) -> dict[str, int]:
    """`ci --update-golden` with HOME=/root over the plain texts (a tool's result) and the MCP-App
    bundle excerpt (a resource's text): placeholders in the golden, by kind, but the URL's one password."""
    texts = false_positive_texts(seed)
    served = work / "plants.json"
    served.write_text(json.dumps([MCP_APP_EXCERPT.read_text(encoding="utf-8")]), encoding="utf-8")
    steps = "".join(f"      - call: echo_result\n        arguments: {{text: {json.dumps(t)}}}\n" for t in texts)
    config = work / "mcptape.yml"
    config.write_text(
        f"version: 1\nservers:\n  echo:\n    command: {json.dumps([sys.executable, str(ECHO)])}\n"
        f"    env:\n      SECRET_ECHO_PLANTS: {json.dumps(str(served))}\n"
        f"sessions:\n  - name: plain\n    server: echo\n    steps:\n      - list_tools\n"
        f"      - read_resource: plant://text/0\n{steps}",
        encoding="utf-8",
    )
    done = subprocess.run([*_mcptape(checkout), "ci", "-c", str(config), "--update-golden"], capture_output=True,
                          text=True, cwd=work, env=_env(checkout, {"HOME": "/root"}), timeout=WAIT)
    golden = work / "tapes" / "plain.tape.jsonl"
    counts: dict[str, int] = {}
    if done.returncode != 0 or not golden.exists():
        counts[f"(ci exited {done.returncode})"] = 1
        return counts
    text = golden.read_text(encoding="utf-8")
    expected = "<REDACTED:url-password>"
    for kind in re.findall(r"<(?:REDACTED:([^>#]+)[^>]*|(HOME|USER))>", text):
        name = kind[0] or kind[1]
        counts[name] = counts.get(name, 0) + 1
    counts["url-password"] = counts.get("url-password", 0) - text.count(expected)
    if f"mysql://root:{expected}@db.internal" not in text:
        counts["mysql://root:... not kept"] = 1
    return {k: v for k, v in counts.items() if v}


# -- as a script ------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="a checkout with its .venv (default: this one)")
    parser.add_argument("--door", action="append", choices=sorted(DOORS), help="default: all")
    parser.add_argument("--seed", type=int, default=38)
    args = parser.parse_args(argv)
    checkout = args.checkout.resolve()
    total = planted_total = 0
    for door in args.door or list(DOORS):
        with tempfile.TemporaryDirectory(prefix=f"leak-{door}-") as tmp:
            planted = plants(args.seed, door)
            run = DOORS[door](checkout, Path(tmp), planted)
            leaked = run.leaked(planted)
        total += len(leaked)
        planted_total += len(planted)
        print(f"\n{door}: exit {run.codes}; {len(leaked)} of {len(planted)} planted values leaked")
        families = sorted({p.family for p in planted})
        channels = [c for c in CHANNELS if c not in NOT_A_CHANNEL.get(door, set())]
        print("  " + "family".ljust(32) + " ".join(c[:8].rjust(8) for c in channels))
        for fam in families:
            marks = ["LEAK" if any(p.family == fam and p.channel == c for p in leaked) else "." for c in channels]
            if "LEAK" in marks:
                print("  " + fam.ljust(32) + " ".join(m.rjust(8) for m in marks))
    with tempfile.TemporaryDirectory(prefix="leak-fp-") as tmp:
        fp = run_false_positives(checkout, Path(tmp), args.seed)
    print(f"\nfalse positives (ci --update-golden, HOME=/root): {sum(fp.values())} {fp}")
    print(f"\ntotal: {total} of {planted_total} planted values leaked")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
