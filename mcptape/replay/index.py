"""What a tape holds, indexed for replay: `TapeIndex`, built once and shared by every replay of the tape.

Owns the recorded calls (`RecordedCall`) by method, by exact-match key and by their wire
bytes; what each recorded server message is anchored to (engine.py's module doc says how
anchors are replayed); the server requests and the client answers recorded for them; which
progress notification belongs to which call; which exits are replayed; the HTTP statuses
rec --listen noted. Nothing a replay does changes it: what has been used, what is pending and
what went out is each replay's own (engine.py's ReplayEngine), so HTTP play's sessions share
one index instead of each indexing the tape again.

A tape of several HTTP sessions (rec --listen, format 3: events carry `session`) is indexed with
every id qualified by its session (tape/events.py's in_session), since each session's client and
server number their requests from 0: an answer pairs with its request, a client's answer with
the server request it answers, within one session. Each call knows its session, so a replay can
keep a client on one recorded session's slice (engine.py).

It only grows, and what it says about an event never changes once said. Given a `stream`
(stdio play, tape/reader.py's TapeStream) it indexes the tape a batch at a time as requests
need it (`more`), so the first answer does not wait for a long tape to be read; the outcome is
the same as indexing it all up front. Exact-match keys are computed per method at first need
(`key_calls`), because keying parses params. Keys grow under the index's own lock, and so does
the tape once a second replay shares the index (`shared`, set by ReplayEngine.fresh), so replays
on other threads can share it. Matching policy (which matchers, --ignore-arg) is the engine's.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from mcptape.errors import ReplayError
from mcptape.jsonrpc import canonical, dumps, id_key, top_level_span
from mcptape.replay.matching import compared, describe_call
from mcptape.tape.events import C2S, S2C, in_session, wire_text
from mcptape.tape.format import SESSIONS_FORMAT, Event, Tape
from mcptape.tape.reader import LazyEvent, TapeStream

if TYPE_CHECKING:
    from contextlib import AbstractContextManager


# Plain classes, not dataclasses, here and in outgoing.py and outcome.py: `dataclasses` imports
# `inspect` (and with it ast, dis, tokenize), about a third of play's own start-up.


class RecordedCall:
    """One recorded client request with what the server sent for it (whether a replay used it is the replay's)."""

    __slots__ = ("index", "line", "method", "_params", "_source", "response", "waits", "key", "progress_token",
                 "session")

    def __init__(
        self, index: int, line: int, method: str, params: Any, source: LazyEvent | None = None, session: Any = None
    ) -> None:
        self.index = index  # event index of the request in the tape
        self.line = line  # its line in the tape file
        self.method = method
        self._params = params
        self._source = source  # a request line not parsed yet: params come from it at first use
        self.response: int | None = None  # event index of the response, None if never answered
        self.waits: set[str] = set()  # server-request id keys (in_session) answered before the response
        self.key: str | None = None  # canonical params for the fast exact-match path
        self.progress_token: str | None = None  # canonical recorded _meta.progressToken
        self.session = session  # the recorded HTTP session it was asked in (None: a tape without sessions)

    @property
    def params(self) -> Any:
        source = self._source  # read once: replays on other threads share this call (the index)
        if source is not None:
            msg = source.get("msg")
            self._params = msg.get("params") if isinstance(msg, dict) else None
            self._source = None
        return self._params

    @property
    def label(self) -> str:
        return describe_call(self.method, self.params)


def fast_id_key(msg_id: Any) -> str:
    """jsonrpc.id_key without a JSON encoder for the common int and str ids (hot path)."""
    kind = type(msg_id)
    if kind is int:
        return str(msg_id)
    if kind is str:
        return '"' + msg_id + '"' if '"' not in msg_id and "\\" not in msg_id else id_key(msg_id)
    return id_key(msg_id)


def progress_token_of(params: Any) -> str | None:
    """The canonical `_meta.progressToken` of a request's params, if it names one."""
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict) and "progressToken" in meta:
            return canonical(meta["progressToken"])
    return None


class TapeIndex:
    """A tape's recorded session, indexed (see the module docstring); raises ReplayError for a
    tape that cannot be replayed faithfully (server request ids reused).

    `reading`, if given, is the context each batch of a streamed tape is read and indexed in:
    the process's memory policy (commands/play.py turns garbage collection off while the
    long-lived tape grows), not the index's.
    """

    def __init__(
        self, tape: Tape, stream: TapeStream | None = None, reading: AbstractContextManager[Any] | None = None
    ) -> None:
        self.tape = tape
        self.events: list[Event] = tape.events
        # Events carry `session` (rec --listen): every id key is qualified by it (module doc).
        self.sessions = tape.header.get("format") == SESSIONS_FORMAT
        self.calls: list[RecordedCall] = []
        self.by_method: dict[str, list[RecordedCall]] = {}
        # (method, key) -> its calls in order; a method is keyed at its first request or ahead of
        # it in idle time (key_calls), so start-up stays light. keyed_upto: method -> how many
        # of its calls (in by_method order) are keyed.
        self.exact: dict[tuple[str, str], list[RecordedCall]] = {}
        self.keyed_upto: dict[str, int] = {}
        # The recorded wire text of requests whose text is known without serializing (lines of
        # a verbatim tape, `raw` ones) -> those calls in order: a client line equal to one of
        # them is that request, so it is matched with no parsing (engine.py's _verbatim_call).
        self.verbatim: dict[str, list[RecordedCall]] = {}
        self.call_of_response: dict[int, RecordedCall] = {}
        self.anchored: dict[int, list[int]] = {}  # anchor event index -> s2c event indices
        self.startup: list[int] = []  # s2c events before any anchor: sent at connect
        self.notifications: dict[str, list[int]] = {}  # c2s notification method -> event indices
        self.answer_of: dict[str, int] = {}  # server-request id key (in_session) -> c2s answer event index
        self.progress_owner: dict[int, RecordedCall] = {}  # notification index -> call
        self.replayable_exits: set[int] = set()
        # HTTP play: a response recorded with an HTTP error status (rec --listen's `http` note just
        # before it) -> that status.
        self.recorded_status: dict[int, int] = {}
        # Building state, kept between the batches of a streamed tape.
        self._stream = stream
        self._reading = reading
        self.exhausted = stream is None
        self._indexed = 0
        self.anchor: int | None = None  # the latest anchor: what is anchored to earlier ones is complete
        self._open_calls: dict[str, RecordedCall] = {}  # c2s request id key (in_session) -> call not answered yet
        self._pending_status: dict[Any, int] = {}  # session -> a status noted for its next answer
        self._server_ids_seen: dict[str, int] = {}
        self._calls_by_token: dict[str, RecordedCall] = {}  # in_session progress token -> its call
        self._anchors: dict[Any, int | None] = {}  # session -> its latest anchor (a tape of sessions)
        self._last_session: Any = None
        self._id_spans: dict[int, tuple[str, str]] = {}  # a cache: response index -> text around its id
        self._lock = threading.Lock()
        self.shared = False  # another replay reads it too (ReplayEngine.fresh): grow it under the lock
        self._index(len(self.events))

    @property
    def name(self) -> str:
        return str(self.tape.path or self.tape.name)

    # --- growing --------------------------------------------------------------------------

    def more(self, limit: int | None = None) -> bool:
        """Index the next batch (at most `limit` lines) of a streamed tape; False once all of it is indexed.

        Called once or twice a request (the hot path), so the `reading` context is entered by hand
        rather than by a `with`, and under the lock only when another replay shares the index.
        """
        if self.exhausted:
            return False
        stream, reading = self._stream, self._reading
        assert stream is not None
        if self.shared:
            self._lock.acquire()
        if reading is not None:
            reading.__enter__()
        try:
            if self.exhausted:
                pass
            elif stream.read_batch(limit):
                self._index(len(self.events))
            else:
                self.exhausted = True
        finally:
            if reading is not None:
                reading.__exit__(None, None, None)
            if self.shared:
                self._lock.release()
        return not self.exhausted

    def settled(self, index: int) -> bool:
        """Everything anchored to anchor event `index` is indexed: a later anchor is, or the tape ended."""
        return self.exhausted or (self.anchor is not None and self.anchor > index)

    def key_calls(self, method: str, limit: int | None = None) -> None:
        """Put the next `limit` (default: all) unkeyed calls of `method` in the exact-match index, in order."""
        calls = self.by_method.get(method, ())
        if self.keyed_upto.get(method, 0) >= len(calls):
            return
        with self._lock:
            start = self.keyed_upto.get(method, 0)
            end = len(calls) if limit is None else min(len(calls), start + limit)
            for call in calls[start:end]:
                call.key = canonical(compared(call.params))
                self.exact.setdefault((method, call.key), []).append(call)
            self.keyed_upto[method] = end

    def unkeyed_method(self) -> str | None:
        """A method whose calls were keyed once (a request needed it) and that has calls not keyed yet."""
        for method, upto in self.keyed_upto.items():
            if upto < len(self.by_method.get(method, ())):
                return method
        return None

    # --- reading --------------------------------------------------------------------------

    def where(self, index: int) -> str:
        return f"{self.name}:{self.tape.line_of(index)}"

    def with_id(self, index: int, live_id: Any) -> str:
        """The wire text of recorded response `index` with `live_id` in place of its recorded id, every other byte unchanged."""
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
        return parts[0] + (str(live_id) if type(live_id) is int else json.dumps(live_id, ensure_ascii=False)) + parts[1]

    # --- building -------------------------------------------------------------------------

    def _index(self, end: int) -> None:
        """Index events [self._indexed, end): calls, anchors, server requests, progress owners."""
        events = self.events
        anchor = self.anchor
        open_calls = self._open_calls
        calls_by_token = self._calls_by_token
        verbatim, by_method, line_of = self.verbatim, self.by_method, self.tape.line_of
        head = dict.get  # kind, dir, id, method: read without parsing a LazyEvent (and faster)
        sessions = self.sessions
        anchors = self._anchors
        session = self._last_session
        for i in range(self._indexed, end):
            ev = events[i]
            kind, direction = head(ev, "kind"), head(ev, "dir")
            if kind == "note":
                self._note_status(ev)
                continue
            if sessions:  # a server message is anchored within its own session
                anchors[session] = anchor
                session = ev.get("session")
                anchor = anchors.get(session)
            if direction == C2S:
                # A status noted for a notification's POST answers nothing.
                self._pending_status.pop(session, None)
                if kind == "request":
                    method = str(head(ev, "method"))
                    if type(ev) is LazyEvent:  # params read at first use
                        call = RecordedCall(i, line_of(i), method, None, source=ev, session=session)
                        if ev.line is None or b'"progressToken"' in ev.line:  # else it has none
                            call.progress_token = progress_token_of(call.params)
                        text: Any = ev.wire
                    else:
                        params = ev.get("params", ev.get("msg", {}).get("params"))
                        call = RecordedCall(i, line_of(i), method, params, session=session)
                        call.progress_token = progress_token_of(params)
                        text = ev.get("raw")
                    if isinstance(text, str):
                        queue = verbatim.get(text)
                        if queue is None:
                            verbatim[text] = queue = []
                        queue.append(call)
                    if call.progress_token is not None:
                        calls_by_token[in_session(session, call.progress_token)] = call
                    self.calls.append(call)
                    same = by_method.get(method)
                    if same is None:
                        by_method[method] = same = []
                    same.append(call)
                    open_calls[in_session(session, fast_id_key(head(ev, "id")))] = call
                    anchor = i
                elif kind == "notification":
                    self.notifications.setdefault(str(ev.get("method")), []).append(i)
                    anchor = i
                elif kind in ("response", "error"):
                    self.answer_of.setdefault(in_session(session, fast_id_key(ev.get("id"))), i)
                    anchor = i
                continue
            if kind in ("response", "error") and direction == S2C:
                answered = open_calls.pop(in_session(session, fast_id_key(head(ev, "id"))), None)
                status = self._pending_status.pop(session, None)
                if answered is None and head(ev, "id") is None and status is not None and anchor is not None:
                    # An HTTP error status with a JSON-RPC error for no id (server-everything's 400 to
                    # server/discover): the answer to the request that POST carried.
                    key = next((k for k, c in open_calls.items() if c.index == anchor), None)
                    answered = open_calls.pop(key) if key is not None else None
                if status is not None:
                    self.recorded_status[i] = status
                if answered is not None:
                    self._answered(answered, i)
                    anchor = i
                    continue
                # A response to nothing we recorded: send it where it was, like any server line.
            if kind == "request" and direction == S2C:
                self._server_request(i, ev, session)
            elif kind == "notification" and ev.get("method") == "notifications/progress":
                self._progress(i, ev, session)
            elif kind == "exit":
                # Replay the death only if a call was left unanswered by it (see engine.py's module doc).
                if anchor is not None and events[anchor].get("kind") == "request" and any(
                    c.index == anchor for c in open_calls.values()
                ):
                    self.replayable_exits.add(i)
                else:
                    continue
            elif kind not in ("notification", "garbage", "response", "error"):
                continue  # stderr, notes, client-side garbage: never on the client's wire
            if anchor is None:
                self.startup.append(i)
            else:
                self.anchored.setdefault(anchor, []).append(i)
        if sessions:
            anchors[session] = anchor
            self._last_session = session
            anchor = max((a for a in anchors.values() if a is not None), default=None)
        self.anchor = anchor
        self._indexed = end

    def _note_status(self, ev: Event) -> None:
        """rec --listen notes an HTTP status >= 400 before relaying the body it came with."""
        detail = ev.get("detail") if ev.get("what") == "http" else None
        if not isinstance(detail, dict) or "error" in detail:  # an upstream failure has no body to replay
            return
        status = detail.get("status")
        if type(status) is int and 400 <= status < 600:
            self._pending_status[detail.get("session") if self.sessions else None] = status

    def _answered(self, call: RecordedCall, i: int) -> None:
        """Event `i` answers `call`."""
        call.response = i
        self.call_of_response[i] = call
        # Server requests recorded before the response, answered before it: it waits for them.
        for s in self.anchored.get(call.index, ()):
            sev = self.events[s]
            if sev.get("kind") != "request":
                continue
            key = self.server_request_key(s)
            answer = self.answer_of.get(key)
            if answer is not None and answer < i:
                call.waits.add(key)

    def server_request_key(self, index: int) -> str:
        """The id key (in_session) of recorded server request `index`: what its client answer is found by."""
        ev = self.events[index]
        return in_session(ev.get("session") if self.sessions else None, fast_id_key(ev.get("id")))

    def session_of(self, index: int) -> Any:
        """The recorded HTTP session of event `index` (None on a tape without sessions)."""
        return self.events[index].get("session") if self.sessions else None

    def _server_request(self, i: int, ev: Event, session: Any) -> None:
        """A request from the server: its id must be new in its session, or the client's answers
        could not be told apart."""
        key = in_session(session, fast_id_key(ev.get("id")))
        if key in self._server_ids_seen:
            raise ReplayError(
                f"{self.where(i)}: the server reused request id {ev.get('id')!r} "
                f"(first at line {self.tape.line_of(self._server_ids_seen[key])}); the client's answers "
                "to these server requests could not be told apart, so they cannot be replayed faithfully",
                hint="re-record the session, or replay a tape without these server requests",
            )
        self._server_ids_seen[key] = i

    def _progress(self, i: int, ev: Event, session: Any) -> None:
        """A progress notification: owned by the call whose token it names, if any."""
        notified = ev.get("msg", {}).get("params")
        token = (
            canonical(notified["progressToken"])
            if isinstance(notified, dict) and "progressToken" in notified
            else None
        )
        owner = self._calls_by_token.get(in_session(session, token)) if token is not None else None
        if owner is not None:
            self.progress_owner[i] = owner
