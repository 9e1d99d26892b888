"""`protocol: both`: one session of mcptape.yml, recorded in both eras of MCP, a golden tape for each.

Owns what `both` means to a ci run: which sessions it turns into two (`expand`), their names and
golden files (`<session>@2026-07-28`, `<session>@2025-11-25`: the name says the era, in the
report, in `--session` and in the golden's file name), the protocol each era's run pins
(`session_protocol`), and what it is when a server does not speak one of the eras (`era_refusal`).
Recording, redacting and comparing each era is ci/session.py's pipeline, unchanged: an era is a
session of its own, with its own golden and its own verdict. Serving the two goldens to clients
of either era is play's (replay/era_pair.py).

Why two goldens and not one: the 2026-07-28 revision and the legacy ones answer the same call in
different envelopes (resultType, cacheScope, ttlMs), ask the client differently (input-required
round trips, not server requests) and open differently (server/discover, not initialize). A golden
of one era says nothing exact about the other: play can synthesize a legacy handshake from a
2026-07-28 tape (replay/legacy_client.py), but only a recording of the legacy era shows what the server
really answers a legacy client.

The eras: MODERN_PROTOCOL (2026-07-28, `server/discover`) and LEGACY_DEFAULT_PROTOCOL (2025-11-25,
`initialize`, what current clients ask). `both` is allowed where `protocol:` is (a server entry,
the client block, a session's `client:`); the server's entry wins, as for a version.

A server that does not speak an era (a legacy-only server refuses `server/discover`; a
2026-07-28-only one `initialize`) makes that era's session a structural finding, not an error:
the server was reached and answered, and what it answered is a fact about it ("does not speak
2026-07-28"), with the fix (pin the era it speaks). No golden is written for that era.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcptape.config.models import Config, Session
from mcptape.errors import RequestRefused
from mcptape.mcp import BOTH_ERAS, ERA_SEPARATOR, HANDSHAKE_METHODS, is_modern
from mcptape.verdict.model import DiffResult, Drift, Finding

BOTH = "both"


def wants_both(config: Config, session: Session) -> bool:
    """Does this session's protocol (its server's, else its client block's) say `both`?"""
    server = config.servers.get(session.server)
    chosen = server.protocol if server is not None and server.protocol is not None else config.client_for(session).protocol
    return chosen == BOTH


def era_name(name: str, version: str) -> str:
    return f"{name}{ERA_SEPARATOR}{version}"


def era_of(session: Session) -> str | None:
    """The protocol version an era session pins (None: not an era session)."""
    _, sep, version = session.name.rpartition(ERA_SEPARATOR)
    return version if sep else None


def base_name(name: str) -> str:
    """The configured session's name of an era session's name (itself for any other)."""
    return name.rpartition(ERA_SEPARATOR)[0] or name


def expand(config: Config, sessions: Sequence[Session]) -> list[Session]:
    """Each `protocol: both` session as its two era sessions (BOTH_ERAS order), the others as they are."""
    out: list[Session] = []
    for session in sessions:
        if era_of(session) is None and wants_both(config, session):
            out += [session.model_copy(update={"name": era_name(session.name, v)}) for v in BOTH_ERAS]
        else:
            out.append(session)
    return out


def session_names(config: Config) -> list[str]:
    """Every name a ci run may give a session of this config (its golden files' names)."""
    return [s.name for s in expand(config, config.sessions)]


def session_protocol(config: Config, session: Session) -> str | None:
    """The `protocol` to record `session` with (live/client.py's argument; None: the client block's)."""
    version = era_of(session)
    if version is not None:
        return version
    server = config.servers[session.server]
    return server.protocol


def config_index(config: Config, session: Session) -> int:
    """Where `session` (or the session an era session comes from) is in the config's list."""
    name = base_name(session.name) if era_of(session) is not None else session.name
    return next(i for i, s in enumerate(config.sessions) if s.name == name)


def era_refusal(session: Session, events: Sequence[dict[str, Any]], protocol: str | None,
                error: Exception | None = None) -> DiffResult | None:
    """An era session whose server refused that era's handshake (a JSON-RPC error, or over HTTP a
    refused POST: `error` is then the recording's RequestRefused): the structural finding that says
    so (module docstring); None for any other recording, including a server that never answered."""
    version = era_of(session)
    if version is None or protocol is not None:
        return None
    refused = next((e for e in events if e.get("dir") == "s2c" and e.get("kind") == "error"
                    and e.get("method") in HANDSHAKE_METHODS), None)
    if refused is not None:
        answer = (refused.get("msg") or {}).get("error")
        method, code = refused.get("method"), answer.get("code") if isinstance(answer, dict) else None
    elif isinstance(error, RequestRefused):
        method, code = ("server/discover" if is_modern(version) else "initialize"), f"HTTP {error.status}"
    else:
        return None
    other = next(v for v in BOTH_ERAS if v != version)
    finding = Finding.of("session", "protocol", "protocol",
                         f"the server does not speak {version}: it refused `{method}` ({code}); "
                 f"`protocol: both` records every session in {' and '.join(BOTH_ERAS)}: pin the era it speaks "
                 f"(`protocol: auto` or `protocol: {other}`) on this server or session")
    return DiffResult(verdict="structural", drifts=[Drift(call=None, findings=[finding])], b=session.name)
