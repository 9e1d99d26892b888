"""The scripted MCP client: runs one session's steps against a live server and records every event.

Owns the client side of the protocol as mcptape.yml scripts it: the handshake and the choice of
protocol revision (see "Protocol revisions" below), deterministic request ids (1, 2, 3, ...),
the step kinds of config.Step, answering server-initiated requests as the config says
(roots, sampling, elicitation — one answer, or a scripted conversation whose answer for each
request config/answers.py chooses —, ping; anything else -32601), per-step and per-session
timeouts, checking `call` arguments against the tool's inputSchema, and shutting the server
down. Every event goes through one EventBuilder and carries `"step": n` (1-based; absent on
handshake events). Bytes and framing are the transport's (transports/); comparing is diff/'s;
volatile values are volatility/normalize.py's; how sessions are chosen and judged is ci.py's.

Over 800 lines, on purpose: every step kind here (calls, input-required rounds, the two eras'
tasks, server requests answered mid-call) drives the one receive loop, id counter, deadline and
event log of a ScriptedClient, and interleaves with the others on the wire (a task's poll meets
a sampling request, an input round a log). Split by step kind, each part would reach into that
shared state; kept together, the state has one owner.

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
  recorded then still compare clean); `Recording.negotiation` says what happened, and ci.py
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

from mcptape import __version__
from mcptape.config.answers import NoAnswer, Script
from mcptape.config.models import ClientSettings, Step
from mcptape.errors import ConfigError, McptapeError, RequestRefused, ServerError, ServerTimeout
from mcptape.jsonrpc import dumps, id_key
from mcptape.mcp import (
    LEGACY_DEFAULT_PROTOCOL,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL,
    META_SERVER_INFO,
    MODERN_PROTOCOL,
    is_modern,
)
from mcptape.tape.events import (
    C2S,
    GARBLED_NOTE,
    S2C,
    STDERR_CUT_NOTE,
    EventBuilder,
    exit_event,
    is_message,
    note_event,
    stderr_event,
)
from mcptape.tape.format import Event
from mcptape.transports.base import Transport
from mcptape.transports.stdio import STDERR_KEPT_BYTES
from mcptape.verdict.model import CallRef, Finding

# list step -> (method, key of the list in the result); every page is requested and recorded.
LIST_METHODS: dict[str, tuple[str, str]] = {
    "list_tools": ("tools/list", "tools"),
    "list_resources": ("resources/list", "resources"),
    "list_resource_templates": ("resources/templates/list", "resourceTemplates"),
    "list_prompts": ("prompts/list", "prompts"),
}
MAX_PAGES = 1000  # a server that hands out cursors forever must not hang the gate
DEFAULT_LISTEN_SECONDS = 1.0
SAMPLING_DECLINED = -1  # the spec's "user rejected sampling request"
TASK_ENDS = frozenset({"completed", "failed", "cancelled"})
TASK_TTL_MS = 60000  # how long the server keeps a task the step made: longer than any step
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"  # 2026-07-28's tasks (SEP-2663)
URL_ELICITATION_REQUIRED = -32042  # 2025-11-25: visit these URLs (data.elicitations), then ask again

DISCOVER_ID = 0  # the probe comes before the session's 1, 2, 3: a legacy fallback keeps its old ids
MAX_INPUT_ROUNDS = 10  # a server that keeps asking must not hang the gate
STATE_ONLY_WAIT = 0.05  # an input_required result with only requestState: retry after this pause
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
    """Drives one session. Single-threaded: it reads the server's lines while it waits for answers."""

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
        self.transport = transport
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
        self.session_timeout = session_timeout
        # None: no golden tape, so a call the live schema rejects is the config's fault.
        self.golden_tools = golden_tools
        self.clock = clock
        self.events: list[Event] = []
        self._timed: list[tuple[Event, float]] = []  # message events and when they crossed the wire
        self.builder = EventBuilder()
        self.protocol: str | None = None
        self.server_info: dict[str, Any] | None = None
        self.step_s: dict[int, float] = {}
        self.negotiation: str | None = None
        self.modern = False  # the session speaks 2026-07-28 (set by the handshake)
        self._log_level: str | None = None
        self.schema_breaks: list[SchemaBreak] = []
        self.live_tools: dict[str, Any] | None = None
        self._tools_pages: dict[str, Any] = {}
        self._next_id = 1
        self._garbled: set[str] = set()  # id keys of our requests answered with non-UTF-8 lines
        self._step: int | None = None
        self._step_label = "initialize"
        self._step_deadline = 0.0
        self._step_budget = step_timeout
        self._session_deadline = clock() + session_timeout
        # The session's scripted answers, in use order (config/answers.py)
        self._polls = 0  # tasks/get polls sent (their ids: mcptape-poll-N)
        self._scripts = {method: Script(method, given) for method, given in
                         (("sampling/createMessage", settings.sampling), ("elicitation/create", settings.elicitation))}

    # -- recording ---------------------------------------------------------------------------

    def _record(self, event: Event, at: float | None = None) -> Event:
        """Keep `event`; a message is timed `at` (a request: before it was sent) or now (on arrival)."""
        if self._step is not None:
            event["step"] = self._step
        self.events.append(event)
        if is_message(event):
            self._timed.append((event, time.monotonic() if at is None else at))
        return event

    def event_times(self) -> list[float | None]:
        """Per event of `events` (as filtered since), when it crossed the wire; None for the rest."""
        clock = {id(event): t for event, t in self._timed}  # _timed holds the events: ids stay theirs
        return [clock.get(id(event)) for event in self.events]

    def _send(self, msg: dict[str, Any]) -> None:
        text = dumps(msg)
        # Timed before the write: the server may read it and start on it before send() returns,
        # and a latency must never read shorter than what the server took.
        at = time.monotonic()
        self.transport.send(text.encode("utf-8"))
        self._record(self.builder.message(C2S, msg, text), at)

    def _new_id(self) -> int:
        msg_id = self._next_id
        self._next_id += 1
        return msg_id

    def _where(self) -> str:
        if self._step is None:
            return f"session {self.session}: {self._step_label}"
        return f"session {self.session}: step {self._step} ({self._step_label})"

    # -- receiving ---------------------------------------------------------------------------

    def _remaining(self) -> tuple[float, str]:
        now = self.clock()
        step_left = self._step_deadline - now
        session_left = self._session_deadline - now
        if session_left < step_left:
            return session_left, f"the session timeout ({self.session_timeout:g}s)"
        return step_left, f"the step timeout ({self._step_budget:g}s)"

    def _receive(self, *, until: float | None = None) -> dict[str, Any] | None:
        """Read and record one server line; answers server requests. None when `until` passes."""
        left, which = self._remaining()
        if until is not None and until - self.clock() < left:
            left = until - self.clock()
            if left <= 0:
                return None
            which = ""
        if left <= 0:
            raise ServerTimeout(f"{self._where()}: no answer from the server within {which}")
        try:
            line = self.transport.receive(left)
        except ServerTimeout:
            if not which:
                return None
            raise ServerTimeout(
                f"{self._where()}: no answer from the server within {which}",
                hint="raise `timeout:` on the step or `step_timeout:`/`timeout:` on the session if it is just slow",
            ) from None
        if line is None:
            if self._step is None:
                raise ServerError(
                    f"{self._where()}: the server exited before answering {self._step_label} (failed to start)"
                )
            raise ServerError(f"{self._where()}: the server closed its output (exited) before answering")
        event = self._record(self.builder.line(S2C, line))
        for note in self.builder.take_notes():  # a deep message's cut, an answer that is not UTF-8
            self._record(note)
            if note["what"] == GARBLED_NOTE:
                self._garbled.add(id_key(note["detail"]["id"]))
        msg = event.get("msg")
        if event["kind"] == "request" and isinstance(msg, dict):
            self._answer_server_request(msg)
        return event

    def _await(self, msg_id: int, *, null_id_error: bool = False) -> dict[str, Any]:
        """Wait for the answer to our request `msg_id`, recording everything that arrives meanwhile.

        An answer that is not UTF-8 (recorded as garbage, with a note) ends the wait at once: it is
        the server's answer, compared like any other, and no proper one will follow. The message
        returned for it holds neither result nor error; the handshake cannot go on from it.
        With `null_id_error`, an error with id null (a server that could not read our request's
        id, or would not: "Server not initialized") answers it too: only the probe asks for that.
        """
        while True:
            event = self._receive()
            assert event is not None
            answers = event.get("id") == msg_id or (null_id_error and event.get("id") is None)
            if event["kind"] in ("response", "error") and answers:
                msg: dict[str, Any] = event["msg"]
                return msg
            if event["kind"] == "garbage" and id_key(msg_id) in self._garbled:
                self._garbled.discard(id_key(msg_id))
                if self._step is None:
                    raise ServerError(f"{self._where()}: the server's answer is not UTF-8 (recorded as garbage)")
                return {"jsonrpc": "2.0", "id": msg_id}

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request with the next id and return the server's answer (result or error message).

        On 2026-07-28 the answer is the final one: input-required rounds happen in between.
        """
        answer = self._request_once(method, params)
        if self.modern:
            answer = self._input_rounds(method, params, answer)
        answer = self._url_elicitations(method, params, answer)
        if method == "tools/list":
            self._note_tools(params, answer)
        return answer

    def _request_once(
        self, method: str, params: dict[str, Any] | None, msg_id: int | str | None = None, *, probe: bool = False
    ) -> dict[str, Any]:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._new_id() if msg_id is None else msg_id, "method": method}
        if self.modern:
            params = self._stamped(params)
        if params is not None:
            msg["params"] = params
        self._send(msg)
        return self._await(msg["id"], null_id_error=probe)

    def request_meta(self) -> dict[str, Any]:
        """The 2026-07-28 `_meta` of every request: version, this request's capabilities, who we are."""
        s = self.settings
        meta: dict[str, Any] = {
            META_PROTOCOL: MODERN_PROTOCOL,
            META_CAPABILITIES: dict(s.capabilities),
            META_CLIENT_INFO: {"name": s.name, "version": s.version or __version__},
        }
        if self._log_level is not None:
            meta[META_LOG_LEVEL] = self._log_level
        return meta

    def _stamped(self, params: dict[str, Any] | None) -> dict[str, Any]:
        # `_meta` first, so a tape reads envelope then content; keys the step gave win.
        given = (params or {}).get("_meta")
        meta = {**self.request_meta(), **(given if isinstance(given, dict) else {})}
        return {"_meta": meta, **{k: v for k, v in (params or {}).items() if k != "_meta"}}

    # -- input-required round trips (2026-07-28) ------------------------------------------------

    def _input_rounds(self, method: str, params: dict[str, Any] | None, answer: dict[str, Any]) -> dict[str, Any]:
        """Answer `input_required` results from the config and retry until the result is complete."""
        for _ in range(MAX_INPUT_ROUNDS):
            result = answer.get("result")
            if not (isinstance(result, dict) and result.get("resultType") == "input_required"):
                return answer
            asked = result.get("inputRequests")
            responses: dict[str, Any] = {}
            for key, req in (asked.items() if isinstance(asked, dict) else ()):
                reply = self._input_response(req)
                if reply is None:
                    what = req.get("method") if isinstance(req, dict) else req
                    self._record(note_event(
                        "input_required",
                        f"{method}: not answered: the server asks {what}, which mcptape.yml gives no answer for "
                        "(set `client.sampling`)",
                    ))
                    return answer
                responses[key] = reply
            retry = {k: v for k, v in (params or {}).items() if k not in ("inputResponses", "requestState")}
            if responses:
                retry["inputResponses"] = responses
            elif "requestState" in result:
                time.sleep(STATE_ONLY_WAIT)  # the server is working; asking again at once would spin
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
            answer = self._request_once(method, retry)
        raise ServerError(
            f"{self._where()}: the server still answered input_required after {MAX_INPUT_ROUNDS} rounds",
            hint="the server never completes this request with the answers mcptape.yml gives (client.elicitation, "
            "client.sampling, client.roots)",
        )

    def _url_elicitations(self, method: str, params: dict[str, Any] | None, answer: dict[str, Any]) -> dict[str, Any]:
        """-32042 URLElicitationRequired (2025-11-25): the server needs the user to visit URLs
        first. Each listed elicitation is answered from `client.elicitation` as an
        `elicitation/create` of mode url would be; when every one is accepted (the user went
        there), the request is sent again, under the same step; else the error is the answer."""
        for _ in range(MAX_INPUT_ROUNDS):
            error = answer.get("error")
            data = error.get("data") if isinstance(error, dict) and error.get("code") == URL_ELICITATION_REQUIRED else None
            asked = data.get("elicitations") if isinstance(data, dict) else None
            if not isinstance(asked, list) or not asked:
                return answer
            for elicitation in asked:
                chosen = self._scripted("elicitation/create", elicitation)
                if not (isinstance(chosen, dict) and chosen.get("action") == "accept"):
                    self._record(note_event("url_elicitation", f"{method}: the server asks the user to visit "
                                            f"{len(asked)} URL(s); mcptape.yml's client.elicitation does not accept "
                                            "them, so the request is not sent again"))
                    return answer
            answer = self._request_once(method, params)
        return answer

    # -- tasks (2025-11-25) --------------------------------------------------------------------

    def _call_as_task(self, params: dict[str, Any]) -> None:
        """A `call` with `task: true`: tools/call with `params.task`; a CreateTaskResult is polled
        with tasks/get (at the server's pollInterval, within the step's timeout) until the task
        ends or asks for input, then its result is fetched with tasks/result, all under this step.

        The tape holds the status path, not the polls: a poll whose status is the one last
        recorded leaves the events again (how many polls a task takes is timing, not
        behaviour). Polls use their own ids, `mcptape-poll-N`, so the session's ids do not
        depend on how many there were; volatility/normalize.py numbers the recorded ones 1, 2, ..."""
        answer = self.request("tools/call", {**params, "task": {"ttl": TASK_TTL_MS}})
        result = answer.get("result")
        task = result.get("task") if isinstance(result, dict) else None
        if not (isinstance(task, dict) and isinstance(task.get("taskId"), str)):
            return  # the server ran it as a plain call (or refused): that answer is the step's
        task_id, status = task["taskId"], task.get("status")
        interval = task.get("pollInterval")
        while status not in TASK_ENDS and status != "input_required":
            self._wait_poll(interval)
            got = self._poll_task({"taskId": task_id}, (status,))
            if got is None:
                return  # the error (or an answer without a status) is recorded: the step ends on it
            status = got.get("status")
            interval = got.get("pollInterval", interval)
        # input_required: the task's requests to us come on the tasks/result stream (answered as they
        # arrive, like any server request), which then waits for the task's end and its result.
        if status in ("completed", "failed", "input_required"):
            self.request("tasks/result", {"taskId": task_id})

    def _wait_poll(self, interval_ms: Any) -> None:
        """Wait the server's poll interval (0.5 s when it gives none, never under 50 ms), ending
        a second before the step's deadline so the last poll still has time to be answered."""
        pause = max(float(interval_ms) / 1000 if isinstance(interval_ms, int | float) else 0.5, 0.05)
        time.sleep(min(pause, max(self._step_deadline - self.clock() - 1.0, 0.05)))

    def _poll_task(self, params: dict[str, Any], last: tuple[Any, ...]) -> dict[str, Any] | None:
        """One tasks/get poll (id `mcptape-poll-N`); its result, or None if it failed (recorded).
        A poll whose status (and open input requests) is `last`, the one recorded before, leaves
        the events again: how many polls a task takes is timing, not behaviour."""
        self._polls += 1
        poll_id = f"mcptape-poll-{self._polls}"
        start = len(self.events)
        polled = self._request_once("tasks/get", params, poll_id)
        got = polled.get("result")
        if "error" in polled or not isinstance(got, dict) or got.get("status") is None:
            return None
        if _task_state(got)[: len(last)] == last:
            self.events[start:] = [e for e in self.events[start:] if e.get("id") != poll_id]
        return got

    # -- the tasks extension (2026-07-28, io.modelcontextprotocol/tasks) -------------------------

    def _call_as_extension_task(self, params: dict[str, Any]) -> None:
        """A `call` with `task: true` on 2026-07-28: the tools/call declares the tasks extension in
        its per-request capabilities (as the SDK's clients do: `clientCapabilities.extensions`), and
        so do the tasks/* requests after it. A `resultType: "task"` answer is polled with tasks/get
        at its `pollIntervalMs` within the step's timeout; an `input_required` status's
        `inputRequests` are answered from the session's canned answers with one tasks/update per
        new set of keys (a key is answered once: the server may show it again until the update
        lands); the final result comes inlined in the last tasks/get. The tape keeps the status
        path as the legacy tasks do (`_poll_task`). A server that answers with a plain result ran
        the call inline: that answer is the step's. An input request with no canned answer ends
        the step with a note and tasks/cancel (the task would wait for it until its TTL)."""
        meta = {"_meta": {META_CAPABILITIES: self._with_tasks_extension()}}
        answer = self.request("tools/call", {**meta, **params})
        result = answer.get("result")
        if not (isinstance(result, dict) and result.get("resultType") == "task" and isinstance(result.get("taskId"), str)):
            return
        task_id = result["taskId"]
        got: dict[str, Any] = result
        answered: set[str] = set()
        while got.get("status") not in TASK_ENDS:
            asked = got.get("inputRequests") if got.get("status") == "input_required" else None
            fresh = {k: v for k, v in asked.items() if k not in answered} if isinstance(asked, dict) else {}
            if fresh:
                responses = {key: self._input_response(req) for key, req in fresh.items()}
                missing = [k for k, reply in responses.items() if reply is None]
                if missing:
                    what = fresh[missing[0]].get("method") if isinstance(fresh[missing[0]], dict) else fresh[missing[0]]
                    self._record(note_event("input_required", f"tools/call {params.get('name')}: task input "
                                            f"{missing[0]!r} not answered: the server asks {what}, which mcptape.yml "
                                            "gives no answer for; the task is cancelled"))
                    self.request("tasks/cancel", {**meta, "taskId": task_id})
                    return
                ack = self.request("tasks/update", {**meta, "taskId": task_id, "inputResponses": responses})
                if "error" in ack:
                    return  # refused (recorded): the task would wait for an answer that never lands
                answered |= set(fresh)
            else:
                self._wait_poll(got.get("pollIntervalMs"))
            polled = self._poll_task({**meta, "taskId": task_id}, _task_state(got))
            if polled is None:
                return
            got = polled

    def _with_tasks_extension(self) -> dict[str, Any]:
        """This session's client capabilities with the tasks extension declared."""
        caps = dict(self.settings.capabilities)
        extensions = caps.get("extensions")
        caps["extensions"] = {**(extensions if isinstance(extensions, dict) else {}), TASKS_EXTENSION: {}}
        return caps

    def _input_response(self, req: Any) -> dict[str, Any] | None:
        """The canned answer to one embedded request, as for the legacy server-initiated request; None: none."""
        method = req.get("method") if isinstance(req, dict) else None
        s = self.settings
        if method == "roots/list":
            return {"roots": list(s.roots)}
        if method in self._scripts:
            chosen = self._scripted(str(method), req.get("params"))
            if isinstance(chosen, dict):
                return chosen
            if method == "elicitation/create":
                return {"action": "decline"}
        return None

    def _scripted(self, method: str, params: Any) -> Any:
        """The scripted answer to one server request (config/answers.py); none fitting is the config's error."""
        try:
            return self._scripts[method].answer(params)
        except NoAnswer as e:
            raise ConfigError(f"{self._where()}: {e}",
                              hint=f"add an answer to `client.{method.split('/')[0]}` in mcptape.yml, in order "
                              "or with `when:`/`contains:` that this request holds") from e

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)

    # -- server-initiated requests ---------------------------------------------------------------

    def _answer_server_request(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg.get("id")}
        s = self.settings
        if method == "roots/list":
            reply["result"] = {"roots": list(s.roots)}
        elif method == "ping":
            reply["result"] = {}
        elif method == "sampling/createMessage":
            chosen = self._scripted(method, msg.get("params"))
            if isinstance(chosen, dict):
                reply["result"] = chosen
            else:
                reply["error"] = {
                    "code": SAMPLING_DECLINED,
                    "message": "sampling declined by mcptape (set `client.sampling` in mcptape.yml to answer)",
                }
        elif method == "elicitation/create":
            chosen = self._scripted(method, msg.get("params"))
            reply["result"] = chosen if isinstance(chosen, dict) else {"action": "decline"}
        else:
            reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
        self._send(reply)

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
                f"{self._where()}: arguments {dumps(arguments)} for tool `{name}` are rejected by its "
                f"inputSchema: {live_rule}",
                hint="fix `arguments:` of this step in mcptape.yml to match the tool's inputSchema",
            )
        self.schema_breaks.append(schema_break(self._step, name, arguments, live_rule, golden_tool, tool))

    # -- the session ------------------------------------------------------------------------

    def _begin(self, step: int | None, label: str, timeout: float | None) -> None:
        self._step = step
        self._step_label = label
        self._step_budget = timeout or self.step_timeout
        self._step_deadline = self.clock() + self._step_budget

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
        self._begin(None, "server/discover", self.step_timeout)
        mark = len(self.events)
        try:
            answer = self._request_once(
                "server/discover", {"_meta": self.request_meta()}, msg_id=DISCOVER_ID, probe=True
            )
        except RequestRefused as e:
            # An HTTP refusal of the probe (server-everything: 400 "Server not initialized") is how
            # a legacy HTTP server says no, as -32601 is over stdio: FastMCP's client falls back too.
            if pinned or e.request_id != DISCOVER_ID:
                raise
            self.events = self.events[:mark] + [e for e in self.events[mark:] if not _is_probe(e)]
            return f"HTTP {e.status}"
        result = answer.get("result")
        versions = result.get("supportedVersions") if isinstance(result, dict) else None
        if isinstance(result, dict) and isinstance(versions, list) and MODERN_PROTOCOL in versions:
            self.modern = True
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
                f"{self._where()}: the server refused protocol {MODERN_PROTOCOL}: "
                f"{dumps(answer.get('error') or result)}",
                hint="it may speak only the legacy protocol: set `protocol: auto` (or a legacy version) "
                "on this server in mcptape.yml",
            )
        # Everything else that arrived meanwhile (a notification, a server request) stays.
        self.events = self.events[:mark] + [e for e in self.events[mark:] if not _is_probe(e)]
        return refusal

    def initialize(self) -> None:
        """Legacy handshake: initialize with our capabilities, then notifications/initialized."""
        s = self.settings
        self._begin(None, "initialize", self.step_timeout)
        params = {
            "protocolVersion": self.protocol_requested,
            "capabilities": dict(s.capabilities),
            "clientInfo": {"name": s.name, "version": s.version or __version__},
        }
        answer = self.request("initialize", params)
        if "error" in answer:
            raise ServerError(f"{self._where()}: the server refused initialize: {dumps(answer['error'])}")
        result = answer.get("result")
        if result is None:
            result = {}
        elif not isinstance(result, dict):  # an InitializeResult is an object: this server cannot be driven
            raise ServerError(
                f"{self._where()}: the server answered initialize with {type(result).__name__} "
                f"{dumps(result)[:200]}, not an object (InitializeResult)",
                hint="the server's initialize handler returns the wrong value; fix the server",
            )
        self.protocol = result.get("protocolVersion") if isinstance(result.get("protocolVersion"), str) else None
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else None
        self.notify("notifications/initialized")

    def _list_all(self, method: str, key: str) -> None:
        cursor: Any = None
        for _ in range(MAX_PAGES):
            answer = self.request(method, {"cursor": cursor} if cursor is not None else None)
            result = answer.get("result")
            cursor = result.get("nextCursor") if isinstance(result, dict) else None
            if not cursor:
                return
        raise ServerError(f"{self._where()}: {method} still returned a nextCursor after {MAX_PAGES} pages")

    def _listen(self, step: Step) -> None:
        if self.modern:
            self._listen_modern(step)
            return
        budget = step.duration or (None if step.count else DEFAULT_LISTEN_SECONDS)
        until = self.clock() + budget if budget is not None else None
        seen = 0
        while step.count is None or seen < step.count:
            event = self._receive(until=until)
            if event is None:
                return
            if event["kind"] == "notification":
                seen += 1

    def _listen_modern(self, step: Step) -> None:
        """`subscriptions/listen` until `count` notifications (the acknowledgement not counted) or
        `duration`, then `notifications/cancelled` ends the stream (stdio has no other way)."""
        budget = step.duration or (None if step.count else DEFAULT_LISTEN_SECONDS)
        until = self.clock() + budget if budget is not None else None
        msg_id = self._new_id()
        params = self._stamped({"notifications": dict(LISTEN_FILTER)})
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": "subscriptions/listen", "params": params})
        seen = 0
        ended = False
        while step.count is None or seen < step.count:
            event = self._receive(until=until)
            if event is None:
                break
            if event["kind"] in ("response", "error") and event.get("id") == msg_id:
                ended = True  # the server closed the subscription itself
                break
            if event["kind"] == "notification" and event.get("method") != "notifications/subscriptions/acknowledged":
                seen += 1
        if not ended:
            self.notify("notifications/cancelled", {"requestId": msg_id, "reason": "mcptape: listen step ended"})

    def run_step(self, number: int, step: Step) -> None:
        self._begin(number, describe_step(step), step.timeout)
        action = step.action
        if action in LIST_METHODS:
            self._list_all(*LIST_METHODS[action])
        elif action == "call":
            arguments = dict(step.arguments or {})
            self._check_arguments(step, arguments)
            if step.task and self.modern:
                self._call_as_extension_task({"name": step.target, "arguments": arguments})
            elif step.task:
                self._call_as_task({"name": step.target, "arguments": arguments})
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
        elif action == "set_log_level" and self.modern:
            self._log_level = step.target  # 2026-07-28: a per-request `_meta` key, nothing to send
        elif action == "set_log_level":
            self.request("logging/setLevel", {"level": step.target})
        elif action == "ping":
            self.request("ping")
        elif action == "request":
            self.request(step.target or "", step.params)
        elif action == "notify":
            self.notify(step.target or "", step.params)
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
                self._record(event)
        self._step = None


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
    events = client.events
    times = client.event_times()
    # stderr is its own stream, so its interleaving with stdout is not knowable: it goes last.
    for raw in getattr(transport, "stderr_lines", None) or []:
        events.append(stderr_event(raw))
    lines, size = getattr(transport, "stderr_left_out", None) or (0, 0)
    if size:
        events.append(note_event(STDERR_CUT_NOTE, f"{size} more bytes of stderr ({lines} lines) left out: "
                                                  f"a tape keeps the first {STDERR_KEPT_BYTES} bytes (never compared)"))
    if error is not None:
        if isinstance(error, ServerError) and getattr(transport, "spawned", True):
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
        failed_step=client._step if error is not None else None,
        times=times + [None] * (len(events) - len(times)),
        step_s=dict(client.step_s),
    )


def _task_state(result: dict[str, Any]) -> tuple[Any, ...]:
    """What a poll must change to be recorded: the task's status, then the keys it asks input for."""
    asked = result.get("inputRequests")
    return result.get("status"), sorted(asked) if isinstance(asked, dict) else None


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

