"""Issue 19: `mcptape play` serves real clients as the recorded server would.

An agent builder's path: a `ci` golden (recorded by `mcptape ci --update-golden` at protocol
2025-06-18 against the calc fixture), then the official SDK 2.x `ClientSession` (which asks
`initialize` 2025-11-25) and FastMCP's `Client` (which probes `server/discover` first), over
stdio and over streamable HTTP (`play --listen`), each get the same answers from play as from the
live server. A 2026-07-28 tape (the SDK 2.x fixture server) answers `server/discover`, refuses
`initialize` with -32022 once the connection speaks 2026-07-28 as its server does, and on a fresh
connection answers the SDK's `initialize()` as that server does (issue 29). `--fallback` sends what the tape lacks to the live
server through rec and appends it to the tape; without it, the same request is a miss.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CALC_SERVER, FIXTURES, ROOT, mcptape_command, user_env
from tests.integration.http_helpers import mcptape_listening

DRIVER = Path(__file__).with_name("client_driver.py")
SDK2 = FIXTURES / "servers" / "sdk2_server.py"
TIMEOUT = 180
STEPS: list[list[Any]] = [
    ["list_tools"],
    ["call", "add", {"a": 2, "b": 3}],
    ["call", "echo", {"text": "hello, tape"}],
    ["read_resource", "calc://constants"],
    ["get_prompt", "explain", {"topic": "sums"}],
]
CONFIG = """\
version: 1
golden_dir: tapes
servers:
  calc:
    command: [{python}, {calc}]
    protocol: "2025-06-18"
  modern:
    command: [{python}, {sdk2}]
    protocol: "2026-07-28"
sessions:
  - name: agent
    server: calc
    steps:
      - list_tools
      - call: add
        arguments: {{a: 2, b: 3}}
      - call: divide
        arguments: {{a: 1, b: 0}}
      - call: echo
        arguments: {{text: "hello, tape"}}
      - read_resource: calc://constants
      - get_prompt: explain
        arguments: {{topic: sums}}
  - name: modern
    server: modern
    steps:
      - list_tools
      - call: add
        arguments: {{a: 2, b: 3}}
"""
ENV = user_env(PYTHONPATH=str(ROOT))


def mcptape(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(mcptape_command(*args), cwd=cwd, env=ENV, input=stdin, capture_output=True, timeout=TIMEOUT)


def drive(library: str, transport: str, target: str, steps: list[list[Any]] = STEPS) -> list[Any]:
    proc = subprocess.run([sys.executable, str(DRIVER), library, transport, target, json.dumps(steps)],
                          capture_output=True, text=True, timeout=TIMEOUT, env=ENV, cwd=ROOT)
    assert proc.returncode == 0, f"{library} over {transport}: {proc.stderr[-3000:]}"
    out: list[Any] = json.loads(proc.stdout)
    return out


@pytest.fixture(scope="module")
def goldens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agents")
    (root / "mcptape.yml").write_text(CONFIG.format(python=sys.executable, calc=CALC_SERVER, sdk2=SDK2), encoding="utf-8")
    done = mcptape("ci", "--update-golden", cwd=root)
    assert done.returncode == 0, done.stderr.decode()
    header = json.loads((root / "tapes" / "agent.tape.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert header["protocol"] == "2025-06-18"  # not what the SDK or FastMCP asks: the point of the test
    return root


@pytest.fixture(scope="module")
def live_answers() -> dict[str, list[Any]]:
    command = json.dumps([sys.executable, str(CALC_SERVER)])
    return {library: drive(library, "stdio", command) for library in ("sdk", "fastmcp")}


def _text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@pytest.mark.parametrize("library", ["sdk", "fastmcp"])
def test_a_real_client_gets_the_recorded_answers_from_play_of_a_ci_golden_over_stdio(
    goldens: Path, live_answers: dict[str, list[Any]], library: str
) -> None:
    tape = goldens / "tapes" / "agent.tape.jsonl"
    replayed = drive(library, "stdio", json.dumps(mcptape_command("play", str(tape))))
    assert replayed == live_answers[library]
    assert _text(replayed[1]) == "5"


@pytest.mark.parametrize("library", ["sdk", "fastmcp"])
def test_a_real_client_gets_the_recorded_answers_from_play_listen_over_http(
    goldens: Path, live_answers: dict[str, list[Any]], library: str
) -> None:
    tape = goldens / "tapes" / "agent.tape.jsonl"
    with mcptape_listening("play", str(tape)) as play:
        replayed = drive(library, "http", play.url)
    assert replayed == live_answers[library]
    assert play.returncode == 0, play.stderr
    assert "answered from the tape, clean" in play.stderr


def test_the_sdk_session_sees_the_version_the_recorded_server_negotiated(goldens: Path) -> None:
    import anyio
    from mcp import ClientSession, MCPError, StdioServerParameters
    from mcp.client.stdio import stdio_client

    tape = goldens / "tapes" / "agent.tape.jsonl"
    errlog = goldens / "play-version.log"

    async def main() -> tuple[str, str, Any, Any]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "mcptape", "play", str(tape)], cwd=str(ROOT))
        with open(errlog, "w", encoding="utf-8") as err, anyio.fail_after(60):
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
                init = await session.initialize()
                result = await session.call_tool("add", {"a": 2, "b": 3})
                errors = []
                for arguments in ({"a": 1, "b": 0}, {"a": 2, "b": 4}):  # recorded error; not recorded at all
                    try:
                        await session.call_tool("divide" if arguments["b"] == 0 else "add", arguments)
                    except MCPError as e:
                        errors.append((e.code, e.error.message))
                return init.protocol_version, _text(result.model_dump(mode="json")), errors[0], errors[1]

    version, added, divided, missed = anyio.run(main)
    assert (version, added, divided) == ("2025-06-18", "5", (-32602, "Division by zero"))
    assert missed[0] == -32603 and "arguments.b differs: 3 recorded, 4 asked" in missed[1]
    report = errlog.read_text(encoding="utf-8")
    assert 'asked protocol "2025-11-25"; answered with the recorded server\'s "2025-06-18"' in report


def test_a_2026_tape_serves_the_sdk_handshake_and_discover_as_its_server_does(goldens: Path) -> None:
    import anyio
    from mcp import ClientSession, MCPError, StdioServerParameters
    from mcp.client.stdio import stdio_client

    tape = goldens / "tapes" / "modern.tape.jsonl"
    live = StdioServerParameters(command=sys.executable, args=[str(SDK2)], cwd=str(ROOT))
    played = StdioServerParameters(command=sys.executable, args=["-m", "mcptape", "play", str(tape)], cwd=str(ROOT))

    async def handshake(params: StdioServerParameters) -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(60):
                await session.discover()
                await session.call_tool("add", {"a": 2, "b": 3})  # the connection now speaks 2026-07-28
                try:
                    await session.initialize()
                except MCPError as e:
                    return e.code
                return "accepted"

    async def discover(params: StdioServerParameters) -> tuple[str | None, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(60):
                await session.discover()
                tools = await session.list_tools()
                result = await session.call_tool("add", {"a": 2, "b": 3})
                return session.protocol_version, ([t.name for t in tools.tools], result.structured_content)

    async def fresh_initialize(params: StdioServerParameters) -> Any:
        # The README's pytest example: the SDK's legacy handshake, then the session's calls.
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            with anyio.fail_after(60):
                init = await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool("add", {"a": 2, "b": 3})
                dumped = result.model_dump(mode="json", exclude_none=True)
                return (init.protocol_version, init.server_info.name, [t.name for t in tools.tools],
                        result.structured_content, sorted(dumped))

    # The live server refuses initialize once its connection speaks 2026-07-28, and so does play.
    assert anyio.run(handshake, live) == -32022
    assert anyio.run(handshake, played) == -32022
    # Issue 29: on a fresh connection it accepts the legacy handshake; play of its 2026-07-28 tape
    # answers the same, results without the 2026-07-28 envelope, as the live server's.
    assert anyio.run(fresh_initialize, played) == anyio.run(fresh_initialize, live)
    assert anyio.run(fresh_initialize, played)[0] == "2025-11-25"
    assert anyio.run(discover, played) == anyio.run(discover, live)
    assert anyio.run(discover, played)[1][1] == {"result": 5.0}


def test_play_fallback_answers_the_tape_first_then_live_and_appends_what_it_recorded(goldens: Path, tmp_path: Path) -> None:
    tape = tmp_path / "agent.tape.jsonl"
    tape.write_bytes((goldens / "tapes" / "agent.tape.jsonl").read_bytes())
    before = tape.read_bytes()
    steps = [["call", "add", {"a": 2, "b": 3}], ["call", "add", {"a": 20, "b": 22}]]
    # Without --fallback, replay never goes live: the new call is a miss.
    strict = subprocess.run(
        [sys.executable, str(DRIVER), "sdk", "stdio", json.dumps(mcptape_command("play", str(tape))), json.dumps(steps)],
        capture_output=True, text=True, timeout=TIMEOUT, env=ENV, cwd=ROOT,
    )
    assert strict.returncode != 0 and 'no recorded tools/call add {"a":20,"b":22} on the tape' in strict.stderr
    assert tape.read_bytes() == before
    server = [sys.executable, str(CALC_SERVER)]
    played = drive("sdk", "stdio", json.dumps(mcptape_command("play", str(tape), "--fallback", "--", *server)), steps)
    assert [_text(r) for r in played] == ["5", "42"]
    # The tape grew by the live call, and now answers it offline.
    assert tape.read_bytes() != before
    evs = [json.loads(line) for line in tape.read_text(encoding="utf-8").splitlines()[1:-1]]
    assert [e["method"] for e in evs if e.get("dir") == "c2s" and e["kind"] == "request"].count("initialize") == 1
    offline = drive("sdk", "stdio", json.dumps(mcptape_command("play", str(tape))), steps)
    assert [_text(r) for r in offline] == ["5", "42"]
    done = mcptape("play", str(tape), cwd=tmp_path, stdin=b"")
    assert done.returncode == 0 and 'tools/call add {"a":20,"b":22}' in done.stderr.decode()  # a valid tape, listed unused
    assert mcptape("diff", str(goldens / "tapes" / "agent.tape.jsonl"), str(tape), cwd=tmp_path).returncode == 2  # a call was added


def _lines(*msgs: dict[str, Any]) -> bytes:
    return b"".join(json.dumps({"jsonrpc": "2.0", **m}).encode() + b"\n" for m in msgs)


HANDSHAKE = (
    {"id": 0, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "agent", "version": "1"}}},
    {"method": "notifications/initialized"},
)


def test_play_fallback_records_redacted_as_rec_does(goldens: Path, tmp_path: Path) -> None:
    token = "ghp_" + "".join(__import__("secrets").choice("ABCDEFGHJKMNPQRSTUVWXYZabcdefghjkmnpqrstuvwxyz23456789") for _ in range(36))
    tape = tmp_path / "agent.tape.jsonl"
    tape.write_bytes((goldens / "tapes" / "agent.tape.jsonl").read_bytes())
    ask = _lines(*HANDSHAKE, {"id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": f"deploy {token}"}}})
    done = mcptape("play", str(tape), "--fallback", "--", sys.executable, str(CALC_SERVER), cwd=tmp_path, stdin=ask)
    assert done.returncode == 0, done.stderr.decode()
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["result"]["content"][0]["text"] == f"deploy {token}"  # the client gets the live answer
    text = tape.read_text(encoding="utf-8")
    assert token not in text and "<REDACTED:" in text  # the tape gets what rec would have written
    assert token not in done.stderr.decode()


def test_play_fallback_the_rule_corpus_survives_in_no_tape_or_message(goldens: Path, tmp_path: Path) -> None:
    """Provider shapes only betterleaks' rules know (tests/redact_corpus.py), raw and base64, echoed
    by the live server behind play --fallback: 0 reach the appended tape or play's stderr."""
    import base64

    from tests.redact_corpus import leaks, rule_corpus

    planted = rule_corpus()
    tape = tmp_path / "agent.tape.jsonl"
    tape.write_bytes((goldens / "tapes" / "agent.tape.jsonl").read_bytes())
    forms = [f for p in planted for f in (p.carrier, base64.b64encode(p.carrier.encode()).decode())]
    calls = [{"id": i, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": f}}}
             for i, f in enumerate(forms, start=1)]
    done = mcptape("play", str(tape), "--fallback", "--", sys.executable, str(CALC_SERVER), cwd=tmp_path,
                   stdin=_lines(*HANDSHAKE, *calls))
    assert done.returncode == 0, done.stderr.decode()
    assert len(done.stdout.splitlines()) == len(calls) + 1  # every call answered, live
    text = tape.read_text(encoding="utf-8")
    for line in text.splitlines() + done.stderr.decode().splitlines():
        assert leaks(line, planted) == [], line[:400]
    assert all(f"<REDACTED:{p.kind}#" in text for p in planted)


def test_play_fallback_never_starts_the_server_when_the_tape_answers_everything(goldens: Path, tmp_path: Path) -> None:
    tape = tmp_path / "agent.tape.jsonl"
    tape.write_bytes((goldens / "tapes" / "agent.tape.jsonl").read_bytes())
    before = tape.read_bytes()
    ask = _lines(*HANDSHAKE, {"id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}})
    marker = tmp_path / "started"
    server = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    done = mcptape("play", str(tape), "--fallback", "--", *server, cwd=tmp_path, stdin=ask)
    assert done.returncode == 0 and not marker.exists() and tape.read_bytes() == before
    # The same server is started for a call the tape lacks (positive control: it can run).
    ask = _lines(*HANDSHAKE, {"id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 9, "b": 3}}})
    done = mcptape("play", str(tape), "--fallback", "--", *server, cwd=tmp_path, stdin=ask)
    assert marker.exists()
    assert b"did not accept the replayed initialize" in done.stdout  # it is no MCP server: the client is told
    assert done.returncode == 3 and b"nothing was appended" in done.stderr and tape.read_bytes() == before


def test_play_refuses_a_server_command_without_fallback(goldens: Path, tmp_path: Path) -> None:
    tape = goldens / "tapes" / "agent.tape.jsonl"
    done = mcptape("play", str(tape), "--", sys.executable, str(CALC_SERVER), cwd=tmp_path, stdin=b"")
    assert done.returncode == 3 and b"replay never goes live unless asked" in done.stderr
    done = mcptape("play", str(tape), "--fallback", "--fallback-url", "http://127.0.0.1:1/mcp", "--", "x", cwd=tmp_path, stdin=b"")
    assert done.returncode == 3 and b"not both" in done.stderr


def test_play_listen_fallback_forwards_each_http_session_and_appends_it(goldens: Path, tmp_path: Path) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    tape = tmp_path / "agent.tape.jsonl"
    tape.write_bytes((goldens / "tapes" / "agent.tape.jsonl").read_bytes())

    async def session(url: str, a: int, b: int) -> str:
        async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as client:
            await client.initialize()
            return _text((await client.call_tool("add", {"a": a, "b": b})).model_dump(mode="json"))

    # mcptape_listening appends `--listen 127.0.0.1:0`: after `--` that would be the server's; so play gets
    # its own before `--`, and the server command is a shell that leaves its extra arguments unused.
    server = ["sh", "-c", f'exec "{sys.executable}" "{CALC_SERVER}"', "sh"]
    with mcptape_listening("play", str(tape), "--listen", "127.0.0.1:0", "--fallback", "--", *server) as play:
        got = [anyio.run(session, play.url, 2, 3), anyio.run(session, play.url, 20, 22), anyio.run(session, play.url, 1, 1)]
    assert got == ["5", "42", "2"], play.stderr
    assert play.returncode == 0, play.stderr
    calls = [json.loads(line) for line in tape.read_text(encoding="utf-8").splitlines()[1:-1]]
    asked = [e["msg"]["params"]["arguments"] for e in calls if e.get("kind") == "request" and e["method"] == "tools/call"]
    assert {"a": 20, "b": 22} in asked and {"a": 1, "b": 1} in asked


def test_play_listen_answers_with_the_http_status_the_server_recorded(tmp_path: Path) -> None:
    import httpx

    from mcptape.tape.events import EventBuilder, note_event
    from mcptape.tape.format import make_header, tape_bytes

    b = EventBuilder()
    refused = {"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: Server not initialized"}, "id": 1}
    events = [
        b.line("c2s", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}).encode()),
        note_event("http", {"request": "POST", "status": 400}),
        b.line("s2c", json.dumps(refused).encode()),
        b.line("c2s", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()),
        note_event("http", {"request": "POST", "status": 409}),  # a notification's status: answers nothing
        b.line("c2s", json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()),
        b.line("s2c", json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}).encode()),
    ]
    tape = tmp_path / "http.tape.jsonl"
    tape.write_bytes(tape_bytes(make_header("http", transport="http"), events))
    headers = {"Accept": "application/json, text/event-stream"}
    with mcptape_listening("play", str(tape)) as play:
        probe = httpx.post(play.url, json={"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}}, headers=headers)
        listed = httpx.post(play.url, json={"jsonrpc": "2.0", "id": 8, "method": "tools/list"}, headers=headers)
    assert probe.status_code == 400 and probe.headers["content-type"] == "application/json"
    assert probe.json() == {**refused, "id": 7}
    assert listed.status_code == 200 and listed.json()["result"] == {"tools": []}


@pytest.mark.node
def test_fastmcp_falls_back_on_plays_recorded_http_refusal_as_it_did_on_server_everythings(tmp_path: Path) -> None:
    """server-everything refuses FastMCP's `server/discover` probe with HTTP 400 (not -32601) and FastMCP
    falls back to initialize; recorded through rec --listen, play --listen must refuse it the same way."""
    from tests.conftest import node_server
    from tests.integration.http_helpers import background, free_port

    everything = node_server("everything")
    steps: list[list[Any]] = [["list_tools"], ["call", "echo", {"message": "hello tape"}]]
    tape = tmp_path / "fastmcp-listen.tape.jsonl"
    port = free_port()
    with (background(["node", str(everything), "streamableHttp"], port, env={"PORT": str(port)}),
          mcptape_listening("rec", "--out", str(tape), "--name", tape.stem, "--upstream", f"http://127.0.0.1:{port}/mcp") as rec):
        live = drive("fastmcp", "http", rec.url, steps)
        live_probe = _probe(f"http://127.0.0.1:{port}/mcp")
    text = tape.read_text(encoding="utf-8")
    assert '"status":400' in text and "server/discover" in text  # the refusal is on the tape
    with mcptape_listening("play", str(tape)) as play:
        played_probe = _probe(play.url)
    with mcptape_listening("play", str(tape)) as play:
        replayed = drive("fastmcp", "http", play.url, steps)
    assert replayed == live
    assert played_probe == live_probe and live_probe[0] == 400  # the status and the error, as the server answered
    assert "Echo: hello tape" in json.dumps(replayed)
    assert play.returncode == 0, play.stderr


def _probe(url: str) -> tuple[int, Any]:
    """What an endpoint answers a first `server/discover`, as FastMCP sends it: HTTP status and JSON-RPC error code."""
    import httpx

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "fastmcp", "version": "4.2.3"}}
    resp = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
                      headers={"Accept": "application/json, text/event-stream"}, timeout=30)
    return resp.status_code, resp.json().get("error", {}).get("code")


def test_play_fallback_url_forwards_to_a_live_http_server_through_rec_listen(goldens: Path, tmp_path: Path) -> None:
    from tests.integration.http_helpers import background, calc_http_cmd, free_port

    tape = tmp_path / "agent.tape.jsonl"
    tape.write_bytes((goldens / "tapes" / "agent.tape.jsonl").read_bytes())
    ask = _lines(*HANDSHAKE, {"id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}},
                 {"id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 20, "b": 22}}})
    port = free_port()
    with background(calc_http_cmd(port), port):
        done = mcptape("play", str(tape), "--fallback-url", f"http://127.0.0.1:{port}/mcp", cwd=tmp_path, stdin=ask)
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [_text(a["result"]) for a in answers[1:]] == ["5", "42.0"]  # the tape's answer, then the live one
    assert 'live: tools/call add {"a":20,"b":22}' in done.stderr.decode()
    offline = mcptape("play", str(tape), cwd=tmp_path, stdin=ask)  # the HTTP server is gone: the tape has it now
    assert offline.returncode == 0, offline.stderr.decode()
    assert [_text(json.loads(line)["result"]) for line in offline.stdout.splitlines()[1:]] == ["5", "42.0"]


def test_the_sdk_client_over_http_gets_a_2026_tapes_answers_from_play_listen(goldens: Path) -> None:
    import anyio
    from mcp.client import Client

    async def session(url: str) -> tuple[str, Any]:
        async with Client(url, mode="auto", read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            result = await client.call_tool("add", {"a": 2, "b": 3})
            return str(client.session.protocol_version), result.structured_content

    with mcptape_listening("play", str(goldens / "tapes" / "modern.tape.jsonl")) as play:
        got = anyio.run(session, play.url)
    assert got == ("2026-07-28", {"result": 5.0})
    assert play.returncode == 0 and "miss" not in play.stderr, play.stderr
