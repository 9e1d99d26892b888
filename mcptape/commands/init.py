"""`mcptape init [-o FILE] [--name NAME] [--env NAME[=VALUE]]... [--protocol V] -- <server command...>`
(or `--url URL [--header 'Name: value']...` for an HTTP server).

Writes a first mcptape.yml from a live server: it connects with the scripted client `ci` uses
(client.record_session, over the transport `ci` opens: live/launch.py), lists tools,
resources, resource templates and prompts, and writes one session that lists the surface and
calls each tool with arguments built from its inputSchema (init/scaffold.py), reads each listed
resource (the first MAX_RESOURCES) and gets each prompt. Calls that may change something
(scaffold.tool_safety) are written commented out, so the first `ci` is safe to run anywhere; so are
calls that reach the outside world (`openWorldHint`), which a CI runner may not.

Probing: a tool annotated read-only, or not annotated but named like a query (scaffold's "query": get,
list, search...), is called once by init (init/probe.py) before the file is written; it stays active only if
it answered, and is commented out with the reason seen otherwise (an error on the example arguments, a
timeout, the network). `--safe` probes nothing: unannotated tools stay commented out, read-only ones
active unchecked. A tool that may write is never called. The summary says how much the gate covers.

Isolation: a stdio server is written with `private_home: true` (a fresh HOME and temp dir per run, so
what it keeps between runs is not drift), and an `npx pkg` / `uvx pkg` command gets the package's
version pinned (`pkg@x.y.z`, from the local install or the registry), so a release is not drift either.

Before writing, the session runs twice as ci runs it (ci/repeat.py's repeat_session), and the
normalize rules volatility/nondeterminism.py suggests for what differed go into the file: otherwise a clock
in an answer would make the first `ci` after `ci --update-golden` drift (`--no-trial` skips it).

The file is written only if it loads with config.load_config and passes `mcptape check`'s checks
(config/semantics.py), and never over an existing file (os.link refuses, with no race): exit 3
with the fix. Environment values that are secrets (redact/policy.py's rule) are written as
`${NAME}`, never as their value; a command line or a header holding a literal secret is refused
(write `${VAR}` in a header: ci interpolates it): mcptape.yml is committed. Server text in comments (descriptions, error messages) is one line, escaped.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml
from pydantic import ValidationError

from mcptape.ci.repeat import repeat_session
from mcptape.ci.session import RunContext
from mcptape.commands.output import say
from mcptape.commands.strength import init_summary
from mcptape.commands.surface import first_contact_text
from mcptape.config.interpolate import VAR_NAME, Interpolator, escape_refs
from mcptape.config.json_schema import SCHEMA_ID
from mcptape.config.load import LoadedConfig, load_config
from mcptape.config.models import ClientSettings, HttpServer, StdioServer, Step
from mcptape.config.secrets import refuse_url_credentials
from mcptape.config.semantics import check_config
from mcptape.errors import ConfigError, McptapeError, ServerError, WriteError
from mcptape.init.pinning import pin_packages
from mcptape.init.probe import probe_calls
from mcptape.init.scaffold import Hints, example_arguments, path_hints, prompt_arguments, tool_safety
from mcptape.live.client import LIST_METHODS, record_session, schema_violation
from mcptape.live.launch import open_transport
from mcptape.live.refusal import looks_like_version_refusal, refused_everything
from mcptape.logsafe import escape_controls
from mcptape.record.stdio import default_name
from mcptape.redact.policy import argv_secrets, secret_reason
from mcptape.tape.format import Tape
from mcptape.volatility.nondeterminism import (
    Volatile,
    find_volatile,
    fixed_by,
    path_candidates,
    suggest_rules,
    unfixed,
)
from mcptape.volatility.normalize import Normalizer

MAX_RESOURCES = 10  # a server may list thousands; the first few show the shape, the comment says so
LIST_STEPS = ("list_tools", "list_resources", "list_resource_templates", "list_prompts")
INIT_STEP_TIMEOUT = 30.0
INIT_SESSION_TIMEOUT = 120.0
DEFAULT_OUT = "mcptape.yml"
LEGACY_PROTOCOL = "2025-11-25"  # pinned for a server that dies on server/discover
TRIAL_GAP = 1.1  # seconds from the start of one trial run to the next (see _trial)


@dataclass(frozen=True)
class Options:
    server: tuple[str, ...]
    url: str | None
    out: str
    name: str | None
    env: tuple[str, ...] = ()
    trial: bool = True
    protocol: str | None = None
    headers: tuple[str, ...] = ()  # --header 'Name: value' (HTTP only)
    probe: bool = True  # --safe: call nothing that is not annotated read-only

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        server = list(args.server or [])
        if server and server[0] == "--":
            server = server[1:]
        return cls(server=tuple(server), url=args.url, out=args.out, name=args.name, env=tuple(args.env or ()),
                   trial=not args.no_trial, protocol=args.protocol, headers=tuple(args.header or ()),
                   probe=not getattr(args, "safe", False))


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
class Plan:
    """What the file says about one tool: its arguments, whether it runs, and why not."""

    arguments: dict[str, Any] | None
    active: bool
    why: str = ""  # why it is commented out (or, for a probed tool, why it runs)
    category: str = ""  # for the coverage line: may write | need the network | failed on example arguments | ...


@dataclass
class Trial:
    """What two runs of the written session showed: the normalize rules that make it stable."""

    rules: list[dict[str, Any]] = field(default_factory=list)  # suggest_rules' (path|pattern, replace, reason)
    unfixable: list[str] = field(default_factory=list)  # differences no rule fixes, one line each
    errors: list[str] = field(default_factory=list)  # runs that failed (redacted)
    recorded: list[dict[str, Any]] | None = None  # the second run's events, redacted: the gate's strength is measured on them


def run(options: Options) -> int:
    out = Path(options.out)
    if out.exists() or out.is_symlink():
        raise ConfigError(
            f"{out} already exists; init never overwrites a config",
            hint=f"write elsewhere with `mcptape init -o other.yml ...`, or move {out} away first",
        )
    directory = out.resolve().parent
    if not directory.is_dir():
        raise WriteError(f"{out}: cannot write the config: {directory} is not a directory",
                         hint="create the directory first, or pass -o with an existing directory")
    env_entries, env_values = _env_options(options.env)
    command, pinned = pin_packages(list(options.server), Path.cwd())
    named = options  # the session is named after the package, not its pinned version
    options = dataclasses.replace(options, server=tuple(command))
    server = _server_entry(options, out, env_entries)
    surface = _list_surface(server, base_dir=directory, env=env_values, pinned=pinned)
    if surface.legacy_protocol:
        server = {**server, "protocol": surface.legacy_protocol}
    name = _name(named, surface)
    hints = path_hints(options.server, Path.cwd()) + listed_hints(surface)
    plans = plan_calls(surface, hints, file_hint=_a_file(hints))
    if plans and any(p.active or p.category == "query" for p in plans.values()):
        plans = _probed(server, surface, plans, directory, env_values, probe=options.probe)
    config_arg = "" if out == Path(DEFAULT_OUT) else f" -c {shlex.quote(str(out))}"
    text = render_config(name, server, surface, hints=hints, plans=plans, config_arg=config_arg)
    trial = None
    try:
        loaded = None
        if options.trial:
            # The trial's config lives outside the directory: a server that lists the repository must
            # not see a file that exists only while init runs (its name is random, too).
            with tempfile.TemporaryDirectory(prefix="mcptape-init-") as scratch:
                draft = Path(scratch) / "mcptape.yml"
                loaded = _verified(draft, render_config(name, _absolute(server, directory), surface, hints=hints,
                                                        plans=plans, config_arg=config_arg), env_values)
                trial = _trial(loaded, http_unmanaged="url" in server and "start" not in server)
            text = render_config(name, server, surface, trial, hints=hints, plans=plans, config_arg=config_arg)
        fd, temp_name = tempfile.mkstemp(prefix=".mcptape-init-", suffix=".yml", dir=directory)
        os.close(fd)
    except OSError as e:
        raise WriteError(f"{out}: cannot write the config: {e.strerror or e}") from e
    temp = Path(temp_name)
    try:
        written = _verified(temp, text, env_values)
        _link(temp, out)
    finally:
        temp.unlink(missing_ok=True)
    for error in trial.errors if trial is not None else []:
        say(f"mcptape init: warning: a trial run of the session failed: {error}")
    coverage, called = _coverage(surface, plans)
    if surface.tools and not called:
        say(f"mcptape init: WARNING: the gate calls no tool at all ({coverage}): it checks only what the server "
            "lists. Uncomment the calls that are safe to run (see the reasons in the file)")
    sys.stdout.write(_next_steps(out, name, surface, trial, coverage))
    sys.stdout.write(init_summary(dataclasses.replace(written, path=out), trial.recorded if trial is not None else None))
    sys.stdout.write(first_contact_text(tools=surface.tools, prompts=surface.prompts, resources=surface.resources,
                                        resource_templates=surface.resource_templates))
    return 0


def _absolute(server: Mapping[str, Any], directory: Path) -> dict[str, Any]:
    """The entry as the trial's draft (elsewhere) needs it: its working directory absolute."""
    if "url" in server:
        return dict(server)
    return {**server, "cwd": str((directory / str(server.get("cwd", "."))).resolve())}


# -- the server -------------------------------------------------------------------------------------


def _env_options(raw: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """--env NAME=VALUE / --env NAME -> (what the file says, what the server gets now)."""
    written: dict[str, str] = {}
    values: dict[str, str] = {}
    for item in raw:
        name, eq, value = item.partition("=")
        if not VAR_NAME.fullmatch(name):
            raise ConfigError(f"--env {item}: expected NAME=VALUE or NAME (a variable of this environment)")
        if not eq:
            if name not in os.environ:
                raise ConfigError(f"--env {name}: {name} is not set here", hint=f"export {name}=... or pass --env {name}=VALUE")
            value = os.environ[name]
        values[name] = value
        # A secret, or a value taken from this environment, stays a reference: the file is committed.
        written[name] = f"${{{name}}}" if not eq or secret_reason(name, value) else value
    return written, values


def _server_entry(options: Options, out: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """The `servers:` entry as it is written (plain data; the loader validates it with the rest)."""
    if bool(options.server) == bool(options.url):
        raise ConfigError(
            "give the server to list: `mcptape init -- <server command...>` or `mcptape init --url URL`",
            hint="e.g. mcptape init -- python server.py, or mcptape init --url http://127.0.0.1:8765/mcp",
        )
    pinned = {"protocol": options.protocol} if options.protocol else {}
    if options.url:
        refuse_url_credentials(options.url)
        headers = _headers(options.headers)
        return {"url": options.url, **({"headers": headers} if headers else {}), **pinned}
    if options.headers:
        raise ConfigError("--header is for an HTTP server (--url); a stdio server gets variables with --env")
    _, secrets = argv_secrets(list(options.server))
    if secrets:
        raise ConfigError(
            f"the server command holds a secret ({', '.join(sorted(secrets))}); mcptape.yml is committed",
            hint="pass it through the environment: --env NAME and ${NAME} in the command",
        )
    entry: dict[str, Any] = {"command": list(options.server)}
    if env:
        entry["env"] = dict(env)
    # ci starts the server in the config file's directory: keep the directory init started it in.
    here, there = Path.cwd().resolve(), out.resolve().parent
    if here != there:
        entry["cwd"] = os.path.relpath(here, there)
    # A fresh HOME per run: a usage counter or cache the server keeps there is not drift.
    return {**entry, **pinned, "private_home": True}


def _headers(raw: Sequence[str]) -> dict[str, str]:
    """--header 'Name: value' -> the headers as written: a literal secret is refused (the file is
    committed), a `${VAR}` in a value is kept for ci to interpolate."""
    headers: dict[str, str] = {}
    for item in raw:
        name, colon, value = item.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not name or not value:
            raise ConfigError(f"--header {item!r}: expected 'Name: value', e.g. --header 'Authorization: Bearer ${{TOKEN}}'")
        if "${" not in value and secret_reason(name, value, header=True):
            raise ConfigError(
                f"--header {name}: its value is a secret, and mcptape.yml is committed",
                hint=f"write it as a variable and export it: --header '{name}: Bearer ${{TOKEN}}'",
            )
        headers[name] = value
    return headers


def _model(entry: Mapping[str, Any]) -> StdioServer | HttpServer:
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


def _list_surface(entry: Mapping[str, Any], *, base_dir: Path, env: Mapping[str, str],
                  pinned: Sequence[str] = ()) -> Surface:
    model = _model(entry)
    what = model.url if isinstance(model, HttpServer) else shlex.join(model.command)
    say(f"mcptape init: starting {_one_line(what, 120)}")
    for line in pinned:
        say(f"mcptape init: {line}")
    transport = open_transport(model, base_dir=base_dir, env=env)
    steps = [Step(action=a) for a in LIST_STEPS]  # type: ignore[arg-type]
    recording = record_session(transport, steps, ClientSettings(), session="init", protocol=model.protocol,
                               step_timeout=INIT_STEP_TIMEOUT, session_timeout=INIT_SESSION_TIMEOUT)
    legacy = None
    if recording.error is not None and not model.protocol and recording.negotiation is None \
            and "server/discover" in recording.error.message:
        # Some servers (rmcp 1.x among them) exit on a first request that is not `initialize`, so auto
        # negotiation never reaches its fallback: ci would fail the same way. The legacy handshake,
        # pinned in the file, is what such a server speaks.
        say("mcptape init: the server failed on server/discover (the 2026-07-28 handshake); trying initialize")
        retry = open_transport(model.model_copy(update={"protocol": LEGACY_PROTOCOL}), base_dir=base_dir, env=env)
        again = record_session(retry, steps, ClientSettings(), session="init", protocol=LEGACY_PROTOCOL,
                               step_timeout=INIT_STEP_TIMEOUT, session_timeout=INIT_SESSION_TIMEOUT)
        if again.error is None:
            recording, transport, legacy = again, retry, LEGACY_PROTOCOL
            say(f"mcptape init: it answered initialize: the file pins `protocol: {LEGACY_PROTOCOL}` for it")
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


def _name(options: Options, surface: Surface) -> str:
    raw = options.name or (default_name(list(options.server)) if options.server else surface.server_name) or "server"
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw).strip("-.") or "server"
    if options.name and name != options.name:
        raise ConfigError(f"--name {options.name!r}: a session name holds only letters, digits, _, . and -",
                          hint=f"e.g. --name {name}")
    return name


# -- the file ---------------------------------------------------------------------------------------

# A plain scalar starts with no YAML indicator (@ ` ~ & * ! | > ' " % # ...; a dash only before a word).
_PLAIN = re.compile(r"(?:[A-Za-z_./]|-(?=[A-Za-z0-9_-]))[A-Za-z0-9_./@:+=~-]*")
_NOT_PLAIN = re.compile(r"(?i)(y|n|yes|no|true|false|on|off|null|~)")


def yaml_scalar(value: Any) -> str:
    """A value as YAML flow text that reads back as exactly this value (JSON is valid YAML flow).

    A string is written plain when that reads back as the same string (not a number, a boolean,
    a date...: YAML's own resolver decides), else double-quoted with every character that is not
    printable escaped (\\u or \\U: YAML has both; JSON's surrogate pairs would read back as two).
    """
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and not _NOT_PLAIN.fullmatch(value) and _reads_back(value):
            return value
        # logsafe's escapes (\\x, \\u, \\U) are YAML's too: what acts or hides first, then what YAML cannot hold.
        text = escape_controls(json.dumps(value, ensure_ascii=False))
        return "".join(c if c.isprintable() or c == "\t" else
                       f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}" for c in text)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{yaml_scalar(str(k))}: {yaml_scalar(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(yaml_scalar(v) for v in value) + "]"
    return json.dumps(value)


def _reads_back(plain: str) -> bool:
    try:
        return bool(yaml.safe_load(f"[{plain}]") == [plain])
    except yaml.YAMLError:
        return False


def _one_line(text: Any, limit: int = 90) -> str:
    """Server text for a comment: one line, shortened, every character YAML or a terminal could act on
    escaped (a tool name or description may hold control, bidi or zero-width characters)."""
    words = " ".join(str(text or "").split())
    words = words if len(words) <= limit else words[: limit - 3].rstrip() + "..."
    words = escape_controls(words, lines=False)
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}" for c in words)


def escaped_surface(surface: Surface) -> Surface:
    """What the server listed, `${` escaped where ci would interpolate it (config/interpolate.py)."""
    lists = ("tools", "resources", "resource_templates", "prompts")
    return replace(surface, **{k: escape_refs(getattr(surface, k)) for k in lists})


def render_config(name: str, server: Mapping[str, Any], surface: Surface, trial: Trial | None = None,
                  *, hints: Hints = (), plans: Mapping[str, Plan] | None = None, config_arg: str = "") -> str:
    """The commented mcptape.yml for `surface` (see the module docstring). `config_arg`: ` -c FILE`
    when the file is not the default one, for the commands its header gives."""
    plans = plans if plans is not None else plan_calls(surface, hints)
    # What the server listed is written with `${` escaped (escaped_surface): its names, and the
    # arguments planned from its examples, under the names as written.
    surface = escaped_surface(surface)
    plans = {escape_refs(name): replace(plan, arguments=escape_refs(plan.arguments)) for name, plan in plans.items()}
    lines = [
        f"# yaml-language-server: $schema={SCHEMA_ID}",
        f"# Written by `mcptape init` from what {name} listed. Review it, then record the golden tapes:",
        f"#   mcptape ci{config_arg} --update-golden",
        f"# and gate: `mcptape ci{config_arg}`. Each golden tape gets a .tape.view.txt beside it: the same tape,",
        "# one line per value, for reviewing its diff (see the README).",
        "version: 1",
        "golden_dir: tapes                # one golden tape per session; commit them",
        "servers:",
        f"  {name}:",
    ]
    for key, value in server.items():
        if key == "env":
            lines.append("    env:                         # the only variables the server gets (besides PATH, HOME, ...)")
            lines.extend(f"      {k}: {yaml_scalar(v)}" for k, v in value.items())
        elif key == "private_home":
            lines.append(f"    private_home: {yaml_scalar(value)}            # a fresh HOME and temp dir each run: "
                         "what the server keeps there is not drift")
        else:
            lines.append(f"    {key}: {yaml_scalar(value)}")
    lines += ["sessions:", f"  - name: {name}", f"    server: {name}", "    steps:"]
    for action in LIST_STEPS:
        items = getattr(surface, key_attr(action))
        if items is None:
            reason = surface.refused.get(action, "")
            lines.append(f"      # - {action}        # not offered: the server answered {_one_line(reason, 60)!r}")
        else:
            lines.append(f"      - {action}")
    for tool in surface.tools or []:
        plan = plans.get(str(tool.get("name")))
        if plan is not None:
            lines += _call_lines(tool, plan)
    resources = surface.resources or []
    for resource in resources[:MAX_RESOURCES]:
        uri = resource.get("uri")
        if isinstance(uri, str) and uri:
            lines.append(f"      - read_resource: {yaml_scalar(uri)}")
    if len(resources) > MAX_RESOURCES:
        lines.append(f"      # {len(resources) - MAX_RESOURCES} more resources are listed; init reads the first "
                     f"{MAX_RESOURCES}. Add a read_resource step for any other you want gated.")
    for template in surface.resource_templates or []:
        lines.append(f"      # - read_resource: {yaml_scalar(str(template.get('uriTemplate', '')))}"
                     "   # a template: fill in its {parameters} to read one")
    for prompt in surface.prompts or []:
        pname = prompt.get("name")
        if not isinstance(pname, str) or not pname:
            continue
        lines.append(f"      - get_prompt: {yaml_scalar(pname)}")
        arguments = prompt_arguments(prompt, hints)
        if arguments:
            lines.append(f"        arguments: {yaml_scalar(arguments)}   # example values: put real ones here")
    if not any(line.startswith("      - ") for line in lines):  # a session needs a step
        lines.append("      - ping                       # the server lists nothing: its answer to ping is gated")
    return "\n".join(lines + _normalize_lines(trial)) + "\n"


def _normalize_lines(trial: Trial | None) -> list[str]:
    """The `normalize:` block: the rules the trial runs call for, or a commented example."""
    lines = []
    if trial is not None and trial.errors:
        lines.append("# init's trial run of the session failed; fix the step it names before recording:")
        lines += [f"#   {_one_line(e, 200)}" for e in trial.errors]
    if trial is not None and trial.unfixable:
        lines.append("# init's two trial runs differed where no normalize rule helps (see `mcptape ci --repeat 3`):")
        lines += [f"#   {_one_line(u, 200)}" for u in trial.unfixable]
    if trial is None or not trial.rules:
        return lines + [
            "# Volatile values (times, ids) that are not drift: `mcptape ci --repeat 3` suggests rules.",
            "# normalize:",
            '#   - path: "$..timestamp"',
            '#     replace: "<TIMESTAMP>"',
        ]
    lines.append("normalize:                         # values that differed between init's two trial runs")
    for rule in trial.rules:
        key = "path" if rule.get("path") else "pattern"
        lines.append(f"  - {key}: {json.dumps(rule[key], ensure_ascii=False)}")
        if rule.get("order"):
            lines.append(f"    order: {rule['order']}")
        else:
            lines.append(f"    replace: {json.dumps(rule['replace'], ensure_ascii=False)}")
        if rule.get("reason"):
            lines.append(f"    reason: {json.dumps(_one_line(rule['reason'], 200), ensure_ascii=False)}")
    return lines


def plan_calls(surface: Surface, hints: Hints, file_hint: str | None = None) -> dict[str, Plan]:
    """Each listed tool's plan before probing: read-only ones active, the rest commented out with why."""
    plans: dict[str, Plan] = {}
    for tool in surface.tools or []:
        tname = tool.get("name")
        if not isinstance(tname, str) or not tname or tname in plans:
            continue
        schema = tool.get("inputSchema")
        own = (("path", file_hint), ("file", file_hint)) if file_hint and "file" in re.split(r"[^a-z]+", tname.lower()) else ()
        arguments = example_arguments(schema, own + hints)
        problem = "no valid arguments could be built from its inputSchema" if arguments is None else \
            schema_violation(arguments, schema)
        safety = tool_safety(tool)
        if not safety.safe and not safety.probe:
            category = "need the network" if safety.kind == "network" else "may write"
            plans[tname] = Plan(arguments, False, safety.reason, category)
        elif problem is not None:
            plans[tname] = Plan(arguments, False, f"fill in its arguments ({_one_line(problem, 120)})",
                                "need arguments filled in")
        elif safety.probe:
            plans[tname] = Plan(arguments, False, f"{safety.reason}: not probed (--safe)", "query")
        else:
            plans[tname] = Plan(arguments, True)
    return plans


def _probed(entry: Mapping[str, Any], surface: Surface, plans: dict[str, Plan], directory: Path,
            env: Mapping[str, str], *, probe: bool) -> dict[str, Plan]:
    """Call the read-only and (unless --safe) the query-named tools once; keep those that answered."""
    wanted = [(n, p.arguments or {}) for n, p in plans.items() if p.active or (probe and p.category == "query")]
    if not probe:  # --safe: nothing is called before the user says so; read-only ones run unchecked
        return plans
    if not wanted:
        return plans
    model = _model(entry)
    outcomes = probe_calls(model, wanted, base_dir=directory, env=env, protocol=model.protocol,
                           progress=lambda line: say(f"mcptape init: {line}"))
    out = dict(plans)
    for tname, _ in wanted:
        outcome = outcomes.get(tname)
        plan = plans[tname]
        if outcome is None:
            continue
        if outcome.ok:
            why = "" if plan.active else "not annotated readOnlyHint; named like a query, and init's call answered"
            out[tname] = Plan(plan.arguments, True, why, "probed" if not plan.active else "")
            continue
        detail = _one_line(outcome.detail, 100)
        if outcome.kind == "network":
            out[tname] = Plan(plan.arguments, False, f"it needs the network (init's call answered: {detail})",
                              "need the network")
        elif outcome.kind == "timeout":
            out[tname] = Plan(plan.arguments, False, f"init's call timed out ({detail})", "timed out")
        else:
            out[tname] = Plan(plan.arguments, False, f"init's call with these example arguments failed ({detail}); "
                              "put real ones here", "failed on example arguments")
    return out


def _coverage(surface: Surface, plans: Mapping[str, Plan]) -> tuple[str, int]:
    """"12 of 26 tools called; 14 commented out (8 may write, ...)", and how many are called."""
    total = len(plans)
    called = sum(1 for p in plans.values() if p.active)
    probed = sum(1 for p in plans.values() if p.active and p.category == "probed")
    counts: dict[str, int] = {}
    for plan in plans.values():
        if not plan.active:
            label = "not annotated readOnlyHint, not probed (--safe)" if plan.category == "query" else plan.category
            counts[label] = counts.get(label, 0) + 1
    line = f"{called} of {total} tool{'s' * (total != 1)} called"
    if probed:
        line += f" ({probed} unannotated, kept because init's call answered)"
    if counts:
        why = ", ".join(f"{n} {label}" for label, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        line += f"; {total - called} commented out ({why})"
    return line, called


def _call_lines(tool: Mapping[str, Any], plan: Plan) -> list[str]:
    tname = str(tool.get("name"))
    step = [f"- call: {yaml_scalar(tname)}"]
    if plan.arguments:
        step.append(f"  arguments: {yaml_scalar(plan.arguments)}")
    about = _one_line(tool.get("description"))
    head = [f"      # {_one_line(tname, 60)}: {about}"] if about else []
    if plan.active:
        note = [f"      # runs: {plan.why}"] if plan.why else []
        return head + note + [f"      {s}" for s in step]
    return head + [f"      # not run: {plan.why}; uncomment to record it"] + [f"      # {s}" for s in step]


def listed_hints(surface: Surface) -> Hints:
    """Argument values the server's own lists offer: the first resource URI it listed."""
    for resource in surface.resources or []:
        uri = resource.get("uri")
        if isinstance(uri, str) and uri:
            return (("uri", uri),)
    return ()


def _a_file(hints: Hints) -> str | None:
    """A file that exists under the directory the server was started on (or here): the likeliest path
    argument of a tool named like `read_file` (a README first; hidden files never)."""
    base = next((value for key, value in hints if key == "path"), None)
    root = Path(base) if base else Path(".")
    try:
        files = sorted(p for p in root.iterdir() if p.is_file() and not p.name.startswith("."))
    except OSError:
        return None
    files.sort(key=lambda p: (not p.name.lower().startswith("readme"), p.name))
    return str(root / files[0].name) if files and base else (files[0].name if files else None)


def _verified(temp: Path, text: str, env: Mapping[str, str]) -> LoadedConfig:
    """`text` written to `temp`, loaded and checked as `mcptape check` does; a failure is init's bug."""
    try:
        temp.write_text(text, encoding="utf-8")
    except OSError as e:
        raise WriteError(f"{temp.parent}: cannot write the config: {e.strerror or e}") from e
    try:
        loaded = load_config(temp, env={**os.environ, **env})
        check_config(loaded)
    except McptapeError as e:
        raise McptapeError(f"init built a config that does not load ({e.message}); nothing was written",
                           hint="please report it with the server's tools/list answer") from e
    return loaded


def _link(temp: Path, out: Path) -> None:
    """Put the verified file at `out` unless something is there: link, unlike rename, never replaces."""
    try:
        os.link(temp, out)
    except FileExistsError as e:
        raise ConfigError(f"{out} already exists; init never overwrites a config",
                          hint=f"write elsewhere with -o, or move {out} away first") from e
    except OSError as e:
        raise WriteError(f"{out}: cannot write the config: {e.strerror or e}") from e


def _trial(loaded: LoadedConfig, *, http_unmanaged: bool = False) -> Trial:
    """Run the session twice, as ci runs it, and keep the normalize rules that make it stable.

    Two runs, the second starting at least TRIAL_GAP seconds after the first: a clock printed in
    seconds ("created at 12:58:40 AM") must tick between them, or it looks constant here and
    drifts on the first `ci`. Each run starts the server afresh (a stdio process, an HTTP `start:`
    command), so state one run leaves is seen as what it is; an HTTP server mcptape does not start
    keeps its state between the runs, and init says so.
    """
    session = loaded.config.sessions[0]
    ctx = RunContext(loaded=loaded, update=False, out_dir=None, golden_dir=loaded.golden_dir)
    if http_unmanaged:
        say("mcptape init: warning: the trial runs reach the same HTTP server process (mcptape does not start it): "
            "state it keeps between runs looks stable here; add `start:` to the server entry so each run starts it")
    started = time.monotonic()
    say("mcptape init: trial run 1 of 2 (finding values that change from run to run)")
    first = repeat_session(ctx, session, 1)
    if first.errors:  # the second run would fail the same way: say it once
        return Trial(errors=[e.partition(": ")[2] or e for e in first.errors])
    time.sleep(max(0.0, TRIAL_GAP - (time.monotonic() - started)))
    say("mcptape init: trial run 2 of 2")
    second = repeat_session(ctx, session, 1)
    trial = Trial(errors=[e.partition(": ")[2] or e for e in second.errors])
    if trial.errors:
        return trial
    trial.recorded = second.raw[0]  # for the strength of the gate written (commands/strength.py)
    volatiles = find_volatile([Tape(header={}, events=events) for events in first.normalized + second.normalized])
    trial.rules = narrow_rules(suggest_rules(volatiles), volatiles)
    for v in unfixed(volatiles, trial.rules):  # a text or list in random order: no placeholder fits it
        ordered = _order_rule(v)
        if ordered is not None and not fixed_by(v, trial.rules):
            trial.rules.append(ordered)
    trial.unfixable = [v.line() for v in unfixed(volatiles, trial.rules)]
    return trial


def _order_rule(v: Volatile) -> dict[str, Any] | None:
    """An `order: sorted` rule for a place whose runs hold the same items in another order, or None."""
    if not all(_is_text(x) or isinstance(x, list) for x in v.values):
        return None
    for candidate in path_candidates(v):
        rule: dict[str, Any] = {"path": candidate["path"], "order": "sorted"}
        if fixed_by(v, [rule]):
            rule["reason"] = _order_reason(v)
            return rule
    return None


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and len(value.split()) >= 4


def narrow_rules(rules: Sequence[dict[str, Any]], volatiles: Sequence[Volatile]) -> list[dict[str, Any]]:
    """The rules, each checked to keep a real change visible: a rule that would also hide a change the
    trial did not see (its placeholder swallows a whole text: an item added to a listed text) becomes a
    canonical order when the runs differ only in the order of the same items, and is dropped otherwise
    (the difference is then reported as one no rule fixes)."""
    out: list[dict[str, Any]] = []
    for rule in rules:
        clean: dict[str, Any] = {k: rule[k] for k in ("path", "pattern", "replace") if k in rule}
        covered = [v for v in volatiles if v.kind == "value" and fixed_by(v, [clean])]
        texts = [x for v in covered for x in v.values if _is_text(x)]
        if not texts:
            out.append(rule)
            continue
        if "pattern" in clean:
            probe = Normalizer([SimpleNamespace(**clean)])
            if all(probe.text(t + " and one more") != probe.text(t) for t in texts):
                out.append(rule)  # the placeholder covers a token inside the text: a change elsewhere shows
                continue
        if "pattern" in clean:
            ordered: dict[str, Any] | None = {"pattern": clean["pattern"], "order": "sorted"}
        else:  # by key, not by the list index the trial saw (a list in random order moves its items)
            ordered = next((r for r in map(_order_rule, covered) if r is not None), None)
        if ordered is not None and covered and all(fixed_by(v, [ordered]) for v in covered):
            out.append({**ordered, "reason": _order_reason(covered[0])})
    return out


def _order_reason(v: Volatile) -> str:
    return (f"the same items in {v.distinct} different orders in {v.runs} runs at {v.where} · {v.path}: put in a "
            "canonical order (an item added or removed still drifts)")


def _next_steps(out: Path, name: str, surface: Surface, trial: Trial | None, coverage: str = "") -> str:
    config = "" if out == Path(DEFAULT_OUT) else f" -c {shlex.quote(str(out))}"
    tapes = shlex.quote(str(out.parent / "tapes")) + "/"  # golden_dir, relative to the config file
    tools = surface.tools or []
    rules = ""
    if trial is not None:
        rules = ", the trial run failed (see the warning)" if trial.errors else \
            f", {len(trial.rules)} normalize rule(s) from two trial runs"
    steps = [
        (f"mcptape ci{config} --update-golden", "record the golden tapes"),
        (f"git status {tapes}; git diff", "review them: they are the contract"),
        (f"git add {shlex.quote(str(out))} {tapes} && git commit -m 'mcptape: golden tapes'", ""),
    ]
    width = max(len(command) for command, _ in steps)
    lines = [f"  {command:<{width}}  # {why}" if why else f"  {command}" for command, why in steps]
    return (
        f"wrote {out}: session {name}, {len(tools)} tool{'s' * (len(tools) != 1)} listed{rules}; calls that may change "
        "something are commented out (see the file)\n" + (f"coverage: {coverage}\n" if tools else "")
        + "next:\n" + "\n".join(lines) + "\n"
        "  then add the workflow (uses: mcptape/action@v1) so every pull request is gated: see the README\n"
    )
