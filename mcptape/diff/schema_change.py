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

Schemas as servers write them (pydantic, zod, the SDKs):
- `$ref` into `$defs`/`definitions` of the same schema is followed (`inline_refs`): a change
  is judged where the definition is used, and a definition nothing uses is not compared. A
  recursive definition stays a `$ref` beneath its first use.
- `anyOf` is a union: an alternative added accepts more, one removed accepts less, one changed
  is judged as that alternative's change. Alternatives are paired by content (a `const`
  alternative by its value), so titles reworded and alternatives reordered are cosmetic; what
  is left is paired with its most alike counterpart (the same type, most property names in
  common), so an alternative narrowed beside a new one reads as that change and one added.
- `oneOf` is the same when its alternatives cannot overlap (distinct `const`s — the titled
  enums of SEP-1330 —, distinct types, or a required property with distinct `const`s);
  otherwise any change of its alternatives is breaking, since a value may come to match two.
- `allOf` is an intersection: a member added accepts less, one removed more.
- A schema without alternatives against one that is only alternatives (`type: string` →
  `anyOf: [{type: string}, {type: null}]`, pydantic's Optional) is compared as a union of one;
  an `enum` against a `oneOf`/`anyOf` of `const`s (titled values) as the two lists of values.
- `prefixItems` are compared position by position; a position added where `items` said
  nothing accepts less, one removed where the new `items` says nothing accepts more.

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
_ALTERNATIVES = ("anyOf", "oneOf")
_HANDLED = frozenset(
    {"type", "enum", "properties", "required", "additionalProperties", "items", "default", "$defs",
     "definitions", "multipleOf", "allOf", "prefixItems", *_ALTERNATIVES, *_RESTRICTIONS, *_BOUNDS,
     *COSMETIC_KEYWORDS}
)
# Keywords whose values are data, not schemas: inline_refs does not look inside them.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "required"})
_MAX_INLINE = 64  # inlined definitions per schema: a schema that references itself widely stays small
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
    if fast_same(a, b):
        return []
    return list(_schema(inline_refs(a), inline_refs(b), path, role))


def _local_ref(ref: Any) -> tuple[str, str] | None:
    """("$defs" or "definitions", name) of a `#/$defs/name` reference; None for any other."""
    if isinstance(ref, str):
        for defs in ("$defs", "definitions"):
            prefix = f"#/{defs}/"
            if ref.startswith(prefix) and "/" not in ref[len(prefix):]:
                return defs, ref[len(prefix):].replace("~1", "/").replace("~0", "~")
    return None


def inline_refs(schema: Any) -> Any:
    """`schema` with each `$ref` into its own `$defs`/`definitions` replaced by the definition
    (siblings of the `$ref` kept beside it); a reference inside its own definition stays a
    `$ref`. The definitions leave the schema unless a `$ref` still needs them."""
    if not isinstance(schema, dict) or "$ref" not in canonical(schema):
        return schema
    budget = [_MAX_INLINE]
    left: list[bool] = []

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(x, stack) for x in node]
        if not isinstance(node, dict):
            return node
        target = _local_ref(node.get("$ref"))
        if target is not None:
            defs = schema.get(target[0])
            found = defs.get(target[1]) if isinstance(defs, dict) else None
            key = "/".join(target)
            if found is not None and key not in stack and budget[0] > 0:
                budget[0] -= 1
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                merged = {**found, **siblings} if isinstance(found, dict) else found
                return walk(merged, (*stack, key))
            left.append(True)
        return {k: v if k in _DATA_KEYWORDS or k in ("$defs", "definitions") else walk(v, stack)
                for k, v in node.items()}

    out = walk(schema, ())
    if not left and isinstance(out, dict):
        out = {k: v for k, v in out.items() if k not in ("$defs", "definitions")}
    return out


def _schema(a: Any, b: Any, path: str, role: Role) -> Iterator[SchemaChange]:
    if fast_same(a, b):
        return
    if not isinstance(a, dict) or not isinstance(b, dict):
        yield from _not_objects(a, b, path, role)
        return
    a, b = _as_alternatives(a, b)
    titled = _as_enum(a, b)
    if titled is not None:
        a, b, note = titled
        yield SchemaChange(path, "cosmetic", note, None, None)
    # Keyword by keyword, in an order a reader follows: what it says, what it accepts, its limits.
    for keywords in (_cosmetic, _type, _enum, _alternatives, _all_of, _properties, _additional_properties, _items,
                     _prefix_items, _definitions, _default, _limits, _unknown_keywords):
        yield from keywords(a, b, path, role)


# --- alternatives: anyOf, oneOf, allOf ---------------------------------------------------------

_BESIDE_ALTERNATIVES = COSMETIC_KEYWORDS | {"default"}


def _core(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in _BESIDE_ALTERNATIVES}


def _only_alternatives(schema: dict[str, Any]) -> str | None:
    """The keyword (anyOf/oneOf) of a schema that says nothing but its alternatives."""
    keys = [k for k in _ALTERNATIVES if isinstance(schema.get(k), list)]
    if len(keys) == 1 and set(schema) - _BESIDE_ALTERNATIVES == {keys[0]}:
        return keys[0]
    return None


def _as_alternatives(a: dict[str, Any], b: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A schema without alternatives against one that is only alternatives: the first as a
    union of one (`type: string` → `anyOf: [{type: string}, {type: null}]` adds an alternative)."""
    ka, kb = _only_alternatives(a), _only_alternatives(b)
    has_a = any(k in a for k in _ALTERNATIVES)
    has_b = any(k in b for k in _ALTERNATIVES)
    if kb is not None and not has_a and _core(a) and not _const_list(b[kb]):
        a = {**{k: v for k, v in a.items() if k in _BESIDE_ALTERNATIVES}, kb: [_core(a)]}
    elif ka is not None and not has_b and _core(b) and not _const_list(a[ka]):
        b = {**{k: v for k, v in b.items() if k in _BESIDE_ALTERNATIVES}, ka: [_core(b)]}
    return a, b


def _const_list(alternatives: Any) -> list[Any] | None:
    """The values of alternatives that are each a `const` (with a title or description at most)."""
    if not isinstance(alternatives, list) or not alternatives:
        return None
    if all(isinstance(x, dict) and "const" in x and set(x) <= COSMETIC_KEYWORDS | {"const"} for x in alternatives):
        return [x["const"] for x in alternatives]
    return None


def _as_enum(a: dict[str, Any], b: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    """An `enum` against titled values (a oneOf/anyOf of `const`s): both as `enum` lists, and
    what changed in the writing; None when the two are not such a pair."""
    def titled(s: dict[str, Any]) -> tuple[str, list[Any]] | None:
        for key in _ALTERNATIVES:
            values = _const_list(s.get(key))
            if values is not None and "enum" not in s:
                return key, values
        return None

    ta, tb = titled(a), titled(b)
    if ta is not None and "enum" in b and tb is None:
        return {**{k: v for k, v in a.items() if k != ta[0]}, "enum": ta[1]}, b, f"titled values ({ta[0]} of const) → enum"
    if tb is not None and "enum" in a and ta is None:
        return a, {**{k: v for k, v in b.items() if k != tb[0]}, "enum": tb[1]}, f"enum → titled values ({tb[0]} of const)"
    return None


def _alt_key(schema: Any) -> str:
    """What pairs an alternative with its counterpart: a `const`'s value, else its content
    without titles and descriptions."""
    if isinstance(schema, dict):
        if "const" in schema:
            return "const " + canonical(schema["const"])
        return canonical({k: v for k, v in schema.items() if k not in COSMETIC_KEYWORDS})
    return canonical(schema)


def _disjoint(alternatives: list[Any]) -> bool:
    """Can no value match two of these? Distinct consts, distinct single types (integer is a
    number), or one required property holding distinct consts in each (a discriminator)."""
    if len(alternatives) < 2:
        return True
    if not all(isinstance(x, dict) for x in alternatives):
        return False
    consts = [canonical(x["const"]) for x in alternatives if "const" in x]
    if len(consts) == len(alternatives):
        return len(set(consts)) == len(consts)
    types = [x.get("type") for x in alternatives]
    if all(isinstance(t, str) for t in types):
        norm = ["number" if t == "integer" else t for t in types]
        if len(set(norm)) == len(norm):
            return True
    first = alternatives[0].get("properties")
    for name in first if isinstance(first, dict) else {}:
        values = []
        for x in alternatives:
            prop = (x.get("properties") or {}).get(name) if isinstance(x.get("properties"), dict) else None
            if not (isinstance(prop, dict) and "const" in prop and name in (x.get("required") or [])):
                break
            values.append(canonical(prop["const"]))
        else:
            if len(set(values)) == len(values):
                return True
    return False


def _alternatives(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    for key in _ALTERNATIVES:
        la, lb = _get(a, key), _get(b, key)
        if fast_same(la, lb):
            continue
        p = join(path, key)
        if la is _ABSENT:
            yield SchemaChange(p, _narrower(role), f"restricted to {key} {show(lb)}", None, lb)
        elif lb is _ABSENT:
            yield SchemaChange(p, _wider(role), f"{key} restriction removed", la, None)
        elif not isinstance(la, list) or not isinstance(lb, list):
            yield SchemaChange(p, "breaking", f"{key} {show(la)} → {show(lb)}", la, lb)
        else:
            exclusive = key == "oneOf" and not (_disjoint(la) and _disjoint(lb))
            yield from _members(la, lb, p, role, union=True, exclusive=exclusive)


def _all_of(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    la, lb = _get(a, "allOf"), _get(b, "allOf")
    if fast_same(la, lb):
        return
    p = join(path, "allOf")
    if isinstance(la, list) and isinstance(lb, list):
        yield from _members(la, lb, p, role, union=False, exclusive=False)
    elif la is _ABSENT and isinstance(lb, list):
        yield from _members([], lb, p, role, union=False, exclusive=False)
    elif lb is _ABSENT and isinstance(la, list):
        yield from _members(la, [], p, role, union=False, exclusive=False)
    else:
        yield SchemaChange(p, "breaking", f"allOf {show(_value(la))} → {show(_value(lb))}", _value(la), _value(lb))


def _members(la: list[Any], lb: list[Any], path: str, role: Role, *, union: bool, exclusive: bool) -> Iterator[SchemaChange]:
    """Alternatives (union) or members (intersection) paired by _alt_key; what is left unpaired
    is added or removed, one left on each side is one member changed."""
    ka, kb = [_alt_key(x) for x in la], [_alt_key(x) for x in lb]
    if len(set(ka)) != len(ka) or len(set(kb)) != len(kb):
        yield SchemaChange(path, "breaking", f"{show(la)} → {show(lb)}", la, lb)
        return
    where_b = {k: j for j, k in enumerate(kb)}
    found: list[SchemaChange] = []
    for i, k in enumerate(ka):
        if k in where_b:
            found.extend(_schema(la[i], lb[where_b[k]], join(path, where_b[k]), role))
    removed = [i for i, k in enumerate(ka) if k not in where_b]
    added = [j for j, k in enumerate(kb) if k not in set(ka)]
    more, less = (_wider(role), _narrower(role)) if union else (_narrower(role), _wider(role))
    noun = "alternative" if union else "member"
    for i, j in _changed_pairs(la, lb, removed, added):
        found.extend(_schema(la[i], lb[j], join(path, j), role))
        removed.remove(i)
        added.remove(j)
    found.extend(SchemaChange(join(path, i), less, f"{noun} removed: {show(la[i])}", la[i], None) for i in removed)
    found.extend(SchemaChange(join(path, j), more, f"{noun} added: {show(lb[j])}", None, lb[j]) for j in added)
    if not found and [k for k in ka] != [k for k in kb if k in set(ka)]:
        found.append(SchemaChange(path, "cosmetic", f"{noun}s reordered", la, lb))
    for change in found:
        if exclusive and change.kind == "compatible":
            # oneOf whose alternatives may overlap: a value that matched one may now match two
            change = SchemaChange(change.path, "breaking", f"{change.message} (oneOf alternatives that may overlap)",
                                  change.before, change.after)
        yield change


def _changed_pairs(la: list[Any], lb: list[Any], removed: list[int], added: list[int]) -> list[tuple[int, int]]:
    """The unpaired old and new members that are one member changed: the only one left on each side,
    else each old one with the new one most like it (_likeness at least half), most alike first. So
    `{object}` → `anyOf[{the object, narrowed}, {another object}]` reads as the old shape narrowed
    and one alternative added, not as the old shape removed and two added."""
    if len(removed) == 1 and len(added) == 1:
        return [(removed[0], added[0])]
    scored = sorted(((_likeness(la[i], lb[j]), i, j) for i in removed for j in added), key=lambda t: -t[0])
    pairs: list[tuple[int, int]] = []
    for score, i, j in scored:
        if score >= 0.5 and all(i != pi and j != pj for pi, pj in pairs):
            pairs.append((i, j))
    return pairs


def _likeness(a: Any, b: Any) -> float:
    """How alike two schemas are, 0 to 1: none if their types cannot share a value, else the share of
    property names they have in common (of keywords with their values, for schemas without properties)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return 0.0
    ta, tb = _types(a), _types(b)
    if ta is not None and tb is not None and not (_accepts(ta, tb) or _accepts(tb, ta)):
        return 0.0
    pa, pb = a.get("properties"), b.get("properties")
    if isinstance(pa, dict) and isinstance(pb, dict) and (pa or pb):
        return len(set(pa) & set(pb)) / len(set(pa) | set(pb))
    ka = {(k, canonical(v)) for k, v in a.items() if k not in COSMETIC_KEYWORDS}
    kb = {(k, canonical(v)) for k, v in b.items() if k not in COSMETIC_KEYWORDS}
    return len(ka & kb) / len(ka | kb) if ka | kb else 1.0


def _prefix_items(a: dict[str, Any], b: dict[str, Any], path: str, role: Role) -> Iterator[SchemaChange]:
    la, lb = a.get("prefixItems"), b.get("prefixItems")
    if fast_same(la, lb):
        return
    la = la if isinstance(la, list) else []
    lb = lb if isinstance(lb, list) else []
    p = join(path, "prefixItems")
    for i in range(min(len(la), len(lb))):
        yield from _schema(la[i], lb[i], join(p, i), role)
    rest_a, rest_b = a.get("items", True), b.get("items", True)
    for i in range(len(la), len(lb)):  # the position was the old `items`' (or anything's)
        kind = _narrower(role) if rest_a in (True, {}) else "breaking"
        yield SchemaChange(join(p, i), kind, f"item {i} now has a schema: {show(lb[i])}", None, lb[i])
    for i in range(len(lb), len(la)):  # the position is the new `items`' now
        kind = _wider(role) if rest_b in (True, {}) else "breaking"
        yield SchemaChange(join(p, i), kind, f"item {i} no longer has a schema of its own", la[i], None)


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
        said = (f"default {show(vb)} added" if va is _ABSENT else f"default {show(va)} removed" if vb is _ABSENT
                else f"default {show(va)} → {show(vb)}")
        yield SchemaChange(join(path, "default"), "compatible", said, _value(va), _value(vb))


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
    extra = a.get("additionalProperties", True)  # what the old schema said of properties it does not name
    for name in pb:
        if name not in pa:
            if role == "input" and name in rb:
                yield SchemaChange(join(ppath, name), "breaking", f"required property `{name}` added", None, pb[name])
            elif role == "output" and (extra is False or (isinstance(extra, dict) and any(
                    c.kind == "breaking" for c in _schema(extra, pb[name], join(ppath, name), role)))):
                # A client holding the old schema refuses an answer with a property it did not allow.
                yield SchemaChange(join(ppath, name), "breaking", f"property `{name}` added where the old schema "
                                   "allowed no such property", None, pb[name])
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
