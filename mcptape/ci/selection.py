"""Which sessions a ci run covers (`--session`, `--shard I/N`) and the places it may write to."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path

from mcptape.ci.eras import base_name, era_of, expand
from mcptape.config.load import LoadedConfig
from mcptape.config.models import Session
from mcptape.config.semantics import check_config, not_a_directory
from mcptape.errors import (
    ConfigError,
)

# -- selecting sessions -----------------------------------------------------------------------


def select_sessions(loaded: LoadedConfig, names: Sequence[str], shard: str | None) -> list[Session]:
    # A `protocol: both` session runs as one session per era (ci/eras.py): `--session NAME` picks
    # both, `--session NAME@VERSION` one of them.
    sessions = expand(loaded.config, loaded.config.sessions)
    known = [s.name for s in loaded.config.sessions] + [s.name for s in sessions if era_of(s) is not None]
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean `{close[0]}`?" if close else f"sessions in {loaded.path}: {', '.join(known)}"
            raise ConfigError(f"--session {name}: no session of that name in {loaded.path}", hint=hint)
    if names:
        sessions = [s for s in sessions if s.name in names or base_name(s.name) in names]
    if shard:
        index, total = parse_shard(shard)
        ordered = sorted(sessions, key=lambda s: s.name)
        chosen = {s.name for i, s in enumerate(ordered) if i % total == index - 1}
        sessions = [s for s in sessions if s.name in chosen]
    return sessions


def parse_shard(text: str) -> tuple[int, int]:
    try:
        left, right = text.split("/")
        index, total = int(left), int(right)
    except ValueError:
        index, total = 0, 0
    if total < 1 or not 1 <= index <= total:
        raise ConfigError(f"--shard {text}: expected I/N with 1 <= I <= N, e.g. --shard 1/3")
    return index, total


def check_output_paths(
    loaded: LoadedConfig, out_dir: str | None, reports: Sequence[tuple[str, str | None]]
) -> None:
    """Refuse at once, before any server starts, the places a run could not write to: what the
    config names (config.semantics.check_config, as `mcptape check` does), an `out_dir` or report
    directory that is (or lies under) a file, a report path that is a directory.
    `reports` are (flag, path given) pairs. What only the write itself can tell (read-only, disk
    full) is a WriteError when it happens."""
    check_config(loaded)
    if out_dir and (blocker := not_a_directory(Path(out_dir).resolve())) is not None:
        raise ConfigError(f"--out-dir {out_dir}: {blocker} is a file, not a directory",
                          hint="--out-dir names a directory to keep the fresh tapes in")
    for flag, value in reports:
        if not value:
            continue
        target = Path(value)
        if target.is_dir():
            raise ConfigError(f"{flag} {value}: is a directory", hint=f"{flag} names the file to write")
        if (blocker := not_a_directory(target.parent)) is not None:
            raise ConfigError(f"{flag} {value}: {blocker} is a file, not a directory",
                              hint=f"{flag} names the file to write, in a directory")


