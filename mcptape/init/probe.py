"""init's probe: call each candidate tool once against the live server and say whether it answered.

A candidate is a call init would like to keep active: a tool annotated read-only, or one named like
a query (scaffold.tool_safety's "query") that nobody annotated. Calling it once tells a result
(keep it) from an error on example arguments, a timeout, or a tool that needs the network (comment
it out, with the reason seen). Which tools are candidates, and never probing one that may write, is
scaffold.py's and plan.py's; this module only runs the calls and reads the answers.

The calls run in one server process, in order; a call that times out or crashes the server ends
that process, and the rest run in a fresh one (at most MAX_ROUNDS processes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcptape.config.models import ClientSettings, HttpServer, StdioServer, Step
from mcptape.errors import McptapeError, ServerTimeout
from mcptape.live.client import record_session
from mcptape.live.launch import open_transport
from mcptape.live.refusal import REFUSING_CODES

PROBE_TIMEOUT = 10.0  # seconds for one probe call: a tool slower than this would slow every gate run
START_TIMEOUT = 30.0  # seconds for the server's start and handshake (init's listing has as long)
MAX_ROUNDS = 4
# What an error says when the tool needed the network (DNS, connect, TLS, an HTTP client's own words).
_NETWORK = re.compile(
    r"(?i)ENOTFOUND|EAI_AGAIN|getaddrinfo|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|fetch failed|"
    r"name or service not known|temporary failure in name resolution|nodename nor servname|could not resolve|"
    r"failed to resolve|network is unreachable|no route to host|connection refused|connecterror|connecttimeout|"
    r"max retries exceeded|ssl|certificate|dns|network|internet|offline|socket hang up|proxy")


# Servers that catch an exception and answer its text without isError ("Error: no such table: example"):
# on example arguments, that is a failed call as much as an isError one.
_ERROR_TEXT = re.compile(r"(?i)\s*(?:error\b|exception\b|traceback\b|failed\b)")


@dataclass(frozen=True)
class Outcome:
    """One probe call: `kind` is "ok", "error", "network", "timeout" or "refused"; `detail` one line."""

    kind: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def needs_network(text: str) -> bool:
    """Does an error text say the tool could not reach the network?"""
    return bool(_NETWORK.search(text))


def _text_of(result: Mapping[str, Any]) -> str:
    parts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict)]
    return " ".join(str(p) for p in parts if p) or "no text"


def _outcome(events: Sequence[Mapping[str, Any]], step: int) -> Outcome | None:
    for event in events:
        if event.get("step") != step or event.get("dir") != "s2c" or event.get("kind") not in ("response", "error") \
                or event.get("method") != "tools/call":  # a step may list the tools first (to check arguments)
            continue
        msg = event.get("msg")
        if not isinstance(msg, dict):
            continue
        if event.get("kind") == "error":
            raw = msg.get("error")
            error: dict[str, Any] = raw if isinstance(raw, dict) else {}
            text = f"{error.get('code')} {error.get('message', '')}".strip()
            if error.get("code") in REFUSING_CODES:
                return Outcome("refused", text)
            return Outcome("network" if needs_network(text) else "error", text)
        result = msg.get("result")
        if isinstance(result, dict) and (result.get("isError") is True or _ERROR_TEXT.match(_text_of(result))):
            text = _text_of(result)
            return Outcome("network" if needs_network(text) else "error", text)
        return Outcome("ok")
    return None


def probe_calls(server: StdioServer | HttpServer, calls: Sequence[tuple[str, dict[str, Any]]], *, base_dir: Path,
                env: Mapping[str, str], protocol: str | None,
                progress: Callable[[str], None] = lambda _line: None,
                start_timeout: float = START_TIMEOUT) -> dict[str, Outcome]:
    """tool name -> what calling it once with its arguments gave. Each call may take PROBE_TIMEOUT;
    the server's start and handshake `start_timeout` (init's step limit, --timeout: the listing
    showed the server starts within it, a busy machine may need all of it). A call that timed out,
    the handshake's included, is a "timeout", never an "error"."""
    out: dict[str, Outcome] = {}
    remaining = list(calls)
    for _ in range(MAX_ROUNDS):
        if not remaining:
            break
        progress(f"probing {len(remaining)} tool{'s' * (len(remaining) != 1)}: "
                 + ", ".join(name for name, _ in remaining[:6]) + (", ..." if len(remaining) > 6 else ""))
        steps = [Step(action="call", target=name, arguments=arguments, timeout=PROBE_TIMEOUT)
                 for name, arguments in remaining]
        try:
            transport = open_transport(server, base_dir=base_dir, env=env)
        except McptapeError as e:
            for name, _ in remaining:
                out[name] = Outcome("error", f"the server failed to start: {e.message}")
            return out
        recording = record_session(transport, steps, ClientSettings(), session="init-probe", protocol=protocol,
                                   step_timeout=start_timeout,
                                   session_timeout=start_timeout + PROBE_TIMEOUT * (len(steps) + 1))
        failed = recording.failed_step
        for number, (name, _) in enumerate(remaining, start=1):
            got = _outcome(recording.events, number)
            if got is not None:
                out[name] = got
            elif failed == number and recording.error is not None:
                kind = "timeout" if isinstance(recording.error, ServerTimeout) else "error"
                out[name] = Outcome(kind, recording.error.message)
        if recording.error is None or failed is None:
            # Nothing failed, or the handshake did: every call left has the session's one outcome.
            kind = "timeout" if isinstance(recording.error, ServerTimeout) else "error"
            for name, _ in remaining:
                out.setdefault(name, Outcome(kind, recording.error.message if recording.error else "no answer"))
            break
        remaining = remaining[failed:]
    for name, _ in remaining:
        out.setdefault(name, Outcome("error", "not probed: the server failed too often"))
    return out
