"""pydantic's validation errors as one `file:line: field: what is wrong; the fix` paragraph."""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ValidationError,
)

from mcptape.config.locations import Loc, describe, field_name, line_for, one_line, suggest
from mcptape.config.models import Config, HttpServer, StdioServer
from mcptape.errors import ConfigError

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
# pydantic's label of a union member (`dict[str,any]`, `list[...]`, `function-after[...]`): not a
# key the user wrote. Found by its shape, so a user's key holding "[" (`a[b: 1`) is kept (it was
# dropped with the labels, and an unknown top-level key so written crashed the message).
_TYPE_LABEL = re.compile(r"[a-z_-]+\[.*\]")


def _expected(error: Mapping[str, Any]) -> str | None:
    if error["type"] == "literal_error":
        return str((error.get("ctx") or {}).get("expected", "")) or None
    return _EXPECTED.get(error["type"])


def _user_loc(loc: Loc) -> Loc:
    """The pydantic location without union-member labels (`stdio server`, `dict[str,any]`, ...)."""
    return tuple(p for p in loc if not (isinstance(p, str) and (p in _TAGS or _TYPE_LABEL.fullmatch(p))))


def _valid_keys(loc: Loc) -> list[str]:
    """The keys allowed in the mapping at `loc` (a user location), from the models."""

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
        where = "at the top level" if not parent else f"in {field_name(parent)}"
        return loc, loc, f'unknown key "{key}" {where}{suggest(key, valid)} Valid keys: {", ".join(valid)}'
    if kind == "missing":
        missing = str(loc[-1])
        return loc, loc[:-1], f'"{missing}" is required; add `{missing}:` here'
    if len(same_loc) > 1 or kind in _EXPECTED:  # a type error, or a union whose members all failed
        expected = [_expected(e) for e in same_loc]
        if all(expected):
            return (
                loc,
                loc,
                f"expected {' or '.join(dict.fromkeys(e for e in expected if e))}, got {describe(value)}",
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
        return loc, loc, f"must be {words} {bound}, got {describe(value)}"
    if kind == "literal_error":
        allowed: list[str] = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        return (
            loc,
            loc,
            (
                f"unknown value {describe(value)}{suggest(str(value), allowed)} "
                f"Valid: {', '.join(allowed) or ctx.get('expected')}"
            ),
        )
    if kind == "string_pattern_mismatch":
        return (
            loc,
            loc,
            (
                f"{describe(value)} may contain only letters, digits, '_', '.' and '-' "
                "(it names the golden tape file)"
            ),
        )
    if kind == "string_too_long":  # a session's name: its golden tape's file name (os_text.MAX_SESSION_NAME)
        return loc, loc, (f"the name is {len(str(value))} characters long; it is also the golden tape's file name, "
                          f"which file systems keep short: at most {ctx.get('max_length')} characters. Shorten it")
    if kind == "value_error":
        return loc, loc, str(ctx.get("error", error.get("msg")))
    return loc, loc, f"{error.get('msg', 'invalid value')}, got {describe(value)}"


def _misspelt(errors: Sequence[Mapping[str, Any]]) -> dict[Loc, Loc]:
    """unknown key -> the required key missing beside it that it is a misspelling of (`sesions:`).

    Without this the missing key's error, at its parent's line, came first and hid the
    did-you-mean of the key actually written.
    """
    missing = [_user_loc(tuple(e["loc"])) for e in errors if e["type"] == "missing"]
    out: dict[Loc, Loc] = {}
    for e in errors:
        loc = _user_loc(tuple(e["loc"]))
        if e["type"] != "extra_forbidden" or not loc:
            continue
        siblings = [str(m[-1]) for m in missing if m[:-1] == loc[:-1] and m not in out.values()]
        close = difflib.get_close_matches(str(loc[-1]), siblings, n=1, cutoff=0.6)
        if close:
            out[loc] = (*loc[:-1], close[0])
    return out


def translate(e: ValidationError, display: str, lines: Mapping[Loc, int]) -> ConfigError:
    errors = e.errors()
    if not errors:  # pragma: no cover - pydantic always lists at least one
        return ConfigError(f"{display}: invalid config")
    found = []
    misspelt = _misspelt(errors)
    for err in errors:
        loc = _user_loc(tuple(err["loc"]))
        if err["type"] == "missing" and loc in misspelt.values():
            continue  # said by the unknown key that is its misspelling: "did you mean ..."
        same = [other for other in errors if _user_loc(tuple(other["loc"])) == loc]
        shown, line_loc, what = _message_for(err, same)
        if loc in misspelt:
            what = what.replace(" Valid keys:", f' ("{misspelt[loc][-1]}" is required and missing: rename the key)'
                                                " Valid keys:", 1)
        found.append((line_for(lines, line_loc), shown, what))
    # The first problem in file order: the one a reader meets first when opening the file.
    line, shown, what = min(found, key=lambda f: f[0])
    distinct_places = {(f[0], f[1]) for f in found}
    more = len(distinct_places) - 1
    tail = f" ({more} more problem{'s' if more > 1 else ''} after this one)" if more > 0 else ""
    return ConfigError(one_line(f"{display}:{line}: {field_name(shown)}: {what}{tail}"))


