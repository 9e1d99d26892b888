"""play: a 2026-07-28 tape served to a legacy client (one that opens with `initialize`).

Owns the two pure translations the replay engine (engine.py) applies when a client opens a
session on a 2026-07-28 tape with `initialize`, as the SDK 2.x server it was recorded from
answers such a client on a fresh connection: the handshake built from the recorded
`server/discover` answer (`legacy_initialize`), and each later result without the 2026-07-28
envelope (`legacy_result_line`). Matching, the wire and the report stay engine.py's.

What a legacy client gets:
- `initialize` → protocolVersion: the version it asked if it is a legacy revision mcptape
  knows, else the newest legacy one (2025-11-25), as the SDK 2.x server answers; the recorded
  discover's capabilities, serverInfo (from `_meta["io.modelcontextprotocol/serverInfo"]`) and
  instructions;
- results: without `resultType: "complete"`, `cacheScope`, `ttlMs` and the `_meta` serverInfo
  (a legacy result has none of them); errors and everything else as recorded.
A result that still needs the client's input (`resultType: "input_required"`) has no legacy
form on the tape (the legacy wire asks with a server request): it is served as recorded.
"""

from __future__ import annotations

from typing import Any

from mcptape.jsonrpc import dumps, loads
from mcptape.mcp import LEGACY_NEWEST, META_SERVER_INFO, PROTOCOL_VERSIONS, RESULT_ENVELOPE, era


def legacy_version(asked: Any) -> str:
    """What a 2026-07-28 server answers an `initialize` asking `asked`."""
    if isinstance(asked, str) and asked in PROTOCOL_VERSIONS and era(asked) == "legacy":
        return asked
    return LEGACY_NEWEST


def legacy_initialize(discovered: dict[str, Any], asked: Any) -> dict[str, Any]:
    """The `initialize` result a legacy client gets, from the recorded `server/discover` result."""
    meta = discovered.get("_meta")
    info = discovered.get("serverInfo")
    if info is None and isinstance(meta, dict):
        info = meta.get(META_SERVER_INFO)
    out: dict[str, Any] = {"protocolVersion": legacy_version(asked),
                           "capabilities": discovered.get("capabilities") or {}}
    if info is not None:
        out["serverInfo"] = info
    if discovered.get("instructions") is not None:
        out["instructions"] = discovered["instructions"]
    return out


def legacy_result(result: Any) -> Any:
    """A recorded 2026-07-28 result as a legacy server writes it (module docstring)."""
    if not isinstance(result, dict) or result.get("resultType", "complete") != "complete":
        return result
    out = {k: v for k, v in result.items() if k not in ("resultType", "cacheScope", "ttlMs", "_meta")}
    meta = result.get("_meta")
    if isinstance(meta, dict):
        rest = {k: v for k, v in meta.items() if k not in RESULT_ENVELOPE}
        if rest:
            out["_meta"] = rest
    elif "_meta" in result:
        out["_meta"] = meta
    return out


def legacy_result_line(line: str) -> str:
    """A response's wire line with its result in the legacy form; any other line as it is."""
    try:
        msg = loads(line)
    except ValueError:
        return line
    if not isinstance(msg, dict) or not isinstance(msg.get("result"), dict):
        return line
    result = legacy_result(msg["result"])
    if result is msg["result"]:
        return line
    return dumps({**msg, "result": result})
