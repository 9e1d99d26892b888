"""Open the transport a config's server entry describes: a stdio process or an HTTP endpoint.

Owns only the choice and the launch details that come from mcptape.yml (minimal environment,
cwd relative to the config file). Framing is stdio.py's; HTTP is http.py's (open_http_transport).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mcptape.config.models import HttpServer, StdioServer
from mcptape.errors import ServerError
from mcptape.transports.base import Transport
from mcptape.transports.stdio import StdioTransport, minimal_env


def open_transport(server: StdioServer | HttpServer, *, base_dir: Path, env: Mapping[str, str]) -> Transport:
    """Start/connect to `server`. `env` is the entry's interpolated `env:`; nothing else leaks through."""
    if isinstance(server, StdioServer):
        cwd = base_dir / server.cwd if server.cwd else base_dir
        if not cwd.is_dir():
            raise ServerError(
                f"server working directory {cwd} does not exist",
                hint="fix `cwd:` of the server in mcptape.yml (it is relative to the config file)",
            )
        return StdioTransport(server.command, env=minimal_env(env), cwd=cwd)
    from mcptape.transports.http import open_http_transport  # httpx only when a session needs it

    transport: Transport = open_http_transport(server, base_dir=base_dir, env=dict(env))
    return transport
