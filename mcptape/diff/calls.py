"""Turn a tape's flat event list into the calls a reviewer thinks in.

A *call* is one client message (a request with its answer, or a client notification) together
with what the server emitted while it was the latest client message: notifications, garbage
stdout lines. Server-initiated requests and process events (exit, notes) are kept per tape,
because their timing races the calls (server-everything's roots/list fires on a timer).

Knows the tape's event kinds (tape/events.py) and a little MCP (which params name a call);
what counts as drift is classify.py's business, how calls pair up is align.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mcptape.jsonrpc import canonical, id_key
from mcptape.tape.format import Tape

# Params that say *which* tool/prompt/resource a call is about: the identity of a call.
_NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "resources/subscribe": "uri",
    "resources/unsubscribe": "uri",
    "logging/setLevel": "level",
}
# The handshake carries who the client is; that is not the server's behaviour.
_HANDSHAKE = ("initialize", "server/discover")


@dataclass
class Call:
    """One client message and everything the server said while it was the latest."""

    seq: int  # position among the tape's calls
    method: str
    params: Any
    notify: bool  # a client notification: nothing to answer
    request_event: int | None  # event index of the client message (None: only the echo is known)
    answer_event: int | None = None  # event index of the response / error response
    answer: dict[str, Any] | None = None  # the answer's msg
    notifications: list[int] = field(default_factory=list)  # event indices of s2c notifications
    garbage: list[int] = field(default_factory=list)  # event indices of non-JSON stdout lines
    ordinal: int | None = None  # 1-based number among client calls after the handshake

    # Keys are computed on demand: the common prefix of two tapes pairs by == without them.
    @cached_property
    def key(self) -> str:
        """method + canonical params: equal keys are the same call."""
        return call_key(self.method, self.params) + (" !" if self.notify else "")

    @cached_property
    def ident(self) -> str:
        """method + name: the same call, maybe with other arguments."""
        return call_ident(self.method, self.params) + (" !" if self.notify else "")

    def same_request(self, other: Call) -> bool:
        """Is `other` the same call? == first (C speed), canonical keys only when that fails."""
        if self.method != other.method or self.notify != other.notify:
            return False
        if self.method not in _HANDSHAKE and self.params == other.params:
            return True
        return self.key == other.key

    @property
    def name(self) -> str | None:
        param = _NAME_PARAM.get(self.method)
        if param and isinstance(self.params, dict):
            value = self.params.get(param)
            return str(value) if value is not None else None
        return None

    @property
    def arguments(self) -> Any:
        """What a reviewer reads as the call's arguments (tool/prompt arguments, else params)."""
        if self.method in _HANDSHAKE:
            return None  # protocol version and client info: not what a reviewer needs in the one line
        if not isinstance(self.params, dict):
            return self.params
        if self.method in ("tools/call", "prompts/get"):
            return self.params.get("arguments")
        rest = {k: v for k, v in self.params.items() if k != _NAME_PARAM.get(self.method) and k != "_meta"}
        return rest or None

    @property
    def position(self) -> int:
        """Event index that places this call in its tape (the request, else its answer)."""
        if self.request_event is not None:
            return self.request_event
        return self.answer_event if self.answer_event is not None else -1


@dataclass
class ServerRequest:
    """A request the server sent to the client (roots/list, sampling, elicitation) and the reply."""

    event: int
    method: str
    params: Any
    key: str
    reply_event: int | None = None


@dataclass
class TapeCalls:
    """A tape, seen as calls plus the events that belong to the session as a whole."""

    tape: Tape
    calls: list[Call]
    prelude_notifications: list[int]  # s2c notifications before any client message
    prelude_garbage: list[int]
    server_requests: list[ServerRequest]
    exits: list[int]  # event indices of exit events
    notes: list[int]  # event indices of mcptape's own notes

    def line(self, event_index: int | None) -> int | None:
        return None if event_index is None else self.tape.line_of(event_index)


def _strip_meta(params: Any) -> Any:
    """Params without `_meta` (progress tokens, client info of 2026-07-28): not part of what is asked."""
    if isinstance(params, dict) and "_meta" in params:
        return {k: v for k, v in params.items() if k != "_meta"}
    return params


def call_key(method: str, params: Any) -> str:
    """The content key of a call: method + canonical params, leniently for the handshake."""
    params = _strip_meta(params)
    if method in _HANDSHAKE and isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "clientInfo"}
    return method + " " + canonical(params)


def call_ident(method: str, params: Any) -> str:
    param = _NAME_PARAM.get(method)
    if param and isinstance(params, dict):
        return f"{method} {params.get(param)!r}"
    return method


def _idk(value: Any) -> Any:
    """A hashable id key, cheaper than jsonrpc.id_key for the usual ints and strings (1 and "1" differ)."""
    if isinstance(value, int | str) and not isinstance(value, bool):
        return (type(value) is int, value)
    return id_key(value)


def build_calls(tape: Tape) -> TapeCalls:
    """Group a tape's events into calls; linear in the number of events."""
    calls: list[Call] = []
    open_c2s: dict[Any, Call] = {}
    open_s2c: dict[Any, ServerRequest] = {}
    server_requests: list[ServerRequest] = []
    prelude_notes: list[int] = []
    prelude_garbage: list[int] = []
    exits: list[int] = []
    notes: list[int] = []
    current: Call | None = None
    # Progress notifications name their request by token; key the open calls by it too.
    by_token: dict[Any, Call] = {}
    ordinal = 0

    def new_call(method: str, params: Any, notify: bool, event: int | None) -> Call:
        nonlocal ordinal
        call = Call(
            seq=len(calls),
            method=method,
            params=params,
            notify=notify,
            request_event=event,
        )
        if method not in _HANDSHAKE and method != "notifications/initialized":
            ordinal += 1
            call.ordinal = ordinal
        calls.append(call)
        return call

    for i, ev in enumerate(tape.events):
        kind = ev.get("kind")
        direction = ev.get("dir")
        msg = ev.get("msg")
        if kind == "request" and direction == "c2s" and isinstance(msg, dict):
            current = new_call(str(ev.get("method")), msg.get("params"), False, i)
            open_c2s[_idk(ev.get("id"))] = current
            token = ((msg.get("params") or {}).get("_meta") or {}).get("progressToken") if isinstance(
                msg.get("params"), dict
            ) else None
            if token is not None:
                by_token[_idk(token)] = current
        elif kind == "notification" and direction == "c2s" and isinstance(msg, dict):
            current = new_call(str(ev.get("method")), msg.get("params"), True, i)
        elif kind in ("response", "error") and direction == "s2c" and isinstance(msg, dict):
            call = open_c2s.pop(_idk(ev.get("id")), None)
            if call is None:
                # An answer whose request is not on the tape: its echo still says what it answered.
                call = new_call(str(ev.get("method") or "?"), ev.get("params"), False, None)
            call.answer_event = i
            call.answer = msg
        elif kind == "notification" and direction == "s2c" and isinstance(msg, dict):
            target = current
            params = msg.get("params")
            if ev.get("method") == "notifications/progress" and isinstance(params, dict):
                target = by_token.get(_idk(params.get("progressToken")), current)
            if target is None:
                prelude_notes.append(i)
            else:
                target.notifications.append(i)
        elif kind == "request" and direction == "s2c" and isinstance(msg, dict):
            method = str(ev.get("method"))
            sreq = ServerRequest(i, method, msg.get("params"), call_key(method, msg.get("params")))
            server_requests.append(sreq)
            open_s2c[_idk(ev.get("id"))] = sreq
        elif kind in ("response", "error") and direction == "c2s":
            sreq_answered = open_s2c.pop(_idk(ev.get("id")), None)
            if sreq_answered is not None:
                sreq_answered.reply_event = i
        elif kind == "garbage" and direction == "s2c":
            (current.garbage if current is not None else prelude_garbage).append(i)
        elif kind == "exit":
            exits.append(i)
        elif kind == "note":
            notes.append(i)
        # stderr lines are not compared: servers log timestamps and paths there (see README).
    return TapeCalls(tape, calls, prelude_notes, prelude_garbage, server_requests, exits, notes)
