"""rec --listen (record/http.py) keeps the order messages crossed it in, across connections.

A client that reads a server's request (sampling) or an answer can reply at once on another
connection, whose handler records the reply: the server's message must be on the tape before it.
The recorder is slowed down here for the server's messages, so the order cannot come from luck.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mcptape.record import http as record
from mcptape.tape.events import S2C

SAMPLING = {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}}


class Upstream(BaseHTTPRequestHandler):
    """tools/call streams a sampling request and, once the client answered it, the result (SSE);
    ping is answered in a JSON body; the client's answer to sampling is accepted (202)."""

    protocol_version = "HTTP/1.1"
    answered = threading.Event()

    def do_POST(self) -> None:
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "method" not in msg:  # the client's answer to the sampling request
            Upstream.answered.set()
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if msg["method"] == "tools/call":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self._event(SAMPLING)
            assert Upstream.answered.wait(10)
            self._event({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "ok"}]}})
            self.close_connection = True
            return
        body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _event(self, msg: dict[str, Any]) -> None:
        self.wfile.write(b"event: message\ndata: " + json.dumps(msg).encode() + b"\n\n")
        self.wfile.flush()

    def log_message(self, *args: Any) -> None:
        pass


def test_a_reply_on_another_connection_is_recorded_after_what_it_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = record.HttpRecorder.messages_from

    def slow_for_the_server(self: Any, direction: str, text: str, *args: Any, **kwargs: Any) -> None:
        if direction == S2C:
            time.sleep(0.3)  # a recorder behind: the client's reply must still come after
        recorded(self, direction, text, *args, **kwargs)

    monkeypatch.setattr(record.HttpRecorder, "messages_from", slow_for_the_server)
    Upstream.answered.clear()
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    stop, ready, url = threading.Event(), threading.Event(), []
    tape = tmp_path / "order.tape.jsonl"

    def listening(at: str) -> None:
        url.append(at)
        ready.set()

    rec = threading.Thread(target=record.record_http, args=(f"http://127.0.0.1:{upstream.server_address[1]}/mcp",
                                                            "127.0.0.1:0", tape, "order"),
                           kwargs={"on_ready": listening, "stop": stop, "say": lambda line: None})
    rec.start()
    try:
        assert ready.wait(10)
        port = int(url[0].rsplit(":", 1)[1])

        def post(msg: dict[str, Any]) -> http.client.HTTPResponse:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/mcp", body=json.dumps(msg),
                         headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
            return conn.getresponse()

        stream = post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}})
        for line in stream:
            if line.startswith(b"data: ") and b"sampling/createMessage" in line:  # answered at once
                post({"jsonrpc": "2.0", "id": 0, "result": {"role": "assistant", "model": "m",
                                                            "content": {"type": "text", "text": "yo"}}}).read()
            if line.startswith(b"data: ") and b'"id": 1' in line:
                break
        stream.close()
        for n in (2, 3):  # the next request the moment the answer is read
            assert json.loads(post({"jsonrpc": "2.0", "id": n, "method": "ping"}).read())["id"] == n
    finally:
        stop.set()
        rec.join(10)
        upstream.shutdown()
    events = [json.loads(line) for line in tape.read_text(encoding="utf-8").splitlines()]
    crossed = [(e["kind"], e["dir"], e.get("method") or e["msg"].get("method"), e["id"])
               for e in events if e.get("kind") in ("request", "response")]
    assert crossed == [
        ("request", "c2s", "tools/call", 1),
        ("request", "s2c", "sampling/createMessage", 0),
        ("response", "c2s", "sampling/createMessage", 0),  # paired with the request it answers
        ("response", "s2c", "tools/call", 1),
        ("request", "c2s", "ping", 2),
        ("response", "s2c", "ping", 2),
        ("request", "c2s", "ping", 3),
        ("response", "s2c", "ping", 3),
    ], crossed
    assert not [e for e in events if e.get("what") == "unanswered"]
