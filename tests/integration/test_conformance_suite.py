"""The official MCP conformance suite (@modelcontextprotocol/conformance, fixtures/conformance/) through mcptape.

Server side: every server scenario against the project's target server (fixtures/servers/
conformance_server.mjs), live, through `rec --listen` in front of it, and through `play --listen` of
what rec recorded (one tape holding every scenario's HTTP session). Each door must give the verdicts
the live server gets, check by check. Client side: the client scenarios against `mcptape ci`'s client
(fixtures/conformance/ci_client.py writes the mcptape.yml a user would and runs `mcptape ci`), those
docs/conformance.md says apply passing and the others being exactly the ones it lists as not applying.

One suite run per door (the suite runs every scenario in one process), so this costs a few node and
mcptape start-ups, not one per scenario. docs/conformance.md holds the scenario tables; this test
checks them against what the suite does.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import FIXTURES, ROOT, mcptape_command, user_env
from tests.integration.http_helpers import mcptape_listening, stop_group

SUITE_DIR = FIXTURES / "conformance"
NODE = SUITE_DIR / "node_modules" / ".bin" / "node"
SUITE = SUITE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
TARGET = FIXTURES / "servers" / "conformance_server.mjs"
DOC = ROOT / "docs" / "conformance.md"

Results = dict[str, list[tuple[str, str]]]  # scenario -> its (check id, status) pairs that are not INFO


def _require_suite() -> None:
    if NODE.exists() and SUITE.exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{SUITE} is missing: .ci/run must install the conformance suite (make install)")
    pytest.skip("the conformance suite is not installed (make install)")


def suite(*args: str, out: Path, env: dict[str, str] | None = None, timeout: float = 300) -> Results:
    """Run the suite (`server ...` or `client ...`) once; each scenario's checks that say something."""
    proc = subprocess.run([str(NODE), str(SUITE), *args, "-o", str(out)], capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)
    results: Results = {}
    for found in sorted(out.rglob("checks.json")):  # auth/NAME-TIME/checks.json: the name holds a slash
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", found.parent.relative_to(out).as_posix())
        name = name.removeprefix("server-") if args[0] == "server" else name
        checks = json.loads(found.read_text(encoding="utf-8"))
        results[name] = sorted((c["id"], c["status"]) for c in checks if c["status"] != "INFO")
    assert results, f"the suite ran no scenario: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    return results


def documented(section: str) -> dict[str, list[str]]:
    """The rows of one table of docs/conformance.md (under its `## section` heading): scenario -> cells."""
    text = DOC.read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in body.splitlines() if line.startswith("| `")]
    return {cells[0].strip().strip("`"): [c.strip() for c in cells[1:]] for cells in rows}


def failed(results: Results, scenario: str) -> list[tuple[str, str]]:
    return [c for c in results.get(scenario, [("missing", "FAILURE")]) if c[1] == "FAILURE"]


@pytest.fixture(scope="module")
def target() -> Iterator[str]:
    """The target server over HTTP on a free port; its MCP endpoint's URL."""
    _require_suite()
    proc = subprocess.Popen([str(NODE), str(TARGET), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"the target server did not start: {url!r}"
        yield url
    finally:
        stop_group(proc, signal.SIGTERM)  # type: ignore[arg-type]


def test_every_server_scenario_gets_the_live_verdict_through_rec_and_play(target: str, tmp_path: Path) -> None:
    live = suite("server", "--url", target, "--suite", "all", out=tmp_path / "live")
    table = documented("Server scenarios")
    assert sorted(live) == sorted(table), "docs/conformance.md's server table and the suite's scenarios differ"
    assert {s: failed(live, s) for s in live if failed(live, s)} == {}, "the target server fails the suite live"

    tape = tmp_path / "suite.tape.jsonl"
    with mcptape_listening("rec", "--upstream", target, "--out", str(tape)) as rec:
        via_rec = suite("server", "--url", rec.url, "--suite", "all", out=tmp_path / "rec")
    assert rec.returncode == 0, rec.stderr
    # The suite's dns-rebinding-protection scenario posed as evil.example.com: refused before forwarding.
    assert "refused a POST request (403): Host 'evil.example.com'" in rec.stderr
    assert via_rec == live

    events = [json.loads(line) for line in tape.read_text(encoding="utf-8").splitlines()]
    assert events[0]["format"] == 3
    sessions = {e["session"] for e in events if "session" in e}
    assert len(sessions) >= len(live) - 1  # a session each (dns-rebinding's never got one), ids from 0 in each
    assert not any("evil.example.com" in json.dumps(e) for e in events)

    with mcptape_listening("play", str(tape)) as play:
        via_play = suite("server", "--url", play.url, "--suite", "all", out=tmp_path / "play")
        # An answer the server streamed is streamed, with the CORS headers it sent (a browser client
        # reads Mcp-Session-Id only if they expose it).
        where = urlsplit(play.url)
        conn = http.client.HTTPConnection(str(where.hostname), where.port, timeout=30)
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}),
                     {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        answer = conn.getresponse()
        assert answer.getheader("Content-Type") == "text/event-stream" and b'"serverInfo"' in answer.read()
        assert answer.getheader("Access-Control-Expose-Headers") == "Mcp-Session-Id"
        assert answer.getheader("Access-Control-Allow-Origin") == "*"
    assert play.returncode == 0, play.stderr
    assert via_play == live

    shown = subprocess.run(mcptape_command("show", str(tape)), capture_output=True, text=True, check=False,
                           env=user_env(COLUMNS="200"))
    assert shown.returncode == 0 and "session" in shown.stdout.splitlines()[2]  # the column that tells ids apart

    # What the equality is worth: play of a tape whose answer changed (its text content is no longer
    # of type "text") fails that scenario.
    changed = tmp_path / "changed.tape.jsonl"
    recorded = '{"type":"text","text":"This is a simple text response'
    assert recorded in tape.read_text(encoding="utf-8")
    changed.write_text(tape.read_text(encoding="utf-8").replace(recorded, recorded.replace('"text",', '"txt",', 1)),
                       encoding="utf-8")
    with mcptape_listening("play", str(changed), "--allow-edited") as play:
        drifted = suite("server", "--url", play.url, "--scenario", "tools-call-simple-text", out=tmp_path / "changed")
    assert failed(drifted, "tools-call-simple-text")


def test_the_client_scenarios_that_apply_pass_against_mcptape_ci(tmp_path: Path) -> None:
    _require_suite()
    env = user_env(MCPTAPE_CONFORMANCE_OUT=str(tmp_path / "ci"))
    command = f"{sys.executable} {SUITE_DIR / 'ci_client.py'}"  # the suite splits it on spaces
    assert " " not in sys.executable and " " not in str(SUITE_DIR)
    results = suite("client", "--command", command, "--suite", "all", out=tmp_path / "client", env=env)
    applies = documented("Client scenarios")
    not_applying = documented("What does not apply")
    assert sorted(results) == sorted([*applies, *not_applying]), "docs/conformance.md and the suite's client scenarios differ"
    # Every check passes but sse-retry's timing, a wall-clock check: a loaded machine reconnects late
    # (the suite says WARNING past 200 ms, FAILURE past twice the `retry`). What it must never be is
    # early: that is the client not waiting for `retry`, whatever the load.
    timing = "client-sse-retry-timing"
    assert {s: [c for c in results[s] if c[1] != "SUCCESS" and c[0] != timing] for s in applies} == {s: [] for s in applies}
    [retry_run] = (tmp_path / "client").glob("sse-retry-*/checks.json")
    [waited] = [c for c in json.loads(retry_run.read_text(encoding="utf-8")) if c["id"] == timing]
    assert waited["details"]["tooEarly"] is False and waited["details"]["getConnectionCount"] >= 1

    out = tmp_path / "ci"
    # The stream cut and resumed is one exchange on the golden tape: one answer, no trace of the cut.
    golden = (out / "sse-retry" / "tapes" / "sse-retry.tape.jsonl").read_text(encoding="utf-8")
    calls = [json.loads(line) for line in golden.splitlines() if '"tools/call"' in line]
    assert [(e["kind"], e["dir"]) for e in calls] == [("request", "c2s"), ("response", "s2c")]
    assert "note" not in golden
    # Client credentials: the token the client got, its secret and its key reach no file it wrote.
    for scenario in ("auth-client-credentials-basic", "auth-client-credentials-jwt"):
        written = "".join(p.read_text(encoding="utf-8") for p in (out / scenario).rglob("*") if p.is_file()
                          and p.name != "mcptape.yml")
        assert '"method":"tools/list"' in written  # it got through, with a token
        for secret in ("cc-token-", "conformance-test-secret", "PRIVATE KEY"):
            assert secret not in written, (scenario, secret)
