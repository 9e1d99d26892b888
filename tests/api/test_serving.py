"""mcptape.replay, mcptape.record and mcptape.connect (mcptape/api/serving.py), used as a user's code
uses them: the official SDK's ClientSession and FastMCP's Client against the Endpoint over stdio,
HTTP and memory, the calc fixture server live. What a user relies on: the same answers on every
transport, failures as the documented exceptions (before the block for what cannot be served, at
its end for what the tape could not answer), nothing printed, the tape never changed by a replay."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import mcp.client.stdio  # noqa: F401 - first here: its stdio_client binds sys.stderr as a default when imported,
import pytest  # and a test's capfd stream is closed after that test

import mcptape
from mcptape.tape.seal import check as check_seal

GOLDEN = "tapes/arithmetic.tape.jsonl"
CALC = [sys.executable, "../servers/calc_server.py"]


async def calls(endpoint: mcptape.Endpoint, *pairs: tuple[int, int], swallow: bool = False) -> list[str]:
    """The official SDK's client adding each pair; a failed call's error, as text, when swallowed."""
    out = []
    async with endpoint.client_session() as session:
        await session.initialize()
        for a, b in pairs:
            try:
                result = await session.call_tool("add", {"a": a, "b": b})
                out.append(result.content[0].text)  # type: ignore[union-attr]
            except Exception as e:
                if not swallow:
                    raise
                out.append(f"error: {e}")
    return out


def add(endpoint: mcptape.Endpoint, *pairs: tuple[int, int], swallow: bool = False) -> list[str]:
    return asyncio.run(calls(endpoint, *pairs, swallow=swallow))


@pytest.mark.parametrize("transport", ["stdio", "http", "memory"])
def test_every_transport_answers_as_the_tape_and_a_miss_raises_at_the_end(example: Path, transport: Any,
                                                                            capfd: pytest.CaptureFixture[str]) -> None:
    before = (example / GOLDEN).read_bytes()
    with mcptape.replay(GOLDEN, transport=transport) as endpoint:
        assert add(endpoint, (2, 3)) == ["5"]
    assert [(r.clean, r.answered) for r in endpoint.reports] == [(True, 3)]
    # The control: a call the tape lacks is an error answer to the client, and ReplayMiss at the end.
    with pytest.raises(mcptape.ReplayMiss) as missed, mcptape.replay(GOLDEN, transport=transport) as endpoint:
        said = add(endpoint, (2, 3), (2, 4), swallow=True)
    assert said[0] == "5" and said[1].startswith("error: mcptape play: no recorded tools/call add")
    assert len(missed.value.misses) == 1 and missed.value.misses[0].startswith('tools/call add {"a":2,"b":4}: nearest:')
    assert missed.value.exit_code == 1
    assert (example / GOLDEN).read_bytes() == before
    assert capfd.readouterr() == ("", "")  # the library never prints (the stdio child's lines are logged)


def test_fastmcp_clients_over_stdio_and_http(example: Path) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    async def echo(target: Any) -> str:
        async with Client(target) as client:
            result = await client.call_tool("echo", {"text": "hello, tape"})
            return str(result.content[0].text)  # type: ignore[union-attr]

    with mcptape.replay(GOLDEN) as endpoint:
        assert endpoint.command is not None
        assert asyncio.run(echo(StdioTransport(command=endpoint.command, args=endpoint.args))) == "hello, tape"
    with mcptape.replay(GOLDEN, transport="http") as endpoint:
        assert asyncio.run(echo(endpoint.url)) == "hello, tape"
    # FastMCP probes server/discover first; the legacy tape refuses it as its server did, then answers.
    assert all(r.clean for r in endpoint.reports) and "server/discover" in endpoint.reports[0].refused


def test_what_cannot_be_served_raises_before_the_block_and_writes_nothing(example: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"tape": "tapes/missing.tape.jsonl"}, mcptape.TapeError, "no tape (record mode none plays only)"),
        ({"faults": ["tool=add,bogus"]}, mcptape.ConfigError, "unknown item 'bogus'"),
        ({"pace": "slowly"}, mcptape.ConfigError, "--pace 'slowly'"),
        ({"record_mode": "sometimes"}, mcptape.ConfigError, "expected one of none, once, new_episodes, all"),
        ({"lenient_mode": True}, mcptape.ConfigError, "unknown option(s) lenient_mode"),
        ({"faults": "tool=add,error=-1"}, mcptape.ConfigError, "give a list of strings"),
        ({"fallback": True}, mcptape.ConfigError, "fallback needs the live server"),
        ({"server": CALC, "url": "http://127.0.0.1:9/mcp"}, mcptape.ConfigError, "not both"),
        ({"transport": "carrier-pigeon"}, mcptape.ConfigError, "transport 'carrier-pigeon'"),
        ({"fork": {"at": 99, "error": "-1:x"}}, mcptape.McptapeError, "99"),
        ({"tape": "tapes/new.tape.jsonl", "record_mode": "once", "server": CALC, "fork": {"at": 3, "drop": True}},
         mcptape.ConfigError, "fork= plays a fork of a recorded tape"),
    ]
    listing = sorted(p.name for p in (example / "tapes").iterdir())
    for kwargs, error, words in cases:
        tape = kwargs.pop("tape", GOLDEN)
        with pytest.raises(error) as raised, mcptape.replay(tape, **kwargs):
            pytest.fail(f"the block ran for {kwargs}")
        assert words in str(raised.value), (kwargs, str(raised.value))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(mcptape.McptapeError, match="refusing to record"), \
            mcptape.replay("tapes/new.tape.jsonl", record_mode="once", server=CALC):
        pytest.fail("recorded under CI=true")
    assert sorted(p.name for p in (example / "tapes").iterdir()) == listing


def test_a_block_that_raises_keeps_its_own_exception(example: Path) -> None:
    """A miss the block's own failure caused is not raised over it: the caller's exception is the news."""
    with pytest.raises(KeyError), mcptape.replay(GOLDEN, transport="memory") as endpoint:
        add(endpoint, (2, 4), swallow=True)
        raise KeyError("the agent's own bug")


def test_record_then_replay_offline_over_stdio_and_http(example: Path, tmp_path: Path,
                                                        capfd: pytest.CaptureFixture[str]) -> None:
    stdio = tmp_path / "stdio.tape.jsonl"
    with mcptape.record(stdio, CALC) as endpoint:
        assert endpoint.action == "record" and add(endpoint, (2, 3), (20, 22)) == ["5", "42"]
    assert check_seal(stdio.read_bytes()).state == "sealed"
    with mcptape.replay(stdio, transport="memory") as endpoint:
        assert add(endpoint, (2, 3), (20, 22)) == ["5", "42"]
    # HTTP: rec's recording proxy in front of a live streamable HTTP server, in this process.
    from tests.integration.http_helpers import HTTP_CALC, background, free_port

    port = free_port()
    http = tmp_path / "http.tape.jsonl"
    with background([sys.executable, str(HTTP_CALC), "streamable-http", "--port", str(port)], port), \
            mcptape.record(http, f"http://127.0.0.1:{port}/mcp") as endpoint:
        assert endpoint.url is not None and endpoint.url.endswith("/mcp") and str(port) not in endpoint.url
        assert add(endpoint, (2, 3)) == ["5.0"]  # this server's add answers a float
    with mcptape.replay(http, transport="memory") as endpoint:
        assert add(endpoint, (2, 3)) == ["5.0"]
    assert capfd.readouterr() == ("", "")
    # A recorder no client connected to recorded nothing, and says so.
    with pytest.raises(mcptape.McptapeError, match="no client connected"), mcptape.record(tmp_path / "none.tape.jsonl", CALC):
        pass


def test_a_secret_of_the_servers_environment_never_reaches_the_tape(example: Path, tmp_path: Path) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    secret = "hunter2-" + "Zq9x" * 8
    tape = tmp_path / "secret.tape.jsonl"

    async def echo(endpoint: mcptape.Endpoint) -> str:
        params = endpoint.stdio_parameters(env={"PATH": os.environ["PATH"], "CALC_API_TOKEN": secret})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("echo", {"text": f"token {secret}"})
            return str(result.content[0].text)  # type: ignore[union-attr]

    with mcptape.record(tape, CALC) as endpoint:
        assert asyncio.run(echo(endpoint)) == f"token {secret}"  # the wire is untouched
    text = tape.read_text(encoding="utf-8")
    assert secret not in text and "token <REDACTED:env.CALC_API_TOKEN>" in text


def test_record_modes_record_once_then_play_and_new_episodes_appends(example: Path, tmp_path: Path) -> None:
    tape = tmp_path / "modes.tape.jsonl"
    with mcptape.replay(tape, record_mode=mcptape.RecordMode.ONCE, server=CALC) as endpoint:
        assert endpoint.action == "record" and add(endpoint, (2, 3)) == ["5"]
    recorded = tape.read_bytes()
    with mcptape.replay(tape, record_mode="once", server=["false"]) as endpoint:  # plays: the server is not used
        assert endpoint.action == "play" and add(endpoint, (2, 3)) == ["5"]
    assert tape.read_bytes() == recorded
    with mcptape.replay(tape, record_mode="new_episodes", server=CALC) as endpoint:
        assert endpoint.action == "fallback" and add(endpoint, (2, 3), (20, 22)) == ["5", "42"]
    assert endpoint.reports[0].forwarded and tape.read_bytes() != recorded
    with mcptape.replay(tape, transport="memory") as endpoint:  # what went live is on the tape now
        assert add(endpoint, (20, 22)) == ["42"]


def test_the_agent_lab_options(example: Path) -> None:
    with mcptape.replay(GOLDEN, transport="memory", faults=["tool=add,error=-32000:quota exceeded"]) as endpoint:
        said = add(endpoint, (2, 3), swallow=True)
    assert said == ["error: quota exceeded"] and endpoint.reports[0].injected
    with mcptape.replay(GOLDEN, transport="memory", fork={"at": 3, "result": {"content": [{"type": "text", "text": "6"}]}}) as endpoint:
        assert add(endpoint, (2, 3)) == ["6"]
    with mcptape.replay(GOLDEN, transport="memory", live_tools=["add"], server=CALC) as endpoint:
        assert add(endpoint, (7, 7)) == ["14"]  # not on the tape: answered live
    assert endpoint.reports[0].live_tools_calls == ["tools/call add"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with mcptape.replay(GOLDEN, transport="memory", pace="recorded") as endpoint:
            assert add(endpoint, (2, 3)) == ["5"]
    assert [w.category for w in caught] == [mcptape.McptapeWarning] and caught[0].filename == __file__


def test_connect_is_the_sdk_session_in_process(example: Path) -> None:
    async def run() -> str:
        async with mcptape.connect(GOLDEN, lenient=True) as session:
            await session.initialize()
            result = await session.call_tool("echo", {"text": "hello, tape"})
            return str(result.content[0].text)  # type: ignore[union-attr]

    assert asyncio.run(run()) == "hello, tape"


def test_the_pytest_plugin_and_the_library_share_the_record_modes() -> None:
    from mcptape import pytest_plugin

    assert tuple(mode.value for mode in mcptape.RecordMode) == pytest_plugin.RECORD_MODES
    table = {(mode.value, exists): mode.action(exists) for mode in mcptape.RecordMode for exists in (False, True)}
    assert table == {("none", False): "play", ("none", True): "play", ("once", False): "record", ("once", True): "play",
                     ("new_episodes", False): "record", ("new_episodes", True): "fallback",
                     ("all", False): "record", ("all", True): "record"}
    assert mcptape.RecordMode("all") == "all" and json.dumps(mcptape.RecordMode.ONCE) == '"once"'
