"""The HTTP serving plumbing shared by `rec --listen` (record/http.py) and `play --listen` (replay/http.py).

Owns: parsing `--listen HOST:PORT`, a threaded stdlib HTTP/1.1 server, writing a streamed
(chunked) body that is flushed per chunk, and running a server until SIGINT/SIGTERM. Knows
nothing about MCP or tapes. Stdlib only, so `mcptape play --listen` stays light.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mcptape.errors import ConfigError

# Hop-by-hop headers (RFC 9110 7.6.1) are the connection's, not the message's: never forwarded.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


def parse_listen(value: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 as `[::1]:PORT`; port 0 picks a free one) -> (host, port)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ConfigError(
            f"--listen {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8765",
            hint="give the address and port to listen on; port 0 picks a free port",
        )
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


class Server(ThreadingHTTPServer):
    """A threaded HTTP/1.1 server whose handler threads never keep the process alive."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        try:
            super().__init__(address, handler)
        except OSError as e:
            raise ConfigError(
                f"--listen {address[0]}:{address[1]}: cannot listen there: {e.strerror or e}",
                hint="pick another port (or 0 for a free one)",
            ) from e

    @property
    def url_base(self) -> str:
        host, port = self.server_address[:2]
        text = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{text}]" if ":" in text else text
        return f"http://{shown}:{port}"


class ChunkedBody:
    """Writes a chunked HTTP/1.1 body to a handler's socket, flushing each chunk at once."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self._wfile = handler.wfile

    def write(self, data: bytes) -> None:
        if data:
            self._wfile.write(b"%x\r\n%b\r\n" % (len(data), data))
            self._wfile.flush()

    def end(self) -> None:
        self._wfile.write(b"0\r\n\r\n")
        self._wfile.flush()


def serve_until_stopped(server: Server, on_ready: Callable[[], None], stop: threading.Event | None = None) -> None:
    """Serve in a thread until SIGINT/SIGTERM (or `stop` is set), then stop accepting."""
    stop = stop or threading.Event()
    previous: dict[signal.Signals, Any] = {}

    def _stop(signum: int, frame: Any) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        # Outside the main thread (in-process use) signals cannot be caught: rely on `stop`.
        with contextlib.suppress(ValueError):
            previous[sig] = signal.signal(sig, _stop)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        on_ready()
        while not stop.wait(0.2):
            pass
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5.0)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
