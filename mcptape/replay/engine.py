"""play: answer MCP requests from a tape, matched by content, strict by default; live only under --fallback.

Owns the replay engine (`ReplayEngine`: one incoming client line in, the wire lines to send
back out — no I/O and no threads of its own, so stdio play (stdio.py) and HTTP play (http.py) share it)
Matching is matching.py's, the stdio loop stdio.py's and the HTTP server http.py's; the
tape format and its readers are tape/'s, framing facts jsonrpc.py's.

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
  parsing either (`ReplayEngine._verbatim`): a deterministic client's replay then costs a
  dictionary lookup per request, less than a trivial live server's own parse and serialize.
* Every other recorded server message (notification, server request, garbage line) is
  anchored to the nearest preceding *anchor* — a client request, a client notification, a
  server response, or a client's answer to a server request — and emitted when that anchor
  is replayed: before the response if anchored to the request, after it if anchored to the
  response, on arrival of the client notification or answer otherwise.
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
  recorded discover answer, and every later result without the 2026-07-28 envelope (eras.py;
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
import gc
import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from mcptape.errors import EXIT_OK, EXIT_OUTPUT_DRIFT, ReplayError, TapeError
from mcptape.jsonrpc import canonical, classify, dumps, id_key, loads, top_level_span
from mcptape.replay.eras import legacy_initialize, legacy_result_line
from mcptape.replay.matching import (
    DEFAULT_MATCH_ON,
    HIDDEN,
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
    target,
)
from mcptape.replay.tasks import held_status
from mcptape.tape.events import C2S, S2C, wire_text
from mcptape.tape.format import Event, Tape
from mcptape.tape.reader import LazyEvent, TapeStream, read_tape

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
_MAX_NEAREST = 3


# --- the recorded session ----------------------------------------------------------------


# Plain classes, not dataclasses, here and below: `dataclasses` imports `inspect` (and with it
# ast, dis, tokenize), about a third of play's own start-up.


class RecordedCall:
    """One recorded client request with what the server sent for it."""

    __slots__ = (
        "index",
        "line",
        "method",
        "_params",
        "_source",
        "response",
        "waits",
        "key",
        "progress_token",
        "consumed",
        "live_id",
        "live_token",
    )

    def __init__(self, index: int, line: int, method: str, params: Any, source: LazyEvent | None = None) -> None:
        self.index = index  # event index of the request in the tape
        self.line = line  # its line in the tape file
        self.method = method
        self._params = params
        self._source = source  # a request line not parsed yet: params come from it at first use
        self.response: int | None = None  # event index of the response, None if never answered
        self.waits: set[str] = set()  # server-request id keys answered before the response
        self.key: str | None = None  # canonical params for the fast exact-match path
        self.progress_token: str | None = None  # canonical recorded _meta.progressToken
        self.consumed = False
        self.live_id: Any = None
        self.live_token: Any = None

    @property
    def params(self) -> Any:
        if self._source is not None:
            msg = self._source.get("msg")
            self._params = msg.get("params") if isinstance(msg, dict) else None
            self._source = None
        return self._params

    @property
    def label(self) -> str:
        return describe_call(self.method, self.params)


class Miss:
    """A live request the tape could not answer exactly (or a client answer that diverged)."""

    __slots__ = ("method", "call", "why", "id", "substituted")

    def __init__(self, method: str, call: str, why: str, id: Any = None, substituted: str | None = None) -> None:
        self.method = method
        self.call = call  # the live call, described
        self.why = why  # the near-miss explanation sent to the client
        self.id = id
        self.substituted = substituted  # --lenient: the recorded call answered instead

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Miss) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Miss({self.to_dict()!r})"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"method": self.method, "call": self.call, "why": self.why, "id": self.id}
        if self.substituted is not None:
            d["substituted"] = self.substituted
        return d


class ReplayReport:
    """What a replay answered, missed and left unused; exit 0 clean, 1 misses."""

    def __init__(self, tape: str) -> None:
        self.tape = tape
        self.answered = 0
        self.misses: list[Miss] = []
        self.substitutions: list[Miss] = []
        self.forwarded: list[str] = []  # --fallback: calls answered live (and recorded)
        self.unused: list[str] = []
        self.warnings: list[str] = []
        self.refused: list[str] = []  # handshakes answered by a refusal play made up, not the tape
        self.handshake_answered = False  # an initialize or server/discover answered from the tape

    @property
    def only_refused(self) -> bool:
        """The client was refused a handshake by play and never got one from the tape after."""
        return bool(self.refused) and not self.handshake_answered

    @property
    def exit_code(self) -> int:
        """0 every request answered by its own recording; 1 a miss, a --lenient substitution
        (the client got an answer, but one recorded for other arguments), or only a made-up refusal."""
        return EXIT_OUTPUT_DRIFT if self.misses or self.substitutions or self.only_refused else EXIT_OK

    def render(self) -> str:
        """A short plain-text report for stderr."""
        verdict = "clean" if not self.misses else f"{len(self.misses)} miss(es)"
        if self.only_refused:
            verdict += f"; {', '.join(self.refused)} answered only by a refusal play made up (no session followed)"
        lines = [f"mcptape play: {self.tape}: {self.answered} request(s) answered from the tape, {verdict}"]
        lines += [f"  warning: {w}" for w in self.warnings]
        for m in self.misses:
            lines.append(f"  miss: {m.call}: {m.why}")
        for m in self.substitutions:
            lines.append(f"  lenient: {m.call} answered with {m.substituted}: {m.why}")
        for f in self.forwarded:
            lines.append(f"  live: {f} (--fallback: not on the tape; answered by the live server, recorded)")
        if self.unused:
            lines.append(f"  {len(self.unused)} recorded call(s) never asked:")
            lines += [f"    {u}" for u in self.unused]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tape": self.tape,
            "answered": self.answered,
            "exit_code": self.exit_code,
            "misses": [m.to_dict() for m in self.misses],
            "substitutions": [m.to_dict() for m in self.substitutions],
            "forwarded": list(self.forwarded),
            "unused": list(self.unused),
            "warnings": list(self.warnings),
            "refused": list(self.refused),
        }


def _idk(msg_id: Any) -> str:
    """jsonrpc.id_key without a JSON encoder for the common int and str ids (hot path)."""
    kind = type(msg_id)
    if kind is int:
        return str(msg_id)
    if kind is str:
        return '"' + msg_id + '"' if '"' not in msg_id and "\\" not in msg_id else id_key(msg_id)
    return id_key(msg_id)


def _id_json(msg_id: Any) -> str:
    return str(msg_id) if type(msg_id) is int else json.dumps(msg_id, ensure_ascii=False)


def _error_line(msg_id: Any, code: int, message: str, data: Any = None) -> str:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return dumps({"jsonrpc": "2.0", "id": msg_id, "error": error})


def _progress_token(params: Any) -> str | None:
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict) and "progressToken" in meta:
            return canonical(meta["progressToken"])
    return None


class Fallback(Protocol):
    """Where a miss goes under `--fallback` (fallback.py's LiveFallback): the engine does no I/O itself."""

    def saw(self, msg: dict[str, Any]) -> None:
        """A client message the tape answered (the handshake the live server must get too)."""

    def forward(self, msg: dict[str, Any], label: str) -> list[str]:
        """The wire lines answering client request `msg`, from the live server."""
        ...

    def finish(self) -> int:
        """Stop the live side and append what it recorded to the tape; an exit code."""
        ...


class ReplayEngine:
    """Serves one tape to one client: `handle(line)` -> wire lines to send back.

    Transport-independent and thread-safe (one lock around each call), so the stdio loop and
    the HTTP server drive the same engine. Raises ReplayError up front for a tape that cannot
    be replayed. Given a `stream` (stdio play, see TapeStream) the engine indexes the tape only
    as far as each request needs instead of all of it first, so the first answer does not wait
    for a long tape to be read; the outcome is the same as indexing it all up front.
    """

    def __init__(
        self,
        tape: Tape,
        lenient: bool = False,
        match_on: Mapping[str, tuple[str, ...]] | None = None,
        *,
        matchers: Mapping[str, Matcher] | None = None,
        stream: TapeStream | None = None,
        say: Callable[[str], None] | None = None,
        ignore: tuple[str, ...] = (),
        allow_reuse: bool = False,
        fallback: Fallback | None = None,
        new_fallback: Callable[[], Fallback] | None = None,
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
        self.events: list[Event] = tape.events
        self.calls: list[RecordedCall] = []
        self._by_method: dict[str, list[RecordedCall]] = {}
        self._first_open_at: dict[str, int] = {}  # method -> position in _by_method before which all are consumed
        self._exact: dict[tuple[str, str], deque[RecordedCall]] = {}
        # method -> how many of its calls (in _by_method order) are in _exact; a method is keyed
        # at its first request or ahead of it in idle time (lookahead), so start-up stays light.
        self._exact_upto: dict[str, int] = {}
        # The recorded wire text of requests whose text is known without serializing (lines of
        # a verbatim tape, `raw` ones) -> those calls in order: a client line equal to one of
        # them is that request, so it is matched with no parsing (see _verbatim_call).
        self._verbatim: dict[str, deque[RecordedCall]] = {}
        self._call_of_response: dict[int, RecordedCall] = {}
        self._anchored: dict[int, list[int]] = {}  # anchor event index -> s2c event indices
        self._startup: list[int] = []
        self._notifications: dict[str, list[int]] = {}  # c2s notification method -> event indices
        self._used_notifications: set[int] = set()
        self._answer_of: dict[str, int] = {}  # server-request id key -> c2s answer event index
        self._progress_owner: dict[int, RecordedCall] = {}  # notification index -> call
        self._replayable_exits: set[int] = set()
        self._outstanding: dict[str, int] = {}  # issued server requests: id key -> event index
        self._parked: list[RecordedCall] = []  # matched calls waiting for the client's answers
        self._answered_server: set[str] = set()  # server-request id keys the live client answered
        self._id_spans: dict[int, tuple[str, str]] = {}
        # Indexing state, kept between the batches of a streamed tape.
        self._stream = stream
        self._exhausted = stream is None
        self._indexed = 0
        self._anchor: int | None = None  # the latest anchor: what is anchored to earlier ones is complete
        self._open_calls: dict[str, RecordedCall] = {}  # c2s request id key -> call not answered yet
        # HTTP play: a response recorded with an HTTP error status (rec --listen's `http` note just
        # before it) -> that status; filled per live id as responses go out (http_status).
        self._recorded_status: dict[int, int] = {}
        self._pending_status: int | None = None
        self._live_status: dict[str, int] = {}
        self._server_ids_seen: dict[str, int] = {}
        self._calls_by_token: dict[str, RecordedCall] = {}
        self._lock = threading.Lock()
        self.closed = False  # the recorded server died: the transport should close the wire
        self.last_answered: RecordedCall | None = None  # the call the last request matched (lab.py's pace)
        # A 2026-07-28 tape: a discover was answered (initialize is refused from then on), or a
        # legacy client opened with initialize (results go out in the legacy form: eras.py).
        self._discovered = False
        self._legacy_client = False
        self._report = ReplayReport(tape=str(tape.path) if tape.path else tape.name)
        self._index(len(self.events))
        if stream is None and not self.calls:
            raise ReplayError(
                f"{self.tape.path or self.tape.name}: the tape holds no client requests, so there is nothing to replay",
                hint="record a session with `mcptape rec -- <server command>`",
            )

    # --- loading ------------------------------------------------------------------------

    def _where(self, index: int) -> str:
        return f"{self.tape.path or self.tape.name}:{self.tape.line_of(index)}"

    def _more(self, limit: int | None = None) -> bool:
        """Index the next batch (at most `limit` lines) of a streamed tape; False once all of it is indexed."""
        if self._exhausted:
            return False
        assert self._stream is not None
        # The parsed tape lives as long as we do and holds no cycles: keep collections off
        # while it grows and move it out of every later one (see load_tape).
        enabled = gc.isenabled()
        gc.disable()
        try:
            if self._stream.read_batch(limit):
                self._index(len(self.events))
            else:
                self._exhausted = True
        finally:
            gc.freeze()
            if enabled:
                gc.enable()
        return not self._exhausted

    def _settled(self, index: int) -> bool:
        """Everything anchored to anchor event `index` is indexed: a later anchor is, or the tape ended."""
        return self._exhausted or (self._anchor is not None and self._anchor > index)

    def _index(self, end: int) -> None:
        """Index events [self._indexed, end): calls, anchors, server requests, progress owners."""
        events = self.events
        anchor = self._anchor
        open_calls = self._open_calls
        calls_by_token = self._calls_by_token
        verbatim, by_method, line_of = self._verbatim, self._by_method, self.tape.line_of
        head = dict.get  # kind, dir, id, method: read without parsing a LazyEvent (and faster)
        for i in range(self._indexed, end):
            ev = events[i]
            kind, direction = head(ev, "kind"), head(ev, "dir")
            if kind == "note":
                self._note_status(ev)
                continue
            if direction == C2S:
                self._pending_status = None  # a status noted for a notification's POST answers nothing
                if kind == "request":
                    method = str(head(ev, "method"))
                    if type(ev) is LazyEvent:  # params read at first use
                        call = RecordedCall(i, line_of(i), method, None, source=ev)
                        if ev.line is None or b'"progressToken"' in ev.line:  # else it has none
                            call.progress_token = _progress_token(call.params)
                        text: Any = ev.wire
                    else:
                        params = ev.get("params", ev.get("msg", {}).get("params"))
                        call = RecordedCall(i, line_of(i), method, params)
                        call.progress_token = _progress_token(params)
                        text = ev.get("raw")
                    if isinstance(text, str):
                        queue = verbatim.get(text)
                        if queue is None:
                            verbatim[text] = queue = deque()
                        queue.append(call)
                    if call.progress_token is not None:
                        calls_by_token[call.progress_token] = call
                    self.calls.append(call)
                    same = by_method.get(method)
                    if same is None:
                        by_method[method] = same = []
                    same.append(call)
                    open_calls[_idk(head(ev, "id"))] = call
                    anchor = i
                elif kind == "notification":
                    self._notifications.setdefault(str(ev.get("method")), []).append(i)
                    anchor = i
                elif kind in ("response", "error"):
                    self._answer_of.setdefault(_idk(ev.get("id")), i)
                    anchor = i
                continue
            if kind in ("response", "error") and direction == S2C:
                answered = open_calls.pop(_idk(head(ev, "id")), None)
                if answered is None and head(ev, "id") is None and self._pending_status is not None and anchor is not None:
                    # An HTTP error status with a JSON-RPC error for no id (server-everything's 400 to
                    # server/discover): the answer to the request that POST carried.
                    key = next((k for k, c in open_calls.items() if c.index == anchor), None)
                    answered = open_calls.pop(key) if key is not None else None
                if self._pending_status is not None:
                    self._recorded_status[i] = self._pending_status
                    self._pending_status = None
                if answered is not None:
                    self._answered(answered, i)
                    anchor = i
                    continue
                # A response to nothing we recorded: send it where it was, like any server line.
            if kind == "request" and direction == S2C:
                self._server_request(i, ev)
            elif kind == "notification" and ev.get("method") == "notifications/progress":
                self._progress(i, ev)
            elif kind == "exit":
                # Replay the death only if a call was left unanswered by it (see module doc).
                if anchor is not None and events[anchor].get("kind") == "request" and any(
                    c.index == anchor for c in open_calls.values()
                ):
                    self._replayable_exits.add(i)
                else:
                    continue
            elif kind not in ("notification", "garbage", "response", "error"):
                continue  # stderr, notes, client-side garbage: never on the client's wire
            if anchor is None:
                self._startup.append(i)
            else:
                self._anchored.setdefault(anchor, []).append(i)
        self._anchor = anchor
        self._indexed = end

    def _note_status(self, ev: Event) -> None:
        """rec --listen notes an HTTP status >= 400 before relaying the body it came with."""
        detail = ev.get("detail") if ev.get("what") == "http" else None
        if not isinstance(detail, dict) or "error" in detail:  # an upstream failure has no body to replay
            return
        status = detail.get("status")
        if type(status) is int and 400 <= status < 600:
            self._pending_status = status

    def http_status(self, live_id: Any) -> int | None:
        """The HTTP status the recorded server answered the request `live_id` with, if it was an error
        status (rec --listen notes those); None for 200. Taken once: HTTP play asks as it replies."""
        with self._lock:
            return self._live_status.pop(_idk(live_id), None)

    def _answered(self, call: RecordedCall, i: int) -> None:
        """Event `i` answers `call`."""
        call.response = i
        self._call_of_response[i] = call
        # Server requests recorded before the response, answered before it: it waits for them.
        for s in self._anchored.get(call.index, ()):
            sev = self.events[s]
            answer = self._answer_of.get(_idk(sev.get("id")))
            if sev.get("kind") == "request" and answer is not None and answer < i:
                call.waits.add(_idk(sev.get("id")))

    def _server_request(self, i: int, ev: Event) -> None:
        """A request from the server: its id must be new, or the client's answers could not be told apart."""
        key = _idk(ev.get("id"))
        if key in self._server_ids_seen:
            raise ReplayError(
                f"{self._where(i)}: the server reused request id {ev.get('id')!r} "
                f"(first at line {self.tape.line_of(self._server_ids_seen[key])}); the client's answers "
                "to these server requests could not be told apart, so they cannot be replayed faithfully",
                hint="re-record the session, or replay a tape without these server requests",
            )
        self._server_ids_seen[key] = i

    def _progress(self, i: int, ev: Event) -> None:
        """A progress notification: owned by the call whose token it names, if any."""
        notified = ev.get("msg", {}).get("params")
        token = (
            canonical(notified["progressToken"])
            if isinstance(notified, dict) and "progressToken" in notified
            else None
        )
        if token is not None and token in self._calls_by_token:
            self._progress_owner[i] = self._calls_by_token[token]

    # --- public API ---------------------------------------------------------------------

    def pending_startup(self) -> list[str]:
        """Lines the server sent before the client said anything (sent once, at connect)."""
        with self._lock, _AS_REPLAY_ERROR:
            while self._anchor is None and self._more():
                pass
            out: list[str] = []
            for i in self._startup:
                self._emit(i, out)
            self._startup = []
            return out

    def handle(self, line: str) -> list[str]:
        """The wire lines to send for one incoming client line (without its newline)."""
        with self._lock, _AS_REPLAY_ERROR:
            if self._stream is not None:
                # Each request starts with small batches: one that needs a few more lines (most
                # do, lookahead being near) pays for a few, and only one reaching far grows them.
                self._stream.restart_batches()
            text = line.rstrip("\r\n")
            out: list[str] = []
            call = self._verbatim_call(text)
            if call is None and text not in self._verbatim and self._more():
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
            if self._more(LOOKAHEAD_LINES):
                return True
            # Keys only for methods a request needed them for: a client whose lines are the
            # recorded bytes is matched without them (_verbatim_call), and keying parses params.
            for method, upto in self._exact_upto.items():
                if upto < len(self._by_method.get(method, ())):
                    self._key_calls(method, LOOKAHEAD_KEYS)
                    return True
            return False

    def report(self) -> ReplayReport:
        """The replay so far: misses, lenient substitutions, recorded calls never asked."""
        with self._lock, _AS_REPLAY_ERROR:
            while self._more():
                pass
            rep = self._report
            rep.unused = [
                f"{c.label} (tape line {c.line})"
                for c in self.calls
                if not c.consumed and c.method not in _NOT_REPORTED_UNUSED
            ]
            return rep

    # --- requests -----------------------------------------------------------------------

    def _request(self, msg: dict[str, Any], out: list[str]) -> None:
        method = msg["method"]
        params = msg.get("params")
        call = self._find(method, params) or self._reused(method, params)
        if call is None:  # a task poll past the recorded ones: its status holds (tasks.py)
            call = held_status(method, params, self._by_method.get(method, ()), self._reasons)
        if call is None:
            if method == "ping":
                out.append(dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}}))
                self._report.answered += 1
                return
            if method == "server/discover" and method not in self._by_method and "initialize" in self._by_method:
                # A legacy session's tape: its server knew no server/discover, so answer as it would
                # have, and a 2026-07-28 client (fastmcp, the SDK's auto mode) falls back to initialize.
                out.append(_error_line(msg["id"], METHOD_NOT_FOUND, "Method not found: server/discover"))
                self._report.answered += 1
                self._report.refused.append("server/discover")
                return
            if method == "initialize" and method not in self._by_method and "server/discover" in self._by_method:
                out.append(self._initialize_on_modern_tape(msg["id"], params))
                self._report.answered += 1
                return
            why, nearest, live = self._explain(method, params)
            if self.fallback is not None:
                self._report.forwarded.append(live)
                out.extend(self.fallback.forward(msg, live))
                return
            if self.lenient and nearest is not None:
                substituted = f"{nearest.label} (tape line {nearest.line})"
                self._report.substitutions.append(Miss(method, live, why, msg["id"], substituted=substituted))
                if self._say is not None:
                    self._say(f"mcptape play: lenient: {live} answered with {substituted}: {why}")
                call = nearest
            else:
                if self.lenient:
                    why += f"; --lenient substitutes only another recording of {describe_call(method, _target_only(params))}, and the tape holds none"
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
            token = _progress_token(params)
            live_token = json.loads(token) if token is not None else None
        self._answer(call, msg["id"], live_token, out)

    def _answer(self, call: RecordedCall, live_id: Any, live_token: Any, out: list[str]) -> None:
        if call.method in ("initialize", "server/discover"):
            self._report.handshake_answered = True
            self._discovered = self._discovered or call.method == "server/discover"
        call.consumed = True
        self.last_answered = call
        call.live_id = live_id
        call.live_token = live_token
        for i in self._anchored.get(call.index, []):
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
            if not self._more():
                return None

    def _settle(self, call: RecordedCall) -> None:
        """Index on until `call`'s response and everything anchored to it are known."""
        while not (call.response is not None and self._settled(call.response)) and self._more():
            pass

    def _verbatim_call(self, text: str) -> RecordedCall | None:
        """The call `_find` would match for the client line `text`, if `text` is a recorded
        request's exact wire text and that call is its method's earliest unconsumed one.

        Then no parsing is needed: the same bytes are the same method and params, and the
        earliest open call with them is the one any exact matcher takes. Anything else (a
        call asked out of order, another matcher for the method) goes the general way.
        """
        queue = self._verbatim.get(text)
        if not queue:
            return None
        while queue and queue[0].consumed:
            queue.popleft()
        if not queue:
            return None
        call = queue[0]
        if not self._matches_exactly(call.method) or self._first_open(call.method) is not call:
            return None
        queue.popleft()
        self._settle(call)
        return call

    def _first_open(self, method: str) -> RecordedCall | None:
        """The earliest indexed call of `method` not consumed yet."""
        same = self._by_method.get(method, [])
        start = self._first_open_at.get(method, 0)
        while start < len(same) and same[start].consumed:
            start += 1
        self._first_open_at[method] = start
        return same[start] if start < len(same) else None

    def _matches_exactly(self, method: str) -> bool:
        return self.ignored is None and self.match_on.get(method, DEFAULT_MATCH_ON) == DEFAULT_MATCH_ON

    def _key_calls(self, method: str, limit: int | None = None) -> None:
        """Put the next `limit` (default: all) unkeyed calls of `method` in the exact-match index, in order."""
        calls = self._by_method.get(method, [])
        start = self._exact_upto.get(method, 0)
        end = len(calls) if limit is None else min(len(calls), start + limit)
        for call in calls[start:end]:
            call.key = canonical(compared(call.params))
            self._exact.setdefault((method, call.key), deque()).append(call)
        self._exact_upto[method] = end

    def _find_indexed(self, method: str, params: Any) -> RecordedCall | None:
        if self._matches_exactly(method):
            self._key_calls(method)
            queue = self._exact.get((method, canonical(compared(params))))
            while queue:
                if not queue[0].consumed:
                    return queue.popleft()
                queue.popleft()
        # Slow path: matchers that are not plain equality, JSON-equal but not byte-equal (1 vs 1.0),
        # and recordings with redacted values.
        if self._first_open(method) is None:
            return None
        same = self._by_method[method]
        for k in range(self._first_open_at[method], len(same)):
            call = same[k]
            if not call.consumed and not self._reasons(call, params):
                return call
        return None

    def _reused(self, method: str, params: Any) -> RecordedCall | None:
        """--allow-reuse: the earliest matching recording, used or not (asked once every match is used)."""
        if not self.allow_reuse:
            return None
        return next((c for c in self._by_method.get(method, ()) if not self._reasons(c, params)), None)

    def _reasons(self, call: RecordedCall, params: Any) -> list[str]:
        recorded = call.params
        if self.ignored is not None:
            recorded, params = self.ignored.apply(recorded), self.ignored.apply(params)
        reasons: list[str] = []
        for name in self.match_on.get(call.method, DEFAULT_MATCH_ON):
            reasons += self.matchers[name](recorded, params)
        return reasons

    def _explain(self, method: str, params: Any) -> tuple[str, RecordedCall | None, str]:
        """Why no recorded call matched, naming the nearest ones; the closest recording of the same
        method and target (None if the tape holds none); the live call.

        The explanation and the live call's description are scrubbed of secrets: live values that
        stood for a redacted recorded value are shown as the recording shows them.
        """
        while self._more():
            pass
        same = self._by_method.get(method, [])
        secrets: set[str] = set()
        live = describe_call(method, _scrubbed(params))
        if not same:
            held = sorted({c.method for c in self.calls})
            why = f"the tape holds no {method} request at all (it holds: {', '.join(held)})"
            return self._scrub(why, secrets), None, self._scrub(live, secrets)
        asked_name = params.get("name") if isinstance(params, dict) else None

        def rank(c: RecordedCall) -> tuple[int, int, int, int]:
            other_name = isinstance(c.params, dict) and c.params.get("name") != asked_name
            return (int(other_name), int(c.consumed), len(self._reasons(c, params)), c.index)

        ranked = sorted(same, key=rank)
        parts: list[str] = []
        for c in ranked[:_MAX_NEAREST]:
            reasons = self._reasons(c, params)
            notes: list[str] = []
            json_diff(compared(c.params), compared(params), limit=1 << 30, notes=notes)
            if not reasons:
                n = sum(1 for o in same if not self._reasons(o, params))
                parts.append(f"{c.label} (line {c.line}): already answered (the tape holds {n} such call(s))")
            else:
                parts.append(f"{c.label} (line {c.line}): {'; '.join(reasons + notes)}")
        # --lenient's candidate: the same method and target (tool, prompt, resource), never another.
        asked_target = target(compared(params))
        same_target = [c for c in ranked if recorded_equal(target(compared(c.params)), asked_target)]
        unconsumed = [c for c in same_target if not c.consumed]
        closest = unconsumed[0] if unconsumed else (same_target[0] if same_target else None)
        for c in same:  # every value compared with a redacted one, whichever call it was compared with
            hide_redacted(compared(c.params), compared(params), secrets)
        if secrets:
            live = describe_call(method, _scrubbed(hide_redacted(compared((closest or ranked[0]).params), compared(params))))
        return self._scrub("nearest: " + " | ".join(parts), secrets), closest, self._scrub(live, secrets)

    def _scrub(self, text: str, secrets: set[str]) -> str:
        """`text` without the live `secrets` (as text or JSON-escaped) and through the redactor."""
        for secret in sorted(secrets, key=len, reverse=True):
            if len(secret) >= 4:  # shorter ones were replaced where they stood (hide_redacted)
                text = text.replace(secret, HIDDEN).replace(dumps(secret)[1:-1], HIDDEN)
        from mcptape.redact.redactor import builtin_redactor  # only now: it costs play's start-up ~15 ms

        return builtin_redactor().redact_text(text)

    def _initialize_on_modern_tape(self, msg_id: Any, params: Any) -> str:
        """A legacy client's `initialize` on a 2026-07-28 tape: first on the connection, the
        handshake from the recorded discover answer (eras.py); after a discover, refused."""
        discover = next((c for c in self._by_method["server/discover"] if c.response is not None), None)
        response = discover.response if discover is not None else None
        result = self.events[response].get("msg", {}).get("result") if response is not None else None
        if self._discovered or discover is None or not isinstance(result, dict):
            return self._refuse_initialize(msg_id, params)
        answer = legacy_initialize(result, params.get("protocolVersion") if isinstance(params, dict) else None)
        discover.consumed = True
        self._legacy_client = True
        self._report.handshake_answered = True
        self._report.warnings.append(
            f"initialize: the tape is a 2026-07-28 session; answered this legacy client (protocol "
            f"{short(answer['protocolVersion'])}) from the recorded server/discover, and its results "
            "without the 2026-07-28 envelope (resultType, cacheScope, ttlMs, _meta serverInfo)"
        )
        return dumps({"jsonrpc": "2.0", "id": msg_id, "result": answer})

    def _refuse_initialize(self, msg_id: Any, params: Any) -> str:
        """A 2026-07-28 tape asked for `initialize`: the recorded server spoke 2026-07-28 on this
        session, and such a server refuses the handshake with -32022 naming the versions it serves
        (the SDK 2.x server does), so a client falls back to `server/discover`."""
        supported: list[Any] = []
        for c in self._by_method["server/discover"]:
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
        """A new engine for the same tape with the same matching options (one per HTTP session)."""
        return ReplayEngine(
            self.tape,
            lenient=self.lenient,
            match_on=self.match_on,
            matchers=self.matchers,
            say=self._say,
            ignore=self.ignored.paths if self.ignored is not None else (),
            allow_reuse=self.allow_reuse,
            new_fallback=self._new_fallback,
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

    def _client_notification(self, msg: dict[str, Any], out: list[str]) -> None:
        if self.fallback is not None:
            self.fallback.saw(msg)
        method = msg["method"]
        params = compared(msg.get("params"))
        key = canonical(params)
        while True:
            candidates = [i for i in self._notifications.get(method, []) if i not in self._used_notifications]
            chosen = next((i for i in candidates if self._same_notification(i, key, params)), None)
            if chosen is not None or not self._more():
                break
        if chosen is None:
            if not candidates:
                return  # notifications need no answer, and a new one has nothing recorded after it
            chosen = candidates[0]
        self._used_notifications.add(chosen)
        while not self._settled(chosen) and self._more():
            pass
        for i in self._anchored.get(chosen, []):
            self._emit(i, out)

    def _same_notification(self, index: int, key: str, params: Any) -> bool:
        recorded = compared(self.events[index].get("msg", {}).get("params"))
        return canonical(recorded) == key or recorded_equal(recorded, params)

    def _client_answer(self, msg: dict[str, Any], out: list[str]) -> None:
        key = _idk(msg["id"])
        index = self._outstanding.pop(key, None)
        if index is None:
            self._report.warnings.append(f"the client answered id {key}, which no replayed server request holds")
            return
        self._answered_server.add(key)
        request = self.events[index]
        while (key not in self._answer_of or not self._settled(self._answer_of[key])) and self._more():
            pass
        answer = self._answer_of.get(key)
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
                why = self._scrub(
                    f"the client answered the server's {label} differently than recorded "
                    f"({'; '.join(reasons)}); what the tape replays after it assumed the recorded answer",
                    secrets,
                )
                target = self._report.substitutions if self.lenient else self._report.misses
                target.append(Miss(str(request.get("method")), label, why, msg["id"], substituted="the recorded answer"))
            for i in self._anchored.get(answer, []):
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

    def _emit(self, index: int, out: list[str]) -> None:
        """Append the wire line(s) of recorded s2c event `index` (and what is anchored to it)."""
        if self.closed:
            return
        ev = self.events[index]
        kind = ev.get("kind")
        if kind in ("response", "error"):
            call = self._call_of_response.get(index)
            if call is None or ev.get("id") is None:  # an answer for no id stays one (see _index)
                out.append(self._for_client(wire_text(ev)))
                if call is not None and index in self._recorded_status:
                    self._live_status[_idk(call.live_id)] = self._recorded_status[index]
            else:
                out.append(self._for_client(self._with_id(index, call.live_id)))
                status = self._recorded_status.get(index)
                if status is not None:
                    self._live_status[_idk(call.live_id)] = status
            for i in self._anchored.get(index, []):
                self._emit(i, out)
        elif kind == "request":
            key = _idk(ev.get("id"))
            self._outstanding[key] = index
            out.append(wire_text(ev))
        elif kind == "notification":
            owner = self._progress_owner.get(index)
            text = wire_text(ev)
            if owner is not None and owner.consumed and owner.live_token is not None:
                text = _rewrite_progress_token(text, owner.live_token)
            out.append(text)
        elif kind == "garbage":
            if "text" in ev:
                out.append(str(ev["text"]))
            else:  # non-UTF-8 bytes travel as lone surrogates; the stdio writer re-encodes them
                out.append(base64.b64decode(ev.get("b64", "")).decode("utf-8", "surrogateescape"))
        elif kind == "exit" and index in self._replayable_exits:
            self.closed = True

    def _for_client(self, line: str) -> str:
        """A recorded answer as this client's era reads it (eras.py); as recorded for most."""
        return legacy_result_line(line) if self._legacy_client else line

    def _with_id(self, index: int, live_id: Any) -> str:
        ev = self.events[index]
        if type(ev) is LazyEvent:
            recorded = ev.get("id")
            if type(live_id) is type(recorded) and live_id == recorded:
                return ev.wire
        elif "raw" not in ev:
            # The wire text is the compact form of msg: swapping the id in a copy keeps its key
            # position, so one serialization gives the same bytes as a splice, for less work.
            msg = dict(ev["msg"])
            msg["id"] = live_id
            return dumps(msg)
        parts = self._id_spans.get(index)
        if parts is None:
            text = ev.wire if type(ev) is LazyEvent else wire_text(ev)
            span = top_level_span(text, "id")
            if span is None:
                return text
            parts = (text[: span[0]], text[span[1] :])
            self._id_spans[index] = parts
        return parts[0] + _id_json(live_id) + parts[1]


def _target_only(params: Any) -> Any:
    """A call's params reduced to what it names, to describe "this tool" in a message."""
    named = target(compared(params))
    if named is None:
        return None
    return {"uri" if isinstance(params, dict) and "uri" in params else "name": named}


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
    """Read a tape for replay: an unreadable or unknown-format tape cannot be replayed (exit 3)."""
    # Loading allocates many long-lived dicts and nothing cyclic: collections during it are
    # pure cost (a quarter of the load time on big tapes).
    enabled = gc.isenabled()
    gc.disable()
    try:
        with _AS_REPLAY_ERROR:
            return read_tape(path)
    finally:
        if enabled:
            gc.enable()


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


def _scrubbed(params: Any) -> Any:
    """`params` with the secrets the redactor finds replaced, before describe_call cuts the text
    short: a token cut in half has no shape left for `_scrub` to find, and half a token leaks."""
    from mcptape.redact.redactor import builtin_redactor  # only now: it costs play's start-up ~15 ms

    return builtin_redactor().redact_obj(params)
