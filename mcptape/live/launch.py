"""Open the transport a config's server entry describes: a stdio process or an HTTP endpoint.

Owns only the choice and the launch details that come from mcptape.yml (minimal environment,
cwd relative to the config file, the `start:` command of an HTTP server, a private HOME). Above
both config/ and transports/, which know nothing of each other: framing is transports/stdio.py's
and transports/http.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mcptape.config.models import HttpServer, StdioServer
from mcptape.errors import ServerError
from mcptape.live.sandbox import PrivateHome
from mcptape.transports.base import Transport, Wrapped
from mcptape.transports.stdio import StdioTransport, minimal_env

if TYPE_CHECKING:
    from mcptape.transports.http import HttpTransport, StartedServer


def load_transports(servers: Iterable[StdioServer | HttpServer]) -> None:
    """Import the HTTP transports and the OAuth client if any of `servers` is a `url:` server. ci
    calls it in the main thread before its workers open transports: a first import racing in two
    threads can hand one of them a partially initialized module (ci/session.py)."""
    if any(isinstance(server, HttpServer) for server in servers):
        import mcptape.transports.http  # noqa: F401
        import mcptape.transports.oauth  # noqa: F401


def open_transport(server: StdioServer | HttpServer, *, base_dir: Path, env: Mapping[str, str],
                   learned: dict[str, str] | None = None) -> Transport:
    """Start/connect to `server`. `env` is the entry's interpolated `env:`; nothing else leaks through.
    With `private_home`, the server runs with a fresh HOME and temp dir, removed when it is closed.
    `learned` gets the secrets the session learns as it runs (an `auth:` server's OAuth tokens, under
    `auth.NAME`), for the redactor to know before anything is written."""
    if not server.private_home:
        return _open(server, base_dir=base_dir, env=env, learned=learned)
    home = PrivateHome()
    try:
        return _HomeRemoved(_open(server, base_dir=base_dir, env=home.env(minimal_env(env)), learned=learned), home)
    except BaseException:
        home.remove()
        raise


class _HomeRemoved(Wrapped):
    """A transport whose private HOME goes when it closes (everything else is the transport's)."""

    def __init__(self, inner: Transport, home: PrivateHome) -> None:
        super().__init__(inner)
        self._home = home

    def close(self) -> int | None:
        try:
            return self._inner.close()
        finally:
            self._home.remove()


def _open(server: StdioServer | HttpServer, *, base_dir: Path, env: Mapping[str, str],
          learned: dict[str, str] | None) -> Transport:
    if isinstance(server, StdioServer):
        cwd = base_dir / server.cwd if server.cwd else base_dir
        if not cwd.is_dir():
            raise ServerError(
                f"server working directory {cwd} does not exist",
                hint="fix `cwd:` of the server in mcptape.yml (it is relative to the config file)",
            )
        return StdioTransport(server.command, env=minimal_env(env), cwd=cwd)
    transport: Transport = open_http_transport(server, base_dir=base_dir, env=dict(env), learned=learned)
    return transport


def open_http_transport(server: HttpServer, *, base_dir: Path, env: dict[str, str],
                        learned: dict[str, str] | None = None) -> HttpTransport:
    """Start the server if it has `start:`, wait until its port answers, and open its transport
    (with the OAuth client of its `auth:`, whose tokens go to `learned`)."""
    # httpx and the OAuth client load here, for a `url:` server: a stdio run (most of them) starts without.
    from mcptape.transports.http import SseTransport, StartedServer, StreamableHttpTransport
    from mcptape.transports.oauth import ClientCredentials, OAuthClient

    started: StartedServer | None = None
    if server.start:
        cwd = Path(base_dir) / server.cwd if server.cwd else Path(base_dir)
        started = StartedServer(list(server.start), env=minimal_env(env), cwd=cwd)
        try:
            started.wait_ready(server.url, server.ready_timeout)
        except BaseException:
            started.stop()
            raise
    try:
        if server.transport == "sse":
            return SseTransport(server.url, server.headers, started=started)
        auth = None
        if server.auth is not None:
            a = server.auth
            credentials = ClientCredentials(a.client_id, a.client_secret, a.private_key, a.algorithm, a.method, a.scope)
            auth = OAuthClient(credentials, server.url, name="auth", learned=learned)
        return StreamableHttpTransport(server.url, server.headers, started=started, auth=auth)
    except BaseException:
        if started is not None:
            started.stop()
        raise

