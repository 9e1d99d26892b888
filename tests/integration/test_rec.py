"""`mcptape rec` as a user runs it: a real mcptape process between real clients and servers.

Clients: the official `mcp` SDK client, and a raw JSON-lines client (to compare wire bytes
exactly and to misbehave on purpose). Servers: our calc fixture and server-everything (npm).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import queue
import random
import shutil
import signal
import string
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcptape.tape.reader import read_tape, written_verbatim
from tests.conftest import FIXTURES, ROOT, calc_command, mcptape_command, node_server

WAIT = 30  # seconds; every wait on a process is bounded by this


# --------------------------------------------------------------------------------------------
# helpers


def rec_command(tape: Path, server: list[str], *extra: str) -> list[str]:
    return mcptape_command("rec", "--out", str(tape), *extra, "--", *server)


class RawClient:
    """A JSON-lines client over a real subprocess; keeps every stdout byte it received."""

    def __init__(self, command: list[str], cwd: Path = ROOT, extra_env: dict[str, str] | None = None) -> None:
        # mcptape is importable from the repo root, not installed: elsewhere it needs the path.
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            **(extra_env or {}),
        }
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env
        )
        self.received = bytearray()
        self.stderr = bytearray()
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._threads = [
            threading.Thread(target=self._read_out, daemon=True),
            threading.Thread(target=self._read_err, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.received += line
            self._lines.put(line)
        self._lines.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        err = self.proc.stderr
        for chunk in iter(lambda: err.read1(65536), b""):  # type: ignore[attr-defined]
            self.stderr += chunk

    def send(self, msg: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        data = msg if isinstance(msg, bytes) else json.dumps(msg).encode() + b"\n"
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, msg_id: int, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def line(self, timeout: float = WAIT) -> bytes | None:
        """The next stdout line; None at EOF."""
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise AssertionError(
                f"no line within {timeout}s; stderr: {self.stderr.decode(errors='replace')}"
            ) from None

    def message(self, timeout: float = WAIT) -> dict[str, Any]:
        """The next line that parses as JSON (garbage lines are skipped here, checked elsewhere)."""
        while True:
            raw = self.line(timeout)
            assert raw is not None, f"unexpected EOF; stderr: {self.stderr.decode(errors='replace')}"
            try:
                return json.loads(raw)  # type: ignore[no-any-return]
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout: float = WAIT) -> int:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        for t in self._threads:
            t.join(timeout)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)


def initialize(client: RawClient) -> dict[str, Any]:
    client.request(
        0,
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    )
    answer = client.message()
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return answer


def call(client: RawClient, msg_id: int, tool: str, **arguments: Any) -> None:
    client.request(msg_id, "tools/call", {"name": tool, "arguments": arguments})


def messages(tape_path: Path) -> list[dict[str, Any]]:
    return [
        e
        for e in read_tape(tape_path).events
        if e["kind"] in ("request", "notification", "response", "error")
    ]


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] for e in events]


# --------------------------------------------------------------------------------------------
# the official SDK client: same results through rec as directly


async def _sdk_session(command: list[str]) -> dict[str, Any]:
    from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(ROOT))
    out: dict[str, Any] = {}
    with anyio.fail_after(WAIT):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            out["init"] = init.model_dump(mode="json", exclude_none=True)
            out["tools"] = (await session.list_tools()).model_dump(mode="json", exclude_none=True)
            out["add"] = (await session.call_tool("add", {"a": 2, "b": 3})).model_dump(mode="json")
            try:
                await session.call_tool("divide", {"a": 1, "b": 0})
                out["divide"] = "no error"
            except MCPError as e:
                out["divide"] = {"code": e.error.code, "message": e.error.message}
            out["resource"] = (await session.read_resource("calc://constants")).model_dump(mode="json")
            out["prompt"] = (await session.get_prompt("explain", {"topic": "sums"})).model_dump(mode="json")
    return out


def test_sdk_client_gets_the_same_results_through_rec(tmp_path: Path) -> None:
    tape = tmp_path / "calc.tape.jsonl"
    direct = anyio.run(_sdk_session, calc_command())
    recorded = anyio.run(_sdk_session, rec_command(tape, calc_command(), "--name", "arith"))
    assert recorded == direct
    assert direct["divide"] == {"code": -32602, "message": "Division by zero"}
    assert direct["add"]["content"][0]["text"] == "5"

    t = read_tape(tape)
    assert t.complete
    assert t.header["name"] == "arith"
    assert t.header["transport"] == "stdio"
    # the header says which server, with the home directory redacted (the interpreter may live there)
    home = os.path.expanduser("~")
    assert t.header["server"]["command"] == [
        "<HOME>" + a[len(home) :] if a.startswith(home + "/") else a for a in calc_command()
    ]
    msgs = messages(tape)
    calls = [(e["dir"], e["kind"], e.get("method")) for e in msgs]
    assert calls == [
        ("c2s", "request", "initialize"),
        ("s2c", "response", "initialize"),
        ("c2s", "notification", "notifications/initialized"),
        ("c2s", "request", "tools/list"),
        ("s2c", "response", "tools/list"),
        ("c2s", "request", "tools/call"),
        ("s2c", "response", "tools/call"),
        ("c2s", "request", "tools/call"),
        ("s2c", "error", "tools/call"),
        ("c2s", "request", "resources/read"),
        ("s2c", "response", "resources/read"),
        ("c2s", "request", "prompts/get"),
        ("s2c", "response", "prompts/get"),
    ]
    # Every answer echoes what it answers, so each line stands alone.
    assert msgs[6]["params"] == {"name": "add", "arguments": {"a": 2, "b": 3}}
    assert msgs[8]["params"]["name"] == "divide"
    assert msgs[8]["msg"]["error"]["code"] == -32602
    assert msgs[10]["params"] == {"uri": "calc://constants"}
    assert t.events[-1] == {"kind": "exit", "code": 0}
    assert t.footer is not None
    assert t.footer == {"mcptape": "end", "events": len(t.events), "timing": t.footer["timing"],
                        "sha256": t.footer["sha256"], "lines": t.footer["lines"]}
    # The timing (tape/timing.py): when each event crossed the wire, ms since the first; the exit did not.
    at = t.footer["timing"]["at"]
    assert len(at) == len(t.events) and at[0] == 0.0 and at[-1] is None
    assert all(isinstance(x, float) for x in at[:-1]) and at[:-1] == sorted(at[:-1])
    assert written_verbatim(tape.read_bytes())  # the digest covers what rec wrote: play may trust its bytes


# --------------------------------------------------------------------------------------------
# wire fidelity: the client receives exactly the bytes the server wrote


def _fault_script(client: RawClient) -> list[bytes]:
    """A session through the fault tools; returns the raw lines answering each step."""
    initialize(client)
    call(client, 1, "add", a=2, b=3)
    call(client, 2, "garbage")
    call(client, 3, "latin1")
    call(client, 4, "echo", text="héllo ✓ \u2028 end")
    call(client, 5, "big", size=20_000_000)
    got: list[bytes] = []
    while len([g for g in got if g.startswith(b"{")]) < 5:
        line = client.line()
        assert line is not None
        got.append(line)
    client.close_stdin()
    return got


def test_wire_bytes_are_forwarded_unchanged(tmp_path: Path) -> None:
    tape = tmp_path / "faults.tape.jsonl"
    direct = RawClient(calc_command())
    _fault_script(direct)
    assert direct.wait() == 0
    through = RawClient(rec_command(tape, calc_command()))
    _fault_script(through)
    assert through.wait() == 0, through.stderr.decode(errors="replace")

    assert len(through.received) > 20_000_000
    assert hashlib.sha256(through.received).digest() == hashlib.sha256(direct.received).digest()
    assert b"this is not json\n" in through.received
    assert b"caf\xe9 is not utf-8\n" in through.received

    t = read_tape(tape)
    assert t.complete
    garbage = [e for e in t.events if e["kind"] == "garbage"]
    assert garbage[0] == {"kind": "garbage", "dir": "s2c", "text": "this is not json", "bytes": 16}
    assert base64.b64decode(garbage[1]["b64"]) == b"caf\xe9 is not utf-8"
    answers = {e["id"]: e for e in t.events if e["kind"] == "response"}
    assert answers[4]["msg"]["result"]["content"][0]["text"] == "héllo ✓ \u2028 end"
    big = answers[5]
    assert big["params"] == {"name": "big", "arguments": {"size": 20_000_000}}
    assert big["msg"]["result"]["content"][0]["text"] == "x" * 20_000_000
    assert t.events[-1] == {"kind": "exit", "code": 0}


def test_big_request_and_big_answer_at_once_do_not_deadlock(tmp_path: Path) -> None:
    """A 6 MB request sent while a 20 MB answer streams back: a direct pipe copes, so must rec."""
    tape = tmp_path / "both.tape.jsonl"
    client = RawClient(rec_command(tape, calc_command()))
    initialize(client)
    call(client, 1, "big", size=20_000_000)
    call(client, 2, "echo", text="y" * 6_000_000)
    first, second = client.message(), client.message()
    assert len(first["result"]["content"][0]["text"]) == 20_000_000
    assert len(second["result"]["content"][0]["text"]) == 6_000_000
    client.close_stdin()
    assert client.wait() == 0
    assert read_tape(tape).complete


# --------------------------------------------------------------------------------------------
# endings


def test_server_crash_mid_session(tmp_path: Path) -> None:
    tape = tmp_path / "crash.tape.jsonl"
    client = RawClient(rec_command(tape, calc_command()))
    initialize(client)
    call(client, 1, "add", a=1, b=1)
    assert client.message()["result"]["content"][0]["text"] == "2"
    call(client, 2, "crash")
    assert client.line() is None  # the client sees EOF, not a hang
    assert client.wait() == 3
    assert b"calc-fixture: crashing on purpose" in client.stderr  # server stderr passes through

    t = read_tape(tape)
    assert t.complete
    kinds_ = kinds(t.events)
    assert {"kind": "stderr", "dir": "s2c", "text": "calc-fixture: crashing on purpose"} in t.events
    assert {"kind": "exit", "code": 3} in t.events
    assert {"kind": "note", "what": "server_exited_mid_session"} in t.events
    unanswered = next(e for e in t.events if e.get("what") == "unanswered")
    assert unanswered["detail"] == [{"dir": "c2s", "id": 2, "method": "tools/call"}]
    assert kinds_.index("exit") > kinds_.index("response")


def test_client_closing_early_shuts_the_server_down(tmp_path: Path) -> None:
    tape = tmp_path / "early.tape.jsonl"
    client = RawClient(rec_command(tape, calc_command()))
    initialize(client)
    call(client, 1, "hang")
    time.sleep(0.2)  # let the call reach the server; correctness does not depend on it
    client.close_stdin()
    assert client.line() is None
    assert client.wait() == 0

    t = read_tape(tape)
    assert t.complete
    assert [e for e in t.events if e.get("what") == "unanswered"][0]["detail"] == [
        {"dir": "c2s", "id": 1, "method": "tools/call"}
    ]
    assert t.events[-1] == {"kind": "exit", "code": 0}


def _children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry.name))
    return kids


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_server_and_writer_get_their_own_process_groups_in_recs_session(tmp_path: Path) -> None:
    """Own groups (shutdown signals the server's; a client killing rec's group spares the writer),
    one session: a session is a scheduling group under Linux autogroups, and a writer or server
    in a session of its own competed with the wire at full weight (ms stalls, see _step_aside)."""
    client = RawClient(rec_command(tmp_path / "s.tape.jsonl", calc_command()))
    try:
        initialize(client)
        rec = client.proc.pid
        kids = _children(rec)
        assert len(kids) == 2, kids  # the server and the tape writer
        for kid in kids:
            assert os.getsid(kid) == os.getsid(rec)
            assert os.getpgid(kid) == kid != os.getpgid(rec)
    finally:
        client.close_stdin()
        assert client.wait() == 0


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupting_rec_finishes_the_tape(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    tape = tmp_path / "intr.tape.jsonl"
    client = RawClient(rec_command(tape, calc_command()))
    initialize(client)
    call(client, 1, "hang")
    time.sleep(0.2)
    client.proc.send_signal(sig)
    assert client.line() is None
    assert client.wait() == code

    t = read_tape(tape)
    assert t.complete
    assert {"kind": "note", "what": "interrupted", "detail": {"signal": sig.name}} in t.events
    assert any(e["kind"] == "exit" for e in t.events)


def three_adds_through_rec(tape: Path) -> RawClient:
    """A live rec session on calc that has initialized and had three `add` calls answered."""
    client = RawClient(rec_command(tape, calc_command()))
    initialize(client)
    for i in range(1, 4):
        call(client, i, "add", a=i, b=i)
        assert client.message()["id"] == i
    return client


def wait_for_bytes(tape: Path, needle: bytes) -> None:
    """Until `needle` is in the tape file (rec's writer works on its own time), boundedly."""
    deadline = time.monotonic() + WAIT
    while needle not in tape.read_bytes():
        assert time.monotonic() < deadline, tape.read_text(encoding="utf-8")
        time.sleep(0.05)


def killed_rec(tape: Path) -> None:
    """A live rec session of three `add` calls killed with SIGKILL, its writer done with the tape."""
    client = three_adds_through_rec(tape)
    client.proc.send_signal(signal.SIGKILL)
    assert client.wait() == -signal.SIGKILL
    wait_for_bytes(tape, b"recorder_killed")  # the orphaned writer finishes on its own


@pytest.mark.parametrize("run", range(8))  # it lost the last answer in 2 runs of 40: run it a few times
def test_rec_killed_leaves_a_readable_tape(tmp_path: Path, run: int) -> None:
    tape = tmp_path / "killed.tape.jsonl"
    killed_rec(tape)
    t = read_tape(tape)
    assert not t.complete
    answered = [e["id"] for e in t.events if e["kind"] == "response"]
    # The relay tees each chunk before it forwards it: every answer the client got is on the tape.
    assert answered == [0, 1, 2, 3]
    assert t.events[-1]["kind"] == "note" and t.events[-1]["what"] == "recorder_killed"


def test_the_tape_on_disk_follows_a_live_session(tmp_path: Path) -> None:
    """The writer writes a batch of lines after each read off the tee, not only at the end: a
    session still running (or a rec killed with its whole group) has its calls on disk."""
    tape = tmp_path / "live.tape.jsonl"
    client = three_adds_through_rec(tape)
    wait_for_bytes(tape, b'"kind":"response","dir":"s2c","id":3,')
    assert client.proc.poll() is None  # still live: nothing was written because of an ending
    answered = [e["id"] for e in read_tape(tape).events if e["kind"] == "response"]
    assert answered == [0, 1, 2, 3]
    client.close_stdin()
    assert client.wait() == 0


def test_server_that_cannot_start(tmp_path: Path) -> None:
    tape = tmp_path / "none.tape.jsonl"
    proc = subprocess.run(
        rec_command(tape, [str(tmp_path / "no-such-server")]),
        capture_output=True,
        timeout=WAIT,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
    )
    assert proc.returncode == 3
    assert b"server failed to start" in proc.stderr
    assert proc.stdout == b""
    assert not tape.exists()


def test_secrets_in_the_command_stay_out_of_the_tape(tmp_path: Path) -> None:
    tape = tmp_path / "secret.tape.jsonl"
    secret = "sk-live-0123456789abcdef"
    client = RawClient(
        mcptape_command("rec", "--out", str(tape), "--", "env", f"CALC_API_TOKEN={secret}", *calc_command())
    )
    initialize(client)
    client.close_stdin()
    assert client.wait() == 0
    data = tape.read_bytes()
    assert secret.encode() not in data
    header = read_tape(tape).header
    assert header["server"]["command"][:2] == ["env", "CALC_API_TOKEN=<redacted>"]


def _planted(n: int = 24) -> str:
    """A random token no shape detector knows: only knowing the value can catch it."""
    rng = random.Random()
    while True:
        value = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))
        if any(c.isdigit() for c in value) and any(c.isupper() for c in value):
            return value


def _github_shaped() -> str:
    return "ghp_" + _planted(36)


SECRET_ECHO = FIXTURES / "servers" / "secret_echo_server.py"


def test_the_header_is_redacted_home_and_tokens_in_the_command(tmp_path: Path) -> None:
    """The server command lands in the tape's header: no home directory, no token, still readable."""
    home = tmp_path / "home" / "someone"
    script = home / "mcp" / "secret_echo_server.py"
    script.parent.mkdir(parents=True)
    shutil.copy(SECRET_ECHO, script)
    positional, flagged = _github_shaped(), _planted()
    tape = tmp_path / "h.tape.jsonl"
    server = [sys.executable, str(script), positional, f"--token={flagged}"]
    client = RawClient(rec_command(tape, server), cwd=tmp_path, extra_env={"HOME": str(home)})
    initialize(client)
    client.close_stdin()
    assert client.wait() == 0, client.stderr.decode(errors="replace")
    data = tape.read_text(encoding="utf-8")
    for leaked in (positional, flagged, str(home)):
        assert leaked not in data
        assert leaked.encode() not in client.stderr  # "recording <command> -> tape" is scrubbed too
    command = read_tape(tape).header["server"]["command"]
    assert command[1] == "<HOME>/mcp/secret_echo_server.py"
    assert command[2].startswith("<REDACTED:github-token")
    assert command[3] == "--token=<redacted>"


def test_a_header_that_would_leak_writes_nothing_and_exits_4(tmp_path: Path) -> None:
    """Fail closed: a scrubber blind to GitHub tokens lets one through; verify stops the tape."""
    token = _github_shaped()
    snippet = (
        "import sys\n"
        "from mcptape import cli\n"
        "from mcptape.redact import detectors, redactor, shapes\n"
        "init = redactor.Redactor.__init__\n"
        "def blind(self, *a, **k):\n"
        "    init(self, *a, **k)\n"
        "    self._scrubber = detectors.Engine(self._config, [s for s in shapes.SHAPES if s.kind != 'github-token'])\n"
        "redactor.Redactor.__init__ = blind\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    tape = tmp_path / "leak.tape.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", snippet, "rec", "--out", str(tape), "--", sys.executable, str(SECRET_ECHO), token],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=WAIT,
    )
    assert proc.returncode == 4, proc.stderr.decode(errors="replace")
    assert b"github-token value survived redaction" in proc.stderr
    assert token.encode() not in proc.stderr
    assert not tape.exists()


def test_an_env_secret_the_server_echoes_is_scrubbed_from_tape_and_shown_stderr(tmp_path: Path) -> None:
    value = _planted()
    tape = tmp_path / "env.tape.jsonl"
    client = RawClient(
        rec_command(tape, [sys.executable, str(SECRET_ECHO)]), cwd=tmp_path, extra_env={"MY_SERVICE_TOKEN": value}
    )
    initialize(client)
    call(client, 1, "echo_env", name="MY_SERVICE_TOKEN")
    assert client.message()["result"]["content"][0]["text"] == value  # the wire is the server's own
    call(client, 2, "echo_stderr", text=f"connected with {value}\nready")
    assert client.message()["id"] == 2
    client.close_stdin()
    assert client.wait() == 0, client.stderr.decode(errors="replace")
    data = tape.read_text(encoding="utf-8")
    assert value not in data and value.encode() not in client.stderr
    placeholder = "<REDACTED:env.MY_SERVICE_TOKEN>"
    t = read_tape(tape)
    result = next(e for e in t.events if e["kind"] == "response" and e["id"] == 1)
    assert result["msg"]["result"]["content"][0]["text"] == placeholder
    assert {"kind": "stderr", "dir": "s2c", "text": f"connected with {placeholder}"} in t.events
    # shown on rec's stderr, scrubbed, in order, each line whole
    assert f"connected with {placeholder}\nready\n".encode() in client.stderr


def test_an_unterminated_last_stderr_line_is_shown_scrubbed_at_exit(tmp_path: Path) -> None:
    value = _planted()
    server = [
        sys.executable,
        "-c",
        "import os, sys\n"
        "sys.stderr.write('last words ' + os.environ['MY_SERVICE_TOKEN']); sys.stderr.flush()\n"
        "sys.stdin.read()\n",
    ]
    tape = tmp_path / "tail.tape.jsonl"
    client = RawClient(rec_command(tape, server), cwd=tmp_path, extra_env={"MY_SERVICE_TOKEN": value})
    client.close_stdin()
    assert client.wait() == 0
    assert b"last words <REDACTED:env.MY_SERVICE_TOKEN>\n" in client.stderr
    assert value.encode() not in client.stderr and value not in tape.read_text(encoding="utf-8")
    assert {"kind": "stderr", "dir": "s2c", "text": "last words <REDACTED:env.MY_SERVICE_TOKEN>"} in read_tape(
        tape
    ).events


def test_default_tape_path_and_name(tmp_path: Path) -> None:
    client = RawClient(mcptape_command("rec", "--", *calc_command()), cwd=tmp_path)
    initialize(client)
    client.close_stdin()
    assert client.wait() == 0
    t = read_tape(tmp_path / "tapes" / "calc_server.tape.jsonl")
    assert t.header["name"] == "calc_server"
    assert t.complete
    assert b"tapes/calc_server.tape.jsonl" in client.stderr  # told where it went, on stderr


# --------------------------------------------------------------------------------------------
# server-everything (npm): Node key order, server->client requests with overlapping ids


async def _sdk_everything(command: list[str]) -> dict[str, Any]:
    import mcp.types as types
    from mcp import ClientSession, StdioServerParameters, stdio_client

    roots_asked = anyio.Event()

    async def list_roots(ctx: Any) -> types.ListRootsResult:
        roots_asked.set()
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp", name="tmp")])  # type: ignore[arg-type]

    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(ROOT))
    out: dict[str, Any] = {}
    with anyio.fail_after(WAIT):
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, list_roots_callback=list_roots) as session,  # type: ignore[arg-type]
        ):
            init = await session.initialize()
            out["server"] = init.server_info.name
            out["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            out["echo"] = (await session.call_tool("echo", {"message": "hi"})).model_dump(mode="json")
            out["sum"] = (await session.call_tool("get-sum", {"a": 2, "b": 3})).model_dump(mode="json")
            await roots_asked.wait()  # the server asks on a timer; its id 0 overlaps ours
            out["prompts"] = [p.name for p in (await session.list_prompts()).prompts]
    return out


@pytest.mark.node
def test_server_everything_through_rec(tmp_path: Path) -> None:
    entry = node_server("everything")
    server = ["node", str(entry), "stdio"]
    tape = tmp_path / "everything.tape.jsonl"
    direct = anyio.run(_sdk_everything, server)
    recorded = anyio.run(_sdk_everything, rec_command(tape, server))
    assert recorded == direct
    assert direct["sum"]["content"][0]["text"] == "The sum of 2 and 3 is 5."

    t = read_tape(tape)
    assert t.complete
    assert t.header["name"] == "server-everything"
    ask = next(e for e in t.events if e["kind"] == "request" and e["dir"] == "s2c")
    assert ask["method"] == "roots/list"
    reply = next(e for e in t.events if e["kind"] == "response" and e["dir"] == "c2s")
    # keyed by direction + id: the client's answer to the server's id echoes roots/list,
    # not the client's own request with the same id
    assert reply["id"] == ask["id"]
    assert reply["method"] == "roots/list"
    echo = next(e for e in t.events if e["kind"] == "response" and e.get("params", {}).get("name") == "echo")
    assert echo["msg"]["result"]["content"][0]["text"] == "Echo: hi"
    assert t.events[-1]["kind"] == "exit"


@pytest.mark.node
def test_server_everything_pending_roots_needs_sigterm(tmp_path: Path) -> None:
    """Node does not exit on EOF while its roots/list is unanswered: rec must escalate."""
    entry = node_server("everything")
    tape = tmp_path / "stuck.tape.jsonl"
    client = RawClient(rec_command(tape, ["node", str(entry), "stdio"]))
    client.request(
        1,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {"listChanged": True}},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    )
    assert client.message()["id"] == 1
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    while client.message().get("method") != "roots/list":
        pass
    client.close_stdin()  # never answer the server's request
    while client.line() is not None:
        pass
    assert client.wait() == 0
    t = read_tape(tape)
    assert t.complete
    assert t.events[-1] == {"kind": "exit", "code": None, "signal": "SIGTERM"}
    pending = next(e for e in t.events if e.get("what") == "unanswered")
    assert pending["detail"] == [{"dir": "s2c", "id": 0, "method": "roots/list"}]


def sdk_client_through_rec(tape: Path, server: list[str]) -> dict[str, Any]:
    """The official TypeScript SDK's client (fixtures/node/sdk_client.mjs) running `server` behind rec."""
    node_server("everything")  # the SDK comes with the npm reference servers: installed, or skip/fail
    script = FIXTURES / "node" / "sdk_client.mjs"
    argv = json.dumps(rec_command(tape, server))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(["node", str(script), argv, "list_items", "{}"], cwd=script.parent, env=env,
                          capture_output=True, text=True, timeout=WAIT)
    assert proc.returncode == 0, proc.stderr
    answer: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return answer


def test_the_typescript_sdk_closing_stdin_then_sending_sigterm_is_a_clean_end(tmp_path: Path) -> None:
    # The SDK's close(): stdin ended, 2 s, SIGTERM. A server that takes longer than that to exit
    # after EOF (--linger) gets rec's SIGTERM then; the session had ended, nothing was interrupted.
    longtail = [sys.executable, str(FIXTURES / "servers" / "longtail_server.py"), "--kind", "query"]
    prompt, lingering = tmp_path / "prompt.tape.jsonl", tmp_path / "lingering.tape.jsonl"
    items = [{"type": "text", "text": '["a", "b", "c"]'}]
    assert sdk_client_through_rec(prompt, longtail)["result"]["content"] == items
    assert sdk_client_through_rec(lingering, [*longtail, "--linger", "8"])["result"]["content"] == items
    tape = read_tape(lingering)
    assert tape.complete and not [e for e in tape.events if e["kind"] == "note"], tape.events[-3:]
    assert [e.get("code") for e in tape.events if e["kind"] == "exit"] == [0]
    diff = subprocess.run(mcptape_command("diff", str(prompt), str(lingering)), capture_output=True, text=True,
                          timeout=WAIT, cwd=ROOT)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    # The control: the same client against a server whose list changed does differ (output drift).
    changed = tmp_path / "changed.tape.jsonl"
    sdk_client_through_rec(changed, [sys.executable, str(FIXTURES / "servers" / "longtail_server.py"), "--kind",
                                     "query", "--changed", "--linger", "8"])
    assert subprocess.run(mcptape_command("diff", str(prompt), str(changed)), capture_output=True,
                          timeout=WAIT, cwd=ROOT).returncode == 1
