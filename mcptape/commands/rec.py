"""`mcptape rec [--out TAPE] [--name NAME] -- <server command...>` (or `--listen HOST:PORT --upstream URL`).

Stdout is the MCP wire: everything human goes to stderr (`say`). This module reads the options,
names the session and its tape, collects the secrets of the command line and the environment
(redact/policy.py's rule) and says which cannot be scrubbed; recording over stdio is
record/stdio.py's, over HTTP record/http.py's (imported for --listen only: httpx).
Exit codes: 0 the client ended the session, 3 the server exited mid-session or rec could not
record, 4 a secret survived redaction, 129/130/143 rec was interrupted.
"""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from mcptape.commands.grammar import Output, check_outputs
from mcptape.commands.output import say
from mcptape.errors import EXIT_OK, ConfigError, McptapeError
from mcptape.publish.telemetry import TapeTrace, require_sdk
from mcptape.record.stdio import default_name, record, strip_command_secrets
from mcptape.redact.policy import command_secrets, own_text_secrets
from mcptape.tape.format import TAPE_SUFFIX, make_header


@dataclass(frozen=True)
class Options:
    out: str | None
    name: str | None
    listen: str | None
    upstream: str | None
    server: tuple[str, ...]  # the server command, after `--`
    allow_hosts: tuple[str, ...] = ()  # --allow-host: names --listen answers besides the loopback ones
    otel: bool = False  # --otel: export the session as a trace when the tape is written (publish/telemetry.py)
    otel_payloads: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        server = list(args.server or [])
        if server and server[0] == "--":
            server = server[1:]
        return cls(out=args.out, name=args.name, listen=args.listen, upstream=args.upstream, server=tuple(server),
                   allow_hosts=tuple(args.allow_host), otel=args.otel or args.otel_payloads,
                   otel_payloads=args.otel_payloads)


def run(options: Options) -> int:
    if options.listen or options.upstream:
        if options.otel or options.otel_payloads:
            raise ConfigError("--otel records stdio sessions only; rec --listen does not export traces yet")
        return _rec_http(options)
    if options.allow_hosts:
        raise ConfigError("--allow-host names what rec --listen answers; a stdio recording listens on no port",
                          hint="mcptape rec --listen 127.0.0.1:8765 --upstream URL --allow-host NAME")
    command = list(options.server)
    if not command:
        raise McptapeError("no server command given", hint="mcptape rec [--out TAPE] [--name NAME] -- python server.py")
    name = options.name or default_name(command)
    out = Path(options.out) if options.out else Path("tapes") / f"{name}{TAPE_SUFFIX}"
    check_outputs([Output("--out", str(out), artifact=True)])
    clean_command, _ = strip_command_secrets(command)
    # GITHUB_TOKEN's value is a secret, AUTHOR_NAME's and GIT_AUTHOR_EMAIL's are not.
    secrets = command_secrets(command, os.environ)
    # Secrets whose values are mcptape's own text (a JSON key, a method name) cannot be scrubbed
    # without rewriting the tape's structure: said, never the values (redact/policy.py).
    for source in own_text_secrets(secrets):
        say(f"mcptape rec: {source}: its value is also a word of MCP or of the tape format, so it is "
            "not scrubbed from the tape; give it a real secret value if it is one")
    header = make_header(name, transport="stdio", server={"command": clean_command})
    otel = None
    if options.otel or options.otel_payloads:
        require_sdk()
        otel = TapeTrace(name, payloads=options.otel_payloads)
    return record(command, out, header, secrets=secrets, say=say, otel=otel)


# `--upstream '${VAR}'`: the URL from the environment, so a password in it is not on the command
# line, where `ps` shows it to every user of the machine (play --fallback-url passes it so).
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _upstream_from_env(value: str) -> str:
    m = _ENV_REF.fullmatch(value.strip())
    if m is None:
        return value
    url = os.environ.get(m.group(1), "")
    if not url:
        raise ConfigError(f"--upstream {value}: {m.group(1)} is not set", hint=f"export {m.group(1)}=http://host:port/mcp")
    return url


def _rec_http(options: Options) -> int:
    """Record over HTTP until SIGINT/SIGTERM; the tape gets its footer when the proxy stops."""
    from mcptape.record.http import record_http, safe_url  # httpx: only rec --listen pays for it

    upstream, out, name = http_plan(options)
    messages = record_http(
        upstream, options.listen or "", out, name, allow_hosts=options.allow_hosts, say=say,
        on_ready=lambda url: say(f"mcptape rec: listening on {url} -> {safe_url(upstream)}; recording to {out} "
                                 "(stop with Ctrl-C)"),
    )
    say(f"mcptape rec: wrote {messages} message(s) to {out}")
    return EXIT_OK


def http_plan(options: Options) -> tuple[str, Path, str]:
    """What rec --listen records (also the library's `record` of a URL): the upstream URL (from the
    environment for `${VAR}`), the tape and the session's name; a ConfigError for options that do not fit."""
    from mcptape.record.http import safe_url  # httpx: only rec --listen pays for it

    if not options.upstream:
        raise ConfigError("rec --listen needs --upstream URL (the server's MCP endpoint)")
    if not options.listen:
        raise ConfigError("rec --upstream records over HTTP and needs --listen HOST:PORT (where the client connects)",
                          hint="mcptape rec --listen 127.0.0.1:8766 --upstream http://127.0.0.1:8765/mcp")
    if options.server:
        raise ConfigError("rec --listen records an HTTP server: give --upstream URL, not a server command")
    upstream = _upstream_from_env(options.upstream)
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"--upstream {safe_url(upstream)!r}: expected an http(s) URL, e.g. http://127.0.0.1:3001/mcp")
    if options.out:
        out = Path(options.out)
        name = options.name or out.name.removesuffix(TAPE_SUFFIX).removesuffix(".jsonl")
    else:
        name = options.name or "session"
        out = Path("tapes") / f"{name}{TAPE_SUFFIX}"
    check_outputs([Output("--out", str(out), artifact=True)])  # a recording never replaces a file
    return upstream, out, name
