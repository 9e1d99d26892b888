"""`mcptape play` against the official MCP SDK client: same results as the live server, offline.

Each test records a real session of the SDK client (`stdio_client` + `ClientSession`) with a
real server through `mcptape rec`, then runs the same client against `python -m mcptape play
TAPE` with no server process and compares every result. The calc session is also recorded by
the small tee at the bottom of this file (run as a script between client and server, with the
same EventBuilder + TapeWriter), so a play failure can be told apart from a rec failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # when run as the tee script
    sys.path.insert(0, str(ROOT))

from mcptape.tape.events import C2S, S2C, EventBuilder, exit_event, stderr_event  # noqa: E402
from mcptape.tape.format import TapeWriter, make_header  # noqa: E402
from mcptape.tape.reader import read_tape  # noqa: E402
from tests.conftest import node_server  # noqa: E402

CALC_SERVER = ROOT / "fixtures" / "servers" / "calc_server.py"
SESSION_TIMEOUT = 60.0

Session = Callable[[Any], Awaitable[dict[str, Any]]]


def _params(command: list[str]) -> Any:
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=command[0], args=command[1:], env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))


def _tee(tape: Path, command: list[str]) -> list[str]:
    return [sys.executable, str(Path(__file__)), "--tee", str(tape), "--", *command]


def _play(tape: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mcptape", "play", str(tape), *extra]


def run_session(command: list[str], session: Session, errlog: Path | None = None, **client_kwargs: Any) -> dict[str, Any]:
    """Run `session(client)` with the SDK client over stdio against `command`; its results as JSON data.

    The server's stderr (play's report) goes to `errlog` if given.
    """
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def main() -> dict[str, Any]:
        with (
            open(errlog or os.devnull, "w", encoding="utf-8") as err,
            anyio.fail_after(SESSION_TIMEOUT),
        ):
            async with (
                stdio_client(_params(command), errlog=err) as (read, write),
                ClientSession(read, write, **client_kwargs) as client,
            ):
                return await session(client)

    return anyio.run(main)


def _dump(obj: Any) -> Any:
    return obj.model_dump(mode="json", by_alias=True, exclude_none=True)


async def calc_session(client: Any) -> dict[str, Any]:
    from mcp import MCPError

    out: dict[str, Any] = {}
    init = await client.initialize()
    out["server"] = _dump(init.server_info)
    out["tools"] = _dump(await client.list_tools())
    out["add"] = _dump(await client.call_tool("add", {"a": 2, "b": 3}))
    try:
        await client.call_tool("divide", {"a": 1, "b": 0})
        out["divide"] = "no error"
    except MCPError as e:
        out["divide"] = {"code": e.code, "message": e.error.message}
    out["resource"] = _dump(await client.read_resource("calc://constants"))
    out["prompt"] = _dump(await client.get_prompt("explain", {"topic": "sums"}))
    out["echo"] = _dump(await client.call_tool("echo", {"text": "héllo ✓"}))
    return out


def _rec(tape: Path, command: list[str]) -> list[str]:
    return [sys.executable, "-m", "mcptape", "rec", "--out", str(tape), "--", *command]


def _record(
    tmp_path: Path, name: str, command: list[str], session: Session, recorder: str = "rec", **kw: Any
) -> tuple[Path, dict[str, Any]]:
    tape = tmp_path / f"{name}.{recorder}.tape.jsonl"
    wrapped = _rec(tape, command) if recorder == "rec" else _tee(tape, command)
    recorded = run_session(wrapped, session, **kw)
    assert read_tape(tape).complete, f"the tee did not finish {tape}"
    return tape, recorded


@pytest.mark.parametrize("recorder", ["rec", "tee"])
def test_sdk_client_gets_the_same_results_from_play_as_from_the_calc_server(tmp_path: Path, recorder: str) -> None:
    command = [sys.executable, str(CALC_SERVER)]
    direct = run_session(command, calc_session)
    tape, recorded = _record(tmp_path, "calc", command, calc_session, recorder)
    assert recorded == direct
    assert direct["add"]["content"][0]["text"] == "5"
    assert direct["divide"] == {"code": -32602, "message": "Division by zero"}

    log = tmp_path / "play.log"
    replayed = run_session(_play(tape), calc_session, errlog=log)
    assert replayed == direct
    report = log.read_text(encoding="utf-8")
    assert "answered from the tape, clean" in report and "never asked" not in report


def _play_proc(tape: Path, lines: list[bytes], *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(_play(tape, *extra), input=b"".join(lines), capture_output=True, timeout=30, cwd=ROOT)


def test_play_reports_a_drifted_client_call_and_exits_1(tmp_path: Path) -> None:
    tape, _ = _record(tmp_path, "calc", [sys.executable, str(CALC_SERVER)], calc_session)

    async def drifted(client: Any) -> dict[str, Any]:
        from mcp import MCPError

        await client.initialize()
        try:
            await client.call_tool("add", {"a": 2, "b": 4})
        except MCPError as e:
            return {"code": e.code, "message": e.error.message}
        return {}

    got = run_session(_play(tape), drifted)
    assert got["code"] == -32603
    assert 'tools/call add {"a":2,"b":3}' in got["message"]
    assert "arguments.b differs: 3 recorded, 4 asked" in got["message"]
    # The same drift, through the command directly, gives exit 1 and the report on stderr.
    proc = _play_proc(
        tape,
        [b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":4}}}\n'],
    )
    assert proc.returncode == 1
    assert b"arguments.b differs" in proc.stderr and b"never asked" in proc.stderr


# --- a redacted tape: the recorder replaced the token, the live client sends the real one ------

# GitHub-shaped, generated per run: the recorder's redactor knows the shape, nothing knows the value.
LIVE_TOKEN = "ghp_" + "".join(__import__("secrets").choice("ABCDEFGHJKMNPQRSTUVWXYZabcdefghjkmnpqrstuvwxyz23456789") for _ in range(36))


async def token_session(client: Any) -> dict[str, Any]:
    await client.initialize()
    return {"echo": _dump(await client.call_tool("echo", {"text": f"deploy with {LIVE_TOKEN} as alice"}))}


def _echo_line(text: str) -> bytes:
    import json

    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}
    return json.dumps(msg).encode() + b"\n"


def test_play_of_a_redacted_tape_answers_the_real_secret_and_never_echoes_it(tmp_path: Path) -> None:
    tape, recorded = _record(tmp_path, "token", [sys.executable, str(CALC_SERVER)], token_session)
    assert LIVE_TOKEN in str(recorded)  # the live server echoed it to the client
    text = tape.read_text(encoding="utf-8")
    assert LIVE_TOKEN not in text and "<REDACTED:github-token" in text  # ...and rec redacted it

    # The SDK client sends the real token: answered from the tape (with the redacted echo).
    replayed = run_session(_play(tape), token_session)
    assert "deploy with <REDACTED:github-token" in str(replayed["echo"])

    init = (
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}\n'
    )
    same = _play_proc(tape, [init, _echo_line(f"deploy with {LIVE_TOKEN} as alice")])
    assert same.returncode == 0, same.stderr
    assert b"answered from the tape, clean" in same.stderr and b"deploy with <REDACTED:github-token" in same.stdout

    # The same token, another change elsewhere: a miss whose message names the change, not the token.
    other = _play_proc(tape, [init, _echo_line(f"deploy with {LIVE_TOKEN} as bob")])
    assert other.returncode == 1
    assert b"replay-miss" in other.stdout and b"<REDACTED:github-token" in other.stdout
    assert LIVE_TOKEN.encode() not in other.stdout and LIVE_TOKEN.encode() not in other.stderr


# --- server-everything: overlapping ids, roots/list on a timer, sampling, list_changed ----


def _everything() -> list[str]:
    return ["node", str(node_server("everything")), "stdio"]


# What the server asked the client for, in order: proves replay re-issued its requests.
ASKED: list[str] = []


async def _sampling(context: Any, params: Any) -> Any:
    from mcp import CreateMessageResult
    from mcp.types import TextContent

    ASKED.append("sampling")
    asked = params.messages[0].content.text if params.messages else ""
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text=f"canned answer to {asked}"), model="canned")


async def _roots(context: Any) -> Any:
    from mcp.types import ListRootsResult, Root

    ASKED.append("roots")
    return ListRootsResult(roots=[Root(uri="file:///project", name="project")])  # type: ignore[arg-type]


async def everything_session(client: Any) -> dict[str, Any]:
    import anyio

    out: dict[str, Any] = {}
    await client.initialize()
    # Let the server's 350 ms roots/list timer fire before the next call, as in every run.
    await anyio.sleep(0.8)
    tools = await client.list_tools()
    out["tools"] = sorted(t.name for t in tools.tools)
    out["echo"] = _dump(await client.call_tool("echo", {"message": "hi"}))
    out["sum"] = _dump(await client.call_tool("get-sum", {"a": 2, "b": 40}))
    out["sampling"] = _dump(await client.call_tool("trigger-sampling-request", {"prompt": "2+2?", "maxTokens": 20}))
    out["roots"] = _dump(await client.call_tool("get-roots-list", {}))
    return out


def test_sdk_client_gets_the_same_results_from_play_as_from_server_everything(tmp_path: Path) -> None:
    command = _everything()
    kw: dict[str, Any] = {"sampling_callback": _sampling, "list_roots_callback": _roots}
    direct = run_session(command, everything_session, **kw)
    assert "trigger-sampling-request" in direct["tools"]
    assert "canned answer to" in str(direct["sampling"])
    assert "file:///project" in str(direct["roots"])

    tape, recorded = _record(tmp_path, "everything", command, everything_session, **kw)
    assert recorded == direct
    events = read_tape(tape).events
    server_requests = [e["method"] for e in events if e.get("dir") == S2C and e.get("kind") == "request"]
    assert "roots/list" in server_requests and "sampling/createMessage" in server_requests

    # Replay re-issues roots/list and sampling to the client and waits for its answers.
    ASKED.clear()
    log = tmp_path / "play.log"
    replayed = run_session(_play(tape), everything_session, errlog=log, **kw)
    assert replayed == direct
    assert ASKED == ["roots", "sampling"]
    report = log.read_text(encoding="utf-8")
    assert "answered from the tape, clean" in report, report


def test_play_of_server_everything_without_the_recorded_capabilities_warns(tmp_path: Path) -> None:
    command = _everything()
    kw: dict[str, Any] = {"sampling_callback": _sampling, "list_roots_callback": _roots}
    tape, recorded = _record(tmp_path, "everything", command, everything_session, **kw)

    async def bare(client: Any) -> dict[str, Any]:
        await client.initialize()
        return {"n": len((await client.list_tools()).tools)}

    proc_lines = [
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"bare","version":"0"}}}\n',
    ]
    proc = _play_proc(tape, proc_lines)
    assert b"capabilities" in proc.stderr and b"server-everything" in proc.stderr
    # The tape's tool list is still the one recorded with the capabilities: replay never goes live.
    assert run_session(_play(tape), bare)["n"] == len(recorded["tools"])


# --- the tee: records a session between a client and a server, as a script ----------------


def _tee_main(argv: list[str]) -> int:
    out = Path(argv[argv.index("--tee") + 1])
    command = argv[argv.index("--") + 1 :]
    builder = EventBuilder()
    writer = TapeWriter(out, make_header(out.name.split(".")[0], server={"command": [Path(c).name for c in command]}))
    lock = threading.Lock()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    client_out = sys.stdout.buffer

    def record(direction: str, line: bytes) -> None:
        # Recorded before forwarding, so a reaction can never precede its cause on the tape.
        with lock:
            writer.write(builder.line(direction, line.rstrip(b"\n")))

    def server_to_client() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            record(S2C, line)
            client_out.write(line)
            client_out.flush()

    def server_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with lock:
                writer.write(stderr_event(line))

    threads = [threading.Thread(target=server_to_client), threading.Thread(target=server_stderr)]
    for t in threads:
        t.start()
    for line in sys.stdin.buffer:
        record(C2S, line)
        proc.stdin.write(line)
        proc.stdin.flush()
    proc.stdin.close()
    try:
        code = proc.wait(0.5)
    except subprocess.TimeoutExpired:  # Node servers with a pending request ignore stdin EOF
        proc.terminate()
        code = proc.wait(5)
    for t in threads:
        t.join(5)
    with lock:
        writer.write(exit_event(code))
        writer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(_tee_main(sys.argv))
