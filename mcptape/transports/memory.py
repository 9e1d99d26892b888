"""An in-memory transport pair: the scripted client on one end, a server function on the other, no process.

For tests of the client's protocol logic (ids, the handshake, input rounds, server requests),
which do not need a process or a pipe: `memory_pair()` gives the client's end (a Transport, as
transports/base.py defines it) and the server's end, which a server written for lines drives
from a thread of its own (`MemoryPeer.serve`). Messages are bytes without their newline, as on
every other transport; the server's stderr lines are kept as stdio keeps them.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from mcptape.errors import ServerError, ServerTimeout

_EOF = None


class MemoryPeer:
    """The server's end of an in-memory pair."""

    def __init__(self) -> None:
        self._to_client: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._to_server: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.stderr_lines: list[bytes] = []
        self.returncode: int | None = None
        self.closed = False
        self._thread: threading.Thread | None = None

    def receive(self, timeout: float | None = None) -> bytes | None:
        """The client's next message; None once the client closed its end (stdin EOF)."""
        return self._to_server.get(timeout=timeout)

    def send(self, line: bytes) -> None:
        """One message to the client (without its newline)."""
        if not self.closed:
            self._to_client.put(line)

    def write_stderr(self, line: bytes) -> None:
        self.stderr_lines.append(line if line.endswith(b"\n") else line + b"\n")

    def close(self, returncode: int | None = 0) -> None:
        """The server is done: the client reads what was sent, then the end of the stream."""
        if not self.closed:
            self.closed = True
            self.returncode = returncode
            self._to_client.put(_EOF)

    def serve(self, server: Callable[[MemoryPeer], int | None]) -> None:
        """Run `server(peer)` in a thread; what it returns is the returncode the client's close() sees."""

        def run() -> None:
            code: int | None = 1
            try:
                code = server(self)
            finally:
                self.close(code)

        self._thread = threading.Thread(target=run, name="memory-server", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)


class MemoryTransport:
    """The client's end of an in-memory pair: a Transport (transports/base.py)."""

    def __init__(self, peer: MemoryPeer) -> None:
        self._peer = peer
        self._closed = False
        self.spawned = True  # the server function runs because the test started it
        self.stderr_left_out = (0, 0)  # every stderr line is kept

    @property
    def stderr_lines(self) -> list[bytes]:
        return self._peer.stderr_lines

    def send(self, line: bytes) -> None:
        if self._closed or self._peer.closed:
            raise ServerError(f"server closed its input (exited?): {self.stderr_tail() or 'no stderr'}")
        self._peer._to_server.put(line)

    def receive(self, timeout: float | None = None) -> bytes | None:
        try:
            return self._peer._to_client.get(timeout=timeout)
        except queue.Empty:
            raise ServerTimeout(f"no message from the server within {timeout:g}s") from None

    def stderr_tail(self, lines: int = 20) -> str:
        return b"".join(self._peer.stderr_lines[-lines:]).decode("utf-8", "backslashreplace").rstrip()

    def close(self, grace: float = 2.0) -> int | None:
        """End of the client's stream (the server sees None), then the server's returncode."""
        if not self._closed:
            self._closed = True
            self._peer._to_server.put(_EOF)
        self._peer.join(grace)
        return self._peer.returncode


def memory_pair() -> tuple[MemoryTransport, MemoryPeer]:
    """(the client's end, the server's end) of a new in-memory pair."""
    peer = MemoryPeer()
    return MemoryTransport(peer), peer
