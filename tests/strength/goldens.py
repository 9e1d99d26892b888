"""A golden tape built in memory for the strength tests, and configs around it (no server starts).

One legacy session of a small server: a tools/list of three tools (`echo` and `list_items`
called, `stats` listed only), a log notification during `echo`, an error answer, a resource read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcptape.ci.session import RunContext
from mcptape.config.load import LoadedConfig, load_config
from mcptape.tape.format import Tape
from mcptape.volatility.normalize import canonical_order

SESSION = "demo"
ECHO_OUT = {"type": "object", "properties": {"text": {"type": "string"}, "count": {"type": "integer"}},
            "required": ["text", "count"]}
TOOLS = [
    {"name": "echo", "description": "Echo the text back, with its count of words.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
     "outputSchema": ECHO_OUT, "annotations": {"readOnlyHint": True}},
    {"name": "list_items", "description": "The items in the store.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "stats", "description": "Numbers about the store.",
     "inputSchema": {"type": "object", "properties": {"verbose": {"type": "boolean"}}}},
]
CONFIG = """\
version: 1
servers:
  s:
    command: [python3, -c, "pass"]
sessions:
  - name: demo
    server: s
    steps: [list_tools]
"""


def _exchange(events: list[dict[str, Any]], ident: int, method: str, params: Any, result: Any = None,
              error: Any = None, step: int | None = None, during: list[dict[str, Any]] | None = None) -> None:
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        request["params"] = params
    extra = {"step": step} if step is not None else {}
    events.append({"kind": "request", "dir": "c2s", "id": ident, "method": method, "msg": request, **extra})
    events.extend(during or [])
    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": ident}
    answer["error" if error is not None else "result"] = error if error is not None else result
    event: dict[str, Any] = {"kind": "error" if error is not None else "response", "dir": "s2c", "id": ident,
                             "method": method}
    if params is not None:
        event["params"] = params
    events.append({**event, "msg": answer, **extra})


def golden_events(tools: list[dict[str, Any]] | None = None, description: str | None = None) -> list[dict[str, Any]]:
    """The session's events, in canonical order; `description` replaces echo's (a placeholder, a listed text)."""
    tools = [dict(t) for t in (tools or TOOLS)]
    if description is not None:
        tools[0]["description"] = description
    events: list[dict[str, Any]] = []
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcptape", "version": "0"}}
    _exchange(events, 1, "initialize", hello, {"protocolVersion": "2025-06-18", "serverInfo": {"name": "demo", "version": "1"},
                                               "capabilities": {"tools": {}, "resources": {}, "logging": {}}})
    events.append({"kind": "notification", "dir": "c2s", "method": "notifications/initialized",
                   "msg": {"jsonrpc": "2.0", "method": "notifications/initialized"}})
    _exchange(events, 2, "tools/list", None, {"tools": tools}, step=1)
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "echoing"}}
    _exchange(events, 3, "tools/call", {"name": "echo", "arguments": {"text": "hello world"}},
              {"content": [{"type": "text", "text": "hello world: 2 words"}],
               "structuredContent": {"text": "hello world", "count": 2}}, step=2,
              during=[{"kind": "notification", "dir": "s2c", "method": "notifications/message", "msg": log}])
    items = {"items": ["alpha", "beta", "gamma"]}
    _exchange(events, 4, "tools/call", {"name": "list_items", "arguments": {}},
              {"content": [{"type": "text", "text": json.dumps(items)}], "structuredContent": items}, step=3)
    _exchange(events, 5, "tools/call", {"name": "echo", "arguments": {}}, error={"code": -32602, "message": "text is required"},
              step=4)
    _exchange(events, 6, "resources/list", None, {"resources": [{"uri": "mem://notes", "name": "notes"}]}, step=5)
    _exchange(events, 7, "resources/read", {"uri": "mem://notes"},
              {"contents": [{"uri": "mem://notes", "mimeType": "text/plain", "text": "first note\nsecond note"}]}, step=6)
    return canonical_order(events)  # as ci writes a golden: the log moved after the last step


def golden_tape(events: list[dict[str, Any]] | None = None) -> Tape:
    events = golden_events() if events is None else events
    return Tape(header={"mcptape": "tape", "format": 2, "name": SESSION, "protocol": "2025-06-18"}, events=events,
                footer={"mcptape": "end"}, event_lines=[i + 2 for i in range(len(events))])


def configured(tmp_path: Path, extra: str = "") -> LoadedConfig:
    """mcptape.yml of the demo session with `extra` YAML appended (the rules under test)."""
    path = tmp_path / "mcptape.yml"
    path.write_text(CONFIG + extra, encoding="utf-8")
    return load_config(path)


def context(loaded: LoadedConfig) -> RunContext:
    return RunContext(loaded=loaded, update=False, out_dir=None, golden_dir=loaded.golden_dir)
