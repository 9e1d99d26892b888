"""Test helpers: record a scripted legacy MCP session against a real server, or hand-build a tape.

Runs the server over StdioTransport, sends initialize (2025-06-18), notifications/initialized
and the given requests with ids 1, 2, 3, ... one at a time, and builds the events with the
shared EventBuilder — the same event shapes rec and ci write — so diff tests do not depend on
the recorder or the ci client. Not a product feature: a scripted client lives in live/client.py.
TapeBuilder writes the same events from messages given by hand, for pure diff/report tests.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcptape.errors import ServerError
from mcptape.jsonrpc import dumps
from mcptape.tape.events import C2S, S2C, EventBuilder, exit_event, note_event
from mcptape.tape.format import Tape, make_header, tape_bytes

PROTOCOL = "2025-06-18"
Request = tuple[str, dict[str, Any] | None]


def tool(name: str, **arguments: Any) -> Request:
    return "tools/call", {"name": name, "arguments": arguments}


def record(
    command: Sequence[str],
    requests: Sequence[Request],
    *,
    name: str = "session",
    timeout: float = 10.0,
    parallel: bool = False,
) -> Tape:
    """Run the session and return its tape (with header and footer, not yet on disk).

    With `parallel`, all requests after the handshake are sent before any answer is read,
    as a client running tool calls concurrently does.
    """
    from mcptape.transports.stdio import StdioTransport, minimal_env

    builder = EventBuilder()
    events: list[dict[str, Any]] = []
    transport = StdioTransport(command, env=minimal_env())
    script: list[tuple[str, dict[str, Any] | None, bool]] = [
        ("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                        "clientInfo": {"name": "mcptape-tests", "version": "0"}}, False),
        ("notifications/initialized", None, True),
        *[(method, params, False) for method, params in requests],
    ]
    next_id = 0
    waiting: list[int] = []
    try:
        for method, params, is_notification in script:
            msg: dict[str, Any] = {"jsonrpc": "2.0"}
            if not is_notification:
                msg["id"] = next_id
                next_id += 1
            msg["method"] = method
            if params is not None:
                msg["params"] = params
            line = dumps(msg)
            try:
                transport.send(line.encode("utf-8"))
            except ServerError:
                break
            events.append(builder.message(C2S, msg, line))
            if is_notification:
                continue
            if parallel and method != "initialize":
                waiting.append(msg["id"])
                continue
            if not _read_until_answer(transport, builder, events, msg["id"], timeout):
                break
        for msg_id in waiting:
            if not _read_until_answer(transport, builder, events, msg_id, timeout):
                break
    finally:
        code = transport.close()
        events.append(exit_event(code))
    for direction, key, method in builder.open_requests():
        if direction == C2S:
            events.append(note_event("unanswered", {"id": json.loads(key), "method": method}))
    header = make_header(name, protocol=PROTOCOL, command=[Path(str(c)).name for c in command])
    return Tape(header=header, events=events, footer={"mcptape": "end", "events": len(events)})


def _read_until_answer(transport: Any, builder: EventBuilder, events: list[dict[str, Any]], msg_id: int,
                       timeout: float) -> bool:
    """Record server lines until the answer to msg_id; False at EOF (the server died)."""
    if any(e.get("kind") in ("response", "error") and e.get("id") == msg_id and e.get("dir") == S2C for e in events):
        return True  # already arrived while waiting for an earlier one
    while True:
        raw = transport.receive(timeout)
        if raw is None:
            return False
        event = builder.line(S2C, raw)
        events.append(event)
        if event.get("kind") in ("response", "error") and event.get("id") == msg_id:
            return True


def write(tape: Tape, path: Path) -> Path:
    """The tape's bytes on disk, as a golden tape would be written."""
    path.write_bytes(tape_bytes(tape.header, tape.events))
    return path


# --- hand-built tapes, for pure tests ---------------------------------------------------------

INIT_RESULT: dict[str, Any] = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {"listChanged": True}, "logging": {}},
    "serverInfo": {"name": "calc", "version": "1.0.0"},
}
ADD: dict[str, Any] = {"name": "add", "description": "Add.", "inputSchema": {
    "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}


class TapeBuilder:
    """Builds a tape the way rec does: wire messages through EventBuilder."""

    def __init__(self, init_result: dict[str, Any] | None = None, client: str = "tests", asked: str = "2025-06-18") -> None:
        self.b = EventBuilder()
        self.events: list[dict[str, Any]] = []
        self.next_id = 0
        self.call("initialize", {"protocolVersion": asked, "capabilities": {},
                                 "clientInfo": {"name": client, "version": "1"}}, init_result or INIT_RESULT)
        self.send(C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, direction: str, msg: dict[str, Any]) -> None:
        self.events.append(self.b.message(direction, msg, dumps(msg)))

    def request(self, method: str, params: Any = None) -> int:
        msg_id = self.next_id
        self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(C2S, msg)
        return msg_id

    def answer(self, msg_id: int, result: Any = None, error: dict[str, Any] | None = None) -> None:
        if error is not None:
            self.send(S2C, {"jsonrpc": "2.0", "id": msg_id, "error": error})
        else:
            self.send(S2C, {"jsonrpc": "2.0", "id": msg_id, "result": result})

    def notify(self, method: str, params: Any) -> None:
        self.send(S2C, {"jsonrpc": "2.0", "method": method, "params": params})

    def call(self, method: str, params: Any, result: Any = None, error: dict[str, Any] | None = None,
             notes: Sequence[tuple[str, Any]] = ()) -> TapeBuilder:
        msg_id = self.request(method, params)
        for n_method, n_params in notes:
            self.notify(n_method, n_params)
        self.answer(msg_id, result, error)
        return self

    def tool(self, name: str, args: dict[str, Any], text: str | None = None, **kw: Any) -> TapeBuilder:
        result = kw.pop("result", None)
        if result is None and "error" not in kw:
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        return self.call("tools/call", {"name": name, "arguments": args}, result, **kw)

    def tape(self, exit_code: int | None = 0, complete: bool = True) -> Tape:
        """The tape, ending with the server's exit (returncode as Popen gives it: -15 is SIGTERM)."""
        events = list(self.events)
        events.append(exit_event(exit_code))
        return Tape(make_header("t", protocol="2025-06-18"), events,
                    {"mcptape": "end", "events": len(events)} if complete else None)
