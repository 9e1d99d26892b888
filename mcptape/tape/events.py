"""Tape events: turning what crossed the wire into self-contained, deterministic event dicts.

Every producer of tapes (the stdio recorder, the scripted client, the HTTP proxy) feeds
wire lines through one EventBuilder, so all tapes describe the same traffic the same way.

Event kinds and their fixed key order:

    request | notification   kind, dir, id?, method, msg, raw?
    response | error         kind, dir, id, method, params, msg, raw?   (method+params echo the request)
    garbage                  kind, dir, text | b64, bytes              (a stdout line that is not JSON-RPC)
    stderr                   kind, dir, text                           (a server stderr line)
    exit                     kind, code, signal?                       (the server process ended)
    note                     kind, what, detail?                       (mcptape's own remark: timeout, ...)

`dir` is "c2s" (client to server) or "s2c". `raw` holds the exact line only when it differs
from the compact serialization of `msg`, so replay can send the recorded bytes unchanged.

A line nested deeper than jsonrpc.MAX_DEPTH is parsed with its deep parts kept as markers
holding their JSON text (jsonrpc.py: "Depth"); its event always has `raw` (the wire form, which
`wire_text` gives), and a `note` event ("deep_json", DEEP_NOTE) follows it: the builder holds it
until the producer takes it (`take_notes`), so every producer writes the cut into its tape.
Nothing but `raw`, the scripted client's `step` (an int, live/client.py) and what rec --listen adds may
follow `msg`: play reads a message's wire text straight off a verbatim tape's line by that order
(reader.lazy_event; a line ending otherwise is parsed). rec --listen adds `session` (an int: the
HTTP session the message crossed in, numbered from 1 in order of appearance; such a tape is format 3,
tape/format.py) and, on a server message that came in an SSE stream rather than a JSON body, `sse`
(true), so play answers the way the server did. Server-to-client request ids overlap client ids,
so requests are keyed by direction + id; ids are unique within a session, not across a tape's
sessions (each HTTP session's client and server number theirs from 0), so with sessions the key
is session + direction + id.
"""

from __future__ import annotations

import base64
import json
import signal
from typing import Any

from mcptape.jsonrpc import MAX_DEPTH, classify, dumps, id_key, loads_depth, utf8_dumps, wire_dumps

C2S = "c2s"
S2C = "s2c"
MESSAGE_KINDS = frozenset({"request", "notification", "response", "error"})
DEEP_NOTE = "deep_json"  # the `what` of the note that says a message was cut at MAX_DEPTH
GARBLED_NOTE = "garbled_answer"  # the `what` of the note that says an answer was not UTF-8
STDERR_CUT_NOTE = "stderr_cut"  # the `what` of the note that says how much stderr a tape left out
# Notes about what is never compared (stderr): said in a tape and its report, never drift.
# rec --listen's note of the upstream's CORS headers, which play sends as recorded: what a browser
# client needs from a replay, not what the scripted client sees (ci's tapes have no such note), so
# never compared.
CORS_NOTE = "cors"
UNCOMPARED_NOTES = frozenset({STDERR_CUT_NOTE, CORS_NOTE})


def _other(direction: str) -> str:
    return S2C if direction == C2S else C2S


class EventBuilder:
    """Builds events from wire lines, remembering open requests to echo them on their answers."""

    def __init__(self) -> None:
        # (direction of the request, id key) -> (method, params, params' compact text or None)
        self._open: dict[tuple[str, str], tuple[str, Any, str | None]] = {}
        self._notes: list[dict[str, Any]] = []

    def take_notes(self) -> list[dict[str, Any]]:
        """The note events the lines built since the last call produced (a deep message's cut), to
        be written right after that line's event."""
        notes, self._notes = self._notes, []
        return notes

    def line(self, direction: str, line: bytes) -> dict[str, Any]:
        """The event for one newline-delimited wire line (the newline already stripped)."""
        return self.line_and_text(direction, line)[0]

    def line_and_text(self, direction: str, line: bytes) -> tuple[dict[str, Any], str]:
        """The event for one wire line and its compact JSON, equal to `dumps(event)`.

        A message event's text is spliced from the message's own serialization (made anyway, to
        tell whether `raw` is needed) and, on an answer, the request's params serialized when the
        request was seen: rec's writer serializes each message once instead of twice.
        """
        if line.endswith(b"\r"):
            line = line[:-1]
        try:
            text = line.decode("utf-8")
            msg, depth = loads_depth(text)
        except UnicodeDecodeError as e:
            event = garbage_event(direction, line)
            self._garbled(direction, line, e)
            return event, dumps(event)
        except json.JSONDecodeError:
            event = garbage_event(direction, line)
            return event, dumps(event)
        event, spliced = self._build(direction, msg, text, splice=True)
        if depth:
            self._notes.append(deep_note(event, depth))
        return event, spliced if spliced is not None else dumps(event)

    def message(self, direction: str, msg: Any, text: str | None = None) -> dict[str, Any]:
        """The event for one parsed message; `text` is its exact wire form, if known."""
        return self._build(direction, msg, text, splice=False)[0]

    def _build(
        self, direction: str, msg: Any, text: str | None, *, splice: bool
    ) -> tuple[dict[str, Any], str | None]:
        """The event, and with `splice` its compact JSON if it can be spliced: None if some part
        holds a lone surrogate (dumps then ASCII-escapes the whole line) or the params' text is
        unknown (the request came through message())."""
        kind = classify(msg)
        if kind == "invalid":
            return garbage_event(direction, (text if text is not None else dumps(msg)).encode("utf-8")), None
        msg_text = utf8_dumps(msg)
        event: dict[str, Any] = {"kind": kind, "dir": direction}
        params: Any = None
        params_text: str | None = None
        if kind in ("request", "notification"):
            if kind == "request":
                event["id"] = msg["id"]
                request_params = msg.get("params")
                self._open[(direction, id_key(msg["id"]))] = (
                    msg["method"],
                    request_params,
                    utf8_dumps(request_params) if splice and request_params is not None else None,
                )
            event["method"] = msg["method"]
        else:
            event["id"] = msg["id"]
            method, params, params_text = self._open.pop((_other(direction), id_key(msg["id"])), (None, None, None))
            if method is not None:
                event["method"] = method
        # The event so far (kind, dir, id?, method?) is the head of its line; no head, no splicing.
        head = utf8_dumps(event) if splice and msg_text is not None else None
        if params is not None:
            event["params"] = params
        event["msg"] = msg
        if text is not None and text != (msg_text if msg_text is not None else dumps(msg)):
            event["raw"] = text
        raw_text = utf8_dumps(text) if "raw" in event else ""  # None only for a text message() was given
        if head is None or raw_text is None or (params is not None and params_text is None):
            return event, None
        # In the event's key order: kind, dir, id?, method?, params?, msg, raw? (see the module doc).
        return event, "".join((
            head[:-1],
            f',"params":{params_text}' if params is not None else "",
            f',"msg":{msg_text}',
            f',"raw":{raw_text}' if raw_text else "",
            "}",
        ))

    def _garbled(self, direction: str, line: bytes, error: UnicodeDecodeError) -> None:
        """A line that is not UTF-8 but, read leniently, answers an open request: that request is
        answered (with garbage), which a note says at once, so no one waits for a proper answer."""
        try:
            msg = loads_depth(line.decode("utf-8", "surrogateescape"))[0]
        except json.JSONDecodeError:
            return
        if classify(msg) not in ("response", "error"):
            return
        opened = self._open.pop((_other(direction), id_key(msg["id"])), None)
        if opened is None:
            return
        self._notes.append(note_event(GARBLED_NOTE, {
            "id": msg["id"],
            "method": opened[0],
            "error": f"not UTF-8: byte 0x{line[error.start]:02x} at offset {error.start}; recorded as garbage",
        }))

    def refused(self, direction: str, msg_id: Any) -> None:
        """A request the transport refused (an HTTP 4xx to its POST): answered at the HTTP level, by
        the note that says so, not left open for the `unanswered` note."""
        self._open.pop((direction, id_key(msg_id)), None)

    def open_requests(self) -> list[tuple[str, str, str]]:
        """(direction, id key, method) of requests still unanswered, e.g. when a server died."""
        return [(d, k, m) for (d, k), (m, _, _) in self._open.items()]

    def unanswered_note(self) -> dict[str, Any] | None:
        """The `unanswered` note every recorder writes at the end (stdio and HTTP rec alike), if any
        request is still open: each one's direction, id and method."""
        unanswered = [{"dir": d, "id": json.loads(k), "method": m} for d, k, m in self.open_requests()]
        return note_event("unanswered", unanswered) if unanswered else None


def in_session(session: Any, key: str) -> str:
    """A message's id key qualified by the HTTP session it crossed in (`session`, None on a tape
    without sessions): ids are unique within a session only."""
    return key if session is None else f"{session}/{key}"


def garbage_event(direction: str, line: bytes) -> dict[str, Any]:
    event: dict[str, Any] = {"kind": "garbage", "dir": direction}
    try:
        event["text"] = line.decode("utf-8")
    except UnicodeDecodeError:
        event["b64"] = base64.b64encode(line).decode("ascii")
    event["bytes"] = len(line)
    return event


def stderr_event(line: bytes) -> dict[str, Any]:
    return {"kind": "stderr", "dir": S2C, "text": line.rstrip(b"\r\n").decode("utf-8", "backslashreplace")}


def exit_event(returncode: int | None) -> dict[str, Any]:
    """The server process's end: a negative Popen returncode is death by that signal."""
    event: dict[str, Any] = {"kind": "exit"}
    if returncode is not None and returncode < 0:
        event["code"] = None
        try:
            event["signal"] = signal.Signals(-returncode).name
        except ValueError:
            event["signal"] = str(-returncode)
    else:
        event["code"] = returncode
    return event


def note_event(what: str, detail: Any = None) -> dict[str, Any]:
    event: dict[str, Any] = {"kind": "note", "what": what}
    if detail is not None:
        event["detail"] = detail
    return event


def deep_note(event: dict[str, Any], depth: int) -> dict[str, Any]:
    """The note that follows a message event whose line nested `depth` levels, past MAX_DEPTH."""
    what = " ".join(str(p) for p in (event.get("dir"), event.get("kind"), event.get("method")) if p)
    if "id" in event:
        what += f" id {dumps(event['id'])}"
    return note_event(
        DEEP_NOTE,
        f"{what}: JSON nested {depth} levels deep, past mcptape's limit of {MAX_DEPTH}: the parts below "
        f"level {MAX_DEPTH} are kept, compared and replayed as their exact JSON text",
    )


def note_detail(note: dict[str, Any]) -> str:
    """A note's detail as one line of text (a string as it is, anything else as JSON)."""
    detail = note.get("detail")
    return detail if isinstance(detail, str) else dumps(detail)


REPORTED_NOTES = frozenset({DEEP_NOTE, GARBLED_NOTE})


def recording_notes(events: list[dict[str, Any]]) -> list[str]:
    """One line per note of REPORTED_NOTES in `events`: a limit mcptape hit or an answer it could
    not read while recording, which every report of the recording says (never the tape alone)."""
    return [f"mcptape noted {e['what']}: {note_detail(e)}" for e in events
            if e.get("kind") == "note" and e.get("what") in REPORTED_NOTES]


def wire_text(event: dict[str, Any]) -> str:
    """The exact text of a message event as it crossed the wire."""
    raw = event.get("raw")
    return raw if isinstance(raw, str) else wire_dumps(event["msg"])


def is_message(event: dict[str, Any]) -> bool:
    return event.get("kind") in MESSAGE_KINDS
