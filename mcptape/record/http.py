"""`mcptape rec --listen HOST:PORT --upstream URL`: an HTTP reverse proxy that records MCP traffic.

Owns forwarding every request (POST, GET, DELETE, ...) to the upstream server and streaming
each answer back chunk by chunk (an SSE stream keeps flowing: every chunk is flushed as it
arrives), while the JSON-RPC messages in both directions go to a tape. The stdio recorder is
proxy.py's; the tape format is tape/'s; SSE parsing is transports/sse.py's.

Tapes stay transport-independent: message events are built by the same EventBuilder from the
same message text as over stdio, so one server recorded both ways diffs as identical. HTTP
details (session ids, SSE event ids, statuses, headers) are left out of message events, but for
two facts a replay needs: which HTTP session a message crossed in (`session`, a number; the ids
themselves are random and would make two recordings differ), and whether a server message came
in an SSE stream (`sse`); tape/events.py says where they go. What went wrong at the HTTP level (a
status >= 400, a dropped upstream connection) becomes a `note` event with `what: "http"`, and so
do the upstream's CORS headers (`cors`, once per change: play sends them as recorded) — never
another header value. Header values that are credentials (Authorization, Cookie, ...) are fed to
the redactor as known secrets so a server echoing one into a message cannot write it to the tape.

Wire first: the bytes are forwarded before they are parsed, and tape writes happen on a
writer thread, so disk never slows the wire.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from mcptape.errors import SecretLeak
from mcptape.jsonrpc import loads_depth
from mcptape.publish.outlet import Outlet
from mcptape.publish.outlet import say as outlet_say
from mcptape.redact.policy import secret_reason
from mcptape.redact.redactor import make_redactor
from mcptape.tape.events import C2S, CORS_NOTE, S2C, EventBuilder, deep_note, note_event
from mcptape.tape.format import TapeWriter, make_header
from mcptape.tape.timing import timing_footer
from mcptape.transports.http import new_client, parse_json_messages
from mcptape.transports.serve import (
    HOP_BY_HOP,
    CheckedHandler,
    ChunkedBody,
    HostCheck,
    Server,
    parse_listen,
    serve_until_stopped,
)
from mcptape.transports.sse import SESSION_HEADER, SseParser


class HttpRecorder:
    """Turns forwarded traffic into tape events; a writer thread redacts, verifies and writes them.

    One EventBuilder per HTTP session: each session's client numbers its requests from 0, so an
    answer is paired with its request within its session only.
    """

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.writer = TapeWriter(path, make_header(name, transport="http", sessions=True))
        self._builders: dict[int | None, EventBuilder] = {}
        self._numbers: dict[str, int] = {}  # Mcp-Session-Id -> its number on the tape
        self._cors: dict[str, dict[str, str]] = {}  # "preflight" | "answer" -> the CORS headers last noted
        self._lock = threading.Lock()
        self._secrets: dict[str, str] = {}
        self._outlet = Outlet(make_redactor())
        # Each event with the clock when its message crossed the proxy (the footer's timing, tape/timing.py).
        self._queue: queue.SimpleQueue[tuple[dict[str, Any], float | None] | None] = queue.SimpleQueue()
        self.times: list[float | None] = []
        self.leak: SecretLeak | None = None
        self.messages = 0
        self._thread = threading.Thread(target=self._write_loop, name="http-rec-writer", daemon=True)
        self._thread.start()

    def learn_secrets(self, headers: Any) -> None:
        """Header values that are credentials become known secrets of the redactor.

        Which are is redact/policy.py's rule, the same as for the config's `headers:` (`secret_reason`
        with `header=True`: Authorization, Cookie, X-Api-Key, any name that says so, any value
        with a token shape); `Accept` or `User-Agent` values are not.
        """
        found: dict[str, str] = {}
        for name, value in headers.items():
            if not value or not secret_reason(name, value, header=True):
                continue
            found[f"headers.{name.title()}"] = value
            scheme, _, credential = value.partition(" ")
            if credential.strip() and scheme.isalpha():
                # "Bearer X": a server echoing X alone must not get it onto the tape either.
                found[f"headers.{name.title()}.credential"] = credential.strip()
        with self._lock:
            new = {k: v for k, v in found.items() if self._secrets.get(k) != v}
            if new:
                self._secrets.update(new)
                self._outlet = Outlet(make_redactor(self._secrets))

    def session(self, session_id: str | None) -> int | None:
        """The tape's number of the HTTP session `session_id` (1, 2, ... in order of appearance)."""
        if not session_id:
            return None
        with self._lock:
            return self._numbers.setdefault(session_id, len(self._numbers) + 1)

    def _builder(self, session: int | None) -> EventBuilder:
        builder = self._builders.get(session)
        if builder is None:
            builder = self._builders[session] = EventBuilder()
        return builder

    def messages_from(self, direction: str, text: str, session: int | None = None, *, sse: bool = False) -> None:
        """Record the message(s) of one body or SSE data field (a batch array is split), crossed in
        HTTP session number `session` (None: a server without sessions), in an SSE stream if `sse`."""
        marks: dict[str, Any] = {}
        if session is not None:
            marks["session"] = session
        if sse and direction == S2C:
            marks["sse"] = True
        try:
            parsed, depth = loads_depth(text)
        except json.JSONDecodeError:
            with self._lock:
                builder = self._builder(session)
                self._queue.put((builder.line(direction, text.encode("utf-8")) | marks, time.monotonic()))
                for note in builder.take_notes():
                    self._queue.put((note, None))
            return
        items = parsed if isinstance(parsed, list) else [parsed]
        now = time.monotonic()
        with self._lock:
            builder = self._builder(session)
            for item in items:
                exact = text.strip() if len(items) == 1 else None
                event = builder.message(direction, item, exact)
                event.update(marks)  # after msg (and raw), where tape/events.py puts them
                self._queue.put((event, now))
            if depth:  # nested past jsonrpc.MAX_DEPTH: said in the tape, as stdio tapes say it
                self._queue.put((deep_note(event, depth), None))

    def note(self, detail: dict[str, Any], session: int | None = None, *, what: str = "http") -> None:
        if session is not None:
            detail = {**detail, "session": session}
        self._queue.put((note_event(what, detail), None))

    def cors(self, preflight: bool, headers: httpx.Headers) -> None:
        """Note the upstream's CORS headers when they change (play sends them as recorded)."""
        found = {k.lower(): v for k, v in headers.items() if k.lower().startswith("access-control-")}
        which = "preflight" if preflight else "answer"
        with self._lock:
            if not found or self._cors.get(which) == found:
                return
            self._cors[which] = found
        self.note({"cors": which, "headers": dict(sorted(found.items()))}, what=CORS_NOTE)

    def refused(self, body: bytes, session: int | None) -> None:
        """The upstream refused this POST at the HTTP level: its requests were answered (by the
        `http` note), not left unanswered."""
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return
        with self._lock:
            builder = self._builder(session)
            for item in parsed if isinstance(parsed, list) else [parsed]:
                if isinstance(item, dict) and "method" in item and "id" in item:
                    builder.refused(C2S, item["id"])

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            event, clock = item
            if self.leak is not None:
                continue
            with self._lock:
                outlet = self._outlet
            # Every line is scrubbed and verified by the outlet before it is written (publish/outlet.py).
            try:
                data = outlet.tape_line(event, where=str(self.path))
            except SecretLeak as e:
                self.leak = e
                continue
            self.writer.write_line(data)
            self.times.append(clock)
            if event.get("kind") in ("request", "notification", "response", "error"):
                self.messages += 1

    def close(self) -> None:
        with self._lock:  # a request the upstream never answered: said as stdio rec says it
            unanswered = [(n, b.unanswered_note()) for n, b in self._builders.items()]
        for session, note in unanswered:
            if note is not None:  # mcptape's note: it never crossed the wire
                if session is not None:
                    note["detail"] = [{**d, "session": session} for d in note["detail"]]
                self._queue.put((note, None))
        self._queue.put(None)
        self._thread.join(timeout=10.0)
        if self.leak is not None:
            # Fail closed: a tape that held a secret is not left behind, not even in part.
            self.writer.abandon()
            self.path.unlink(missing_ok=True)
            return
        self.writer.close(timing=timing_footer(self.times))


class _Proxy(Server):
    upstream: str
    origin: str
    recorder: HttpRecorder
    client: httpx.Client
    open_responses: set[httpx.Response]
    lock: threading.Lock
    say: Callable[[str], None]  # where a line for a person goes: rec's stderr, the library's logger

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that drops its connection (a reset, a closed pipe: a killed agent) is one
        line on stderr, not socketserver's traceback; anything else is still reported in full."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            self.say(f"mcptape rec: a client disconnected mid-exchange ({type(error).__name__}); recording goes on")
            return
        super().handle_error(request, client_address)


class ProxyHandler(CheckedHandler):
    """Forwards one HTTP exchange to the upstream and tees its JSON-RPC messages to the recorder.

    Every request passes the HostCheck before anything is read or forwarded (CheckedHandler): the
    upstream sees our Host, not the client's, so its own rebinding check cannot work through us.
    The client's Origin is forwarded as it came, so an upstream checking it still sees it."""

    who = "mcptape rec"

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and each chunk go out at once, not after a delayed ACK
    server: _Proxy

    def log_message(self, format: str, *args: Any) -> None:
        pass  # request lines may carry tokens in query strings; we log nothing per request

    def handle_one_request(self) -> None:
        """A client that closes a kept-alive connection between two exchanges (every SDK client does,
        with its GET stream) has ended nothing mid-exchange: no line on stderr for it."""
        self.raw_requestline = b""  # what the next request's first line is, once read
        try:
            super().handle_one_request()
        except (ConnectionResetError, BrokenPipeError):
            if self.raw_requestline:  # a request was read: it was mid-exchange, _Proxy.handle_error says so
                raise
            self.close_connection = True

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _target(self) -> str:
        # The request path is forwarded as is; a bare "/" means the upstream's own path.
        path = self.path
        if path == "/" and urlsplit(self.server.upstream).path not in ("", "/"):
            return self.server.upstream
        return self.server.origin + path

    def _forward(self) -> None:
        srv = self.server
        resp, body, session = self._send_upstream(self.headers.get(SESSION_HEADER))
        if resp is None:
            return
        with srv.lock:
            srv.open_responses.add(resp)
        if resp.status_code >= 400 and self.command == "POST":
            srv.recorder.refused(body, session)
        try:
            self._relay(resp, session)
        finally:
            resp.close()
            with srv.lock:
                srv.open_responses.discard(resp)

    def _send_upstream(self, session_id: str | None) -> tuple[httpx.Response | None, bytes, int | None]:
        """Forward the request and record its messages; the upstream's answer (its head: the body
        streams), the request body, and the tape's number of the session (None if the upstream
        was unreachable: answered 502 here)."""
        srv = self.server
        body = self._read_body()
        srv.recorder.learn_secrets(self.headers)
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP | {"host", "content-length"}]
        headers = [(k, v) for k, v in headers if k.lower() != "accept-encoding"]
        # Identity encoding upstream: the recorder must read the bytes it forwards.
        headers.append(("Accept-Encoding", "identity"))
        session = srv.recorder.session(session_id)
        posted = body.decode("utf-8", "replace") if self.command == "POST" and body.strip() else None
        # A streamable HTTP initialize (its client accepts SSE; it has no session id yet) belongs to the
        # session its answer names, and that answer comes in this POST's own body: its messages are
        # recorded once the answer's head is here, before anything of the answer. Anything else is
        # recorded before it is forwarded: the legacy transport answers on its GET stream, maybe first.
        named_by_answer = (posted is not None and not session_id and '"initialize"' in posted
                           and "text/event-stream" in self.headers.get("Accept", ""))
        if posted is not None and not named_by_answer:
            srv.recorder.messages_from(C2S, posted, session)
        try:
            request = srv.client.build_request(self.command, self._target(), content=body or None, headers=headers)
            resp = srv.client.send(request, stream=True)
        except httpx.HTTPError as e:
            if named_by_answer:
                srv.recorder.messages_from(C2S, str(posted), None)
            srv.recorder.note({"request": self.command, "status": 502, "error": type(e).__name__}, session)
            self._send_plain(502, f"mcptape rec: upstream {safe_url(srv.upstream)} unreachable: {type(e).__name__}\n")
            return None, body, session
        if named_by_answer:
            session = srv.recorder.session(resp.headers.get(SESSION_HEADER))
            srv.recorder.messages_from(C2S, str(posted), session)
        return resp, body, session

    # Every method goes upstream as it came.
    do_POST = do_GET = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = do_HEAD = _forward

    def _relay(self, resp: httpx.Response, session: int | None) -> None:
        srv = self.server
        srv.recorder.learn_secrets(resp.headers)
        srv.recorder.cors(self.command == "OPTIONS", resp.headers)
        if resp.status_code >= 400:
            srv.recorder.note({"request": self.command, "status": resp.status_code}, session)
        out = ChunkedBody(self) if self._relay_head(resp) else None
        if self._relay_body(resp, out, session) and out is not None:
            try:
                out.end()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    def _relay_head(self, resp: httpx.Response) -> bool:
        """Send the upstream's status line and headers; True if the body goes out chunked."""
        length = resp.headers.get("content-length")
        self.send_response_only(resp.status_code, resp.reason_phrase)
        for key, value in resp.headers.multi_items():
            if key.lower() not in HOP_BY_HOP | {"content-length"}:
                self.send_header(key, value)
        chunked = length is None and self.command != "HEAD" and resp.status_code not in (204, 304)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif length is not None:
            self.send_header("Content-Length", length)
        self.end_headers()
        self.wfile.flush()
        return chunked

    def _relay_body(self, resp: httpx.Response, out: ChunkedBody | None, session: int | None) -> bool:
        """Forward the body as it comes and record the messages in it (an SSE stream's events, a
        JSON body's messages); False if either side dropped the connection.

        A message is recorded before the chunk that completes it goes on: a client that reads a
        server's request (sampling, elicitation) or an answer can send its reply at once on another
        connection, whose handler records it, and the tape must hold what came first first. An SSE
        event is whole in the chunk that ends it; a JSON body is whole at its end, so its last chunk
        is held until its messages are recorded. Recording only parses and queues (the writer thread
        redacts and writes), so the wire waits for a parse, not for the disk."""
        srv = self.server
        ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
        sse = SseParser() if ctype == "text/event-stream" else None
        collected: list[bytes] = []
        held = b""  # a JSON body's latest chunk, forwarded once another came or the body was recorded

        def forward(chunk: bytes) -> None:
            if out is not None:
                out.write(chunk)
            else:
                self.wfile.write(chunk)
                self.wfile.flush()

        try:
            for chunk in resp.iter_raw():
                if sse is not None:
                    for ev in sse.feed(chunk):
                        if ev.event == "message" and ev.data.strip():  # not a priming event (no data)
                            srv.recorder.messages_from(S2C, ev.data, session, sse=True)
                elif ctype == "application/json":
                    collected.append(chunk)
                    forward(held)
                    held = chunk
                    continue
                forward(chunk)
        except httpx.HTTPError as e:
            # The upstream dropped mid-answer: drop the client's connection too (no final
            # chunk), so the client sees exactly what it would have seen without us.
            srv.recorder.note({"request": self.command, "dropped": "upstream connection", "error": type(e).__name__},
                              session)
            self.close_connection = True
            return False
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client hung up (e.g. closed its GET stream)
            return False
        if collected:
            for line in parse_json_messages(b"".join(collected)):
                srv.recorder.messages_from(S2C, line.decode("utf-8", "replace"), session)
        try:
            forward(held)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return False
        return True

    def _send_plain(self, status: int, text: str) -> None:
        data = text.encode("utf-8")
        self.send_response_only(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def safe_url(url: str) -> str:
    """A URL fit for a terminal: no userinfo, no query (either may hold a credential)."""
    p = urlsplit(url)
    port = f":{p.port}" if p.port else ""
    return f"{p.scheme}://{p.hostname or ''}{port}{p.path}"


def record_http(
    upstream: str,
    listen: str,
    out: Path,
    name: str,
    *,
    on_ready: Callable[[str], None],
    stop: threading.Event | None = None,
    allow_hosts: tuple[str, ...] = (),
    say: Callable[[str], None] | None = None,
) -> int:
    """Record the traffic to `upstream` (an http(s) MCP endpoint) through a proxy at `listen`
    (HOST:PORT) into `out` until SIGINT/SIGTERM (or `stop`); the tape gets its footer when the proxy
    stops. Returns how many messages were recorded; a SecretLeak if the tape had to be dropped.
    `on_ready` gets the proxy's own URL once it listens; `allow_hosts` are the names answered besides
    the loopback ones (HostCheck); `say` a line for a person (stderr by default): a refused request,
    a warning."""
    parts = urlsplit(upstream)
    host, port = parse_listen(listen)
    host_check = HostCheck(host, allow_hosts, say or outlet_say)
    if host_check.warning:
        (say or outlet_say)(f"mcptape rec: {host_check.warning}")
    server = _Proxy((host, port), ProxyHandler, host_check)
    server.upstream = upstream
    server.origin = f"{parts.scheme}://{parts.netloc}"
    server.client = new_client(httpx.Timeout(30.0, read=None))
    server.open_responses = set()
    server.lock = threading.Lock()
    server.recorder = HttpRecorder(out, name)
    server.say = say or outlet_say
    try:
        serve_until_stopped(server, lambda: on_ready(server.url_base), stop)
    finally:
        with server.lock:
            responses = list(server.open_responses)
        for resp in responses:
            resp.close()
        server.client.close()
        server.recorder.close()
    if server.recorder.leak is not None:
        raise server.recorder.leak
    return server.recorder.messages


