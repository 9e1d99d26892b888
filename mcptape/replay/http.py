"""`mcptape play TAPE --listen HOST:PORT`: serve a tape as a streamable HTTP MCP server, offline (`serve_http`).

Owns the HTTP framing of replay only: sessions (`Mcp-Session-Id`, one ReplayEngine each),
answering a POSTed request as JSON (one message) or SSE (when notifications or server requests
come with the answer), 202 for notifications and answers, the GET stream for server-initiated
messages, DELETE. What to answer is engine.py's ReplayEngine (lab.py's LabEngine around it), the same one stdio play uses.
Stdlib only: `mcptape play` must not import httpx.

An answer recorded with an HTTP error status (rec --listen notes a status >= 400 before the body)
is sent with that status. An answer goes as a JSON body if the recorded server sent it as one, as
an SSE stream if it did (rec --listen marks those, tape/events.py) or if messages go before it; a
tape without the mark (recorded by ci, or by an older rec) gets JSON for a lone answer. The CORS
headers rec --listen noted (`cors` notes) go on every answer as recorded, and the recorded
preflight's on the answer to OPTIONS, so a browser client (the web Inspector) can read
`Mcp-Session-Id`; a tape without them gets none, and OPTIONS gets 405.

Routing of the lines an engine returns: an answer goes to the stream of the POST that asked;
a notification or server request goes with the POST that triggered it if that POST is a
request still open, else to the newest open request stream, else to the GET stream, else it
waits for a GET stream to open (a real server would drop it; keeping it loses nothing).
"""

from __future__ import annotations

import json
import queue
import threading
import uuid
from collections.abc import Callable
from typing import Any

from mcptape.jsonrpc import classify, id_key, loads
from mcptape.replay.lab import Served
from mcptape.replay.outgoing import Outgoing
from mcptape.tape.events import CORS_NOTE
from mcptape.tape.format import Tape
from mcptape.transports.serve import (
    CheckedHandler,
    ChunkedBody,
    HostCheck,
    Server,
    parse_listen,
    serve_until_stopped,
)
from mcptape.transports.sse import SESSION_HEADER, format_sse

_END = None  # marks the end of a request stream in its queue
_POLL = 0.2


class ReplaySession:
    """One client's replay: its engine and the streams its messages can go out on."""

    def __init__(self, engine: Served, session_id: str | None) -> None:
        self.engine = engine
        self.session_id = session_id
        self.lock = threading.Lock()
        self.streams: dict[str, queue.SimpleQueue[str | None]] = {}  # request id key -> its stream
        self.get_stream: queue.SimpleQueue[str | None] | None = None
        self.backlog: list[str] = list(engine.pending_startup())
        self.closed = False

    def route(self, sent: list[Outgoing], own: str | None) -> None:
        """Send each message where it belongs (see the module docstring); an answer is known as one
        by the engine that wrote it (outgoing.py), so no line is parsed here."""
        with self.lock:
            for message in sent:
                line = message.line
                if message.answer and (key := id_key(message.id)) in self.streams:
                    stream = self.streams.pop(key)
                    stream.put(line)
                    stream.put(_END)
                elif own is not None and own in self.streams:
                    self.streams[own].put(line)
                elif self.streams:
                    next(reversed(self.streams.values())).put(line)
                elif self.get_stream is not None:
                    self.get_stream.put(line)
                else:
                    self.backlog.append(line)

    def open_get(self) -> queue.SimpleQueue[str | None]:
        with self.lock:
            if self.get_stream is not None:
                self.get_stream.put(_END)  # one GET stream per session: the newest wins
            stream: queue.SimpleQueue[str | None] = queue.SimpleQueue()
            for line in self.backlog:
                stream.put(line)
            self.backlog = []
            self.get_stream = stream
            return stream

    def close(self) -> None:
        with self.lock:
            self.closed = True
            for stream in self.streams.values():
                stream.put(_END)
            self.streams.clear()
            if self.get_stream is not None:
                self.get_stream.put(_END)
                self.get_stream = None


class _PlayServer(Server):
    tape: Tape
    template: Served  # the first engine: each later session gets one like it (.fresh)
    spare: Served | None
    sessions: dict[str, ReplaySession]
    default: ReplaySession | None
    engines: list[Served]
    has_server_messages: bool
    cors: dict[str, list[tuple[str, str]]]  # "answer" | "preflight" -> the CORS headers recorded (_recorded_cors)
    stopping: threading.Event
    lock: threading.Lock

    def new_engine(self) -> Served:
        with self.lock:
            engine = self.spare or self.template.fresh()
            self.spare = None
            self.engines.append(engine)
            return engine


class PlayHandler(CheckedHandler):
    who = "mcptape play"  # every request passes the HostCheck first (CheckedHandler)
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and each SSE event go out at once
    server: _PlayServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- helpers --

    def _cors(self, which: str = "answer") -> None:
        for name, value in self.server.cors.get(which, ()):
            self.send_header(name, value)

    def _reply(self, status: int, body: bytes = b"", ctype: str | None = None, session: str | None = None) -> None:
        self.send_response(status)
        self._cors()
        if ctype:
            self.send_header("Content-Type", ctype)
        if session:
            self.send_header(SESSION_HEADER, session)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _error(self, status: int, message: str, msg_id: Any = None) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32600, "message": message}})
        self._reply(status, body.encode("utf-8"), "application/json")

    def _session(self, create: bool) -> ReplaySession | None:
        srv = self.server
        sid = self.headers.get(SESSION_HEADER)
        if create:
            session = ReplaySession(srv.new_engine(), uuid.uuid4().hex)
            with srv.lock:
                srv.sessions[str(session.session_id)] = session
            return session
        if sid:
            with srv.lock:
                return srv.sessions.get(sid)
        # No session id: a stateless (2026-07-28) client, or one that skipped initialize.
        with srv.lock:
            if srv.default is not None:
                return srv.default
        session = ReplaySession(srv.new_engine(), None)
        with srv.lock:
            if srv.default is None:
                srv.default = session
            return srv.default

    def _stream(self, stream: queue.SimpleQueue[str | None], first: list[str], session: ReplaySession) -> None:
        """Write an SSE body: the lines already due, then whatever the stream gets until it ends."""
        self.send_response(200)
        self._cors()
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if session.session_id:
            self.send_header(SESSION_HEADER, session.session_id)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        body = ChunkedBody(self)
        try:
            for line in first:
                body.write(format_sse(line))
            while not self.server.stopping.is_set():
                try:
                    item = stream.get(timeout=_POLL)
                except queue.Empty:
                    continue
                if item is _END:
                    break
                body.write(format_sse(item))
            body.end()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -- methods --

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        text = self.rfile.read(length).decode("utf-8", "surrogateescape") if length else ""
        try:
            msg = loads(text)
        except ValueError:
            msg = None
        kind = classify(msg)
        if kind == "invalid":
            self._error(400, "Bad Request: the body is not one JSON-RPC message (mcptape play)")
            return
        assert isinstance(msg, dict)
        is_init = kind == "request" and msg["method"] == "initialize"
        session = self._session(create=is_init)
        if session is None:
            self._error(404, "Session not found (mcptape play): initialize a new session", msg.get("id"))
            return
        if kind != "request":
            session.route(session.engine.exchange(text), None)
            self._reply(202, session=session.session_id)
            return
        own = id_key(msg["id"])
        stream: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        with session.lock:
            session.streams[own] = stream
        session.route(session.engine.exchange(text), own)
        due: list[str] = []
        ended = False
        while True:
            try:
                line = stream.get_nowait()
            except queue.Empty:
                break
            if line is _END:
                ended = True
                break
            due.append(line)
        if session.engine.closed and not ended:
            # The recorded server died in this call: the client sees the connection drop.
            with session.lock:
                session.streams.pop(own, None)
            self.close_connection = True
            return
        status = session.engine.http_status(msg["id"])
        in_sse = session.engine.answered_in_sse(msg["id"])
        if status is not None and due:
            # The recorded server answered this POST with an HTTP error status and a JSON body (a 400
            # with a JSON-RPC error for no id, say: server-everything's answer to server/discover).
            with session.lock:
                session.streams.pop(own, None)
            self._reply(status, due[-1].encode("utf-8", "surrogateescape"), "application/json", session.session_id)
            return
        if ended and len(due) == 1 and not in_sse:
            self._reply(200, due[0].encode("utf-8", "surrogateescape"), "application/json", session.session_id)
            return
        if ended:
            stream.put(_END)
        self._stream(stream, due, session)

    def do_GET(self) -> None:
        session = self._session(create=False)
        if session is None:
            self._reply(404)
            return
        if not self.server.has_server_messages and not session.backlog:
            # The tape holds nothing the server sent unasked: no GET stream, as the spec allows.
            self._reply(405)
            return
        self._stream(session.open_get(), [], session)

    def do_OPTIONS(self) -> None:
        """A browser's CORS preflight: answered as the recorded server answered it, if it was recorded."""
        if "preflight" not in self.server.cors:
            self._reply(405)
            return
        self.send_response(204)
        self._cors("preflight")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        sid = self.headers.get(SESSION_HEADER)
        srv = self.server
        with srv.lock:
            session = srv.sessions.pop(sid, None) if sid else None
        if session is None:
            self._reply(404)
            return
        session.close()
        self._reply(200)


def _recorded_cors(tape: Tape) -> dict[str, list[tuple[str, str]]]:
    """The first CORS headers rec --listen noted for answers and for preflights (record/http.py)."""
    found: dict[str, list[tuple[str, str]]] = {}
    for ev in tape.events:
        detail = ev.get("detail") if ev.get("kind") == "note" and ev.get("what") == CORS_NOTE else None
        if isinstance(detail, dict) and detail.get("cors") in ("answer", "preflight") and detail["cors"] not in found:
            headers = detail.get("headers")
            if isinstance(headers, dict):
                # A hand-edited tape must not split a header: no line breaks in what is sent.
                found[detail["cors"]] = [(str(k), str(v)) for k, v in headers.items()
                                         if str(k).lower().startswith("access-control-")
                                         and not any(c in f"{k}{v}" for c in "\r\n")]
    return found


def _has_server_messages(tape: Tape) -> bool:
    return any(ev.get("dir") == "s2c" and ev.get("kind") in ("request", "notification") for ev in tape.events)


def serve_http(
    first: Served,
    listen: str,
    *,
    on_ready: Callable[[str], None],
    stop: threading.Event | None = None,
    allow_hosts: tuple[str, ...] = (),
    say: Callable[[str], None] | None = None,
) -> list[Served]:
    """Serve `first`'s tape at `listen` (HOST:PORT) until SIGINT/SIGTERM (or `stop`): `first` (built
    by the caller, so a tape that cannot be replayed fails before anything is served) answers the
    first client session, a new engine like it (ReplayEngine.fresh: the same options, the same
    `say` for misses) each later one; all are returned for their reports. `on_ready` gets the
    endpoint's URL; `allow_hosts` are the names answered besides the loopback ones (HostCheck),
    `say` where a refused request is said."""
    tape = first.tape
    host, port = parse_listen(listen)
    host_check = HostCheck(host, allow_hosts, say)
    if host_check.warning and say is not None:
        say(f"mcptape play: {host_check.warning}")
    server = _PlayServer((host, port), PlayHandler, host_check)
    server.tape = tape
    server.template = first
    server.spare = first
    server.sessions = {}
    server.default = None
    server.engines = []
    server.has_server_messages = _has_server_messages(tape)
    server.cors = _recorded_cors(tape)
    server.stopping = threading.Event()
    server.lock = threading.Lock()
    try:
        serve_until_stopped(server, lambda: on_ready(f"{server.url_base}/mcp"), stop)
    finally:
        server.stopping.set()
        for session in list(server.sessions.values()):
            session.close()
    return server.engines
