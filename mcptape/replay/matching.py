"""Replay matching: which recorded call a live request is, and why the nearest ones are not.

Pure functions over JSON values, found by name (CONTRIBUTING.md, as vcrpy's `register_matcher`) in
the engine's own registry (`default_matchers`, ReplayEngine(matchers=...)): a matcher takes (recorded params, live params) and returns the reasons they differ, an empty list
for a match. A recorded string holding redaction placeholders is a pattern (`placeholder_pattern`);
a live value compared with one is never echoed (`hide_redacted`). One holding a golden's normalization
placeholders (`<UUID#2>`, `<TIMESTAMP>`) also matches the value play serves for them (served_values.py). The engine that uses them is
engine.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcptape.jsonrpc import dumps
from mcptape.jsonvalue import json_equal
from mcptape.mcp import strip_meta
from mcptape.placeholders import fits, placeholder_pattern
from mcptape.replay.served_values import serve_values

Matcher = Callable[[Any, Any], list[str]]
"""(recorded params, live params) -> reasons they differ; an empty list is a match."""

# Which matchers decide a match, per method; methods not listed use DEFAULT_MATCH_ON.
DEFAULT_MATCH_ON: tuple[str, ...] = ("params",)
MATCH_ON: dict[str, tuple[str, ...]] = {"initialize": ("initialize",)}
# `--match-on name`: these methods match on what they name (the tool, prompt or resource) only.
NAMED_METHODS = ("tools/call", "prompts/get", "resources/read")


def match_on_name_only() -> dict[str, tuple[str, ...]]:
    """MATCH_ON with tools/call, prompts/get and resources/read matched on their target only."""
    return {**MATCH_ON, **{method: ("name",) for method in NAMED_METHODS}}

_MAX_REASONS = 3


# --- redacted values ---------------------------------------------------------------------

REDACTED_NOTE = "matches only modulo a redacted value"
HIDDEN = "<REDACTED:live-value>"  # stands for a live value compared with a redacted recording


def hide_redacted(recorded: Any, asked: Any, secrets: set[str] | None = None) -> Any:
    """`asked` with every string compared against a redacted recorded one replaced: by the recorded
    text where it fits (so the placeholder shows, not the secret), by a placeholder where it does not.

    The live values that stood for placeholders are added to `secrets`, so a message can be
    scrubbed of them wherever else they appear. Never echo a live secret in a miss message:
    it goes to the client and to the report.
    """
    if isinstance(recorded, dict) and isinstance(asked, dict):
        return {k: hide_redacted(recorded[k], v, secrets) if k in recorded else v for k, v in asked.items()}
    if isinstance(recorded, list) and isinstance(asked, list):
        return [hide_redacted(recorded[i], a, secrets) if i < len(recorded) else a for i, a in enumerate(asked)]
    if isinstance(recorded, str) and isinstance(asked, str):
        pattern = placeholder_pattern(recorded)
        if pattern is None:
            return asked
        m = pattern.fullmatch(asked)
        if secrets is not None:
            if m is not None:
                secrets.update(g for g in m.groups() if g)
            else:
                secrets.add(asked)
        return recorded if m is not None else HIDDEN
    return asked


# --- pure comparison helpers -------------------------------------------------------------


def compared(params: Any) -> Any:
    """Params as replay compares them: without the top-level `_meta` (mcp.strip_meta); absent
    params and `{}` compare equal."""
    return {} if params is None else strip_meta(params)


def short(value: Any, limit: int = 60) -> str:
    text = dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_diff(
    recorded: Any, asked: Any, path: str = "", limit: int = _MAX_REASONS, notes: list[str] | None = None
) -> list[str]:
    """Where two JSON values differ, as `path differs: X recorded, Y asked` lines (at most `limit`).

    JSON equality: 1 and 1.0 are equal, true and 1 are not, key order never matters. A recorded
    string holding redaction placeholders is a pattern (see `placeholder_pattern`); where the asked
    string fits one only that way, `notes` (if given) gets `path: matches only modulo a redacted
    value`. A value that does not fit is never echoed: it may be the secret.
    """
    out: list[str] = []
    _diff_into(recorded, asked, path, out, limit, notes)
    return out


def _diff_into(rec: Any, ask: Any, path: str, out: list[str], limit: int, notes: list[str] | None) -> None:
    if len(out) >= limit:
        return
    if isinstance(rec, dict) and isinstance(ask, dict):
        for key in list(rec) + [k for k in ask if k not in rec]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in ask:
                out.append(f"{sub}: recorded {short(rec[key])}, not asked")
            elif key not in rec:
                out.append(f"{sub}: asked {short(ask[key])}, not recorded")
            else:
                _diff_into(rec[key], ask[key], sub, out, limit, notes)
            if len(out) >= limit:
                return
        return
    if isinstance(rec, list) and isinstance(ask, list) and len(rec) == len(ask):
        for i, (a, b) in enumerate(zip(rec, ask, strict=True)):
            _diff_into(a, b, f"{path}[{i}]", out, limit, notes)
            if len(out) >= limit:
                return
        return
    if type(rec) is str and type(ask) is str and rec != ask:
        fitting = fits(rec, ask)
        if fitting is True:
            if notes is not None:
                notes.append(f"{path or 'params'}: {REDACTED_NOTE}")
            return
        if fitting is False:
            out.append(f"{path or 'params'} differs: {short(rec)} recorded, another value asked (not shown: redacted on the tape)")
            return
    if not recorded_equal(rec, ask):
        out.append(f"{path or 'params'} differs: {short(rec)} recorded, {short(ask)} asked")


def recorded_equal(recorded: Any, asked: Any) -> bool:
    """JSON equality (jsonvalue.json_equal: 1 and 1.0 are one value, true is another) of a recorded
    and an asked value, a recorded string holding placeholders being a pattern the asked one may fit."""
    return json_equal(recorded, asked, _fits_placeholders)


def _fits_placeholders(recorded: str, asked: str) -> bool:
    # A normalization placeholder stands for the value play serves for it (served_values.py): a client
    # that sends back the second id play gave it asks for what the tape recorded with `<UUID#2>`.
    return bool(fits(recorded, asked)) or ("<" in recorded and serve_values(recorded) == asked)


def match_params(recorded: Any, asked: Any) -> list[str]:
    """JSON-equal params, ignoring the top-level `_meta`."""
    return json_diff(compared(recorded), compared(asked))


def match_initialize(recorded: Any, asked: Any) -> list[str]:
    """initialize params minus who the client is, what it can do and which protocol version it
    asks: a server answers any client's initialize with a version it supports (the one the
    recorded server negotiated), and the client decides whether it can live with it."""
    ignored = ("_meta", "clientInfo", "capabilities", "protocolVersion")
    rec = {k: v for k, v in (recorded or {}).items() if k not in ignored} if isinstance(recorded, dict) else recorded
    ask = {k: v for k, v in (asked or {}).items() if k not in ignored} if isinstance(asked, dict) else asked
    return json_diff(rec, ask)


def target(params: Any) -> Any:
    """What a call names: a tool's or prompt's `name`, a resource's `uri`; None for calls that name nothing.

    `--lenient` substitutes only a recording with the same method and the same target."""
    if isinstance(params, dict):
        for key in ("name", "uri"):
            if key in params:
                return params[key]
    return None


def match_name(recorded: Any, asked: Any) -> list[str]:
    """The same target (tool, prompt or resource), whatever the arguments (`--match-on name`)."""
    rec, ask = target(recorded), target(asked)
    if recorded_equal(rec, ask):
        return []
    return [f"{'uri' if isinstance(asked, dict) and 'uri' in asked else 'name'} differs: {short(rec)} recorded, {short(ask)} asked"]


def default_matchers() -> dict[str, Matcher]:
    """mcptape's matchers by name, a new dict: an engine given more (ReplayEngine(matchers=...))
    and a MATCH_ON naming them uses them, no other engine sees them."""
    return {"params": match_params, "initialize": match_initialize, "name": match_name}


class IgnoredPaths:
    """Values replay leaves out of matching (`--ignore-arg`): a timestamp or request id in a call's arguments.

    Each path is a JSON path evaluated on a request's params (`$.arguments.ts`, `$..timestamp`)
    or a bare key, which means that key at any depth (`timestamp` is `$..timestamp`). Both sides
    get the selected values replaced by one placeholder before the matchers see them.
    """

    PLACEHOLDER = "<IGNORED>"

    def __init__(self, paths: tuple[str, ...]) -> None:
        # volatility/normalize.py's path evaluator (one grammar with mcptape.yml's rules); imported only when
        # asked, as it is not on the path of a plain play's start-up.
        from mcptape.volatility.normalize import parse_path

        self.paths = paths
        self._parsed = []
        for path in paths:
            spec = path if path.startswith("$") else f"$..{path}"
            try:
                self._parsed.append(parse_path(spec))
            except ValueError as e:
                raise ValueError(f"--ignore-arg {path!r}: {e}") from e

    def apply(self, params: Any) -> Any:
        from mcptape.volatility.normalize import apply_path

        for segs in self._parsed:
            params = apply_path(params, segs, self.PLACEHOLDER)
        return params


def describe_call(method: str, params: Any, limit: int = 80) -> str:
    """`tools/call add {"a":2,"b":3}`: a call as a reviewer reads it."""
    if not isinstance(params, dict):
        return method
    params = strip_meta(params)
    label = method
    for key in ("name", "uri"):
        if isinstance(params.get(key), str):
            label += f" {params[key]}"
            break
    rest = params.get("arguments") if "arguments" in params else None
    if rest is None and "name" not in params and "uri" not in params and params:
        rest = params
    if rest:
        label += " " + short(rest, limit)
    return label


