"""`mcptape init [-o FILE] [--name NAME] [--env NAME[=VALUE]]... [--protocol V] [--timeout SECONDS] -- <server command...>`
(or `--url URL [--header 'Name: value']... [-- <the command that starts it>]` for an HTTP server).

Writes a first mcptape.yml from a live server. This module reads the options, prints, and picks the
exit code; the planning is init/'s (its package docstring lists the steps): the server entry and the
listing (init/server.py), what to call and why not (init/plan.py, with init/probe.py and
init/scaffold.py), the trial runs and their rules (init/trial.py), and the file's text and its one
checked write (init/config_file.py). An `npx pkg` / `uvx pkg` command gets its package pinned first
(init/pinning.py).

Options read here: `--env NAME` passes this environment's value and writes `${NAME}`, and a secret
value (redact/policy.py's rule) is written as `${NAME}` too, never as itself; `--header` values are
written as given, a literal secret refused (write `${VAR}`: ci interpolates it), since mcptape.yml is
committed; `--no-probe` probes nothing; `--no-trial` skips the trial runs; `--timeout` is one step's
limit, written as the session's step_timeout. Exit 0 once the file is written; 3 when nothing was
(no server given, it could not be listed, the file exists or cannot be written).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcptape.commands.output import say
from mcptape.commands.strength import init_summary
from mcptape.commands.surface import first_contact_text
from mcptape.config.interpolate import VAR_NAME
from mcptape.config.load import LoadedConfig
from mcptape.errors import ConfigError, WriteError
from mcptape.init.config_file import GOLDEN_DIR, link_new, render_config, verified
from mcptape.init.pinning import pin_packages
from mcptape.init.plan import Coverage, Plan, clear_of_goldens, listed_hints, plan_calls, probed
from mcptape.init.scaffold import path_hints
from mcptape.init.server import Limits, Surface, list_surface, server_entry
from mcptape.init.trial import Trial, trial_rounds
from mcptape.record.stdio import default_name
from mcptape.redact.policy import secret_reason

DEFAULT_OUT = "mcptape.yml"


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
    probe: bool = True  # --no-probe: call nothing that is not annotated read-only
    timeout: float | None = None  # --timeout SECONDS: one step's limit, written as the session's step_timeout

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        server = list(args.server or [])
        if server and server[0] == "--":
            server = server[1:]
        timeout = args.timeout
        if timeout is not None and not 0 < timeout < float("inf"):
            raise ConfigError(f"--timeout {timeout:g}: seconds one step may take, more than 0", hint="e.g. --timeout 90")
        return cls(server=tuple(server), url=args.url, out=args.out, name=args.name, env=tuple(args.env or ()),
                   trial=not args.no_trial, protocol=args.protocol, headers=tuple(args.header or ()),
                   probe=not args.no_probe, timeout=timeout)


def _progress(line: str) -> None:
    say(f"mcptape init: {line}")


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
    headers = _headers(options.headers) if options.url else {}
    if options.headers and not options.url:
        raise ConfigError("--header is for an HTTP server (--url); a stdio server gets variables with --env")
    command, pinned = pin_packages(list(options.server), Path.cwd())
    server = server_entry(command=command, url=options.url, headers=headers, env=env_entries,
                          protocol=options.protocol, config_dir=directory)
    for line in pinned:
        _progress(line)
    limits = Limits.of(options.timeout)
    surface = list_surface(server, base_dir=directory, env=env_values, limits=limits, progress=_progress)
    if surface.legacy_protocol:
        server = {**server, "protocol": surface.legacy_protocol}
    name = _name(options, surface)  # after the package, not its pinned version
    hints = path_hints(command, Path.cwd()) + listed_hints(surface)
    plans = clear_of_goldens(plan_calls(surface, hints, root=Path.cwd()), Path.cwd(), directory / GOLDEN_DIR)
    if plans and any(p.active or p.category == "query" for p in plans.values()):
        plans, legacy = probed(server, plans, directory, env_values, probe=options.probe, start_timeout=limits.step,
                               progress=_progress)
        if legacy:
            server = {**server, "protocol": legacy}
    config_arg = "" if out == Path(DEFAULT_OUT) else f" -c {shlex.quote(str(out))}"

    def text_of(entry: Mapping[str, Any], plans: Mapping[str, Plan], trial: Trial | None = None) -> str:
        return render_config(name, entry, surface, trial, hints=hints, plans=plans, config_arg=config_arg,
                             step_timeout=options.timeout)

    trial = None
    try:
        if options.trial:
            with tempfile.TemporaryDirectory(prefix="mcptape-init-") as scratch:
                draft = Path(scratch) / "mcptape.yml"

                def drafted(plans: Mapping[str, Plan]) -> LoadedConfig:
                    return verified(draft, text_of(_absolute(server, directory), plans), env_values)

                trial, plans = trial_rounds(drafted, plans, http_unmanaged="url" in server and "start" not in server,
                                            progress=_progress)
        text = text_of(server, plans, trial)
        fd, temp_name = tempfile.mkstemp(prefix=".mcptape-init-", suffix=".yml", dir=directory)
        os.close(fd)
    except OSError as e:
        raise WriteError(f"{out}: cannot write the config: {e.strerror or e}") from e
    temp = Path(temp_name)
    try:
        written = verified(temp, text, env_values)
        link_new(temp, out)
    finally:
        temp.unlink(missing_ok=True)
    for error in trial.errors if trial is not None else []:
        say(f"mcptape init: warning: a trial run of the session failed: {error}")
    coverage = Coverage.of(plans)
    if surface.tools and coverage.nothing_safe:
        say(f"mcptape init: the gate calls no tool ({coverage.line()}): every tool may change something or needs "
            "the network, so none is safe to run on a CI runner; it gates what the server lists")
    elif surface.tools and not coverage.called:
        say(f"mcptape init: WARNING: the gate calls no tool at all ({coverage.line()}): it checks only what the server "
            "lists. Uncomment the calls that are safe to run (see the reasons in the file)")
    sys.stdout.write(_next_steps(out, name, surface, trial, coverage.line()))
    sys.stdout.write(init_summary(dataclasses.replace(written, path=out), trial.recorded if trial is not None else None))
    sys.stdout.write(first_contact_text(tools=surface.tools, prompts=surface.prompts, resources=surface.resources,
                                        resource_templates=surface.resource_templates))
    return 0


def _absolute(server: Mapping[str, Any], directory: Path) -> dict[str, Any]:
    """The entry as the trial's draft (elsewhere) needs it: its working directory absolute."""
    if "url" in server and "start" not in server:
        return dict(server)
    return {**server, "cwd": str((directory / str(server.get("cwd", "."))).resolve())}


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


def _name(options: Options, surface: Surface) -> str:
    raw = options.name or (default_name(list(options.server)) if options.server else surface.server_name) or "server"
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw).strip("-.") or "server"
    if options.name and name != options.name:
        raise ConfigError(f"--name {options.name!r}: a session name holds only letters, digits, _, . and -",
                          hint=f"e.g. --name {name}")
    return name


def _next_steps(out: Path, name: str, surface: Surface, trial: Trial | None, coverage: str = "") -> str:
    config = "" if out == Path(DEFAULT_OUT) else f" -c {shlex.quote(str(out))}"
    tapes = shlex.quote(str(out.parent / GOLDEN_DIR)) + "/"  # golden_dir, relative to the config file
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
