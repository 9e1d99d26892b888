"""The transport interface: what the scripted client needs from any wire, stdio, HTTP or in memory.

Knows nothing about MCP, and imports nothing heavy (no pydantic, no httpx): a transport moves
whole messages, one JSON-RPC line each, without their newline.

    send(line)            one message to the server; a server that is gone raises ServerError
    receive(timeout)      the next message from the server, None at the end of the stream;
                          ServerTimeout when none arrives in time
    close()               end the exchange and stop the server; its returncode (None if unknown)
    stderr_tail()         the server's last words on stderr (or its output), for error messages
    stderr_lines          the server's stderr lines, in order, as far as they are kept (the client
                          records them at the end of a session; HTTP servers have none of their own)
    stderr_left_out       (lines, bytes) of stderr past what is kept, said in a note
    spawned               whether mcptape started the server (False for a `url:` without `start:`:
                          an empty stderr_tail then says nothing about it, and messages must not say
                          it was silent)

Every attribute here is one the client reads: a wrapper (`Wrapped`: a private HOME, the OpenTelemetry clock)
passes each on by name, so the type checker sees the whole interface, never a getattr.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Transport(Protocol):
    """What the scripted client needs from any transport (module docstring)."""

    @property
    def stderr_lines(self) -> Sequence[bytes]: ...

    @property
    def stderr_left_out(self) -> Sequence[int]: ...

    @property
    def spawned(self) -> bool: ...

    def send(self, line: bytes) -> None: ...

    def receive(self, timeout: float | None = None) -> bytes | None: ...

    def close(self) -> int | None: ...

    def stderr_tail(self) -> str: ...


class Wrapped:
    """A transport around another that adds to some of its methods (ci's timing, a private HOME
    removed on close): everything it does not override is the inner transport's, named once here."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner

    @property
    def stderr_lines(self) -> Sequence[bytes]:
        return self._inner.stderr_lines

    @property
    def stderr_left_out(self) -> Sequence[int]:
        return self._inner.stderr_left_out

    @property
    def spawned(self) -> bool:
        return self._inner.spawned

    def send(self, line: bytes) -> None:
        self._inner.send(line)

    def receive(self, timeout: float | None = None) -> bytes | None:
        return self._inner.receive(timeout)

    def close(self) -> int | None:
        return self._inner.close()

    def stderr_tail(self) -> str:
        return self._inner.stderr_tail()
