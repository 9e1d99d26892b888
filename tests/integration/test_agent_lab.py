"""Issue 32: tapes as an agent lab, driven by the official SDK's ClientSession and FastMCP's Client.

A tape recorded by `mcptape rec` (the SDK in front, the calc fixture behind, over stdio and over
`rec --listen`) carries each answer's latency in its footer; `play --pace recorded` answers after
it; `play --fault` injects each fault into what a real client sees, the same sequence for the same
seed; `mcptape fork` changes one answer so a scripted agent takes its fallback path; `play
--live-tools` sends named tools live; a golden's placeholders reach the client as valid values.

Timing is asserted only from below where it is a sleep (a 200 ms sleep takes at least 200 ms on any
machine) or relatively (an unpaced answer comes before a paced one): nothing here depends on the
machine being idle.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import CALC_SERVER, mcptape_command
from tests.integration.http_helpers import mcptape_listening
from tests.integration.test_play_agents import drive, mcptape

SLOW_MS = 200
STEPS: list[list[Any]] = [
    ["list_tools"],
    ["call", "slow", {"ms": SLOW_MS}],
    ["call", "add", {"a": 2, "b": 3}],
    ["call", "echo", {"text": "hello, tape"}],
]
CALC = [sys.executable, str(CALC_SERVER)]


@pytest.fixture(scope="module")
def tape(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session recorded by rec over stdio, the SDK's ClientSession in front of it."""
    path = tmp_path_factory.mktemp("lab") / "calc.tape.jsonl"
    drive("sdk", "stdio", json.dumps(mcptape_command("rec", "--out", str(path), "--", *CALC)), STEPS)
    return path


def _footer(path: Path) -> dict[str, Any]:
    footer: dict[str, Any] = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    return footer


def _show(path: Path) -> dict[str, Any]:
    done = mcptape("show", str(path), "--json", cwd=path.parent)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _latency(path: Path, call: str) -> float:
    return float(next(c["latency_ms"] for c in _show(path)["timing"]["calls"] if c["call"] == call))


# --- 1. timing on the tape -------------------------------------------------------------------


def test_rec_over_stdio_records_each_answers_latency_and_show_and_ls_print_them(tape: Path) -> None:
    timing = _footer(tape)["timing"]
    assert timing["unit"] == "ms" and len(timing["at"]) == _footer(tape)["events"]
    shown = _show(tape)
    calls = {c["call"]: c for c in shown["timing"]["calls"]}
    assert calls["tools/call slow"]["latency_ms"] >= SLOW_MS  # a sleep of 200 ms: never less
    assert shown["timing"]["client_gaps"], "gaps between client messages"
    listed = json.loads(mcptape("ls", str(tape), "--json", cwd=tape.parent).stdout)
    assert listed[0]["timing"]["slowest"]["call"] == "tools/call slow"
    assert listed[0]["timing"]["total_ms"] >= SLOW_MS
    table = mcptape("show", str(tape), cwd=tape.parent).stdout.decode()
    assert "ms" in table.splitlines()[2] or " ms " in table


def test_rec_listen_over_http_records_latency_too(tmp_path: Path) -> None:
    out = tmp_path / "http.tape.jsonl"
    with mcptape_listening("play", str(_http_upstream_tape(tmp_path))) as upstream, \
            mcptape_listening("rec", "--upstream", upstream.url, "--out", str(out), path="/mcp") as rec:
        drive("sdk", "http", rec.url, [["list_tools"], ["call", "add", {"a": 2, "b": 3}]])
    assert rec.returncode == 0, rec.stderr
    calls = {c["call"]: c for c in _show(out)["timing"]["calls"]}
    assert calls["tools/call add"]["latency_ms"] is not None and calls["tools/call add"]["latency_ms"] >= 0


def _http_upstream_tape(tmp_path: Path) -> Path:
    """An upstream for rec --listen: play --listen of a tape of the same calls (any MCP server would do)."""
    path = tmp_path / "upstream.tape.jsonl"
    drive("sdk", "stdio", json.dumps(mcptape_command("rec", "--out", str(path), "--", *CALC)),
          [["list_tools"], ["call", "add", {"a": 2, "b": 3}]])
    return path


# One calc server; each test adds its sessions.
CONFIG_HEAD = """\
version: 1
golden_dir: tapes
servers:
  calc:
    command: [{python}, {calc}]
    protocol: "2025-06-18"
sessions:
"""
CI_CONFIG = CONFIG_HEAD + """\
  - name: slow
    server: calc
    steps:
      - call: slow
        arguments: {{ms: {ms}}}
      - call: add
        arguments: {{a: 2, b: 3}}
"""


def test_ci_keeps_timing_in_the_fresh_tape_and_never_in_the_golden(tmp_path: Path) -> None:
    (tmp_path / "mcptape.yml").write_text(CI_CONFIG.format(python=sys.executable, calc=CALC_SERVER, ms=50), encoding="utf-8")
    assert mcptape("ci", "--update-golden", cwd=tmp_path).returncode == 0
    golden = tmp_path / "tapes" / "slow.tape.jsonl"
    first = golden.read_bytes()
    assert b'"timing"' not in first
    assert mcptape("ci", "--update-golden", cwd=tmp_path).returncode == 0
    assert golden.read_bytes() == first  # byte-stable: a second run's clock changed nothing
    done = mcptape("ci", "--out-dir", "fresh", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    fresh = tmp_path / "fresh" / "slow.tape.jsonl"
    assert _latency(fresh, "tools/call slow") >= 50
    assert golden.read_bytes() == first
    # The fresh tape is the golden byte for byte (accepting it by copying never adds a clock); its
    # timing is beside it, and `show` read it from there (above).
    assert fresh.read_bytes() == first
    sidecar = tmp_path / "fresh" / "slow.tape.timing.json"
    assert json.loads(sidecar.read_text(encoding="utf-8"))["timing"]["unit"] == "ms"
    # Positive control: without its sidecar the fresh tape has no timing to show.
    sidecar.unlink()
    assert "timing" not in _show(fresh)


# --- 2. paced replay -------------------------------------------------------------------------


async def _timed_call(params: Any, name: str, arguments: dict[str, Any]) -> float:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        started = time.monotonic()
        result = await session.call_tool(name, arguments)
        took = time.monotonic() - started
        assert not result.is_error
        return took


def test_play_pace_recorded_answers_after_the_recorded_latency_and_at_once_without(tape: Path) -> None:
    from mcp import StdioServerParameters

    def play(*extra: str) -> float:
        argv = mcptape_command("play", str(tape), *extra)
        return anyio.run(_timed_call, StdioServerParameters(command=argv[0], args=argv[1:]), "slow", {"ms": SLOW_MS})

    recorded = _latency(tape, "tools/call slow") / 1000
    paced = play("--pace", "recorded")
    fast = play()
    assert paced >= recorded * 0.75  # the wait is a sleep of the recorded latency: never much less
    assert fast < paced
    half = play("--pace", "x2")
    assert half >= recorded / 2 * 0.75


def test_play_listen_paces_the_sdk_and_fastmcp_clients_over_http(tape: Path) -> None:
    from fastmcp import Client
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def sdk(url: str) -> float:
        async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            started = time.monotonic()
            await session.call_tool("slow", {"ms": SLOW_MS})
            return time.monotonic() - started

    async def fastmcp(url: str) -> float:
        async with Client(url) as client:
            started = time.monotonic()
            await client.call_tool_mcp("slow", {"ms": SLOW_MS})
            return time.monotonic() - started

    recorded = _latency(tape, "tools/call slow") / 1000
    with mcptape_listening("play", str(tape), "--pace", "recorded") as play:
        assert anyio.run(sdk, play.url) >= recorded * 0.75
        assert anyio.run(fastmcp, play.url) >= recorded * 0.75
    assert play.returncode == 0, play.stderr
    assert "pace: recorded" in play.stderr


# --- 3. faults -------------------------------------------------------------------------------


async def _sdk_sees(params: Any) -> tuple[str, Any]:
    """What the SDK's ClientSession sees calling add: ("result", (is_error, text)) or ("error", (code, message))."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    async with stdio_client(params) as (read, write), ClientSession(read, write, read_timeout_seconds=3) as session:
        await session.initialize()
        await session.list_tools()
        try:
            with anyio.fail_after(20):
                result = await session.call_tool("add", {"a": 2, "b": 3})
        except MCPError as e:
            return "error", (e.error.code, e.error.message)
        return "result", (result.is_error, result.content[0].text)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("rule", "seen"),
    [
        (None, ("result", (False, "5"))),
        ("tool=add,error=-32000:quota exceeded", ("error", (-32000, "quota exceeded"))),
        ("tool=add,is-error=rate limited", ("result", (True, "rate limited"))),
        ("tool=add,delay=300", ("result", (False, "5"))),
        ("tool=add,no-answer", ("error", (-32001, "Request 'tools/call' timed out"))),
        ("tool=add,malformed", ("error", (-32001, "Request 'tools/call' timed out"))),
        ("tool=add,close", ("error", (-32000, "Connection closed"))),
    ],
)
def test_the_sdk_client_sees_each_injected_fault_over_stdio(tape: Path, tmp_path: Path, rule: str | None,
                                                            seen: tuple[str, Any]) -> None:
    from mcp import StdioServerParameters

    report = tmp_path / "report.json"
    argv = mcptape_command("play", str(tape), f"--json={report}", *(["--fault", rule] if rule else []))
    assert anyio.run(_sdk_sees, StdioServerParameters(command=argv[0], args=argv[1:])) == seen
    injected = json.loads(report.read_text(encoding="utf-8"))["sessions"][0].get("injected", [])
    if rule is None:
        assert injected == []
    else:
        assert len(injected) == 1 and "tools/call add" in injected[0] and rule in injected[0]


def test_the_sdk_client_sees_faults_over_http(tape: Path) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    async def call(url: str) -> tuple[str, Any]:
        async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            try:
                result = await session.call_tool("add", {"a": 2, "b": 3})
            except MCPError as e:
                return "error", e.error.code
            return "result", (result.is_error, result.content[0].text)  # type: ignore[union-attr]

    with mcptape_listening("play", str(tape), "--fault", "tool=add,call=1,error=-32042:first",
                           "--fault", "tool=add,call=2,is-error=second") as play:
        # HTTP play gives each client session its own fault counts: each session's first add errs.
        assert anyio.run(call, play.url) == ("error", -32042)
        assert anyio.run(call, play.url) == ("error", -32042)
    assert play.returncode == 0, play.stderr
    assert play.stderr.count("error -32042: first") == 2


def test_fastmcp_client_sees_injected_faults_and_a_fork_over_stdio(tape: Path, tmp_path: Path) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    async def add(argv: list[str]) -> Any:
        async with Client(StdioTransport(command=argv[0], args=argv[1:])) as client:
            try:
                result = await client.call_tool_mcp("add", {"a": 2, "b": 3})
            except Exception as e:  # noqa: BLE001 - what FastMCP raises is what the test shows
                return type(e).__name__, str(e)
            return result.is_error, result.content[0].text

    def play(path: Path, *extra: str) -> Any:
        return anyio.run(add, mcptape_command("play", str(path), *extra))

    assert play(tape) == (False, "5")
    assert play(tape, "--fault", "tool=add,is-error=rate limited") == (True, "rate limited")
    name, message = play(tape, "--fault", "tool=add,error=-32000:quota exceeded")
    assert "quota exceeded" in message, (name, message)
    at = 1 + next(i for i, c in enumerate(_show(tape)["timing"]["calls"]) if c["call"] == "tools/call add")
    fork = tmp_path / "f.tape.jsonl"
    assert mcptape("fork", str(tape), "--at", str(at), "--error=-32000:forked", "-o", str(fork), cwd=tmp_path).returncode == 0
    assert "forked" in play(fork)[1]


def test_faults_drawn_with_a_seed_are_the_same_sequence_every_run(tape: Path, tmp_path: Path) -> None:
    def run(seed: int) -> list[str]:
        report = tmp_path / f"r{seed}.json"
        requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}}}]
        requests += [{"jsonrpc": "2.0", "id": 10 + k, "method": "tools/call",
                      "params": {"name": "add", "arguments": {"a": 2, "b": 3}}} for k in range(12)]
        stdin = "".join(json.dumps(r) + "\n" for r in requests).encode()
        done = mcptape("play", str(tape), "--allow-reuse", "--fault", "tool=add,p=0.5,error=-32000:flaky",
                       "--fault-seed", str(seed), f"--json={report}", cwd=tmp_path, stdin=stdin)
        answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
        assert len(answers) == 13
        hits = [a["id"] for a in answers if "error" in a]
        injected: list[str] = json.loads(report.read_text(encoding="utf-8"))["sessions"][0]["injected"]
        assert len(injected) == len(hits)
        return [str(h) for h in hits]

    first = run(7)
    assert run(7) == first
    assert 0 < len(first) < 12  # p=0.5 over 12 calls: some hit, some not
    assert run(8) != first  # another seed, another sequence: the seed is what fixes it


def test_a_fault_rule_that_does_not_parse_is_exit_3_naming_it(tape: Path) -> None:
    done = mcptape("play", str(tape), "--fault", "tool=add,explode", cwd=tape.parent, stdin=b"")
    assert done.returncode == 3
    assert b"explode" in done.stderr and b"unknown item" in done.stderr


# --- 4. fork ---------------------------------------------------------------------------------


async def _agent(params: Any) -> str:
    """A scripted agent: it adds, and on an error from `add` takes its fallback path (echo)."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        try:
            result = await session.call_tool("add", {"a": 2, "b": 3})
            return f"sum {result.content[0].text}"  # type: ignore[union-attr]
        except MCPError as e:
            fallback = await session.call_tool("echo", {"text": "hello, tape"})
            return f"fallback after {e.error.code}: {fallback.content[0].text}"  # type: ignore[union-attr]


def test_a_forked_error_makes_a_scripted_agent_take_its_fallback_path(tape: Path, tmp_path: Path) -> None:
    from mcp import StdioServerParameters

    calls = _show(tape)["timing"]["calls"]
    at = 1 + next(i for i, c in enumerate(calls) if c["call"] == "tools/call add")
    fork = tmp_path / "quota.tape.jsonl"
    done = mcptape("fork", str(tape), "--at", str(at), "--error=-32000:quota exceeded", "-o", str(fork), cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    def agent(path: Path) -> str:
        argv = mcptape_command("play", str(path))
        return anyio.run(_agent, StdioServerParameters(command=argv[0], args=argv[1:]))

    assert agent(tape) == "sum 5"
    assert agent(fork) == "fallback after -32000: hello, tape"
    # Lineage: ls marks it, diff against the parent reads "fork at call N", not drift.
    listed = json.loads(mcptape("ls", str(fork), "--json", cwd=tmp_path).stdout)
    assert listed[0]["fork"]["at"] == at and listed[0]["fork"]["change"] == "error -32000: quota exceeded"
    diff = mcptape("diff", str(tape), str(fork), cwd=tmp_path)
    assert diff.returncode == 0 and f"fork at call {at} (tools/call add)".encode() in diff.stdout
    # A fork edited beyond its declared change is drift again.
    edited = tmp_path / "edited.tape.jsonl"
    edited.write_text(fork.read_text(encoding="utf-8").replace("hello, tape", "hello, edited"), encoding="utf-8")
    # (An edit by hand breaks the fork's seal: diff refuses it, exit 3, unless told it was meant.)
    assert mcptape("diff", str(tape), str(edited), cwd=tmp_path).returncode == 3
    assert mcptape("diff", str(tape), str(edited), "--allow-edited", cwd=tmp_path).returncode in (1, 2)


def test_fork_result_from_a_file_and_drop_and_cut(tape: Path, tmp_path: Path) -> None:
    from mcp import StdioServerParameters

    at = 1 + next(i for i, c in enumerate(_show(tape)["timing"]["calls"]) if c["call"] == "tools/call add")
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"content": [{"type": "text", "text": "55"}], "isError": False}), encoding="utf-8")
    fork = tmp_path / "r.tape.jsonl"
    assert mcptape("fork", str(tape), "--at", str(at), "--result", f"@{result}", "-o", str(fork), cwd=tmp_path).returncode == 0
    argv = mcptape_command("play", str(fork))
    assert anyio.run(_agent, StdioServerParameters(command=argv[0], args=argv[1:])) == "sum 55"
    cut = tmp_path / "cut.tape.jsonl"
    assert mcptape("fork", str(tape), "--at", str(at), "--drop", "--cut", "-o", str(cut), cwd=tmp_path).returncode == 0
    shown = _show(cut)
    assert shown["fork"]["later"] == "cut"
    assert [c["call"] for c in shown["timing"]["calls"]][-1] == "tools/call add"
    assert shown["timing"]["calls"][-1]["answer"] is None
    bad = mcptape("fork", str(tape), "--at", "99", "--drop", "-o", str(tmp_path / "x.tape.jsonl"), cwd=tmp_path)
    assert bad.returncode == 3 and b"--at 99" in bad.stderr


# --- 5. live subsets -------------------------------------------------------------------------


def test_live_tools_go_to_the_live_server_and_the_rest_come_from_the_tape(tape: Path, tmp_path: Path) -> None:
    copy = tmp_path / "t.tape.jsonl"
    copy.write_bytes(tape.read_bytes())
    steps: list[list[Any]] = [["list_tools"], ["call", "add", {"a": 2, "b": 3}], ["call", "echo", {"text": "never recorded"}]]
    for library in ("sdk", "fastmcp"):
        argv = mcptape_command("play", str(copy), "--live-tools", "echo", "--", *CALC)
        got = drive(library, "stdio", json.dumps(argv), steps)
        assert got[1]["content"][0]["text"] == "5"
        assert got[2]["content"][0]["text"] == "never recorded"  # only the live server can say this
    assert copy.read_bytes() == tape.read_bytes()  # live tools are not appended: the tape keeps its own
    # Without --live-tools the same call is a miss: the answer above really came from the live server.
    argv = mcptape_command("play", str(copy))
    with pytest.raises(AssertionError, match="no recorded tools/call"):
        drive("sdk", "stdio", json.dumps(argv), steps)


def test_live_tools_over_http(tape: Path, tmp_path: Path) -> None:
    copy = tmp_path / "t.tape.jsonl"
    copy.write_bytes(tape.read_bytes())
    # mcptape_listening appends `--listen 127.0.0.1:0`: after `--` it would be the server's, so play gets
    # its own before `--`, and the server is a shell that leaves its extra arguments unused.
    server = ["sh", "-c", f'exec "{sys.executable}" "{CALC_SERVER}"', "sh"]
    with mcptape_listening("play", str(copy), "--listen", "127.0.0.1:0", "--live-tools", "echo", "--", *server) as play:
        got = drive("sdk", "http", play.url, [["call", "echo", {"text": "live over http"}], ["call", "add", {"a": 2, "b": 3}]])
    assert [g["content"][0]["text"] for g in got] == ["live over http", "5"]
    assert "live: tools/call echo" in play.stderr


# --- 6. placeholders served as values --------------------------------------------------------

PLACEHOLDER_CONFIG = CONFIG_HEAD + """\
  - name: stamped
    server: calc
    steps:
      - call: echo
        arguments: {{text: "2026-11-29T10:00:00Z"}}
      - call: echo
        arguments: {{text: "ids 123e4567-e89b-12d3-a456-426614174000 9f2c4567-e89b-42d3-a456-426614174001 123e4567-e89b-12d3-a456-426614174000"}}
normalize:
  - pattern: "2026-11-29T10:00:00Z"
    replace: "<TIMESTAMP>"
"""


def test_a_goldens_placeholders_reach_the_client_as_valid_values(tmp_path: Path) -> None:
    (tmp_path / "mcptape.yml").write_text(PLACEHOLDER_CONFIG.format(python=sys.executable, calc=CALC_SERVER),
                                          encoding="utf-8")
    done = mcptape("ci", "--update-golden", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    golden = tmp_path / "tapes" / "stamped.tape.jsonl"
    assert "<TIMESTAMP>" in golden.read_text(encoding="utf-8") and "<UUID> <UUID#2> <UUID>" in golden.read_text(encoding="utf-8")
    steps: list[list[Any]] = [["call", "echo", {"text": "2026-11-29T10:00:00Z"}],
             ["call", "echo", {"text": "ids 123e4567-e89b-12d3-a456-426614174000 9f2c4567-e89b-42d3-a456-426614174001 "
                                       "123e4567-e89b-12d3-a456-426614174000"}]]
    for library in ("sdk", "fastmcp"):
        # The requests as recorded (the request's own date is a placeholder too): --ignore-arg lets them match.
        argv = mcptape_command("play", str(golden), "--ignore-arg", "text")
        got = [g["content"][0]["text"] for g in drive(library, "stdio", json.dumps(argv), steps)]
        assert datetime.fromisoformat(got[0]).year == 2025
        # Two ids that differed when recorded differ when played; the one said twice stays one.
        assert got[1] == "ids 00000000-0000-4000-8000-000000000000 00000000-0000-4000-8000-000000000001 " \
                         "00000000-0000-4000-8000-000000000000"
    kept = mcptape_command("play", str(golden), "--ignore-arg", "text", "--keep-placeholders")
    assert drive("sdk", "stdio", json.dumps(kept), steps)[0]["content"][0]["text"] == "<TIMESTAMP>"
