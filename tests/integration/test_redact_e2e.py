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
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from mcptape.jsonrpc import dumps
from mcptape.redact import shapes
from mcptape.redact.own_text import own_text
from mcptape.redact.redactor import Redactor
from mcptape.tape.atomic import write_atomic
from mcptape.tape.events import EventBuilder, stderr_event
from mcptape.tape.format import make_header
from mcptape.tape.reader import read_tape
from mcptape.transports.stdio import StdioTransport, minimal_env
from tests import leak_matrix
from tests.conftest import FIXTURES, ROOT, mcptape_command
from tests.in_process import run_mcptape
from tests.redact_corpus import KNOWN_SOURCE, USER_PATTERN, Planted, corpus, leaks, rule_corpus

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
        # Fault injection in a real rec process: its scrubber loses one detector (and the rule set),
        # its checker does not.
        snippet = (
            "import sys\n"
            "from mcptape import cli\n"
            "from mcptape.redact import detectors, redactor, shapes\n"
            "init = redactor.Redactor.__init__\n"
            "def blind(self, *a, **k):\n"
            "    init(self, *a, **k)\n"
            f"    self._scrubber = detectors.Engine(self._config, [s for s in shapes.SHAPES if s.kind != {fault!r}], rules=False)\n"
            "redactor.Redactor.__init__ = blind\n"
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


def test_rec_scrubs_the_rule_sets_shapes_and_fails_closed_on_one_only_the_verifier_knows(tmp_path: Path) -> None:
    """Provider shapes only betterleaks' rules know: scrubbed by rec; and a rec whose scrubber has
    no rule set (its checker has) exits 4 with the value nowhere (the event is withheld)."""
    planted = rule_corpus(SEED)
    _, known = rec_corpus()
    (tmp_path / "ok").mkdir()
    (tmp_path / "blind").mkdir()
    code, stderr, tape_path = run_rec(tmp_path / "ok", planted, known)
    assert code == 0, f"seed {SEED}: rec exited {code}: {stderr[-2000:]}"
    assert not leaks(all_written(tmp_path / "ok") + stderr, planted), f"seed {SEED}: leaked"
    assert f"<REDACTED:{planted[0].kind}#" in tape_path.read_text(encoding="utf-8")
    one = planted[:1]
    code, stderr, tape_path = run_rec(tmp_path / "blind", one, known, fault="no-such-kind")
    assert code == 4, f"rec exited {code}: {stderr[-2000:]}"
    assert "survived redaction" in stderr and one[0].kind in stderr
    assert not leaks(all_written(tmp_path / "blind") + stderr, one)
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



# --- what is a secret: configuration stays, secrets go, through real mcptape processes -------------

CALC = [sys.executable, str(FIXTURES / "servers" / "calc_server.py")]
PLAIN_ENV = {  # the plain values: each once made every run exit 4 or rewrote the golden
    "MODE": "result",
    "LOG_LEVEL": "verbose",
    "APP_ENV": "production",
    "REGION": "eu-west-1",
    "AUTHOR_NAME": "Alice Smith",
    "DATA": "tools/list",
    "FORMAT": "session",
    "OUTPUT": "golden",
}


def ci_config(directory: Path, servers: str, sessions: str, extra: str = "") -> Path:
    path = directory / "mcptape.yml"
    path.write_text(f"version: 1\nservers:\n{servers}sessions:\n{sessions}{extra}", encoding="utf-8")
    return path


def run_ci(config: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    run_env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "VARIANT", "MSG")}
    run_env.update(PYTHONPATH=str(ROOT), **env)
    return run_mcptape(["ci", "-c", str(config), *args], env=run_env, cwd=config.parent, timeout=WAIT)


def calc_server_block(env: dict[str, str]) -> str:
    lines = "".join(f"      {k}: {json.dumps(v)}\n" for k, v in env.items())
    return (
        f"  calc:\n    command: {json.dumps(CALC)}\n    env:\n"
        '      MCPTAPE_FIXTURE_VARIANT: "${VARIANT:-identical}"\n' + lines
    )


def test_ci_plain_env_values_are_configuration_not_secrets(tmp_path: Path) -> None:
    session = "  - name: production-smoke\n    server: calc\n    steps:\n      - list_tools\n      - call: add\n        arguments: {a: 2, b: 3}\n"
    config = ci_config(tmp_path, calc_server_block(PLAIN_ENV), session)
    proc = run_ci(config, "--update-golden")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    golden = (tmp_path / "tapes" / "production-smoke.tape.jsonl").read_text(encoding="utf-8")
    assert golden.count('"result"') >= 2 and '"method":"tools/list"' in golden and "REDACTED" not in golden
    assert '"name":"production-smoke"' in golden
    proc = run_ci(config, "--json=r.json", "--junit=r.xml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Positive control, same config: a removed tool is structural drift (exit 2), as it should be,
    # not output drift (1) because a "tools/list" value rewrote the method name.
    proc = run_ci(config, "--json=r.json", "--junit=r.xml", VARIANT="removed_tool")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "tools/list" in proc.stdout and "removed" in proc.stdout


def _echo_config(tmp_path: Path, token: str) -> Path:
    servers = (
        f"  echo:\n    command: {json.dumps(SERVER)}\n    env:\n"
        '      CALC_TOKEN: "${CALC_TOKEN}"\n      APP_ENV: production\n'
    )
    session = (
        "  - name: echo-secrets\n    server: echo\n    steps:\n"
        "      - call: echo_env\n        arguments: {name: CALC_TOKEN}\n"
        "      - call: echo_result\n"
        '        arguments: {text: "db postgres://app:Hunter2pw9x@db.internal:5432/x token ${CALC_TOKEN} ${MSG}"}\n'
    )
    return ci_config(tmp_path, servers, session)


def test_ci_a_real_secret_reaches_no_golden_report_or_terminal(tmp_path: Path) -> None:
    token = "kQ7" + os.urandom(12).hex() + "Zr"
    config = _echo_config(tmp_path, token)
    proc = run_ci(config, "--update-golden", CALC_TOKEN=token, MSG="v1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = [proc.stdout, proc.stderr]
    # The gate run: output drift (the message changed), every report written, no exit 4.
    proc = run_ci(config, "--json=r.json", "--junit=r.xml", "--summary=s.md", "--out-dir", "fresh",
                  CALC_TOKEN=token, MSG="v2")  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    config_text = config.read_text(encoding="utf-8")  # holds the literal URL password: the user wrote it
    outputs += [proc.stdout, proc.stderr, all_written(tmp_path).replace(config_text, "")]
    planted = [Planted("env.CALC_TOKEN", token, (token,)), Planted("url-password", "", ("Hunter2pw9x",))]
    assert not leaks("\n".join(outputs), planted)
    golden = (tmp_path / "tapes" / "echo-secrets.tape.jsonl").read_text(encoding="utf-8")
    assert "<REDACTED:env.CALC_TOKEN>" in golden and "<REDACTED:url-password>" in golden
    assert "production" in golden or "APP_ENV" not in golden  # plain env is not scrubbed from anything
    # --junit with a redacted URL password: the XML holds the escaped placeholder (once exit 4).
    xml = (tmp_path / "r.xml").read_text(encoding="utf-8")
    assert "postgres://app:&lt;REDACTED:url-password&gt;@db.internal" in xml
    # The markdown a PR gets, from the same report: placeholders intact, verification passes.
    from mcptape.config.load import load_config
    from mcptape.publish.outlet import Outlet
    from mcptape.report.markdown import render_comment, render_summary
    from mcptape.verdict.model import RunReport

    report = RunReport.from_dict(json.loads((tmp_path / "r.json").read_text(encoding="utf-8")))
    outlet = Outlet(Redactor(known=load_config(config, env={"CALC_TOKEN": token, "MSG": "v2"}).secrets))
    for doc in (outlet.document(render_summary(report), "summary"), outlet.document(render_comment(report, "mcptape.yml"), "comment")):
        assert "REDACTED:url-password" in doc and not leaks(doc, planted)
    # No drift: exit 0, and the JUnit report is written.
    proc = run_ci(config, "--junit=r0.xml", CALC_TOKEN=token, MSG="v1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'failures="0"' in (tmp_path / "r0.xml").read_text(encoding="utf-8")


def test_ci_refuses_a_secret_that_is_mcptape_own_text_with_exit_3(tmp_path: Path) -> None:
    env = {**PLAIN_ENV, "API_TOKEN": "result"}
    session = "  - name: smoke\n    server: calc\n    steps: [list_tools]\n"
    config = ci_config(tmp_path, calc_server_block(env), session)
    line = next(i for i, text in enumerate(config.read_text(encoding="utf-8").splitlines(), 1) if "API_TOKEN" in text)
    for args in ((), ("--update-golden",)):
        proc = run_ci(config, *args)
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert f"{config}:{line}: servers.calc.env.API_TOKEN: env.API_TOKEN is a secret" in proc.stderr
        assert "redact.allow" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "tapes").exists()
    # The fix it names: allowed, the value is configuration and the run passes.
    config.write_text(config.read_text(encoding="utf-8") + "redact:\n  allow: [result]\n", encoding="utf-8")
    assert run_ci(config, "--update-golden").returncode == 0


def test_rec_keeps_plain_arguments_and_environment_and_scrubs_secrets(tmp_path: Path) -> None:
    token = "kQ7" + os.urandom(12).hex() + "Zr"
    flagged = "t0k-" + os.urandom(6).hex()
    tape = tmp_path / "plain.tape.jsonl"
    server = [*SERVER, "--author", "Alice", "--auth-mode", "oauth", "--token", flagged]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUTHOR_NAME": "Alice Smith", "GIT_AUTHOR_EMAIL": "alice@example.com",
           "SERVICE_API_TOKEN": token, "LEGACY_TOKEN": "result"}  # fmt: skip
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
         "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ] + [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo_env", "arguments": {"name": name}}}
        for i, name in enumerate(("AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "SERVICE_API_TOKEN"), start=2)
    ]  # fmt: skip
    stdin = b"".join(dumps(m).encode() + b"\n" for m in lines)
    proc = subprocess.run(mcptape_command("rec", "--out", str(tape), "--", *server), input=stdin,
                          capture_output=True, cwd=tmp_path, env=env, timeout=WAIT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    recorded = read_tape(tape)
    command = recorded.header["server"]["command"]
    assert command[-6:] == ["--author", "Alice", "--auth-mode", "oauth", "--token", "<redacted>"]
    answers = [e["msg"]["result"]["content"][0]["text"] for e in recorded.events
               if e.get("kind") == "response" and e["msg"]["id"] >= 2]  # fmt: skip
    assert answers == ["Alice Smith", "alice@example.com", "<REDACTED:env.SERVICE_API_TOKEN>"]
    written = tape.read_text(encoding="utf-8") + proc.stderr.decode(errors="replace")
    assert token not in written and flagged not in written
    # A secret-named variable whose value is a protocol word: said on stderr, never scrubbed
    # (every "result" key of the tape would go).
    assert "mcptape rec: env.LEGACY_TOKEN: its value is also a word of MCP" in proc.stderr.decode()
    assert all("result" in e["msg"] for e in recorded.events if e.get("kind") == "response")


_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_/\-$]*")


def _tape_strings(obj: Any, key: str | None = None) -> Iterator[str]:
    """The server's (and the config's) strings in a tape: values, not keys, methods or event kinds."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _tape_strings(v, k)
    elif isinstance(obj, list):
        for v in obj:
            yield from _tape_strings(v, key)
    elif isinstance(obj, str) and key not in ("method", "kind", "dir", "mcptape", "transport"):
        yield obj


def test_the_words_mcptape_writes_are_its_own_text(tmp_path: Path) -> None:
    """Every word a ci run writes that did not come from the server or the config (report words,
    JSON keys, method names, tags) is mcptape's own text: a secret equal to one is refused at load,
    instead of being scrubbed out of every tape or failing every report with exit 4."""
    sessions = (
        "  - name: s1\n    server: calc\n    steps:\n      - list_tools\n      - call: add\n        arguments: {a: 2, b: 3}\n"
        "      - call: divide\n        arguments: {a: 1, b: 0}\n      - list_resources\n      - list_prompts\n"
        "  - name: s2\n    server: calc\n    steps: [list_tools, ping]\n"
    )
    config = ci_config(tmp_path, calc_server_block({}), sessions)
    written = [run_ci(config, "--update-golden").stdout]
    variants = ("identical", "removed_tool", "added_tool", "changed_result", "result_to_error", "error_code",
                "error_message", "description", "optional_param", "required_param", "notes")  # fmt: skip
    for variant in variants:
        out = tmp_path / variant
        proc = run_ci(config, f"--json={out}.json", f"--junit={out}.xml", f"--summary={out}.md",
                      "--out-dir", str(out), VARIANT=variant)  # fmt: skip
        assert proc.returncode in (0, 1, 2), proc.stdout + proc.stderr
        written.append(proc.stdout + proc.stderr)
    data = {"s1", "s2", "calc", "tapes", *tmp_path.parts, *variants}  # the config's names and our paths
    tapes = [*tmp_path.glob("tapes/*.jsonl"), *tmp_path.glob("*/*.tape.jsonl")]
    for tape in tapes:
        for line in tape.read_text(encoding="utf-8").splitlines():
            for text in _tape_strings(json.loads(line)):
                data |= {w.lower() for w in _WORD.findall(text)}
    written += [p.read_text(encoding="utf-8") for p in [*tmp_path.glob("*.*"), *tapes] if p.name != "mcptape.yml"]
    not_own = set()
    for word in _WORD.findall("\n".join(written)):
        # A method name is one word; a path's parts come from the config (golden_dir, session names).
        for part in [word] if own_text(word) else word.split("/"):
            part = part.strip("-")
            if len(part) >= shapes.KNOWN_MIN_LEN and part.lower() not in data and not own_text(part):
                not_own.add(part)
    assert not not_own, f"words mcptape writes that redact.own_text does not know: {sorted(not_own)}"
    # Positive control: a word mcptape never writes is not own text, so real secrets are not refused.
    assert not own_text("Hunter2pw9x") and "Hunter2pw9x".lower() not in data


def _corpus_forms(carrier: str) -> list[str]:
    return [carrier, "b64 " + base64.b64encode(carrier.encode()).decode(),
            "https://example.com/cb?state=" + quote(carrier, safe=""), json.dumps({"nested": carrier})]


def test_ci_the_rule_corpus_in_every_form_and_channel_survives_nowhere(tmp_path: Path) -> None:
    """The rule set's shapes, raw/base64/percent/JSON-escaped, in result text and structuredContent,
    error message and data, notifications, server stderr and the request arguments the config
    sends: through `ci --update-golden` then `ci` (every report), 0 survive anywhere."""
    planted = rule_corpus(SEED)
    steps = "".join(
        f"      - call: {tool}\n        arguments: {{text: {json.dumps(form)}}}\n"
        for p in planted for form in _corpus_forms(p.carrier)
        for tool in ("echo_result", "echo_error", "echo_stderr", "echo_notify")
    )  # fmt: skip
    config = ci_config(tmp_path, f"  echo:\n    command: {json.dumps(SERVER)}\n",
                       f"  - name: corpus\n    server: echo\n    steps:\n{steps}")
    proc = run_ci(config, "--update-golden")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    outputs = [proc.stdout, proc.stderr]
    proc = run_ci(config, "--json=r.json", "--junit=r.xml", "--summary=s.md", "--out-dir", "fresh")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    config_text = config.read_text(encoding="utf-8")  # the user wrote the arguments: not an output
    outputs += [proc.stdout, proc.stderr, all_written(tmp_path).replace(config_text, "")]
    survived = leaks("\n".join(outputs), planted)
    assert survived == [], f"seed {SEED}: {len(survived)} of {len(planted)} shapes survived: {survived}"
    golden = (tmp_path / "tapes" / "corpus.tape.jsonl").read_text(encoding="utf-8")
    assert all(f"<REDACTED:{p.kind}#" in golden for p in planted)


def test_ci_the_false_positive_corpus_is_not_redacted(tmp_path: Path) -> None:
    from tests.redact_corpus import false_positive_corpus

    texts = false_positive_corpus(SEED)
    steps = "".join(f"      - call: echo_result\n        arguments: {{text: {json.dumps(t)}}}\n" for t in texts)
    env = "".join(f"      {k}: {json.dumps(v)}\n" for k, v in PLAIN_ENV.items())
    config = ci_config(tmp_path, f"  echo:\n    command: {json.dumps(SERVER)}\n    env:\n{env}",
                       f"  - name: plain\n    server: echo\n    steps:\n{steps}")
    proc = run_ci(config, "--update-golden")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    golden = (tmp_path / "tapes" / "plain.tape.jsonl").read_text(encoding="utf-8")
    assert "REDACTED" not in golden, [line[:200] for line in golden.splitlines() if "REDACTED" in line]
    echoed = [c["text"] for e in read_tape(tmp_path / "tapes" / "plain.tape.jsonl").events
              if e.get("kind") == "response" for c in e["msg"].get("result", {}).get("content", [])]
    # Each text is there, as it was (but for ci's default normalization: the UUIDs read <UUID>).
    assert len(echoed) == len(texts) and len([e for e in echoed if e in texts]) == len(texts) - 1
    proc = run_ci(config)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_rec_listen_the_rule_corpus_survives_in_no_tape_or_message(tmp_path: Path) -> None:
    """Over HTTP: `rec --listen` in front of the HTTP calc server, which echoes each shape (in every
    form) back; the client gets it, the tape and rec's stderr do not."""
    from mcptape.transports.http import StreamableHttpTransport
    from tests.integration.http_helpers import (
        LOOPBACK,
        Rpc,
        background,
        calc_http_cmd,
        free_port,
        mcptape_listening,
    )

    planted = rule_corpus(SEED)
    tape = tmp_path / "http.tape.jsonl"
    port = free_port()
    with background(calc_http_cmd(port), port, timeout=60), mcptape_listening(
        "rec", "--upstream", f"http://{LOOPBACK}:{port}/mcp", "--out", str(tape)
    ) as rec:
        transport = StreamableHttpTransport(rec.url, {})
        try:
            rpc = Rpc(transport)
            rpc.initialize()
            for p in planted:
                for form in _corpus_forms(p.carrier):
                    rpc.request("tools/call", {"name": "echo", "arguments": {"text": form}})
        finally:
            transport.close()
    assert rec.returncode == 0, rec.stderr
    survived = leaks(tape.read_text(encoding="utf-8") + rec.stderr, planted)
    assert survived == [], f"seed {SEED}: {len(survived)} of {len(planted)} survived: {survived}"
    assert all(f"<REDACTED:{p.kind}#" in tape.read_text(encoding="utf-8") for p in planted)


# --- issue 38: every family in every channel, through every door; one server process per door ------


@pytest.mark.parametrize("door", sorted(leak_matrix.DOORS))
def test_every_family_in_every_channel_leaks_through_no_door(tmp_path: Path, door: str) -> None:
    """tests/leak_matrix.py's families (webhooks, any Authorization scheme, a token as a URL's
    user, .netrc, .env assignments, a key's body split a line per message, one-time codes and
    answers, ...), each planted in every channel of one server, through `door`: none survives in
    anything mcptape wrote, and the run did not fail closed instead (every planted value was
    carried through and scrubbed, not withheld)."""
    planted = leak_matrix.plants(SEED, door)
    run = leak_matrix.DOORS[door](ROOT, tmp_path, planted)
    leaked = run.leaked(planted)
    assert not leaked, f"seed {SEED}: {len(leaked)} leaked: {sorted({(p.family, p.channel) for p in leaked})}"
    assert run.codes and all(code == 0 for code in run.codes), (run.codes, [w[-2000:] for w in run.written[:2]])
    written = "\n".join(run.written)
    assert "event_withheld" not in written and "Traceback" not in written
    # Positive control: the values went through and were scrubbed in place.
    assert written.count("<REDACTED:") >= len(planted), written.count("<REDACTED:")


def test_plain_values_stay_through_ci_in_a_root_container(tmp_path: Path) -> None:
    """The false-positive side, HOME=/root: MCP-App HTML (minified JavaScript from a published
    server), ids, digests, placeholders a reader recognises (YOUR_API_KEY, ghp_xxxx..., user:password),
    a tokenizer under `token`: no placeholder in the golden but the one real URL password, and
    `mysql://root:...` is not read as the home directory."""
    assert leak_matrix.run_false_positives(ROOT, tmp_path, SEED) == {}


def _view_only_config(directory: Path) -> Path:
    # A user pattern only the review view's text can match (`path = "value"`): the tapes never hold
    # `= "`, so the fresh tape and the golden pass their checks and only the last check, the view's,
    # finds it. Once that ended as an internal error (exit 3) with the fresh tape left on disk.
    return ci_config(directory, f"  echo:\n    command: {json.dumps(SERVER)}\n",
                     "  - name: viewonly\n    server: echo\n    steps:\n      - call: echo_result\n"
                     '        arguments: {text: "ZZ-482913"}\n',
                     "redact:\n  patterns: ['= \"ZZ-[0-9]{6}\"']\n")


@pytest.mark.parametrize("debug", ["0", "1"])
def test_a_secret_only_the_last_check_finds_is_exit_4_with_nothing_written(tmp_path: Path, debug: str) -> None:
    config = _view_only_config(tmp_path)
    proc = run_ci(config, "--update-golden", "--out-dir", "fresh", MCPTAPE_DEBUG=debug)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "secret" in proc.stdout and "internal error" not in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["mcptape.yml"]
    assert "ZZ-482913" not in proc.stdout + proc.stderr
    # Positive control: without the pattern the same run writes the golden, its view and the fresh tape.
    config.write_text(config.read_text(encoding="utf-8").split("redact:")[0], encoding="utf-8")
    proc = run_ci(config, "--update-golden", "--out-dir", "fresh", MCPTAPE_DEBUG=debug)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {p.name for p in tmp_path.rglob("*.tape.*")} >= {"viewonly.tape.jsonl", "viewonly.tape.view.txt"}
