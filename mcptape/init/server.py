"""What init knows of the server: the `servers:` entry it writes, and what the server lists.

Owns the entry (a stdio command, or a URL with the command that starts it as `start:`; `private_home`,
the working directory, a pinned protocol) and the listing: the scripted client ci uses
(live/client.record_session over live/launch.open_transport) lists tools, resources, templates and
prompts, as a Surface. A server that dies on server/discover (rmcp 1.x) is listed again after
`initialize`, whose protocol the entry then pins; a timeout says how to give it longer (init's
--timeout, not config keys of a file that does not exist yet); a version refusal says --protocol;
a server that refuses every request after its handshake is named (live/refusal.py).

Progress goes to the `progress` callback the command gives (it prints; this module never does).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcptape.config.interpolate import Interpolator
from mcptape.config.models import ClientSettings, HttpServer, StdioServer, Step
from mcptape.config.secrets import refuse_url_credentials
from mcptape.errors import ConfigError, ServerError, ServerTimeout
from mcptape.init.text import one_line
from mcptape.live.client import LIST_METHODS, record_session
from mcptape.live.launch import open_transport
from mcptape.live.refusal import looks_like_version_refusal, refused_everything
from mcptape.redact.policy import argv_secrets

LIST_STEPS = ("list_tools", "list_resources", "list_resource_templates", "list_prompts")
LEGACY_PROTOCOL = "2025-11-25"  # pinned for a server that dies on server/discover or answers calls only after initialize
Progress = Callable[[str], None]


@dataclass
class Surface:
    """What the server listed; None for a list it does not offer (an error answer)."""

    tools: list[dict[str, Any]] | None = None
    resources: list[dict[str, Any]] | None = None
    resource_templates: list[dict[str, Any]] | None = None
    prompts: list[dict[str, Any]] | None = None
    server_name: str | None = None
    refused: dict[str, str] = field(default_factory=dict)  # list step -> the error it got
    legacy_protocol: str | None = None  # the server died on server/discover and answered initialize at this


@dataclass(frozen=True)
class Limits:
    """How long init waits: one step (the server's start included), and the whole listing."""

    step: float = 30.0
    session: float = 120.0

    @classmethod
    def of(cls, step: float | None) -> Limits:
        """--timeout SECONDS (None: the defaults): the listing gets enough for a few pages at that pace."""
        return cls() if step is None else cls(step, max(cls.session, 4 * step))


def server_entry(*, command: Sequence[str], url: str | None, headers: Mapping[str, str], env: Mapping[str, str],
                 protocol: str | None, config_dir: Path) -> dict[str, Any]:
    """The `servers:` entry as it is written (plain data; the loader validates it with the rest).
    A URL with a command is an HTTP server the command starts: written as `start:`, so each run (ci's,
    init's trial runs) starts it afresh, as a stdio server is, and state it keeps in its process is
    not carried from one run into the next. `headers` and `env` are as written (secrets as `${NAME}`)."""
    if not command and not url:
        raise ConfigError(
            "give the server to list: `mcptape init -- <server command...>` or `mcptape init --url URL`",
            hint="e.g. mcptape init -- python server.py, or mcptape init --url http://127.0.0.1:8765/mcp "
                 "[-- <the command that starts it>]",
        )
    pinned = {"protocol": protocol} if protocol else {}
    if headers and not url:
        raise ConfigError("--header is for an HTTP server (--url); a stdio server gets variables with --env")
    if url:
        refuse_url_credentials(url)
        if not command:
            if env:  # nothing init or ci starts would get them: refused, not written and ignored
                raise ConfigError("--env passes variables to a server init starts; this HTTP server (--url, no "
                                  "command after --) is not started by init",
                                  hint="send what it needs as a header: --header 'Authorization: Bearer ${TOKEN}', "
                                  "or give the command that starts it after --")
            return {"url": url, **({"headers": dict(headers)} if headers else {}), **pinned}
    _, secrets = argv_secrets(list(command))
    if secrets:
        raise ConfigError(
            f"the server command holds a secret ({', '.join(sorted(secrets))}); mcptape.yml is committed",
            hint="pass it through the environment: --env NAME and ${NAME} in the command",
        )
    entry: dict[str, Any] = {"command": list(command)} if not url else \
        {"url": url, **({"headers": dict(headers)} if headers else {}), "start": list(command)}
    if env:
        entry["env"] = dict(env)
    # ci starts the server in the config file's directory: keep the directory init started it in.
    here, there = Path.cwd().resolve(), config_dir.resolve()
    if here != there:
        entry["cwd"] = os.path.relpath(here, there)
    # A fresh HOME per run: a usage counter or cache the server keeps there is not drift.
    return {**entry, **pinned, "private_home": True}


def server_model(entry: Mapping[str, Any]) -> StdioServer | HttpServer:
    """The entry as ci will read it (its `env` is passed apart, as values)."""
    fields = {k: v for k, v in entry.items() if k != "env"}
    if "headers" in fields:  # `${VAR}` as ci reads it (config/interpolate.py), for this listing
        fields["headers"] = Interpolator(os.environ, "--header", {}).walk(fields["headers"], ("headers",))
    if "url" in fields:  # `--url 'http://user:${MCP_PASSWORD}@host/mcp'` (refuse_url_credentials)
        fields["url"] = Interpolator(os.environ, "--url", {}).interpolate(fields["url"], ("url",))
    try:
        return HttpServer(**fields) if "url" in entry else StdioServer(**fields)
    except ValidationError as e:  # what the options say, checked by the models the config is checked by
        first = e.errors()[0]
        where = {"url": "--url", "protocol": "--protocol"}.get(str(first["loc"][0]), "the server command")
        raise ConfigError(f"{where}: {first['msg']}") from None


def list_surface(entry: Mapping[str, Any], *, base_dir: Path, env: Mapping[str, str], limits: Limits,
                 progress: Progress) -> Surface:
    """What the server lists (module docstring: the fallbacks and what a failure says)."""
    model = server_model(entry)
    what = model.url if isinstance(model, HttpServer) else shlex.join(model.command)
    progress(f"starting {one_line(what, 120)}")
    transport = open_transport(model, base_dir=base_dir, env=env)
    steps = [Step(action=a) for a in LIST_STEPS]  # type: ignore[arg-type]
    recording = record_session(transport, steps, ClientSettings(), session="init", protocol=model.protocol,
                               step_timeout=limits.step, session_timeout=limits.session)
    legacy = None
    if recording.error is not None and not model.protocol and recording.negotiation is None \
            and "server/discover" in recording.error.message:
        # Some servers (rmcp 1.x among them) exit on a first request that is not `initialize`, so auto
        # negotiation never reaches its fallback: ci would fail the same way. The legacy handshake,
        # pinned in the file, is what such a server speaks.
        progress("the server failed on server/discover (the 2026-07-28 handshake); trying initialize")
        retry = open_transport(model.model_copy(update={"protocol": LEGACY_PROTOCOL}), base_dir=base_dir, env=env)
        again = record_session(retry, steps, ClientSettings(), session="init", protocol=LEGACY_PROTOCOL,
                               step_timeout=limits.step, session_timeout=limits.session)
        if again.error is None:
            recording, transport, legacy = again, retry, LEGACY_PROTOCOL
            progress(f"it answered initialize: the file pins `protocol: {LEGACY_PROTOCOL}` for it")
    if isinstance(recording.error, ServerTimeout):
        # The client's hint names config keys, of a file that does not exist yet: init's own option is the fix.
        longer = int(max(90, 3 * limits.step))
        raise ServerTimeout(f"listing the server failed: {recording.error.message}",
                            hint=f"if the server is just slow (to start, or to list), give each step longer: "
                            f"mcptape init --timeout {longer} ... (written as the session's step_timeout)")
    if recording.error is not None:
        # --protocol is the fix only when the failure reads as a refused version (live/refusal.py).
        hint = recording.error.hint or (
            "the server refused the protocol version: pin one it speaks with --protocol (--protocol 2025-11-25 for the legacy handshake)"
            if not model.protocol and looks_like_version_refusal(f"{recording.error.message} {transport.stderr_tail()}")
            else None)
        raise type(recording.error)(f"listing the server failed: {recording.error.message}", hint=hint)
    refusal = refused_everything(recording.events)
    if refusal is not None:
        raise ServerError(f"listing the server failed: {refusal[0]}", hint=refusal[1])
    surface = Surface(legacy_protocol=legacy)
    info = recording.server_info or {}
    surface.server_name = info.get("name") if isinstance(info.get("name"), str) else None
    for number, action in enumerate(LIST_STEPS, start=1):
        _, key = LIST_METHODS[action]
        items: list[dict[str, Any]] = []
        refused = None
        for event in recording.events:
            if event.get("step") != number or event.get("dir") != "s2c":
                continue
            msg = event.get("msg")
            if not isinstance(msg, dict):
                continue
            if event.get("kind") == "error":
                refused = str((msg.get("error") or {}).get("message", "error"))
            elif event.get("kind") == "response":
                result = msg.get("result")
                page = result.get(key) if isinstance(result, dict) else None
                items.extend(x for x in page or [] if isinstance(x, dict))
        if refused is not None and not items:
            surface.refused[action] = refused
            continue
        setattr(surface, key_attr(action), items)
    return surface


def key_attr(action: str) -> str:
    """The Surface field a list step fills."""
    return {"list_tools": "tools", "list_resources": "resources",
            "list_resource_templates": "resource_templates", "list_prompts": "prompts"}[action]
