"""The transport interface: what the scripted client needs from any wire, stdio, HTTP or in memory.

Knows nothing about MCP, and imports nothing heavy (no pydantic, no httpx): a transport moves
whole messages, one JSON-RPC line each, without their newline.

    send(line)            one message to the server; a server that is gone raises ServerError
    receive(timeout)      the next message from the server, None at the end of the stream;
                          ServerTimeout when none arrives in time
    close()               end the exchange and stop the server; its returncode (None if unknown)
    stderr_tail()         the server's last words on stderr (or its output), for error messages

A transport may also offer `stderr_lines` (every stderr line, in order), which the client
records at the end of a session (stdio has them; HTTP servers have no stderr of their own),
and `spawned` (False when mcptape did not start the server, a `url:` without `start:`: an
empty stderr_tail then says nothing about the server, and messages must not say it was silent).
"""

from __future__ import annotations

from typing import Protocol


class Transport(Protocol):
    """What the scripted client needs from any transport (module docstring)."""

    def send(self, line: bytes) -> None: ...

    def receive(self, timeout: float | None = None) -> bytes | None: ...

    def close(self) -> int | None: ...

    def stderr_tail(self) -> str: ...
