"""Pure parts of the HTTP transports: SSE parsing across chunk boundaries, per-message headers,
JSON answer bodies, --listen parsing. No sockets here (see tests/integration/test_http.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcptape.errors import ConfigError
from mcptape.transports.http import encode_header_value, message_headers, parse_json_messages
from mcptape.transports.serve import parse_listen
from mcptape.transports.sse import SseEvent, SseParser, format_sse

STREAM = (
    ": keep-alive\r\n"
    "retry: 3000\r\n"
    "id: prime\r\n"
    "data:\r\n"
    "\r\n"
    "event: message\r\n"
    "id: 41\r\n"
    'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"text":"ünïcödé →"}}\r\n'
    "\r\n"
    "event: endpoint\n"
    "data: /message?sessionId=abc\n"
    "\n"
    "data: first line\r"
    "data: second line\r"
    "\r"
    ": a lone CR ends a line too, once the next byte shows it is not half of a CRLF\n"
).encode()

EXPECTED = [
    SseEvent(
        data='{"jsonrpc":"2.0","method":"notifications/progress","params":{"text":"ünïcödé →"}}',
        event="message",
        id="41",
    ),
    SseEvent(data="/message?sessionId=abc", event="endpoint"),
    SseEvent(data="first line\nsecond line", event="message"),
]


def test_sse_whole_stream() -> None:
    parser = SseParser()
    assert parser.feed(STREAM) == EXPECTED
    assert parser.last_event_id == "41"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_sse_split_at_every_boundary_gives_the_same_events(size: int) -> None:
    # Cuts land inside CRLFs, inside multi-byte UTF-8 characters and inside field names.
    parser = SseParser()
    events = []
    for i in range(0, len(STREAM), size):
        events += parser.feed(STREAM[i : i + size])
    assert events == EXPECTED


def test_sse_event_without_data_dispatches_nothing_and_resets_fields() -> None:
    parser = SseParser()
    assert parser.feed(b"event: endpoint\nid: 1\n\ndata: x\n\n") == [SseEvent(data="x", event="message", id=None)]


def test_sse_incomplete_event_waits_for_its_blank_line() -> None:
    parser = SseParser()
    assert parser.feed(b'data: {"a":') == []
    assert parser.feed(b"1}\n") == []
    assert parser.feed(b"\n") == [SseEvent(data='{"a":1}')]


def test_format_sse_round_trips_multiline_data() -> None:
    data = '{"a":\n1}'
    assert SseParser().feed(format_sse(data, event_id="9")) == [SseEvent(data=data, id="9")]


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {}}}


def test_legacy_headers_follow_the_session() -> None:
    configured = {"Authorization": "Bearer x"}
    first = message_headers(INIT, configured=configured, session_id="old", protocol="2025-03-26")
    assert first["Accept"] == "application/json, text/event-stream"
    assert first["Content-Type"] == "application/json"
    assert first["Authorization"] == "Bearer x"
    assert "Mcp-Session-Id" not in first and "MCP-Protocol-Version" not in first
    later = message_headers(CALL, configured=configured, session_id="s1", protocol="2025-06-18")
    assert later["Mcp-Session-Id"] == "s1"
    assert later["MCP-Protocol-Version"] == "2025-06-18"
    assert "Mcp-Method" not in later


def test_configured_headers_cannot_override_accept() -> None:
    headers = message_headers(CALL, configured={"Accept": "text/html"}, session_id=None, protocol=None)
    assert headers["Accept"] == "application/json, text/event-stream"


def test_stateless_request_gets_method_and_name_headers_and_no_session() -> None:
    msg = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "add", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
    }
    headers = message_headers(msg, configured={}, session_id="s1", protocol="2025-06-18")
    assert headers["MCP-Protocol-Version"] == "2026-07-28"
    assert headers["Mcp-Method"] == "tools/call"
    assert headers["Mcp-Name"] == "add"
    assert "Mcp-Session-Id" not in headers


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_a_tasks_extension_request_is_routed_by_its_task_id(method: str) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    msg = {"jsonrpc": "2.0", "id": 4, "method": method, "params": {"taskId": "t-9", "_meta": meta}}
    headers = message_headers(msg, configured={}, session_id=None, protocol=None)
    assert headers["Mcp-Method"] == method and headers["Mcp-Name"] == "t-9"


def test_header_values_outside_printable_ascii_are_base64_wrapped() -> None:
    assert encode_header_value("file:///tmp/a.txt") == "file:///tmp/a.txt"
    wrapped = encode_header_value("résumé")
    assert wrapped.startswith("=?base64?") and wrapped.endswith("?=")
    assert encode_header_value(" padded") != " padded"


def test_json_body_batch_is_split_into_messages() -> None:
    batch = json.dumps([{"jsonrpc": "2.0", "id": 1, "result": {}}, {"jsonrpc": "2.0", "method": "n"}]).encode()
    assert [json.loads(m) for m in parse_json_messages(batch)] == json.loads(batch)
    assert parse_json_messages(b'{"jsonrpc":"2.0","id":1,"result":{}}\n') == [b'{"jsonrpc":"2.0","id":1,"result":{}}']
    assert parse_json_messages(b"  ") == []


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_listen("[::1]:0") == ("::1", 0)
    for bad in ("8765", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000"):
        with pytest.raises(ConfigError, match="HOST:PORT"):
            parse_listen(bad)


def test_a_json_batch_holding_a_deep_message_splits_into_its_wire_messages() -> None:
    deep = '{"jsonrpc":"2.0","id":2,"result":{"v":' + "[" * 100_000 + "0" + "]" * 100_000 + "}}"
    batch = ('[{"jsonrpc":"2.0","id":1,"result":{}},' + deep + "]").encode()
    assert parse_json_messages(batch) == [b'{"jsonrpc":"2.0","id":1,"result":{}}', deep.encode()]


def test_an_http_4xx_to_a_request_refuses_that_request_but_credentials_and_notifications_stay_failures() -> None:
    # Issue 18: server-everything answers server/discover over streamable HTTP with 400 (id null
    # body); the transport says which request was refused, and live/client.py's auto falls back on it.
    from mcptape.transports.http import _refusal

    probe = {"jsonrpc": "2.0", "id": 0, "method": "server/discover"}
    assert [_refusal(probe, status) for status in (400, 404, 405, 406)] == [(0, 400), (0, 404), (0, 405), (0, 406)]
    assert _refusal(probe, 401) is None and _refusal(probe, 403) is None  # the connection's credentials
    assert _refusal(probe, 500) is None  # a server fault, not a refusal
    assert _refusal(None, 400) is None  # a notification's POST: no request to answer


# --- DNS-rebinding protection of rec --listen and play --listen (transports/serve.HostCheck) -----------


def test_host_check_answers_loopback_names_and_the_listen_address_and_refuses_any_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcptape.transports.serve import HostCheck

    monkeypatch.delenv("MCPTAPE_ALLOW_HOSTS", raising=False)
    check = HostCheck("127.0.0.1")
    for host in ("127.0.0.1:8765", "localhost:3000", "LOCALHOST", "[::1]:9", "127.0.0.1"):
        assert check.refusal(host, None) is None, host
    assert check.refusal("localhost:1", "http://localhost:6274") is None  # the web Inspector's origin
    assert "Host 'evil.example.com'" in str(check.refusal("evil.example.com", None))
    assert "Origin 'http://evil.example.com'" in str(check.refusal("127.0.0.1:1", "http://evil.example.com"))
    assert check.refusal("127.0.0.1:1", "null") is not None  # a sandboxed page's origin is not a name we know
    assert check.refusal(None, None) is not None  # HTTP/1.1 without Host
    assert check.warning is None

    bound = HostCheck("10.1.2.3", ("mcp.internal", "https://app.example.com"))
    assert bound.refusal("10.1.2.3:80", None) is None and bound.refusal("mcp.internal:8080", None) is None
    assert bound.refusal("localhost", "https://app.example.com") is None
    assert bound.refusal("other.internal", None) is not None

    monkeypatch.setenv("MCPTAPE_ALLOW_HOSTS", "a.test, b.test")
    from_env = HostCheck("127.0.0.1")
    assert from_env.refusal("b.test", None) is None and from_env.refusal("c.test", None) is not None
    assert HostCheck("127.0.0.1", ("*",)).refusal("anything", "http://anything") is None


def test_every_interface_without_names_is_unchecked_as_in_the_sdks_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcptape.transports.serve import HostCheck

    monkeypatch.delenv("MCPTAPE_ALLOW_HOSTS", raising=False)
    open_ = HostCheck("0.0.0.0")
    assert open_.refusal("mcp-fake:8080", None) is None and open_.warning and "--allow-host" in open_.warning
    named = HostCheck("0.0.0.0", ("mcp-fake",))
    assert named.refusal("mcp-fake:8080", None) is None and named.refusal("evil.example.com", None) is not None
    assert named.warning is None


def test_rec_refuses_a_rebound_request_before_forwarding_and_forwards_the_origin_it_allows(tmp_path: Any) -> None:
    import http.client
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from mcptape.record.http import record_http

    seen: list[dict[str, str]] = []

    class Upstream(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(dict(self.headers))
            body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    stop, ready = threading.Event(), threading.Event()
    said: list[str] = []
    url: list[str] = []

    def listening(at: str) -> None:
        url.append(at)
        ready.set()

    rec = threading.Thread(target=record_http, args=(f"http://127.0.0.1:{upstream.server_address[1]}/mcp",
                                                     "127.0.0.1:0", tmp_path / "t.tape.jsonl", "t"),
                           kwargs={"on_ready": listening, "stop": stop, "say": said.append})
    rec.start()
    try:
        assert ready.wait(10)
        port = int(url[0].rsplit(":", 1)[1])

        def post(host: str, origin: str | None) -> tuple[int, bytes]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            headers = {"Host": host, "Content-Type": "application/json"} | ({"Origin": origin} if origin else {})
            conn.request("POST", "/mcp", body=b'{"jsonrpc":"2.0","id":1,"method":"ping"}', headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read()

        status, body = post("evil.example.com", "http://evil.example.com")
        assert status == 403 and b"DNS-rebinding" in body and seen == []  # nothing reached the upstream
        assert post(f"localhost:{port}", "http://localhost:6274")[0] == 200
        assert seen[0]["Origin"] == "http://localhost:6274"  # the upstream's own check still sees it
        assert seen[0]["Host"] != f"localhost:{port}"  # the upstream's own name, as a reverse proxy sends
    finally:
        stop.set()
        rec.join(10)
        upstream.shutdown()
    assert any("refused a POST request (403): Host 'evil.example.com'" in line for line in said)
    assert "evil.example.com" not in (tmp_path / "t.tape.jsonl").read_text(encoding="utf-8")


def test_sse_parser_keeps_the_servers_retry_and_the_last_event_id_of_a_priming_event() -> None:
    parser = SseParser()
    assert parser.feed(b"id: s1::1\nretry: 500\ndata: \n\n") == []  # a priming event delivers nothing
    assert (parser.last_event_id, parser.retry, parser.dispatched) == ("s1::1", 500, 1)
    assert parser.feed(b"id: s1::2\ndata: {}\n\n")[0].data == "{}"
    assert (parser.last_event_id, parser.retry, parser.dispatched) == ("s1::2", 500, 2)  # retry holds


def test_the_get_stream_is_answered_before_the_first_message_after_initialized_goes_out() -> None:
    # A server slow to answer the GET (a loaded machine): the client's next request still comes
    # after the GET stream is open, so what the server sends from then on has a stream to go on.
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from mcptape.transports.http import StreamableHttpTransport

    seen: list[str] = []
    done = threading.Event()

    class Server(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(f"POST {msg['method']}")
            if "id" not in msg:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
            body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result if msg["method"] == "initialize" else {}})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Mcp-Session-Id", "s1")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def do_GET(self) -> None:
            time.sleep(0.5)
            seen.append("GET answered")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.flush()
            done.wait(10)

        def do_DELETE(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Server)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    transport = StreamableHttpTransport(f"http://127.0.0.1:{server.server_address[1]}/mcp", {})
    try:
        transport.send(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
        assert transport.receive(10) is not None
        transport.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        transport.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
        assert transport.receive(10) is not None
    finally:
        done.set()
        transport.close()
        server.shutdown()
    assert seen == ["POST initialize", "POST notifications/initialized", "GET answered", "POST tools/list"]
