"""Conformance: every recorded message checked against the MCP schema of the tape's protocol revision.

Owns the question "did this peer speak MCP correctly?", asked of one tape on its own: each
JSON-RPC message is validated against the wire models of the official `mcp-types` package for
the tape's negotiated revision, and each `tools/call` result's `structuredContent` against the
`outputSchema` the tool declared earlier in the same tape. Pure: plain data in, Findings out.

Leaves to others: whether a finding fails the gate (the caller passes DriftSettings.conformance
as `severity`; diff/ci apply `fail_on`/`ignore` as for any finding), where findings are shown
(report/), and the comparison of two tapes (diff/).

Which model checks which message (the per-revision maps of `mcp_types.methods`, the package's
public API; its `_v*` modules are generated from the published schema of each revision):
    request / notification, c2s      CLIENT_REQUESTS / CLIENT_NOTIFICATIONS   (whole frame)
    request / notification, s2c      SERVER_REQUESTS / SERVER_NOTIFICATIONS   (whole frame)
    response, s2c                    SERVER_RESULTS[method the response answers] (`result`)
    response, c2s                    CLIENT_RESULTS[method of the server request] (`result`)
    error, either way                JSONRPCErrorResponse of the revision's schema era
The package validates the legacy revisions 2024-11-05 .. 2025-06-18 with the 2025-11-25 models
(one schema era) but gates methods per revision, and so do we. A `server/discover` exchange is
always checked as 2026-07-28: it is the probe a client sends before any version is agreed.
Methods no revision defines (extensions, `tasks/*` which the package leaves out) get only the
JSON-RPC envelope check, so a server's own methods are never flagged.

Depth: a message arrives here at most jsonrpc.MAX_DEPTH levels deep, parts nested deeper kept
as text (deep markers; the recording's `deep_json` note says so). Such parts sit inside
free-form fields (`structuredContent`, `_meta`, schemas) where the MCP models do not look; a
structuredContent holding one is not checked against its outputSchema (its deep parts were
never parsed), and a schema or value too deep for jsonschema's recursion is a finding saying it
could not be checked, never a crash.

`mcp_types` (pydantic models, about half a second to import), pydantic and `jsonschema` are
imported at module level: this module is imported only where conformance is checked (`mcptape
ci`, `diff --conformance`, through gate.py's `loaded`), never on the path of `mcptape --version`
or `mcptape play`; and ci imports it in the main thread while its sessions' servers start
(gate.load), so no thread does a first import of these packages (they are entered at several
modules, which can race).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jsonschema
import mcp_types._v2025_11_25 as v2025
import mcp_types._v2026_07_28 as v2026
from jsonschema.validators import validator_for
from mcp_types import methods as m
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError
from referencing.exceptions import Unresolvable

from mcptape.diff.values import join, show
from mcptape.jsonrpc import holds_deep
from mcptape.mcp import LEGACY_NEWEST, MODERN_PROTOCOL, era, meta_version
from mcptape.tape.events import C2S, S2C, is_message
from mcptape.tape.format import Tape
from mcptape.verdict.model import Finding
from mcptape.verdict.vocabulary import Severity

MAX_PER_MESSAGE = 5  # a reviewer reads the first few; a broken serializer would repeat itself 100 times

Problem = tuple[str, str, str]  # (path inside the message, rule broken, finding kind)


@dataclass
class _Surface:
    """The per-revision model maps of mcp_types.methods, looked up by (method, version)."""

    requests: dict[str, Any]
    notifications: dict[str, Any]
    results: dict[str, Any]
    errors: dict[str, Any]  # schema era ("legacy" | "modern") -> JSONRPCErrorResponse model

    @classmethod
    def load(cls) -> _Surface:
        return cls(
            requests={C2S: m.CLIENT_REQUESTS, S2C: m.SERVER_REQUESTS},
            notifications={C2S: m.CLIENT_NOTIFICATIONS, S2C: m.SERVER_NOTIFICATIONS},
            # A response travels the other way from the request it answers.
            results={S2C: m.SERVER_RESULTS, C2S: m.CLIENT_RESULTS},
            errors={"legacy": v2025.JSONRPCErrorResponse, "modern": v2026.JSONRPCErrorResponse},
        )

    def validate(self, model: Any, data: Any) -> list[dict[str, Any]]:
        """Pydantic errors of `data` against `model` (a model class or a union), [] if it conforms.

        Strict, so JSON types are not coerced ("1" is not an int, 1 is not a bool), and by alias
        only, as the wire spells fields (`inputSchema`, never `input_schema`).
        """
        try:
            _adapter(model).validate_python(data, strict=True, by_name=False)
        except ValidationError as e:
            return [dict(err) for err in e.errors(include_url=False)]
        return []


@functools.cache
def _adapter(model: Any) -> Any:
    """One TypeAdapter per model for the life of the process: building one costs far more than using it."""
    return TypeAdapter(model)


def check_tape(tape: Tape, *, severity: Severity = "structural") -> list[Finding]:
    """Conformance findings of one tape, in tape order; [] for a conformant tape.

    Each finding: category "conformance", path "<tape line>:<path inside the message>",
    message the rule broken and the revision it belongs to, kind "schema" (MCP schema) or
    "output_schema" (structuredContent vs the tool's outputSchema). At most MAX_PER_MESSAGE
    per message. One "info" finding (kind "version") says so when the revision had to be guessed.
    """
    return [finding for _, finding in check_tape_placed(tape, severity=severity)]


def check_tape_placed(tape: Tape, *, severity: Severity = "structural", cap: bool = True) -> list[tuple[int, Finding]]:
    """check_tape, each finding with the index of the event it is about (0 for the version note):
    the (position, finding) pairs diff's session checks produce, so the engine can place them.
    `cap=False` keeps every finding of a message: the gate judges each one (known or new) before
    it caps what is shown (gate.py), so which violations are known never depends on the cap."""
    placed: list[tuple[int, Finding]] = []
    version, note = negotiated_version(tape, KNOWN_PROTOCOL_VERSIONS)
    if note:
        placed.append((0, Finding.of("conformance", "version", "", note)))
    surface = _Surface.load()
    outputs = _OutputSchemas()
    for index, event in enumerate(tape.events):
        if not is_message(event):
            continue
        problems = list(_message_problems(event, version, surface))
        problems.extend(outputs.check(event))
        for path, rule, kind in (_cap(problems) if cap else _unique(problems)):
            placed.append((index, Finding.of("conformance", kind, f"{tape.line_of(index)}:{path}", rule,
                                             severity=severity)))
    return placed


def negotiated_version(tape: Tape, known: tuple[str, ...]) -> tuple[str, str | None]:
    """(revision to check against, info note or None): the header's or handshake's version, else
    the version a 2026-07-28 session names in its requests' `_meta`, else the newest legacy one."""
    declared = tape.protocol or _modern_version(tape)
    if declared in known:
        return declared, None
    if declared:
        return LEGACY_NEWEST, (
            f"protocol version {declared!r} is not one mcp-types knows ({', '.join(known)}); "
            f"messages checked against MCP {LEGACY_NEWEST}"
        )
    return LEGACY_NEWEST, f"no negotiated protocol version in the tape; messages checked against MCP {LEGACY_NEWEST}"


def _modern_version(tape: Tape) -> str | None:
    """The version a stateless (2026-07-28) session speaks: the `_meta` protocol version of its first
    client request that was not refused, else the newest entry of server/discover's supportedVersions."""
    refused: set[str] = set()
    for event in tape.events:
        if event.get("kind") == "error" and event.get("dir") == S2C:
            refused.add(repr(event.get("id")))
    supported: list[str] = []
    for event in tape.events:
        if event.get("dir") != C2S or event.get("kind") != "request":
            if event.get("kind") == "response" and event.get("method") == "server/discover":
                result = event.get("msg", {}).get("result")
                if isinstance(result, dict) and isinstance(result.get("supportedVersions"), list):
                    supported = [v for v in result["supportedVersions"] if isinstance(v, str)]
            continue
        version = meta_version(event.get("msg", {}).get("params"))
        if version is not None and repr(event.get("id")) not in refused:
            return version
    return max(supported) if supported else None


# --- one message against the MCP schema -------------------------------------------------------


def _message_problems(event: dict[str, Any], version: str, surface: _Surface) -> Iterator[Problem]:
    msg = event.get("msg")
    if not isinstance(msg, dict):
        return
    yield from _envelope(msg, event["kind"])
    kind, direction, method = event["kind"], event.get("dir"), event.get("method")
    if method == "server/discover":
        version = MODERN_PROTOCOL  # the probe is 2026-07-28 whatever the session settles on
    schema_era = era(version) or "legacy"
    where = f"MCP {version}"
    if kind == "error":
        for path, rule in _explain(surface.validate(surface.errors[schema_era], msg), msg, ""):
            if path not in ("jsonrpc", "id"):
                yield path, f"{rule} ({where}, JSON-RPC error response)", "schema"
        return
    if kind == "response":
        if not isinstance(method, str) or not isinstance(direction, str):
            return  # an answer to a request the tape does not hold: only the envelope can be checked
        model = surface.results[direction].get((method, version))
        if model is None:
            return
        result = msg.get("result")
        for path, rule in _explain(surface.validate(model, result), result, "result"):
            yield path, f"{rule} ({where}, {method} result)", "schema"
        return
    if not isinstance(method, str) or not isinstance(direction, str):
        return
    table = surface.requests if kind == "request" else surface.notifications
    model = table[direction].get((method, version))
    if model is None:
        if direction == S2C and any(m == method for m, v in table[S2C] if v != version):
            # A spec method of another revision, sent by the server to a peer that never agreed to it.
            yield "method", f'"{method}" is not a server {kind} in {where}', "schema"
        return
    for path, rule in _explain(surface.validate(model, msg), msg, ""):
        if path not in ("jsonrpc", "id"):
            yield path, f"{rule} ({where}, {method} {kind})", "schema"


def _envelope(msg: dict[str, Any], kind: str) -> Iterator[Problem]:
    """JSON-RPC 2.0 itself, checked the same way for every method, known or not."""
    if msg.get("jsonrpc") != "2.0":
        yield "jsonrpc", f'should be "2.0" (got {show(msg.get("jsonrpc"))}; JSON-RPC 2.0)', "schema"
    if kind != "notification":
        msg_id = msg.get("id")
        null_ok = kind == "error"  # an error about an unparsable request has no id to echo
        if not (isinstance(msg_id, str | int) and not isinstance(msg_id, bool)) and not (null_ok and msg_id is None):
            yield "id", f"should be a string or an integer (got {show(msg_id)}; JSON-RPC 2.0)", "schema"


def _explain(errors: list[dict[str, Any]], data: Any, path: str) -> list[tuple[str, str]]:
    """Pydantic errors as (path into the message, readable rule), one per place.

    Pydantic reports a failed union once per arm, the arm's name spliced into `loc`
    (`content[0].ImageContent.data`). We walk `loc` along the data to tell field names from
    arm names, then keep the arm the value evidently meant (one whose `type`-like literal did
    not mismatch, with the fewest errors), so `{"type":"text","text":5}` reads as
    `content[0].text: should be a valid string`, not as five complaints about images.
    """
    out: list[tuple[str, str]] = []
    unions: dict[str, tuple[Any, dict[str, list[dict[str, Any]]]]] = {}
    for err in errors:
        loc = tuple(err["loc"])
        cur, here, i = data, path, 0
        while i < len(loc):
            key = loc[i]
            if _has(cur, key):
                cur, here = cur[key], join(here, key)
            elif i == len(loc) - 1 and err["type"] == "missing" and isinstance(key, str):
                here = join(here, key)
            else:
                break
            i += 1
        if i >= len(loc):
            out.append((here, _rule(err)))
        else:
            arms = unions.setdefault(here, (cur, {}))[1]
            arms.setdefault(str(loc[i]), []).append({**err, "loc": loc[i + 1:]})
    for here, (value, arms) in unions.items():
        plausible = {
            arm: errs for arm, errs in arms.items()
            if not any(len(e["loc"]) == 1 and e["type"] == "literal_error" for e in errs)
        }
        if plausible and not all(all(not e["loc"] for e in errs) for errs in plausible.values()):
            best = min(plausible.values(), key=len)  # ties: the first arm, the schema's own order
            out.extend(_explain(best, value, here))
        else:
            names = " | ".join(_arm_name(arm) for arm in arms)
            out.append((here, f"matches none of {names} (got {show(value)})"))
    # One rule per place, in the order found.
    seen: dict[str, str] = {}
    for place, rule in out:
        seen.setdefault(place, rule)
    return list(seen.items())


def _has(value: Any, key: Any) -> bool:
    """Whether `key` of a pydantic loc names a member of `value` (else it names a union arm)."""
    if isinstance(value, dict):
        return isinstance(key, str) and key in value
    return isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value)


def _arm_name(arm: str) -> str:
    return {"dict[str,any]": "object", "list[any]": "array", "str": "string", "int": "integer",
            "float": "number", "bool": "boolean"}.get(arm, arm)


def _rule(err: dict[str, Any]) -> str:
    if err["type"] == "missing":
        return "field required"
    text = str(err["msg"])
    text = text[len("Input "):] if text.startswith("Input should") else text[:1].lower() + text[1:]
    value = err.get("input")
    if not isinstance(value, dict | list) or len(show(value)) < 40:
        text += f" (got {show(value)})"
    return text


def _unique(problems: list[Problem]) -> list[Problem]:
    """One problem per place in the message, the first found."""
    unique: dict[str, Problem] = {}
    for problem in problems:
        unique.setdefault(problem[0], problem)
    return list(unique.values())


def _cap(problems: list[Problem]) -> list[Problem]:
    kept = _unique(problems)
    if len(kept) <= MAX_PER_MESSAGE:
        return kept
    path, rule, kind = kept[MAX_PER_MESSAGE - 1]
    return [*kept[: MAX_PER_MESSAGE - 1], (path, more_problems(rule, len(kept) - MAX_PER_MESSAGE), kind)]


def more_problems(rule: str, more: int) -> str:
    """The last shown problem of a message whose other `more` problems are not listed one by one."""
    return f"{rule} (and {more} more problems in this message)"


# --- structuredContent against the tool's outputSchema ----------------------------------------


class _OutputSchemas:
    """The outputSchema of each tool, as the tape's tools/list results declared them so far."""

    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {}  # tool name -> validator, or None if the schema is unusable
        self.broken: set[str] = set()

    def check(self, event: dict[str, Any]) -> list[Problem]:
        if event.get("kind") != "response" or event.get("dir") != S2C:
            return []
        result = event.get("msg", {}).get("result")
        if not isinstance(result, dict):
            return []
        if event.get("method") == "tools/list":
            return self._learn(result)
        if event.get("method") == "tools/call":
            params = event.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if isinstance(name, str) and name in self.schemas:
                return self._validate(name, result)
        return []

    def _learn(self, result: dict[str, Any]) -> list[Problem]:
        problems: list[Problem] = []
        tools = result.get("tools")
        for i, tool in enumerate(tools if isinstance(tools, list) else []):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            schema = tool.get("outputSchema")
            if not isinstance(schema, dict):
                self.schemas.pop(tool["name"], None)
                continue
            cls = validator_for(schema, default=jsonschema.Draft202012Validator)
            try:
                cls.check_schema(schema)
            except RecursionError:
                problems.append((f"result.tools[{i}].outputSchema",
                                 "cannot be checked: the schema is nested too deep for the JSON Schema checker",
                                 "output_schema"))
                self.schemas[tool["name"]] = None
                continue
            except jsonschema.SchemaError as e:
                problems.append((_json_path(f"result.tools[{i}].outputSchema", e.absolute_path),
                                 f"not a valid JSON Schema ({_draft(cls)}): {_short(e.message)}", "output_schema"))
                self.schemas[tool["name"]] = None
                continue
            self.schemas[tool["name"]] = cls(schema)
        return problems

    def _validate(self, name: str, result: dict[str, Any]) -> list[Problem]:
        validator = self.schemas[name]
        if validator is None or result.get("isError") is True or result.get("resultType") == "input_required":
            return []
        if "structuredContent" not in result:
            return [("result.structuredContent",
                     f"missing: tool `{name}` declares an outputSchema, so a successful result must carry "
                     "structuredContent (MCP tools/call)", "output_schema")]
        if holds_deep(result["structuredContent"]):
            return []  # parts of it are JSON text, not values (module docstring: Depth)
        try:
            errors = sorted(validator.iter_errors(result["structuredContent"]),
                            key=lambda e: (list(map(str, e.absolute_path)), e.message))
        except RecursionError:
            return [("result.structuredContent",
                     f"cannot be checked: it or the outputSchema of tool `{name}` is nested too deep for the "
                     "JSON Schema checker", "output_schema")]
        except Unresolvable as e:
            return [("result.structuredContent",
                     f"cannot be checked: the outputSchema of tool `{name}` has a $ref that cannot be resolved "
                     f"offline ({_short(str(e))})", "output_schema")]
        return [(_json_path("result.structuredContent", e.absolute_path),
                 f"{_short(e.message)} (outputSchema of tool `{name}`, {e.validator})", "output_schema")
                for e in errors]


def _json_path(base: str, parts: Any) -> str:
    for part in parts:
        base = join(base, part)
    return base


def _draft(cls: Any) -> str:
    return str(cls.__name__).removesuffix("Validator")


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
