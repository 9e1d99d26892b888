"""A server that completed the handshake and then refused every request: name it, and say why.

Pure: a recording's events in, one sentence (or None) out. Used by `init` (before it writes a config
from a surface that is nothing but refusals) and by `ci` (a note on the session: a golden tape of
refusals gates nothing). Error messages of a failed start, and whether they read as a refused protocol
version (the only case where `--protocol` is the fix), are judged here too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

HANDSHAKE = frozenset({"initialize", "server/discover", "ping"})
# JSON-RPC codes that refuse the request itself, whatever it asks: invalid request, and the 2026-07-28
# "unsupported protocol version". Not -32601: a server that offers no lists at all answers it honestly.
REFUSING_CODES = {-32600: "Invalid Request", -32022: "Unsupported protocol version"}
# A refused version names it ("Unsupported protocol version", -32022, "supportedVersions"); a server
# that merely died during server/discover does not, and --protocol would not help it.
_VERSION_REFUSAL = re.compile(r"(?i)protocol.?version|unsupported.{0,20}version|version.{0,40}(?:not supported|"
                              r"unsupported|mismatch)|-32022|supportedVersions|unknown method.{0,20}server/discover")


def refused_everything(events: Iterable[Mapping[str, Any]]) -> tuple[str, str] | None:
    """(what happened, the fix) when every request after the handshake got an error with one refusing
    code, else None."""
    handshake = None
    codes: set[int] = set()
    answered = 0
    for event in events:
        if event.get("dir") != "s2c" or event.get("kind") not in ("response", "error"):
            continue
        method = str(event.get("method") or "")
        if method in HANDSHAKE:
            if event.get("kind") == "response" and method != "ping":
                handshake = method
            continue
        answered += 1
        msg = event.get("msg")
        error = msg.get("error") if isinstance(msg, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        if event.get("kind") != "error" or not isinstance(code, int) or code not in REFUSING_CODES:
            return None
        codes.add(code)
    if handshake is None or answered < 2 or len(codes) != 1:
        return None
    code = codes.pop()
    what = (f"the server answered {handshake} and then refused every request ({answered}) with {code} "
            f"{REFUSING_CODES[code]}: likely a protocol or transport mismatch, not an answer to gate")
    if handshake == "initialize":
        return what, "try the stateless revision: --protocol 2026-07-28 (or `protocol:` under the server in mcptape.yml)"
    return what, ("pin the legacy handshake: --protocol 2025-11-25 (or `protocol: 2025-11-25` under the server in "
            "mcptape.yml); over HTTP, check the URL's path and transport (streamable-http or sse)")


def looks_like_version_refusal(message: str) -> bool:
    """True when a failed start reads as a refused protocol version (then --protocol is the fix)."""
    return bool(_VERSION_REFUSAL.search(message))
