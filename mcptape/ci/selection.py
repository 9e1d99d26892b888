"""Which sessions a ci run covers (`--session`, `--shard I/N`). Where it may write is commands/grammar.py's check_outputs."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from mcptape.ci.eras import base_name, era_of, expand
from mcptape.config.load import LoadedConfig
from mcptape.config.models import Session
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
