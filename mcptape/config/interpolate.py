"""`${VAR}` and `${VAR:-default}` in mcptape.yml, with shell semantics and file:line errors."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mcptape.config.locations import Loc, field_name, line_for
from mcptape.errors import ConfigError

_VAR = re.compile(r"\$\$\{|\$\{(?P<body>[^}]*)\}|\$\{")
VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Sections whose strings are interpolated. normalize/redact/drift hold regexes and JSON paths,
# where "${" is more likely meant literally than as a variable.
INTERPOLATED = ("servers", "sessions", "client", "golden_dir")


class Interpolator:
    def __init__(self, env: Mapping[str, str], display: str, lines: Mapping[Loc, int]) -> None:
        self.env = env
        self.display = display
        self.lines = lines
        self.used: dict[Loc, dict[str, str]] = {}  # location -> variables used there and their values

    def walk(self, value: Any, loc: Loc) -> Any:
        if isinstance(value, str):
            return self.interpolate(value, loc)
        if isinstance(value, list):
            return [self.walk(v, (*loc, i)) for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: self.walk(v, (*loc, k)) for k, v in value.items()}
        return value

    def _error(self, loc: Loc, message: str) -> ConfigError:
        return ConfigError(f"{self.display}:{line_for(self.lines, loc)}: {field_name(loc)}: {message}")

    def interpolate(self, text: str, loc: Loc) -> str:
        if "${" not in text:
            return text

        def one(m: re.Match[str]) -> str:
            if m.group(0) == "$${":
                return "${"
            body = m.group("body")
            if body is None:
                raise self._error(
                    loc,
                    f'unterminated "${{" in {text!r}; close it with "}}", or write "$${{" for a literal "${{"',
                )
            name, sep, default = body.partition(":-")
            if not VAR_NAME.fullmatch(name):
                raise self._error(
                    loc,
                    f'"${{{body}}}" is not a variable reference; write ${{NAME}} or ${{NAME:-default}} '
                    '(NAME: letters, digits, _), or "$${" for a literal "${"',
                )
            if "${" in default:
                raise self._error(
                    loc, f'nested variables in "${{{body}}}" are not supported; use a literal default'
                )
            value = self.env.get(name)
            if value is None or (sep and value == ""):  # shell semantics: ":-" also covers empty
                if not sep:
                    raise self._error(
                        loc,
                        f"environment variable {name} is not set; set it (export {name}=... or in the CI "
                        f"job's env:) or give a default: ${{{name}:-value}}",
                    )
                value = default
            self.used.setdefault(loc, {})[name] = value
            return value

        return _VAR.sub(one, text)


