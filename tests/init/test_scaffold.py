"""init/scaffold.py: the arguments init writes are valid for the schema they came from, and which calls run first.

Every built argument set is checked with client.schema_violation, the check `ci` makes before a
call; a schema no minimal value satisfies is reported as such, never papered over.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcptape.init.scaffold import (
    described_example,
    example_arguments,
    path_hints,
    prompt_arguments,
    tool_safety,
)
from mcptape.live.client import schema_violation

CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("no properties", {"type": "object", "properties": {}}, {}),
    ("optional only", {"type": "object", "properties": {"q": {"type": "string"}}}, {}),
    ("examples first", {"type": "object", "properties": {"q": {"type": "string", "examples": ["cats"], "default": "d"}},
                        "required": ["q"]}, {"q": "cats"}),
    ("default", {"type": "object", "properties": {"n": {"type": "integer", "default": 7}}, "required": ["n"]}, {"n": 7}),
    ("enum", {"type": "object", "properties": {"u": {"enum": ["c", "f"]}}, "required": ["u"]}, {"u": "c"}),
    ("const", {"type": "object", "properties": {"k": {"const": "v1"}}, "required": ["k"]}, {"k": "v1"}),
    ("bounds", {"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 9},
                                                 "x": {"type": "number", "exclusiveMaximum": 1}},
                "required": ["n", "x"]}, {"n": 5, "x": 0.5}),
    ("multipleOf", {"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 4}}, "required": ["n"]},
     {"n": 4}),
    ("string lengths and formats", {"type": "object", "properties": {
        "code": {"type": "string", "minLength": 10},
        "at": {"type": "string", "format": "date-time"},
        "who": {"type": "string", "format": "email"},
        "timezone": {"type": "string"}}, "required": ["code", "at", "who", "timezone"]},
     {"code": "examplexxx", "at": "2025-01-01T00:00:00Z", "who": "user@example.com", "timezone": "UTC"}),
    ("nested object and array", {"type": "object", "properties": {
        "filter": {"type": "object", "properties": {"tag": {"type": "string"}, "n": {"type": "integer"}},
                   "required": ["tag"]},
        "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
        "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["filter", "ids", "tags"]},
     {"filter": {"tag": "example"}, "ids": [1, 1], "tags": []}),
    ("$ref and nullable", {"type": "object", "$defs": {"Id": {"type": ["string", "null"], "minLength": 2}},
                           "properties": {"id": {"$ref": "#/$defs/Id"}, "mode": {"anyOf": [{"type": "null"},
                                                                                             {"type": "boolean"}]}},
                           "required": ["id", "mode"]}, {"id": "example", "mode": False}),
    ("a wait is short", {"type": "object", "properties": {"duration": {"type": "number", "default": 10},
                                                          "steps": {"type": "number", "default": 5}}},
     {"duration": 1}),
]


@pytest.mark.parametrize(("schema", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_arguments_are_the_smallest_valid_ones_the_schema_suggests(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    arguments = example_arguments(schema)
    assert arguments == expected
    assert schema_violation(arguments, schema) is None


def test_a_schema_no_minimal_value_satisfies_is_reported_not_hidden() -> None:
    pattern = {"type": "object", "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}},
               "required": ["sku"]}
    arguments = example_arguments(pattern)
    assert arguments == {"sku": "example"}
    assert "does not match" in (schema_violation(arguments, pattern) or "")
    unknown = {"type": "object", "properties": {"blob": {}}, "required": ["blob"]}
    assert example_arguments(unknown) is None  # no type, no example: nothing to guess from


def test_a_recursive_schema_ends() -> None:
    tree = {"type": "object", "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}},
                                                 "required": ["child"]}},
            "properties": {"root": {"$ref": "#/$defs/Node"}}, "required": ["root"]}
    assert example_arguments(tree) is None


def test_path_hints_come_from_the_directory_the_server_was_started_on(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "server.py").write_text("", encoding="utf-8")
    hints = path_hints(["python", "server.py", "--repository", "repo"], tmp_path)
    schema = {"type": "object", "properties": {"repo_path": {"type": "string"}, "query": {"type": "string"}},
              "required": ["repo_path", "query"]}
    assert example_arguments(schema, hints) == {"repo_path": "repo", "query": "example"}
    assert example_arguments(schema, path_hints(["python", "server.py"], tmp_path)) == \
        {"repo_path": ".", "query": "example"}


def test_prompt_arguments_fill_only_the_required_ones() -> None:
    prompt = {"name": "p", "arguments": [{"name": "topic", "required": True}, {"name": "tone"},
                                         {"name": "timezone", "required": True}]}
    assert prompt_arguments(prompt) == {"topic": "example", "timezone": "UTC"}


@pytest.mark.parametrize(
    ("tool", "safe", "reason"),
    [
        ({"name": "get_weather", "annotations": {"readOnlyHint": True}}, True, ""),
        ({"name": "getWeather", "annotations": {"readOnlyHint": True, "destructiveHint": False}}, True, ""),
        ({"name": "get_weather"}, False, "not annotated readOnlyHint"),
        ({"name": "get_weather", "annotations": {"readOnlyHint": False}}, False, "not annotated readOnlyHint"),
        ({"name": "wipe", "annotations": {"destructiveHint": True}}, False, "annotated destructiveHint"),
        ({"name": "deleteNote", "annotations": {"readOnlyHint": True}}, False, "(delete)"),
        ({"name": "git-commit", "annotations": {"readOnlyHint": True}}, False, "(commit)"),
        ({"name": "create_or_update", "annotations": {"readOnlyHint": True}}, False, "(create, update)"),
        # A word inside another is not that word: "settings" holds "set", "preview" holds... "review".
        ({"name": "get_settings_preview", "annotations": {"readOnlyHint": True}}, True, ""),
        # "add" is arithmetic as often as a change: the annotations decide (git_add is not read-only).
        ({"name": "add", "annotations": {"readOnlyHint": True}}, True, ""),
        ({"name": "git_add", "annotations": {"readOnlyHint": False}}, False, "not annotated readOnlyHint"),
    ],
)
def test_only_read_only_tools_not_named_like_a_change_run_first(tool: dict[str, Any], safe: bool, reason: str) -> None:
    got = tool_safety(tool)
    assert got.safe is safe
    assert reason in got.reason


@pytest.mark.parametrize(
    ("tool", "kind"),
    [
        ({"name": "get_status"}, "query"),
        ({"name": "listItems"}, "query"),
        ({"name": "search_docs", "inputSchema": {"properties": {"query": {}}}}, "query"),
        # a query name with an argument named like a change is not probed
        ({"name": "get_or_make", "inputSchema": {"properties": {"overwrite": {}}}}, "write"),
        ({"name": "get_status", "annotations": {"readOnlyHint": False}}, "write"),  # said so: not probed
        ({"name": "save_item"}, "write"),
        ({"name": "frobnicate"}, "write"),  # not named like a query: may write
        ({"name": "fetch", "annotations": {"readOnlyHint": True, "openWorldHint": True}}, "network"),
        ({"name": "get_status", "annotations": {"readOnlyHint": True}}, "read-only"),
    ],
)
def test_unannotated_tools_named_like_a_query_are_offered_as_probes_and_open_world_ones_are_not(
        tool: dict[str, Any], kind: str) -> None:
    got = tool_safety(tool)
    assert got.kind == kind
    assert got.probe is (kind == "query") and got.safe is (kind == "read-only")


def test_a_property_description_s_example_is_used_before_a_guess_from_its_name() -> None:
    schema = {"type": "object", "required": ["timezone", "query"], "properties": {
        "timezone": {"type": "string", "description": "IANA name, e.g. 'America/New_York'"},
        "query": {"type": "string", "description": "What to find (for example: install)."}}}
    assert example_arguments(schema) == {"timezone": "America/New_York", "query": "install"}
    assert described_example("no example given here") is None
    calculator = {"type": "object", "required": ["expression"], "properties": {"expression": {"type": "string"}}}
    assert example_arguments(calculator) == {"expression": "1 + 1"}  # not "example", which no calculator takes


def test_a_tool_that_reads_files_gets_a_file_of_the_type_it_names(tmp_path: Path) -> None:
    from mcptape.init.scaffold import example_file, file_hints, file_types

    (tmp_path / "README.md").write_text("hi\n", encoding="utf-8")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "book.xlsx").write_bytes(b"PK")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "old.xlsx").write_bytes(b"PK")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "x.pdf").write_bytes(b"%PDF")
    sheet = {"name": "read_data_from_excel", "description": "Read data from an Excel worksheet.",
             "inputSchema": {"type": "object", "properties": {"filepath": {"type": "string"}}, "required": ["filepath"]}}
    assert file_types(sheet)[:1] == (".xlsx",)
    assert example_file(tmp_path, file_types(sheet)) == Path("data/book.xlsx")
    assert example_arguments(sheet["inputSchema"], file_hints(sheet, tmp_path, None)) == {"filepath": "data/book.xlsx"}
    # Under the directory the server's command names, the path is given as the command gives it.
    assert file_hints(sheet, tmp_path, "repo")[1] == ("path", "repo/data/book.xlsx")
    # No file of that type (a PDF reader here: node_modules is not data): no hint, the name's guess stays.
    pdf = {"name": "read_pdf", "description": "Extract the text of a PDF."}
    assert file_types(pdf) == (".pdf",) and file_hints(pdf, tmp_path, None) == ()
    # A converter that takes file: URIs gets one, relative (the config is committed); a tool that names
    # no file at all gets nothing.
    convert = {"name": "convert", "description": "Convert a resource described by an http:, https:, file: or data: URI",
               "inputSchema": {"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]}}
    assert example_arguments(convert["inputSchema"], file_hints(convert, tmp_path, None)) == {"uri": "file:README.md"}
    assert file_hints({"name": "get_status", "description": "The status."}, tmp_path, None) == ()


def test_a_nested_source_that_requires_nothing_by_schema_gets_the_file_a_hint_names(tmp_path: Path) -> None:
    # @sylphlab/pdf-reader-mcp: `sources: [{path} | {url}]`, the either-or checked in code, not in the schema.
    from mcptape.init.scaffold import file_hints

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "report.pdf").write_bytes(b"%PDF-1.4")
    schema = {"type": "object", "required": ["sources"], "properties": {"sources": {
        "type": "array", "minItems": 1, "items": {"type": "object", "additionalProperties": False, "properties": {
            "path": {"type": "string", "minLength": 1}, "url": {"type": "string", "format": "uri"}}}}}}
    tool = {"name": "read_pdf", "description": "Reads content from one or more PDFs.", "inputSchema": schema}
    assert example_arguments(schema, file_hints(tool, tmp_path, None)) == {"sources": [{"path": "docs/report.pdf"}]}
    assert example_arguments(schema) == {"sources": [{}]}  # no hint: nothing guessed for it
