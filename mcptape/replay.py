"""play: answer MCP requests from a tape, matched by content, strict by default; never goes live.

Owns the replay engine (`ReplayEngine`: one incoming client line in, the wire lines to send
back out — no I/O and no threads of its own, so stdio play here and HTTP play in replay_http.py share it)
and the stdio command `mcptape play`. Leaves the tape format to tape/, framing facts to
jsonrpc.py, and the HTTP transport to replay_http.py.

How a tape is served:

* Matching is by content, not position, because clients run tool calls in parallel: a request
  matches the earliest unconsumed recorded request with the same method whose params are
  JSON-equal, ignoring the JSON-RPC id and the top-level `params._meta` (progress tokens,
  2026-07-28 per-request version/capabilities). Identical repeats consume in order.
  Which comparisons apply is a per-method list of small pure matchers found by name
  (`register_matcher`, `MATCH_ON`), as in vcrpy. `initialize` ignores clientInfo and
  capabilities (not drift; a capability change is reported as a warning because some servers'
  tool lists depend on it). `ping` is always answered.
* Tapes are redacted before they are written, so a recorded string holding placeholders
  (`<REDACTED:kind#tag>`, `<REDACTED:env.NAME>`, `<HOME>`, `<USER>`) is a pattern: each
  placeholder matches any non-empty run, the rest is literal, the whole string must match. The
  live secret that matched is never echoed: miss messages show the recorded placeholder and go
  through redact.Redactor (imported at the first miss only; it costs start-up ~15 ms).
* Stdio play streams the tape (TapeStream): header, footer and the up-front checks are read
  first, events are parsed and indexed as requests need them, so the first answer does not
  wait for a long tape to be read. While no client line is waiting, play reads ahead in small
  steps (`ReplayEngine.lookahead`), so reading the tape costs idle time, not round trips.
* What is sent for a match is the recorded wire text with only the id rewritten (and, for
  `notifications/progress`, only the progress token), so replay is byte-identical.
* A tape our writer wrote and nobody edited since (its footer's crc32 says so, see
  tape/format.py) holds each message as its exact wire bytes. Its request and response lines
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
  "replay-miss". `--lenient` answers with the closest same-method recording instead and
  reports the substitution (exit 0 unless a request had no same-method recording at all).
* 2026-07-28 tapes are served the same way: `server/discover` is a recorded call like any
  other, the per-request `_meta` (version, capabilities, clientInfo) is ignored by matching,
  and an input-required retry matches by its `inputResponses` and echoed `requestState`.
  A `server/discover` asked of a legacy tape (one with `initialize` and no discover) gets
  -32601, as the recorded server would have answered, so a client that probes first
  (fastmcp, the SDK's `mode="auto"`) falls back to `initialize`; it is not a miss.
* A server exit is replayed (the wire is closed) only when the server died in the middle of a
  call; an exit after the session ended is what happens when the client hangs up.
* A tape cut short (no footer) replays what it holds; a call whose response was lost answers
  with a miss error instead of hanging.

Exit codes of `mcptape play`: 0 every request answered, 1 misses, 2 the tape cannot be
replayed (unknown format, nothing to replay, server requests that cannot be keyed).
"""

from __future__ import annotations

import base64
import functools
import gc
import json
import os
import re
import select
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from mcptape.errors import EXIT_OK, EXIT_OUTPUT_DRIFT, ReplayError, TapeError
from mcptape.jsonrpc import classify, dumps, id_key, loads, top_level_span
from mcptape.logsafe import safe_log
from mcptape.tape.events import C2S, S2C, wire_text
from mcptape.tape.format import Event, Tape
from mcptape.tape.reader import parse_lines, read_tape, written_verbatim

MISS_CODE = -32603
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601

Matcher = Callable[[Any, Any], list[str]]
"""(recorded params, live params) -> reasons they differ; an empty list is a match."""

_MATCHERS: dict[str, Matcher] = {}

# Which matchers decide a match, per method; methods not listed use DEFAULT_MATCH_ON.
DEFAULT_MATCH_ON: tuple[str, ...] = ("params",)
MATCH_ON: dict[str, tuple[str, ...]] = {"initialize": ("initialize",)}

# Idle-time work per ReplayEngine.lookahead step: tape lines parsed, or recorded calls keyed.
LOOKAHEAD_LINES = 4
LOOKAHEAD_KEYS = 16

# Never listed as "unused": answered by timers and heartbeats, not by the session's logic.
_NOT_REPORTED_UNUSED = frozenset({"ping"})
_MAX_REASONS = 3
_MAX_NEAREST = 3


def register_matcher(name: str, matcher: Matcher) -> None:
    """Make `matcher` available to MATCH_ON / ReplayEngine(match_on=...) under `name`."""
    _MATCHERS[name] = matcher


# --- fast JSON encoding ------------------------------------------------------------------


def _make_encoder(sort_keys: bool) -> Callable[[Any], str]:
    """Compact raw-UTF-8 JSON, encoder built once: json.dumps builds a new encoder on every call,
    which is most of its cost on the small messages replay keys and answers (about 4x)."""
    from json import encoder as stdlib

    def default(obj: Any) -> Any:
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")

    make = getattr(stdlib, "c_make_encoder", None)
    if make is not None:
        try:
            # No circular check: everything encoded here came out of json.loads.
            c_encode = make(None, default, stdlib.encode_basestring, None, ":", ",", sort_keys, False, True)
        except TypeError:  # an interpreter whose C encoder takes other arguments
            c_encode = None
        if c_encode is not None:
            return lambda obj: "".join(c_encode(obj, 0))
    return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, check_circular=False).encode


_canonical = _make_encoder(True)  # the same text as jsonrpc.canonical, faster
_compact_raw = _make_encoder(False)


def _compact(obj: Any) -> str:
    """jsonrpc.dumps, faster: raw UTF-8 unless the value holds lone surrogates."""
    text = _compact_raw(obj)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(obj, separators=(",", ":"))
    return text


# --- redacted values ---------------------------------------------------------------------

# redact.PLACEHOLDER_RE, copied: importing redact.py costs play ~10 ms of start-up for a regex
# (tests/test_replay.py checks the two stay the same).
_PLACEHOLDER_RE = re.compile(r"<REDACTED:[A-Za-z0-9_.:@\-]{1,120}(?:#[0-9a-f]{8})?>|<HOME>|<USER>")
REDACTED_NOTE = "matches only modulo a redacted value"
_HIDDEN = "<REDACTED:live-value>"  # stands for a live value compared with a redacted recording


def _may_hold_placeholder(text: str) -> bool:
    return "<REDACTED:" in text or "<HOME>" in text or "<USER>" in text


@functools.lru_cache(maxsize=4096)
def placeholder_pattern(recorded: str) -> re.Pattern[str] | None:
    """A recorded string with placeholders as a pattern: each placeholder stands for any non-empty
    run of characters, the rest is literal, the whole string must match. None without placeholders.

    Tapes are redacted before they are written, so a recorded request can hold
    `<REDACTED:github-token#1a2b3c4d>` where the live client sends the real token.
    """
    if not _may_hold_placeholder(recorded):
        return None
    literals = _PLACEHOLDER_RE.split(recorded)
    if len(literals) == 1:
        return None
    return re.compile("(.+?)".join(re.escape(part) for part in literals), re.DOTALL)


def _fits(recorded: str, asked: str) -> bool | None:
    """None if `recorded` holds no placeholder, else whether `asked` fits it."""
    pattern = placeholder_pattern(recorded)
    if pattern is None:
        return None
    return pattern.fullmatch(asked) is not None


def hide_redacted(recorded: Any, asked: Any, secrets: set[str] | None = None) -> Any:
    """`asked` with every string compared against a redacted recorded one replaced: by the recorded
    text where it fits (so the placeholder shows, not the secret), by a placeholder where it does not.

    The live values that stood for placeholders are added to `secrets`, so a message can be
    scrubbed of them wherever else they appear. Never echo a live secret in a miss message:
    it goes to the client and to the report.
    """
    if isinstance(recorded, dict) and isinstance(asked, dict):
        return {k: hide_redacted(recorded[k], v, secrets) if k in recorded else v for k, v in asked.items()}
    if isinstance(recorded, list) and isinstance(asked, list):
        return [hide_redacted(recorded[i], a, secrets) if i < len(recorded) else a for i, a in enumerate(asked)]
    if isinstance(recorded, str) and isinstance(asked, str):
        pattern = placeholder_pattern(recorded)
        if pattern is None:
            return asked
        m = pattern.fullmatch(asked)
        if secrets is not None:
            if m is not None:
                secrets.update(g for g in m.groups() if g)
            else:
                secrets.add(asked)
        return recorded if m is not None else _HIDDEN
    return asked


# --- pure comparison helpers -------------------------------------------------------------


def strip_meta(params: Any) -> Any:
    """params without its top-level `_meta`; absent params and `{}` compare equal."""
    if params is None:
        return {}
    if isinstance(params, dict) and "_meta" in params:
        return {k: v for k, v in params.items() if k != "_meta"}
    return params


def _short(value: Any, limit: int = 60) -> str:
    text = dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_diff(
    recorded: Any, asked: Any, path: str = "", limit: int = _MAX_REASONS, notes: list[str] | None = None
) -> list[str]:
    """Where two JSON values differ, as `path differs: X recorded, Y asked` lines (at most `limit`).

    JSON equality: 1 and 1.0 are equal, true and 1 are not, key order never matters. A recorded
    string holding redaction placeholders is a pattern (see `placeholder_pattern`); where the asked
    string fits one only that way, `notes` (if given) gets `path: matches only modulo a redacted
    value`. A value that does not fit is never echoed: it may be the secret.
    """
    out: list[str] = []
    _diff_into(recorded, asked, path, out, limit, notes)
    return out


def _diff_into(rec: Any, ask: Any, path: str, out: list[str], limit: int, notes: list[str] | None) -> None:
    if len(out) >= limit:
        return
    if isinstance(rec, dict) and isinstance(ask, dict):
        for key in list(rec) + [k for k in ask if k not in rec]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in ask:
                out.append(f"{sub}: recorded {_short(rec[key])}, not asked")
            elif key not in rec:
                out.append(f"{sub}: asked {_short(ask[key])}, not recorded")
            else:
                _diff_into(rec[key], ask[key], sub, out, limit, notes)
            if len(out) >= limit:
                return
        return
    if isinstance(rec, list) and isinstance(ask, list) and len(rec) == len(ask):
        for i, (a, b) in enumerate(zip(rec, ask, strict=True)):
            _diff_into(a, b, f"{path}[{i}]", out, limit, notes)
            if len(out) >= limit:
                return
        return
    if type(rec) is str and type(ask) is str and rec != ask:
        fits = _fits(rec, ask)
        if fits is True:
            if notes is not None:
                notes.append(f"{path or 'params'}: {REDACTED_NOTE}")
            return
        if fits is False:
            out.append(f"{path or 'params'} differs: {_short(rec)} recorded, another value asked (not shown: redacted on the tape)")
            return
    if not _json_equal(rec, ask):
        out.append(f"{path or 'params'} differs: {_short(rec)} recorded, {_short(ask)} asked")


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality of a recorded value `a` and an asked `b`, placeholders in `a` as patterns."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is str and type(b) is str and a != b:
        return bool(_fits(a, b))
    return type(a) is type(b) and a == b


def match_params(recorded: Any, asked: Any) -> list[str]:
    """JSON-equal params, ignoring the top-level `_meta`."""
    return json_diff(strip_meta(recorded), strip_meta(asked))


def match_initialize(recorded: Any, asked: Any) -> list[str]:
    """initialize params minus who the client is and what it can do (not drift, see module doc)."""
    ignored = ("_meta", "clientInfo", "capabilities")
    rec = {k: v for k, v in (recorded or {}).items() if k not in ignored} if isinstance(recorded, dict) else recorded
    ask = {k: v for k, v in (asked or {}).items() if k not in ignored} if isinstance(asked, dict) else asked
    return json_diff(rec, ask)


register_matcher("params", match_params)
register_matcher("initialize", match_initialize)


def describe_call(method: str, params: Any, limit: int = 80) -> str:
    """`tools/call add {"a":2,"b":3}`: a call as a reviewer reads it."""
    if not isinstance(params, dict):
        return method
    params = strip_meta(params)
    label = method
    for key in ("name", "uri"):
        if isinstance(params.get(key), str):
            label += f" {params[key]}"
            break
    rest = params.get("arguments") if "arguments" in params else None
    if rest is None and "name" not in params and "uri" not in params and params:
        rest = params
    if rest:
        label += " " + _short(rest, limit)
    return label


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
        self.unused: list[str] = []
        self.warnings: list[str] = []

    @property
    def exit_code(self) -> int:
        return EXIT_OUTPUT_DRIFT if self.misses else EXIT_OK

    def render(self) -> str:
        """A short plain-text report for stderr."""
        verdict = "clean" if not self.misses else f"{len(self.misses)} miss(es)"
        lines = [f"mcptape play: {self.tape}: {self.answered} request(s) answered from the tape, {verdict}"]
        lines += [f"  warning: {w}" for w in self.warnings]
        for m in self.misses:
            lines.append(f"  miss: {m.call}: {m.why}")
        for m in self.substitutions:
            lines.append(f"  lenient: {m.call} answered with {m.substituted}: {m.why}")
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
            "unused": list(self.unused),
            "warnings": list(self.warnings),
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
    return _compact({"jsonrpc": "2.0", "id": msg_id, "error": error})


def _progress_token(params: Any) -> str | None:
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict) and "progressToken" in meta:
            return _canonical(meta["progressToken"])
    return None


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
        stream: TapeStream | None = None,
    ) -> None:
        self.tape = tape
        self.lenient = lenient
        self.match_on = dict(MATCH_ON if match_on is None else match_on)
        for names in self.match_on.values():
            for name in names:
                if name not in _MATCHERS:
                    raise ReplayError(f"unknown matcher {name!r}; registered: {', '.join(sorted(_MATCHERS))}")
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
        self._server_ids_seen: dict[str, int] = {}
        self._calls_by_token: dict[str, RecordedCall] = {}
        self._redactor: Any = None  # mcptape.redact.Redactor, built at the first miss (it costs ~15 ms)
        self._lock = threading.Lock()
        self.closed = False  # the recorded server died: the transport should close the wire
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
            if direction == C2S:
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
                if answered is not None:
                    call = answered
                    call.response = i
                    self._call_of_response[i] = call
                    # Server requests recorded before the response, answered before it: it waits for them.
                    for s in self._anchored.get(call.index, ()):
                        sev = events[s]
                        answer = self._answer_of.get(_idk(sev.get("id")))
                        if sev.get("kind") == "request" and answer is not None and answer < i:
                            call.waits.add(_idk(sev.get("id")))
                    anchor = i
                    continue
                # A response to nothing we recorded: send it where it was, like any server line.
            if kind == "request" and direction == S2C:
                key = _idk(ev.get("id"))
                if key in self._server_ids_seen:
                    raise ReplayError(
                        f"{self._where(i)}: the server reused request id {ev.get('id')!r} "
                        f"(first at line {self.tape.line_of(self._server_ids_seen[key])}); the client's answers "
                        "to these server requests could not be told apart, so they cannot be replayed faithfully",
                        hint="re-record the session, or replay a tape without these server requests",
                    )
                self._server_ids_seen[key] = i
            elif kind == "notification" and ev.get("method") == "notifications/progress":
                notified = ev.get("msg", {}).get("params")
                token = (
                    _canonical(notified["progressToken"])
                    if isinstance(notified, dict) and "progressToken" in notified
                    else None
                )
                if token is not None and token in calls_by_token:
                    self._progress_owner[i] = calls_by_token[token]
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

    # --- public API ---------------------------------------------------------------------

    def pending_startup(self) -> list[str]:
        """Lines the server sent before the client said anything (sent once, at connect)."""
        with self._lock:
            while self._anchor is None and self._more():
                pass
            out: list[str] = []
            for i in self._startup:
                self._emit(i, out)
            self._startup = []
            return out

    def handle(self, line: str) -> list[str]:
        """The wire lines to send for one incoming client line (without its newline)."""
        with self._lock:
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
        with self._lock:
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
        with self._lock:
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
        call = self._find(method, params)
        if call is None:
            if method == "ping":
                out.append(_compact({"jsonrpc": "2.0", "id": msg["id"], "result": {}}))
                self._report.answered += 1
                return
            if method == "server/discover" and method not in self._by_method and "initialize" in self._by_method:
                # A legacy session's tape: its server knew no server/discover, so answer as it would
                # have, and a 2026-07-28 client (fastmcp, the SDK's auto mode) falls back to initialize.
                out.append(_error_line(msg["id"], METHOD_NOT_FOUND, "Method not found: server/discover"))
                self._report.answered += 1
                return
            why, nearest, live = self._explain(method, params)
            if self.lenient and nearest is not None:
                self._report.substitutions.append(
                    Miss(method, live, why, msg["id"], substituted=f"{nearest.label} (tape line {nearest.line})")
                )
                call = nearest
            else:
                self._report.misses.append(Miss(method, live, why, msg["id"]))
                print(safe_log(f"mcptape play: miss: {live}: {why}"), file=sys.stderr, flush=True)
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
        live_token = None
        if call.progress_token is not None:  # only then can a recorded progress notification need it
            token = _progress_token(params)
            live_token = json.loads(token) if token is not None else None
        self._answer(call, msg["id"], live_token, out)

    def _answer(self, call: RecordedCall, live_id: Any, live_token: Any, out: list[str]) -> None:
        call.consumed = True
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
        return self.match_on.get(method, DEFAULT_MATCH_ON) == DEFAULT_MATCH_ON

    def _key_calls(self, method: str, limit: int | None = None) -> None:
        """Put the next `limit` (default: all) unkeyed calls of `method` in the exact-match index, in order."""
        calls = self._by_method.get(method, [])
        start = self._exact_upto.get(method, 0)
        end = len(calls) if limit is None else min(len(calls), start + limit)
        for call in calls[start:end]:
            call.key = _canonical(strip_meta(call.params))
            self._exact.setdefault((method, call.key), deque()).append(call)
        self._exact_upto[method] = end

    def _find_indexed(self, method: str, params: Any) -> RecordedCall | None:
        if self._matches_exactly(method):
            self._key_calls(method)
            queue = self._exact.get((method, _canonical(strip_meta(params))))
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

    def _reasons(self, call: RecordedCall, params: Any) -> list[str]:
        reasons: list[str] = []
        for name in self.match_on.get(call.method, DEFAULT_MATCH_ON):
            reasons += _MATCHERS[name](call.params, params)
        return reasons

    def _explain(self, method: str, params: Any) -> tuple[str, RecordedCall | None, str]:
        """Why no recorded call matched, naming the nearest ones; the closest candidate; the live call.

        The explanation and the live call's description are scrubbed of secrets: live values that
        stood for a redacted recorded value are shown as the recording shows them.
        """
        while self._more():
            pass
        same = self._by_method.get(method, [])
        secrets: set[str] = set()
        live = describe_call(method, params)
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
            json_diff(strip_meta(c.params), strip_meta(params), limit=1 << 30, notes=notes)
            if not reasons:
                n = sum(1 for o in same if not self._reasons(o, params))
                parts.append(f"{c.label} (line {c.line}): already answered (the tape holds {n} such call(s))")
            else:
                parts.append(f"{c.label} (line {c.line}): {'; '.join(reasons + notes)}")
        unconsumed = [c for c in ranked if not c.consumed]
        closest = unconsumed[0] if unconsumed else ranked[0]
        for c in same:  # every value compared with a redacted one, whichever call it was compared with
            hide_redacted(strip_meta(c.params), strip_meta(params), secrets)
        if secrets:
            live = describe_call(method, hide_redacted(strip_meta(closest.params), strip_meta(params)))
        return self._scrub("nearest: " + " | ".join(parts), secrets), closest, self._scrub(live, secrets)

    def _scrub(self, text: str, secrets: set[str]) -> str:
        """`text` without the live `secrets` (as text or JSON-escaped) and through the redactor."""
        for secret in sorted(secrets, key=len, reverse=True):
            if len(secret) >= 4:  # shorter ones were replaced where they stood (hide_redacted)
                text = text.replace(secret, _HIDDEN).replace(_compact(secret)[1:-1], _HIDDEN)
        if self._redactor is None:
            from mcptape.redact import Redactor  # only now: it costs play's start-up ~15 ms

            self._redactor = Redactor()
        return str(self._redactor.redact_text(text))

    def _note_capabilities(self, call: RecordedCall, params: Any) -> None:
        rec = (call.params or {}).get("capabilities") if isinstance(call.params, dict) else None
        ask = params.get("capabilities") if isinstance(params, dict) else None
        if _canonical(rec or {}) != _canonical(ask or {}):
            self._report.warnings.append(
                f"initialize: the client declares capabilities {_short(ask or {})}, the recording "
                f"{_short(rec or {})}; a server whose tool list depends on them (server-everything does) "
                "may have answered differently"
            )

    # --- notifications and answers from the client --------------------------------------

    def _client_notification(self, msg: dict[str, Any], out: list[str]) -> None:
        method = msg["method"]
        params = strip_meta(msg.get("params"))
        key = _canonical(params)
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
        recorded = strip_meta(self.events[index].get("msg", {}).get("params"))
        return _canonical(recorded) == key or _json_equal(recorded, params)

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
            if call is None:
                out.append(wire_text(ev))
            else:
                out.append(self._with_id(index, call.live_id))
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
            return _compact(msg)
        parts = self._id_spans.get(index)
        if parts is None:
            text = ev.wire if type(ev) is LazyEvent else wire_text(ev)
            span = top_level_span(text, "id")
            if span is None:
                return text
            parts = (text[: span[0]], text[span[1] :])
            self._id_spans[index] = parts
        return parts[0] + _id_json(live_id) + parts[1]


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
    """Read a tape for replay: an unreadable or unknown-format tape cannot be replayed (exit 2)."""
    # Loading allocates many long-lived dicts and nothing cyclic: collections during it are
    # pure cost (a quarter of the load time on big tapes).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return read_tape(path)
    except TapeError as e:
        raise ReplayError(e.message, hint=e.hint) from e
    finally:
        if enabled:
            gc.enable()


# --- lines of a tape written verbatim --------------------------------------------------

_HEAD = frozenset({"kind", "dir", "id", "method"})
# The heads of request and answer lines in the writer's fixed key order (tape/events.py), up to
# the value of `msg` (of `params` for an answer that echoes them). Only int and string ids:
# anything else is parsed.
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_HEAD_LINE = re.compile(
    rb'\{"kind":"(request|response|error)","dir":"(c2s|s2c)","id":(-?[0-9]+|' + _STRING + rb")"
    rb'(?:,"method":(' + _STRING + rb'))?,"(params|msg)":'
)
_HEAD_WORDS = {b"request": "request", b"response": "response", b"error": "error", b"c2s": C2S, b"s2c": S2C}


class LazyEvent(dict[str, Any]):
    """A request or answer line of a tape written verbatim, parsed only when more than its head is used.

    The head (kind, dir, id, method) is read off the line's bytes; `get`, `[]` and `in` of any
    other key parse the whole line first, so the engine reads it like any event. `wire` is the
    message's wire text sliced out of the line: on a verbatim tape (tape/format.py) the line is
    `dumps(event)`, so that slice is exactly `dumps(msg)`, the text the recorded peer sent.
    Only stdio play builds these; nothing serializes them (json would see the head only).
    """

    __slots__ = ("line", "wire")  # set by lazy_event; line is None once parsed
    line: bytes | None
    wire: str

    def _load(self) -> None:
        line, self.line = self.line, None
        if line is not None:
            try:
                parsed = json.loads(line)
            except (ValueError, RecursionError) as e:  # only if bytes changed under a matching crc32
                raise ReplayError(f"a tape line is not JSON although the tape's crc32 matches: {e}") from e
            self.clear()
            self.update(parsed)

    def get(self, key: str, default: Any = None) -> Any:
        if self.line is not None and key not in _HEAD:
            self._load()
        return dict.get(self, key, default)

    def __getitem__(self, key: str) -> Any:
        if self.line is not None and key not in _HEAD:
            self._load()
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        if self.line is not None and key not in _HEAD:
            self._load()
        return dict.__contains__(self, key)

    def loaded(self) -> dict[str, Any]:
        """The whole event as a plain dict."""
        self._load()
        return dict(self)

    def __repr__(self) -> str:
        return repr(self.loaded())

    def __eq__(self, other: object) -> bool:  # (and so unhashable, as a dict is)
        return self.loaded() == (other.loaded() if isinstance(other, LazyEvent) else other)


_HEAD_STRINGS: dict[bytes, str] = {}  # a tape's few methods (and string ids), decoded once


def _head_value(token: bytes) -> Any:
    """An int or JSON string token of a line's head as the value json.loads would give."""
    if token[:1] != b'"':
        return int(token)
    value = _HEAD_STRINGS.get(token)
    if value is None:
        value = json.loads(token) if b"\\" in token else token[1:-1].decode("utf-8")
        if len(_HEAD_STRINGS) < 4096:
            _HEAD_STRINGS[token] = value
    return value


def lazy_event(raw: bytes, escaped: bool = True) -> LazyEvent | None:
    """A LazyEvent for a request or answer line of a verbatim tape; None for any other line.

    Relies on the key order tape/events.py fixes: `msg` comes last but for `raw` (a string) and
    the scripted client's `step` (an int). So msg's text runs to the line's last `}` but one, or
    to the `}` before a closing `,"step":N}`; a line with `raw` ends in `"}` and is parsed.
    `escaped=False` says the tape holds no `\\ud` at all (TapeStream checks the file once).
    """
    if escaped and b"\\ud" in raw:  # an escaped lone surrogate made the writer escape the whole line
        return None
    if raw.endswith(b"}}"):
        end = len(raw) - 1
    else:
        # The last `},"step":` followed by nothing but digits and the final `}` is the top-level
        # step (nested, another `}` would follow), and the `}` before it closes msg.
        end = raw.rfind(b'},"step":') + 1
        if end == 0 or not raw.endswith(b"}") or not raw[end + 8 : -1].isdigit():
            return None
    m = _HEAD_LINE.match(raw)
    if m is None:
        return None
    kind, direction, token, method, key = m.groups()
    if direction != (b"c2s" if kind == b"request" else b"s2c"):
        return None  # client answers and server requests: parsed
    start = m.end()
    if key == b"params":
        if kind == b"request":
            return None  # not the writer's order: a request line holds no echoed params
        # The echoed params come first; the top-level msg key is the one `,"msg":` that follows
        # them unless params or msg hold a "msg" key themselves (then the line is parsed).
        start = raw.find(b',"msg":', start) + 7
        if start == 6 or raw.find(b',"msg":', start) >= 0:
            return None
    elif kind == b"request" and method is None:
        return None
    words = _HEAD_WORDS
    ev = LazyEvent(kind=words[kind], dir=words[direction], id=int(token) if token[0] != 0x22 else _head_value(token))
    if method is not None:
        ev["method"] = _HEAD_STRINGS.get(method) or _head_value(method)
    ev.line = raw
    ev.wire = raw[start:end].decode("utf-8")
    return ev


class TapeStream:
    """A tape read for stdio play: what must fail up front is checked now, events parsed on demand.

    Parsing and indexing a 2000-call tape took longer than the live server takes to answer its
    first request, and play answered nothing before it was done. Here the file is read and split
    into lines (cheap), the header and footer parsed, and the event lines parsed in batches as
    ReplayEngine asks for them: 64 lines first (a handshake is in the first few), doubling up to
    2048, each batch as one JSON array (read_tape's trick: shared key strings, see tape/format.py).

    Checked up front as read_tape and ReplayEngine do: the header (format version), the footer
    (`tape.complete`), a cut-short last line, that the tape holds a client request and that no
    server request id repeats. Lines that may be server requests are found by their bytes (our
    writer's fixed key order, anything else parsed); `streamable` is False when these checks
    want the whole tape (a repeated server request id, no client request), and run_play then
    loads it whole so the engine names the problem as before. A corrupt line in the middle is
    only found when its batch is parsed: play then stops with exit 2 naming the line. On a
    tape written verbatim (`verbatim`) request and answer lines are not parsed at all here but
    become LazyEvents: no line of it can be corrupt unless its crc32 lies.
    """

    FIRST_BATCH = 64
    MAX_BATCH = 2048
    _S2C_REQUEST = b'{"kind":"request","dir":"s2c"'
    _C2S_REQUEST = b'{"kind":"request","dir":"c2s"'
    _OUR_ORDER = b'{"kind":"'

    def __init__(self, path: str) -> None:
        from mcptape.tape.reader import _check_header, _parse_line  # the same checks and messages

        p = Path(path)
        try:
            data = p.read_bytes()
        except OSError as e:
            raise ReplayError(f"{p}: cannot read tape: {e.strerror or e}") from e
        lines = [(n, raw) for n, raw in enumerate(data.split(b"\n"), start=1) if raw.strip()]
        cut_short_last = not data.endswith(b"\n")
        # Written by us and unedited: request and answer lines become LazyEvents (see module doc).
        self.verbatim = written_verbatim(data)
        self._escaped = b"\\ud" in data  # else no line needs lazy_event's per-line check
        del data
        if not lines:
            raise ReplayError(f"{p}: empty file, not a tape", hint="record one with `mcptape rec`")
        try:
            header = _check_header(p, lines[0][0], _parse_line(lines[0][1]))
        except TapeError as e:
            raise ReplayError(e.message, hint=e.hint) from e
        self.tape = Tape(header=header, events=[], path=p)
        body = lines[1:]
        for k, (_, raw) in enumerate(body):
            if b'"mcptape"' in raw:
                obj = _parse_line(raw)
                if obj is not None and obj.get("mcptape") == "end":
                    self.tape.footer = obj
                    body = body[:k]
                    break
        if self.tape.footer is None and cut_short_last and body and _parse_line(body[-1][1]) is None:
            body = body[:-1]  # the recorder died while writing it
        self._body = body
        self._pos = 0
        self._batch = self.FIRST_BATCH
        self.streamable = self._prescan(_parse_line)

    def restart_batches(self) -> None:
        """Batches start small again (FIRST_BATCH lines), doubling from there."""
        self._batch = self.FIRST_BATCH

    @property
    def event_count(self) -> int:
        """How many events the tape holds (when no line in the middle is corrupt)."""
        return len(self._body)

    def _prescan(self, parse: Callable[[bytes], dict[str, Any] | None]) -> bool:
        has_request = False
        server_ids: set[str] = set()
        for _, raw in self._body:
            ours = raw.startswith(self._OUR_ORDER)
            if not has_request and (raw.startswith(self._C2S_REQUEST) or (not ours and b'"c2s"' in raw)):
                obj = parse(raw)
                has_request = obj is not None and obj.get("kind") == "request" and obj.get("dir") == C2S
            if raw.startswith(self._S2C_REQUEST) or (not ours and b'"s2c"' in raw and b'"request"' in raw):
                obj = parse(raw)
                if obj is not None and obj.get("kind") == "request" and obj.get("dir") == S2C:
                    key = _idk(obj.get("id"))
                    if key in server_ids:
                        return False
                    server_ids.add(key)
        return has_request

    def read_batch(self, limit: int | None = None) -> int:
        """Parse the next batch (at most `limit` lines) onto `tape.events`; how many (0 at the end)."""
        size = self._batch if limit is None else min(limit, self._batch)
        chunk = self._body[self._pos : self._pos + size]
        if not chunk:
            return 0
        self._pos += len(chunk)
        if limit is None:
            self._batch = min(self._batch * 2, self.MAX_BATCH)
        if self.verbatim:
            escaped = self._escaped
            events: list[dict[str, Any] | None] = [lazy_event(raw, escaped) for _, raw in chunk]
            rest = iter(self._parse([line for line, ev in zip(chunk, events, strict=True) if ev is None]))
            self.tape.events.extend(ev if ev is not None else next(rest) for ev in events)
        else:
            self.tape.events.extend(self._parse(chunk))
        self.tape.event_lines.extend(number for number, _ in chunk)
        return len(chunk)

    def _parse(self, chunk: list[tuple[int, bytes]]) -> list[dict[str, Any]]:
        parsed = parse_lines([raw for _, raw in chunk])
        if parsed is None:
            parsed = []
            for number, raw in chunk:
                try:
                    obj = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):  # RecursionError: edited by hand
                    obj = None
                if not isinstance(obj, dict):
                    raise ReplayError(
                        f"{self.tape.path}:{number}: line is not a JSON object mcptape can read (corrupt, or nested "
                        "deeper than JSON readers go)", hint="the tape is corrupt; re-record it"
                    )
                parsed.append(obj)
        return parsed


# --- the stdio command -------------------------------------------------------------------


class _ClientLines:
    """The client's lines from a file descriptor, and whether one is due without blocking for it.

    Our own reader (not sys.stdin.buffer) because play asks `waiting()` between requests to
    spend idle time on ReplayEngine.lookahead, and a buffered reader cannot tell without a read.
    Reads are 64 KiB: under malloc's mmap threshold, so a small request costs no mmap/munmap.
    """

    READ_SIZE = 64 << 10

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()
        self.scanned = 0  # bytes of buf known to hold no newline
        self.eof = False
        self.poller = select.poll()
        self.poller.register(fd, select.POLLIN)

    def waiting(self) -> bool:
        """A line (or EOF) is here or on its way: the caller should read rather than do other work."""
        if self.eof or self.buf.find(b"\n", self.scanned) >= 0:
            return True
        return bool(self.poller.poll(0))

    def readline(self) -> bytes:
        """The next line with its newline; at EOF what is left (b"" when nothing is)."""
        while True:
            nl = self.buf.find(b"\n", self.scanned)
            if nl >= 0:
                line = bytes(self.buf[: nl + 1])
                del self.buf[: nl + 1]
                self.scanned = 0
                return line
            self.scanned = len(self.buf)
            if self.eof:
                line = bytes(self.buf)
                self.buf.clear()
                return line
            data = os.read(self.fd, self.READ_SIZE)
            if data:
                self.buf += data
            else:
                self.eof = True


def _write(fd: int, lines: Iterable[str]) -> None:
    # One write per batch, straight to the fd: every line in it is a whole message that is due now.
    data = "".join(line + "\n" for line in lines)
    if data:
        view = memoryview(data.encode("utf-8", "surrogateescape"))
        while view:
            view = view[os.write(fd, view) :]


def run_play(args: Any) -> int:
    """`mcptape play TAPE [--lenient]`: serve a tape on stdin/stdout; report on stderr at EOF."""
    if getattr(args, "listen", None):
        from mcptape.replay_http import run_http_play

        return int(run_http_play(args))
    lenient = bool(getattr(args, "lenient", False))
    stream = TapeStream(args.tape)
    if stream.streamable:
        tape = stream.tape
        engine = ReplayEngine(tape, lenient=lenient, stream=stream)
        held = stream.event_count
    else:  # let the whole-tape checks name what is wrong with it
        tape = load_tape(args.tape)
        engine = ReplayEngine(tape, lenient=lenient)
        gc.freeze()  # the tape lives as long as we do: keep it out of every later collection
        held = len(tape.events)
    if not tape.complete:
        print(
            f"mcptape play: warning: {args.tape} was cut short (no footer); replaying the {held} event(s) it holds",
            file=sys.stderr,
        )
    sys.stdout.flush()
    out = sys.stdout.fileno()
    client = _ClientLines(sys.stdin.fileno())
    try:
        _write(out, engine.pending_startup())
        while not engine.closed:
            # While the client thinks, read ahead in the tape (see ReplayEngine.lookahead).
            while not client.waiting() and engine.lookahead():
                pass
            raw = client.readline()
            if not raw:
                break
            _write(out, engine.handle(raw.decode("utf-8", "surrogateescape")))
    except BrokenPipeError:
        pass  # the client hung up; the report below still says what happened
    if engine.closed:
        print("mcptape play: the recorded server exited here; closing the connection", file=sys.stderr)
        # The client must see EOF now, as it did when the server died: point fd 1 at /dev/null
        # (closing the pipe) rather than closing sys.stdout under the interpreter's feet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out)
        os.close(devnull)
    report = engine.report()
    print(safe_log(report.render()), file=sys.stderr)  # quotes the client's requests and the tape
    return report.exit_code
