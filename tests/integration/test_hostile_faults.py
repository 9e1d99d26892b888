"""Hostile input and faults (issue 27), as users meet them: real mcptape processes over real pipes.

- A 1 MB anchored string used 200 times in call arguments: exit 3 with file:line, in bounded memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, mcptape_command, user_env
from tests.integration.test_hostile import _PEAK_RSS, WAIT, run, write_config


def peak_run(*args: str, cwd: Path) -> tuple[int, bytes, float]:
    """Exit code, stderr and peak RSS in MB of one `mcptape` process (os.wait4, see _PEAK_RSS)."""
    proc = subprocess.Popen([sys.executable, "-c", _PEAK_RSS, *mcptape_command(*args)], cwd=cwd,
                            env=user_env(PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        raise AssertionError(f"mcptape {args[0]} still running after {WAIT}s") from None
    return proc.returncode, stderr, int(stdout.decode().strip().splitlines()[-1]) / 1024


def test_a_large_anchored_string_repeated_by_aliases_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    aliases = "\n".join(f"          a{i}: *big" for i in range(200))
    sessions = (
        "  - name: big\n    server: calc\n    steps:\n      - call: echo\n        arguments:\n"
        f"          seed: &big \"{'x' * 1024 * 1024}\"\n{aliases}\n"
    )
    config = write_config(tmp_path, sessions)
    line = config.read_text(encoding="utf-8").splitlines().index("        arguments:") + 1
    for command in ("check", "ci"):
        code, stderr, peak_mb = peak_run(command, "-c", str(config), cwd=tmp_path)
        assert code == 3, stderr.decode(errors="replace")[-2000:]
        assert b"Traceback" not in stderr
        assert f"{config}:{line}: sessions[0].steps[0].arguments: YAML aliases (`*name`) here expand the file to more than 4 MB of repeated text".encode() in stderr, stderr[-2000:]
        assert b"write the repeated parts out" in stderr
        assert peak_mb < 100, f"{command}: peak RSS {peak_mb:.0f} MB"
    assert not (tmp_path / "tapes").exists()


def test_an_anchored_string_repeated_a_few_times_is_fine(tmp_path: Path) -> None:
    # The bound is on repeated text, not on aliases: shared arguments stay usable.
    aliases = "\n".join(f"          a{i}: *small" for i in range(50))
    sessions = (
        "  - name: small\n    server: calc\n    steps:\n      - call: echo\n        arguments:\n"
        f"          seed: &small {json.dumps('y' * 1000)}\n{aliases}\n"
    )
    config = write_config(tmp_path, sessions)
    code, stderr, _ = peak_run("check", "-c", str(config), cwd=tmp_path)
    assert code == 0, stderr.decode(errors="replace")


# -- a lone surrogate in a server's answer -----------------------------------------------------------

WIRE_SERVER = ROOT / "fixtures" / "servers" / "wire_server.py"


def wire_config(directory: Path, sessions: str = "  - name: one\n    server: s\n    steps: [list_tools, {call: t}]\n") -> Path:
    path = directory / "mcptape.yml"
    path.write_text(
        f"version: 1\ngolden_dir: tapes\nservers:\n  s:\n    command: [{json.dumps(sys.executable)}, {json.dumps(str(WIRE_SERVER))}]\n"
        '    env: {WIRE_ANSWER: "${WIRE_ANSWER:-\\"ok\\"}", WIRE_INIT: "${WIRE_INIT:-}"}\n'
        f"sessions:\n{sessions}",
        encoding="utf-8",
    )
    return path


def clean(proc: subprocess.CompletedProcess[bytes]) -> str:
    text = proc.stdout.decode("utf-8") + proc.stderr.decode("utf-8")  # strict: every byte is UTF-8
    assert "internal error" not in text and "Traceback" not in text, text
    return text


def test_a_lone_surrogate_in_an_answer_is_recorded_compared_and_reported(tmp_path: Path) -> None:
    config = wire_config(tmp_path)
    surrogate = {"WIRE_ANSWER": '"\\ud800 and \\udfff"'}
    assert run("ci", "-c", str(config), "-u", cwd=tmp_path).returncode == 0
    golden = tmp_path / "tapes" / "one.tape.jsonl"
    before = golden.read_bytes()

    drifted = run("ci", "-c", str(config), "--json=r.json", "--junit=j.xml", "--summary=s.md",
                  "--out-dir", "fresh", cwd=tmp_path, env=surrogate)
    text = clean(drifted)
    assert drifted.returncode == 1, text  # output drift: the answer changed
    assert '"ok" → "\\ud800 and \\udfff"' in text
    report = json.loads((tmp_path / "r.json").read_bytes())  # a report is always written, valid JSON
    assert json.dumps(report).count("\\ud800") >= 1
    assert "\\ud800" in (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "\\ud800" in (tmp_path / "j.xml").read_text(encoding="utf-8")
    assert golden.read_bytes() == before  # a failed run leaves the golden alone
    fresh = tmp_path / "fresh" / "one.tape.jsonl"
    assert b'"text":"\\ud800 and \\udfff"' in fresh.read_bytes()  # recorded as the server said it

    updated = run("ci", "-c", str(config), "-u", cwd=tmp_path, env=surrogate)
    assert updated.returncode == 0, clean(updated)
    assert golden.read_bytes() != before and b"\\ud800" in golden.read_bytes()
    assert "\\ud800" in (tmp_path / "tapes" / "one.tape.view.txt").read_text(encoding="utf-8")
    again = run("ci", "-c", str(config), cwd=tmp_path, env=surrogate)
    assert again.returncode == 0, clean(again)  # the same answer again: no drift
    back = run("ci", "-c", str(config), cwd=tmp_path)
    assert back.returncode == 1, clean(back)  # and a real change still drifts

    old = tmp_path / "old.tape.jsonl"
    old.write_bytes(before)
    for args, code in ((("show", str(golden)), 0), (("show", "--json", str(golden)), 0),
                       (("ls", str(golden.parent)), 0), (("ls", "--json", str(golden.parent)), 0),
                       (("diff", str(old), str(golden)), 1), (("diff", "--json", str(old), str(golden)), 1),
                       (("diff", str(fresh), str(golden)), 0)):
        proc = run(*args, cwd=tmp_path)
        assert proc.returncode == code, (args, clean(proc))
        if "--json" in args:
            json.loads(proc.stdout)
        else:
            assert "\\ud800" in clean(proc) or args[0] == "ls" or code == 0, args
    session = b"".join(json.dumps(m).encode() + b"\n" for m in (
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                       "clientInfo": {"name": "c", "version": "1"}}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}},
    ))
    played = run("play", "--lenient", str(golden), cwd=tmp_path, stdin=session)
    assert played.returncode in (0, 1), clean(played)
    assert b'"text":"\\ud800 and \\udfff"' in played.stdout  # served as recorded


# -- one server answering initialize with a non-object result ----------------------------------------

TWO_SESSIONS = """\
  - name: bad
    server: s
    steps: [list_tools]
  - name: good
    server: good
    steps: [list_tools, {call: t}]
"""


@pytest.mark.parametrize("init", ['"hello"', "[1, 2]", "42"])
def test_a_non_object_initialize_result_fails_that_session_only(tmp_path: Path, init: str) -> None:
    config = wire_config(tmp_path, TWO_SESSIONS)
    text = config.read_text(encoding="utf-8").replace(
        "sessions:\n", f"  good:\n    command: [{json.dumps(sys.executable)}, {json.dumps(str(WIRE_SERVER))}]\nsessions:\n")
    config.write_text(text, encoding="utf-8")
    proc = run("ci", "-c", str(config), "-u", "--json=r.json", cwd=tmp_path, env={"WIRE_INIT": init})
    out = clean(proc)
    assert proc.returncode == 3, out
    report = json.loads((tmp_path / "r.json").read_bytes())
    verdicts = {s["name"]: s for s in report["sessions"]}
    assert verdicts["good"]["verdict"] == "updated"  # the other session got its verdict
    assert verdicts["bad"]["verdict"] == "error"
    kind = {'"hello"': "str", "[1, 2]": "list", "42": "int"}[init]
    assert f"the server answered initialize with {kind} " in verdicts["bad"]["error"]
    assert "not an object (InitializeResult)" in verdicts["bad"]["error"]
    assert (tmp_path / "tapes" / "good.tape.jsonl").exists() and not (tmp_path / "tapes" / "bad.tape.jsonl").exists()


def test_an_unforeseen_failure_in_one_session_leaves_the_others_their_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # What no check foresaw (a bug met by one session's data) is that session's error, said as
    # an internal error, and never the whole run's end.
    from mcptape.ci import session as session_module
    from mcptape.cli import main

    monkeypatch.delenv("MCPTAPE_DEBUG", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    real = session_module._record

    def flaky(ctx: object, session: object, *rest: object) -> object:
        if getattr(session, "name", "") == "bad":
            raise TypeError("unforeseen")
        return real(ctx, session, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(session_module, "_record", flaky)
    config = wire_config(tmp_path, TWO_SESSIONS.replace("server: good", "server: s"))
    code = main(["ci", "-c", str(config), "-u", f"--json={tmp_path / 'r.json'}"])
    assert code == 3
    report = json.loads((tmp_path / "r.json").read_bytes())
    verdicts = {s["name"]: s for s in report["sessions"]}
    assert verdicts["good"]["verdict"] == "updated", verdicts["good"]
    assert verdicts["bad"]["verdict"] == "error"
    assert "internal error while running session bad: TypeError: unforeseen" in verdicts["bad"]["error"]
    capsys.readouterr()


# -- `--json -` under GitHub Actions -----------------------------------------------------------------

FORGED = "::error::forged by the server\n##[error]forged too"


def test_json_to_stdout_under_github_actions_is_one_valid_inert_document(tmp_path: Path) -> None:
    config = wire_config(tmp_path)
    assert run("ci", "-c", str(config), "-u", cwd=tmp_path).returncode == 0
    old = tmp_path / "old.tape.jsonl"
    old.write_bytes((tmp_path / "tapes" / "one.tape.jsonl").read_bytes())
    hostile = {"WIRE_ANSWER": json.dumps(FORGED), "GITHUB_ACTIONS": "true"}
    assert run("ci", "-c", str(config), "-u", cwd=tmp_path, env={"WIRE_ANSWER": json.dumps(FORGED)}).returncode == 0
    golden = tmp_path / "tapes" / "one.tape.jsonl"
    for args in (("ci", "-c", str(config), "--json"), ("show", "--json", str(golden)),
                 ("ls", "--json", str(golden.parent)), ("diff", "--json", str(old), str(golden))):
        env = {**hostile, "WIRE_ANSWER": json.dumps("ok")} if args[0] == "ci" else hostile  # ci: a drift
        proc = run(*args, cwd=tmp_path, env=env)
        out = proc.stdout.decode("utf-8")
        doc = json.loads(out)  # exactly one JSON document: nothing before or after it
        assert "stop-commands" not in out, args
        for line in out.splitlines():
            assert not line.strip().startswith(("::", "##[")), (args, line)
        if args[0] != "ls":
            assert FORGED in json.dumps(doc, ensure_ascii=False).replace("\\n", "\n"), args  # the same value
        err = proc.stderr.decode("utf-8")
        if args[0] == "ci":
            assert proc.returncode == 1
            assert "::error file=tapes/one.tape.jsonl" in err  # the annotation, on stderr
            assert "::stop-commands::" in err  # the human report, framed there


# -- a server flooding stderr ------------------------------------------------------------------------


def test_a_server_flooding_stderr_leaves_a_bounded_golden_with_a_note(tmp_path: Path) -> None:
    from mcptape.transports.stdio import STDERR_KEPT_BYTES

    config = wire_config(tmp_path)
    text = config.read_text(encoding="utf-8").replace("env: {", 'env: {WIRE_STDERR_MB: "8", ')
    config.write_text(text, encoding="utf-8")
    proc = run("ci", "-c", str(config), "-u", cwd=tmp_path)
    assert proc.returncode == 0, clean(proc)
    golden = tmp_path / "tapes" / "one.tape.jsonl"
    view = tmp_path / "tapes" / "one.tape.view.txt"
    assert golden.stat().st_size < 3 * STDERR_KEPT_BYTES and view.stat().st_size < 3 * STDERR_KEPT_BYTES
    notes = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines() if '"stderr_cut"' in line]
    assert len(notes) == 1
    left_out = int(notes[0]["detail"].split()[0])
    assert 8 * 1024 * 1024 - 2 * STDERR_KEPT_BYTES < left_out < 8 * 1024 * 1024  # how much was left out
    assert f"a tape keeps the first {STDERR_KEPT_BYTES} bytes (never compared)" in notes[0]["detail"]
    again = run("ci", "-c", str(config), cwd=tmp_path)
    assert again.returncode == 0, clean(again)  # the note is about stderr: never drift
    quiet = run("ci", "-c", str(config), cwd=tmp_path, env={"WIRE_ANSWER": json.dumps("other")})
    assert quiet.returncode == 1  # while a real change still is


def test_show_of_a_long_tape_prints_every_event_as_it_reads(tmp_path: Path) -> None:
    from mcptape.commands.show import STREAM_EVENTS

    config = wire_config(tmp_path)
    assert run("ci", "-c", str(config), "-u", cwd=tmp_path).returncode == 0
    lines = (tmp_path / "tapes" / "one.tape.jsonl").read_bytes().splitlines()
    stderr = json.dumps({"kind": "stderr", "dir": "s2c", "text": "chatty \x1b[2J line"}).encode()
    count = STREAM_EVENTS + 1000
    big = tmp_path / "big.tape.jsonl"
    big.write_bytes(b"\n".join([*lines[:-1], *[stderr] * (count - len(lines) + 2), lines[-1]]) + b"\n")
    proc = run("show", str(big), cwd=tmp_path)
    out = clean(proc)
    assert proc.returncode == 0
    assert f"{count} events" in out
    rows = [line for line in out.splitlines() if "chatty" in line]
    assert len(rows) == count - len(lines) + 2
    assert "\\x1b[2J" in rows[0] and "\x1b" not in out  # escaped, as every rendering of tape text
    assert out.splitlines()[-1].lstrip().startswith(str(count))  # the last event, numbered


# -- rec --listen: a request the upstream never answers -----------------------------------------------


def test_rec_listen_notes_a_request_the_upstream_never_answered(tmp_path: Path) -> None:
    import http.server
    import threading
    import urllib.request

    from tests.integration.http_helpers import mcptape_listening

    class Accepting(http.server.BaseHTTPRequestHandler):  # takes every POST, answers none (202, no body)
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Accepting)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    tape = tmp_path / "http.tape.jsonl"
    try:
        with mcptape_listening("rec", "--out", str(tape), "--upstream",
                               f"http://127.0.0.1:{upstream.server_address[1]}/mcp") as listening:
            body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "t"}}).encode()
            request = urllib.request.Request(listening.url, data=body, method="POST",
                                             headers={"Content-Type": "application/json",
                                                      "Accept": "application/json, text/event-stream"})
            with urllib.request.urlopen(request, timeout=30) as resp:
                assert resp.status == 202
    finally:
        upstream.shutdown()
    events = [json.loads(line) for line in tape.read_text(encoding="utf-8").splitlines()[1:]]
    notes = [e for e in events if e.get("kind") == "note" and e.get("what") == "unanswered"]
    assert notes == [{"kind": "note", "what": "unanswered", "detail": [{"dir": "c2s", "id": 7, "method": "tools/call"}]}]


def test_a_golden_whose_answers_are_not_objects_is_compared_not_crashed_on(tmp_path: Path) -> None:
    # A golden (hand-edited, or recorded from a server as hostile as tests/fuzz's) whose initialize
    # and tools/list answers are `true` and `"x"`: ci, diff and show say what differs.
    config = wire_config(tmp_path)
    assert run("ci", "-c", str(config), "-u", cwd=tmp_path).returncode == 0
    golden = tmp_path / "tapes" / "one.tape.jsonl"
    lines = golden.read_text(encoding="utf-8").splitlines()
    for k, line in enumerate(lines):
        event = json.loads(line)
        if event.get("kind") == "response" and event.get("method") in ("initialize", "tools/list"):
            event["msg"]["result"] = True if event["method"] == "initialize" else "x"
            lines[k] = json.dumps(event, separators=(",", ":"))
    golden.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fresh = tmp_path / "fresh"
    # Edited by hand: read as such (its seal no longer matches), so the comparison is what speaks.
    ci = run("ci", "-c", str(config), "--out-dir", str(fresh), "--allow-edited", cwd=tmp_path)
    assert ci.returncode in (1, 2), clean(ci)
    for args in (("diff", str(golden), str(fresh / "one.tape.jsonl"), "--allow-edited"), ("show", str(golden))):
        proc = run(*args, cwd=tmp_path)
        clean(proc)
        assert proc.returncode in (0, 1, 2), args
