"""Is a change to a tool's JSON Schema breaking, compatible or cosmetic?

The answer depends on who reads the schema. An `inputSchema` says what the server *accepts*:
accepting less breaks callers (a required property added, a property removed, a type
narrowed, an enum value removed, `additionalProperties` closed, a bound tightened: `maxLength`
100 → 10 refuses the caller who sends 50 characters); accepting more is compatible. An
`outputSchema` says what the server *returns*: there the directions flip for values (a type
widened, a bound loosened, an enum value added, `additionalProperties` opened: the server may
now return what a client was promised it would not; a narrowed type is compatible), while a
property removed breaks either way and a new property is compatible either way. A change that
is neither narrower nor wider (a `pattern`, `format` or `const` replaced by another, `type`
string → number, a `multipleOf` 2 → 3) is breaking either way. Descriptions, titles, examples
and comments are cosmetic. A keyword this module does not know that changed is called
breaking: a gate should err towards asking a human.

Pure functions over plain dicts; classify.py turns the results into Findings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from mcptape.diff.values import contrast, fast_same, join, show
from mcptape.jsonrpc import canonical

SchemaKind = Literal["breaking", "compatible", "cosmetic"]
Role = Literal["input", "output"]

COSMETIC_KEYWORDS = frozenset({"description", "title", "examples", "$comment", "$schema", "$id", "markdownDescription"})
# Bounds: (keyword, True if a larger value accepts less). Draft 4 spells exclusiveMinimum and
# exclusiveMaximum as booleans beside minimum/maximum: there `true` accepts less for both.
_BOUNDS = {
    "minimum": True,
    "exclusiveMinimum": True,
    "minLength": True,
    "minItems": True,
    "minProperties": True,
    "maximum": False,
    "exclusiveMaximum": False,
    "maxLength": False,
    "maxItems": False,
    "maxProperties": False,
}
# Keywords whose value either is there (accepting less) or is not; a different value is neither narrower nor wider.
_RESTRICTIONS = ("const", "pattern", "format")
_HANDLED = frozenset(
    {"type", "enum", "properties", "required", "additionalProperties", "items", "default", "$defs",
     "definitions", "multipleOf", *_RESTRICTIONS, *_BOUNDS, *COSMETIC_KEYWORDS}
)
# What a value of a missing (or `true`) schema may be: anything.
_ANYTHING: dict[str, Any] = {}
Direction = Literal["narrower", "wider", "same", "other"]


@dataclass
class SchemaChange:
    path: str
    kind: SchemaKind
    message: str
    before: Any = None
    after: Any = None


def _types(schema: dict[str, Any]) -> set[str] | None:
    t = schema.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else {str(x) for x in t} if isinstance(t, list) else None


def _accepts(types: set[str], other: set[str]) -> bool:
    """Does a value of any type in `other` fit `types`? (integer fits number)."""
    return all(t in types or (t == "integer" and "number" in types) for t in other)


def _narrower(role: Role) -> SchemaKind:
    """Accepting less: breaking for what the server accepts, compatible for what it returns."""
    return "breaking" if role == "input" else "compatible"


def _wider(role: Role) -> SchemaKind:
    """Accepting more: compatible for what the server accepts, breaking for what it returns."""
    return "compatible" if role == "input" else "breaking"


def _kind(direction: Direction, role: Role) -> SchemaKind:
    if direction == "narrower":
        return _narrower(role)
    if direction == "wider":
        return _wider(role)
    return "cosmetic" if direction == "same" else "breaking"


class _Absent:
    """A keyword that is not there (`const: null` and `default: null` are values)."""

    def __repr__(self) -> str:
        return "absent"


_ABSENT: Any = _Absent()


def _get(schema: dict[str, Any], key: str) -> Any:
    return schema.get(key, _ABSENT)


def _value(v: Any) -> Any:
    """What a SchemaChange carries and a message shows for a keyword's value (absent is None)."""
    return None if v is _ABSENT else v


def schema_changes(a: Any, b: Any, path: str, role: Role) -> list[SchemaChange]:
    return list(_schema(a, b, path, role))


def _schema(a: Any, b: Any, path: str, role: Role) -> Iterator[SchemaChange]:
    if fast_same(a, b):
        return
    if not isinstance(a, dict) or not isinstance(b, dict):
        yield from _not_objects(a, b, path, role)
        return
    # Keyword by keyword, in an order a reader follows: what it says, what it accepts, its limits.
    for keywords in (_cosmetic, _type, _enum, _properties, _additional_properties, _items, _definitions, _default,
                     _limits, _unknown_keywords):
        yield from keywords(a, b, path, role)


def _cosmetic(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    for key in sorted(COSMETIC_KEYWORDS):
        if not fast_same(a.get(key), b.get(key)):
            yield SchemaChange(join(path, key), "cosmetic", f"{key} {contrast(a.get(key), b.get(key))}",
                               a.get(key), b.get(key))


def _additional_properties(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    apa, apb = _get(a, "additionalProperties"), _get(b, "additionalProperties")
    if fast_same(apa, apb):
        return
    p = join(path, "additionalProperties")
    if apb is False:
        yield SchemaChange(p, _narrower(role), "additionalProperties closed", _value(apa), apb)
    elif apa is False:
        yield SchemaChange(p, _wider(role), "additionalProperties opened", apa, _value(apb))
    else:  # a schema for the extra properties: added, removed, changed
        yield from _schema(_value(apa), _value(apb), p, role)


def _items(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    if "items" in a or "items" in b:
        yield from _schema(a.get("items"), b.get("items"), join(path, "items"), role)


def _definitions(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    for defs in ("$defs", "definitions"):
        da, db = a.get(defs) or {}, b.get(defs) or {}
        if not isinstance(da, dict) or not isinstance(db, dict):
            continue
        for name in sorted(set(da) | set(db)):
            p = join(join(path, defs), name)
            if name not in da:  # nothing refers to it yet
                yield SchemaChange(p, "compatible", f"definition `{name}` added", None, db[name])
            elif name not in db:  # a `$ref` to it no longer resolves
                yield SchemaChange(p, "breaking", f"definition `{name}` removed", da[name], None)
            else:
                yield from _schema(da[name], db[name], p, role)


def _default(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    va, vb = _get(a, "default"), _get(b, "default")
    if not fast_same(va, vb):
        yield SchemaChange(join(path, "default"), "compatible", f"default {show(_value(va))} → {show(_value(vb))}",
                           _value(va), _value(vb))


def _limits(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    """Restrictions (pattern, format, ...), numeric and length bounds, multipleOf."""
    for key in _RESTRICTIONS:
        va, vb = _get(a, key), _get(b, key)
        if not fast_same(va, vb):
            direction: Direction = "narrower" if va is _ABSENT else "wider" if vb is _ABSENT else "other"
            yield SchemaChange(join(path, key), _kind(direction, role), f"{key} {show(_value(va))} → {show(_value(vb))}",
                               _value(va), _value(vb))
    for key, larger_is_narrower in _BOUNDS.items():
        va, vb = _get(a, key), _get(b, key)
        if not fast_same(va, vb):
            yield SchemaChange(join(path, key), _kind(_bound(va, vb, larger_is_narrower), role),
                               f"{key} {show(_value(va))} → {show(_value(vb))}", _value(va), _value(vb))
    va, vb = _get(a, "multipleOf"), _get(b, "multipleOf")
    if not fast_same(va, vb):
        yield SchemaChange(join(path, "multipleOf"), _kind(_multiple_of(va, vb), role),
                           f"multipleOf {show(_value(va))} → {show(_value(vb))}", _value(va), _value(vb))


def _unknown_keywords(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    """A keyword this module does not know may narrow anything: breaking."""
    for key in sorted((set(a) | set(b)) - _HANDLED):
        if not fast_same(a.get(key), b.get(key)):
            yield SchemaChange(join(path, key), "breaking",
                               f"schema keyword `{key}` changed: {show(a.get(key))} → {show(b.get(key))}",
                               a.get(key), b.get(key))


def _not_objects(a: Any, b: Any, path: str, role: Role) -> Iterator[SchemaChange]:
    """Boolean or missing schemas: absent and `true` accept anything, `false` nothing, an object lies between."""
    na = _ANYTHING if a is None or a is True else a
    nb = _ANYTHING if b is None or b is True else b
    if isinstance(na, dict) and isinstance(nb, dict):
        if na is _ANYTHING and nb is _ANYTHING:
            yield SchemaChange(path, "cosmetic", f"schema {show(a)} → {show(b)}", a, b)
        else:  # compare keyword by keyword with the schema that says nothing
            yield from _schema(na, nb, path, role)
    elif nb is False and na is not False:
        yield SchemaChange(path, _narrower(role), f"schema {show(a)} → false (nothing is valid)", a, b)
    elif na is False and isinstance(nb, dict):
        yield SchemaChange(path, _wider(role), f"schema false → {show(b)}", a, b)
    else:  # garbage, or a form this module does not compare (tuple `items`): ask a human
        yield SchemaChange(path, "breaking", f"schema changed: {show(a)} → {show(b)}", a, b)


def _type(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    va, vb = _get(a, "type"), _get(b, "type")
    if fast_same(va, vb):
        return
    ta, tb = _types(a), _types(b)
    p = join(path, "type")
    before, after = _value(va), _value(vb)
    if va is _ABSENT:
        yield SchemaChange(p, _narrower(role), f"type restricted to {show(after)}", None, after)
    elif vb is _ABSENT:
        yield SchemaChange(p, _wider(role), f"type {show(before)} no longer restricted", before, None)
    elif ta is None or tb is None:
        yield SchemaChange(p, "breaking", f"type changed {show(before)} → {show(after)}", before, after)
    elif _accepts(ta, tb) and _accepts(tb, ta):
        yield SchemaChange(p, "cosmetic", f"type written differently {show(before)} → {show(after)}", before, after)
    elif _accepts(ta, tb):
        yield SchemaChange(p, _narrower(role), f"type narrowed {show(before)} → {show(after)}", before, after)
    elif _accepts(tb, ta):
        yield SchemaChange(p, _wider(role), f"type widened {show(before)} → {show(after)}", before, after)
    else:
        yield SchemaChange(p, "breaking", f"type changed {show(before)} → {show(after)}", before, after)


def _enum(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    ea, eb = _get(a, "enum"), _get(b, "enum")
    if fast_same(ea, eb):
        return
    p = join(path, "enum")
    if ea is _ABSENT:
        yield SchemaChange(p, _narrower(role), f"values restricted to {show(eb)}", None, eb)
    elif eb is _ABSENT:
        yield SchemaChange(p, _wider(role), "enum restriction removed", ea, None)
    elif not isinstance(ea, list) or not isinstance(eb, list):
        yield SchemaChange(p, "breaking", f"enum {show(ea)} → {show(eb)}", ea, eb)
    else:
        ka = {canonical(v): v for v in ea}
        kb = {canonical(v): v for v in eb}
        removed = [ka[k] for k in ka if k not in kb]
        added = [kb[k] for k in kb if k not in ka]
        if removed:
            yield SchemaChange(p, _narrower(role), f"enum value(s) removed: {show(removed)}", removed, None)
        if added:
            yield SchemaChange(p, _wider(role), f"enum value(s) added: {show(added)}", None, added)
        if not removed and not added:
            yield SchemaChange(p, "cosmetic", "enum values reordered", ea, eb)


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _bound(va: Any, vb: Any, larger_is_narrower: bool) -> Direction:
    """A bound added accepts less, removed accepts more, moved: by which way it moved."""
    if isinstance(va, bool) or isinstance(vb, bool):
        # Draft 4's exclusive flags: `true` accepts less; `false` is the same as no flag. A flag
        # against a number is a draft 4 <-> 6 rewrite this comparison cannot read: ask a human.
        if va not in (True, False, _ABSENT) or vb not in (True, False, _ABSENT):
            return "other"
        fa, fb = va is True, vb is True
        return "narrower" if fb and not fa else "wider" if fa and not fb else "same"
    if va is _ABSENT and _number(vb):
        return "narrower"
    if vb is _ABSENT and _number(va):
        return "wider"
    if _number(va) and _number(vb):
        if va == vb:
            return "same"  # 5 and 5.0
        return "narrower" if (vb > va) == larger_is_narrower else "wider"
    return "other"


def _multiple_of(va: Any, vb: Any) -> Direction:
    """Every multiple of 4 is a multiple of 2: 2 → 4 accepts less, 4 → 2 more, 2 → 3 neither."""
    if va is _ABSENT and _number(vb):
        return "narrower"
    if vb is _ABSENT and _number(va):
        return "wider"
    if not (_number(va) and _number(vb)) or va <= 0 or vb <= 0:
        return "other"
    try:
        da, db = Decimal(str(va)), Decimal(str(vb))  # decimal: 0.3 is a multiple of 0.1
        if da == db:
            return "same"
        if db % da == 0:
            return "narrower"
        if da % db == 0:
            return "wider"
    except InvalidOperation:  # inf, nan
        pass
    return "other"


def _properties(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    pa = a.get("properties") if isinstance(a.get("properties"), dict) else {}
    pb = b.get("properties") if isinstance(b.get("properties"), dict) else {}
    ra = set(a.get("required") or []) if isinstance(a.get("required"), list) else set()
    rb = set(b.get("required") or []) if isinstance(b.get("required"), list) else set()
    ppath = join(path, "properties")
    assert isinstance(pa, dict) and isinstance(pb, dict)
    for name in pa:
        if name not in pb:
            # Callers that send it are refused (input); clients that read it find nothing (output).
            yield SchemaChange(join(ppath, name), "breaking", f"property `{name}` removed", pa[name], None)
    for name in pb:
        if name not in pa:
            if role == "input" and name in rb:
                yield SchemaChange(join(ppath, name), "breaking", f"required property `{name}` added", None, pb[name])
            else:
                yield SchemaChange(join(ppath, name), "compatible",
                                   f"{'required' if name in rb else 'optional'} property `{name}` added", None, pb[name])
    for name in pa:
        if name in pb:
            yield from _schema(pa[name], pb[name], join(ppath, name), role)
    rpath = join(path, "required")
    # Required accepts less: a caller must send it (input); a client can count on it (output).
    for name in sorted(rb - ra):
        if name in pa or name not in pb:  # new properties were reported above
            yield SchemaChange(rpath, _narrower(role), f"property `{name}` became required", sorted(ra), sorted(rb))
    for name in sorted(ra - rb):
        if name in pb:
            yield SchemaChange(rpath, _wider(role), f"property `{name}` no longer required", sorted(ra), sorted(rb))


# The MCP spec's defaults of ToolAnnotations: what an absent hint means. destructiveHint and
# idempotentHint are meaningful only for a tool that is not read-only.
ANNOTATION_DEFAULTS: dict[str, bool] = {
    "readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True,
}


def effective_annotations(a: Any) -> dict[str, Any]:
    """Tool annotations with the MCP defaults applied (a read-only tool is never destructive)."""
    out: dict[str, Any] = {**ANNOTATION_DEFAULTS, **(a if isinstance(a, dict) else {})}
    if out.get("readOnlyHint") is True:
        out["destructiveHint"] = False
        out["idempotentHint"] = True  # a read-only tool is idempotent by nature; nothing to compare
    return out


def annotation_changes(a: Any, b: Any, path: str) -> list[SchemaChange]:
    """Tool annotations, compared after the MCP defaults (ANNOTATION_DEFAULTS): losing read-only or
    becoming destructive is breaking, a hint that only restates its default is cosmetic, text is
    cosmetic, other hints compatible."""
    a = a if isinstance(a, dict) else {}
    b = b if isinstance(b, dict) else {}
    ea, eb = effective_annotations(a), effective_annotations(b)
    out: list[SchemaChange] = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if fast_same(va, vb):
            continue
        p = join(path, key)
        if key in ANNOTATION_DEFAULTS and fast_same(ea.get(key), eb.get(key)):
            out.append(SchemaChange(p, "cosmetic", f"{key} {show(va)} → {show(vb)} (the same under the MCP default "
                                    f"{show(ANNOTATION_DEFAULTS[key])})", va, vb))
        elif key == "readOnlyHint" and ea["readOnlyHint"] is True and eb["readOnlyHint"] is not True:
            out.append(SchemaChange(p, "breaking", "no longer read-only (readOnlyHint lost)", va, vb))
        elif key == "destructiveHint" and eb["destructiveHint"] is True and ea["destructiveHint"] is not True:
            out.append(SchemaChange(p, "breaking", "became destructive (destructiveHint)", va, vb))
        elif key == "title" or isinstance(va, str) or isinstance(vb, str):
            out.append(SchemaChange(p, "cosmetic", f"{key} {contrast(va, vb)}", va, vb))
        else:
            out.append(SchemaChange(p, "compatible", f"{key} {show(va)} → {show(vb)}", va, vb))
    return out


def prompt_argument_changes(a: Any, b: Any, path: str) -> list[SchemaChange]:
    """A prompt's `arguments` list: keyed by name, required added/removed like schema properties."""
    la = {x.get("name"): x for x in a if isinstance(x, dict)} if isinstance(a, list) else {}
    lb = {x.get("name"): x for x in b if isinstance(x, dict)} if isinstance(b, list) else {}
    out: list[SchemaChange] = []
    for name, arg in la.items():
        if name not in lb:
            out.append(SchemaChange(join(path, str(name)), "breaking", f"argument `{name}` removed", arg, None))
    for name, arg in lb.items():
        if name not in la:
            required = bool(arg.get("required"))
            out.append(SchemaChange(join(path, str(name)), "breaking" if required else "compatible",
                                    f"{'required' if required else 'optional'} argument `{name}` added", None, arg))
    for name, arg_a in la.items():
        arg_b = lb.get(name)
        if arg_b is None:
            continue
        p = join(path, str(name))
        req_a, req_b = bool(arg_a.get("required")), bool(arg_b.get("required"))
        if req_b and not req_a:
            out.append(SchemaChange(join(p, "required"), "breaking", f"argument `{name}` became required", False, True))
        elif req_a and not req_b:
            out.append(SchemaChange(join(p, "required"), "compatible", f"argument `{name}` no longer required", True, False))
        for key in sorted((set(arg_a) | set(arg_b)) - {"name", "required"}):
            if not fast_same(arg_a.get(key), arg_b.get(key)):
                kind: SchemaKind = "cosmetic" if key in COSMETIC_KEYWORDS else "compatible"
                out.append(SchemaChange(join(p, key), kind, f"{key} {contrast(arg_a.get(key), arg_b.get(key))}",
                                        arg_a.get(key), arg_b.get(key)))
    return out
