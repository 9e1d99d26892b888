"""Schema rules keyword by keyword, each way round, for inputs and outputs (mcptape/diff/schema_change.py).

The truth is stated here, not read from the module: an inputSchema says what the server
accepts, so accepting less is breaking and more is compatible; an outputSchema says what it
returns, so the same change reads the other way round; a change that is neither narrower nor
wider is breaking for both. Every rule has a row per direction, so a rule read the wrong way
round (or dropped, or answered with one fixed kind) fails a row.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcptape.config.load import load_config
from mcptape.config.models import DriftSettings
from mcptape.diff.compare import diff_tapes
from mcptape.diff.schema_change import schema_changes
from mcptape.tape.format import Tape
from mcptape.verdict.model import DiffResult
from tests.recording import ADD, TapeBuilder

ABSENT = object()  # a row's keyword is not in the schema at all
NARROWER = ("breaking", "compatible")  # (input, output): the schema accepts / returns less
WIDER = ("compatible", "breaking")  # accepts / returns more
NEITHER = ("breaking", "breaking")  # neither: some old values are refused, some new ones appear
COSMETIC = ("cosmetic", "cosmetic")
UNCHANGED = (None, None)  # the same schema: 5 and 5.0 are one JSON number (jsonvalue.py)
COMPATIBLE = ("compatible", "compatible")
BREAKING = NEITHER


def with_key(key: str, value: Any, **rest: Any) -> dict[str, Any]:
    return dict(rest) if value is ABSENT else {**rest, key: value}


MIN_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
MAX_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")


def bound_rows() -> list[Any]:
    rows = []
    for key in MIN_BOUNDS + MAX_BOUNDS:
        low, high = (10, 100)
        tight, loose = (high, low) if key in MIN_BOUNDS else (low, high)
        rows += [
            pytest.param(with_key(key, loose), with_key(key, tight), NARROWER, id=f"{key} {loose}->{tight}"),
            pytest.param(with_key(key, tight), with_key(key, loose), WIDER, id=f"{key} {tight}->{loose}"),
            pytest.param({}, with_key(key, tight), NARROWER, id=f"{key} added"),
            pytest.param(with_key(key, tight), {}, WIDER, id=f"{key} removed"),
            pytest.param(with_key(key, 5), with_key(key, 5.0), UNCHANGED, id=f"{key} 5->5.0"),
            pytest.param(with_key(key, "5"), with_key(key, "6"), NEITHER, id=f"{key} not a number"),
        ]
    return rows


# Property-level rows: (schema of property `v` in the golden tape, in the fresh tape, (input kind, output kind)).
PROPERTY_ROWS = [
    *bound_rows(),
    # Draft 4 spells the exclusive bounds as flags: `true` accepts less, for both.
    pytest.param({"maximum": 5, "exclusiveMaximum": False}, {"maximum": 5, "exclusiveMaximum": True}, NARROWER,
                 id="draft4 exclusiveMaximum false->true"),
    pytest.param({"maximum": 5, "exclusiveMaximum": True}, {"maximum": 5, "exclusiveMaximum": False}, WIDER,
                 id="draft4 exclusiveMaximum true->false"),
    pytest.param({"minimum": 5}, {"minimum": 5, "exclusiveMinimum": True}, NARROWER, id="draft4 exclusiveMinimum added"),
    pytest.param({"minimum": 5, "exclusiveMinimum": True}, {"minimum": 5}, WIDER, id="draft4 exclusiveMinimum removed"),
    pytest.param({"maximum": 5, "exclusiveMaximum": False}, {"maximum": 5}, COSMETIC, id="draft4 false flag dropped"),
    pytest.param({"exclusiveMinimum": True}, {"exclusiveMinimum": 5}, NEITHER, id="draft4 flag -> draft6 number"),
    # multipleOf: every multiple of 4 is a multiple of 2.
    pytest.param({"multipleOf": 2}, {"multipleOf": 4}, NARROWER, id="multipleOf 2->4"),
    pytest.param({"multipleOf": 4}, {"multipleOf": 2}, WIDER, id="multipleOf 4->2"),
    pytest.param({"multipleOf": 2}, {"multipleOf": 3}, NEITHER, id="multipleOf 2->3"),
    pytest.param({"multipleOf": 0.1}, {"multipleOf": 0.3}, NARROWER, id="multipleOf 0.1->0.3"),
    pytest.param({}, {"multipleOf": 2}, NARROWER, id="multipleOf added"),
    pytest.param({"multipleOf": 2}, {}, WIDER, id="multipleOf removed"),
    # pattern, format, const: there or not; another value is neither narrower nor wider.
    *[
        row
        for key, one, other in (("pattern", "^a", "^b"), ("format", "date", "date-time"), ("const", 5, 6))
        for row in (
            pytest.param({}, {key: one}, NARROWER, id=f"{key} added"),
            pytest.param({key: one}, {}, WIDER, id=f"{key} removed"),
            pytest.param({key: one}, {key: other}, NEITHER, id=f"{key} replaced"),
        )
    ],
    pytest.param({"const": None}, {}, WIDER, id="const null removed"),
    pytest.param({}, {"const": None}, NARROWER, id="const null added"),
    # enum
    pytest.param({}, {"enum": ["a"]}, NARROWER, id="enum added"),
    pytest.param({"enum": ["a"]}, {}, WIDER, id="enum removed"),
    pytest.param({"enum": ["a", "b"]}, {"enum": ["a"]}, NARROWER, id="enum value removed"),
    pytest.param({"enum": ["a"]}, {"enum": ["a", "b"]}, WIDER, id="enum value added"),
    pytest.param({"enum": ["a", "b"]}, {"enum": ["b", "a"]}, COSMETIC, id="enum reordered"),
    pytest.param({"enum": ["a"]}, {"enum": "a"}, NEITHER, id="enum not a list"),
    # type
    pytest.param({}, {"type": "string"}, NARROWER, id="type added"),
    pytest.param({"type": "string"}, {}, WIDER, id="type removed"),
    pytest.param({"type": "number"}, {"type": "integer"}, NARROWER, id="type number->integer"),
    pytest.param({"type": "integer"}, {"type": "number"}, WIDER, id="type integer->number"),
    pytest.param({"type": ["string", "null"]}, {"type": "string"}, NARROWER, id="type null dropped"),
    pytest.param({"type": "string"}, {"type": ["string", "null"]}, WIDER, id="type null allowed"),
    pytest.param({"type": "string"}, {"type": "number"}, NEITHER, id="type string->number"),
    pytest.param({"type": ["string", "null"]}, {"type": ["null", "string"]}, COSMETIC, id="type reordered"),
    pytest.param({"type": 5}, {"type": 6}, NEITHER, id="type not a name"),
    # items
    pytest.param({"type": "array"}, {"type": "array", "items": {"type": "number"}}, NARROWER, id="items added"),
    pytest.param({"type": "array", "items": {"type": "number"}}, {"type": "array"}, WIDER, id="items removed"),
    pytest.param({"items": {"type": "number"}}, {"items": {"type": "integer"}}, NARROWER, id="items narrowed"),
    pytest.param({"items": {"type": "integer"}}, {"items": {"type": "number"}}, WIDER, id="items widened"),
    pytest.param({"items": {"maxLength": 100}}, {"items": {"maxLength": 10}}, NARROWER, id="items maxLength 100->10"),
    pytest.param({"items": True}, {"items": False}, NARROWER, id="items true->false"),
    pytest.param({"items": False}, {"items": {}}, WIDER, id="items false->{}"),
    pytest.param({"items": True}, {}, COSMETIC, id="items true->absent"),
    pytest.param({"items": [{"type": "number"}]}, {"items": [{"type": "string"}]}, NEITHER, id="tuple items"),
    # What does not change what is valid.
    pytest.param({"default": 1}, {"default": 2}, COMPATIBLE, id="default changed"),
    pytest.param({"default": None}, {}, COMPATIBLE, id="default null removed"),
    pytest.param({"description": "a"}, {"description": "b"}, COSMETIC, id="description"),
    pytest.param({"title": "a"}, {}, COSMETIC, id="title removed"),
    # A keyword the rules do not know: ask a human.
    pytest.param({"uniqueItems": False}, {"uniqueItems": True}, NEITHER, id="unknown keyword"),
]


def obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if required is not None:
        out["required"] = required
    return out


NUM = {"type": "number"}
# Object-level rows: the whole schema, golden and fresh.
OBJECT_ROWS = [
    pytest.param(obj({"a": NUM}), obj({"a": NUM}, ["a"]), NARROWER, id="property became required"),
    pytest.param(obj({"a": NUM}, ["a"]), obj({"a": NUM}), WIDER, id="property no longer required"),
    pytest.param(obj({"a": NUM}), obj({"a": NUM, "b": NUM}, ["b"]), ("breaking", "compatible"), id="required property added"),
    pytest.param(obj({"a": NUM}), obj({"a": NUM, "b": NUM}), COMPATIBLE, id="optional property added"),
    pytest.param(obj({"a": NUM, "b": NUM}), obj({"a": NUM}), BREAKING, id="property removed"),
    pytest.param(obj({"a": NUM}), obj({"a": NUM}, additionalProperties=False), NARROWER, id="additionalProperties closed"),
    pytest.param(obj({"a": NUM}, additionalProperties=False), obj({"a": NUM}), WIDER, id="additionalProperties opened"),
    pytest.param(obj({"a": NUM}, additionalProperties=True), obj({"a": NUM}, additionalProperties=False), NARROWER,
                 id="additionalProperties true->false"),
    pytest.param(obj({"a": NUM}, additionalProperties=False), obj({"a": NUM}, additionalProperties=NUM), WIDER,
                 id="additionalProperties false->schema"),
    pytest.param(obj({"a": NUM}), obj({"a": NUM}, additionalProperties=NUM), NARROWER,
                 id="additionalProperties schema added"),
    pytest.param(obj({"a": NUM}, additionalProperties=NUM), obj({"a": NUM}), WIDER,
                 id="additionalProperties schema removed"),
    pytest.param(obj({"a": NUM}, additionalProperties={"type": "integer"}), obj({"a": NUM}, additionalProperties=NUM),
                 WIDER, id="additionalProperties schema widened"),
    pytest.param(obj({"a": NUM}, additionalProperties=True), obj({"a": NUM}), COSMETIC,
                 id="additionalProperties true->absent"),
    pytest.param(obj({"a": NUM}), obj({"a": NUM}, None, **{"$defs": {"n": NUM}}), COMPATIBLE, id="definition added"),
    pytest.param(obj({"a": NUM}, None, **{"$defs": {"n": NUM}}), obj({"a": NUM}), BREAKING, id="definition removed"),
    pytest.param(obj({"a": NUM}, None, **{"$defs": {"n": NUM}}), obj({"a": NUM}, None, **{"$defs": {"n": {"type": "integer"}}}),
                 NARROWER, id="definition narrowed"),
    pytest.param(obj({"a": True}), obj({"a": False}), NARROWER, id="property schema true->false"),
]


@pytest.mark.parametrize("role", ["input", "output"])
@pytest.mark.parametrize(("golden", "fresh", "kinds"), PROPERTY_ROWS)
def test_a_property_schema_change(
    golden: dict[str, Any], fresh: dict[str, Any], kinds: tuple[str | None, str | None], role: Any
) -> None:
    expected = kinds[0] if role == "input" else kinds[1]
    found = schema_changes(obj({"v": golden}), obj({"v": fresh}), "s", role)
    assert [c.kind for c in found] == ([expected] if expected else []), found
    assert all(c.path.startswith("s.properties.v") for c in found)


@pytest.mark.parametrize("role", ["input", "output"])
@pytest.mark.parametrize(("golden", "fresh", "kinds"), OBJECT_ROWS)
def test_an_object_schema_change(golden: dict[str, Any], fresh: dict[str, Any], kinds: tuple[str, str], role: Any) -> None:
    expected = kinds[0] if role == "input" else kinds[1]
    found = schema_changes(golden, fresh, "s", role)
    assert [c.kind for c in found] == [expected], found


def test_an_unchanged_schema_has_no_change_and_a_changed_copy_has() -> None:
    schema = obj({"v": {"type": "string", "maxLength": 100, "pattern": "^a", "const": None, "default": None}}, ["v"])
    assert schema_changes(schema, obj(dict(schema["properties"]), ["v"]), "s", "input") == []
    changed = obj({"v": dict(schema["properties"]["v"], maxLength=10)}, ["v"])
    assert [(c.path, c.kind) for c in schema_changes(schema, changed, "s", "input")] == [
        ("s.properties.v.maxLength", "breaking")
    ]


# --- through diff_tapes: the verdict a user sees --------------------------------------------------


def tools_tape(*tools: dict[str, Any]) -> Tape:
    return TapeBuilder().call("tools/list", None, {"tools": list(tools)}).tape()


def text_tool(key: str, max_length: int) -> dict[str, Any]:
    return dict(ADD, name="t", **{key: obj({"text": {"type": "string", "maxLength": max_length}}, ["text"])})


@pytest.mark.parametrize(
    ("key", "before", "after", "verdict", "column"),
    [
        # A client sending 50 characters is refused now: structural.
        ("inputSchema", 100, 10, "structural", "breaking"),
        ("inputSchema", 10, 100, "output", "compatible"),
        # The server may now return 50 characters to a client promised at most 10: structural.
        ("outputSchema", 10, 100, "structural", "breaking"),
        ("outputSchema", 100, 10, "output", "compatible"),
    ],
)
def test_a_moved_bound_is_read_the_right_way_round_in_the_verdict(
    key: str, before: int, after: int, verdict: str, column: str
) -> None:
    result = diff_tapes(tools_tape(text_tool(key, before)), tools_tape(text_tool(key, after)))
    assert result.verdict == verdict
    assert getattr(result.surface, column) == ["t"]
    assert [(f.category, f.kind, f.path) for d in result.drifts for f in d.findings] == [
        ("schema", column, f"result.tools[t].{key}.properties.text.maxLength")
    ]
    assert diff_tapes(tools_tape(text_tool(key, before)), tools_tape(text_tool(key, before))).verdict == "same"


def test_a_narrowed_union_heads_with_the_new_alternative_paired_with_its_old_form() -> None:
    # An outputSchema that becomes anyOf[the old shape narrowed, a new shape]: the server may now
    # return the new shape (structural); the old one, narrowed, is a compatible change of itself.
    old = obj({"status": {"type": "string"}, "count": {"type": "integer"}}, ["status", "count"])
    narrowed = obj({"status": {"type": "string", "enum": ["ok", "busy"]}, "count": {"type": "integer"}},
                   ["status", "count"])
    failure = obj({"error": {"type": "string"}}, ["error"])
    before = tools_tape(dict(ADD, name="t", outputSchema=old))
    after = tools_tape(dict(ADD, name="t", outputSchema={"anyOf": [narrowed, failure]}))
    result = diff_tapes(before, after)
    assert result.exit_code == 2
    line = result.drifts[0].one_line()
    assert line.startswith("step 1 · tools/list · result.tools[t].outputSchema.anyOf[1] tool `t`: alternative added: "), line
    assert '"error"' in line and line.endswith("(structural)")
    assert [(f.path, f.kind) for d in result.drifts for f in d.findings if f.category == "schema"] == [
        ("result.tools[t].outputSchema.anyOf[0].properties.status.enum", "compatible"),
        ("result.tools[t].outputSchema.anyOf[1]", "breaking"),
    ]
    # Unchanged, the same union is the same; a third alternative unlike either is one more added.
    assert diff_tapes(after, after).verdict == "same"
    more = tools_tape(dict(ADD, name="t", outputSchema={"anyOf": [narrowed, failure, {"type": "string"}]}))
    assert [(f.path, f.kind) for d in diff_tapes(after, more).drifts for f in d.findings if f.category == "schema"] == [
        ("result.tools[t].outputSchema.anyOf[2]", "breaking")]


# --- fail_on: the more specific key wins, whatever the order ---------------------------------------


def breaking_and_compatible() -> tuple[Tape, Tape]:
    return (tools_tape(text_tool("inputSchema", 100), dict(ADD, name="u")),
            tools_tape(text_tool("inputSchema", 10), dict(ADD, name="u", description="Sum.")))


def severities(result: DiffResult) -> dict[str | None, str]:
    return {f.kind: f.severity for d in result.drifts for f in d.findings}


@pytest.mark.parametrize("fail_on", [
    {"schema.breaking": "structural", "schema": "info"},
    {"schema": "info", "schema.breaking": "structural"},
], ids=["specific first", "general first"])
def test_fail_on_category_and_kind_wins_over_category(fail_on: dict[str, Any]) -> None:
    g, f = breaking_and_compatible()
    result = diff_tapes(g, f, DriftSettings(fail_on=fail_on))
    assert severities(result) == {"breaking": "structural", "cosmetic": "info"}
    assert result.verdict == "structural"
    # The general key alone does relax the breaking change: the specific key is what kept it.
    relaxed = diff_tapes(g, f, DriftSettings(fail_on={"schema": "info"}))
    assert severities(relaxed) == {"breaking": "info", "cosmetic": "info"} and relaxed.exit_code == 0


@pytest.mark.parametrize("order", ["specific first", "general first"])
def test_fail_on_precedence_holds_as_read_from_mcptape_yml(order: str, tmp_path: Any) -> None:
    lines = ["    schema.breaking: output", "    schema: structural"]
    if order == "general first":
        lines.reverse()
    config = tmp_path / "mcptape.yml"
    config.write_text(
        "servers: {calc: {command: [python, calc.py]}}\n"
        "sessions: [{name: s, server: calc, steps: [list_tools]}]\n"
        "drift:\n  fail_on:\n" + "\n".join(lines) + "\n",
        encoding="utf-8",
    )
    drift = load_config(config, env={}).config.drift
    g, f = breaking_and_compatible()
    assert severities(diff_tapes(g, f, drift)) == {"breaking": "output", "cosmetic": "structural"}
