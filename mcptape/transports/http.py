"""HTTP transports: streamable HTTP and the legacy HTTP+SSE transport, plus an optional `start:` server.

Same tiny interface as StdioTransport (`send`, `receive`, `close`, `stderr_tail`), so the
scripted client does not know which wire it talks over. Owns HTTP framing only: POST per
message, JSON or SSE answers (parsed incrementally), `Mcp-Session-Id`, `MCP-Protocol-Version`,
the GET stream for server-initiated messages, DELETE on close, and the legacy `endpoint`
handshake. It knows no MCP method beyond the three facts HTTP framing needs: which message is
`initialize` (its answer carries the session id and protocol version), that
`notifications/initialized` opens the GET stream, and which request a response answers (so a
stream that ends early can be named). What the messages mean is live/client.py's business.

Every incoming message, from every POST answer and the GET/SSE stream, lands in one queue
that `receive` reads. Errors of the background readers (HTTP status, dropped connection) are
queued as ServerError and raised by `receive`, in order with the messages received before them.
Configured `headers:` are secrets: they are sent, never logged or put in an error message.
A server that wants an OAuth token (`auth:`) gets the one oauth.py's OAuthClient holds: a request
answered 401 is sent again once with a fresh token.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import json
import os
import queue
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from mcptape.errors import RequestRefused, ServerError, ServerTimeout
from mcptape.jsonrpc import loads, wire_dumps
from mcptape.mcp import meta_version
from mcptape.transports.oauth import OAuthClient
from mcptape.transports.sse import SESSION_HEADER, SseEvent, SseParser
from mcptape.transports.stdio import ServerProcess

ACCEPT_BOTH = "application/json, text/event-stream"
PROTOCOL_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
# The param each method's `Mcp-Name` carries; the tasks extension routes its methods by task id.
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}

CONNECT_TIMEOUT = 10.0
# Resuming an SSE stream the server closed before its answer (StreamableHttpTransport._resume): the wait
# when the server gave no `retry` (the SDKs' default), and how many resumptions in a row may bring nothing.
RESUME_DELAY = 1.0
# How long the sender waits for the GET stream's answer before the first message after
# `notifications/initialized` goes out (_open_get_stream). Servers answer its headers at once;
# one that holds them until it has an event costs a session this much, once.
GET_STREAM_WAIT = 2.0
MAX_FRUITLESS = 3
OUTPUT_TAIL_LINES = 40
ERROR_BODY_CHARS = 500


# --- header handling (pure) ------------------------------------------------------------------


def encode_header_value(value: str) -> str:
    """A header-safe form of `value`: printable ASCII as is, anything else base64 in a sentinel."""
    if all(0x20 <= ord(c) <= 0x7E for c in value) and value == value.strip() and not value.startswith("=?base64?"):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def message_headers(
    msg: Any,
    *,
    configured: Mapping[str, str],
    session_id: str | None,
    protocol: str | None,
) -> dict[str, str]:
    """The headers of the POST carrying `msg`.

    Legacy sessions: the session id and negotiated protocol version once known (never on
    `initialize` itself). A request stamped with a stateless revision in its `_meta` gets that
    version, `Mcp-Method` and `Mcp-Name` instead, and no session id: those revisions have none.
    Configured headers go first so the MCP ones cannot be overridden by accident.
    """
    headers = dict(configured)
    headers["Accept"] = ACCEPT_BOTH
    headers["Content-Type"] = "application/json"
    stateless = meta_version(msg.get("params")) if isinstance(msg, dict) else None
    if stateless is not None:
        headers[PROTOCOL_HEADER] = stateless
        method = msg.get("method")
        if isinstance(method, str):
            headers[METHOD_HEADER] = method
            key = NAME_BEARING.get(method)
            value = (msg.get("params") or {}).get(key) if key else None
            if isinstance(value, str):
                headers[NAME_HEADER] = encode_header_value(value)
        return headers
    is_initialize = isinstance(msg, dict) and msg.get("method") == "initialize"
    if session_id and not is_initialize:
        headers[SESSION_HEADER] = session_id
    if protocol and not is_initialize:
        headers[PROTOCOL_HEADER] = protocol
    return headers


def parse_json_messages(body: bytes) -> list[bytes]:
    """A JSON answer body as message lines: one message, or each element of a batch array."""
    text = body.strip()
    if text.startswith(b"["):
        try:
            items = loads(text.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return [text]
        return [wire_dumps(item).encode("utf-8") for item in items]
    return [text] if text else []


def _parse(line: bytes) -> Any:
    try:
        return loads(line.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def _describe(msg: Any) -> str:
    """'request 3 (tools/call)' — for error messages; never payloads (they may hold secrets)."""
    if not isinstance(msg, dict):
        return "a message that is not JSON"
    if "method" in msg:
        kind = "request" if "id" in msg else "notification"
        ident = f" {json.dumps(msg['id'])}" if "id" in msg else ""
        return f"{kind}{ident} ({msg['method']})"
    return f"response {json.dumps(msg.get('id'))}"


def _body_snippet(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    return text[:ERROR_BODY_CHARS] + ("..." if len(text) > ERROR_BODY_CHARS else "")


def new_client(timeout: httpx.Timeout) -> httpx.Client:
    """An httpx client for MCP traffic: no redirects, identity encoding, Nagle off.

    httpcore writes a request's headers and body in separate sends; with Nagle on, the body
    waits for the peer's delayed ACK (~20-40 ms per round trip on Linux loopback).
    """
    transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    return httpx.Client(
        transport=transport,
        timeout=timeout,
        follow_redirects=False,
        headers={"Accept-Encoding": "identity"},
    )


# --- the optional `start:` server ------------------------------------------------------------


class StartedServer:
    """A server launched by `start:`: its output drained into a tail, stopped with its process group."""

    def __init__(self, command: list[str], *, env: Mapping[str, str], cwd: str | os.PathLike[str] | None) -> None:
        self.process = ServerProcess(command, env=env, cwd=cwd)
        self._tail: collections.deque[bytes] = collections.deque(maxlen=OUTPUT_TAIL_LINES)
        self._lock = threading.Lock()
        self._threads = []
        for pipe in (self.process.popen.stdout, self.process.popen.stderr):
            t = threading.Thread(target=self._drain, args=(pipe,), name="http-start-out", daemon=True)
            t.start()
            self._threads.append(t)

    def _drain(self, pipe: Any) -> None:
        try:
            for line in iter(pipe.readline, b""):
                with self._lock:
                    self._tail.append(line)
        except (OSError, ValueError):
            pass

    def output_tail(self, lines: int = 20) -> str:
        with self._lock:
            tail = list(self._tail)[-lines:]
        return b"".join(tail).decode("utf-8", "backslashreplace").rstrip()

    def wait_ready(self, url: str, timeout: float) -> None:
        """Poll the URL's port until it accepts a connection; ServerError with the output if not."""
        parts = urlsplit(url)
        host = parts.hostname or "127.0.0.1"
        port = parts.port or (443 if parts.scheme == "https" else 80)
        deadline = time.monotonic() + timeout
        while True:
            code = self.process.popen.poll()
            if code is not None:
                for t in self._threads:
                    t.join(timeout=1.0)
                raise ServerError(
                    f"the `start:` command {' '.join(self.process.command)!r} exited with code {code} "
                    f"before {host}:{port} accepted connections; its output:\n{self.output_tail() or '(none)'}",
                    hint="run the start command by hand to see why it stops",
                )
            try:
                with socket.create_connection((host, port), timeout=0.5):
                    return
            except OSError:
                pass
            if time.monotonic() >= deadline:
                self.stop()
                raise ServerError(
                    f"the server started by `start:` did not accept connections on {host}:{port} "
                    f"within {timeout:g}s; its output:\n{self.output_tail() or '(none)'}",
                    hint="check that `url:` names the port the server listens on, or raise `ready_timeout:`",
                )
            time.sleep(0.05)

    def stop(self) -> int | None:
        """SIGTERM the process group at once (an HTTP server does not read stdin), then SIGKILL."""
        code = self.process.shutdown(grace=0.0)
        for t in self._threads:
            t.join(timeout=1.0)
        return code


# --- the transports --------------------------------------------------------------------------

_Item = bytes | ServerError | None


class _HttpTransportBase:
    """What both HTTP transports share: the client, the incoming queue, the sender thread, close."""

    def __init__(self, url: str, headers: Mapping[str, str], *, started: StartedServer | None = None,
                 auth: OAuthClient | None = None) -> None:
        self.url = url
        self._configured = dict(headers)
        self._started = started
        self.spawned = started is not None  # base.py: a `url:` server's silence says nothing
        self.stderr_lines: list[bytes] = []  # a started server's output is its stderr_tail, never recorded
        self.stderr_left_out = (0, 0)
        self._client = new_client(httpx.Timeout(CONNECT_TIMEOUT, read=None))
        self._auth = auth  # the server's OAuth token, if it wants one (`auth:`)
        self._incoming: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._outgoing: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._responses: set[httpx.Response] = set()
        self._threads: list[threading.Thread] = []
        self.returncode: int | None = None
        self._spawn(self._send_loop, "http-send")

    # -- interface --

    def send(self, line: bytes) -> None:
        """Queue one message for POSTing; HTTP failures surface at the next `receive`."""
        if self._closing.is_set():
            raise ServerError(f"the HTTP transport to {self.url} is closed")
        self._outgoing.put(line)

    def receive(self, timeout: float | None = None) -> bytes | None:
        """The next message from any stream; None at the end; ServerError for a failed exchange."""
        try:
            item = self._incoming.get(timeout=timeout)
        except queue.Empty:
            raise ServerTimeout(f"no message from {self.url} within {timeout:g}s") from None
        if isinstance(item, ServerError):
            raise item
        return item

    def stderr_tail(self, lines: int = 20) -> str:
        return self._started.output_tail(lines) if self._started else ""

    def close(self, grace: float = 2.0) -> int | None:
        """End the exchange (DELETE the session where there is one), then stop a started server."""
        if self._closing.is_set():
            return self.returncode
        self._outgoing.put(None)
        deadline = time.monotonic() + grace
        for t in self._threads[:1]:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        self._closing.set()
        self._terminate()
        with self._lock:
            responses = list(self._responses)
        for resp in responses:
            resp.close()
        self._client.close()
        if self._auth is not None:
            self._auth.close()
        if self._started is not None:
            self.returncode = self._started.stop()
        self._incoming.put(None)
        return self.returncode

    # -- for subclasses --

    def _terminate(self) -> None:
        """Hook: end the server-side session before the connections close."""

    def _post(self, line: bytes, msg: Any) -> None:
        raise NotImplementedError

    def _spawn(self, target: Any, name: str, *args: Any) -> None:
        t = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def _send_loop(self) -> None:
        # One sender keeps messages in the order the client wrote them; it waits only for
        # each answer's headers (a streamed body is read by its own thread), so a request
        # whose answer streams on does not hold back the client's reply to a server request.
        while True:
            line = self._outgoing.get()
            if line is None or self._closing.is_set():
                return
            msg = _parse(line)
            try:
                self._post(line, msg)
            except httpx.HTTPError as e:
                if not self._closing.is_set():
                    self._fail(f"POST {self._safe_url()} for {_describe(msg)} failed: {type(e).__name__}: {e}")

    def _fail(self, message: str, hint: str | None = None, *, refused: tuple[Any, int] | None = None) -> None:
        """Queue a ServerError; `refused` (request id, HTTP status) makes it a RequestRefused of that request."""
        tail = self.stderr_tail()
        if tail:
            message += f"\nserver output:\n{tail}"
        if refused is not None:
            self._incoming.put(RequestRefused(message, hint=hint, request_id=refused[0], status=refused[1]))
        else:
            self._incoming.put(ServerError(message, hint=hint))

    def _headers(self) -> dict[str, str]:
        """The configured headers, and the OAuth token if the server wants one."""
        headers = dict(self._configured)
        token = self._auth.bearer() if self._auth is not None else None
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _safe_url(self, url: str | None = None) -> str:
        """The URL without query or userinfo: either may carry a credential."""
        p = urlsplit(url or self.url)
        host = p.hostname or ""
        port = f":{p.port}" if p.port else ""
        return f"{p.scheme}://{host}{port}{p.path}"

    def _track(self, resp: httpx.Response, add: bool) -> None:
        with self._lock:
            if add:
                self._responses.add(resp)
            else:
                self._responses.discard(resp)

    def _deliver(self, data: bytes) -> None:
        self._incoming.put(data)

    def _drain(self, resp: httpx.Response) -> bytes:
        """The body of an answer read to its end (empty if the connection dropped), then closed."""
        try:
            return resp.read()
        except httpx.HTTPError:
            return b""
        finally:
            resp.close()
            self._track(resp, False)

    def _read_sse(self, resp: httpx.Response, what: str, answers: Any, on_event: Any = None) -> bool:
        """Read an SSE body to its end, delivering messages. True if the request was answered.

        `answers` is the id of the request this stream must answer (None for the GET stream).
        A stream that ends or drops before its answer is resumed where the transport can
        (`_resume`: streamable HTTP, with Last-Event-ID after the server's `retry`), as often as
        each resumption brings something; else, or once that stops, a ServerError is queued after
        everything received up to that point. The client sees one exchange either way: the
        messages, each once, and no trace of how often the stream was cut.
        """
        parser = SseParser()
        answered = answers is None
        want = json.dumps(answers) if answers is not None else None
        seen: set[str] = set()  # event ids delivered: a resumed stream never delivers one twice
        fruitless = 0  # resumptions in a row that brought no event
        while True:
            before = parser.dispatched
            dropped: httpx.HTTPError | None = None
            try:
                for chunk in resp.iter_raw():
                    for ev in parser.feed(chunk):
                        if on_event is not None and on_event(ev):
                            continue
                        if ev.event != "message" or (ev.id is not None and ev.id in seen):
                            continue
                        if ev.id is not None:
                            seen.add(ev.id)
                        data = ev.data.encode("utf-8")
                        if not answered and _answers(data, want):
                            answered = True
                        self._deliver(data)
            except httpx.HTTPError as e:
                dropped = e
            finally:
                resp.close()
                self._track(resp, False)
            if answered or self._closing.is_set():
                return answered
            fruitless = 0 if parser.dispatched > before else fruitless + 1
            resumed, reported = self._resume(parser, what, fruitless)
            if resumed is None:
                if reported:  # the resumption's own failure says what happened
                    return answered
                break
            resp = resumed
        if dropped is not None:
            self._fail(
                f"the connection to {self._safe_url()} dropped while reading {what}: {type(dropped).__name__}: {dropped}",
                hint="the server closed the stream mid-answer; everything received before is kept",
            )
        else:
            self._fail(
                f"{self._safe_url()} ended the SSE stream of {what} before answering it",
                hint="the server closed the stream early (crashed or restarted?)",
            )
        return answered

    def _resume(self, parser: SseParser, what: str, fruitless: int) -> tuple[httpx.Response | None, bool]:
        """Hook: the stream of `what` resumed after it ended unanswered, or None (not resumable); and
        whether a failure of the resumption was queued already."""
        return None, False


def _refusal(request: Any, status: int) -> tuple[Any, int] | None:
    """(id, status) when an HTTP status refuses this one request (4xx but credentials), else None.

    401/403 are about the connection's credentials, not the request: they stay plain failures.
    """
    if request is None or not 400 <= status < 500 or status in (401, 403):
        return None
    return request["id"], status


def _answers(data: bytes, want: str | None) -> bool:
    if want is None or b'"id"' not in data:
        return False
    msg = _parse(data)
    return isinstance(msg, dict) and "method" not in msg and json.dumps(msg.get("id")) == want


class StreamableHttpTransport(_HttpTransportBase):
    """MCP streamable HTTP: POST each message, answers as JSON or SSE, GET stream for the server's own."""

    def __init__(self, url: str, headers: Mapping[str, str], *, started: StartedServer | None = None,
                 auth: OAuthClient | None = None) -> None:
        self.session_id: str | None = None
        self.protocol: str | None = None
        self._initialize_id: str | None = None  # json.dumps of the initialize request's id
        self._get_opened = False
        self._get_answered = threading.Event()  # the GET stream's headers came (or it failed)
        super().__init__(url, headers, started=started, auth=auth)

    def _deliver(self, data: bytes) -> None:
        # The negotiated version is read off the initialize answer as it passes through,
        # before the client sees it, so every later POST already carries the header.
        if self._initialize_id is not None and _answers(data, self._initialize_id):
            msg = _parse(data)
            result = msg.get("result") if isinstance(msg, dict) else None
            if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                self.protocol = result["protocolVersion"]
            self._initialize_id = None
        super()._deliver(data)

    def _post(self, line: bytes, msg: Any) -> None:
        is_request = isinstance(msg, dict) and "method" in msg and "id" in msg
        if is_request and msg["method"] == "initialize":
            self._initialize_id = json.dumps(msg["id"])
            self.session_id = None
        resp = self._send_post(line, msg)
        if resp is None:
            return
        self._track(resp, True)
        sid = resp.headers.get(SESSION_HEADER)
        if sid and is_request and msg["method"] == "initialize":
            self.session_id = sid
        what = _describe(msg)
        if resp.status_code >= 300:
            self._http_error(resp, what, msg if is_request else None)
            return
        ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
        if resp.status_code == 202 or not is_request:
            resp.close()
            self._track(resp, False)
            if isinstance(msg, dict) and msg.get("method") == "notifications/initialized":
                self._open_get_stream()
            return
        if ctype == "text/event-stream":
            self._spawn(self._read_sse, "http-post-sse", resp, what, msg["id"])
        else:
            self._spawn(self._read_json, "http-post-json", resp, what, msg["id"])

    def _send_post(self, line: bytes, msg: Any) -> httpx.Response | None:
        """POST one message; a 401 from a server with `auth:` gets a fresh token and one more try.
        None if no token could be had (the failure is queued)."""
        for attempt in (1, 2):
            headers = message_headers(msg, configured=self._headers(), session_id=self.session_id,
                                      protocol=self.protocol)
            resp = self._client.send(self._client.build_request("POST", self.url, content=line, headers=headers),
                                     stream=True)
            if resp.status_code != 401 or self._auth is None or attempt == 2:
                return resp
            resp.close()
            try:
                self._auth.unauthorized(resp.headers.get("WWW-Authenticate"))
            except ServerError as e:
                # (Never "token: X" in a message: the redactor reads that as a secret assignment.)
                self._fail(f"{_describe(msg)} was refused (HTTP 401) and no OAuth token could be had: {e.message}",
                           hint=e.hint)
                return None
        raise AssertionError("unreachable")

    def _read_json(self, resp: httpx.Response, what: str, answers: Any) -> None:
        try:
            body = resp.read()
        except httpx.HTTPError as e:
            if not self._closing.is_set():
                self._fail(f"the connection to {self._safe_url()} dropped while reading the answer to {what}: {e}")
            return
        finally:
            resp.close()
            self._track(resp, False)
        lines = parse_json_messages(body)
        want = json.dumps(answers)
        for data in lines:
            self._deliver(data)
        if not any(_answers(data, want) for data in lines) and not self._closing.is_set():
            self._fail(f"{self._safe_url()} answered {what} with a JSON body that holds no answer to it")

    def _http_error(self, resp: httpx.Response, what: str, request: Any) -> None:
        body = self._drain(resp)
        # A JSON-RPC error answering the request is the server's answer: pass it on as one.
        if request is not None and resp.headers.get("content-type", "").startswith("application/json"):
            want = json.dumps(request["id"])
            lines = parse_json_messages(body)
            if any(_answers(d, want) for d in lines):
                for data in lines:
                    self._deliver(data)
                return
        hint = None
        if resp.status_code == 404 and self.session_id:
            hint = "the server no longer knows this session (restarted or expired)"
        elif resp.status_code in (401, 403):
            hint = ("the server refused the OAuth token (auth:); check the client's scopes and grants"
                    if self._auth is not None else "check the `headers:` (credentials) or `auth:` of this server")
        elif resp.status_code == 406:
            hint = "the server refused the Accept header; is this URL an MCP streamable HTTP endpoint?"
        self._fail(
            f"{self._safe_url()} answered {what} with HTTP {resp.status_code}: {_body_snippet(body) or '(empty body)'}",
            hint=hint,
            refused=_refusal(request, resp.status_code),
        )

    def _open_get_stream(self) -> None:
        """Open the GET stream and wait (GET_STREAM_WAIT at most) for its answer before the sender
        goes on: the stream is there before the session's first request, as on an idle machine.
        Not waiting, a loaded one sent the GET after the first `tools/call`, and a server that
        answers a call on whichever stream is open (the conformance suite's sse-retry) then
        answered it on the GET stream instead of the call's own resumed one."""
        if self._get_opened:
            return
        self._get_opened = True
        self._spawn(self._get_stream, "http-get-sse")
        self._get_answered.wait(GET_STREAM_WAIT)

    def _get_stream(self) -> None:
        headers = self._headers()
        headers["Accept"] = "text/event-stream"
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol:
            headers[PROTOCOL_HEADER] = self.protocol
        try:
            request = self._client.build_request("GET", self.url, headers=headers)
            resp = self._client.send(request, stream=True)
        except httpx.HTTPError:
            return  # optional stream: the session works without it
        finally:
            self._get_answered.set()
        self._track(resp, True)
        ctype = resp.headers.get("content-type", "")
        if resp.status_code != 200 or not ctype.startswith("text/event-stream"):
            # 405: the server offers no GET stream, which the spec allows.
            resp.close()
            self._track(resp, False)
            return
        self._read_sse(resp, "the GET stream", None)

    def _resume(self, parser: SseParser, what: str, fruitless: int) -> tuple[httpx.Response | None, bool]:
        """Resume a stream the server ended before answering (SSE polling, SEP-1699): after the
        server's `retry` (RESUME_DELAY without one), GET with `Last-Event-ID`, and read on. Only a
        stream that gave event ids is resumable; one whose resumptions bring nothing MAX_FRUITLESS
        times in a row is given up (the step's timeout bounds the wait in any case)."""
        if parser.last_event_id is None or fruitless > MAX_FRUITLESS:
            return None, False
        delay = parser.retry / 1000 if parser.retry is not None else RESUME_DELAY
        if self._closing.wait(delay):
            return None, True
        headers = self._headers()
        headers["Accept"] = "text/event-stream"
        headers["Last-Event-ID"] = parser.last_event_id
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol:
            headers[PROTOCOL_HEADER] = self.protocol
        try:
            resp = self._client.send(self._client.build_request("GET", self.url, headers=headers), stream=True)
        except httpx.HTTPError as e:
            if not self._closing.is_set():
                self._fail(f"resuming {what} (GET {self._safe_url()} with Last-Event-ID) failed: {type(e).__name__}: {e}")
            return None, True
        self._track(resp, True)
        if resp.status_code == 200 and resp.headers.get("content-type", "").startswith("text/event-stream"):
            return resp, False
        body = self._drain(resp)
        if not self._closing.is_set():
            self._fail(
                f"{self._safe_url()} ended the SSE stream of {what} before answering it, and refused to resume it "
                f"(GET with Last-Event-ID answered HTTP {resp.status_code}: {_body_snippet(body) or '(empty body)'})",
                hint="the server closes streams for polling (SEP-1699) but does not serve the resumption",
            )
        return None, True

    def _terminate(self) -> None:
        if not self.session_id:
            return
        headers = self._headers()
        headers[SESSION_HEADER] = self.session_id
        if self.protocol:
            headers[PROTOCOL_HEADER] = self.protocol
        # The server may already be gone; ending the session is a courtesy.
        with contextlib.suppress(httpx.HTTPError):
            self._client.request("DELETE", self.url, headers=headers, timeout=5.0)


class SseTransport(_HttpTransportBase):
    """The legacy HTTP+SSE transport: one GET stream names a POST endpoint and carries every answer."""

    ENDPOINT_TIMEOUT = 10.0

    def __init__(self, url: str, headers: Mapping[str, str], *, started: StartedServer | None = None) -> None:
        self.endpoint: str | None = None
        self._endpoint_ready = threading.Event()
        super().__init__(url, headers, started=started)
        self._spawn(self._stream, "http-sse-stream")

    def _stream(self) -> None:
        headers = dict(self._configured)
        headers["Accept"] = "text/event-stream"
        try:
            request = self._client.build_request("GET", self.url, headers=headers)
            resp = self._client.send(request, stream=True)
        except httpx.HTTPError as e:
            if not self._closing.is_set():
                self._fail(f"GET {self._safe_url()} (the SSE stream) failed: {type(e).__name__}: {e}")
            self._endpoint_ready.set()
            return
        self._track(resp, True)
        if resp.status_code != 200:
            body = resp.read()
            resp.close()
            self._track(resp, False)
            self._fail(f"GET {self._safe_url()} (the SSE stream) answered HTTP {resp.status_code}: {_body_snippet(body)}")
            self._endpoint_ready.set()
            return
        self._read_sse(resp, "the SSE stream", None, on_event=self._on_event)
        if not self._closing.is_set():
            self._fail(f"{self._safe_url()} closed the SSE stream", hint="the server ended the session or crashed")
            self._incoming.put(None)
        self._endpoint_ready.set()

    def _on_event(self, ev: SseEvent) -> bool:
        if ev.event != "endpoint":
            return False
        endpoint = urljoin(self.url, ev.data.strip())
        mine, theirs = urlsplit(self.url), urlsplit(endpoint)
        if (mine.scheme, mine.netloc) != (theirs.scheme, theirs.netloc):
            # Never send messages (and our headers) to another origin than the one configured.
            self._fail(f"the SSE endpoint event names another origin ({self._safe_url(endpoint)}); refusing it")
        else:
            self.endpoint = endpoint
        self._endpoint_ready.set()
        return True

    def _post(self, line: bytes, msg: Any) -> None:
        if not self._endpoint_ready.wait(self.ENDPOINT_TIMEOUT) or self.endpoint is None:
            if self.endpoint is None and not self._closing.is_set():
                self._fail(
                    f"{self._safe_url()} sent no `endpoint` event within {self.ENDPOINT_TIMEOUT:g}s; "
                    f"cannot send {_describe(msg)}",
                    hint="is this URL a legacy HTTP+SSE endpoint? use `transport: streamable-http` otherwise",
                )
            return
        headers = dict(self._configured)
        headers["Content-Type"] = "application/json"
        resp = self._client.post(self.endpoint, content=line, headers=headers)
        if resp.status_code >= 300:
            is_request = isinstance(msg, dict) and "method" in msg and "id" in msg
            self._fail(
                f"{self._safe_url(self.endpoint)} answered {_describe(msg)} with HTTP {resp.status_code}: "
                f"{_body_snippet(resp.content) or '(empty body)'}",
                refused=_refusal(msg if is_request else None, resp.status_code),
            )


HttpTransport = StreamableHttpTransport | SseTransport  # (transports/base.py's Transport is the interface)
