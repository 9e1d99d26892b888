"""`mcptape check [-c mcptape.yml] [FILE...]`: validate configs fully without starting any server (but --surface).

The checks are the ones `ci` makes before it starts a server, from the same functions:
config.load_config (schema and the cross-section rules of the models, with file:line errors)
and config.semantics.check_config (the paths the config names). Exit 0 with
`ok: N sessions, M servers` per file, or 3 with each file's first problem: file:line, field, the
fix. Files given as arguments (as the pre-commit hook passes them) are checked with -c's, if given.
`--allow-unset` (the hook's: a commit does not have the CI job's secrets) reads an unset `${VAR}`
as a placeholder and names it instead of failing; without it, check needs what ci needs.
`--surface` also starts each server and reviews its whole surface (commands/surface.py).
`--strength` measures the gate on its golden tapes, offline (commands/strength.py: `--json[=FILE]`,
`--seed N`; exit 3 under `drift.min_strength`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mcptape.commands.output import report_stream, say
from mcptape.commands.strength import run_strength
from mcptape.commands.surface import run_surface
from mcptape.config.load import LoadedConfig, load_config
from mcptape.config.semantics import check_config, outside_repository
from mcptape.errors import EXIT_COULD_NOT_RUN, EXIT_OK, ConfigError
from mcptape.logsafe import safe_log
from mcptape.verdict.vocabulary import worst_exit

UNSET_PLACEHOLDER = "mcptape-unset-"  # + the name: a value no check mistakes for a URL part or a secret


_REQUIRED_VARIABLE = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}")  # ${NAME}, not ${NAME:-default}


class _Unset(Mapping[str, str]):
    """os.environ, with a placeholder for a `${NAME}` (without a default) it lacks, and a record of which."""

    def __init__(self, env: Mapping[str, str], required: set[str]) -> None:
        self.env = env
        self.required = required
        self.missing: list[str] = []

    def __getitem__(self, name: str) -> str:
        if name in self.env:
            return self.env[name]
        if name not in self.required:
            raise KeyError(name)  # a ${NAME:-default}: the default applies, as in ci
        if name not in self.missing:
            self.missing.append(name)
        return UNSET_PLACEHOLDER + name

    def __iter__(self) -> Iterator[str]:
        return iter(self.env)

    def __len__(self) -> int:
        return len(self.env)

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default


@dataclass(frozen=True)
class Options:
    configs: tuple[str, ...]
    allow_unset: bool = False
    surface: bool = False  # --surface: commands/surface.py reviews each server's listed surface
    strength: bool = False  # --strength: commands/strength.py measures the gate on its goldens
    json_report: str | None = None  # --json[=FILE]: the strength report as JSON (commands/grammar.py)
    seed: int | None = None  # --seed N: the strength's draws

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        # -c's config and the FILEs are all checked (pre-commit passes FILEs; -c is ci's spelling):
        # neither is dropped for the other. Nothing given: mcptape.yml, as ci reads it.
        given = ([args.config] if args.config is not None else []) + list(args.files)
        configs = tuple(given) or ("mcptape.yml",)
        return cls(configs=configs, allow_unset=args.allow_unset, surface=args.surface, strength=args.strength,
                   json_report=args.json, seed=args.seed)


def run(options: Options) -> int:
    if not options.strength and (options.json_report is not None or options.seed is not None):
        given = "--json" if options.json_report is not None else "--seed"
        raise ConfigError(f"{given} belongs to the strength report: add --strength")
    if options.strength:
        if len(options.configs) > 1:
            raise ConfigError(f"--strength measures one config's gate, and {len(options.configs)} were given",
                              hint="run `mcptape check --strength -c FILE` once per config")
        loaded = _check(options.configs[0], options.allow_unset, report_stream(options.json_report))
        surface = run_surface(loaded) if options.surface else EXIT_OK
        return worst_exit([surface, run_strength(loaded, json_report=options.json_report, seed=options.seed or 0)])
    if options.surface:
        for path in options.configs:  # every config checked before any server starts
            _check(path, options.allow_unset)
        return worst_exit([run_surface(load_config(path)) for path in options.configs])
    if len(options.configs) == 1:
        _check(options.configs[0], options.allow_unset)  # its ConfigError is the command's: cli.py prints it, exit 3
        return EXIT_OK
    code = EXIT_OK
    for path in options.configs:
        try:
            _check(path, options.allow_unset)
        except ConfigError as e:
            say(f"mcptape check: {e}")
            code = EXIT_COULD_NOT_RUN
    return code


def _check(path: str, allow_unset: bool, out: IO[str] | None = None) -> LoadedConfig:
    env = None
    if allow_unset:
        try:
            text = Path(path).read_bytes().decode("utf-8", errors="replace")
        except OSError:
            text = ""  # load_config says what is wrong with the path
        env = _Unset(os.environ, set(_REQUIRED_VARIABLE.findall(text)))
    loaded = load_config(path, env=env)
    check_config(loaded)
    for warning in outside_repository(loaded):
        print(safe_log(f"mcptape check: warning: {warning}"), file=sys.stderr)
    config = loaded.config
    sessions, servers = len(config.sessions), len(config.servers)
    unset = f"; not set here, ci needs them: {', '.join(env.missing)}" if env is not None and env.missing else ""
    print(f"ok: {sessions} session{'s' * (sessions != 1)}, {servers} server{'s' * (servers != 1)} ({loaded.path}){unset}",
          file=out or sys.stdout)
    return loaded
