"""Redaction end to end: a real server leaks planted secrets through every channel; none reaches a file.

The fixture server (fixtures/servers/secret_echo_server.py) echoes what it is given into results,
error.data, notifications, stderr, non-JSON stdout lines and \\u-escaped JSON. Two drivers:

- `mcptape rec` as a user runs it (a real mcptape process between a raw JSON-lines client and the
  server). The wire to the client is the server's own bytes (rec is transparent), so what must
  be clean is everything mcptape *writes*: the output directory and mcptape's stderr.
- The scripted pipeline writers use for golden tapes: StdioTransport + EventBuilder + Redactor,
  written with redact_tape + write_atomic.

And fail closed for real: a rec whose scrubber is made blind to one kind exits 4 and the tape
holds no trace of the value.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mcptape.jsonrpc import dumps
from mcptape.redact import Redactor
from mcptape.tape import EventBuilder, make_header, read_tape, stderr_event
from mcptape.tape.format import write_atomic
from mcptape.transports.stdio import StdioTransport, minimal_env
from tests.conftest import FIXTURES, ROOT, mcptape_command
from tests.redact_corpus import KNOWN_SOURCE, USER_PATTERN, Planted, corpus, leaks

SERVER = [sys.executable, str(FIXTURES / "servers" / "secret_echo_server.py")]
TOOLS = ("echo_result", "echo_error", "echo_stderr", "echo_notify", "echo_garbage", "echo_escaped")
WAIT = 60
SEED = int(os.environ.get("REDACT_SEED") or int.from_bytes(os.urandom(4), "big"))


def u_escaped(text: str) -> str:
    return '"' + "".join(f"\\u{ord(c):04x}" for c in text) + '"'


def session_lines(planted: list[Planted]) -> list[bytes]:
    """The client's side: handshake, then every carrier through every tool, plus client-side encodings."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
         "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo_env", "arguments": {"name": "CALC_TOKEN"}}},
    ]
    out = [dumps(m).encode() for m in lines]
    n = 10
    for p in planted:
        carriers = [
            p.carrier,
            "b64 " + base64.b64encode(p.carrier.encode()).decode(),
            "https://example.com/cb?state=" + quote(p.carrier, safe=""),
        ]
        for tool in TOOLS:
            for c in carriers:
                n += 1
                out.append(dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                  "params": {"name": tool, "arguments": {"text": c}}}).encode())
        n += 1  # the client itself writes the carrier \u-escaped (raw differs from msg)
        params = '{"name":"echo_result","arguments":{"text":' + u_escaped(p.carrier) + "}}"
        out.append(f'{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{params}}}'.encode())
    return out


def run_rec(tmp_path: Path, planted: list[Planted], known: str, *, fault: str | None = None) -> tuple[int, str, Path]:
    tape = tmp_path / "out" / "leaky.tape.jsonl"
    env = {**os.environ, "CALC_TOKEN": known, "PYTHONPATH": str(ROOT)}
    if fault is None:
        cmd = mcptape_command("rec", "--out", str(tape), "--", *SERVER)
    else:
        # Fault injection in a real rec process: its scrubber loses one detector, its checker does not.
        snippet = (
            "import sys\n"
            "from mcptape import redact, cli\n"
            "init = redact.Redactor.__init__\n"
            "def blind(self, *a, **k):\n"
            "    init(self, *a, **k)\n"
            f"    self._scrubber = redact._Engine(self._config, [s for s in redact.SHAPES if s.kind != {fault!r}])\n"
            "redact.Redactor.__init__ = blind\n"
            "sys.exit(cli.main(sys.argv[1:]))\n"
        )
        cmd = [sys.executable, "-c", snippet, "rec", "--out", str(tape), "--", *SERVER]
    stdin = b"".join(line + b"\n" for line in session_lines(planted))
    proc = subprocess.run(cmd, input=stdin, capture_output=True, cwd=tmp_path, env=env, timeout=WAIT)
    # stdout is the relayed wire (the server's own bytes), so it is not an output mcptape authors.
    assert proc.stdout.count(b'"jsonrpc"') >= len(session_lines(planted)) - 1
    return proc.returncode, proc.stderr.decode("utf-8", "replace"), tape


def all_written(tmp_path: Path) -> str:
    """Every byte under tmp_path except the relayed wire: tapes, temp files, anything."""
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in sorted(tmp_path.rglob("*")) if p.is_file())


def rec_corpus() -> tuple[list[Planted], str]:
    # Without a config rec knows no redact.patterns: the user-pattern shape is ci's to test.
    planted = [p for p in corpus(SEED) if p.kind != "pattern"]
    return planted, next(p.values[0] for p in planted if p.kind == KNOWN_SOURCE)


def test_rec_writes_no_planted_secret_anywhere(tmp_path: Path) -> None:
    planted, known = rec_corpus()
    code, stderr, tape_path = run_rec(tmp_path, planted, known)
    assert code == 0, f"seed {SEED}: rec exited {code}: {stderr[-2000:]}"
    assert not leaks(all_written(tmp_path), planted), f"seed {SEED}: leaked into files"
    own = "\n".join(line for line in stderr.splitlines() if line.startswith("mcptape"))
    assert own and not leaks(own, planted), f"seed {SEED}: leaked into mcptape's own stderr messages"
    tape = read_tape(tape_path)
    assert tape.complete
    kinds = [e["kind"] for e in tape.events]
    assert "stderr" in kinds and "garbage" in kinds and "error" in kinds
    text = tape_path.read_text(encoding="utf-8")
    assert "event_withheld" not in text  # scrubbed, not withheld: verification found nothing
    assert "<REDACTED:env.CALC_TOKEN>" in text and "<REDACTED:github-token#" in text


def test_rec_stderr_relay_holds_no_planted_secret(tmp_path: Path) -> None:
    """rec's stderr is often a public CI log: the server's stderr is shown there, but scrubbed."""
    planted, known = rec_corpus()
    code, stderr, _ = run_rec(tmp_path, planted, known)
    assert code == 0
    assert not leaks(stderr, planted), f"seed {SEED}: the server's stderr, relayed by rec, holds secrets"
    # ... and it was shown, not swallowed: the echoed carriers are there, with placeholders.
    relayed = [line for line in stderr.splitlines() if not line.startswith("mcptape")]
    assert any("<REDACTED:github-token#" in line for line in relayed), f"seed {SEED}: stderr not relayed"
    assert any("<REDACTED:env.CALC_TOKEN>" in line for line in relayed)


def test_rec_with_a_blind_scrubber_fails_closed_with_exit_4(tmp_path: Path) -> None:
    planted, known = rec_corpus()
    gh = [p for p in planted if p.kind == "github-token"][:1]
    code, stderr, tape_path = run_rec(tmp_path, gh, known, fault="github-token")
    assert code == 4, f"rec exited {code}: {stderr[-2000:]}"
    assert "survived redaction" in stderr and "github-token" in stderr
    own = "\n".join(line for line in stderr.splitlines() if line.startswith("mcptape"))
    assert not leaks(all_written(tmp_path), gh) and not leaks(own, gh)
    assert "event_withheld" in tape_path.read_text(encoding="utf-8")


def test_scripted_pipeline_writes_a_clean_golden_tape(tmp_path: Path) -> None:
    planted = corpus(SEED)
    known = next(p.values[0] for p in planted if p.kind == KNOWN_SOURCE)
    redactor = Redactor(known={KNOWN_SOURCE: known}, patterns=[USER_PATTERN])
    transport = StdioTransport(SERVER, env=minimal_env({"CALC_TOKEN": known}), cwd=tmp_path)
    builder = EventBuilder()
    events: list[dict[str, Any]] = []
    try:
        for line in session_lines(planted):
            events.append(builder.line("c2s", line))
            transport.send(line)
            msg: dict[str, Any] = {}
            if b'"id"' not in line:
                continue
            while "id" not in msg or "method" in msg:  # read through notifications/garbage to the answer
                got = transport.receive(timeout=WAIT)
                assert got is not None, "server closed its output"
                events.append(builder.line("s2c", got))
                try:
                    msg = json.loads(got)
                except ValueError:
                    msg = {}
    finally:
        transport.close()
    events += [stderr_event(raw) for raw in transport.stderr_lines]
    header = make_header("leaky", server={"command": SERVER, "env": {"CALC_TOKEN": known}})
    out = tmp_path / "tapes" / "leaky.tape.jsonl"
    write_atomic(out, redactor.redact_tape(header, events, where=str(out)))
    written = all_written(tmp_path)
    assert not leaks(written, planted), f"seed {SEED}: leaked into the golden tape"
    summary = redactor.summary()
    assert not leaks(summary, planted) and "env.CALC_TOKEN" in summary and "pattern" in summary
    assert len(redactor.counts) >= 20
    assert read_tape(out).complete

