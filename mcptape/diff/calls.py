"""Turn a tape's flat event list into the calls a reviewer thinks in.

A *call* is one client message (a request with its answer, or a client notification) together
with what the server emitted while it was the latest client message: notifications, garbage
stdout lines. Server-initiated requests and process events (exit, notes) are kept per tape,
because their timing races the calls (server-everything's roots/list fires on a timer).

Knows the tape's event kinds (tape/events.py) and a little MCP (which params name a call);
what counts as drift is classify.py's business, how calls pair up is align.py's.

Big tapes that differ in a few places: `find_window` finds the events both tapes share at the
start and the end (`==` at C speed, checked for JSON equality where == may be wrong: `json_prefix`)
and narrows that to *closed* stretches — cut where a
client message starts, with no request left open across the cut and no progress notification
naming a request on the other side — so the calls in them are identical in both tapes, pair
with each other and cannot drift. `build_calls(tape, window)` then builds calls for the rest
only; the session-wide events outside (server requests, exits, notes, the prelude) are still
collected, so session checks see every one of them. The engine verifies the one assumption
about pairing that the events alone cannot show (compare.py, `_suffix_pairs`).

The shared end need not be identical: events where only the server's side differs (`_alike`:
an answer to the same request, a notification, a stdout line, a session-wide event) do not end
it, up to MAX_CHANGED of them. The calls holding such events are then found in closed
*Stretches* within it, which the engine builds and compares pair by pair: they are the same
calls in both tapes, one for one, as align.py's suffix pass would pair them. So a fresh tape
with one call inserted early and one answer changed late costs a pass over the events between,
not building, aligning and comparing every call there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mcptape.jsonrpc import canonical, id_key
from mcptape.jsonvalue import json_equal
from mcptape.mcp import HANDSHAKE_METHODS, strip_meta
from mcptape.placeholders import untag
from mcptape.sequences import common_prefix, equal_back
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
        """Is `other` the same call? JSON-equal params first (C speed), canonical keys only when that fails."""
        if self.method != other.method or self.notify != other.notify:
            return False
        if self.method not in HANDSHAKE_METHODS and json_equal(self.params, other.params):
            return True
        return self.key == other.key

    def same_events(self, events: list[dict[str, Any]], other: Call, other_events: list[dict[str, Any]]) -> bool:
        """Is `other` this call made of the same event objects, laid out alike (`events` and
        `other_events` are the two tapes' event lists)? Tapes read together share the objects of
        identical lines (diff/command.py), so for most pairs of a big tape this is a few identity
        checks. Such calls cannot drift, like the calls outside a Window, which are not built at all."""
        if (self.params is not other.params or self.answer is not other.answer or self.method != other.method
                or self.notify != other.notify):
            return False
        if not (self.notifications or other.notifications or self.garbage or other.garbage):
            return True
        # Where notifications sit relative to the answer matters (progress after the response).
        base = self.answer_event if self.answer_event is not None else self.position
        other_base = other.answer_event if other.answer_event is not None else other.position
        for mine, theirs in ((self.notifications, other.notifications), (self.garbage, other.garbage)):
            if len(mine) != len(theirs):
                return False
            for i, j in zip(mine, theirs, strict=True):
                if i - base != j - other_base or events[i] is not other_events[j]:
                    return False
        return True

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
        if self.method in HANDSHAKE_METHODS:
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
    calls: list[Call]  # only the calls inside the window when one was given
    prelude_notifications: list[int]  # s2c notifications before any client message
    prelude_garbage: list[int]
    server_requests: list[ServerRequest]
    exits: list[int]  # event indices of exit events
    notes: list[int]  # event indices of mcptape's own notes
    side_effects: list[int] = field(default_factory=list)  # event indices of side_effect events
    handshake_outside: bool = False  # a handshake call lies outside the window
    unknown_token: bool = False  # a progress notification named no call built here
    last_ordinal: int = 0  # the ordinal the calls after the ones built here count on from
    # The protocol session checks should see, computed on first use (compare.py); else the tape's.
    protocol_of: Callable[[], str | None] | None = None
    # What a check said once for the whole pair of tapes (classify._moved_code)
    said: set[str] = field(default_factory=set)

    def line(self, event_index: int | None) -> int | None:
        return None if event_index is None else self.tape.line_of(event_index)

    @cached_property
    def protocol(self) -> str | None:
        return self.tape.protocol if self.protocol_of is None else self.protocol_of()

    def has_handshake(self) -> bool:
        return self.handshake_outside or any(c.method in HANDSHAKE_METHODS for c in self.calls)


def call_key(method: str, params: Any) -> str:
    """The content key of a call: method + canonical params, leniently for the handshake;
    redaction tags dropped (a rotated secret in the arguments is still the same call)."""
    params = strip_meta(params)
    if method in HANDSHAKE_METHODS and isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "clientInfo"}
    return untag(method + " " + canonical(params))


def call_ident(method: str, params: Any) -> str:
    param = _NAME_PARAM.get(method)
    if param and isinstance(params, dict):
        return untag(f"{method} {params.get(param)!r}")
    return method


def _idk(value: Any) -> Any:
    """A hashable id key, cheaper than jsonrpc.id_key for the usual ints and strings (1 and "1" differ)."""
    if isinstance(value, int | str) and not isinstance(value, bool):
        return (type(value) is int, value)
    return id_key(value)


def _tok(ev: dict[str, Any], token: Any) -> Any:
    """A progress token's key, qualified by the event's HTTP session as ids are (_evk)."""
    key = _idk(token)
    session = ev.get("session")
    return key if session is None else (session, key)


def _evk(ev: dict[str, Any]) -> Any:
    """The id key of a message event, qualified by its HTTP session on a tape of several sessions
    (rec --listen: each session numbers its requests from 0, tape/events.py)."""
    key = _idk(ev.get("id"))
    session = ev.get("session")
    return key if session is None else (session, key)


@dataclass
class Window:
    """The events of a golden and a fresh tape that need calls built (see the module docstring).

    Events [0, start) are identical in both tapes, and so are golden [stop_g, end) and fresh
    [stop_f, end); calls outside the window are closed (nothing inside refers to them).
    """

    start: int = 0
    stop_g: int | None = None
    stop_f: int | None = None
    ordinal0: int = 0  # client calls before `start`: numbering continues from there
    handshake_before: bool = False  # a handshake call before `start` / after the stops
    handshake_after: bool = False
    # Session-wide events outside the window, in tape order (the same prefix part in both tapes).
    outside_g: list[int] = field(default_factory=list)
    outside_f: list[int] = field(default_factory=list)
    # Closed stretches after the window whose server output differs, in tape order (find_window).
    stretches: list[Stretch] = field(default_factory=list)

    @property
    def handshake_outside(self) -> bool:
        return self.handshake_before or self.handshake_after

    def cuts_prefix(self) -> bool:
        return self.start > 0

    def cuts_suffix(self) -> bool:
        return self.stop_g is not None

    def without_suffix(self) -> Window:
        return Window(self.start, None, None, self.ordinal0, self.handshake_before, False,
                      [i for i in self.outside_g if i < self.start], [i for i in self.outside_f if i < self.start])

    def without_prefix(self) -> Window:
        return Window(0, self.stop_g, self.stop_f, 0, False, self.handshake_after,
                      [i for i in self.outside_g if i >= self.start], [i for i in self.outside_f if i >= self.start],
                      self.stretches)

    @property
    def shift(self) -> int:
        """Where an event after the window is in the fresh tape, relative to the golden."""
        return 0 if self.stop_g is None or self.stop_f is None else self.stop_f - self.stop_g


@dataclass
class Stretch:
    """Golden events [start, stop) after a window, and the fresh ones `Window.shift` further,
    that differ in server output only (`_alike`): closed at both ends like the window, so the
    calls in them are the same calls in both tapes, one for one; the engine builds and compares
    them. `calls_before`: client calls with an ordinal between the window's end and `start`."""

    start: int
    stop: int
    calls_before: int


def _is_client(ev: dict[str, Any]) -> bool:
    return ev.get("dir") == "c2s" and ev.get("kind") in ("request", "notification") and isinstance(ev.get("msg"), dict)


# Client messages that get no ordinal: the handshake is not a step of the session.
_UNCOUNTED = frozenset({*HANDSHAKE_METHODS, "notifications/initialized"})


def _token(msg: dict[str, Any]) -> Any:
    params = msg.get("params")
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    return meta.get("progressToken") if isinstance(meta, dict) else None


def _session_kind(kind: Any, direction: Any, seen_client: bool) -> bool:
    """Events session checks read, wherever they are: server requests and their replies, process
    events, and the prelude (server notifications and garbage before any client message)."""
    if kind in ("exit", "note", "side_effect"):
        return True
    if direction == "s2c":
        return kind == "request" or (not seen_client and kind in ("notification", "garbage"))
    return direction == "c2s" and kind in ("response", "error")


# The most changed events a window's suffix takes in (alike_suffix): beyond, the window takes over.
MAX_CHANGED = 64
_ANSWER = ("response", "error")
_CALL_HELD = ("response", "error", "notification", "garbage")  # from the server: build_calls puts them in calls


def json_prefix(golden: list[dict[str, Any]], fresh: list[dict[str, Any]], n: int) -> int:
    """How many of the first `n` events, equal by Python's ==, are also the same JSON (jsonvalue):
    == calls `true` and `1` equal. Events read together are mostly the same objects (tape/reader.py
    read_pair), and those cost nothing here."""
    for i in range(n):
        if golden[i] is not fresh[i] and not json_equal(golden[i], fresh[i]):
            return i
    return n


def json_back(golden: list[dict[str, Any]], fresh: list[dict[str, Any]], i: int, j: int, n: int) -> int:
    """json_prefix for the `n` events before golden[i] and fresh[j], counted from the end."""
    for k in range(1, n + 1):
        if golden[i - k] is not fresh[j - k] and not json_equal(golden[i - k], fresh[j - k]):
            return k - 1
    return n


def _alike(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Do two events at the same place in both tapes make the same calls, whatever else differs?

    Server output does: an answer to the same request (same id; the same echo, since an answer
    whose request is not on the tape is a call of its own), a notification of the same method
    (and progress token: it names its call), a stdout or stderr line; so do the session-wide
    events (server requests and their replies by id, exits, notes, side effects), which the
    session checks compare wherever they are. What the client sent must be equal.
    """
    kind, direction = a.get("kind"), a.get("dir")
    other = b.get("kind")
    if direction != b.get("dir") or (kind != other and not (kind in _ANSWER and other in _ANSWER)):
        return False
    same_id = bool(_idk(a.get("id")) == _idk(b.get("id")))
    msg, other_msg = a.get("msg"), b.get("msg")
    if kind in _ANSWER:
        if direction == "c2s":
            return same_id
        return (isinstance(msg, dict) == isinstance(other_msg, dict) and same_id
                and a.get("method") == b.get("method") and json_equal(a.get("params"), b.get("params")))
    if kind == "request":
        return direction == "s2c" and isinstance(msg, dict) == isinstance(other_msg, dict) and same_id
    if kind == "notification":
        if direction != "s2c" or isinstance(msg, dict) != isinstance(other_msg, dict):
            return False
        if not isinstance(msg, dict) or not isinstance(other_msg, dict):
            return True  # not a message build_calls reads
        method = a.get("method")
        return method == b.get("method") and (method != "notifications/progress"
                                              or _progress_key(msg) == _progress_key(other_msg))
    return kind in ("garbage", "stderr", "exit", "note", "side_effect")


def _progress_key(msg: dict[str, Any]) -> Any:
    params = msg.get("params")
    return _idk(params.get("progressToken")) if isinstance(params, dict) else ()


def alike_suffix(
    golden: list[dict[str, Any]], fresh: list[dict[str, Any]], limit: int, most: int = MAX_CHANGED
) -> tuple[int, list[int]]:
    """The longest common suffix (at most `limit` events) of two event lists, up to events that
    are only _alike (at most `most` of them); and the golden indices of those a call holds
    (answers, notifications, stdout lines from the server), last first: the calls to compare."""
    n, m = len(golden), len(fresh)
    size = changed = 0
    differ: list[int] = []
    while True:
        size += json_back(golden, fresh, n - size, m - size, equal_back(golden, fresh, n - size, m - size, limit - size))
        if size >= limit or changed == most:
            return size, differ
        ev = golden[n - size - 1]
        if not _alike(ev, fresh[m - size - 1]):
            return size, differ
        changed += 1
        if ev.get("dir") == "s2c" and ev.get("kind") in _CALL_HELD:
            differ.append(n - size - 1)
        size += 1


def find_window(golden: list[dict[str, Any]], fresh: list[dict[str, Any]], *, alike: bool = True) -> Window:
    """The window of two event lists (class docstring): linear, and cheap where they are equal.
    With `alike=False` its end is where the events stop being equal (no Stretches)."""
    n, m = len(golden), len(fresh)
    prefix = json_prefix(golden, fresh, common_prefix(golden, fresh))
    suffix, differ = alike_suffix(golden, fresh, min(n, m) - prefix, MAX_CHANGED if alike else 0)
    head = _prefix_cut(golden, prefix)
    start, start_ordinal, start_handshake = head.last_cut
    at_end = prefix == n and prefix == m  # identical tapes: nothing comes after to refer back
    if at_end or (not head.open_ids and (prefix == n or _is_client(golden[prefix]))
                  and (prefix == m or _is_client(fresh[prefix]))):
        start, start_ordinal, start_handshake = prefix, head.ordinal, head.handshake
    pre = [i for i in head.session if i < start]
    tail = _suffix_cut(golden, suffix, differ)
    window = Window(start, ordinal0=start_ordinal, handshake_before=start_handshake, handshake_after=tail.handshake,
                    outside_g=list(pre), outside_f=list(pre))
    stop = tail.stop
    if stop < n:
        shift = m - n
        post = sorted(i for i in tail.session if i >= stop)
        window.stop_g, window.stop_f = stop, stop + shift
        window.outside_g.extend(post)
        window.outside_f.extend(i + shift for i in post)
        # No answer after the suffix's start answers a request before it, so none is an answer
        # without its request: the calls before a stretch are the client messages counted.
        window.stretches = [Stretch(start, end, tail.counted - after) for start, end, after in reversed(tail.stretches)]
    return window


@dataclass
class _PrefixCut:
    last_cut: tuple[int, int, bool]  # (index, ordinal, handshake) of the last client message with no request open
    ordinal: int  # client calls with an ordinal in the whole prefix
    handshake: bool  # a handshake call in the whole prefix
    open_ids: set[Any]  # requests still open at its end
    session: list[int]  # session-wide events in it


def _prefix_cut(golden: list[dict[str, Any]], prefix: int) -> _PrefixCut:
    """Forward over the common prefix: the last client message with no request open before it."""
    open_ids: set[Any] = set()
    start = ordinal = start_ordinal = 0
    handshake = start_handshake = seen_client = False
    session: list[int] = []
    # Both passes branch on the kind first and read only the fields that kind needs (see _CallBuilder).
    for i in range(prefix):
        ev = golden[i]
        kind = ev.get("kind")
        if kind == "request" or kind == "notification":
            direction = ev.get("dir")
            if direction == "c2s" and isinstance(ev.get("msg"), dict):
                if not open_ids:
                    start, start_ordinal, start_handshake = i, ordinal, handshake
                seen_client = True
                method = str(ev.get("method"))
                ordinal += method not in _UNCOUNTED
                handshake = handshake or method in HANDSHAKE_METHODS
                if kind == "request":
                    open_ids.add(_evk(ev))
            elif direction == "s2c" and (kind == "request" or not seen_client):
                session.append(i)  # a server request, or the prelude (see _session_kind)
        elif kind == "response" or kind == "error":
            direction = ev.get("dir")
            if direction == "s2c" and isinstance(ev.get("msg"), dict):
                key = _evk(ev)
                if key in open_ids:
                    open_ids.discard(key)
                else:  # an answer whose request is not on the tape is a call of its own
                    method = str(ev.get("method") or "?")
                    ordinal += method not in _UNCOUNTED
                    handshake = handshake or method in HANDSHAKE_METHODS
            elif direction == "c2s":
                session.append(i)
        elif _session_kind(kind, ev.get("dir"), seen_client):
            session.append(i)
    return _PrefixCut((start, start_ordinal, start_handshake), ordinal, handshake, open_ids, session)


@dataclass
class _SuffixCut:
    stop: int  # the first client message of the suffix from which every answer belongs after it (n: none)
    handshake: bool  # a handshake call in [stop, n)
    counted: int  # client calls with an ordinal in [stop, n)
    stretches: list[tuple[int, int, int]]  # (start, stop, counted in [start, n)), last first
    session: list[int]  # session-wide events in the suffix, last first


def _suffix_cut(golden: list[dict[str, Any]], suffix: int, differ: list[int]) -> _SuffixCut:
    """Backward over the common suffix (alike_suffix): the first client message from which every
    answer and progress notification belongs to a request at or after it.
    Events that differ in it (`differ`, last first) are compared in Stretches: from the closed cut
    before them to the one after, with the number of calls before that, for their ordinals."""
    n = len(golden)
    need: set[Any] = set()
    tokens: set[Any] = set()
    stop = n
    handshake = stop_handshake = False
    session: list[int] = []
    counted = stop_counted = 0  # client calls with an ordinal in [i, n), and in [stop, n)
    cut_after = n  # the closest closed cut after i
    changed_until: int | None = None  # a stretch with a changed event ends there
    stretches: list[tuple[int, int, int]] = []
    changed = iter(differ)
    next_changed = next(changed, -1)
    for i in range(n - 1, n - suffix - 1, -1):
        if i == next_changed:
            next_changed = next(changed, -1)
            if changed_until is None:
                changed_until = cut_after
        ev = golden[i]
        kind = ev.get("kind")
        if kind == "response" or kind == "error":
            direction = ev.get("dir")
            if direction == "s2c" and isinstance(ev.get("msg"), dict):
                key = _evk(ev)
                if key in need:
                    break  # the later answer would answer nothing from any cut before this one
                need.add(key)
            elif direction == "c2s":
                session.append(i)
        elif kind == "request" or kind == "notification":
            direction = ev.get("dir")
            msg = ev.get("msg")
            if direction == "c2s" and isinstance(msg, dict):
                if kind == "request":
                    need.discard(_evk(ev))
                    token = _token(msg) if tokens else None  # read only when a progress notification waits
                    if token is not None:
                        tokens.discard(_tok(ev, token))
                method = str(ev.get("method"))
                handshake = handshake or method in HANDSHAKE_METHODS
                counted += method not in _UNCOUNTED
                if not need and not tokens:
                    stop, stop_handshake, stop_counted, cut_after = i, handshake, counted, i
                    if changed_until is not None:
                        stretches.append((i, changed_until, counted))
                        changed_until = None
            elif direction == "s2c":
                if kind == "request":
                    session.append(i)
                elif (isinstance(msg, dict) and ev.get("method") == "notifications/progress"
                      and isinstance(msg.get("params"), dict)):
                    token = msg["params"].get("progressToken")
                    if token is not None:
                        tokens.add(_tok(ev, token))
        elif kind in ("exit", "note", "side_effect"):
            session.append(i)
    return _SuffixCut(stop, stop_handshake, stop_counted, stretches, session)


def build_calls(
    tape: Tape,
    window: Window | None = None,
    *,
    fresh: bool = False,
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> TapeCalls:
    """Group a tape's events into calls; linear in the number of events.

    With a window (find_window; `fresh` says which side of it this tape is), calls are built
    for the events inside it and session-wide events are collected outside it too. `prepare`
    maps each event inside the window before it is read (protocol.strip_event).
    """
    events = tape.events
    if window is None:
        start, stop, outside, ordinal0 = 0, len(events), [], 0
    else:
        start, ordinal0 = window.start, window.ordinal0
        stop_at = window.stop_f if fresh else window.stop_g
        stop = len(events) if stop_at is None else stop_at
        outside = window.outside_f if fresh else window.outside_g
    builder = _CallBuilder(ordinal0)
    k = 0
    while k < len(outside) and outside[k] < start:
        builder.session_event(outside[k], events[outside[k]])
        k += 1
    event = builder.event
    if prepare is None:
        for i in range(start, stop):
            event(i, events[i])
    else:
        for i in range(start, stop):
            event(i, prepare(events[i]))
    for i in outside[k:]:
        builder.session_event(i, events[i])
    return TapeCalls(tape, builder.calls, builder.prelude_notes, builder.prelude_garbage, builder.server_requests,
                     builder.exits, builder.notes, builder.side_effects,
                     handshake_outside=window is not None and window.handshake_outside,
                     unknown_token=builder.unknown_token, last_ordinal=builder.ordinal)


class _CallBuilder:
    """What build_calls carries from one event to the next: the calls so far, the requests still
    open on either side, and the session-wide events."""

    def __init__(self, ordinal0: int) -> None:
        self.calls: list[Call] = []
        self.open_c2s: dict[Any, Call] = {}
        self.open_s2c: dict[Any, ServerRequest] = {}
        self.server_requests: list[ServerRequest] = []
        self.prelude_notes: list[int] = []
        self.prelude_garbage: list[int] = []
        self.exits: list[int] = []
        self.notes: list[int] = []
        self.side_effects: list[int] = []
        # The process's own events, kept whole wherever they are: where each kind goes.
        self.process_events: dict[Any, list[int]] = {"exit": self.exits, "note": self.notes,
                                                     "side_effect": self.side_effects}
        self.current: Call | None = None  # the latest client message's call
        # On a tape of several HTTP sessions: each session's latest client message's call, so a
        # server message goes with its own session's call, whatever other sessions did meanwhile.
        self.current_in: dict[Any, Call] = {}
        # Progress notifications name their request by token; key the open calls by it too.
        self.by_token: dict[Any, Call] = {}
        self.ordinal = ordinal0
        self.unknown_token = False

    def event(self, i: int, ev: dict[str, Any]) -> None:
        """One event inside the window. Ordered by kind first, each field read once: on a big tape
        every read of an event is a cache miss, and this runs for every event of both windows."""
        kind = ev.get("kind")
        if kind == "request":
            msg = ev.get("msg")
            if isinstance(msg, dict):
                direction = ev.get("dir")
                if direction == "c2s":  # inline, as the answer below: the two events of most calls
                    params = msg.get("params")
                    current = self.current = Call(len(self.calls), str(ev.get("method")), params, False, i)
                    if "session" in ev:
                        self.current_in[ev["session"]] = current
                    if current.method not in _UNCOUNTED:
                        self.ordinal += 1
                        current.ordinal = self.ordinal
                    self.calls.append(current)
                    self.open_c2s[_evk(ev)] = current
                    if isinstance(params, dict):
                        meta = params.get("_meta")
                        token = meta.get("progressToken") if meta else None
                        if token is not None:
                            self.by_token[_tok(ev, token)] = current
                elif direction == "s2c":
                    self._server_request(i, ev)
        elif kind == "response" or kind == "error":
            direction = ev.get("dir")
            if direction == "s2c":
                msg = ev.get("msg")
                if isinstance(msg, dict):
                    call = self.open_c2s.pop(_evk(ev), None)
                    if call is None:
                        # An answer whose request is not on the tape: its echo still says what it answered.
                        call = self._new_call(str(ev.get("method") or "?"), ev.get("params"), False, None)
                    call.answer_event = i
                    call.answer = msg
            elif direction == "c2s":
                self._reply(i, ev)
        elif kind == "notification":
            msg = ev.get("msg")
            if isinstance(msg, dict):
                direction = ev.get("dir")
                if direction == "c2s":
                    self.current = self._new_call(str(ev.get("method")), msg.get("params"), True, i)
                    if "session" in ev:
                        self.current_in[ev["session"]] = self.current
                elif direction == "s2c":
                    self._server_notification(i, ev, msg)
        elif kind == "garbage":
            if ev.get("dir") == "s2c":
                owner = self.current_in.get(ev["session"], self.current) if "session" in ev else self.current
                (owner.garbage if owner is not None else self.prelude_garbage).append(i)
        elif kind in self.process_events:
            self.process_events[kind].append(i)
        # stderr lines are not compared: servers log timestamps and paths there (see README).

    def session_event(self, i: int, ev: dict[str, Any]) -> None:
        """Outside the window: only what session checks read (see _session_kind)."""
        kind, direction = ev.get("kind"), ev.get("dir")
        if kind == "request" and direction == "s2c" and isinstance(ev.get("msg"), dict):
            self._server_request(i, ev)
        elif kind in ("response", "error") and direction == "c2s":
            self._reply(i, ev)
        elif kind == "notification" and direction == "s2c" and isinstance(ev.get("msg"), dict):
            self.prelude_notes.append(i)
        elif kind == "garbage" and direction == "s2c":
            self.prelude_garbage.append(i)
        elif kind in self.process_events:
            self.process_events[kind].append(i)

    def _new_call(self, method: str, params: Any, notify: bool, event: int | None) -> Call:
        call = Call(seq=len(self.calls), method=method, params=params, notify=notify, request_event=event)
        if method not in _UNCOUNTED:
            self.ordinal += 1
            call.ordinal = self.ordinal
        self.calls.append(call)
        return call

    def _server_notification(self, i: int, ev: dict[str, Any], msg: dict[str, Any]) -> None:
        target = self.current_in.get(ev["session"], self.current) if "session" in ev else self.current
        params = msg.get("params")
        if ev.get("method") == "notifications/progress" and isinstance(params, dict):
            found = self.by_token.get(_tok(ev, params.get("progressToken")))
            self.unknown_token = self.unknown_token or found is None
            target = found or target
        if target is None:
            self.prelude_notes.append(i)
        else:
            target.notifications.append(i)

    def _server_request(self, i: int, ev: dict[str, Any]) -> None:
        method = str(ev.get("method"))
        params = ev["msg"].get("params")
        sreq = ServerRequest(i, method, params, call_key(method, params))
        self.server_requests.append(sreq)
        self.open_s2c[_evk(ev)] = sreq

    def _reply(self, i: int, ev: dict[str, Any]) -> None:
        answered = self.open_s2c.pop(_evk(ev), None)
        if answered is not None:
            answered.reply_event = i


def build_stretch(
    tape: Tape, start: int, stop: int, ordinal0: int, prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> list[Call]:
    """The calls of a closed stretch of events [start, stop) (a Stretch, or the client message at
    a cut), numbered after `ordinal0`; the session-wide events in it are the window's business."""
    return build_calls(tape, Window(start, stop, None, ordinal0), prepare=prepare).calls
