"""MCP facts every part of mcptape agrees on: the protocol revisions, what "modern" means, the `_meta` keys.

Plain data and small pure functions, no I/O and no imports: the scripted client, the transports,
the tape reader, diff and conformance all read the revisions and the 2026-07-28 envelope from here.

Revisions. The legacy, session-based revisions (2024-11-05 ... 2025-11-25) open with `initialize`;
the stateless revision 2026-07-28 has no handshake (`server/discover`, the version and the
client's capabilities in every request's `_meta`). A revision is *modern* when it is 2026-07-28
or later: revisions are dates, and ISO dates compare as strings (`era`, `is_modern`), so a
revision newer than this table is still read as stateless, never as legacy.
"""

from __future__ import annotations

from typing import Any

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
MODERN_PROTOCOL = "2026-07-28"  # the first stateless revision: server/discover, per-request _meta
LEGACY_NEWEST = "2025-11-25"  # the newest session-based revision
# What mcptape's client asks in `initialize` (auto's fallback): what current clients ask (the official
# SDK, FastMCP, the Inspector), so a `ci` golden and a tape recorded behind any of them agree.
LEGACY_DEFAULT_PROTOCOL = "2025-11-25"

# `protocol: both` (ci/eras.py): a session recorded in each of these, a golden tape each, named
# `<session>@<version>`; play serves a client of either era from its own (replay/era_pair.py).
BOTH_ERAS = (MODERN_PROTOCOL, LEGACY_DEFAULT_PROTOCOL)
ERA_SEPARATOR = "@"

HANDSHAKE_METHODS = frozenset({"initialize", "server/discover"})

# `_meta` keys of the 2026-07-28 envelope (reserved prefix `io.modelcontextprotocol/`).
META_NAMESPACE = "io.modelcontextprotocol/"
META_PROTOCOL = META_NAMESPACE + "protocolVersion"
META_CAPABILITIES = META_NAMESPACE + "clientCapabilities"
META_CLIENT_INFO = META_NAMESPACE + "clientInfo"
META_LOG_LEVEL = META_NAMESPACE + "logLevel"
META_SERVER_INFO = META_NAMESPACE + "serverInfo"
REQUEST_ENVELOPE = frozenset({META_PROTOCOL, META_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL})
RESULT_ENVELOPE = frozenset({META_SERVER_INFO})


def era(version: str | None) -> str | None:
    """"modern" (2026-07-28 on), "legacy" (dated before), None (unknown). Dates compare as strings."""
    if not version:
        return None
    return "modern" if str(version) >= MODERN_PROTOCOL else "legacy"


def is_modern(version: str | None) -> bool:
    """Does `version` name a stateless revision (2026-07-28 or later)?"""
    return era(version) == "modern"


def meta_version(params: Any) -> str | None:
    """The protocol version a 2026-07-28 request carries in `params._meta`, if any (a non-empty string)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_PROTOCOL) if isinstance(meta, dict) else None
    return version if isinstance(version, str) and version else None


def strip_meta(params: Any) -> Any:
    """Request params without their top-level `_meta` (progress tokens, the 2026-07-28 envelope):
    not part of what a call asks. Anything that is not a dict with `_meta` is returned as it is."""
    if isinstance(params, dict) and "_meta" in params:
        return {k: v for k, v in params.items() if k != "_meta"}
    return params
