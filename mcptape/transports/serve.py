"""The HTTP serving plumbing shared by `rec --listen` (record/http.py) and `play --listen` (replay/http.py).

Owns: parsing `--listen HOST:PORT`, a threaded stdlib HTTP/1.1 server, the DNS-rebinding check
every request passes first (`HostCheck`), writing a streamed (chunked) body that is flushed per
chunk, and running a server until SIGINT/SIGTERM. Knows nothing about MCP or tapes. Stdlib
only, so `mcptape play --listen` stays light.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import mcptape.environment as environment
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


# What a loopback server answers to, whatever --listen says: a page on another site can reach a
# loopback port, so the names are what tells a local client from a rebound one.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_ANY_ADDRESS = frozenset({"", "0.0.0.0", "::"})


def _hostname(authority: str) -> str:
    """The host of a Host header's `host[:port]` (`[v6]:port` too), lower case, no brackets."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        return authority[1 : authority.find("]")] if "]" in authority else authority[1:]
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


class HostCheck:
    """DNS-rebinding protection as the official SDKs do it: a request whose `Host`, or `Origin` if it
    sends one, names a host that is not allowed is refused (403) before anything is read, forwarded
    or served.

    Allowed: the loopback names, the host --listen binds, the names given by --allow-host and
    MCPTAPE_ALLOW_HOSTS (comma-separated; `*` turns the check off, for a server behind a proxy that
    checks names itself). Bound to every interface (0.0.0.0, ::) with no names given, there is no
    check, as in the SDKs (a server reached by whatever name a network gives it), and `warning` says
    so. Ports are not compared: a page on another site is told apart by its name.
    """

    def __init__(self, listen_host: str, extra: tuple[str, ...] = (), tell: Callable[[str], None] | None = None) -> None:
        self._tell = tell  # where a refusal is said (the command's stderr), once per reason
        self._told: set[str] = set()
        self._lock = threading.Lock()
        names = set(LOOPBACK_NAMES)
        bound = listen_host.strip("[]").lower()
        every_interface = bound in _ANY_ADDRESS
        if not every_interface:
            names.add(bound)
        configured = [e.strip() for e in [*extra, *(environment.get("MCPTAPE_ALLOW_HOSTS") or "").split(",")]]
        configured = [e for e in configured if e]
        self.any = "*" in configured or (every_interface and not configured)
        for entry in configured:
            # A name, `name:port`, or an origin (`https://app.example.com`): its host is what counts.
            names.add((urlsplit(entry).hostname or "") if "://" in entry else _hostname(entry))
        self.names = frozenset(names)
        self.warning = (
            f"listening on every interface ({listen_host or '0.0.0.0'}) with no --allow-host: any Host and Origin "
            "are answered (no DNS-rebinding protection); --allow-host NAME limits them to the loopback names and NAME"
            if self.any and "*" not in configured else None
        )

    def refusal(self, host: str | None, origin: str | None) -> str | None:
        """Why a request with these headers is refused, or None if it is allowed."""
        if self.any:
            return None
        if not host or _hostname(host) not in self.names:
            return f"Host {host!r} is not an allowed name"
        if origin is not None:
            try:
                origin_host = urlsplit(origin).hostname if "://" in origin else None
            except ValueError:
                origin_host = None
            if origin_host is None or origin_host.lower() not in self.names:
                return f"Origin {origin!r} is not an allowed name"
        return None

    def tell(self, line: str) -> None:
        with self._lock:
            if self._tell is None or line in self._told or len(self._told) >= 100:
                return
            self._told.add(line)
        self._tell(line)


class CheckedHandler(BaseHTTPRequestHandler):
    """A request handler whose every request passes its server's HostCheck first, whatever its method:
    one that fails is answered 403 (a JSON-RPC error, as the SDKs answer it) and never reaches a
    `do_*` method, its body unread (the connection closes after the answer)."""

    server: Server
    who = "mcptape"  # who refused, in the answer and on stderr

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        why = self.server.host_check.refusal(self.headers.get("Host"), self.headers.get("Origin"))
        if why is None:
            return True
        self.server.host_check.tell(f"{self.who}: refused a {self.command} request (403): {why}; "
                                    "--allow-host NAME allows a name")
        message = f"Forbidden: {why} ({self.who}: DNS-rebinding protection; start it with --allow-host NAME to allow it)"
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}).encode("utf-8")
        self.close_connection = True
        self.send_response_only(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        return False


class Server(ThreadingHTTPServer):
    """A threaded HTTP/1.1 server whose handler threads never keep the process alive."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], host_check: HostCheck) -> None:
        self.host_check = host_check
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
