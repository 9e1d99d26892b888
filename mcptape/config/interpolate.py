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

    def hide_values(self, error: ConfigError) -> ConfigError:
        """`error` with every interpolated value it quotes shown as its `${NAME}` instead.

        A validation message quotes the value it rejects (`timeout: expected a number, got
        '<the token>'`), and the value of `${API_TOKEN}` in the wrong field is still a secret; the
        reference says the same to the user. Values shorter than 4 characters stay (a `1` would
        rewrite line numbers, and says nothing); the `file:line: field:` prefix is left alone.
        """
        refs = {value: f"${{{name}}}" for used in self.used.values() for name, value in used.items() if len(value) >= 4}
        ordered = sorted(refs, key=len, reverse=True)

        def hide(text: str) -> str:
            for value in ordered:
                text = text.replace(value, refs[value])
            return text

        prefix, sep, rest = error.message.partition(": ")
        message, hint = prefix + sep + hide(rest), hide(error.hint) if error.hint else error.hint
        if message == error.message and hint == error.hint:
            return error
        return ConfigError(message, hint=hint)

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




def escape_refs(value: Any) -> Any:
    """`value` (a string, or lists and dicts of them) with every `${` written `$${`, so it reads
    back from mcptape.yml as itself. For what a *server* listed (tool names, URIs, example
    arguments): `ci` interpolates `${VAR}` in sessions, and a tool named `${MCPTAPE_GITHUB_TOKEN}`
    would otherwise make ci send the token to the server as the tool's name."""
    if isinstance(value, str):
        return value.replace("${", "$${")
    if isinstance(value, list):
        return [escape_refs(v) for v in value]
    if isinstance(value, dict):
        return {escape_refs(k) if isinstance(k, str) else k: escape_refs(v) for k, v in value.items()}
    return value
