"""Pure parts of the HTTP transports: SSE parsing across chunk boundaries, per-message headers,
JSON answer bodies, --listen parsing. No sockets here (see tests/integration/test_http.py)."""

from __future__ import annotations

import json

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
