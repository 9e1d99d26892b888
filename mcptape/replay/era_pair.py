"""play of a `protocol: both` golden pair: the client's first message picks the tape of its era.

Owns finding the pair (`era_tapes`) and choosing between its two tapes (`client_era`,
`choose`). `mcptape ci` records a `protocol: both` session once per era, as
`<session>@2026-07-28.tape.jsonl` and `<session>@2025-11-25.tape.jsonl` (ci/eras.py). Playing
either of them, or `<session>.tape.jsonl` when only the pair exists, serves a client from the
tape of the era it opens with: `initialize` → the 2025-11-25 tape, `server/discover` (or a first
request carrying the 2026-07-28 `_meta` version) → the 2026-07-28 tape. So each era's client is
answered from an exact recording, never from a handshake synthesized across eras (legacy_client.py, what a
single 2026-07-28 tape does for a legacy client). A tape with no sibling is served as it is.

Only stdio play chooses (one client per play, whose first line is read before any engine is
built); play --listen serves the tape it is given, as before. The engine (engine.py) never knows
it is one of a pair.
"""

from __future__ import annotations

import re
from pathlib import Path

from mcptape.jsonrpc import loads
from mcptape.mcp import BOTH_ERAS, ERA_SEPARATOR, era, meta_version
from mcptape.tape.format import TAPE_SUFFIX

_ERA_TAPE = re.compile(rf"^(?P<base>.+){re.escape(ERA_SEPARATOR)}\d{{4}}-\d{{2}}-\d{{2}}{re.escape(TAPE_SUFFIX)}$")


def era_tapes(path: str) -> dict[str, Path] | None:
    """{"modern": tape, "legacy": tape} when `path` names one tape of a pair (or, not existing
    itself, the session both are of); None when there is no pair to choose from."""
    given = Path(path)
    match = _ERA_TAPE.match(given.name)
    if match is not None:
        base = match["base"]
    elif given.name.endswith(TAPE_SUFFIX) and not given.exists():
        base = given.name[: -len(TAPE_SUFFIX)]
    else:
        return None
    tapes = {str(era(v)): given.parent / f"{base}{ERA_SEPARATOR}{v}{TAPE_SUFFIX}" for v in BOTH_ERAS}
    return tapes if all(t.is_file() for t in tapes.values()) else None


def client_era(first_line: bytes) -> str | None:
    """The era a client's first line opens: "legacy", "modern", or None (nothing says)."""
    try:
        msg = loads(first_line.decode("utf-8", "surrogateescape"))
    except ValueError:
        return None
    if not isinstance(msg, dict):
        return None
    method = msg.get("method")
    if method == "initialize":
        return "legacy"
    if method == "server/discover":
        return "modern"
    return era(meta_version(msg.get("params")))


def choose(tapes: dict[str, Path], first_line: bytes) -> tuple[Path, str]:
    """The tape to serve and why (for play's stderr). A first line that names no era (none yet,
    or a request without a handshake) gets the 2026-07-28 tape: a legacy client always opens with
    `initialize`, so only a stateless client skips the handshake."""
    chosen = client_era(first_line)
    if chosen == "legacy":
        return tapes["legacy"], "the client opened with initialize"
    if chosen == "modern":
        return tapes["modern"], "the client opened with 2026-07-28"
    return tapes["modern"], "the client's first message names no era"
