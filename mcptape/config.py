"""mcptape.yml: the pydantic models of the file, and loading it with file:line errors.

Owns the shape of the config and its validation: YAML parsing with line numbers, the step
shorthand (`- list_tools`, `- call: add` + `arguments:`), `${VAR}` interpolation, the
cross-checks between sections, and the JSON Schema editors use (`mcptape schema`). What a step
*does* is client.py's, how sessions run is ci.py's, what is secret in a value is redact.py's
(this module applies redact.py's rule to what the config hands a server, `_collect_secrets`, and
says at which line a refused secret is; the result is `LoadedConfig.secrets`).

Every problem becomes one `ConfigError` paragraph: `file:line: field: what is wrong; the fix`.
pydantic and yaml are imported here and nowhere on the path of `mcptape --version`/`play`:
only ci imports this module.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import os
import re
import shlex
import sys
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from mcptape.errors import ConfigError
from mcptape.jsonrpc import MAX_DEPTH
from mcptape.report.model import FINDING_KINDS, IGNORE_KEYS, Severity, drift_classes

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
LEGACY_DEFAULT_PROTOCOL = "2025-06-18"  # the newest version every reference server accepts as asked
CONFIG_VERSIONS = (1,)  # the `version:` values this mcptape reads
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# Step actions: the one key a step mapping carries (or the bare string of a step without options).
StepAction = Literal[
    "list_tools",
    "call",
    "list_resources",
    "list_resource_templates",
    "read_resource",
    "list_prompts",
    "get_prompt",
    "complete",
    "set_log_level",
    "ping",
    "request",
    "notify",
    "listen",
]
STEP_ACTIONS: tuple[str, ...] = get_args(StepAction)
STEP_OPTIONS = ("arguments", "params", "timeout", "count", "duration")


@dataclass(frozen=True)
class ActionSpec:
    """What one step action takes: its target (the value of the action key) and its options."""

    doc: str
    target: str | None = None  # what the action key's value names; None: the action takes no value
    options: tuple[str, ...] = ("timeout",)
    required: tuple[str, ...] = ()  # options that must be given


ACTIONS: dict[str, ActionSpec] = {
    "list_tools": ActionSpec("tools/list: record the tools the server offers"),
    "call": ActionSpec("tools/call: call a tool with `arguments`", "tool name", ("arguments", "timeout")),
    "list_resources": ActionSpec("resources/list: record the resources the server offers"),
    "list_resource_templates": ActionSpec("resources/templates/list: record the resource templates"),
    "read_resource": ActionSpec("resources/read: read one resource", "resource URI"),
    "list_prompts": ActionSpec("prompts/list: record the prompts the server offers"),
    "get_prompt": ActionSpec(
        "prompts/get: render a prompt with `arguments`", "prompt name", ("arguments", "timeout")
    ),
    "complete": ActionSpec(
        "completion/complete: ask for completions; `params` holds `ref` and `argument`",
        None,
        ("params", "timeout"),
        ("params",),
    ),
    "set_log_level": ActionSpec("logging/setLevel: set the server's log level", "log level"),
    "ping": ActionSpec("ping: check the server answers"),
    "request": ActionSpec(
        "send any JSON-RPC request: the method, with `params`", "JSON-RPC method", ("params", "timeout")
    ),
    "notify": ActionSpec(
        "send any JSON-RPC notification: the method, with `params`", "JSON-RPC method", ("params", "timeout")
    ),
    "listen": ActionSpec(
        "record server notifications for a while: stop after `count` of them or `duration` seconds",
        None,
        ("count", "duration", "timeout"),
    ),
}
assert tuple(ACTIONS) == STEP_ACTIONS


def _fail(message: str, *, at: tuple[str | int, ...] = (), key: str | None = None) -> PydanticCustomError:
    """An error raised inside a validator that load_config turns into one file:line paragraph.

    `at` is appended to the error's location (field and line); `key` names a key of the mapping
    being validated only to find its line (the field shown stays the mapping's).
    """
    return PydanticCustomError("mcptape", "{message}", {"message": message, "at": at, "key": key})


def _suggest(word: str, choices: tuple[str, ...] | list[str]) -> str:
    """`; did you mean "x"?` for a close match, else `;`: the list of valid values follows either way."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f'; did you mean "{close[0]}"?' if close else ";"


def _check_protocol(value: str | None) -> str | None:
    if value is None or value == "auto" or value in PROTOCOL_VERSIONS:
        return value
    raise _fail(
        f'unknown protocol version "{value}"{_suggest(str(value), PROTOCOL_VERSIONS)} '
        f"Valid: auto, {', '.join(PROTOCOL_VERSIONS)}"
    )


def _stringify_values(v: Any) -> Any:
    """env/header values: YAML reads `PORT: 8080` as a number; a process environment holds strings."""
    if not isinstance(v, dict):
        return v
    out: dict[Any, Any] = {}
    for k, val in v.items():
        if isinstance(val, bool):
            raise _fail(
                "YAML reads an unquoted yes/no/true/false/on/off as a boolean, not text; "
                f'quote the value (e.g. "{str(val).lower()}") to pass a string',
                at=(k,),
            )
        out[k] = str(val) if isinstance(val, int | float) else val
    return out


def _split_command(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return shlex.split(v)
        except ValueError as e:  # unbalanced quotes
            raise _fail(
                f"cannot split the command like a shell would ({e}); balance the quotes or write a list"
            ) from e
    return v


_PROTOCOL_SCHEMA = {"enum": ["auto", *PROTOCOL_VERSIONS], "type": "string"}
_COMMAND_SCHEMA = {
    "anyOf": [
        {"type": "string", "description": "split like a shell would"},
        {"type": "array", "items": {"type": "string"}, "minItems": 1},
    ]
}
_STRING_MAP_SCHEMA = {
    "type": "object",
    "additionalProperties": {"type": ["string", "number"]},
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StdioServer(_Strict):
    """A server launched as a process and spoken to over stdin/stdout."""

    command: Annotated[list[str], WithJsonSchema(_COMMAND_SCHEMA)] = Field(
        description="argv of the server; a string is split like a shell would. ${VAR} is interpolated"
    )
    env: Annotated[dict[str, str], WithJsonSchema(_STRING_MAP_SCHEMA)] = Field(
        default_factory=dict,
        description="the only variables the server gets besides PATH, HOME, LANG...; secret values (by name, "
        "shape, entropy or redact.env) are scrubbed from tapes and reports",
    )
    cwd: str | None = Field(default=None, description="working directory, relative to the config file")
    protocol: Annotated[str | None, WithJsonSchema(_PROTOCOL_SCHEMA)] = Field(
        default=None, description="protocol version for this server (default: the client block's)"
    )

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return _split_command(v)

    @field_validator("command")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if not v or not v[0]:
            raise _fail("the command is empty; name the program to run, e.g. [python, server.py]")
        return v

    @field_validator("env", mode="before")
    @classmethod
    def _env_strings(cls, v: Any) -> Any:
        return _stringify_values(v)

    @field_validator("protocol")
    @classmethod
    def _protocol(cls, v: str | None) -> str | None:
        return _check_protocol(v)


class HttpServer(_Strict):
    """A server reached over streamable HTTP (or legacy HTTP+SSE), optionally started first."""

    url: str = Field(
        description="MCP endpoint, e.g. http://127.0.0.1:8765/mcp",
        json_schema_extra={"pattern": "^https?://"},
    )
    transport: Literal["streamable-http", "sse"] = Field(
        default="streamable-http", description="streamable-http (current) or sse (legacy HTTP+SSE)"
    )
    headers: Annotated[dict[str, str], WithJsonSchema(_STRING_MAP_SCHEMA)] = Field(
        default_factory=dict,
        description="sent with every request; credential headers (Authorization, Cookie, X-Api-Key, ...) are secrets",
    )
    start: Annotated[list[str] | None, WithJsonSchema(_COMMAND_SCHEMA)] = Field(
        default=None, description="command that launches the server before the session"
    )
    env: Annotated[dict[str, str], WithJsonSchema(_STRING_MAP_SCHEMA)] = Field(
        default_factory=dict, description="variables for the `start` command (secret values as for a stdio server)"
    )
    cwd: str | None = Field(
        default=None, description="working directory of `start`, relative to the config file"
    )
    ready_timeout: float = Field(default=20.0, gt=0, description="seconds to wait for the URL to answer")
    protocol: Annotated[str | None, WithJsonSchema(_PROTOCOL_SCHEMA)] = Field(
        default=None, description="protocol version for this server (default: the client block's)"
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not re.match(r"^https?://[^/\s]+", v):
            raise _fail(f'"{v}" is not an http(s) URL; write e.g. http://127.0.0.1:8765/mcp')
        return v

    @field_validator("start", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return _split_command(v)

    @field_validator("env", "headers", mode="before")
    @classmethod
    def _env_strings(cls, v: Any) -> Any:
        return _stringify_values(v)

    @field_validator("protocol")
    @classmethod
    def _protocol(cls, v: str | None) -> str | None:
        return _check_protocol(v)


def _server_kind(v: Any) -> str | None:
    if isinstance(v, BaseModel):
        return "http server" if isinstance(v, HttpServer) else "stdio server"
    if isinstance(v, dict):
        return "http server" if "url" in v else "stdio server"
    return None


# Tag names appear in pydantic error locations; load_config drops them from the field it shows.
Server = Annotated[
    Annotated[StdioServer, Tag("stdio server")] | Annotated[HttpServer, Tag("http server")],
    Discriminator(_server_kind),
]


class Step(_Strict):
    """One client action. Written as `- list_tools` or `- call: add` with options beside it.

    The YAML shorthand is parsed here (mode="before"), so `Step.model_validate("ping")` and
    `Step(action="call", target="add")` both work.
    """

    action: StepAction
    target: str | None = None  # tool name, resource URI, prompt name, log level or raw method
    arguments: dict[str, Any] | None = None  # call / get_prompt arguments
    params: dict[str, Any] | None = None  # request / notify / complete params
    timeout: float | None = Field(default=None, gt=0)
    count: int | None = Field(default=None, ge=1)  # listen: stop after this many notifications
    duration: float | None = Field(default=None, gt=0)  # listen: stop after this many seconds

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            if data in ACTIONS:
                return {"action": data}
            first = data.split()[0] if data.split() else data
            if first in ACTIONS and first != data:
                rest = data[len(first) :].strip()
                raise _fail(
                    f'unknown step "{data}"; write the {ACTIONS[first].target or "value"} after a colon: `- {first}: {rest}`'
                )
            raise _fail(
                f'unknown step "{data}"{_suggest(data, STEP_ACTIONS)} Valid steps: {", ".join(STEP_ACTIONS)}'
            )
        if not isinstance(data, dict):
            raise _fail(
                f"expected a step, got {_describe(data)}; write an action name (`- list_tools`) "
                "or a mapping with one action (`- call: add` with `arguments:` beside it)"
            )
        if "action" in data:  # the canonical form, as code builds it
            return data
        if not data:
            raise _fail("the step is empty; write an action, e.g. `- list_tools` or `- call: add`")
        actions = [k for k in data if k in ACTIONS]
        unknown = [k for k in data if k not in ACTIONS and k not in STEP_OPTIONS]
        if len(actions) > 1:
            raise _fail(
                f"a step has exactly one action, this one has {' and '.join(actions)}; split it into one step per action",
                key=actions[1],
            )
        if not actions:
            if unknown:
                k = str(unknown[0])
                raise _fail(
                    f'unknown step "{k}"{_suggest(k, STEP_ACTIONS)} Valid steps: {", ".join(STEP_ACTIONS)}',
                    key=k,
                )
            raise _fail(
                f"the step has options ({', '.join(map(str, data))}) but no action; "
                f"start it with one of: {', '.join(STEP_ACTIONS)}",
                key=str(next(iter(data))),
            )
        action = actions[0]
        spec = ACTIONS[action]
        if unknown:
            k = str(unknown[0])
            raise _fail(
                f'unknown option "{k}" for {action}{_suggest(k, list(spec.options))} {action} takes: {", ".join(spec.options)}',
                key=k,
            )
        target = data[action]
        if isinstance(target, dict | list):
            what = (
                f"the value of `{action}` must be a {spec.target}"
                if spec.target
                else f"`{action}` takes no value"
            )
            raise _fail(
                f"{what}, got {_describe(target)}; put options beside the action, not under it: "
                f"`- {action}:{' NAME' if spec.target else ''}`, then its options "
                f"(e.g. `timeout: 5`) on the next lines, indented like `{action}`",
                key=action,
            )
        if target is not None and not isinstance(target, str):
            if spec.target is None:
                raise _fail(
                    f"`{action}` takes no value, got {_describe(target)}; write `- {action}`", key=action
                )
            raise _fail(
                f"`{action}` needs a {spec.target} (a string), got {_describe(target)}; quote it", key=action
            )
        return {"action": action, "target": target, **{k: v for k, v in data.items() if k != action}}

    @model_validator(mode="after")
    def _fits_action(self) -> Step:
        spec = ACTIONS[self.action]
        if spec.target and not self.target:
            example = {
                "call": "add",
                "read_resource": "calc://constants",
                "get_prompt": "explain",
                "set_log_level": "info",
                "request": "tools/list",
                "notify": "notifications/x",
            }[self.action]
            raise _fail(
                f"`{self.action}` needs a {spec.target}: write `- {self.action}: {example}`", key=self.action
            )
        if not spec.target and self.target:
            raise _fail(
                f'`{self.action}` takes no value, got "{self.target}"; write `- {self.action}`',
                key=self.action,
            )
        if self.action == "set_log_level" and self.target not in LOG_LEVELS:
            raise _fail(
                f'unknown log level "{self.target}"{_suggest(str(self.target), LOG_LEVELS)} Valid: {", ".join(LOG_LEVELS)}',
                key=self.action,
            )
        for option in STEP_OPTIONS:
            if getattr(self, option) is not None and option not in spec.options:
                raise _fail(
                    f'"{option}" is not an option of {self.action}; {self.action} takes: {", ".join(spec.options)}',
                    key=option,
                )
        for option in spec.required:
            if getattr(self, option) is None:
                raise _fail(f"`{self.action}` needs `{option}:` beside it ({spec.doc})", key=self.action)
        return self


class ClientSettings(_Strict):
    """How the scripted client presents itself and answers the server's own requests."""

    protocol: Annotated[str, WithJsonSchema(_PROTOCOL_SCHEMA)] = Field(
        default="auto", description="auto (discover, then initialize) or a pinned protocol version"
    )
    name: str = Field(default="mcptape", description="clientInfo.name sent to the server")
    version: str | None = Field(default=None, description="clientInfo.version (default: mcptape's version)")
    capabilities: dict[str, Any] = Field(
        default_factory=dict, description="declared client capabilities, e.g. {roots: {}, sampling: {}}"
    )
    roots: list[dict[str, str]] = Field(
        default_factory=list, description="answer to roots/list: [{uri, name}]"
    )
    sampling: dict[str, Any] | Literal["decline"] | None = Field(
        default=None, description="canned sampling/createMessage result, or decline"
    )
    elicitation: dict[str, Any] | Literal["decline"] | None = Field(
        default=None, description="canned elicitation/create result, or decline"
    )

    @field_validator("protocol")
    @classmethod
    def _protocol(cls, v: str) -> str:
        return _check_protocol(v) or v


class Session(_Strict):
    """One scripted client session against one server; its golden tape is `<golden_dir>/<name>`."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="also the golden tape's file name")
    server: str = Field(description="a key of `servers`")
    steps: list[Step] = Field(description="what the client does, in order")
    client: ClientSettings | None = Field(default=None, description="overrides the top-level client block")
    timeout: float = Field(default=120.0, gt=0, description="seconds for the whole session")
    step_timeout: float = Field(
        default=30.0, gt=0, description="seconds for one step (a step's `timeout` wins)"
    )
    sandbox: list[str] = Field(default_factory=list, description="directories the server may write to")

    @field_validator("steps")
    @classmethod
    def _some_steps(cls, v: list[Step]) -> list[Step]:
        if not v:
            raise _fail("the session has no steps; add at least one, e.g. `- list_tools`")
        return v


_SUPPORTED_PATHS = '$..key, $.a.b, $.a[0], $.a[*].b, $..a.b, $["key.with.dots"]'
_PATH_TOKEN = re.compile(
    r"""\.\.(?P<deep>[\w$@-]+)|\.(?P<key>[\w$@-]+)|\.(?P<dotstar>\*)"""
    r"""|\[(?:(?P<index>-?\d+)|(?P<star>\*)|'(?P<sq>[^']*)'|"(?P<dq>[^"]*)")\]"""
)

# The same grammar as _PATH_TOKEN, for editors (the schema's `pattern`).
_PATH_SCHEMA_PATTERN = r"""^\$(\.\.[\w$@-]+|\.[\w$@-]+|\.\*|\[(-?\d+|\*|'[^']*'|"[^"]*")\])+$"""

PathSegment = tuple[Literal["key", "deep", "index", "any"], str | int | None]


def parse_json_path(path: str) -> list[PathSegment]:
    """Parse the JSON path subset normalize rules use into segments.

    ("key", name) one child; ("deep", name) that key at any depth below; ("index", n) one list
    item; ("any", None) every child. Raises ValueError saying what is supported.
    """
    if not path.startswith("$"):
        raise ValueError(f'JSON path "{path}" must start with "$"; supported: {_SUPPORTED_PATHS}')
    pos, segments = 1, []
    while pos < len(path):
        m = _PATH_TOKEN.match(path, pos)
        if not m:
            raise ValueError(
                f'invalid JSON path "{path}": unexpected "{path[pos:]}" at position {pos}; supported: {_SUPPORTED_PATHS}'
            )
        if m["deep"] is not None:
            segments.append(("deep", m["deep"]))
        elif m["key"] is not None:
            segments.append(("key", m["key"]))
        elif m["index"] is not None:
            segments.append(("index", int(m["index"])))
        elif m["dotstar"] is not None or m["star"] is not None:
            segments.append(("any", None))
        else:
            segments.append(("key", m["sq"] if m["sq"] is not None else m["dq"]))
        pos = m.end()
    if not segments:
        raise ValueError(f'JSON path "{path}" selects the whole message; name a key, e.g. $..timestamp')
    return segments  # type: ignore[return-value]


def _check_regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as e:
        raise _fail(
            f'invalid regex "{value}": {e}; fix the pattern (quote it in YAML, and escape a literal "(" as "\\\\(")'
        ) from e
    return value


class NormalizeRule(_Strict):
    """A volatile value -> placeholder: by JSON path (`$..timestamp`) or by regex over strings."""

    path: str | None = Field(
        default=None,
        description=f"JSON path of the values to replace ({_SUPPORTED_PATHS})",
        json_schema_extra={"pattern": _PATH_SCHEMA_PATTERN},
    )
    pattern: str | None = Field(
        default=None,
        description="regex; every match inside any string is replaced",
        json_schema_extra={"format": "regex"},
    )
    replace: str = Field(default="<NORMALIZED>", description="the placeholder written instead")
    reason: str | None = Field(default=None, description="why the value is volatile (for reviewers)")

    @field_validator("path")
    @classmethod
    def _path_parses(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                parse_json_path(v)
            except ValueError as e:
                raise _fail(str(e)) from e
        return v

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, v: str | None) -> str | None:
        return None if v is None else _check_regex(v)

    @model_validator(mode="after")
    def _one_selector(self) -> NormalizeRule:
        if (self.path is None) == (self.pattern is None):
            which = "both" if self.path is not None else "neither"
            raise _fail(
                f"the rule has {which} of `path` and `pattern`; give exactly one: a JSON path or a regex"
            )
        return self

    def segments(self) -> list[PathSegment]:
        """The parsed `path` (empty for a pattern rule)."""
        return parse_json_path(self.path) if self.path is not None else []


class RedactSettings(_Strict):
    """Secrets beyond what redact.py finds on its own (see `secret_reason`), and values that are not."""

    patterns: list[str] = Field(default_factory=list, description="extra secret regexes")
    allow: list[str] = Field(default_factory=list, description="values never treated as secrets")
    env: list[str] = Field(
        default_factory=list,
        description="variables whose values are secrets whatever their name (an env: key or a ${VAR})",
    )
    headers: list[str] = Field(
        default_factory=list, description="headers whose values are secrets whatever their name"
    )

    @field_validator("env")
    @classmethod
    def _variable_names(cls, v: list[str]) -> list[str]:
        for i, name in enumerate(v):
            if not _VAR_NAME.fullmatch(name):
                raise _fail(
                    f'"{name}" is not a variable name; write NAME as in `env:` or ${{NAME}} (letters, digits, _)',
                    at=(i,),
                )
        return v

    @field_validator("patterns")
    @classmethod
    def _compile(cls, v: list[str]) -> list[str]:
        for i, p in enumerate(v):
            try:
                re.compile(p)
            except re.error as e:
                raise _fail(f'invalid regex "{p}": {e}; fix the pattern (quote it in YAML)', at=(i,)) from e
        return v


def _unknown_drift_class(name: str) -> str | None:
    """What is wrong with `name` as a drift class (`category` or `category.kind`), or None."""
    classes = drift_classes()
    if name in classes:
        return None
    category = name.partition(".")[0]
    if category not in FINDING_KINDS:
        return (f'unknown drift category "{name}"{_suggest(name, classes)} '
                f"Categories: {', '.join(FINDING_KINDS)} (a category or category.kind)")
    kinds = FINDING_KINDS[category]
    return (f'unknown drift class "{name}"{_suggest(name, [f"{category}.{k}" for k in kinds])} '
            f"Kinds of {category}: {', '.join(kinds)} (or `{category}` for all of them)")


class DriftSettings(_Strict):
    """What fails the gate: a severity per class, and rules that ignore differences.

    The names a key or rule may use are report.model's (FINDING_KINDS, IGNORE_KEYS), checked here
    so that a typo fails at load with its line instead of silently matching nothing.
    """

    added_surface: Severity = Field(
        default="structural", description="severity of tools/resources/prompts added"
    )
    fail_on: dict[str, Severity] = Field(
        default_factory=dict, description="drift class (category or category.kind) -> severity"
    )
    ignore: list[dict[str, str]] = Field(default_factory=list, description="differences never reported")
    conformance: Severity = Field(
        default="structural", description="severity of protocol conformance findings"
    )

    @field_validator("fail_on")
    @classmethod
    def _known_classes(cls, v: dict[str, Severity]) -> dict[str, Severity]:
        for name in v:
            problem = _unknown_drift_class(name)
            if problem is not None:
                raise _fail(problem, key=name)
        return v

    @field_validator("ignore")
    @classmethod
    def _known_rule_keys(cls, v: list[dict[str, str]]) -> list[dict[str, str]]:
        for i, rule in enumerate(v):
            if not rule:
                raise _fail(f"an empty rule would ignore every difference; give one or more of: {', '.join(IGNORE_KEYS)}",
                            at=(i,))
            for key in rule:
                if key not in IGNORE_KEYS:
                    raise _fail(f'unknown key "{key}" in an ignore rule{_suggest(key, IGNORE_KEYS)} '
                                f"Valid keys: {', '.join(IGNORE_KEYS)}", at=(i,), key=key)
            category = rule.get("category")
            # A glob (`notification*`) is not checked: only a plain name can be told a typo.
            if category is not None and not any(c in category for c in "*?"):
                problem = _unknown_drift_class(category)
                if problem is not None:
                    raise _fail(problem, at=(i, "category"))
        return v


class Config(_Strict):
    """The whole mcptape.yml."""

    version: Literal[1] = Field(default=1, description="format version of this file")
    golden_dir: str = Field(
        default="tapes", description="golden tapes, one per session; relative to this file"
    )
    servers: dict[str, Server] = Field(
        description="name -> a stdio server (`command`) or an HTTP server (`url`)"
    )
    sessions: list[Session] = Field(description="scripted client sessions; each has a golden tape")
    client: ClientSettings = Field(default_factory=ClientSettings, description="the scripted client")
    normalize: list[NormalizeRule] = Field(
        default_factory=list, description="volatile values that must not count as drift"
    )
    redact: RedactSettings = Field(default_factory=RedactSettings, description="extra secrets to scrub")
    drift: DriftSettings = Field(default_factory=DriftSettings, description="what fails the gate")

    @field_validator("version", mode="before")
    @classmethod
    def _known_version(cls, v: Any) -> Any:
        if isinstance(v, bool) or v not in CONFIG_VERSIONS:
            raise _fail(
                f"version {v!r} is not supported; this mcptape reads version "
                f"{', '.join(map(str, CONFIG_VERSIONS))}: write `version: 1` (or upgrade mcptape)"
            )
        return v

    @model_validator(mode="before")
    @classmethod
    def _server_shapes(cls, data: Any) -> Any:
        # Before pydantic picks a server model: "both" and "neither" deserve their own message.
        servers = data.get("servers") if isinstance(data, dict) else None
        if isinstance(servers, dict):
            for name, server in servers.items():
                if not isinstance(server, dict):
                    continue
                if "command" in server and "url" in server:
                    raise _fail(
                        "a server has either `command` (stdio) or `url` (HTTP), this one has both; "
                        "for an HTTP server launched by a command use `url` with `start:`",
                        at=("servers", name, "url"),
                    )
                if "command" not in server and "url" not in server:
                    raise _fail(
                        "the server has neither `command` (a stdio server, e.g. `command: [python, server.py]`) "
                        "nor `url` (an HTTP server, e.g. `url: http://127.0.0.1:8765/mcp`); add one",
                        at=("servers", name),
                    )
        return data

    @model_validator(mode="after")
    def _cross_checks(self) -> Config:
        if not self.sessions:
            raise _fail("there are no sessions; add at least one under `sessions:`", at=("sessions",))
        seen: dict[str, int] = {}
        for i, session in enumerate(self.sessions):
            if session.server not in self.servers:
                names = list(self.servers)
                raise _fail(
                    f'unknown server "{session.server}"{_suggest(session.server, names)} '
                    + (
                        f"Servers defined: {', '.join(names)}"
                        if names
                        else "No servers are defined under `servers:`"
                    ),
                    at=("sessions", i, "server"),
                )
            if session.name in seen:
                raise _fail(
                    f'duplicate session name "{session.name}" (also sessions[{seen[session.name]}]); '
                    "session names must be unique because each names its golden tape",
                    at=("sessions", i, "name"),
                )
            seen[session.name] = i
        return self

    def client_for(self, session: Session) -> ClientSettings:
        return session.client or self.client


# ---------------------------------------------------------------------------------------------
# Loading: YAML with line numbers, interpolation, error translation


Loc = tuple[str | int, ...]


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
        return _line_for(self.lines, loc)

    def step_line(self, session_index: int, step_index: int) -> int:
        return self.line_of("sessions", session_index, "steps", step_index)

    def session_line(self, session_index: int) -> int:
        return self.line_of("sessions", session_index)

    def step_where(self, session_index: int, step_index: int) -> str:
        """`mcptape.yml:14: sessions[0].steps[2]`, the prefix of a ConfigError about a step."""
        line = self.step_line(session_index, step_index)
        return f"{self.path}:{line}: sessions[{session_index}].steps[{step_index}]"

    @property
    def golden_dir(self) -> Path:
        return self.resolve(self.config.golden_dir)

    def resolve(self, path: str) -> Path:
        """A path written in the config, made absolute against the config file's directory."""
        return Path(os.path.normpath(self.base_dir / Path(path).expanduser()))


def _line_for(lines: Mapping[Loc, int], loc: Loc) -> int:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 1


def _describe(value: Any) -> str:
    """A value as an error message shows it: short, typed."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _field_name(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[\w-]+", part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "top level"


# A hand-written mcptape.yml holds a few thousand values. Aliases are expanded, not shared, so
# nested ones multiply (a "billion laughs" file of 1 KB is a billion values): the expansion stops
# at MAX_YAML_VALUES, which costs well under a second and a few tens of MB, with a ConfigError.
MAX_YAML_VALUES = 100_000
# Nesting deeper than a message may be (jsonrpc.MAX_DEPTH) is refused: it is far beyond any
# config, and it bounds the recursion here and the depth of the `arguments` mcptape sends.
MAX_YAML_DEPTH = MAX_DEPTH


class _YamlTree:
    """Builds plain Python data from the composed YAML node tree, remembering each node's line.

    Composing (not loading) keeps the nodes' marks; scalars are constructed by the same
    SafeConstructor yaml.safe_load uses, so values mean what they mean to any YAML reader.
    Refused with a ConfigError: more than MAX_YAML_VALUES values once aliases are expanded,
    nesting deeper than MAX_YAML_DEPTH, an alias that contains itself.
    """

    def __init__(self, loader: Any, display: str) -> None:
        self.loader = loader
        self.display = display
        self.lines: dict[Loc, int] = {}  # value lines; key lines win below (where `name:` is written)
        self.key_lines: dict[Loc, int] = {}
        self._active: set[int] = set()
        self._built = 0
        self._seen: set[int] = set()  # nodes built once: building one again expands an alias
        self._alias: Loc | None = None  # where the outermost alias being expanded is used

    def build(self, node: yaml.Node, loc: Loc) -> Any:
        self._built += 1
        outer = self._alias is None and id(node) in self._seen
        if outer:
            self._alias = loc
        self._seen.add(id(node))
        try:
            return self._build(node, loc)
        finally:
            if outer:
                self._alias = None

    def _build(self, node: yaml.Node, loc: Loc) -> Any:
        if self._built > MAX_YAML_VALUES:
            where = self._alias[:-1] if self._alias else loc  # the value that holds the `*alias`
            line = self.key_lines.get(where) or self.lines.get(where) or node.start_mark.line + 1
            raise ConfigError(
                f"{self.display}:{line}: {_field_name(where)}: YAML aliases (`*name`) here expand the file "
                f"to more than {MAX_YAML_VALUES} values (anchored parts repeating parts that repeat others: "
                "an alias bomb, or a config far larger than mcptape reads); write the repeated parts out, "
                "or nest fewer aliases"
            )
        if len(loc) > MAX_YAML_DEPTH:
            raise ConfigError(
                f"{self.display}:{node.start_mark.line + 1}: {_field_name(loc[:6])}…: values nested more than "
                f"{MAX_YAML_DEPTH} levels deep; mcptape.yml needs a handful: flatten this value"
            )
        self.lines[loc] = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, loc)
        if id(node) in self._active:
            raise ConfigError(
                f"{self.display}:{node.start_mark.line + 1}: {_field_name(loc)}: "
                "a YAML alias refers to itself; mcptape.yml cannot hold recursive data"
            )
        self._active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, (*loc, i)) for i, item in enumerate(node.value)]
            assert isinstance(node, yaml.MappingNode)
            explicit = {id(k) for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"}
            self.loader.flatten_mapping(node)  # YAML merge keys (`<<: *base`): merged pairs come first
            out: dict[str, Any] = {}
            explicit_seen: set[Loc] = set()
            for key_node, value_node in node.value:
                line = key_node.start_mark.line + 1
                if not isinstance(key_node, yaml.ScalarNode):
                    raise ConfigError(
                        f"{self.display}:{line}: {_field_name(loc)}: a key must be a plain name, "
                        "not a list or mapping; check the indentation"
                    )
                # The key's text, not its YAML type: `on:` or `1:` are names here, not true or 1.
                key = str(key_node.value)
                if key in out and id(key_node) in explicit and (*loc, key) in explicit_seen:
                    raise ConfigError(
                        f'{self.display}:{line}: {_field_name((*loc, key))}: duplicate key "{key}" '
                        f"(first at line {self.key_lines[(*loc, key)]}); YAML keeps only one, so remove or rename one"
                    )
                if id(key_node) in explicit:
                    explicit_seen.add((*loc, key))
                self.key_lines[(*loc, key)] = line
                out[key] = self.build(value_node, (*loc, key))  # an explicit key overrides a merged one
            return out
        finally:
            self._active.discard(id(node))

    def _scalar(self, node: yaml.ScalarNode, loc: Loc) -> Any:
        tag = node.tag
        if tag in (
            "tag:yaml.org,2002:null",
            "tag:yaml.org,2002:bool",
            "tag:yaml.org,2002:int",
            "tag:yaml.org,2002:float",
            "tag:yaml.org,2002:str",
        ):
            try:
                return self.loader.construct_object(node, deep=True)
            except yaml.YAMLError as e:
                raise ConfigError(
                    f"{self.display}:{node.start_mark.line + 1}: {_field_name(loc)}: "
                    f"cannot read {node.value!r} as {tag.rsplit(':', 1)[-1]} ({_one_line(str(e))})"
                ) from e
        if tag.startswith("tag:yaml.org,2002:"):  # timestamps, binary: keep the text the user wrote
            return str(node.value)
        raise ConfigError(
            f"{self.display}:{node.start_mark.line + 1}: {_field_name(loc)}: unsupported YAML tag "
            f"{tag}; remove it (mcptape.yml holds plain strings, numbers, lists and mappings)"
        )

    def line_map(self) -> dict[Loc, int]:
        return {**self.lines, **self.key_lines}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _parse_yaml(text: str, display: str) -> tuple[Any, dict[Loc, int]]:
    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it: faster
    loader = loader_cls(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            where = f"{display}:{mark.line + 1}:{mark.column + 1}" if mark else display
            what = _one_line(" ".join(p for p in (e.context, e.problem) if p))
            fix = (
                "mcptape.yml holds one document: remove the `---` separator and what follows it"
                if "single document" in what
                else "fix the syntax there (check indentation, a missing ':' or an unclosed quote or bracket)"
            )
            raise ConfigError(f"{where}: invalid YAML: {what}; {fix}") from e
        except yaml.YAMLError as e:
            raise ConfigError(f"{display}: invalid YAML: {_one_line(str(e))}") from e
        if node is None:
            raise ConfigError(
                f"{display}:1: the file is empty; start with `version: 1`, `servers:` and `sessions:` (see README)"
            )
        tree = _YamlTree(loader, display)
        data = tree.build(node, ())
        return data, tree.line_map()
    finally:
        loader.dispose()


_VAR = re.compile(r"\$\$\{|\$\{(?P<body>[^}]*)\}|\$\{")
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Sections whose strings are interpolated. normalize/redact/drift hold regexes and JSON paths,
# where "${" is more likely meant literally than as a variable.
_INTERPOLATED = ("servers", "sessions", "client", "golden_dir")


class _Interpolator:
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
        return ConfigError(f"{self.display}:{_line_for(self.lines, loc)}: {_field_name(loc)}: {message}")

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
            if not _VAR_NAME.fullmatch(name):
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


def _collect_secrets(
    config: Config, used: Mapping[Loc, dict[str, str]], display: str, lines: Mapping[Loc, int]
) -> dict[str, str]:
    """The redactor's known secrets: `env.NAME`/`headers.Name`/`command.--flag` -> value.

    What is a secret is redact.py's rule (`secret_reason`), applied to every value the config
    hands a server: `env:` and `headers:` values, `command:`/`start:` arguments and `url:`, and
    every `${VAR}` interpolated anywhere (by the variable's name, or the field it fills).
    `redact.env`/`redact.headers` mark more, `redact.allow` exempts values. A secret that is also
    mcptape's own text (a JSON key, a method name, a report word, a session name) is refused
    here: scrubbing it would rewrite every tape and report (redact.own_text_secrets).
    """
    from mcptape.redact import argv_secrets, own_text_secrets, secret_reason

    settings = config.redact
    allow = settings.allow
    marked_env = set(settings.env)
    marked_headers = {h.lower() for h in settings.headers}
    _check_marks(config, used, display, lines)
    secrets: dict[str, str] = {}
    where: dict[str, tuple[Loc, str]] = {}

    def add(name: str, value: str, server: str, loc: Loc, reason: str) -> None:
        if secrets.get(name, value) != value:  # same name, another server, another value
            name = f"{name}@{server}"
        secrets[name] = value
        where[name] = (loc, reason)

    for server_name, server in config.servers.items():
        base: Loc = ("servers", server_name)
        sections: list[tuple[str, Mapping[str, str]]] = [("env", server.env)]
        if isinstance(server, HttpServer):
            sections.append(("headers", server.headers))
        for section, values in sections:
            for key, value in values.items():
                loc = (*base, section, key)
                marked = key in marked_env if section == "env" else key.lower() in marked_headers
                reason = secret_reason(key, value, header=section == "headers", marked=marked, allow=allow)
                if reason:
                    # The redactor also knows the parts of it that are secrets alone (the token
                    # of `Bearer ${API_TOKEN}`), under this name unless the variable's says more.
                    add(f"{section}.{key}", value, server_name, loc, reason)
        command = server.command if isinstance(server, StdioServer) else (server.start or [])
        section = "command" if isinstance(server, StdioServer) else "start"
        argv = list(command) + ([server.url] if isinstance(server, HttpServer) else [])
        for source, value in argv_secrets(argv)[1].items():
            if value not in allow:
                add(source.replace("argv.", f"{section}.", 1), value, server_name, (*base, section), "it is a secret argument")
    # Every interpolated variable, wherever it is used (a tool argument too), by its own name.
    for loc, variables in used.items():
        for var, var_value in variables.items():
            reason = secret_reason(var, var_value, marked=var in marked_env, allow=allow)
            if reason and f"env.{var}" not in secrets:
                add(f"env.{var}", var_value, str(loc[1]) if len(loc) > 1 else "", loc, reason)

    own_names = [s.name for s in config.sessions] + list(config.servers) + [config.golden_dir, Path(display).name]
    for name in own_text_secrets(secrets, extra=own_names, allow=allow):
        loc, reason = where[name]
        raise ConfigError(
            f"{display}:{_line_for(lines, loc)}: {_field_name(loc)}: {name} is a secret ({reason}), but its "
            "value also occurs in mcptape's own text (a JSON key, an MCP method name, a word of the reports, "
            "or a session, server or golden_dir name), so it cannot be scrubbed without rewriting every tape "
            "and report",
            hint="if the value is not a secret, list it under redact.allow; if it is, give it a real secret "
            "value (or rename the session or server it matches)",
        )
    return secrets


def _check_marks(config: Config, used: Mapping[Loc, dict[str, str]], display: str, lines: Mapping[Loc, int]) -> None:
    """`redact.env`/`redact.headers` name something the config has: a typo must not leave a secret unmarked."""
    env_names = {k for server in config.servers.values() for k in server.env}
    env_names |= {var for variables in used.values() for var in variables}
    header_names = {
        k.lower(): k for server in config.servers.values() if isinstance(server, HttpServer) for k in server.headers
    }
    for i, name in enumerate(config.redact.env):
        if name not in env_names:
            choices = sorted(env_names)
            raise ConfigError(
                f"{display}:{_line_for(lines, ('redact', 'env', i))}: redact.env[{i}]: \"{name}\" is neither a "
                f"key of a server's env: nor a ${{VAR}} this config uses{_suggest(name, choices)} "
                + (f"Variables: {', '.join(choices)}" if choices else "This config has no variables")
            )
    for i, name in enumerate(config.redact.headers):
        if name.lower() not in header_names:
            choices = sorted(header_names.values())
            raise ConfigError(
                f"{display}:{_line_for(lines, ('redact', 'headers', i))}: redact.headers[{i}]: \"{name}\" is not a "
                f"header of any server{_suggest(name, choices)} "
                + (f"Headers: {', '.join(choices)}" if choices else "No server has headers:")
            )


# pydantic error type -> what was expected, for type errors.
_EXPECTED = {
    "string_type": "a string",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping (key: value)",
    "model_type": "a mapping (key: value)",
    "model_attributes_type": "a mapping (key: value)",
    "list_type": "a list",
    "union_tag_not_found": "a mapping with `command` (stdio server) or `url` (HTTP server)",
    "union_tag_invalid": "a mapping with `command` (stdio server) or `url` (HTTP server)",
}
_TAGS = {"stdio server", "http server"}


def _expected(error: Mapping[str, Any]) -> str | None:
    if error["type"] == "literal_error":
        return str((error.get("ctx") or {}).get("expected", "")) or None
    return _EXPECTED.get(error["type"])


def _user_loc(loc: Loc) -> Loc:
    """The pydantic location without union-member labels (`stdio server`, `dict[str,any]`, ...)."""
    return tuple(p for p in loc if not (isinstance(p, str) and (p in _TAGS or "[" in p)))


def _valid_keys(loc: Loc) -> list[str]:
    """The keys allowed in the mapping at `loc` (a user location), from the models."""
    from typing import Union, get_args, get_origin

    def leaves(tp: Any) -> list[Any]:  # unwrap Annotated[...] and unions down to models/list/dict
        origin = get_origin(tp)
        if origin is Annotated:
            return leaves(get_args(tp)[0])
        if origin is Union or origin is types.UnionType:
            return [leaf for arg in get_args(tp) for leaf in leaves(arg)]
        return [tp]

    current: list[Any] = [Config]
    for part in loc:
        nxt: list[Any] = []
        for tp in current:
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                if isinstance(part, str) and part in tp.model_fields:
                    nxt.append(tp.model_fields[part].annotation)
            elif get_origin(tp) in (list, dict) and get_args(tp):
                nxt.append(get_args(tp)[-1])
        current = [leaf for tp in nxt for leaf in leaves(tp)]
    keys = [
        k for tp in current if isinstance(tp, type) and issubclass(tp, BaseModel) for k in tp.model_fields
    ]
    return list(dict.fromkeys(keys))


def _message_for(error: Mapping[str, Any], same_loc: Sequence[Mapping[str, Any]]) -> tuple[Loc, Loc, str]:
    """(location shown, location for the line, what is wrong + the fix) for one pydantic error."""
    loc = _user_loc(tuple(error["loc"]))
    kind = error["type"]
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if kind == "mcptape":
        shown = (*loc, *ctx.get("at", ()))
        line_loc = (*shown, ctx["key"]) if ctx.get("key") else shown
        return shown, line_loc, str(ctx["message"])
    if kind == "extra_forbidden":
        parent, key = loc[:-1], str(loc[-1])
        raw = tuple(error["loc"])
        tagged = [m for t, m in (("stdio server", StdioServer), ("http server", HttpServer)) if t in raw]
        valid = list(tagged[0].model_fields) if tagged else _valid_keys(parent)
        where = "at the top level" if not parent else f"in {_field_name(parent)}"
        return loc, loc, f'unknown key "{key}" {where}{_suggest(key, valid)} Valid keys: {", ".join(valid)}'
    if kind == "missing":
        field_name = str(loc[-1])
        return loc, loc[:-1], f'"{field_name}" is required; add `{field_name}:` here'
    if len(same_loc) > 1 or kind in _EXPECTED:  # a type error, or a union whose members all failed
        expected = [_expected(e) for e in same_loc]
        if all(expected):
            return (
                loc,
                loc,
                f"expected {' or '.join(dict.fromkeys(e for e in expected if e))}, got {_describe(value)}",
            )
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = next(iter(ctx.values()))
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        words = {
            "greater_than": "greater than",
            "greater_than_equal": "at least",
            "less_than": "less than",
            "less_than_equal": "at most",
        }[kind]
        return loc, loc, f"must be {words} {bound}, got {_describe(value)}"
    if kind == "literal_error":
        allowed: list[str] = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        return (
            loc,
            loc,
            (
                f"unknown value {_describe(value)}{_suggest(str(value), allowed)} "
                f"Valid: {', '.join(allowed) or ctx.get('expected')}"
            ),
        )
    if kind == "string_pattern_mismatch":
        return (
            loc,
            loc,
            (
                f"{_describe(value)} may contain only letters, digits, '_', '.' and '-' "
                "(it names the golden tape file)"
            ),
        )
    if kind == "value_error":
        return loc, loc, str(ctx.get("error", error.get("msg")))
    return loc, loc, f"{error.get('msg', 'invalid value')}, got {_describe(value)}"


def _translate(e: ValidationError, display: str, lines: Mapping[Loc, int]) -> ConfigError:
    errors = e.errors()
    if not errors:  # pragma: no cover - pydantic always lists at least one
        return ConfigError(f"{display}: invalid config")
    found = []
    for err in errors:
        same = [other for other in errors if _user_loc(tuple(other["loc"])) == _user_loc(tuple(err["loc"]))]
        shown, line_loc, what = _message_for(err, same)
        found.append((_line_for(lines, line_loc), shown, what))
    # The first problem in file order: the one a reader meets first when opening the file.
    line, shown, what = min(found, key=lambda f: f[0])
    distinct_places = {(f[0], f[1]) for f in found}
    more = len(distinct_places) - 1
    tail = f" ({more} more problem{'s' if more > 1 else ''} after this one)" if more > 0 else ""
    return ConfigError(_one_line(f"{display}:{line}: {_field_name(shown)}: {what}{tail}"))


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

    data, lines = _parse_yaml(text, display)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{display}:{lines.get((), 1)}: top level: expected a mapping with `version`, `servers` and `sessions`, "
            f"got {_describe(data)}; write `key: value` lines at the top level"
        )

    interpolator = _Interpolator(os.environ if env is None else env, display, lines)
    for key in _INTERPOLATED:
        if key in data:
            data[key] = interpolator.walk(data[key], (key,))

    try:
        config = Config.model_validate(data)
    except ValidationError as e:
        raise _translate(e, display, lines) from None

    return LoadedConfig(
        config=config,
        path=p,
        base_dir=p.resolve().parent,
        secrets=_collect_secrets(config, interpolator.used, display, lines),
        lines=lines,
    )


# ---------------------------------------------------------------------------------------------
# JSON Schema: the file as users write it (steps in shorthand), not the internal Step model


_OPTION_SCHEMAS: dict[str, dict[str, Any]] = {
    "arguments": {
        "type": "object",
        "description": "arguments, as the tool's or prompt's input schema wants them",
    },
    "params": {"type": "object", "description": "the request's params, sent as written"},
    "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "seconds for this step"},
    "count": {"type": "integer", "minimum": 1, "description": "stop after this many notifications"},
    "duration": {"type": "number", "exclusiveMinimum": 0, "description": "stop after this many seconds"},
}


def _step_schema() -> dict[str, Any]:
    bare = [a for a, spec in ACTIONS.items() if not spec.target and not spec.required]
    variants: list[dict[str, Any]] = [
        {
            "type": "string",
            "enum": bare,
            "description": "a step without options: " + "; ".join(f"{a}: {ACTIONS[a].doc}" for a in bare),
        }
    ]
    for action, spec in ACTIONS.items():
        if spec.target is None:
            value: dict[str, Any] = {"type": "null", "description": f"{spec.doc} (no value)"}
        elif action == "set_log_level":
            value = {
                "type": "string",
                "enum": list(LOG_LEVELS),
                "description": f"{spec.doc}: the {spec.target}",
            }
        else:
            value = {"type": "string", "minLength": 1, "description": f"{spec.doc}: the {spec.target}"}
        variants.append(
            {
                "type": "object",
                "description": spec.doc,
                "properties": {action: value, **{o: _OPTION_SCHEMAS[o] for o in spec.options}},
                "required": [action, *spec.required],
                "additionalProperties": False,
            }
        )
    return {
        "title": "Step",
        "description": "one client action: `- list_tools`, or a mapping with one action key and its options, "
        "e.g. `- call: add` with `arguments: {a: 2, b: 3}`",
        "oneOf": variants,
    }


def json_schema() -> dict[str, Any]:
    """The JSON Schema of mcptape.yml, as published for editors."""
    schema = copy.deepcopy(Config.model_json_schema())
    defs = schema["$defs"]
    defs["Step"] = _step_schema()
    # What validators check beyond types, said where an editor can see it.
    defs["Session"]["properties"]["steps"]["minItems"] = 1
    schema["properties"]["sessions"]["minItems"] = 1
    defs["NormalizeRule"]["oneOf"] = [{"required": ["path"]}, {"required": ["pattern"]}]
    defs["RedactSettings"]["properties"]["patterns"]["items"]["format"] = "regex"
    drift = defs["DriftSettings"]["properties"]
    severity = drift["fail_on"]["additionalProperties"]
    drift["fail_on"]["properties"] = {name: severity for name in drift_classes()}
    drift["fail_on"]["additionalProperties"] = False
    drift["ignore"]["items"] = {
        "type": "object",
        "description": "a difference matching every key given is not reported; each value is a glob (* and ?)",
        "properties": {
            "path": {"type": "string", "description": "the finding's path, or anything beneath it"},
            "category": {"type": "string", "description": "category.kind, e.g. schema.cosmetic or notification*"},
            "method": {"type": "string", "description": "the call's method, e.g. tools/call"},
            "name": {"type": "string", "description": "the tool, prompt or resource URI"},
        },
        "additionalProperties": False,
        "minProperties": 1,
    }
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "mcptape.yml"
    schema["description"] = (
        "mcptape configuration: servers, scripted sessions and how their tapes are compared. "
        "${VAR} and ${VAR:-default} are interpolated in servers, sessions, client and golden_dir; $${ is a literal ${."
    )
    return schema


def schema_text() -> str:
    """json_schema() exactly as `mcptape schema` prints it and schema/mcptape.schema.json holds it."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


def run_schema(args: argparse.Namespace) -> int:
    sys.stdout.write(schema_text())
    return 0
