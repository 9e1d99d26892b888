"""OpenTelemetry export: an MCP session as a trace, a span per session, per step and per JSON-RPC exchange.

Owns turning a session's events (tape/events.py) and the moments they crossed the wire into spans
with the attributes of OpenTelemetry's semantic conventions for MCP and GenAI, and handing them to
the OpenTelemetry SDK, whose OTLP/HTTP exporter sends them where the standard `OTEL_*` variables
say (`OTEL_EXPORTER_OTLP_ENDPOINT`, `..._TRACES_ENDPOINT`, `..._HEADERS`, `OTEL_SERVICE_NAME`,
`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` ...). The SDK is an optional extra
(`pip install mcptape[otel]`): imported only when a command is asked to export (`--otel`), and
without it `Telemetry` raises a McptapeError (exit 3) that says what to install. Where the events
and times come from is the commands' business: ci's transport (`WireClock`), rec's writer, play's
stdio loop.

Spans are made after the session, from its events and their times, with explicit start and end
times: nothing on the wire waits for telemetry. Per exchange (conventions of the MCP semantic
conventions: span name `{mcp.method.name} {target}`):

    mcp.method.name, jsonrpc.request.id, jsonrpc.protocol.version, mcp.protocol.version,
    network.transport (pipe | tcp), gen_ai.operation.name=execute_tool + gen_ai.tool.name (tools/call),
    gen_ai.prompt.name (prompts/get), mcp.resource.uri (resources/*), error.type and
    rpc.response.status_code (a JSON-RPC error's code; error.type=tool_error for isError), mcptape.step

No payload leaves unless asked (`payloads=True`, `--otel-payloads`); then the request and its
answer go as `mcptape.request` / `mcptape.response` (and a tools/call's arguments and result as
gen_ai.tool.call.arguments / .result), notifications as span events with `mcptape.message`, and
the tape's other events (a server's stderr lines, garbage, its exit, mcptape's notes) as the session
span's `mcptape.event` events holding the event itself, so an import gives back the whole tape:
redacted as the tapes are (the events are the redacted ones) and verified by the outlet, so a known
secret that survived fails the run (exit 4) before anything is sent. commands/import_.py reads
these attributes back into a tape.

A client that sends a W3C trace context in a request's `_meta` (`traceparent`, `tracestate`) gets
that exchange's span as a child of its own span, linked to the session's; `_meta` is never part of
matching or diffing (mcp.strip_meta), so the context a client sends is no drift.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mcptape.environment as environment
from mcptape.errors import McptapeError
from mcptape.jsonrpc import dumps, id_key
from mcptape.tape.events import C2S, MESSAGE_KINDS, S2C, EventBuilder
from mcptape.tape.reader import read_tape
from mcptape.transports.base import Transport, Wrapped
from mcptape.version import __version__

if TYPE_CHECKING:
    from mcptape.publish.outlet import Outlet

Event = dict[str, Any]
TimedEvent = tuple[int, Event]  # (time.time_ns() the message crossed the wire, the event)

INSTALL_HINT = "pip install 'mcptape[otel]'  (opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http)"
SCOPE = "mcptape"
# Attribute keys of our own (no convention has them); those of the conventions are spelled inline.
REQUEST, RESPONSE, MESSAGE, DIRECTION = "mcptape.request", "mcptape.response", "mcptape.message", "mcptape.dir"
COMMAND, SESSION, STEP = "mcptape.command", "mcptape.session", "mcptape.step"
NOTIFICATION_EVENT = "mcptape.notification"
TAPE_EVENT = "mcptape.event"  # a span event (and its attribute): a tape event that is no message, with payloads
# Which side mcptape plays decides the span kind of a client request: ci is the client, play the
# server, rec the proxy that forwards it (a client of the server).
ROLES = {"ci": "client", "rec": "client", "play": "server"}


@dataclass
class SessionMeta:
    """What a session's spans say about it beside its events."""

    command: str  # ci | rec | play
    name: str
    transport: str = "stdio"  # stdio | http
    protocol: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)  # e.g. mcptape.verdict


class WireClock:
    """When each message crossed the wire, keyed so that events built elsewhere find their time:
    requests and answers by direction and id, other messages by direction and method, each in order.
    Thread-safe enough for one session per clock (ci gives each session its own)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], deque[int]] = defaultdict(deque)
        self.first: int | None = None

    def saw(self, direction: str, line: bytes, at: int | None = None) -> None:
        at = time.time_ns() if at is None else at
        if self.first is None:
            self.first = at
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            return
        if isinstance(msg, dict):
            self._seen[_key(direction, msg)].append(at)

    def saw_event(self, event: Event, at: int | None = None) -> None:
        """The same for an event already built from the line (rec's writer: no second parse)."""
        at = time.time_ns() if at is None else at
        if self.first is None:
            self.first = at
        msg, direction = event.get("msg"), event.get("dir")
        if isinstance(msg, dict) and isinstance(direction, str):
            self._seen[_key(direction, msg)].append(at)

    def timed(self, events: Iterable[Event]) -> list[TimedEvent]:
        """Each message event with the time its line was seen (the last known time for others)."""
        out: list[TimedEvent] = []
        last = self.first if self.first is not None else time.time_ns()
        for ev in events:
            msg = ev.get("msg")
            if isinstance(msg, dict) and ev.get("dir") in (C2S, S2C):
                times = self._seen.get(_key(ev["dir"], msg))
                if times:
                    last = max(last, times.popleft())
            out.append((last, ev))
        return out


class TimedTransport(Wrapped):
    """A transport (transports/base.py) that tells a WireClock when each line crossed it: ci's
    client talks through it when its session is traced. Everything else is the inner transport's."""

    def __init__(self, inner: Transport, clock: WireClock) -> None:
        super().__init__(inner)
        self._clock = clock

    def send(self, line: bytes) -> None:
        self._clock.saw(C2S, line)
        self._inner.send(line)

    def receive(self, timeout: float | None = None) -> bytes | None:
        line: bytes | None = self._inner.receive(timeout)
        if line is not None:
            self._clock.saw(S2C, line)
        return line


class WireLog:
    """Events built from the lines a command sees (play's stdio loop calls it), each with its time."""

    def __init__(self) -> None:
        self._builder = EventBuilder()
        self.events: list[TimedEvent] = []

    def __call__(self, direction: str, line: bytes) -> None:
        self.events.append((time.time_ns(), self._builder.line(direction, line)))


@dataclass(frozen=True)
class TapeTrace:
    """rec's --otel: what its forked writer needs to export the session once the tape is written.
    Made in rec's process (`require_sdk` first: a missing extra fails before anything starts), used
    in the writer's, where the SDK's threads may start (rec forks before any thread exists)."""

    name: str
    payloads: bool = False
    transport: str = "stdio"

    def export(self, tape: Any, clock: WireClock, outlet: Outlet) -> None:
        recorded = read_tape(tape)
        telemetry = Telemetry(payloads=self.payloads)
        try:
            meta = SessionMeta("rec", self.name, transport=self.transport, protocol=recorded.protocol)
            telemetry.export(meta, clock.timed(recorded.events), outlet)
        finally:
            telemetry.close()


def require_sdk() -> None:
    """A McptapeError (exit 3) saying what to install unless the SDK and the OTLP exporter import."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as e:
        raise McptapeError("--otel: the OpenTelemetry SDK or its OTLP/HTTP exporter is not installed",
                           hint=INSTALL_HINT) from e


def _key(direction: str, msg: dict[str, Any]) -> tuple[str, str, str]:
    if "id" in msg and msg.get("id") is not None:
        return direction, "request" if "method" in msg else "answer", id_key(msg["id"])
    return direction, "message", str(msg.get("method"))


def open_telemetry(otel: bool, payloads: bool = False) -> Telemetry | None:
    """The run's Telemetry for `--otel` (`--otel-payloads` implies it); None when neither is given."""
    return Telemetry(payloads=payloads) if otel or payloads else None


class Telemetry:
    """The SDK's tracer provider for one run: `export` a session at a time, `close` at the end
    (which sends what is batched). `processor`: a span processor of the SDK's instead of the OTLP
    exporter (tests give an in-memory one)."""

    def __init__(self, *, payloads: bool = False, processor: Any = None) -> None:
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as e:
            raise McptapeError("--otel: the OpenTelemetry SDK is not installed", hint=INSTALL_HINT) from e
        if processor is None:
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            except ImportError as e:
                raise McptapeError("--otel: the OTLP/HTTP exporter is not installed", hint=INSTALL_HINT) from e
            processor = BatchSpanProcessor(OTLPSpanExporter())  # endpoint, headers ...: OTEL_* variables
        # What emit() and _client_context() import, imported now: ci exports from worker threads,
        # where a first import may race another (ci/session.py's docstring).
        import opentelemetry.trace  # noqa: F401
        import opentelemetry.trace.propagation.tracecontext  # noqa: F401

        # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, but what it is given
        # wins over them: the service is named "mcptape" only where they do not name it.
        ours = {"service.version": __version__}
        if "service.name" not in _env_resource():
            ours["service.name"] = "mcptape"
        self._provider = TracerProvider(resource=Resource.create(ours))
        self._provider.add_span_processor(processor)
        self.tracer = self._provider.get_tracer(SCOPE, __version__)
        self.payloads = payloads

    def export(self, meta: SessionMeta, events: Sequence[TimedEvent], outlet: Outlet | None = None) -> None:
        """One session's spans: the session, its steps, its exchanges (module doc). With payloads,
        each passes `outlet` (the session's) first: a SecretLeak raised here sent none of them."""
        _SessionSpans(self, meta, events, outlet).emit()

    def close(self) -> None:
        self._provider.shutdown()  # flushes the batch processor: what is queued is sent now



def _env_resource() -> dict[str, str]:
    pairs = (p.split("=", 1) for p in (environment.get("OTEL_RESOURCE_ATTRIBUTES") or "").split(",") if "=" in p)
    found = {k.strip(): v for k, v in pairs}
    service = environment.get("OTEL_SERVICE_NAME")
    if service:
        found["service.name"] = service
    return found


@dataclass
class _Exchange:
    request: Event
    start: int
    answer: Event | None = None
    end: int | None = None


class _SessionSpans:
    def __init__(self, telemetry: Telemetry, meta: SessionMeta, events: Sequence[TimedEvent],
                 outlet: Outlet | None) -> None:
        self.t = telemetry
        self.outlet = outlet
        self.meta = meta
        self.events = events
        now = time.time_ns()
        self.start = min((at for at, _ in events), default=now)
        self.end = max((at for at, _ in events), default=now)

    def emit(self) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Link, SpanKind, Status, StatusCode

        exchanges, notes, others = self._pair()
        # Every attribute first, payloads verified by the outlet: a leak raises before any span exists.
        attributes_of = [self._attributes(x) for x in exchanges]
        note_attributes = [self._note_attributes(ev) for _, ev in notes]
        others = others if self.t.payloads else []  # a server's stderr is payload too
        other_attributes = [{TAPE_EVENT: self.payload(ev)} for _, ev in others]
        meta = self.meta
        attributes = {COMMAND: meta.command, SESSION: meta.name, "network.transport": _network(meta.transport),
                      **({"mcp.protocol.version": meta.protocol} if meta.protocol else {}), **meta.attributes}
        session = self.t.tracer.start_span(f"mcptape {meta.command} {meta.name}", kind=SpanKind.INTERNAL,
                                           attributes=attributes, start_time=self.start)
        session_ctx = trace.set_span_in_context(session)
        steps: dict[int, Any] = {}
        for step, members in _by_step(exchanges).items():
            first = min(x.start for x in members)
            last = max(x.end or x.start for x in members)
            span = self.t.tracer.start_span(f"step {step}", context=session_ctx, kind=SpanKind.INTERNAL,
                                            attributes={STEP: step}, start_time=first)
            steps[step] = (span, last)
        for x, attributes_x in zip(exchanges, attributes_of, strict=True):
            parent = steps[x.request["step"]][0] if x.request.get("step") in steps else session
            remote = _client_context(x.request)
            links = [Link(parent.get_span_context())] if remote is not None else []
            context = remote if remote is not None else trace.set_span_in_context(parent)
            span = self.t.tracer.start_span(
                _span_name(x.request), context=context, kind=self._kind(x.request), links=links,
                attributes=attributes_x, start_time=x.start)
            error = _error_type(x.answer)
            if error is not None:
                span.set_status(Status(StatusCode.ERROR, f"{error}"))
            elif x.answer is None:
                span.set_status(Status(StatusCode.ERROR, "no answer"))
            span.end(end_time=x.end if x.end is not None else self.end)
        for (at, ev), attrs in zip(notes, note_attributes, strict=True):
            target = steps[ev["step"]][0] if ev.get("step") in steps else session
            target.add_event(NOTIFICATION_EVENT, attributes=attrs, timestamp=at)
        for (at, _), attrs in zip(others, other_attributes, strict=True):
            session.add_event(TAPE_EVENT, attributes=attrs, timestamp=at)
        for span, last in steps.values():
            span.end(end_time=last)
        session.end(end_time=self.end)

    def payload(self, value: Any) -> str:
        text = value if isinstance(value, str) else dumps(value)
        where = f"telemetry of session {self.meta.name}"
        return self.outlet.verified(text, where) if self.outlet is not None else text

    def _note_attributes(self, ev: Event) -> dict[str, Any]:
        attrs: dict[str, Any] = {DIRECTION: str(ev.get("dir", "")), "mcp.method.name": str(ev.get("method", ""))}
        if self.t.payloads and isinstance(ev.get("msg"), dict):
            attrs[MESSAGE] = self.payload(ev["msg"])
        return attrs

    def _pair(self) -> tuple[list[_Exchange], list[TimedEvent], list[TimedEvent]]:
        """Requests with their answers (by direction and id); notifications on their own; the
        events that are no message (stderr, garbage, exit, notes)."""
        open_: dict[tuple[str, str], _Exchange] = {}
        exchanges: list[_Exchange] = []
        notes: list[TimedEvent] = []
        others: list[TimedEvent] = []
        for at, ev in self.events:
            kind = ev.get("kind")
            if kind == "request" and "id" in ev:
                x = _Exchange(ev, at)
                open_[(str(ev.get("dir")), id_key(ev.get("id")))] = x
                exchanges.append(x)
            elif kind in ("response", "error") and "id" in ev:
                asked = C2S if ev.get("dir") == S2C else S2C
                found = open_.pop((asked, id_key(ev.get("id"))), None)
                if found is not None:
                    found.answer, found.end = ev, at
            elif kind == "notification":
                notes.append((at, ev))
            elif kind not in MESSAGE_KINDS:
                others.append((at, ev))
        return exchanges, notes, others

    def _kind(self, request: Event) -> Any:
        from opentelemetry.trace import SpanKind

        ours = ROLES.get(self.meta.command, "client")
        asked_by_client = request.get("dir") == C2S
        # A request of the client: a client span where mcptape sends it, a server span where it answers.
        if (ours == "client") == asked_by_client:
            return SpanKind.CLIENT
        return SpanKind.SERVER

    def _attributes(self, x: _Exchange) -> dict[str, Any]:
        request = x.request
        method = str(request.get("method", ""))
        msg, params = _msg(request), _params(request)
        attrs: dict[str, Any] = {
            "mcp.method.name": method,
            "jsonrpc.request.id": str(request.get("id")),
            "jsonrpc.protocol.version": "2.0",
            "network.transport": _network(self.meta.transport),
            DIRECTION: str(request.get("dir", "")),
        }
        if self.meta.protocol:
            attrs["mcp.protocol.version"] = self.meta.protocol
        if self.meta.transport == "http":
            attrs["network.protocol.name"] = "http"
        if isinstance(request.get("step"), int):
            attrs[STEP] = request["step"]
        name = params.get("name")
        if method == "tools/call" and isinstance(name, str):
            attrs["gen_ai.operation.name"] = "execute_tool"
            attrs["gen_ai.tool.name"] = name
        elif method == "prompts/get" and isinstance(name, str):
            attrs["gen_ai.prompt.name"] = name
        elif method.startswith("resources/") and isinstance(params.get("uri"), str):
            attrs["mcp.resource.uri"] = params["uri"]
        error = _error_type(x.answer)
        if error is not None:
            attrs["error.type"] = error
            code = _error_code(x.answer)
            if code is not None:
                attrs["rpc.response.status_code"] = str(code)
        if self.t.payloads:
            attrs[REQUEST] = self.payload(msg)
            answer = x.answer.get("msg") if x.answer is not None else None
            if isinstance(answer, dict):
                attrs[RESPONSE] = self.payload(answer)
            if method == "tools/call":
                if "arguments" in params:
                    attrs["gen_ai.tool.call.arguments"] = self.payload(params["arguments"])
                if isinstance(answer, dict) and "result" in answer:
                    attrs["gen_ai.tool.call.result"] = self.payload(answer["result"])
        return attrs


def _msg(event: Event) -> dict[str, Any]:
    msg = event.get("msg")
    return msg if isinstance(msg, dict) else {}


def _params(event: Event) -> dict[str, Any]:
    params = _msg(event).get("params")
    return params if isinstance(params, dict) else {}


def _by_step(exchanges: list[_Exchange]) -> dict[int, list[_Exchange]]:
    steps: dict[int, list[_Exchange]] = {}
    for x in exchanges:
        step = x.request.get("step")
        if isinstance(step, int):
            steps.setdefault(step, []).append(x)
    return steps


def _network(transport: str) -> str:
    return "tcp" if transport == "http" else "pipe"


def _span_name(request: Event) -> str:
    """`{mcp.method.name} {target}`: the tool or prompt name, never a URI (unbounded)."""
    method = str(request.get("method", ""))
    name = _params(request).get("name")
    return f"{method} {name}" if method in ("tools/call", "prompts/get") and isinstance(name, str) else method


def _error_code(answer: Event | None) -> Any:
    msg = answer.get("msg") if answer is not None else None
    error = msg.get("error") if isinstance(msg, dict) else None
    return error.get("code") if isinstance(error, dict) else None


def _error_type(answer: Event | None) -> str | None:
    """The conventions' error.type: a JSON-RPC error's code, or tool_error for a result with isError."""
    if answer is None:
        return None
    code = _error_code(answer)
    if code is not None:
        return str(code)
    msg = answer.get("msg")
    result = msg.get("result") if isinstance(msg, dict) else None
    if isinstance(result, dict) and result.get("isError") is True:
        return "tool_error"
    return None


def _client_context(request: Event) -> Any:
    """The W3C trace context the client sent in the request's `_meta`, as the exchange's parent; None if none."""
    meta = _params(request).get("_meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("traceparent"), str):
        return None
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier = {k: v for k in ("traceparent", "tracestate") if isinstance(v := meta.get(k), str)}
    context = TraceContextTextMapPropagator().extract(carrier)
    return context if trace.get_current_span(context).get_span_context().is_valid else None
