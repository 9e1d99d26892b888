"""`mcptape import TRACE [--out TAPE] [--name NAME] [--session NAME]`: an OTLP/JSON trace of an MCP
session that carries its messages, as a tape: a production incident becomes a replayable test.

The trace is what `--otel-payloads` exports (publish/telemetry.py): OTLP/JSON as a collector's file
exporter writes it (one ExportTraceServiceRequest per line, or one document; ids hex or base64,
both read), a span per JSON-RPC exchange holding the request and its answer in `mcptape.request`
and `mcptape.response`, notifications as `mcptape.notification` span events with `mcptape.message`,
the session span named by `mcptape.session`, and the tape's other events (stderr, a server's exit,
notes) as its `mcptape.event` events. Messages are put back in the order they crossed the wire (a
request at its span's start, its answer at its end), built into events by the one EventBuilder, the
other events after the message they followed; when each crossed the wire is the tape's timing footer
(tape/timing.py), so `play --pace recorded` paces an imported tape as it paces the recording. The tape
is written as rec writes one: redacted by the built-in detectors and the secrets of the environment
(redact/policy.py's rule), verified, sealed, written atomically. A `rec --otel-payloads` session
imported back diffs equal to the tape rec wrote.

Exit codes: 0 the tape was written; 3 the file is not such a trace (no messages: exported
without --otel-payloads?), or several sessions and no --session; 4 a secret survived redaction.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcptape.commands.grammar import Output, check_outputs
from mcptape.commands.output import say
from mcptape.errors import EXIT_OK, McptapeError
from mcptape.publish.outlet import Outlet
from mcptape.publish.telemetry import (
    DIRECTION,
    MESSAGE,
    NOTIFICATION_EVENT,
    REQUEST,
    RESPONSE,
    SESSION,
    TAPE_EVENT,
)
from mcptape.redact.policy import env_secrets
from mcptape.redact.redactor import make_redactor
from mcptape.tape.events import C2S, S2C, EventBuilder
from mcptape.tape.format import TAPE_SUFFIX, make_header
from mcptape.tape.timing import TIMING_KEY, timing_footer


@dataclass(frozen=True)
class Options:
    trace: str
    out: str | None = None
    name: str | None = None
    session: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(trace=args.trace, out=args.out, name=args.name, session=args.session)


def run(options: Options) -> int:
    if options.out is not None:  # checked before the trace is read; the default path once the name is known
        check_outputs([Output("--out", options.out, artifact=True)], reads=[options.trace])
    spans = _spans(Path(options.trace))
    sessions = {s["attrs"][SESSION]: s for s in spans if SESSION in s["attrs"]}
    session = _choose(options, sessions)
    members = _members(spans, session)
    messages = _messages(members)
    if not messages:
        raise McptapeError(f"{options.trace}: the trace carries no MCP messages (no `{REQUEST}` attribute on its spans)",
                           hint="export the session with --otel-payloads (`mcptape ci|rec|play --otel-payloads`)")
    name = options.name or (session["attrs"][SESSION] if session is not None else Path(options.trace).stem)
    out = Path(options.out) if options.out else Path("tapes") / f"{name}{TAPE_SUFFIX}"
    check_outputs([Output("--out", str(out), artifact=True)], reads=[options.trace])
    attrs = session["attrs"] if session is not None else {}
    builder = EventBuilder()
    events: list[dict[str, Any]] = []
    times: list[float | None] = []  # seconds since the first message, for the timing footer
    # Relative in integer nanoseconds first: epoch seconds as floats keep a quarter of a microsecond,
    # enough to flip a footer's 0.01 ms rounding against the recording's own.
    start = min((at for at, *_ in messages), default=0)
    for at, order, direction, text in sorted(messages, key=lambda m: (m[0], m[1])):
        if order == _OTHER:
            event = _tape_event(text, options.trace)
            events.append(event)
            times.append((at - start) / 1e9 if event["kind"] in _CROSSED_THE_WIRE else None)
            continue
        events.append(builder.line(direction, text.encode("utf-8", "surrogatepass")))
        times.append((at - start) / 1e9)
        notes = builder.take_notes()
        events.extend(notes)
        times.extend([None] * len(notes))
    header = make_header(name, transport="http" if attrs.get("network.transport") == "tcp" else "stdio",
                         protocol=attrs.get("mcp.protocol.version"), imported={"from": "otlp", "trace": Path(options.trace).name})
    outlet = Outlet(make_redactor(env_secrets(os.environ)))  # as rec: the environment's secrets and the detectors
    timing = timing_footer(times) if all(at for at, *_ in messages) else None  # a span without times: no timing
    footer = {TIMING_KEY: timing} if timing is not None else {}
    outlet.write_tape(out, header, events, what="tape", **footer)  # SecretLeak -> exit 4: nothing written
    say(f"mcptape import: {len(events)} events -> {out}")
    return EXIT_OK


def _choose(options: Options, sessions: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    if options.session is not None:
        if options.session not in sessions:
            raise McptapeError(f"{options.trace}: no session {options.session!r} in the trace",
                               hint=f"sessions in it: {', '.join(sorted(sessions)) or '(none)'}")
        return sessions[options.session]
    if len(sessions) > 1:
        raise McptapeError(f"{options.trace}: the trace holds {len(sessions)} sessions",
                           hint=f"pick one with --session: {', '.join(sorted(sessions))}")
    return next(iter(sessions.values()), None)


def _members(spans: list[dict[str, Any]], session: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The session's spans: those whose parents lead to it, or that link to it (a client's
    traceparent made another span their parent). All of them when the trace names no session."""
    if session is None:
        return spans
    by_id = {s["spanId"]: s for s in spans}
    root = session["spanId"]

    def under(span: dict[str, Any]) -> bool:
        seen = set()
        while span is not None and span["spanId"] not in seen:
            if span["spanId"] == root or any(_id(link.get("spanId")) == root for link in span.get("links", [])):
                return True
            seen.add(span["spanId"])
            span = by_id.get(span["parentSpanId"])  # type: ignore[assignment]
        return False

    return [s for s in spans if under(s)]


_OTHER = 2  # the order of an event that is no message: after the messages of its moment
_CROSSED_THE_WIRE = ("stderr", "garbage")  # other events that have a time in the footer (exit, note: none)
_TAPE_EVENT_KINDS = ("stderr", "garbage", "exit", "note")


def _tape_event(text: str, trace: str) -> dict[str, Any]:
    """An exported tape event that is no message (telemetry.TAPE_EVENT), checked: the trace is untrusted."""
    try:
        event = json.loads(text)
    except (ValueError, RecursionError):
        event = None
    if not isinstance(event, dict) or event.get("kind") not in _TAPE_EVENT_KINDS or "msg" in event:
        raise McptapeError(f"{trace}: a `{TAPE_EVENT}` span event that is not a tape event: {text[:120]!r}",
                           hint="import traces that mcptape exported with --otel-payloads")
    return event


def _messages(spans: list[dict[str, Any]]) -> list[tuple[int, int, str, str]]:
    """(time, order, direction, text) of every message the spans carry (order 0: a request or a
    notification, 1: an answer), and of every other tape event (order _OTHER, the event's JSON)."""
    out: list[tuple[int, int, str, str]] = []
    for span in spans:
        attrs = span["attrs"]
        request = attrs.get(REQUEST)
        if isinstance(request, str):
            asked = str(attrs[DIRECTION]) if attrs.get(DIRECTION) in (C2S, S2C) else C2S
            out.append((_time(span, "startTimeUnixNano"), 0, asked, request))
            answer = attrs.get(RESPONSE)
            if isinstance(answer, str):
                out.append((_time(span, "endTimeUnixNano"), 1, S2C if asked == C2S else C2S, answer))
        for event in span.get("events", []):
            eattrs = _attributes(event)
            message = eattrs.get(MESSAGE)
            if event.get("name") == NOTIFICATION_EVENT and isinstance(message, str):
                direction = str(eattrs[DIRECTION]) if eattrs.get(DIRECTION) in (C2S, S2C) else S2C
                out.append((_time(event, "timeUnixNano"), 0, direction, message))
            elif event.get("name") == TAPE_EVENT and isinstance(eattrs.get(TAPE_EVENT), str):
                out.append((_time(event, "timeUnixNano"), _OTHER, "", eattrs[TAPE_EVENT]))
    return out


def _spans(path: Path) -> list[dict[str, Any]]:
    """Every span of an OTLP/JSON file, with its attributes as a dict (`attrs`) and its ids as hex."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise McptapeError(f"{path}: cannot read the trace: {getattr(e, 'strerror', None) or e}") from e
    documents = []
    try:
        documents.append(json.loads(text))
    except ValueError:
        for number, line in enumerate(text.splitlines(), start=1):  # JSON lines: a collector's file exporter
            if line.strip():
                try:
                    documents.append(json.loads(line))
                except ValueError as e:
                    raise McptapeError(f"{path}:{number}: not OTLP/JSON: {e}",
                                       hint="give the trace as OTLP/JSON (a collector's file exporter writes it)") from e
    spans = []
    for doc in documents:
        for rs in (doc.get("resourceSpans") or doc.get("resource_spans") or []) if isinstance(doc, dict) else []:
            for ss in rs.get("scopeSpans") or rs.get("scope_spans") or []:
                for span in ss.get("spans") or []:
                    spans.append({**span, "attrs": _attributes(span), "spanId": _id(span.get("spanId")),
                                  "parentSpanId": _id(span.get("parentSpanId"))})
    if not spans:
        raise McptapeError(f"{path}: no spans in it: not an OTLP/JSON trace",
                           hint="give the trace as OTLP/JSON (resourceSpans → scopeSpans → spans)")
    return spans


def _id(value: Any) -> str:
    """A span id as hex: OTLP/JSON writes hex, protobuf's JSON mapping base64."""
    if not isinstance(value, str) or not value:
        return ""
    if len(value) == 16 and all(c in "0123456789abcdefABCDEF" for c in value):
        return value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        return value


def _attributes(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in node.get("attributes") or []:
        value = item.get("value") or {}
        for kind in ("stringValue", "intValue", "boolValue", "doubleValue"):
            if kind in value:
                out[item.get("key")] = int(value[kind]) if kind == "intValue" else value[kind]
    return out


def _time(node: dict[str, Any], key: str) -> int:
    try:
        return int(node.get(key) or 0)
    except (TypeError, ValueError):
        return 0
