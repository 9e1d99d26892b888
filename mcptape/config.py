"""mcptape.yml: the pydantic models of the file, and loading it with file:line errors.

Owns the shape of the config and its validation; what a step *does* is client.py's, how
sessions run is ci.py's. The JSON Schema that editors use is generated from these models
(`mcptape schema`).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
LEGACY_DEFAULT_PROTOCOL = "2025-06-18"  # the newest version every reference server accepts as asked

# Step actions: the one key a step mapping carries (or the bare string of a step without options).
STEP_ACTIONS = (
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
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StdioServer(_Strict):
    """A server launched as a process and spoken to over stdin/stdout."""

    command: list[str] = Field(description="argv of the server; a string is split like a shell would")
    env: dict[str, str] = Field(default_factory=dict, description="variables passed to the server (secrets are redacted)")
    cwd: str | None = Field(default=None, description="working directory, relative to the config file")
    protocol: str | None = Field(default=None, description="protocol version for this server (default: the session's)")

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return shlex.split(v) if isinstance(v, str) else v

    @field_validator("command")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("command must name a program")
        return v


class HttpServer(_Strict):
    """A server reached over streamable HTTP (or legacy HTTP+SSE), optionally started first."""

    url: str = Field(description="MCP endpoint, e.g. http://127.0.0.1:8765/mcp")
    transport: Literal["streamable-http", "sse"] = "streamable-http"
    headers: dict[str, str] = Field(default_factory=dict, description="sent with every request (values are secrets)")
    start: list[str] | None = Field(default=None, description="command that launches the server before the session")
    env: dict[str, str] = Field(default_factory=dict, description="variables for the `start` command")
    cwd: str | None = None
    ready_timeout: float = Field(default=20.0, gt=0, description="seconds to wait for the URL to answer")
    protocol: str | None = None

    @field_validator("start", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return shlex.split(v) if isinstance(v, str) else v


Server = StdioServer | HttpServer


class Step(_Strict):
    """One client action. Written as `- list_tools` or `- call: add` with options beside it."""

    action: Literal[
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
    target: str | None = None  # tool name, resource URI, prompt name, log level or raw method
    arguments: dict[str, Any] | None = None  # call / get_prompt arguments
    params: dict[str, Any] | None = None  # request / notify / complete params
    timeout: float | None = Field(default=None, gt=0)
    count: int | None = Field(default=None, ge=1)  # listen: stop after this many notifications
    duration: float | None = Field(default=None, gt=0)  # listen: stop after this many seconds


class ClientSettings(_Strict):
    """How the scripted client presents itself and answers the server's own requests."""

    protocol: str = Field(default="auto", description="auto (discover, then initialize) or a pinned version")
    name: str = "mcptape"
    version: str | None = None
    capabilities: dict[str, Any] = Field(default_factory=dict, description="e.g. {roots: {}, sampling: {}}")
    roots: list[dict[str, str]] = Field(default_factory=list, description="answer to roots/list")
    sampling: dict[str, Any] | Literal["decline"] | None = Field(
        default=None, description="canned sampling/createMessage result, or decline"
    )
    elicitation: dict[str, Any] | Literal["decline"] | None = Field(
        default=None, description="canned elicitation/create result, or decline"
    )


class Session(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="also the golden tape's file name")
    server: str
    steps: list[Step]
    client: ClientSettings | None = None  # overrides the top-level client block
    timeout: float = Field(default=120.0, gt=0, description="seconds for the whole session")
    step_timeout: float = Field(default=30.0, gt=0, description="seconds for one step")
    sandbox: list[str] = Field(default_factory=list, description="directories the server may write to")


class NormalizeRule(_Strict):
    """A volatile value -> placeholder: by JSON path (`$..timestamp`) or by regex over strings."""

    path: str | None = None
    pattern: str | None = None
    replace: str = "<NORMALIZED>"
    reason: str | None = None

    @model_validator(mode="after")
    def _one_selector(self) -> NormalizeRule:
        if (self.path is None) == (self.pattern is None):
            raise ValueError("give exactly one of `path` (a JSON path) or `pattern` (a regex)")
        return self


class RedactSettings(_Strict):
    patterns: list[str] = Field(default_factory=list, description="extra secret regexes")
    allow: list[str] = Field(default_factory=list, description="values never treated as secrets")


class DriftSettings(_Strict):
    """What fails the gate: a severity per class, and rules that ignore differences."""

    added_surface: Literal["structural", "output", "info"] = "structural"
    fail_on: dict[str, Literal["structural", "output", "info"]] = Field(default_factory=dict)
    ignore: list[dict[str, str]] = Field(default_factory=list)
    conformance: Literal["structural", "output", "info"] = "structural"


class Config(_Strict):
    version: Literal[1] = 1
    golden_dir: str = "tapes"
    servers: dict[str, StdioServer | HttpServer]
    sessions: list[Session]
    client: ClientSettings = Field(default_factory=ClientSettings)
    normalize: list[NormalizeRule] = Field(default_factory=list)
    redact: RedactSettings = Field(default_factory=RedactSettings)
    drift: DriftSettings = Field(default_factory=DriftSettings)

    def client_for(self, session: Session) -> ClientSettings:
        return session.client or self.client


def json_schema() -> dict[str, Any]:
    """The JSON Schema of mcptape.yml, as published for editors."""
    schema = Config.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "mcptape.yml"
    return schema


def run_schema(args: argparse.Namespace) -> int:
    json.dump(json_schema(), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0
