"""The scripted MCP client: runs one session's steps against a live server and records every event.

Owns the client side of the protocol as mcptape.yml scripts it: the handshake and the choice of
protocol revision (see "Protocol revisions" below), deterministic request ids (1, 2, 3, ...),
the step kinds of config.Step, answering server-initiated requests as the config says
(roots, sampling, elicitation — one answer, or a scripted conversation whose answer for each
request config/answers.py chooses —, ping; anything else -32601), per-step and per-session
timeouts, checking `call` arguments against the tool's inputSchema, and shutting the server
down. Every event goes through one EventBuilder and carries `"step": n` (1-based; absent on
handshake events). Bytes and framing are the transport's (transports/); comparing is diff/'s;
volatile values are volatility/normalize.py's; how sessions are chosen and judged is ci/'s.

Split along what each part owns: the wire state (ids, the event log, deadlines, the receive loop)
is live/wire.py's, the answers to what the server asks (server requests, input-required rounds,
URL elicitations) live/server_requests.py's, a call run as a task live/task_calls.py's; this module
drives the steps and the handshake over them, and checks a call's arguments against the tool's schema.

A failing session (timeout, crash) never loses what was seen: `record_session` returns the
events gathered so far together with the error. stderr lines come last (their interleaving
with stdout is unknowable); the process exit is recorded when the session failed or the server
exited with a non-zero status, not after a clean shutdown (its timing is not behaviour).
A `call` step checks its arguments against the tool's inputSchema; when no tools/list was seen
yet in the session, the client lists the tools first, recorded under that step like any traffic.

Protocol revisions. `protocol:` (server entry, else the client block) is `auto` or a version.
- `auto` (default): `server/discover` first (id 0, 2026-07-28 `_meta`). A result whose
  `supportedVersions` holds 2026-07-28 makes the session stateless; an error (-32601 from
  every legacy server, -32022, anything else) or a result without 2026-07-28 falls back to
  `initialize` with LEGACY_DEFAULT_PROTOCOL. The refused probe is not kept in the events: a
  legacy server's tape stays what it was before mcptape knew 2026-07-28 (golden tapes
  recorded then still compare clean); `Recording.negotiation` says what happened, and ci/session.py
  writes it into the tape header (`"negotiation": "fallback: initialize after -32601"`).
- a legacy version (2024-11-05 ... 2025-11-25): `initialize` with it, as before ("initialize").
- 2026-07-28: `server/discover` only, no `initialize`, no `notifications/initialized`
  ("discover"); a refusal is a ServerError.
On 2026-07-28 every request carries `_meta` with the protocol version, the config's
capabilities and clientInfo. A result with `resultType: "input_required"` is answered from
the config's canned roots/sampling/elicitation answers and the request is sent again with
`inputResponses` and the echoed `requestState`, under the same step (every round trip is
recorded); a sampling request with no canned answer ends the step with a note. A -32042
(URLElicitationRequired, 2025-11-25) answer lists URL-mode elicitations: answered from
`client.elicitation` like an `elicitation/create` of mode url, and when all are accepted the
request is sent again under the same step (`_url_elicitations`). `listen` is
`subscriptions/listen` (all list-changed kinds), ended by `notifications/cancelled` after
`count`/`duration`; `set_log_level` sets `io.modelcontextprotocol/logLevel` on later requests
(2026-07-28 has no logging/setLevel). A `call` with `task: true` runs as a task: 2025-11-25's
`params.task` + tasks/get + tasks/result (`_call_as_task`), or on 2026-07-28 the tasks extension
(`_call_as_extension_task`: declared per request, polled, input answered with tasks/update).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from mcptape.config.models import ClientSettings, Step
from mcptape.errors import ConfigError, McptapeError, RequestRefused, ServerError
from mcptape.jsonrpc import dumps
from mcptape.live.server_requests import ServerRequests
from mcptape.live.task_calls import Tasks
from mcptape.live.wire import Wire
from mcptape.mcp import (
    LEGACY_DEFAULT_PROTOCOL,
    META_SERVER_INFO,
    MODERN_PROTOCOL,
    is_modern,
)
from mcptape.tape.events import (
    S2C,
    STDERR_CUT_NOTE,
    exit_event,
    note_event,
    stderr_event,
)
from mcptape.tape.format import Event
from mcptape.transports.base import Transport
from mcptape.transports.stdio import STDERR_KEPT_BYTES
from mcptape.verdict.model import CallRef, Finding
from mcptape.version import __version__

# list step -> (method, key of the list in the result); every page is requested and recorded.
LIST_METHODS: dict[str, tuple[str, str]] = {
    "list_tools": ("tools/list", "tools"),
    "list_resources": ("resources/list", "resources"),
    "list_resource_templates": ("resources/templates/list", "resourceTemplates"),
    "list_prompts": ("prompts/list", "prompts"),
}
MAX_PAGES = 1000  # a server that hands out cursors forever must not hang the gate
DEFAULT_LISTEN_SECONDS = 1.0

DISCOVER_ID = 0  # the probe comes before the session's 1, 2, 3: a legacy fallback keeps its old ids
LISTEN_FILTER = {"toolsListChanged": True, "resourcesListChanged": True, "promptsListChanged": True}


@dataclass
class SchemaBreak:
    """A call the golden tool schema accepted and the live one rejects: the server's breaking change."""

    step: int
    call: CallRef
    finding: Finding


@dataclass
class Recording:
    """What one session produced: events in arrival order (partial if `error` is set)."""

    events: list[Event]
    protocol: str | None = None
    server_info: dict[str, Any] | None = None
    negotiation: str | None = None  # how `protocol` was reached: discover | initialize | fallback: ...
    error: McptapeError | None = None
    returncode: int | None = None
    schema_breaks: list[SchemaBreak] = field(default_factory=list)
    duration_s: float = 0.0
    failed_step: int | None = None  # 1-based step the error happened in (None: handshake or none)
    # Per event, the clock when its message crossed the wire (None: not a wire message); the
    # fresh tape's timing (tape/timing.py), never a golden's.
    times: list[float | None] = field(default_factory=list)
    # Seconds each completed step took, by 1-based step (the latency comparison's samples: ci/baseline.py).
    step_s: dict[int, float] = field(default_factory=dict)


def describe_step(step: Step) -> str:
    """How a report names a step: `call add`, `read_resource calc://constants`, `list_tools`."""
    return f"{step.action} {step.target}" if step.target else step.action


def schema_violation(arguments: Any, schema: Any) -> str | None:
    """The first rule of `schema` that `arguments` break, in one line, or None if they are accepted."""
    if not isinstance(schema, dict):
        return None
    try:
        cls = jsonschema.validators.validator_for(schema)
        validator = cls(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except jsonschema.exceptions.SchemaError as e:
        return f"the tool's inputSchema itself is invalid: {e.message}"
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{error.message} (rule `{error.validator}` at arguments{where})"


def schema_break(step: int | None, name: str, arguments: dict[str, Any], live_rule: str, golden_tool: Any,
                 live_tool: Mapping[str, Any]) -> SchemaBreak:
    """The break a call meets when the live tool's inputSchema rejects (`live_rule`) arguments the
    golden tool's accepted: structural whatever the drift settings, since the server now refuses
    what the session sends (strength/ judges its mutants with it too)."""
    return SchemaBreak(
        step=step or 0,
        call=CallRef(method="tools/call", name=name, arguments=arguments, step=step),
        finding=Finding.of("schema", "breaking", "inputSchema",
                           f"tool `{name}` no longer accepts arguments its golden schema accepted: {live_rule}",
                           golden_tool.get("inputSchema") if isinstance(golden_tool, dict) else None,
                           live_tool.get("inputSchema")),
    )


class ScriptedClient:
    """Drives one session's steps over its wire. Single-threaded: it reads the server's lines while it waits."""

    def __init__(
        self,
        transport: Transport,
        settings: ClientSettings,
        *,
        session: str,
        protocol: str | None = None,
        step_timeout: float = 30.0,
        session_timeout: float = 120.0,
        golden_tools: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        after_step: Callable[[int], list[Event]] | None = None,
    ) -> None:
        self.wire = Wire(transport, settings, session=session, step_timeout=step_timeout,
                         session_timeout=session_timeout, clock=clock)
        self.answers = ServerRequests(self.wire, settings)
        self.wire.on_request = self.answers.answer
        self.tasks = Tasks(self.wire, self.answers, self.request)
        # Called after each step with its number; the events it returns are recorded under that
        # step (ci's sandbox snapshot: a step's side effects go right after its traffic).
        self.after_step = after_step
        self.settings = settings
        self.session = session
        requested = protocol or settings.protocol
        # `both` is ci's split into one session per era (ci/eras.py); anything else running it is auto.
        self.protocol_mode = "auto" if requested in (None, "auto", "both") else str(requested)
        # The version `initialize` asks for (auto's fallback, or the pinned legacy version).
        self.protocol_requested = (
            LEGACY_DEFAULT_PROTOCOL if self.protocol_mode == "auto" or is_modern(requested) else str(requested)
        )
        self.step_timeout = step_timeout
        # None: no golden tape, so a call the live schema rejects is the config's fault.
        self.golden_tools = golden_tools
        self.protocol: str | None = None
        self.server_info: dict[str, Any] | None = None
        self.step_s: dict[int, float] = {}
        self.negotiation: str | None = None
        self.schema_breaks: list[SchemaBreak] = []
        self.live_tools: dict[str, Any] | None = None
        self._tools_pages: dict[str, Any] = {}

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request with the next id and return the server's answer (result or error message).

        The answer is the final one: input-required rounds (2026-07-28) and URL elicitations
        (2025-11-25) happen in between, under the same step.
        """
        answer = self.wire.request_once(method, params)
        if self.wire.modern:
            answer = self.answers.input_rounds(method, params, answer)
        answer = self.answers.url_elicitations(method, params, answer)
        if method == "tools/list":
            self._note_tools(params, answer)
        return answer

    # -- tools and their schemas -------------------------------------------------------------

    def _note_tools(self, params: dict[str, Any] | None, answer: dict[str, Any]) -> None:
        if not (params or {}).get("cursor"):
            self._tools_pages = {}
        result = answer.get("result")
        if not isinstance(result, dict):
            return
        for tool in result.get("tools") or []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self._tools_pages[tool["name"]] = tool
        self.live_tools = dict(self._tools_pages)

    def _check_arguments(self, step: Step, arguments: dict[str, Any]) -> None:
        """Config error or breaking change, decided before the call is sent (see module docstring)."""
        name = step.target or ""
        if self.live_tools is None:
            self._list_all("tools/list", "tools")  # recorded like any traffic, under this step
        tool = (self.live_tools or {}).get(name)
        if tool is None:
            return  # an unknown tool is the server's answer to record, and diff's to judge
        live_rule = schema_violation(arguments, tool.get("inputSchema"))
        if live_rule is None:
            return
        golden_tool = None if self.golden_tools is None else self.golden_tools.get(name)
        golden_rule = (
            schema_violation(arguments, golden_tool.get("inputSchema")) if isinstance(golden_tool, dict) else None
        )
        if self.golden_tools is None or golden_rule is not None:
            raise ConfigError(
                f"{self.wire.where()}: arguments {dumps(arguments)} for tool `{name}` are rejected by its "
                f"inputSchema: {live_rule}",
                hint="fix `arguments:` of this step in mcptape.yml to match the tool's inputSchema",
            )
        self.schema_breaks.append(schema_break(self.wire.step, name, arguments, live_rule, golden_tool, tool))

    # -- the session ------------------------------------------------------------------------

    def handshake(self) -> None:
        """Open the session as `protocol:` says (module docstring: Protocol revisions)."""
        mode = self.protocol_mode
        if mode != "auto" and not is_modern(mode):
            self.negotiation = "initialize"
            self.initialize()
            return
        refusal = self.discover(pinned=mode != "auto")
        if refusal is None:
            self.negotiation = "discover"
            return
        self.negotiation = f"fallback: initialize after {refusal}"
        self.initialize()

    def discover(self, *, pinned: bool) -> str | None:
        """`server/discover` at 2026-07-28; None if the session is now stateless, else why not (auto).

        Under auto a refused probe and its answer are taken out of the events (module docstring).
        """
        self.wire.begin(None, "server/discover", self.step_timeout)
        mark = len(self.wire.events)
        try:
            answer = self.wire.request_once(
                "server/discover", {"_meta": self.wire.request_meta()}, msg_id=DISCOVER_ID, probe=True
            )
        except RequestRefused as e:
            # An HTTP refusal of the probe (server-everything: 400 "Server not initialized") is how
            # a legacy HTTP server says no, as -32601 is over stdio: FastMCP's client falls back too.
            if pinned or e.request_id != DISCOVER_ID:
                raise
            self.wire.events = self.wire.events[:mark] + [e for e in self.wire.events[mark:] if not _is_probe(e)]
            return f"HTTP {e.status}"
        result = answer.get("result")
        versions = result.get("supportedVersions") if isinstance(result, dict) else None
        if isinstance(result, dict) and isinstance(versions, list) and MODERN_PROTOCOL in versions:
            self.wire.modern = True
            self.protocol = MODERN_PROTOCOL
            meta = result.get("_meta")
            info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
            self.server_info = info if isinstance(info, dict) else None
            return None
        if isinstance(answer.get("error"), dict):
            refusal = str(answer["error"].get("code"))
        else:
            refusal = f"server/discover offered {dumps(versions)}"
        if pinned:
            raise ServerError(
                f"{self.wire.where()}: the server refused protocol {MODERN_PROTOCOL}: "
                f"{dumps(answer.get('error') or result)}",
                hint="it may speak only the legacy protocol: set `protocol: auto` (or a legacy version) "
                "on this server in mcptape.yml",
            )
        # Everything else that arrived meanwhile (a notification, a server request) stays.
        self.wire.events = self.wire.events[:mark] + [e for e in self.wire.events[mark:] if not _is_probe(e)]
        return refusal

    def initialize(self) -> None:
        """Legacy handshake: initialize with our capabilities, then notifications/initialized."""
        s = self.settings
        self.wire.begin(None, "initialize", self.step_timeout)
        params = {
            "protocolVersion": self.protocol_requested,
            "capabilities": dict(s.capabilities),
            "clientInfo": {"name": s.name, "version": s.version or __version__},
        }
        answer = self.request("initialize", params)
        if "error" in answer:
            raise ServerError(f"{self.wire.where()}: the server refused initialize: {dumps(answer['error'])}")
        result = answer.get("result")
        if result is None:
            result = {}
        elif not isinstance(result, dict):  # an InitializeResult is an object: this server cannot be driven
            raise ServerError(
                f"{self.wire.where()}: the server answered initialize with {type(result).__name__} "
                f"{dumps(result)[:200]}, not an object (InitializeResult)",
                hint="the server's initialize handler returns the wrong value; fix the server",
            )
        self.protocol = result.get("protocolVersion") if isinstance(result.get("protocolVersion"), str) else None
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else None
        self.wire.notify("notifications/initialized")

    def _list_all(self, method: str, key: str) -> None:
        cursor: Any = None
        for _ in range(MAX_PAGES):
            answer = self.request(method, {"cursor": cursor} if cursor is not None else None)
            result = answer.get("result")
            cursor = result.get("nextCursor") if isinstance(result, dict) else None
            if not cursor:
                return
        raise ServerError(f"{self.wire.where()}: {method} still returned a nextCursor after {MAX_PAGES} pages")

    def _listen(self, step: Step) -> None:
        if self.wire.modern:
            self._listen_modern(step)
            return
        budget = step.duration or (None if step.count else DEFAULT_LISTEN_SECONDS)
        until = self.wire.clock() + budget if budget is not None else None
        seen = 0
        while step.count is None or seen < step.count:
            event = self.wire.receive(until=until)
            if event is None:
                return
            if event["kind"] == "notification":
                seen += 1

    def _listen_modern(self, step: Step) -> None:
        """`subscriptions/listen` until `count` notifications (the acknowledgement not counted) or
        `duration`, then `notifications/cancelled` ends the stream (stdio has no other way)."""
        budget = step.duration or (None if step.count else DEFAULT_LISTEN_SECONDS)
        until = self.wire.clock() + budget if budget is not None else None
        msg_id = self.wire.new_id()
        params = self.wire.stamped({"notifications": dict(LISTEN_FILTER)})
        self.wire.send({"jsonrpc": "2.0", "id": msg_id, "method": "subscriptions/listen", "params": params})
        seen = 0
        ended = False
        while step.count is None or seen < step.count:
            event = self.wire.receive(until=until)
            if event is None:
                break
            if event["kind"] in ("response", "error") and event.get("id") == msg_id:
                ended = True  # the server closed the subscription itself
                break
            if event["kind"] == "notification" and event.get("method") != "notifications/subscriptions/acknowledged":
                seen += 1
        if not ended:
            self.wire.notify("notifications/cancelled", {"requestId": msg_id, "reason": "mcptape: listen step ended"})

    def run_step(self, number: int, step: Step) -> None:
        self.wire.begin(number, describe_step(step), step.timeout)
        action = step.action
        if action in LIST_METHODS:
            self._list_all(*LIST_METHODS[action])
        elif action == "call":
            arguments = dict(step.arguments or {})
            self._check_arguments(step, arguments)
            if step.task:
                self.tasks.call({"name": step.target, "arguments": arguments})
            else:
                self.request("tools/call", {"name": step.target, "arguments": arguments})
        elif action == "read_resource":
            self.request("resources/read", {"uri": step.target})
        elif action == "get_prompt":
            params: dict[str, Any] = {"name": step.target}
            if step.arguments is not None:
                params["arguments"] = step.arguments
            self.request("prompts/get", params)
        elif action == "complete":
            self.request("completion/complete", step.params or {})
        elif action == "set_log_level" and self.wire.modern:
            self.wire.log_level = step.target  # 2026-07-28: a per-request `_meta` key, nothing to send
        elif action == "set_log_level":
            self.request("logging/setLevel", {"level": step.target})
        elif action == "ping":
            self.request("ping")
        elif action == "request":
            self.request(step.target or "", step.params)
        elif action == "notify":
            self.wire.notify(step.target or "", step.params)
        elif action == "listen":
            self._listen(step)
        else:  # pragma: no cover - config.Step's Literal forbids it
            raise ConfigError(f"session {self.session}: step {number}: unknown action {action!r}")

    def run(self, steps: Sequence[Step]) -> None:
        self.handshake()
        for number, step in enumerate(steps, start=1):
            began = time.monotonic()
            self.run_step(number, step)
            self.step_s[number] = time.monotonic() - began
            for event in self.after_step(number) if self.after_step is not None else []:
                self.wire.record(event)
        self.wire.step = None


def record_session(
    transport: Transport,
    steps: Sequence[Step],
    settings: ClientSettings,
    *,
    session: str,
    protocol: str | None = None,
    step_timeout: float = 30.0,
    session_timeout: float = 120.0,
    golden_tools: Mapping[str, Any] | None = None,
    after_step: Callable[[int], list[Event]] | None = None,
) -> Recording:
    """Run a whole session and shut the server down; errors are returned with the partial events.

    ConfigError (arguments the schema rejects, no golden) is returned too: the server was already
    started, and the caller decides the exit code from the error's class.
    """
    started = time.monotonic()
    client = ScriptedClient(
        transport,
        settings,
        session=session,
        protocol=protocol,
        step_timeout=step_timeout,
        session_timeout=session_timeout,
        golden_tools=golden_tools,
        after_step=after_step,
    )
    error: McptapeError | None = None
    try:
        client.run(steps)
    except McptapeError as e:
        error = e
    returncode = transport.close()
    events = client.wire.events
    times = client.wire.event_times()
    # stderr is its own stream, so its interleaving with stdout is not knowable: it goes last.
    for raw in transport.stderr_lines:
        events.append(stderr_event(raw))
    lines, size = transport.stderr_left_out
    if size:
        events.append(note_event(STDERR_CUT_NOTE, f"{size} more bytes of stderr ({lines} lines) left out: "
                                                  f"a tape keeps the first {STDERR_KEPT_BYTES} bytes (never compared)"))
    if error is not None:
        if isinstance(error, ServerError) and transport.spawned:
            error = _with_stderr(error, transport.stderr_tail())
        events.append(note_event("error", str(error.message)))
    # How long a server takes to exit after its stdin closes is timing, not behaviour (mcp-server-git
    # sometimes needs the SIGTERM step under load), so a clean run records the exit only when the
    # server reported a failure status itself; a failed run always records it.
    if error is not None or (returncode is not None and returncode > 0):
        events.append(exit_event(returncode))
    return Recording(
        events=events,
        protocol=client.protocol,
        server_info=client.server_info,
        negotiation=client.negotiation,
        error=error,
        returncode=returncode,
        schema_breaks=client.schema_breaks,
        duration_s=time.monotonic() - started,
        failed_step=client.wire.step if error is not None else None,
        times=times + [None] * (len(events) - len(times)),
        step_s=dict(client.step_s),
    )


def _is_probe(event: Event) -> bool:
    """The discover probe, its answer, or an error with id null that refused it (taken out under auto)."""
    if event.get("id") == DISCOVER_ID and event.get("method") == "server/discover":
        return True
    return event.get("kind") == "error" and event.get("dir") == S2C and event.get("id") is None


def _with_stderr(error: McptapeError, tail: str) -> McptapeError:
    """The same error with the server's last stderr lines appended (how a user sees why it died)."""
    if not tail:
        text = error.message + " (the server wrote nothing to stderr)"
    else:
        indented = "\n".join("    " + line for line in tail.splitlines())
        text = f"{error.message}\n  server stderr (last lines):\n{indented}"
    # A copy of its fields, not type(error)(...): a subclass keeps its own (RequestRefused's status
    # and id), whose __init__ takes more than a message (so copy.copy cannot rebuild it either).
    out = type(error).__new__(type(error))
    out.__dict__.update(vars(error))
    out.message, out.args = text, (text,)
    return out

