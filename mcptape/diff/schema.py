"""Is a change to a tool's JSON Schema breaking, compatible or cosmetic?

The answer depends on who reads the schema. An `inputSchema` says what the server *accepts*:
accepting less breaks callers (a required property added, a property removed, a type
narrowed, an enum value removed, `additionalProperties` closed, a bound tightened); accepting
more is compatible. An `outputSchema` says what the server *returns*: there the directions
flip for values (a property removed, a type widened or an enum value added breaks a client
that reads them; a narrowed type is compatible), while a new property is compatible either way.
Descriptions, titles, examples and comments are cosmetic. A keyword this module does not
know that changed is called breaking: a gate should err towards asking a human.

Pure functions over plain dicts; classify.py turns the results into Findings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from mcptape.diff.values import fast_same, join, show
from mcptape.jsonrpc import canonical

SchemaKind = Literal["breaking", "compatible", "cosmetic"]
Role = Literal["input", "output"]

COSMETIC_KEYWORDS = frozenset({"description", "title", "examples", "$comment", "$schema", "$id", "markdownDescription"})
# Bounds: (keyword, True if a larger value accepts less).
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
_HANDLED = frozenset(
    {"type", "enum", "const", "properties", "required", "additionalProperties", "items", "default", "$defs",
     "definitions", "pattern", "format", *_BOUNDS, *COSMETIC_KEYWORDS}
)


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
    return "compatible" if role == "input" else "breaking"


def schema_changes(a: Any, b: Any, path: str, role: Role) -> list[SchemaChange]:
    return list(_schema(a, b, path, role))


def _schema(a: Any, b: Any, path: str, role: Role) -> Iterator[SchemaChange]:
    if fast_same(a, b):
        return
    if not isinstance(a, dict) or not isinstance(b, dict):
        # true/false schemas or garbage: say what happened, conservatively.
        if a is None:
            yield SchemaChange(path, "compatible", "schema added", a, b)
        elif b is None:
            yield SchemaChange(path, "breaking", "schema removed", a, b)
        else:
            yield SchemaChange(path, "breaking", f"schema changed: {show(a)} → {show(b)}", a, b)
        return

    for key in sorted(COSMETIC_KEYWORDS):
        if not fast_same(a.get(key), b.get(key)):
            yield SchemaChange(join(path, key), "cosmetic", f"{key} {show(a.get(key))} → {show(b.get(key))}",
                               a.get(key), b.get(key))

    ta, tb = _types(a), _types(b)
    if ta != tb:
        if ta is None:
            yield SchemaChange(join(path, "type"), _narrower(role), f"type restricted to {show(b['type'])}", None, b["type"])
        elif tb is None:
            yield SchemaChange(join(path, "type"), _wider(role), f"type {show(a['type'])} no longer restricted", a["type"], None)
        elif _accepts(ta, tb):
            yield SchemaChange(join(path, "type"), _narrower(role), f"type narrowed {show(a['type'])} → {show(b['type'])}",
                               a["type"], b["type"])
        elif _accepts(tb, ta):
            yield SchemaChange(join(path, "type"), _wider(role), f"type widened {show(a['type'])} → {show(b['type'])}",
                               a["type"], b["type"])
        else:
            yield SchemaChange(join(path, "type"), "breaking", f"type changed {show(a['type'])} → {show(b['type'])}",
                               a["type"], b["type"])

    if not fast_same(a.get("enum"), b.get("enum")):
        ea, eb = a.get("enum"), b.get("enum")
        if ea is None:
            yield SchemaChange(join(path, "enum"), _narrower(role), f"values restricted to {show(eb)}", None, eb)
        elif eb is None:
            yield SchemaChange(join(path, "enum"), _wider(role), "enum restriction removed", ea, None)
        else:
            ka = {canonical(v): v for v in ea} if isinstance(ea, list) else {}
            kb = {canonical(v): v for v in eb} if isinstance(eb, list) else {}
            removed = [ka[k] for k in ka if k not in kb]
            added = [kb[k] for k in kb if k not in ka]
            if removed:
                yield SchemaChange(join(path, "enum"), _narrower(role), f"enum value(s) removed: {show(removed)}", removed, None)
            if added:
                yield SchemaChange(join(path, "enum"), _wider(role), f"enum value(s) added: {show(added)}", None, added)
            if not removed and not added:
                yield SchemaChange(join(path, "enum"), "cosmetic", "enum values reordered", ea, eb)

    if not fast_same(a.get("const"), b.get("const")):
        yield SchemaChange(join(path, "const"), "breaking", f"const {show(a.get('const'))} → {show(b.get('const'))}",
                           a.get("const"), b.get("const"))

    yield from _properties(a, b, path, role)

    apa, apb = a.get("additionalProperties"), b.get("additionalProperties")
    if not fast_same(apa, apb):
        closed_a, closed_b = apa is False, apb is False
        p = join(path, "additionalProperties")
        if closed_b and not closed_a:
            yield SchemaChange(p, _narrower(role), "additionalProperties closed", apa, apb)
        elif closed_a and not closed_b:
            yield SchemaChange(p, "compatible", "additionalProperties opened", apa, apb)
        elif isinstance(apa, dict) and isinstance(apb, dict):
            yield from _schema(apa, apb, p, role)
        else:
            yield SchemaChange(p, _narrower(role) if apb is not True and apb is not None else "compatible",
                               f"additionalProperties {show(apa)} → {show(apb)}", apa, apb)

    if "items" in a or "items" in b:
        yield from _schema(a.get("items"), b.get("items"), join(path, "items"), role)

    for defs in ("$defs", "definitions"):
        da, db = a.get(defs) or {}, b.get(defs) or {}
        if isinstance(da, dict) and isinstance(db, dict):
            for name in sorted(set(da) | set(db)):
                yield from _schema(da.get(name), db.get(name), join(join(path, defs), name), role)

    if not fast_same(a.get("default"), b.get("default")):
        yield SchemaChange(join(path, "default"), "compatible",
                           f"default {show(a.get('default'))} → {show(b.get('default'))}", a.get("default"), b.get("default"))

    for key in ("pattern", "format"):
        va, vb = a.get(key), b.get(key)
        if not fast_same(va, vb):
            kind: SchemaKind = _wider(role) if vb is None else _narrower(role)
            yield SchemaChange(join(path, key), kind, f"{key} {show(va)} → {show(vb)}", va, vb)

    for key, larger_is_narrower in _BOUNDS.items():
        va, vb = a.get(key), b.get(key)
        if fast_same(va, vb):
            continue
        if vb is None:
            narrower = False
        elif va is None:
            narrower = True
        elif isinstance(va, int | float) and isinstance(vb, int | float):
            narrower = (vb > va) == larger_is_narrower
        else:
            narrower = True
        yield SchemaChange(join(path, key), _narrower(role) if narrower else _wider(role),
                           f"{key} {show(va)} → {show(vb)}", va, vb)

    for key in sorted((set(a) | set(b)) - _HANDLED):
        if not fast_same(a.get(key), b.get(key)):
            yield SchemaChange(join(path, key), "breaking",
                               f"schema keyword `{key}` changed: {show(a.get(key))} → {show(b.get(key))}",
                               a.get(key), b.get(key))


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
    for name in sorted(rb - ra):
        if name in pa or name not in pb:  # new properties were reported above
            yield SchemaChange(rpath, _narrower(role) if role == "input" else "compatible",
                               f"property `{name}` became required", sorted(ra), sorted(rb))
    for name in sorted(ra - rb):
        if name in pb:
            yield SchemaChange(rpath, "compatible" if role == "input" else "breaking",
                               f"property `{name}` no longer required", sorted(ra), sorted(rb))


def annotation_changes(a: Any, b: Any, path: str) -> list[SchemaChange]:
    """Tool annotations: losing readOnlyHint or gaining destructiveHint is breaking, text is cosmetic."""
    a = a if isinstance(a, dict) else {}
    b = b if isinstance(b, dict) else {}
    out: list[SchemaChange] = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if fast_same(va, vb):
            continue
        p = join(path, key)
        if key == "readOnlyHint" and va is True and vb is not True:
            out.append(SchemaChange(p, "breaking", "no longer read-only (readOnlyHint lost)", va, vb))
        elif key == "destructiveHint" and vb is True and va is not True:
            out.append(SchemaChange(p, "breaking", "became destructive (destructiveHint)", va, vb))
        elif key == "title" or isinstance(va, str) or isinstance(vb, str):
            out.append(SchemaChange(p, "cosmetic", f"{key} {show(va)} → {show(vb)}", va, vb))
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
                out.append(SchemaChange(join(p, key), kind, f"{key} {show(arg_a.get(key))} → {show(arg_b.get(key))}",
                                        arg_a.get(key), arg_b.get(key)))
    return out
