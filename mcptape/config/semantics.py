"""What a loaded config names on disk, checked before any server starts: `mcptape check` and `ci` alike.

load_config (load.py) checks the file itself: its schema, and what its models see across sections
(sessions name defined servers, variables resolve, regexes compile, JSON paths parse, drift keys
exist). What only the file system can tell is checked here: golden_dir is (or can be) a directory,
and the working directories servers are started in exist. Both commands call check_config, so
`mcptape check` can never pass a config that `ci` refuses before it starts.
"""

from __future__ import annotations

from pathlib import Path

from mcptape.config.load import LoadedConfig
from mcptape.config.models import HttpServer
from mcptape.errors import ConfigError


def not_a_directory(path: Path) -> Path | None:
    """The nearest existing one of `path` and its parents when it is not a directory (a file in
    the way), else None: then `path` is a directory or can be made one."""
    for candidate in (path, *path.parents):
        if candidate.is_symlink() or candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def repository_of(directory: Path) -> Path | None:
    """The root of the git checkout `directory` is in (the nearest parent holding `.git`), if any."""
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def outside_repository(loaded: LoadedConfig) -> list[str]:
    """Warnings (not errors: a scratch directory can be meant) for paths the config names outside
    the checkout it lives in: golden tapes there are not committed with it, a sandbox there is
    some other project's files. No checkout, no warning."""
    root = repository_of(loaded.base_dir)
    if root is None:
        return []
    named: list[tuple[str, tuple[str | int, ...], str]] = [("golden_dir", ("golden_dir",), loaded.config.golden_dir)]
    for i, session in enumerate(loaded.config.sessions):
        named += [(f"sessions[{i}].sandbox[{k}]", ("sessions", i, "sandbox", k), d) for k, d in enumerate(session.sandbox)]
    out = []
    for field, loc, written in named:
        path = loaded.resolve(written)
        if not path.resolve().is_relative_to(root.resolve()):
            out.append(
                f"{loaded.path}:{loaded.line_of(*loc)}: {field}: {written!r} is {path}, outside the repository "
                f"({root}): what mcptape writes there is not committed with the config; "
                "use a path inside the repository, unless that is meant"
            )
    return out


def check_config(loaded: LoadedConfig) -> None:
    """Raise the first ConfigError about a path of the config (module docstring), file:line first."""
    blocker = not_a_directory(loaded.golden_dir)
    if blocker is not None:
        raise ConfigError(
            f"{loaded.path}:{loaded.line_of('golden_dir')}: golden_dir {loaded.config.golden_dir!r}: "
            f"{blocker} is a file, not a directory",
            hint="golden_dir names the directory that holds the golden tapes; move the file or point golden_dir elsewhere",
        )
    for name, server in loaded.config.servers.items():
        if server.cwd is None or (isinstance(server, HttpServer) and not server.start):
            continue
        cwd = loaded.resolve(server.cwd)
        if not cwd.is_dir():
            raise ConfigError(
                f"{loaded.path}:{loaded.line_of('servers', name, 'cwd')}: servers.{name}.cwd: "
                f"{cwd} is not a directory",
                hint="cwd is relative to the config file; create the directory or fix the path",
            )
