"""A schema change called compatible never rejects what the old schema took (issue 29, item 3).

For random pairs of schemas (an old one, and a new one made from it by a few edits of the
kinds servers make: a type widened or narrowed, a property added or removed, an alternative
added or removed, a bound moved, titled values, `$ref` into `$defs`, ...), diff/schema_change.py's
verdict is checked against jsonschema itself on instances generated from the schemas:
- as an inputSchema, a change with no "breaking" finding must accept every instance the old
  schema accepted (callers that worked still work);
- as an outputSchema, a change with no "breaking" finding must produce only instances the old
  schema accepted (what clients were promised still holds).
Instances are what a caller or a server writes from the schema: declared properties only (an
undeclared property that a new optional one would give a type is outside the contract).
A hand-picked example of each direction shows the check can fail.
"""

from __future__ import annotations

import os
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcptape.diff.schema_change import Role, inline_refs, schema_changes

Schema = dict[str, Any]
VALIDATOR = jsonschema.Draft202012Validator
SCALARS = ("string", "integer", "number", "boolean", "null")
NAMES = ("a", "b", "c")
WORDS = ("x", "y", "z", "w")


def leaf() -> st.SearchStrategy[Schema]:
    typed = st.sampled_from(SCALARS).map(lambda t: {"type": t})
    bounded = st.builds(lambda lo, span: {"type": "integer", "minimum": lo, "maximum": lo + span},
                        st.integers(-3, 3), st.integers(0, 4))
    sized = st.builds(lambda n: {"type": "string", "maxLength": n}, st.integers(0, 3))
    enum = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True).map(lambda v: {"type": "string", "enum": v})
    titled = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True).map(
        lambda v: {"oneOf": [{"const": x, "title": x.upper()} for x in v]})
    return st.one_of(typed, bounded, sized, enum, titled)


def schemas() -> st.SearchStrategy[Schema]:
    def extend(inner: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
        obj = st.builds(
            lambda props, req, closed: {"type": "object", "properties": props,
                                        "required": sorted(set(req) & set(props)),
                                        **({"additionalProperties": False} if closed else {})},
            st.dictionaries(st.sampled_from(NAMES), inner, min_size=1, max_size=3),
            st.lists(st.sampled_from(NAMES), unique=True), st.booleans())
        arr = st.builds(lambda items: {"type": "array", "items": items, "maxItems": 3}, inner)
        tup = st.builds(lambda p: {"type": "array", "prefixItems": p, "maxItems": 3}, st.lists(inner, min_size=1, max_size=2))
        any_of = st.lists(inner, min_size=1, max_size=3).map(lambda x: {"anyOf": x})
        all_of = st.lists(inner, min_size=1, max_size=2).map(lambda x: {"allOf": x})
        nullable = inner.map(lambda x: {"anyOf": [x, {"type": "null"}]})
        return st.one_of(obj, arr, tup, any_of, all_of, nullable)

    return st.recursive(leaf(), extend, max_leaves=6)


def with_defs(schema: Schema) -> Schema:
    """The same schema written the way pydantic writes a model: the object in `$defs`, a `$ref` to it."""
    return {"$defs": {"Model": schema}, "$ref": "#/$defs/Model"}


@st.composite
def edited(draw: st.DrawFn, schema: Any, depth: int = 0) -> Any:
    """`schema` with a few edits at random places."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in ("properties",):
        if isinstance(out.get(key), dict):
            props = {k: draw(edited(v, depth + 1)) for k, v in out[key].items()}
            if draw(st.booleans()) and len(props) > 1:
                props.pop(draw(st.sampled_from(sorted(props))))
            if draw(st.integers(0, 3)) == 0:
                props[draw(st.sampled_from(NAMES))] = draw(leaf())
            out[key] = props
            req = set(out.get("required", [])) & set(props)
            if draw(st.integers(0, 3)) == 0:
                req ^= {draw(st.sampled_from(sorted(props)))}
            out["required"] = sorted(req)
    for key in ("items",):
        if isinstance(out.get(key), dict):
            out[key] = draw(edited(out[key], depth + 1))
    for key in ("anyOf", "allOf", "oneOf", "prefixItems"):
        if isinstance(out.get(key), list):
            members = [draw(edited(m, depth + 1)) for m in out[key]]
            if draw(st.integers(0, 3)) == 0 and len(members) > 1:
                members.pop(draw(st.integers(0, len(members) - 1)))
            if draw(st.integers(0, 3)) == 0:
                members.append({"const": draw(st.sampled_from(WORDS))} if key == "oneOf" else draw(leaf()))
            if draw(st.integers(0, 4)) == 0:
                members.reverse()
            out[key] = members
    choice = draw(st.integers(0, 9))
    if choice == 0 and "type" in out and isinstance(out["type"], str):
        out["type"] = draw(st.sampled_from(SCALARS))
    elif choice == 1 and "maximum" in out:
        out["maximum"] += draw(st.integers(-2, 2))
    elif choice == 2 and "maxLength" in out:
        out["maxLength"] = max(0, out["maxLength"] + draw(st.integers(-2, 2)))
    elif choice == 3 and "enum" in out:
        out["enum"] = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4, unique=True))
    elif choice == 4 and "additionalProperties" in out:
        del out["additionalProperties"]
    elif choice == 5 and depth > 0:
        out = {"anyOf": [out, {"type": "null"}]}
    elif choice == 6 and "enum" in out and depth > 0:
        out = {"oneOf": [{"const": v, "title": f"{v}!"} for v in out["enum"]]}
    elif choice == 7:
        out["description"] = "changed"
    return out


@st.composite
def instance(draw: st.DrawFn, schema: Any, root: Any, depth: int = 0) -> Any:
    """A value written from `schema` (maybe not valid: the caller filters with jsonschema)."""
    if depth > 6 or not isinstance(schema, dict):
        return None
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return draw(instance(root.get("$defs", {}).get(name, {}), root, depth + 1))
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return draw(instance(draw(st.sampled_from(schema[key])), root, depth + 1))
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        names = [n for n in props if n in schema.get("required", []) or draw(st.booleans())]
        return {n: draw(instance(props[n], root, depth + 1)) for n in names}
    if kind == "array":
        prefix = [draw(instance(p, root, depth + 1)) for p in schema.get("prefixItems", [])]
        rest = schema.get("items")
        more = draw(st.lists(instance(rest, root, depth + 1), max_size=2)) if isinstance(rest, dict) else []
        return prefix + more
    values = {
        "string": st.text(alphabet="xyzw", max_size=4),
        "integer": st.integers(-6, 8),
        "number": st.one_of(st.integers(-6, 8), st.floats(-6, 8, allow_nan=False)),
        "boolean": st.booleans(),
        "null": st.none(),
    }
    if kind in values:
        return draw(values[kind])
    return draw(st.one_of(*values.values()))


def breaking(old: Schema, new: Schema, role: Role) -> bool:
    return any(c.kind == "breaking" for c in schema_changes(old, new, "s", role))


def valid(schema: Schema, value: Any) -> bool:
    return VALIDATOR(schema).is_valid(value)


# Derandomized: the suite gives the same verdict every run (a failure reproduces); the cases a random
# search once found are rows of the table below. A longer random search: HYPOTHESIS_SEARCH=1.
PROPERTY = settings(max_examples=1500 if os.environ.get("HYPOTHESIS_SEARCH") else 150, deadline=None,
                    derandomize=not os.environ.get("HYPOTHESIS_SEARCH"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.mark.parametrize("role", ["input", "output"])
@PROPERTY
@given(data=st.data(), old=schemas(), defs=st.booleans())
def test_a_change_called_compatible_keeps_the_schemas_promise(role: Role, data: st.DataObject, old: Schema,
                                                              defs: bool) -> None:
    """input: every value the old schema accepted is still accepted; output: every value the new
    schema allows was allowed by the old one (clients were promised no other)."""
    new = data.draw(edited(old))
    if defs:
        old, new = with_defs(old), with_defs(new)
    assume(not breaking(old, new, role))
    written, checked = (old, new) if role == "input" else (new, old)
    for _ in range(8):
        value = data.draw(instance(written, written))
        if valid(written, value):
            assert valid(checked, value), (old, new, value, schema_changes(old, new, "s", role))


NULLABLE = {"anyOf": [{"type": "string"}, {"type": "null"}]}
TITLED = {"oneOf": [{"const": "x", "title": "X"}, {"const": "y", "title": "Y"}]}


@pytest.mark.parametrize(("old", "new", "role", "kinds"), [
    # pydantic's Optional: one alternative added
    ({"type": "string"}, NULLABLE, "input", {"compatible"}),
    ({"type": "string"}, NULLABLE, "output", {"breaking"}),
    (NULLABLE, {"type": "string"}, "input", {"breaking"}),
    # SEP-1330 titled values: retitled is cosmetic, a value removed narrows, an enum written as titled values is the same list
    (TITLED, {"oneOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Y"}]}, "input", {"cosmetic"}),
    (TITLED, {"oneOf": [{"const": "x", "title": "X"}]}, "input", {"breaking"}),
    (TITLED, {"oneOf": [*TITLED["oneOf"], {"const": "z"}]}, "input", {"compatible"}),
    ({"type": "string", "enum": ["x", "y"]}, {"type": "string", **TITLED}, "input", {"cosmetic"}),
    # multi-select: an array of titled values
    ({"type": "array", "items": {"anyOf": TITLED["oneOf"]}}, {"type": "array", "items": {"anyOf": TITLED["oneOf"][:1]}},
     "input", {"breaking"}),
    # oneOf whose alternatives overlap: widening one may make a value match two
    ({"oneOf": [{"type": "number"}, {"type": "integer", "minimum": 5}]},
     {"oneOf": [{"type": "number"}, {"type": "integer", "minimum": 3}]}, "input", {"breaking"}),
    # allOf: a member added narrows
    ({"allOf": [{"type": "integer"}]}, {"allOf": [{"type": "integer"}, {"minimum": 0}]}, "input", {"breaking"}),
    ({"allOf": [{"type": "integer"}, {"minimum": 0}]}, {"allOf": [{"type": "integer"}]}, "input", {"compatible"}),
    # $ref into $defs: judged where it is used; an unused definition is not compared
    (with_defs({"type": "object", "properties": {"n": {"type": "integer"}}}),
     with_defs({"type": "object", "properties": {"n": {"type": "number"}}}), "input", {"compatible"}),
    (with_defs({"type": "object", "properties": {"n": {"type": "integer"}}}),
     with_defs({"type": "object", "properties": {"n": {"type": "number"}}}), "output", {"breaking"}),
    ({**with_defs({"type": "integer"}), "$defs": {"Model": {"type": "integer"}, "Unused": {"type": "string"}}},
     with_defs({"type": "integer"}), "input", set()),
    # found by the random search: an answer with a property the old schema closed its object against
    ({"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": False},
     {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "string"}}, "required": ["a"],
      "additionalProperties": False}, "output", {"breaking"}),
    ({"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": False},
     {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "string"}}, "additionalProperties": False},
     "input", {"compatible"}),
    # prefixItems: a position given a schema where anything went narrows
    ({"type": "array", "prefixItems": [{"type": "string"}]},
     {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}, "input", {"breaking"}),
    ({"type": "array", "prefixItems": [{"type": "string"}]}, {"type": "array", "prefixItems": [{"type": "number"}]},
     "input", {"breaking"}),
])
def test_what_servers_write_is_judged_by_direction(old: Schema, new: Schema, role: Role, kinds: set[str]) -> None:
    assert {c.kind for c in schema_changes(old, new, "s", role)} == kinds
    assert schema_changes(old, old, "s", role) == []  # negative control


def test_the_property_check_itself_fails_on_a_wrong_verdict() -> None:
    # Positive control for the property tests: a narrowing that is called compatible would be caught.
    old, new = {"type": "number"}, {"type": "integer"}
    assert valid(old, 1.5) and not valid(new, 1.5)
    assert breaking(old, new, "input")  # and diff/schema_change.py does call it breaking


def test_a_recursive_definition_stays_a_reference() -> None:
    tree = {"$defs": {"Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
            "$ref": "#/$defs/Node"}
    inlined = inline_refs(tree)
    assert inlined["properties"]["kids"]["items"] == {"$ref": "#/$defs/Node"} and "$defs" in inlined
    node: dict[str, Any] = tree["$defs"]["Node"]  # type: ignore[index]
    grown = {"$defs": {"Node": {**node, "required": ["kids"]}}, "$ref": "#/$defs/Node"}
    assert {c.kind for c in schema_changes(tree, grown, "s", "input")} == {"breaking"}
