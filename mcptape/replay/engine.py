"""play: answer MCP requests from a tape, matched by content, strict by default; live only under --fallback.

Owns the replay engine (`ReplayEngine`: one incoming client line in, the wire lines to send
back out — no I/O and no threads of its own, so stdio play (stdio.py) and HTTP play (http.py) share it)
and the state of one replay: which recordings it used, the server requests it issued and the
client answers it awaits, what it reports. What the tape holds is index.py's TapeIndex (built
once, shared by every replay of the tape); matching is matching.py's, the stdio loop stdio.py's
and the HTTP server http.py's; the tape format and its readers are tape/'s, framing facts jsonrpc.py's.

How a tape is served:

* Matching is by content, not position, because clients run tool calls in parallel: a request
  matches the earliest unconsumed recorded request with the same method whose params are
  JSON-equal, ignoring the JSON-RPC id and the top-level `params._meta` (progress tokens,
  2026-07-28 per-request version/capabilities). Identical repeats consume in order.
  Which comparisons apply is a per-method list of small pure matchers found by name
  (`MATCH_ON`, the engine's `matchers`: matching.default_matchers), as in vcrpy. `initialize` ignores clientInfo,
  capabilities and the protocol version asked: the recorded answer (with the version the recorded
  server negotiated) goes to any client, as a real server answers with a version it supports; a
  capability change is reported as a warning because some servers' tool lists depend on it.
  `ping` is always answered. Tunable like vcrpy's `match_on`: `ignore` (JSON paths in params
  left out, `--ignore-arg`), `match_on_name_only()` (`--match-on name`), `allow_reuse` (a used
  recording answers again once no unused one matches, `--allow-reuse`).
* Tapes are redacted before they are written, so a recorded string holding placeholders
  (`<REDACTED:kind#tag>`, `<REDACTED:env.NAME>`, `<HOME>`, `<USER>`) is a pattern: each
  placeholder matches any non-empty run, the rest is literal, the whole string must match. The
  live secret that matched is never echoed: miss messages show the recorded placeholder and go
  through redact's built-in Redactor (imported at the first miss only; it costs start-up ~15 ms).
* Stdio play streams the tape (TapeStream): header, footer and the up-front checks are read
  first, events are parsed and indexed as requests need them, so the first answer does not
  wait for a long tape to be read. While no client line is waiting, play reads ahead in small
  steps (`ReplayEngine.lookahead`), so reading the tape costs idle time, not round trips.
* What is sent for a match is the recorded wire text with only the id rewritten (and, for
  `notifications/progress`, only the progress token), so replay is byte-identical.
* A tape our writer wrote and nobody edited since (its footer's digest says so, see
  tape/seal.py) holds each message as its exact wire bytes. Its request and response lines
  are then not parsed until something needs more than their head (LazyEvent), and a client
  line byte-identical to a recorded request that is next in line anyway is answered without
  parsing either (`ReplayEngine._verbatim_call`): a deterministic client's replay then costs a
  dictionary lookup per request, less than a trivial live server's own parse and serialize.
* Every other recorded server message (notification, server request, garbage line) is
  anchored to the nearest preceding *anchor* — a client request, a client notification, a
  server response, or a client's answer to a server request — and emitted when that anchor
  is replayed: before the response if anchored to the request, after it if anchored to the
  response, on arrival of the client notification or answer otherwise.
* A tape of several HTTP sessions (rec --listen; index.py keys its ids per session) is replayed
  session by session: a client is served from the slice of the recorded session its last
  matched call came from, and moves to another session only for a call its slice cannot answer
  (its first call, say, when every session opened alike). So a client that does what one
  recorded client did gets that client's answers and server requests, in that session's order.
* Server-initiated requests (sampling, elicitation, roots/list) are re-issued with their
  recorded ids (which overlap client ids: answers are keyed by direction + id); the client's
  answer is absorbed, compared with the recorded one, and never forwarded anywhere. A call
  whose recorded response came after the client's answer waits for the live answer.
* A request the tape cannot answer gets the JSON-RPC error MISS_CODE (-32603) whose message
  names the nearest recorded calls and why each was rejected; `data.mcptape` is
  "replay-miss". `--lenient` answers with the closest recording of the same method *and* the
  same target (tool, prompt, resource) instead, says which and why on stderr and reports the
  substitution (exit 1); with no such recording it is a miss, never another tool's answer.
  Under `--fallback` (a `fallback` given, replay/fallback.py) a miss goes to the live server
  instead, before any substitution: the engine itself does no I/O.
* 2026-07-28 tapes are served the same way: `server/discover` is a recorded call like any
  other, the per-request `_meta` (version, capabilities, clientInfo) is ignored by matching,
  and an input-required retry matches by its `inputResponses` and echoed `requestState`.
  A `server/discover` asked of a legacy tape (one with `initialize` and no discover) gets
  -32601, as the recorded server would have answered, so a client that probes first
  (fastmcp, the SDK's `mode="auto"`) falls back to `initialize`; it is not a miss. An
  `initialize` asked first of a 2026-07-28 tape (discover, no initialize) is answered as the SDK
  2.x server answers a legacy client on a fresh connection: the handshake built from the
  recorded discover answer, and every later result without the 2026-07-28 envelope (legacy_client.py;
  play's report says so). Asked after a `server/discover` was answered (the connection speaks
  2026-07-28), it gets -32022 naming the versions the recorded discover served, as such a
  server refuses it.
* A task's polls (tasks/get) are identical repeats, served in order; one asked past the recorded
  ones gets that task's last recorded status again (replay/tasks.py, which also owns the short
  poll interval play serves).
* A server exit is replayed (the wire is closed) only when the server died in the middle of a
  call; an exit after the session ended is what happens when the client hangs up.
* A tape cut short (no footer) replays what it holds; a call whose response was lost answers
  with a miss error instead of hanging.

Exit codes of `mcptape play`: 0 every request answered by its recording, 1 misses or
--lenient substitutions, or a handshake answered only by a refusal play made up (-32601 to a
`server/discover`, -32022 to an `initialize`) with no handshake answered from the tape after it
(the client never got a session: the refusal was not negotiation), 3 the tape cannot be replayed (missing, unreadable, unknown format,
nothing to replay, server requests that cannot be keyed).
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from mcptape.errors import ReplayError, TapeError
from mcptape.jsonrpc import canonical, classify, dumps, loads, top_level_span
from mcptape.replay.index import RecordedCall, TapeIndex, fast_id_key, progress_token_of
from mcptape.replay.legacy_client import legacy_initialize, legacy_result_line
from mcptape.replay.matching import (
    DEFAULT_MATCH_ON,
    MATCH_ON,
    IgnoredPaths,
    Matcher,
    compared,
    default_matchers,
    describe_call,
    hide_redacted,
    json_diff,
    recorded_equal,
    short,
)
from mcptape.replay.nearmiss import explain, scrub, target_only
from mcptape.replay.outcome import Miss, ReplayReport
from mcptape.replay.outgoing import Outgoing, answering
from mcptape.replay.tasks import held_status
from mcptape.tape.events import wire_text
from mcptape.tape.format import Event, Tape
from mcptape.tape.reader import TapeStream, read_tape

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

MISS_CODE = -32603
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
UNSUPPORTED_PROTOCOL_VERSION = -32022  # 2026-07-28: what its servers answer an initialize with

# Idle-time work per ReplayEngine.lookahead step: tape lines parsed, or recorded calls keyed.
LOOKAHEAD_LINES = 4
LOOKAHEAD_KEYS = 16

# Never listed as "unused": answered by timers and heartbeats, not by the session's logic.
_NOT_REPORTED_UNUSED = frozenset({"ping"})


def _error_line(msg_id: Any, code: int, message: str, data: Any = None) -> Outgoing:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return Outgoing(dumps({"jsonrpc": "2.0", "id": msg_id, "error": error}), True, msg_id)


class Fallback(Protocol):
    """Where a miss goes under `--fallback` (fallback.py's LiveFallback): the engine does no I/O itself."""

    def saw(self, msg: dict[str, Any]) -> None:
        """A client message the tape answered (the handshake the live server must get too)."""

    def forward(self, msg: dict[str, Any], label: str) -> list[str]:
        """The wire lines answering client request `msg`, from the live server: what it sent
        first (notifications), then the answer to `msg`, last."""
        ...

    def finish(self) -> int:
        """Stop the live side and append what it recorded to the tape; an exit code."""
        ...


class ReplayEngine:
    """Serves one tape to one client: `handle(line)` -> wire lines to send back.

    Transport-independent and thread-safe (one lock around each call), so the stdio loop and
    the HTTP server drive the same engine. What the tape holds is its TapeIndex (index.py),
    shared with every engine `fresh` makes; what this replay used, issued and owes is its own.
    Raises ReplayError up front for a tape that cannot be replayed. Given a `stream` (stdio
    play, see TapeStream) the tape is indexed only as far as each request needs instead of all
    of it first, so the first answer does not wait for a long tape to be read; the outcome is
    the same as indexing it all up front (`reading`: see TapeIndex).
    """

    def __init__(
        self,
        tape: Tape,
        lenient: bool = False,
        match_on: Mapping[str, tuple[str, ...]] | None = None,
        *,
        matchers: Mapping[str, Matcher] | None = None,
        stream: TapeStream | None = None,
        reading: AbstractContextManager[Any] | None = None,
        say: Callable[[str], None] | None = None,
        ignore: tuple[str, ...] = (),
        allow_reuse: bool = False,
        fallback: Fallback | None = None,
        new_fallback: Callable[[], Fallback] | None = None,
        index: TapeIndex | None = None,
    ) -> None:
        self.tape = tape
        self._say = say  # where a miss is said the moment it happens (the command's stderr), if anywhere
        self.lenient = lenient
        self.allow_reuse = allow_reuse  # a recording may answer again once every match is used
        # --fallback: where a miss goes instead of an error (fallback.py); `new_fallback` makes one
        # for each engine `fresh` makes (HTTP play: one live session per client session).
        self._new_fallback = new_fallback
        self.fallback = fallback if fallback is not None or new_fallback is None else new_fallback()
        self.match_on = dict(MATCH_ON if match_on is None else match_on)
        self.matchers = default_matchers() if matchers is None else dict(matchers)
        try:
            self.ignored = IgnoredPaths(tuple(ignore)) if ignore else None
        except ValueError as e:
            raise ReplayError(str(e)) from e
        for names in self.match_on.values():
            for name in names:
                if name not in self.matchers:
                    raise ReplayError(f"unknown matcher {name!r}; registered: {', '.join(sorted(self.matchers))}")
        self.index = TapeIndex(tape, stream, reading) if index is None else index
        self._stream = stream  # only to restart its batches at each request (TapeStream.restart_batches)
        self.events: list[Event] = tape.events
        # The state of this replay; the index holds none of it.
        self._used: set[int] = set()  # event indices of the recorded calls answered (consumed)
        self._live_ids: dict[int, Any] = {}  # call index -> the live id its answer goes out with
        self._live_tokens: dict[int, Any] = {}  # call index -> the live progress token, if it had one
        self._first_open_at: dict[str, int] = {}  # method -> position in by_method before which all are used
        self._exact_at: dict[tuple[str, str], int] = {}  # the same for each exact-match queue
        self._verbatim_at: dict[str, int] = {}  # the same for each verbatim queue
        self._startup_sent = False
        self._used_notifications: set[int] = set()
        self._outstanding: dict[str, int] = {}  # issued server requests: id key -> event index
        self._parked: list[RecordedCall] = []  # matched calls waiting for the client's answers
        self._answered_server: set[str] = set()  # server-request id keys (in_session) the live client answered
        self._live_status: dict[str, int] = {}  # live id key -> a recorded HTTP error status (http_status)
        self._live_sse: set[str] = set()  # live id keys whose recorded answer came in an SSE stream (answered_in_sse)
        self._lock = threading.Lock()
        self.closed = False  # the recorded server died: the transport should close the wire
        self.last_answered: RecordedCall | None = None  # the call the last request matched (lab.py's pace)
        self._session: Any = None  # the recorded HTTP session this client is served from (module doc)
        # A 2026-07-28 tape: a discover was answered (initialize is refused from then on), or a
        # legacy client opened with initialize (results go out in the legacy form: legacy_client.py).
        self._discovered = False
        self._legacy_client = False
        self._report = ReplayReport(tape=str(tape.path) if tape.path else tape.name)
        if stream is None and not self.index.calls:
            raise ReplayError(
                f"{self.tape.path or self.tape.name}: the tape holds no client requests, so there is nothing to replay",
                hint="record a session with `mcptape rec -- <server command>`",
            )

    @property
    def calls(self) -> list[RecordedCall]:
        """The recorded client requests indexed so far, in tape order (the index's)."""
        return self.index.calls

    def http_status(self, live_id: Any) -> int | None:
        """The HTTP status the recorded server answered the request `live_id` with, if it was an error
        status (rec --listen notes those); None for 200. Taken once: HTTP play asks as it replies."""
        with self._lock:
            return self._live_status.pop(fast_id_key(live_id), None)

    def answered_in_sse(self, live_id: Any) -> bool:
        """The recorded server sent its answer to the request `live_id` in an SSE stream, not as a JSON
        body (rec --listen marks it). Taken once: HTTP play asks as it replies."""
        with self._lock:
            key = fast_id_key(live_id)
            found = key in self._live_sse
            self._live_sse.discard(key)
            return found

    # --- public API ---------------------------------------------------------------------

    def pending_startup(self) -> list[str]:
        """Lines the server sent before the client said anything (sent once, at connect)."""
        with self._lock, _AS_REPLAY_ERROR:
            while self.index.anchor is None and self.index.more():
                pass
            out: list[Outgoing] = []
            if not self._startup_sent:
                self._startup_sent = True
                for i in self.index.startup:
                    self._emit(i, out)
            return [o.line for o in out]

    def handle(self, line: str) -> list[str]:
        """The wire lines to send for one incoming client line (without its newline)."""
        return [o.line for o in self.exchange(line)]

    def exchange(self, line: str) -> list[Outgoing]:
        """The messages to send for one incoming client line (without its newline), typed (outgoing.py)."""
        with self._lock, _AS_REPLAY_ERROR:
            # Each request starts with small batches: one that needs a few more lines (most
            # do, lookahead being near) pays for a few, and only one reaching far grows them.
            if self._stream is not None:
                self._stream.restart_batches()
            text = line.rstrip("\r\n")
            out: list[Outgoing] = []
            call = self._verbatim_call(text)
            if call is None and text not in self.index.verbatim and self.index.more():
                call = self._verbatim_call(text)  # it was in the next batch: the usual case at a batch's end
            if call is not None:
                recorded_id = self.events[call.index].get("id")
                token = json.loads(call.progress_token) if call.progress_token is not None else None
                self._answer(call, recorded_id, token, out)
                return out
            if not text or text.isspace():
                return []
            try:
                msg = loads(text)  # depth-capped, as the tape's messages were when recorded
            except ValueError:
                return [_error_line(None, PARSE_ERROR, "Parse error: not JSON (mcptape play)")]
            kind = classify(msg)
            if kind == "request":
                self._request(msg, out)
            elif kind == "notification":
                self._client_notification(msg, out)
            elif kind in ("response", "error"):
                self._client_answer(msg, out)
            else:
                msg_id = msg.get("id") if isinstance(msg, dict) else None
                out.append(_error_line(msg_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"))
            return out

    def lookahead(self) -> bool:
        """Do one small step of work a later request would otherwise wait for; False when none is left.

        For a transport with idle time between requests (stdio play calls this while no client
        line is waiting): parse and index the next few lines of a streamed tape, then compute
        the exact-match keys of recorded calls not keyed yet. Each step is a few tens of
        microseconds, about what a client takes to turn an answer into its next request, so
        a request arriving meanwhile is barely held up, and the cost of reading the tape
        leaves the round trips instead of landing on whichever request needs the next batch.
        """
        with self._lock, _AS_REPLAY_ERROR:
            if self.index.more(LOOKAHEAD_LINES):
                return True
            # Keys only for methods a request needed them for: a client whose lines are the
            # recorded bytes is matched without them (_verbatim_call), and keying parses params.
            method = self.index.unkeyed_method()
            if method is None:
                return False
            self.index.key_calls(method, LOOKAHEAD_KEYS)
            return True

    def report(self) -> ReplayReport:
        """The replay so far: misses, lenient substitutions, recorded calls never asked."""
        with self._lock, _AS_REPLAY_ERROR:
            while self.index.more():
                pass
            rep = self._report
            rep.unused = [
                f"{c.label} (tape line {c.line})"
                for c in self.index.calls
                if c.index not in self._used and c.method not in _NOT_REPORTED_UNUSED
            ]
            return rep

    # --- requests -----------------------------------------------------------------------

    def _request(self, msg: dict[str, Any], out: list[Outgoing]) -> None:
        method = msg["method"]
        params = msg.get("params")
        call = self._find(method, params) or self._reused(method, params)
        if call is None:  # a task poll past the recorded ones: its status holds (tasks.py)
            call = held_status(method, params, self.index.by_method.get(method, ()), self._used, self._reasons)
        if call is None:
            if method == "ping":
                out.append(Outgoing(dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}}), True, msg["id"]))
                self._report.answered += 1
                return
            if method == "server/discover" and method not in self.index.by_method and "initialize" in self.index.by_method:
                # A legacy session's tape: its server knew no server/discover, so answer as it would
                # have, and a 2026-07-28 client (fastmcp, the SDK's auto mode) falls back to initialize.
                out.append(_error_line(msg["id"], METHOD_NOT_FOUND, "Method not found: server/discover"))
                self._report.answered += 1
                self._report.refused.append("server/discover")
                return
            if method == "initialize" and method not in self.index.by_method and "server/discover" in self.index.by_method:
                out.append(self._initialize_on_modern_tape(msg["id"], params))
                self._report.answered += 1
                return
            why, nearest, live = self._explain(method, params)
            if self.fallback is not None:
                self._report.forwarded.append(live)
                out.extend(answering(msg["id"], self.fallback.forward(msg, live)))
                return
            if self.lenient and nearest is not None:
                substituted = f"{nearest.label} (tape line {nearest.line})"
                self._report.substitutions.append(Miss(method, live, why, msg["id"], substituted=substituted))
                if self._say is not None:
                    self._say(f"mcptape play: lenient: {live} answered with {substituted}: {why}")
                call = nearest
            else:
                if self.lenient:
                    why += f"; --lenient substitutes only another recording of {describe_call(method, target_only(params))}, and the tape holds none"
                self._report.misses.append(Miss(method, live, why, msg["id"]))
                if self._say is not None:
                    self._say(f"mcptape play: miss: {live}: {why}")
                out.append(
                    _error_line(
                        msg["id"],
                        MISS_CODE,
                        f"mcptape play: no recorded {live} on the tape: {why}",
                        {"mcptape": "replay-miss", "method": method},
                    )
                )
                return
        if method == "initialize":
            self._note_capabilities(call, params)
            self._note_version(call, params)
            if self.fallback is not None:
                self.fallback.saw(msg)
        live_token = None
        if call.progress_token is not None:  # only then can a recorded progress notification need it
            token = progress_token_of(params)
            live_token = json.loads(token) if token is not None else None
        self._answer(call, msg["id"], live_token, out)

    def _answer(self, call: RecordedCall, live_id: Any, live_token: Any, out: list[Outgoing]) -> None:
        if call.method in ("initialize", "server/discover"):
            self._report.handshake_answered = True
            self._discovered = self._discovered or call.method == "server/discover"
        self._used.add(call.index)
        self.last_answered = call
        if call.session is not None:
            self._session = call.session
        self._live_ids[call.index] = live_id
        if call.progress_token is not None:  # only then can a recorded notification be its (TapeIndex._progress)
            self._live_tokens[call.index] = live_token
        for i in self.index.anchored.get(call.index, ()):
            self._emit(i, out)
        if call.response is None:
            if not self.tape.complete and not self.closed:
                why = f"the tape was cut short before the response to {call.label} (line {call.line})"
                self._report.misses.append(Miss(call.method, call.label, why, live_id))
                out.append(_error_line(live_id, MISS_CODE, f"mcptape play: {why}", {"mcptape": "cut-short"}))
            return  # a complete tape where the server never answered: neither do we
        self._report.answered += 1
        if call.waits - self._answered_server:
            self._parked.append(call)
            return
        self._emit(call.response, out)

    def _find(self, method: str, params: Any) -> RecordedCall | None:
        """The earliest unconsumed matching call, with its response and what follows it indexed."""
        while True:
            call = self._find_indexed(method, params)
            if call is not None:
                self._settle(call)
                return call
            if not self.index.more():
                return None

    def _settle(self, call: RecordedCall) -> None:
        """Index on until `call`'s response and everything anchored to it are known."""
        while not (call.response is not None and self.index.settled(call.response)) and self.index.more():
            pass

    def _verbatim_call(self, text: str) -> RecordedCall | None:
        """The call `_find` would match for the client line `text`, if `text` is a recorded
        request's exact wire text and that call is its method's earliest unconsumed one.

        Then no parsing is needed: the same bytes are the same method and params, and the
        earliest open call with them is the one any exact matcher takes. Anything else (a
        call asked out of order, another matcher for the method) goes the general way.
        """
        queue = self.index.verbatim.get(text)
        if not queue or self.index.sessions:  # a session's slice first: the general way (_find_indexed)
            return None
        used = self._used
        at = start = self._verbatim_at.get(text, 0)
        while at < len(queue) and queue[at].index in used:
            at += 1
        if at != start:
            self._verbatim_at[text] = at
        if at == len(queue):
            return None
        call = queue[at]
        if not self._matches_exactly(call.method) or self._first_open(call.method) is not call:
            return None
        self._settle(call)
        return call

    def _first_open(self, method: str) -> RecordedCall | None:
        """The earliest indexed call of `method` not consumed yet."""
        same = self.index.by_method.get(method, [])
        start = self._first_open_at.get(method, 0)
        while start < len(same) and same[start].index in self._used:
            start += 1
        self._first_open_at[method] = start
        return same[start] if start < len(same) else None

    def _matches_exactly(self, method: str) -> bool:
        return self.ignored is None and self.match_on.get(method, DEFAULT_MATCH_ON) == DEFAULT_MATCH_ON

    def _find_indexed(self, method: str, params: Any) -> RecordedCall | None:
        if self._matches_exactly(method):
            self.index.key_calls(method)
            key = (method, canonical(compared(params)))
            queue = self.index.exact.get(key)
            if queue:
                used = self._used
                at = self._exact_at.get(key, 0)
                while at < len(queue) and queue[at].index in used:
                    at += 1
                self._exact_at[key] = at
                if at < len(queue):
                    return self._in_own_session(queue, at) if self._session is not None else queue[at]
        # Slow path: matchers that are not plain equality, JSON-equal but not byte-equal (1 vs 1.0),
        # and recordings with redacted values.
        if self._first_open(method) is None:
            return None
        same = self.index.by_method[method]
        first: RecordedCall | None = None
        for k in range(self._first_open_at[method], len(same)):
            call = same[k]
            if call.index not in self._used and not self._reasons(call, params):
                if call.session == self._session:
                    return call
                first = first or call
        return first

    def _in_own_session(self, queue: list[RecordedCall], at: int) -> RecordedCall:
        """The first unused call of `queue` from `at` on in this client's recorded session, else the first one."""
        for call in queue[at:]:
            if call.session == self._session and call.index not in self._used:
                return call
        return queue[at]

    def _reused(self, method: str, params: Any) -> RecordedCall | None:
        """--allow-reuse: the earliest matching recording, used or not (asked once every match is used)."""
        if not self.allow_reuse:
            return None
        return next((c for c in self.index.by_method.get(method, ()) if not self._reasons(c, params)), None)

    def _reasons(self, call: RecordedCall, params: Any) -> list[str]:
        recorded = call.params
        if self.ignored is not None:
            recorded, params = self.ignored.apply(recorded), self.ignored.apply(params)
        reasons: list[str] = []
        for name in self.match_on.get(call.method, DEFAULT_MATCH_ON):
            reasons += self.matchers[name](recorded, params)
        return reasons

    def _explain(self, method: str, params: Any) -> tuple[str, RecordedCall | None, str]:
        """Why no recorded call matched (nearmiss.py's explain), with the whole tape indexed."""
        while self.index.more():
            pass
        return explain(method, params, self.index.by_method.get(method, []), self.index.calls, self._used, self._reasons)

    def _initialize_on_modern_tape(self, msg_id: Any, params: Any) -> Outgoing:
        """A legacy client's `initialize` on a 2026-07-28 tape: first on the connection, the
        handshake from the recorded discover answer (legacy_client.py); after a discover, refused."""
        discover = next((c for c in self.index.by_method["server/discover"] if c.response is not None), None)
        response = discover.response if discover is not None else None
        result = self.events[response].get("msg", {}).get("result") if response is not None else None
        if self._discovered or discover is None or not isinstance(result, dict):
            return self._refuse_initialize(msg_id, params)
        answer = legacy_initialize(result, params.get("protocolVersion") if isinstance(params, dict) else None)
        self._used.add(discover.index)
        self._legacy_client = True
        self._report.handshake_answered = True
        self._report.warnings.append(
            f"initialize: the tape is a 2026-07-28 session; answered this legacy client (protocol "
            f"{short(answer['protocolVersion'])}) from the recorded server/discover, and its results "
            "without the 2026-07-28 envelope (resultType, cacheScope, ttlMs, _meta serverInfo)"
        )
        return Outgoing(dumps({"jsonrpc": "2.0", "id": msg_id, "result": answer}), True, msg_id)

    def _refuse_initialize(self, msg_id: Any, params: Any) -> Outgoing:
        """A 2026-07-28 tape asked for `initialize`: the recorded server spoke 2026-07-28 on this
        session, and such a server refuses the handshake with -32022 naming the versions it serves
        (the SDK 2.x server does), so a client falls back to `server/discover`."""
        supported: list[Any] = []
        for c in self.index.by_method["server/discover"]:
            if c.response is not None:
                result = self.events[c.response].get("msg", {}).get("result")
                if isinstance(result, dict) and isinstance(result.get("supportedVersions"), list):
                    supported = result["supportedVersions"]
                    break
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        self._report.refused.append("initialize")
        self._report.warnings.append(
            f"initialize: the tape is a 2026-07-28 session (server/discover, no initialize); answered -32022 "
            f"as its server would, naming the versions it serves {short(supported)}"
        )
        return _error_line(
            msg_id,
            UNSUPPORTED_PROTOCOL_VERSION,
            "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted",
            {"supported": supported, "requested": requested},
        )

    def _note_version(self, call: RecordedCall, params: Any) -> None:
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        answer = self.events[call.response].get("msg", {}).get("result") if call.response is not None else None
        negotiated = answer.get("protocolVersion") if isinstance(answer, dict) else None
        if asked is not None and negotiated is not None and asked != negotiated:
            self._report.warnings.append(
                f"initialize: the client asked protocol {short(asked)}; answered with the recorded server's {short(negotiated)}"
            )

    def fresh(self) -> ReplayEngine:
        """A new engine for the same tape (the same index) with the same matching options (one per HTTP session)."""
        self.index.shared = True  # read by replays on other threads from now on (HTTP play's sessions)
        return ReplayEngine(
            self.tape,
            lenient=self.lenient,
            match_on=self.match_on,
            matchers=self.matchers,
            say=self._say,
            ignore=self.ignored.paths if self.ignored is not None else (),
            allow_reuse=self.allow_reuse,
            new_fallback=self._new_fallback,
            index=self.index,
        )

    def _note_capabilities(self, call: RecordedCall, params: Any) -> None:
        rec = (call.params or {}).get("capabilities") if isinstance(call.params, dict) else None
        ask = params.get("capabilities") if isinstance(params, dict) else None
        if canonical(rec or {}) != canonical(ask or {}):
            self._report.warnings.append(
                f"initialize: the client declares capabilities {short(ask or {})}, the recording "
                f"{short(rec or {})}; a server whose tool list depends on them (server-everything does) "
                "may have answered differently"
            )

    # --- notifications and answers from the client --------------------------------------

    def _client_notification(self, msg: dict[str, Any], out: list[Outgoing]) -> None:
        if self.fallback is not None:
            self.fallback.saw(msg)
        method = msg["method"]
        params = compared(msg.get("params"))
        key = canonical(params)
        while True:
            candidates = [i for i in self.index.notifications.get(method, []) if i not in self._used_notifications]
            chosen = next((i for i in candidates if self._same_notification(i, key, params)), None)
            if chosen is not None or not self.index.more():
                break
        if chosen is None:
            if not candidates:
                return  # notifications need no answer, and a new one has nothing recorded after it
            chosen = candidates[0]
        self._used_notifications.add(chosen)
        while not self.index.settled(chosen) and self.index.more():
            pass
        for i in self.index.anchored.get(chosen, []):
            self._emit(i, out)

    def _same_notification(self, index: int, key: str, params: Any) -> bool:
        recorded = compared(self.events[index].get("msg", {}).get("params"))
        return canonical(recorded) == key or recorded_equal(recorded, params)

    def _client_answer(self, msg: dict[str, Any], out: list[Outgoing]) -> None:
        live_key = fast_id_key(msg["id"])
        index = self._outstanding.pop(live_key, None)
        if index is None:
            self._report.warnings.append(f"the client answered id {live_key}, which no replayed server request holds")
            return
        key = self.index.server_request_key(index)  # the recorded one's, qualified by its session
        self._answered_server.add(key)
        request = self.events[index]
        while (key not in self.index.answer_of or not self.index.settled(self.index.answer_of[key])) and self.index.more():
            pass
        answer = self.index.answer_of.get(key)
        if answer is not None:
            recorded = self.events[answer].get("msg", {})
            reasons: list[str] = []
            secrets: set[str] = set()
            for part in ("result", "error"):
                if part in recorded or part in msg:
                    reasons += json_diff(recorded.get(part), msg.get(part), part)
                    hide_redacted(recorded.get(part), msg.get(part), secrets)
            if reasons:
                label = describe_call(str(request.get("method")), request.get("msg", {}).get("params"))
                why = scrub(
                    f"the client answered the server's {label} differently than recorded "
                    f"({'; '.join(reasons)}); what the tape replays after it assumed the recorded answer",
                    secrets,
                )
                target = self._report.substitutions if self.lenient else self._report.misses
                target.append(Miss(str(request.get("method")), label, why, msg["id"], substituted="the recorded answer"))
            for i in self.index.anchored.get(answer, []):
                self._emit(i, out)
        still: list[RecordedCall] = []
        for call in self._parked:
            if call.waits - self._answered_server:
                still.append(call)
            else:
                assert call.response is not None
                self._emit(call.response, out)
        self._parked = still

    # --- emission -----------------------------------------------------------------------

    def _emit(self, index: int, out: list[Outgoing]) -> None:
        """Append the wire line(s) of recorded s2c event `index` (and what is anchored to it)."""
        if self.closed:
            return
        tape = self.index
        ev = self.events[index]
        kind = ev.get("kind")
        if kind in ("response", "error"):
            call = tape.call_of_response.get(index)
            if call is None or ev.get("id") is None:  # an answer for no id stays one (see TapeIndex._index)
                out.append(Outgoing(self._for_client(wire_text(ev)), True, ev.get("id")))
                if call is not None and index in tape.recorded_status:
                    self._live_status[fast_id_key(self._live_ids.get(call.index))] = tape.recorded_status[index]
            else:
                live_id = self._live_ids.get(call.index)
                line = tape.with_id(index, live_id)
                out.append(Outgoing(legacy_result_line(line) if self._legacy_client else line, True, live_id))
                status = tape.recorded_status.get(index)
                if status is not None:
                    self._live_status[fast_id_key(live_id)] = status
                if tape.sessions and ev.get("sse") is True:  # only rec --listen marks it (tape/events.py)
                    self._live_sse.add(fast_id_key(live_id))
            for i in tape.anchored.get(index, ()):
                self._emit(i, out)
        elif kind == "request":
            key = fast_id_key(ev.get("id"))
            self._outstanding[key] = index
            out.append(Outgoing(wire_text(ev)))
        elif kind == "notification":
            owner = self.index.progress_owner.get(index)
            text = wire_text(ev)
            token = self._live_tokens.get(owner.index) if owner is not None else None
            if token is not None:
                text = _rewrite_progress_token(text, token)
            out.append(Outgoing(text))
        elif kind == "garbage":
            if "text" in ev:
                out.append(Outgoing(str(ev["text"])))
            else:  # non-UTF-8 bytes travel as lone surrogates; the stdio writer re-encodes them
                out.append(Outgoing(base64.b64decode(ev.get("b64", "")).decode("utf-8", "surrogateescape")))
        elif kind == "exit" and index in self.index.replayable_exits:
            self.closed = True

    def _for_client(self, line: str) -> str:
        """A recorded answer as this client's era reads it (legacy_client.py); as recorded for most."""
        return legacy_result_line(line) if self._legacy_client else line


def _rewrite_progress_token(text: str, token: Any) -> str:
    """`text` with params.progressToken replaced by `token`, every other byte unchanged."""
    p = top_level_span(text, "params")
    if p is None:
        return text
    inner = text[p[0] : p[1]]
    t = top_level_span(inner, "progressToken")
    if t is None:
        return text
    start, end = p[0] + t[0], p[0] + t[1]
    return text[:start] + json.dumps(token, ensure_ascii=False) + text[end:]


def load_tape(path: str) -> Tape:
    """Read a tape for replay: an unreadable or unknown-format tape cannot be replayed (exit 3).
    How the process collects garbage meanwhile is the command's (commands/play.py's TapeMemory)."""
    with _AS_REPLAY_ERROR:
        return read_tape(path)


def stream_tape(path: str) -> TapeStream:
    """A tape streamed for stdio play (tape/reader.py's TapeStream); a problem is a ReplayError (exit 3)."""
    with _AS_REPLAY_ERROR:
        return TapeStream(path)


class _AsReplayError:
    """A problem reading the tape, up front or while serving (a line of a streamed tape that does not
    parse), is a ReplayError: the tape cannot be replayed, `mcptape play`'s exit 3 (could not run)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        if isinstance(error, TapeError) and not isinstance(error, ReplayError):
            raise ReplayError(error.message, hint=error.hint) from error


_AS_REPLAY_ERROR = _AsReplayError()
