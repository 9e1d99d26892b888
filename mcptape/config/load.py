"""load_config: read mcptape.yml, interpolate ${VAR}, validate, and keep lines and secrets beside it.

Every problem becomes one `ConfigError` paragraph: `file:line: field: what is wrong; the fix`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import (
    ValidationError,
)

from mcptape.config.interpolate import INTERPOLATED, Interpolator
from mcptape.config.locations import Loc, describe, line_for
from mcptape.config.models import Config
from mcptape.config.secrets import collect_secrets
from mcptape.config.translate import translate
from mcptape.config.yaml_lines import parse_yaml
from mcptape.errors import ConfigError


@dataclass
class LoadedConfig:
    """A validated config plus where it came from: lines for messages, secrets for the redactor."""

    config: Config
    path: Path
    base_dir: Path  # paths in the config (golden_dir, cwd, sandbox) are relative to this
    secrets: dict[str, str] = field(default_factory=dict)  # "env.NAME"/"headers.Name" -> value
    lines: dict[Loc, int] = field(default_factory=dict, repr=False)  # location -> 1-based line

    def line_of(self, *loc: str | int) -> int:
        """The line of a location in the file, or of its nearest enclosing location (1 at worst)."""
        return line_for(self.lines, loc)

    def step_line(self, session_index: int, step_index: int) -> int:
        return self.line_of("sessions", session_index, "steps", step_index)

    @property
    def golden_dir(self) -> Path:
        return self.resolve(self.config.golden_dir)

    def resolve(self, path: str) -> Path:
        """A path written in the config, made absolute against the config file's directory."""
        return Path(os.path.normpath(self.base_dir / Path(path).expanduser()))


def load_config(path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None) -> LoadedConfig:
    """Read, interpolate and validate mcptape.yml; any problem is one ConfigError paragraph.

    `env` is where `${VAR}` is looked up (default: os.environ).
    """
    p = Path(path)
    display = str(path)
    if p.is_dir():
        hint = f"; did you mean -c {p / 'mcptape.yml'}?" if (p / "mcptape.yml").is_file() else ""
        raise ConfigError(f"{display} is a directory, not a config file; pass the file with -c FILE{hint}")
    try:
        raw = p.read_bytes()
    except FileNotFoundError as e:
        raise ConfigError(
            f"no mcptape.yml at {display}; create one (see README) or pass another file with -c FILE"
        ) from e
    except OSError as e:
        raise ConfigError(
            f"cannot read {display}: {e.strerror or e}; check the path and its permissions"
        ) from e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError(
            f"{display}:{line}: the file is not UTF-8 (byte {e.start}); save it as UTF-8"
        ) from e
    if not text.strip() or all(not ln.strip() or ln.lstrip().startswith("#") for ln in text.splitlines()):
        raise ConfigError(
            f"{display}:1: the file is empty; start with `version: 1`, `servers:` and `sessions:` (see README)"
        )

    data, lines = parse_yaml(text, display)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{display}:{lines.get((), 1)}: top level: expected a mapping with `version`, `servers` and `sessions`, "
            f"got {describe(data)}; write `key: value` lines at the top level"
        )

    interpolator = Interpolator(os.environ if env is None else env, display, lines)
    for key in INTERPOLATED:
        if key in data:
            data[key] = interpolator.walk(data[key], (key,))

    try:
        config = Config.model_validate(data)
    except ValidationError as e:
        raise interpolator.hide_values(translate(e, display, lines)) from None

    return LoadedConfig(
        config=config,
        path=p,
        base_dir=p.resolve().parent,
        secrets=collect_secrets(config, interpolator.used, display, lines),
        lines=lines,
    )


