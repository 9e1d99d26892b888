"""mcptape.yml's pydantic models: the shape of the file and the checks within and between sections.

The step shorthand (`- list_tools`, `- call: add` + `arguments:`) is parsed here; every problem a
validator finds is raised with `_fail`, which load.py turns into one file:line paragraph. What a
step *does* is live/client.py's, how sessions run is ci's, the JSON path grammar jsonpath.py's.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from mcptape.config.answers import SCRIPT_KEYS, is_matched_item
from mcptape.config.auth import OAuthClientAuth
from mcptape.config.interpolate import VAR_NAME
from mcptape.config.locations import describe, suggest
from mcptape.config.os_text import MAX_SESSION_NAME, OsPath, no_nul
from mcptape.jsonpath import PATH_SCHEMA_PATTERN, SUPPORTED_PATHS, PathSegment, parse_json_path
from mcptape.mcp import PROTOCOL_VERSIONS
from mcptape.verdict.vocabulary import FINDING_KINDS, IGNORE_KEYS, Severity, drift_classes

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
STEP_OPTIONS = ("arguments", "params", "timeout", "count", "duration", "task")


@dataclass(frozen=True)
class ActionSpec:
    """What one step action takes: its target (the value of the action key) and its options."""

    doc: str
    target: str | None = None  # what the action key's value names; None: the action takes no value
    options: tuple[str, ...] = ("timeout",)
    required: tuple[str, ...] = ()  # options that must be given


ACTIONS: dict[str, ActionSpec] = {
    "list_tools": ActionSpec("tools/list: record the tools the server offers"),
    "call": ActionSpec("tools/call: call a tool with `arguments` (`task: true`: as a task, polled to its end)",
                       "tool name", ("arguments", "timeout", "task")),
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


def _check_protocol(value: str | None) -> str | None:
    # `both`: ci records the session in both eras, a golden each (ci/eras.py).
    if value is None or value in ("auto", "both") or value in PROTOCOL_VERSIONS:
        return value
    raise _fail(
        f'unknown protocol version "{value}"{suggest(str(value), ("auto", "both", *PROTOCOL_VERSIONS))} '
        f"Valid: auto, both, {', '.join(PROTOCOL_VERSIONS)}"
    )


def _stringify_values(v: Any) -> Any:
    """env/header values: YAML reads `PORT: 8080` as a number; a process environment holds strings."""
    if not isinstance(v, dict):
        return v
    out: dict[Any, Any] = {}
    for k, val in v.items():
        no_nul(k, "the name", at=(k,))
        no_nul(val, "the value", at=(k,))
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
        no_nul(v, "the command")
        try:
            return shlex.split(v)
        except ValueError as e:  # unbalanced quotes
            raise _fail(
                f"cannot split the command like a shell would ({e}); balance the quotes or write a list"
            ) from e
    for i, arg in enumerate(v if isinstance(v, list) else []):
        no_nul(arg, f"argument {i + 1} of the command", at=(i,))
    return v


_PROTOCOL_SCHEMA = {"enum": ["auto", "both", *PROTOCOL_VERSIONS], "type": "string"}
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
    cwd: OsPath | None = Field(default=None, description="working directory, relative to the config file")
    protocol: Annotated[str | None, WithJsonSchema(_PROTOCOL_SCHEMA)] = Field(
        default=None, description="protocol version for this server (default: the client block's)"
    )
    private_home: bool = Field(
        default=False,
        description="give the server a fresh HOME and temp dir for each run, removed after it: what it keeps "
        "between runs (usage counters, caches of its own) is not drift. Package caches (npm, uv) stay shared",
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
    cwd: OsPath | None = Field(
        default=None, description="working directory of `start`, relative to the config file"
    )
    auth: OAuthClientAuth | None = Field(
        default=None, description="OAuth client credentials for a server that wants a token (streamable-http)"
    )
    ready_timeout: float = Field(default=20.0, gt=0, description="seconds to wait for the URL to answer")
    protocol: Annotated[str | None, WithJsonSchema(_PROTOCOL_SCHEMA)] = Field(
        default=None, description="protocol version for this server (default: the client block's)"
    )
    private_home: bool = Field(
        default=False,
        description="give the `start` command a fresh HOME and temp dir for each run, removed after it: what it keeps "
        "between runs (usage counters, caches of its own) is not drift. Package caches (npm, uv) stay shared",
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

    @model_validator(mode="after")
    def _auth_fits(self) -> HttpServer:
        if self.auth is not None and self.transport == "sse":
            raise _fail("`auth:` gets tokens for streamable HTTP; a legacy `transport: sse` server takes "
                        "a token in `headers:`", at=("auth",))
        if self.auth is not None and any(k.lower() == "authorization" for k in self.headers):
            raise _fail("the server has `auth:` and an Authorization header; `auth:` sends the token it gets, "
                        "so give one of the two", at=("auth",))
        return self

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
    task: bool | None = None  # call: as a task (2025-11-25 params.task, or 2026-07-28's tasks extension), polled to its end

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
                f'unknown step "{data}"{suggest(data, STEP_ACTIONS)} Valid steps: {", ".join(STEP_ACTIONS)}'
            )
        if not isinstance(data, dict):
            raise _fail(
                f"expected a step, got {describe(data)}; write an action name (`- list_tools`) "
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
                    f'unknown step "{k}"{suggest(k, STEP_ACTIONS)} Valid steps: {", ".join(STEP_ACTIONS)}',
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
                f'unknown option "{k}" for {action}{suggest(k, list(spec.options))} {action} takes: {", ".join(spec.options)}',
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
                f"{what}, got {describe(target)}; put options beside the action, not under it: "
                f"`- {action}:{' NAME' if spec.target else ''}`, then its options "
                f"(e.g. `timeout: 5`) on the next lines, indented like `{action}`",
                key=action,
            )
        if target is not None and not isinstance(target, str):
            if spec.target is None:
                raise _fail(
                    f"`{action}` takes no value, got {describe(target)}; write `- {action}`", key=action
                )
            raise _fail(
                f"`{action}` needs a {spec.target} (a string), got {describe(target)}; quote it", key=action
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
                f'unknown log level "{self.target}"{suggest(str(self.target), LOG_LEVELS)} Valid: {", ".join(LOG_LEVELS)}',
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
        default="auto", description="auto (discover, then initialize), a pinned protocol version, or both (ci records "
        "each session in 2026-07-28 and 2025-11-25, a golden tape each: <session>@<version>)"
    )
    name: str = Field(default="mcptape", description="clientInfo.name sent to the server")
    version: str | None = Field(default=None, description="clientInfo.version (default: mcptape's version)")
    capabilities: dict[str, Any] = Field(
        default_factory=dict, description="declared client capabilities, e.g. {roots: {}, sampling: {}}"
    )
    roots: list[dict[str, str]] = Field(
        default_factory=list, description="answer to roots/list: [{uri, name}]"
    )
    sampling: dict[str, Any] | Literal["decline"] | list[dict[str, Any] | Literal["decline"]] | None = Field(
        default=None,
        description="canned sampling/createMessage result, or decline; or a list for a conversation: answers "
        "used in order, and {when, contains, answer|decline} items matched on the request (mcptape/config/answers.py)",
    )
    elicitation: dict[str, Any] | Literal["decline"] | list[dict[str, Any] | Literal["decline"]] | None = Field(
        default=None,
        description="canned elicitation/create result, or decline; or a list, as for sampling",
    )

    @field_validator("protocol")
    @classmethod
    def _protocol(cls, v: str) -> str:
        return _check_protocol(v) or v

    @field_validator("sampling", "elicitation")
    @classmethod
    def _script(cls, v: Any) -> Any:
        if not isinstance(v, list):
            return v
        if not v:
            raise ValueError("an empty list answers nothing: give answers, or leave the key out")
        for n, item in enumerate(v):
            if not is_matched_item(item):
                continue
            unknown = sorted(set(item) - SCRIPT_KEYS)
            if unknown:
                raise ValueError(f"item {n}: unknown key {unknown[0]!r} in a matched answer; "
                                 f"keys: {', '.join(sorted(SCRIPT_KEYS))}")
            if ("answer" in item) == bool(item.get("decline")):
                raise ValueError(f"item {n}: a matched answer needs `answer: {{...}}` or `decline: true` (one of them)")
            if "answer" in item and not isinstance(item["answer"], dict):
                raise ValueError(f"item {n}: `answer` is the result object the request gets")
            if "when" in item and not isinstance(item["when"], dict):
                raise ValueError(f"item {n}: `when` is an object the request's params must hold")
        return v


class Session(_Strict):
    """One scripted client session against one server; its golden tape is `<golden_dir>/<name>`."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", max_length=MAX_SESSION_NAME,
                      description="also the golden tape's file name")
    server: str = Field(description="a key of `servers`")
    steps: list[Step] = Field(description="what the client does, in order")
    client: ClientSettings | None = Field(default=None, description="overrides the top-level client block")
    timeout: float = Field(default=120.0, gt=0, description="seconds for the whole session")
    step_timeout: float = Field(
        default=30.0, gt=0, description="seconds for one step (a step's `timeout` wins)"
    )
    sandbox: list[OsPath] = Field(default_factory=list, description="directories the server may write to")

    @field_validator("steps")
    @classmethod
    def _some_steps(cls, v: list[Step]) -> list[Step]:
        if not v:
            raise _fail("the session has no steps; add at least one, e.g. `- list_tools`")
        return v


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
        description=f"JSON path of the values to replace ({SUPPORTED_PATHS})",
        json_schema_extra={"pattern": PATH_SCHEMA_PATTERN},
    )
    pattern: str | None = Field(
        default=None,
        description="regex; every match inside any string is replaced",
        json_schema_extra={"format": "regex"},
    )
    replace: str = Field(default="<NORMALIZED>", description="the placeholder written instead")
    order: Literal["sorted"] | None = Field(
        default=None,
        description="`sorted`: instead of a placeholder, put the items of what the rule selects in a canonical "
        "order (a list's items; a text's lines, or its comma- or space-separated items): for a server that lists "
        "the same things in random order. An item added, removed or changed still drifts",
    )
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
    """Secrets beyond what mcptape finds on its own (see `secret_reason`), and values that are not."""

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
            if not VAR_NAME.fullmatch(name):
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
        return (f'unknown drift category "{name}"{suggest(name, classes)} '
                f"Categories: {', '.join(FINDING_KINDS)} (a category or category.kind)")
    kinds = FINDING_KINDS[category]
    return (f'unknown drift class "{name}"{suggest(name, [f"{category}.{k}" for k in kinds])} '
            f"Kinds of {category}: {', '.join(kinds)} (or `{category}` for all of them)")


class DriftSettings(_Strict):
    """What fails the gate: a severity per class, and rules that ignore differences.

    The names a key or rule may use are verdict/vocabulary.py's (FINDING_KINDS, IGNORE_KEYS), checked here
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
    budget: int | None = Field(
        default=None, ge=1,
        description="most bytes the listed tools and the instructions may cost every agent that loads them "
        "(UTF-8 JSON as sent); more is a `context.budget` finding, structural unless `fail_on` says otherwise",
    )

    min_strength: int | None = Field(
        default=None, ge=0, le=100,
        description="least gate strength, in percent, that `mcptape ci` and `mcptape check --strength` accept: the "
        "share of changes derived from the golden tapes (a tool removed, a result changed, ...) that fail the gate; "
        "a weaker gate exits 3 and names the rules and uncalled tools that let changes through",
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
                    raise _fail(f'unknown key "{key}" in an ignore rule{suggest(key, IGNORE_KEYS)} '
                                f"Valid keys: {', '.join(IGNORE_KEYS)}", at=(i,), key=key)
            category = rule.get("category")
            # A glob (`notification*`) is not checked: only a plain name can be told a typo.
            if category is not None and not any(c in category for c in "*?"):
                problem = _unknown_drift_class(category)
                if problem is not None:
                    raise _fail(problem, at=(i, "category"))
        return v


class BaselineSettings(_Strict):
    """`mcptape ci --baseline REF`: what the checkout of REF needs before its servers can start."""

    setup: list[Annotated[list[str], WithJsonSchema(_COMMAND_SCHEMA)]] = Field(
        default_factory=list,
        description="commands run in order in REF's checkout, in the config file's directory there "
        "(e.g. `npm ci`, `npm run build`, `pip install -e .`)",
    )
    servers: dict[str, list[Annotated[list[str], WithJsonSchema(_COMMAND_SCHEMA)]]] = Field(
        default_factory=dict,
        description="server name -> commands run in that server's `cwd:` in REF's checkout, only when a "
        "selected session uses the server",
    )
    env: Annotated[dict[str, str], WithJsonSchema(_STRING_MAP_SCHEMA)] = Field(
        default_factory=dict, description="variables the setup commands get besides PATH, HOME, LANG..."
    )
    timeout: float = Field(default=900.0, gt=0, description="seconds for each setup command")
    runs: int = Field(default=2, ge=2, description="runs of the base side; what varies between them is normalized")

    @field_validator("setup", mode="before")
    @classmethod
    def _split_setup(cls, v: Any) -> Any:
        return [_split_command(c) for c in v] if isinstance(v, list) else v

    @field_validator("servers", mode="before")
    @classmethod
    def _split_servers(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        return {k: [_split_command(c) for c in cmds] if isinstance(cmds, list) else cmds for k, cmds in v.items()}

    @field_validator("env", mode="before")
    @classmethod
    def _env_strings(cls, v: Any) -> Any:
        return _stringify_values(v)


class Config(_Strict):
    """The whole mcptape.yml."""

    version: Literal[1] = Field(default=1, description="format version of this file")
    golden_dir: OsPath = Field(
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
    baseline: BaselineSettings = Field(
        default_factory=BaselineSettings, description="`ci --baseline REF`: setting up REF's checkout"
    )

    @field_validator("version", mode="before")
    @classmethod
    def _known_version(cls, v: Any) -> Any:
        if isinstance(v, str) and v.strip() in {str(known) for known in CONFIG_VERSIONS}:
            raise _fail(
                f"version {v!r} is a quoted string, and the version is a number: write `version: {v.strip()}` "
                "without quotes"
            )
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
                    f'unknown server "{session.server}"{suggest(session.server, names)} '
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
        for name in self.baseline.servers:
            if name not in self.servers:
                raise _fail(f'unknown server "{name}"{suggest(name, list(self.servers))} '
                            f"Servers defined: {', '.join(self.servers)}", at=("baseline", "servers", name))
        return self

    def client_for(self, session: Session) -> ClientSettings:
        return session.client or self.client

