"""The Endpoint a client connects to, and what each client session of a replay got (PlayReport).

Owns handing a client what it needs on each transport: the stdio command (a process the client
starts), the URL (an HTTP server of this process), or, in memory, the official SDK's ClientSession
itself (sdk_streams.py's streams); and the SDK's parameter objects for them. What the endpoint serves
and when it ends is serving.py's. Needs the official SDK only for the SDK's objects (`pip install mcp`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcptape.api.modes import Action
from mcptape.api.options import Transport
from mcptape.errors import EXIT_OK, ConfigError, McptapeError
from mcptape.replay.lab import LabEngine

if TYPE_CHECKING:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.session_group import StreamableHttpParameters


@dataclass(frozen=True)
class PlayReport:
    """What one client session of a replay got, as `mcptape play --json=FILE` writes it (one source:
    replay/outcome.py's `to_dict`). Each miss, substitution and live call is one line.

    >>> import asyncio
    >>> async def listing(endpoint: mcptape.Endpoint) -> None:
    ...     async with endpoint.client_session() as session:
    ...         await session.initialize()
    ...         await session.list_tools()
    >>> with mcptape.replay("tapes/surface.tape.jsonl", transport="memory") as endpoint:
    ...     asyncio.run(listing(endpoint))
    >>> report = endpoint.reports[0]
    >>> report.clean, report.answered, report.unused
    (True, 2, ['resources/list (tape line 7)', 'prompts/list (tape line 9)'])
    """

    tape: str
    answered: int = 0
    exit_code: int = EXIT_OK
    misses: list[str] = field(default_factory=list)
    substitutions: list[str] = field(default_factory=list)
    forwarded: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    injected: list[str] = field(default_factory=list)
    live_tools_calls: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Every request was answered by its own recording (play's exit 0)."""
        return self.exit_code == EXIT_OK

    def problems(self) -> list[str]:
        """One line per request the client did not get its own recording for."""
        lines = list(self.misses) + list(self.substitutions)
        if not lines and not self.clean:
            lines.append(f"{', '.join(self.refused) or 'the handshake'}: answered only by a refusal play made up; "
                         "no session followed")
        return lines

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlayReport:
        """From play's report document (`play --json=FILE`'s sessions, each one of these)."""
        return cls(
            tape=str(data.get("tape", "")),
            answered=int(data.get("answered", 0)),
            exit_code=int(data.get("exit_code", EXIT_OK)),
            misses=[f"{m['call']}: {m['why']}" for m in data.get("misses", [])],
            substitutions=[f"{m['call']} answered with {m.get('substituted')}: {m['why']}"
                           for m in data.get("substitutions", [])],
            forwarded=list(data.get("forwarded", [])),
            unused=list(data.get("unused", [])),
            warnings=list(data.get("warnings", [])),
            refused=list(data.get("refused", [])),
            injected=list(data.get("injected", [])),
            live_tools_calls=list(data.get("live_tools_calls", [])),
        )


class Endpoint:
    """What an MCP client connects to, handed out by `mcptape.replay` and `mcptape.record`.

    `transport` says which of these holds: `command` and `args` (stdio: the process a client
    starts), `url` (streamable HTTP on 127.0.0.1), or neither (memory: `client_session()` only).
    `stdio_parameters()` and `http_parameters()` are the official SDK's parameter objects for them;
    `client_session()` opens the SDK's ClientSession on any of the three. `action` says what the
    block does with `tape`: "play", "record" or "fallback". `reports` holds what each client session
    of a replay got, once the block has ended.

    >>> with mcptape.replay("tapes/arithmetic.tape.jsonl") as endpoint:
    ...     endpoint.transport, endpoint.action, endpoint.args[:2]
    ('stdio', 'play', ['-m', 'mcptape.api.child'])
    >>> with mcptape.replay("tapes/arithmetic.tape.jsonl", transport="http") as endpoint:
    ...     endpoint.url.startswith("http://127.0.0.1:"), endpoint.http_parameters().url == endpoint.url
    (True, True)
    """

    def __init__(self, tape: Path, action: Action, transport: Transport) -> None:
        self.tape: Path = tape
        self.action: Action = action
        self.transport: Transport = transport
        self.command: str | None = None
        self.args: list[str] = []
        self.url: str | None = None
        self.reports: list[PlayReport] = []
        self.engine: LabEngine | None = None  # memory: the first session's engine, the model of the others
        self.engines: list[LabEngine] = []  # memory: every session's, for their reports

    @property
    def argv(self) -> list[str]:
        """The stdio command with its arguments (empty for HTTP and memory)."""
        return [self.command, *self.args] if self.command is not None else []

    def stdio_parameters(self, **kwargs: Any) -> StdioServerParameters:
        """The official SDK's `StdioServerParameters` for `command` and `args` (needs `pip install mcp`);
        `kwargs` go to it (env, cwd, ...)."""
        if self.command is None:
            raise ConfigError(f"this endpoint is served over {self.transport}, not stdio",
                              hint='mcptape.replay(tape, transport="stdio")')
        sdk()
        from mcp import StdioServerParameters

        return StdioServerParameters(command=self.command, args=list(self.args), **kwargs)

    def http_parameters(self, **kwargs: Any) -> StreamableHttpParameters:
        """The official SDK's `StreamableHttpParameters` for `url` (needs `pip install mcp`)."""
        if self.url is None:
            raise ConfigError(f"this endpoint is served over {self.transport}, not HTTP",
                              hint='mcptape.replay(tape, transport="http")')
        sdk()
        from mcp.client.session_group import StreamableHttpParameters

        return StreamableHttpParameters(url=self.url, **kwargs)

    @contextlib.asynccontextmanager
    async def client_session(self, **session_options: Any) -> AsyncIterator[ClientSession]:
        """The official SDK's ClientSession connected to this endpoint, not yet initialized;
        `session_options` go to ClientSession (client_info, sampling_callback, ...).

        >>> import asyncio
        >>> async def add() -> str:
        ...     with mcptape.replay("tapes/arithmetic.tape.jsonl", transport="memory") as endpoint:
        ...         async with endpoint.client_session() as session:
        ...             await session.initialize()
        ...             result = await session.call_tool("add", {"a": 2, "b": 3})
        ...     return result.content[0].text
        >>> asyncio.run(add())
        '5'
        """
        ClientSession = sdk().ClientSession
        if self.transport == "memory":
            from mcptape.api.sdk_streams import memory_streams  # the SDK's streams: in-memory replays only

            engine = self._next_engine()
            async with memory_streams(engine) as (read, write), ClientSession(read, write, **session_options) as session:
                yield session
        elif self.transport == "http":
            from mcp.client.streamable_http import streamable_http_client

            assert self.url is not None
            async with streamable_http_client(self.url) as (read, write, *_), \
                    ClientSession(read, write, **session_options) as session:
                yield session
        else:
            from mcp.client.stdio import stdio_client

            async with stdio_client(self.stdio_parameters()) as (read, write), \
                    ClientSession(read, write, **session_options) as session:
                yield session

    def _next_engine(self) -> LabEngine:
        """The engine of the next in-memory client session: the first, then a fresh one each (as HTTP play)."""
        if self.engine is None:
            raise ConfigError(f"client_session() over {self.transport} needs a replay; this endpoint records",
                              hint="connect with endpoint.stdio_parameters() or endpoint.url")
        engine = self.engine if not self.engines else self.engine.fresh()
        self.engines.append(engine)
        return engine


def sdk() -> Any:
    """The official MCP SDK (`mcp`), which the client side of the library needs and mcptape itself does not."""
    try:
        import mcp
    except ImportError as e:
        raise McptapeError("this needs the official MCP SDK, which is not installed", hint="pip install mcp") from e
    return mcp
