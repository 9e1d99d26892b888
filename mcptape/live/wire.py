"""One session's wire state: the messages the scripted client sends and receives, and when.

Owns the request ids (1, 2, 3, ...; the discover probe's 0 and the task polls' own are the caller's),
the event log every message and note goes into (one EventBuilder, each event stamped with its step),
when each message crossed the wire, the step's and the session's deadlines, the 2026-07-28 `_meta`
every request carries, and the receive loop that waits for an answer while recording whatever else
arrives. A request the server sends is handed to `on_request` (live/server_requests.py answers it).
What the steps mean is live/client.py's; bytes and framing are the transport's (transports/).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcptape.config.models import ClientSettings
from mcptape.errors import ServerError, ServerTimeout
from mcptape.jsonrpc import dumps, id_key
from mcptape.mcp import META_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL, MODERN_PROTOCOL
from mcptape.tape.events import C2S, GARBLED_NOTE, S2C, EventBuilder, is_message
from mcptape.tape.format import Event
from mcptape.transports.base import Transport
from mcptape.version import __version__


class Wire:
    """The wire state of one session. Single-threaded: it reads the server's lines while it waits."""

    def __init__(self, transport: Transport, settings: ClientSettings, *, session: str, step_timeout: float,
                 session_timeout: float, clock: Callable[[], float]) -> None:
        self.transport = transport
        self.settings = settings
        self.session = session
        self.step_timeout = step_timeout
        self.session_timeout = session_timeout
        self.clock = clock
        self.events: list[Event] = []
        self._timed: list[tuple[Event, float]] = []  # message events and when they crossed the wire
        self.builder = EventBuilder()
        self.modern = False  # the session speaks 2026-07-28 (set by the handshake)
        self.log_level: str | None = None  # 2026-07-28's per-request log level (a set_log_level step)
        self._next_id = 1
        self._garbled: set[str] = set()  # id keys of our requests answered with non-UTF-8 lines
        self.step: int | None = None
        self.step_label = "initialize"
        self.step_deadline = 0.0
        self._step_budget = step_timeout
        self._session_deadline = clock() + session_timeout
        # A request from the server: answered (and the answer sent) before the wait goes on.
        self.on_request: Callable[[dict[str, Any]], None] = lambda msg: None

    # -- recording ---------------------------------------------------------------------------

    def record(self, event: Event, at: float | None = None) -> Event:
        """Keep `event`; a message is timed `at` (a request: before it was sent) or now (on arrival)."""
        if self.step is not None:
            event["step"] = self.step
        self.events.append(event)
        if is_message(event):
            self._timed.append((event, time.monotonic() if at is None else at))
        return event

    def event_times(self) -> list[float | None]:
        """Per event of `events` (as filtered since), when it crossed the wire; None for the rest."""
        clock = {id(event): t for event, t in self._timed}  # _timed holds the events: ids stay theirs
        return [clock.get(id(event)) for event in self.events]

    def where(self) -> str:
        """The session and step an error happened in, as messages name them."""
        if self.step is None:
            return f"session {self.session}: {self.step_label}"
        return f"session {self.session}: step {self.step} ({self.step_label})"

    def begin(self, step: int | None, label: str, timeout: float | None) -> None:
        """A new step (None: the handshake) and its deadline."""
        self.step = step
        self.step_label = label
        self._step_budget = timeout or self.step_timeout
        self.step_deadline = self.clock() + self._step_budget

    # -- sending -----------------------------------------------------------------------------

    def send(self, msg: dict[str, Any]) -> None:
        text = dumps(msg)
        # Timed before the write: the server may read it and start on it before send() returns,
        # and a latency must never read shorter than what the server took.
        at = time.monotonic()
        self.transport.send(text.encode("utf-8"))
        self.record(self.builder.message(C2S, msg, text), at)

    def new_id(self) -> int:
        msg_id = self._next_id
        self._next_id += 1
        return msg_id

    def request_once(self, method: str, params: dict[str, Any] | None, msg_id: int | str | None = None, *,
                     probe: bool = False) -> dict[str, Any]:
        """Send one request (the next id, or `msg_id`) and return the server's answer to it."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.new_id() if msg_id is None else msg_id, "method": method}
        if self.modern:
            params = self.stamped(params)
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.await_answer(msg["id"], null_id_error=probe)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def request_meta(self) -> dict[str, Any]:
        """The 2026-07-28 `_meta` of every request: version, this request's capabilities, who we are."""
        s = self.settings
        meta: dict[str, Any] = {
            META_PROTOCOL: MODERN_PROTOCOL,
            META_CAPABILITIES: dict(s.capabilities),
            META_CLIENT_INFO: {"name": s.name, "version": s.version or __version__},
        }
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        return meta

    def stamped(self, params: dict[str, Any] | None) -> dict[str, Any]:
        """`params` with the request's `_meta` first (a tape reads envelope, then content); keys the step gave win."""
        given = (params or {}).get("_meta")
        meta = {**self.request_meta(), **(given if isinstance(given, dict) else {})}
        return {"_meta": meta, **{k: v for k, v in (params or {}).items() if k != "_meta"}}

    # -- receiving ---------------------------------------------------------------------------

    def _remaining(self) -> tuple[float, str]:
        now = self.clock()
        step_left = self.step_deadline - now
        session_left = self._session_deadline - now
        if session_left < step_left:
            return session_left, f"the session timeout ({self.session_timeout:g}s)"
        return step_left, f"the step timeout ({self._step_budget:g}s)"

    def receive(self, *, until: float | None = None) -> dict[str, Any] | None:
        """Read and record one server line; answers server requests. None when `until` passes."""
        left, which = self._remaining()
        if until is not None and until - self.clock() < left:
            left = until - self.clock()
            if left <= 0:
                return None
            which = ""
        if left <= 0:
            raise ServerTimeout(f"{self.where()}: no answer from the server within {which}")
        try:
            line = self.transport.receive(left)
        except ServerTimeout:
            if not which:
                return None
            raise ServerTimeout(
                f"{self.where()}: no answer from the server within {which}",
                hint="raise `timeout:` on the step or `step_timeout:`/`timeout:` on the session if it is just slow",
            ) from None
        if line is None:
            if self.step is None:
                raise ServerError(
                    f"{self.where()}: the server exited before answering {self.step_label} (failed to start)"
                )
            raise ServerError(f"{self.where()}: the server closed its output (exited) before answering")
        event = self.record(self.builder.line(S2C, line))
        for note in self.builder.take_notes():  # a deep message's cut, an answer that is not UTF-8
            self.record(note)
            if note["what"] == GARBLED_NOTE:
                self._garbled.add(id_key(note["detail"]["id"]))
        msg = event.get("msg")
        if event["kind"] == "request" and isinstance(msg, dict):
            self.on_request(msg)
        return event

    def await_answer(self, msg_id: int | str, *, null_id_error: bool = False) -> dict[str, Any]:
        """Wait for the answer to our request `msg_id`, recording everything that arrives meanwhile.

        An answer that is not UTF-8 (recorded as garbage, with a note) ends the wait at once: it is
        the server's answer, compared like any other, and no proper one will follow. The message
        returned for it holds neither result nor error; the handshake cannot go on from it.
        With `null_id_error`, an error with id null (a server that could not read our request's
        id, or would not: "Server not initialized") answers it too: only the probe asks for that.
        """
        while True:
            event = self.receive()
            assert event is not None
            answers = event.get("id") == msg_id or (null_id_error and event.get("id") is None)
            if event["kind"] in ("response", "error") and answers:
                msg: dict[str, Any] = event["msg"]
                return msg
            if event["kind"] == "garbage" and id_key(msg_id) in self._garbled:
                self._garbled.discard(id_key(msg_id))
                if self.step is None:
                    raise ServerError(f"{self.where()}: the server's answer is not UTF-8 (recorded as garbage)")
                return {"jsonrpc": "2.0", "id": msg_id}
