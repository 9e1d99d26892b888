"""HTTP transports against real servers over loopback sockets: server-everything (streamableHttp
and sse), an official-SDK MCPServer (SSE answers, JSON answers, legacy SSE), hand-made servers that
split SSE messages across chunks or drop the connection, the SDK's own streamable HTTP client
through `mcptape rec --listen` and against `mcptape play --listen`, and one session recorded over
stdio and over HTTP diffing as identical.

Only 127.0.0.1 is ever contacted; every server is stopped in a finally; every wait has a timeout.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcptape.config.models import HttpServer
from mcptape.errors import ServerError
from mcptape.live.launch import open_http_transport
from mcptape.tape.reader import read_tape
from mcptape.transports.http import StreamableHttpTransport
from tests.conftest import ROOT, node_server
from tests.integration.http_helpers import (
    HTTP_CALC,
    LOOPBACK,
    Rpc,
    background,
    calc_http_cmd,
    free_port,
    mcptape_listening,
    message_events,
    text_of,
)

# --- server-everything -------------------------------------------------------------------------


@pytest.mark.node
@pytest.mark.parametrize("mode", ["streamableHttp", "sse"])
def test_everything_session_over_http(mode: str) -> None:
    entry = node_server("everything")
    port = free_port()
    path = "/mcp" if mode == "streamableHttp" else "/sse"
    server = HttpServer(
        url=f"http://{LOOPBACK}:{port}{path}",
        transport="streamable-http" if mode == "streamableHttp" else "sse",
        start=["node", str(entry), mode],
        env={"PORT": str(port)},
        ready_timeout=20,
    )
    transport = open_http_transport(server, base_dir=ROOT, env={"PORT": str(port)})
    try:
        rpc = Rpc(transport, roots=[{"uri": "file:///tmp", "name": "tmp"}])
        init = rpc.initialize({"roots": {"listChanged": True}})
        assert init["result"]["serverInfo"]["name"] == "mcp-servers/everything"
        if isinstance(transport, StreamableHttpTransport):
            assert transport.session_id  # captured from the initialize answer
            assert transport.protocol == "2025-06-18"  # read off the result, sent from now on
        tools = rpc.request("tools/list")
        assert "echo" in {t["name"] for t in tools["result"]["tools"]}
        echoed = rpc.request("tools/call", {"name": "echo", "arguments": {"message": "over http"}})
        assert text_of(echoed) == "Echo: over http"
        # The server asks roots/list on its own (a ~350 ms timer): over streamable HTTP it
        # arrives on the GET stream, over legacy SSE on the one stream; Rpc answers it.
        asked = rpc.wait_for(lambda m: m.get("method") == "roots/list", timeout=10)
        assert "id" in asked
        confirmed = rpc.wait_for(lambda m: "Roots updated" in json.dumps(m), timeout=10)
        assert "1 root(s)" in json.dumps(confirmed)
    finally:
        code = transport.close()
    assert code is not None  # the started server was stopped by us


# --- an official-SDK server (MCPServer) ------------------------------------------------------------


@pytest.fixture(scope="module")
def calc_upstream() -> Iterator[str]:
    """One MCPServer over streamable HTTP (SSE answers) shared by the module: it is slow to start."""
    port = free_port()
    with background(calc_http_cmd(port), port, timeout=60):
        yield f"http://{LOOPBACK}:{port}/mcp"


def test_sdk_server_sse_answers(calc_upstream: str) -> None:
    transport = StreamableHttpTransport(calc_upstream, {"X-Trace": "fixture"})
    try:
        rpc = Rpc(transport)
        assert rpc.initialize()["result"]["serverInfo"]["name"] == "http-calc-fixture"
        assert transport.session_id and transport.protocol == "2025-06-18"
        added = rpc.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert added["result"]["structuredContent"] == {"result": 5.0}
    finally:
        transport.close()


@pytest.mark.parametrize(
    ("transport_name", "extra", "path"),
    [("streamable-http", ["--json-response"], "/mcp"), ("sse", [], "/sse")],
    ids=["json-answers", "legacy-sse"],
)
def test_sdk_server_started_by_mcptape(transport_name: str, extra: list[str], path: str) -> None:
    port = free_port()
    server = HttpServer(
        url=f"http://{LOOPBACK}:{port}{path}",
        transport="sse" if transport_name == "sse" else "streamable-http",
        start=[sys.executable, str(HTTP_CALC), transport_name, "--port", str(port), *extra],
        headers={"X-Trace": "fixture"},
        ready_timeout=60,
    )
    transport = open_http_transport(server, base_dir=ROOT, env={})
    try:
        rpc = Rpc(transport)
        init = rpc.initialize()
        assert init["result"]["serverInfo"]["name"] == "http-calc-fixture"
        tools = rpc.request("tools/list")
        assert {t["name"] for t in tools["result"]["tools"]} == {"add", "divide", "echo"}
        added = rpc.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert added["result"]["structuredContent"] == {"result": 5.0}
        failed = rpc.request("tools/call", {"name": "divide", "arguments": {"a": 1, "b": 0}})
        assert failed["result"]["isError"] is True
    finally:
        transport.close()


def test_start_command_that_exits_reports_its_output() -> None:
    server = HttpServer(
        url=f"http://{LOOPBACK}:{free_port()}/mcp",
        start=[sys.executable, "-c", "import sys; print('cannot bind: config missing', flush=True); sys.exit(2)"],
    )
    with pytest.raises(ServerError) as err:
        open_http_transport(server, base_dir=ROOT, env={})
    assert "exited with code 2" in str(err.value)
    assert "cannot bind: config missing" in str(err.value)


def test_start_command_that_never_listens_times_out_and_is_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); print('warming up', flush=True); time.sleep(60)"
    server = HttpServer(url=f"http://{LOOPBACK}:{free_port()}/mcp", start=[sys.executable, "-c", script], ready_timeout=1.0)
    with pytest.raises(ServerError) as err:
        open_http_transport(server, base_dir=ROOT, env={})
    assert "within 1s" in str(err.value)
    assert "warming up" in str(err.value)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        import os

        os.kill(pid, 0)


# --- hand-made servers: split chunks, dropped connections ---------------------------------------


def _raw_server(handler: Any) -> Iterator[int]:
    """A one-connection-at-a-time raw socket server on loopback, running `handler(conn)` per connection."""
    sock = socket.socket()
    sock.bind((LOOPBACK, 0))
    sock.listen(8)
    sock.settimeout(0.2)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            threading.Thread(target=handler, args=(conn,), daemon=True).start()

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        yield int(sock.getsockname()[1])
    finally:
        stop.set()
        t.join(5)
        sock.close()


def _read_request(conn: socket.socket) -> tuple[str, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += conn.recv(65536)
    return head.split(b" ")[0].decode(), body


TEXT = "héllo → wörld " * 50  # multi-byte characters, so chunk cuts land inside them


def _split_sse_handler(conn: socket.socket) -> None:
    with conn:
        method, body = _read_request(conn)
        if method != "POST":
            conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        msg = json.loads(body)
        if "id" not in msg:
            conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            return
        answer = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"text": TEXT}}, ensure_ascii=False)
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}})
        sse = (f": keep-alive\r\nevent: message\r\nid: 7\r\ndata: {note}\r\n\r\nevent: message\r\ndata: {answer}\r\n\r\n").encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        # Cut the stream every 7 bytes: inside CRLFs, inside UTF-8 characters, inside "data:".
        for i in range(0, len(sse), 7):
            piece = sse[i : i + 7]
            conn.sendall(b"%x\r\n%b\r\n" % (len(piece), piece))
            time.sleep(0.001)
        conn.sendall(b"0\r\n\r\n")


def _dropping_handler(conn: socket.socket) -> None:
    with conn:
        method, body = _read_request(conn)
        msg = json.loads(body)
        if "id" not in msg:
            conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            return
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}})
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        first = f"event: message\ndata: {note}\n\n".encode()
        half = b'event: message\ndata: {"jsonrpc":"2.0","id":'
        for piece in (first, half):
            conn.sendall(b"%x\r\n%b\r\n" % (len(piece), piece))
        time.sleep(0.05)
        conn.shutdown(socket.SHUT_RDWR)  # mid-message, no final chunk


@pytest.fixture
def split_server() -> Iterator[int]:
    yield from _raw_server(_split_sse_handler)


@pytest.fixture
def dropping_server() -> Iterator[int]:
    yield from _raw_server(_dropping_handler)


def test_sse_message_split_across_chunks_is_reassembled(split_server: int) -> None:
    transport = StreamableHttpTransport(f"http://{LOOPBACK}:{split_server}/mcp", {})
    try:
        rpc = Rpc(transport)
        answer = rpc.request("tools/call", {"name": "x"})
        assert answer["result"]["text"] == TEXT
        assert rpc.seen[0] == {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    finally:
        transport.close()


def test_connection_dropped_mid_stream_is_a_clear_error(dropping_server: int) -> None:
    transport = StreamableHttpTransport(f"http://{LOOPBACK}:{dropping_server}/mcp", {})
    try:
        rpc = Rpc(transport)
        with pytest.raises(ServerError) as err:
            rpc.request("tools/call", {"name": "x"}, timeout=10)
        assert "dropped while reading request 1 (tools/call)" in str(err.value)
        # What arrived before the drop was delivered first.
        assert rpc.seen == [{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}]
    finally:
        transport.close()


def test_rec_listen_keeps_a_readable_tape_when_upstream_drops(dropping_server: int, tmp_path: Path) -> None:
    tape = tmp_path / "drop.tape.jsonl"
    with mcptape_listening("rec", "--upstream", f"http://{LOOPBACK}:{dropping_server}/mcp", "--out", str(tape)) as lst:
        transport = StreamableHttpTransport(lst.url, {})
        try:
            with pytest.raises(ServerError, match="dropped"):
                Rpc(transport).request("tools/call", {"name": "x"}, timeout=10)
        finally:
            transport.close()
    assert lst.returncode == 0, lst.stderr
    recorded = read_tape(tape)
    assert recorded.complete
    kinds = [(e["kind"], e.get("method")) for e in recorded.events]
    assert ("request", "tools/call") in kinds
    assert ("notification", "notifications/progress") in kinds
    assert any(e["kind"] == "note" and e["detail"].get("dropped") for e in recorded.events)


# --- the SDK's streamable HTTP client through rec --listen and against play --listen -------------


async def _sdk_session(url: str) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        tools = await session.list_tools()
        added = await session.call_tool("add", {"a": 2, "b": 3})
        echoed = await session.call_tool("echo", {"text": "tape"})
        return {
            "server": init.server_info.name,
            "tools": sorted(t.name for t in tools.tools),
            "add": added.model_dump(mode="json", by_alias=True),
            "echo": echoed.model_dump(mode="json", by_alias=True),
        }


def _run_sdk(url: str) -> dict[str, Any]:
    return asyncio.run(asyncio.wait_for(_sdk_session(url), timeout=30))


def test_sdk_client_through_rec_listen_then_against_play_listen(calc_upstream: str, tmp_path: Path) -> None:
    tape = tmp_path / "sdk.tape.jsonl"
    direct = _run_sdk(calc_upstream)
    with mcptape_listening("rec", "--upstream", calc_upstream, "--out", str(tape), "--name", "sdk") as rec:
        recorded = _run_sdk(rec.url)
    assert rec.returncode == 0, rec.stderr
    assert recorded == direct
    assert direct["add"]["structuredContent"] == {"result": 5.0}

    events = read_tape(tape)
    assert events.header["transport"] == "http" and events.header["name"] == "sdk"
    assert events.complete
    calls = [e for e in events.events if e.get("method") == "tools/call" and e["kind"] == "response"]
    assert [c["params"]["name"] for c in calls] == ["add", "echo"]
    text = tape.read_text(encoding="utf-8")
    assert "mcp-session-id" not in text.lower()  # transport details stay out of the tape

    # Play answers alone: it never contacts the upstream (it does not even know its address).
    with mcptape_listening("play", str(tape)) as play:
        replayed = _run_sdk(play.url)
    assert replayed == direct
    assert play.returncode == 0, play.stderr
    assert "clean" in play.stderr


def test_play_listen_reports_a_miss(calc_upstream: str, tmp_path: Path) -> None:
    tape = tmp_path / "sdk.tape.jsonl"
    with mcptape_listening("rec", "--upstream", calc_upstream, "--out", str(tape)) as rec:
        transport = StreamableHttpTransport(rec.url, {})
        try:
            rpc = Rpc(transport)
            rpc.initialize()
            rpc.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        finally:
            transport.close()
    with mcptape_listening("play", str(tape)) as play:
        transport = StreamableHttpTransport(play.url, {})
        try:
            rpc = Rpc(transport)
            rpc.initialize()
            assert transport.session_id  # play hands out a session id
            same = rpc.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
            assert same["result"]["structuredContent"] == {"result": 5.0}
            miss = rpc.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 4}})
            assert "error" in miss
        finally:
            transport.close()
    assert play.returncode == 1, play.stderr
    assert "miss" in play.stderr


def test_rec_listen_forwards_headers_without_recording_them(calc_upstream: str, tmp_path: Path) -> None:
    tape = tmp_path / "auth.tape.jsonl"
    token = "Bearer tok-5f1c9a7e2b-not-for-tapes"
    with mcptape_listening("rec", "--upstream", calc_upstream, "--out", str(tape)) as rec:
        transport = StreamableHttpTransport(rec.url, {"Authorization": token})
        try:
            rpc = Rpc(transport)
            rpc.initialize()
            # The server echoes the credential into a result: the client gets it, the tape must not.
            echoed = rpc.request("tools/call", {"name": "echo", "arguments": {"text": "tok-5f1c9a7e2b-not-for-tapes"}})
            assert text_of(echoed) == "tok-5f1c9a7e2b-not-for-tapes"
        finally:
            transport.close()
    assert rec.returncode == 0, rec.stderr
    data = tape.read_text(encoding="utf-8")
    assert "tok-5f1c9a7e2b" not in data
    assert '"name":"echo"' in data  # the call itself was recorded, its secret replaced
    assert token not in rec.stderr


# --- transport independence: one session over stdio and over HTTP --------------------------------


def test_same_session_over_stdio_and_http_diffs_identical(calc_upstream: str, tmp_path: Path) -> None:
    from tests.recording import record, tool, write

    requests = [("tools/list", None), tool("add", a=2, b=3), tool("divide", a=1, b=0), tool("echo", text="ü")]
    stdio_tape = write(record([sys.executable, str(HTTP_CALC), "stdio"], requests, name="calc"), tmp_path / "stdio.tape.jsonl")

    http_tape = tmp_path / "http.tape.jsonl"
    with mcptape_listening("rec", "--upstream", calc_upstream, "--out", str(http_tape), "--name", "calc") as rec:
        transport = StreamableHttpTransport(rec.url, {})
        try:
            rpc = Rpc(transport)
            rpc.next_id = 0  # the stdio helper numbers from 0
            rpc.initialize()
            for method, params in requests:
                rpc.request(method, params)
        finally:
            transport.close()
    assert rec.returncode == 0, rec.stderr

    def comparable(path: Path) -> list[dict[str, Any]]:
        # `session` and `sse` are the HTTP facts rec --listen adds (which session, which framing).
        return [{k: v for k, v in e.items() if k not in ("raw", "session", "sse")} for e in message_events(path)]

    assert comparable(stdio_tape) == comparable(http_tape)
    try:
        from mcptape.diff.compare import diff_tapes
    except ImportError:
        return
    golden = read_tape(stdio_tape)
    # Over HTTP the recorder sees no server process, so the stdio tape's exit event has no
    # counterpart; it is a fact of the transport, not of the server's behaviour.
    golden.events = [e for e in golden.events if e["kind"] != "exit"]
    golden.event_lines = []
    result = diff_tapes(golden, read_tape(http_tape))
    assert result.exit_code == 0, result
    # Positive control: the same HTTP tape with the add answer changed is that call's output drift.
    changed = read_tape(http_tape)
    add = next(e for e in changed.events if e["kind"] == "response" and e.get("params", {}).get("name") == "add")
    add["msg"]["result"]["content"][0]["text"] = "6"
    add.pop("raw", None)
    drifted = diff_tapes(golden, changed)
    assert drifted.exit_code == 1 and [d.call.name for d in drifted.drifts if d.call] == ["add"]


@pytest.mark.node
def test_rec_listen_records_a_legacy_sse_session(tmp_path: Path) -> None:
    entry = node_server("everything")
    port = free_port()
    tape = tmp_path / "sse.tape.jsonl"
    with (
        background(["node", str(entry), "sse"], port, env={"PORT": str(port)}),
        mcptape_listening("rec", "--upstream", f"http://{LOOPBACK}:{port}/sse", "--out", str(tape), path="/sse") as rec,
    ):
        # The `endpoint` event names a relative path, so the client's POSTs go through the proxy too.
        transport = open_http_transport(HttpServer(url=rec.url, transport="sse"), base_dir=ROOT, env={})
        try:
            rpc = Rpc(transport)
            rpc.initialize()
            assert text_of(rpc.request("tools/call", {"name": "echo", "arguments": {"message": "legacy"}})) == "Echo: legacy"
        finally:
            transport.close()
    assert rec.returncode == 0, rec.stderr
    pairs = [(e["kind"], e["dir"], e.get("method")) for e in message_events(tape)]
    assert ("request", "c2s", "tools/call") in pairs
    assert ("response", "s2c", "tools/call") in pairs
