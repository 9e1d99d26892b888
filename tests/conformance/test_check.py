"""check_tape on hand-built tapes: each rule reported once, at its tape line and path; clean tapes stay clean.

The tapes are written to disk and read back, so the line numbers in finding paths are the ones a
reviewer sees in the file (header = line 1, first event = line 2).
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcptape.conformance.check import check_tape, check_tape_placed
from mcptape.tape.events import C2S, S2C, EventBuilder
from mcptape.tape.format import Tape, make_header, tape_bytes
from mcptape.tape.reader import read_tape
from mcptape.verdict.model import Finding

ROOT = Path(__file__).resolve().parents[2]
META_2026 = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
WEATHER_OUT = {
    "type": "object",
    "properties": {"temp_c": {"type": "number"}, "unit": {"enum": ["C", "F"]}},
    "required": ["temp_c", "unit"],
}
Msg = tuple[str, dict[str, Any]]


def req(msg_id: int, method: str, params: dict[str, Any] | None = None, direction: str = C2S) -> Msg:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        msg["params"] = params
    return direction, msg


def note(method: str, params: dict[str, Any] | None = None, direction: str = S2C) -> Msg:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return direction, msg


def res(msg_id: int, result: Any, direction: str = S2C) -> Msg:
    return direction, {"jsonrpc": "2.0", "id": msg_id, "result": result}


def err(msg_id: Any, error: dict[str, Any], direction: str = S2C) -> Msg:
    return direction, {"jsonrpc": "2.0", "id": msg_id, "error": error}


def legacy(version: str = "2025-06-18") -> list[Msg]:
    return [
        req(0, "initialize", {"protocolVersion": version, "capabilities": {},
                              "clientInfo": {"name": "t", "version": "0"}}),
        res(0, {"protocolVersion": version, "capabilities": {"tools": {}},
                "serverInfo": {"name": "s", "version": "1"}}),
        note("notifications/initialized", direction=C2S),
    ]


def weather_tool(**extra: Any) -> dict[str, Any]:
    return {"name": "weather", "inputSchema": {"type": "object", "properties": {}}, **extra}


def tape_of(tmp_path: Path, messages: list[Msg], **header: Any) -> Tape:
    builder = EventBuilder()
    events = [builder.message(direction, copy.deepcopy(msg)) for direction, msg in messages]
    path = tmp_path / "t.tape.jsonl"
    path.write_bytes(tape_bytes(make_header("t", **header), events))
    return read_tape(path)


def found(tape: Tape, **kw: Any) -> list[tuple[str, str]]:
    return [(f.path, f.message) for f in check_tape(tape, **kw)]


def only(tape: Tape) -> Finding:
    findings = check_tape(tape)
    assert len(findings) == 1, [(f.path, f.message) for f in findings]
    return findings[0]


def clean_session() -> list[Msg]:
    return [
        *legacy(),
        req(1, "tools/list"),
        res(1, {"tools": [weather_tool(outputSchema=WEATHER_OUT),
                          {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"},
                           "annotations": {"readOnlyHint": True}}]}),
        req(2, "tools/call", {"name": "weather", "arguments": {"city": "Oslo"}}),
        note("notifications/message", {"level": "info", "data": {"any": "thing"}}),
        req(0, "roots/list", direction=S2C),
        res(0, {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}, direction=C2S),
        res(2, {"content": [{"type": "text", "text": "21.5 C"},
                            {"type": "image", "data": "AAAA", "mimeType": "image/png"}],
                "structuredContent": {"temp_c": 21.5, "unit": "C"}, "isError": False}),
        req(3, "tools/call", {"name": "weather", "arguments": {"city": "?"}}),
        res(3, {"content": [{"type": "text", "text": "no such city"}], "isError": True}),
        req(4, "resources/read", {"uri": "x://nope"}),
        err(4, {"code": -32002, "message": "Resource not found", "data": {"uri": "x://nope"}}),
        req(5, "ping"),
        res(5, {}),
    ]


def test_a_clean_legacy_session_has_no_findings(tmp_path: Path) -> None:
    assert check_tape(tape_of(tmp_path, clean_session())) == []
    # Positive control: the same session with one structured value of the wrong type.
    broken = clean_session()
    broken[9] = res(2, {**broken[9][1]["result"], "structuredContent": {"temp_c": "warm", "unit": "C"}})
    assert found(tape_of(tmp_path, broken)) == [
        ("11:result.structuredContent.temp_c", "'warm' is not of type 'number' (outputSchema of tool `weather`, type)")]


def test_tool_without_input_schema_is_reported_at_its_line_and_path(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/list"),
                              res(1, {"tools": [weather_tool(), {"name": "bare"}]})])
    finding = only(tape)
    # events: initialize (2), its answer (3), initialized (4), tools/list (5), its answer (6)
    assert finding.path == "6:result.tools[1].inputSchema"
    assert finding.message == "field required (MCP 2025-06-18, tools/list result)"
    assert (finding.category, finding.severity, finding.kind) == ("conformance", "structural", "schema")
    assert finding.golden_line is None and finding.fresh_line is None


def test_content_that_is_not_a_list(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/call", {"name": "x"}), res(1, {"content": "hello"})])
    finding = only(tape)
    assert finding.path == "6:result.content"
    assert finding.message.startswith('should be a valid list (got "hello")')


def test_a_bad_content_block_is_one_finding_for_the_type_it_claims(tmp_path: Path) -> None:
    """Pydantic fails every arm of the content union; only the arm `type: text` meant is reported."""
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/call", {"name": "x"}),
                              res(1, {"content": [{"type": "text", "text": "ok"}, {"type": "text", "text": 5}]})])
    finding = only(tape)
    assert finding.path == "6:result.content[1].text"
    assert finding.message.startswith("should be a valid string (got 5)")


def test_an_unknown_content_type_matches_none_of_the_blocks(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/call", {"name": "x"}),
                              res(1, {"content": [{"type": "video", "url": "x"}]})])
    finding = only(tape)
    assert finding.path == "6:result.content[0]"
    assert "matches none of TextContent | ImageContent" in finding.message


def test_error_response_without_code(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/call", {"name": "x"}), err(1, {"message": "boom"})])
    finding = only(tape)
    assert finding.path == "6:error.code"
    assert finding.message == "field required (MCP 2025-06-18, JSON-RPC error response)"


def test_error_with_a_string_code(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/call", {"name": "x"}),
                              err(1, {"code": "-32603", "message": "boom"})])
    assert only(tape).path == "6:error.code"


def test_client_request_missing_a_required_param(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/call", {"arguments": {}}), res(1, {"content": []})])
    finding = only(tape)
    assert finding.path == "5:params.name"
    assert finding.message == "field required (MCP 2025-06-18, tools/call request)"


def test_server_notification_with_an_invalid_log_level(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), note("notifications/message", {"level": "loud", "data": "x"})])
    finding = only(tape)
    assert finding.path == "5:params.level"
    assert '(got "loud")' in finding.message and "notifications/message notification" in finding.message


def test_client_answer_to_a_server_request_is_checked_by_its_method(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), req(7, "roots/list", direction=S2C),
                              res(7, {"roots": [{"name": "no uri"}]}, direction=C2S)])
    finding = only(tape)
    assert finding.path == "6:result.roots[0].uri"
    assert "roots/list result" in finding.message


def test_json_rpc_envelope(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), req(1, "ping"),
                              (S2C, {"jsonrpc": "1.0", "id": 1, "result": {}})])
    finding = only(tape)
    assert finding.path == "6:jsonrpc"
    assert finding.message.startswith('should be "2.0" (got "1.0"')


def test_structured_content_violating_the_output_schema(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [
        *legacy(), req(1, "tools/list"), res(1, {"tools": [weather_tool(outputSchema=WEATHER_OUT)]}),
        req(2, "tools/call", {"name": "weather", "arguments": {}}),
        res(2, {"content": [], "structuredContent": {"temp_c": "warm", "unit": "K"}}),
    ])
    findings = check_tape(tape)
    assert [(f.path, f.kind) for f in findings] == [
        ("8:result.structuredContent.temp_c", "output_schema"),
        ("8:result.structuredContent.unit", "output_schema"),
    ]
    assert findings[0].message == "'warm' is not of type 'number' (outputSchema of tool `weather`, type)"
    assert all(f.severity == "structural" for f in findings)


def test_output_schema_without_structured_content(tmp_path: Path) -> None:
    messages = [*legacy(), req(1, "tools/list"), res(1, {"tools": [weather_tool(outputSchema=WEATHER_OUT)]}),
                req(2, "tools/call", {"name": "weather", "arguments": {}}),
                res(2, {"content": [{"type": "text", "text": "21"}]})]
    finding = only(tape_of(tmp_path, messages))
    assert finding.path == "8:result.structuredContent"
    assert finding.message.startswith("missing: tool `weather` declares an outputSchema")
    # An error result owes no structuredContent.
    messages[-1] = res(2, {"content": [{"type": "text", "text": "no"}], "isError": True})
    assert check_tape(tape_of(tmp_path, messages)) == []


def test_output_schema_is_read_with_the_draft_it_declares(tmp_path: Path) -> None:
    """Array-form `items` is a tuple in draft-07 but not a valid 2020-12 schema."""
    schema = {"type": "object", "properties": {"pair": {"type": "array", "items": [{"type": "string"}]}}}
    call = [req(2, "tools/call", {"name": "weather", "arguments": {}}),
            res(2, {"content": [], "structuredContent": {"pair": [1]}})]
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", **schema}
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/list"),
                              res(1, {"tools": [weather_tool(outputSchema=draft7)]}), *call])
    assert found(tape) == [("8:result.structuredContent.pair[0]",
                            "1 is not of type 'string' (outputSchema of tool `weather`, type)")]
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/list"),
                              res(1, {"tools": [weather_tool(outputSchema=schema)]}), *call])
    finding = only(tape)
    assert finding.path == "6:result.tools[0].outputSchema.properties.pair.items"
    assert finding.message.startswith("not a valid JSON Schema (Draft202012)")


def test_placed_findings_carry_the_index_of_their_event(tmp_path: Path) -> None:
    """What diff's engine needs to put a conformance finding in tape order among the drifts."""
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/call", {"name": "x"}), err(1, {"message": "boom"})],
                   protocol="2099-01-01")
    placed = check_tape_placed(tape)
    assert [(index, f.kind) for index, f in placed] == [(0, "version"), (4, "schema")]
    assert tape.line_of(4) == 6 and placed[1][1].path == "6:error.code"


def test_severity_is_the_configured_one(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/call", {"name": "x"}), err(1, {"message": "boom"})])
    assert [f.severity for f in check_tape(tape, severity="output")] == ["output"]


def test_findings_per_message_are_capped(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), req(1, "tools/list"),
                              res(1, {"tools": [{"name": f"t{i}"} for i in range(9)]})])
    findings = check_tape(tape)
    assert [f.path for f in findings] == [f"6:result.tools[{i}].inputSchema" for i in range(5)]
    assert findings[-1].message.endswith("(and 4 more problems in this message)")


def test_methods_no_revision_defines_are_not_flagged(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [*legacy(), req(1, "acme/custom", {"anything": [1]}), res(1, {"free": "form"}),
                              note("notifications/tasks/status", {"whatever": True})])
    assert check_tape(tape) == []
    # Positive control: the same free-form params under a method the revision defines are checked.
    known = tape_of(tmp_path, [*legacy(), note("notifications/message", {"whatever": True})])
    assert {path for path, _ in found(known)} == {"5:params.level", "5:params.data"}


def test_a_server_request_from_a_later_revision_is_flagged(tmp_path: Path) -> None:
    elicit = {"mode": "form", "message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}
    messages = [*legacy("2024-11-05"), req(0, "elicitation/create", elicit, direction=S2C)]
    finding = only(tape_of(tmp_path, messages))
    assert finding.path == "5:method"
    assert finding.message == '"elicitation/create" is not a server request in MCP 2024-11-05'
    assert check_tape(tape_of(tmp_path, [*legacy("2025-06-18"), messages[-1]])) == []


def test_header_protocol_wins_and_an_unknown_one_is_said_once(tmp_path: Path) -> None:
    messages = [*legacy(), req(1, "tools/list"), res(1, {"tools": [{"name": "bare"}]})]
    findings = check_tape(tape_of(tmp_path, messages, protocol="2099-01-01"))
    assert [(f.severity, f.kind) for f in findings] == [("info", "version"), ("structural", "schema")]
    assert "'2099-01-01' is not one mcp-types knows" in findings[0].message
    assert "checked against MCP 2025-11-25" in findings[0].message
    assert findings[1].message == "field required (MCP 2025-11-25, tools/list result)"


def test_a_tape_without_any_version_is_checked_as_the_newest_legacy_revision(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, [req(1, "tools/list"), res(1, {"tools": []})])
    assert found(tape) == [("", "no negotiated protocol version in the tape; messages checked against MCP 2025-11-25")]


def modern_session() -> list[Msg]:
    envelope = {"resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": ""}}}
    return [
        req(0, "server/discover", {"_meta": META_2026}),
        res(0, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": True}},
                "cacheScope": "private", "ttlMs": 0, **envelope}),
        req(1, "tools/list", {"_meta": META_2026}),
        res(1, {"tools": [weather_tool(outputSchema=WEATHER_OUT)], "cacheScope": "private", "ttlMs": 0, **envelope}),
        req(2, "tools/call", {"name": "weather", "arguments": {}, "_meta": META_2026}),
        res(2, {"content": [{"type": "text", "text": "21"}], "structuredContent": {"temp_c": 21, "unit": "C"},
                "isError": False, **envelope}),
        req(3, "ping", {"_meta": META_2026}),
        err(3, {"code": -32601, "message": "Method not found", "data": "ping"}),
    ]


def test_a_clean_2026_session_has_no_findings_and_its_version_comes_from_meta(tmp_path: Path) -> None:
    tape = tape_of(tmp_path, modern_session())
    assert tape.protocol == "2026-07-28"  # no header field, no initialize: read off the answered discover's _meta
    assert check_tape(tape) == []
    # Positive control: the same session with one request lacking its `_meta`.
    messages = modern_session()
    messages[4] = req(2, "tools/call", {"name": "weather", "arguments": {}})
    assert [path for path, _ in found(tape_of(tmp_path, messages))] == ["6:params._meta"]


def test_a_legacy_shaped_result_in_a_2026_session(tmp_path: Path) -> None:
    messages = modern_session()
    messages[5] = res(2, {"content": [{"type": "text", "text": "21"}], "structuredContent": {"temp_c": 21, "unit": "C"}})
    finding = only(tape_of(tmp_path, messages))
    assert finding.path == "7:result.resultType"
    assert finding.message == "field required (MCP 2026-07-28, tools/call result)"


def test_a_2026_request_without_its_meta(tmp_path: Path) -> None:
    messages = modern_session()
    messages[4] = req(2, "tools/call", {"name": "weather", "arguments": {}})
    finding = only(tape_of(tmp_path, messages, protocol="2026-07-28"))
    assert finding.path == "6:params._meta"


def test_a_refused_discover_probe_before_a_legacy_session_is_fine(tmp_path: Path) -> None:
    messages = [req(9, "server/discover", {"_meta": META_2026}),
                err(9, {"code": -32601, "message": "Method not found"}), *clean_session()]
    tape = tape_of(tmp_path, messages)
    assert tape.protocol == "2025-06-18"
    assert check_tape(tape) == []
    # ... but a discover answer is always held to the 2026-07-28 schema.
    messages[1] = res(9, {"supportedVersions": ["2026-07-28"]})
    assert {p for p, _ in found(tape_of(tmp_path, messages))} == {
        "3:result.capabilities", "3:result.cacheScope", "3:result.ttlMs", "3:result.resultType"}


def test_only_a_conformance_check_pays_for_the_schema_models() -> None:
    """play, --version and a plain diff must not pay for pydantic models or jsonschema: they never
    import this module, which imports them at module level (so ci's threads never race on them)."""
    heavy = ("print(sorted(m for m in ('pydantic', 'mcp_types', 'jsonschema', 'mcptape.conformance.check')"
             " if m in sys.modules))")
    light = f"import sys, mcptape.cli, mcptape.replay.stdio, mcptape.diff.compare, mcptape.commands.diff; {heavy}"
    out = subprocess.run([sys.executable, "-c", light], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
    # ci's session pipeline holds the gate from the start; the gate imports the check only on demand.
    gated = f"import sys, mcptape.conformance.gate; {heavy}"
    out = subprocess.run([sys.executable, "-c", gated], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
    checked = f"import sys, mcptape.conformance.gate as g; g.load(); {heavy}"
    out = subprocess.run([sys.executable, "-c", checked], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "['jsonschema', 'mcp_types', 'mcptape.conformance.check', 'pydantic']"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_every_legacy_revision_checks_the_same_shapes(tmp_path: Path, version: str) -> None:
    assert check_tape(tape_of(tmp_path, [*legacy(version), *clean_session()[3:]])) == []
    tape = tape_of(tmp_path, [*legacy(version), req(1, "tools/list"), res(1, {"tools": [{"name": "bare"}]})])
    assert only(tape).message == f"field required (MCP {version}, tools/list result)"


def test_a_structured_result_nested_past_max_depth_is_not_checked_against_its_output_schema(tmp_path: Path) -> None:
    """Its deep part is JSON text (jsonrpc.loads), not values: checking it would find a marker
    object where the schema says array. A recursive tree schema checks the shallow case."""
    tree = {"type": "object", "properties": {"t": {"$ref": "#/$defs/node"}}, "required": ["t"],
            "$defs": {"node": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}

    def session(depth: int, leaf: str = "") -> list[Msg]:
        return [*legacy(), req(1, "tools/list"), res(1, {"tools": [weather_tool(outputSchema=tree)]}),
                req(2, "tools/call", {"name": "weather", "arguments": {}})]

    def line(depth: int, leaf: str) -> bytes:
        nest = "[" * depth + leaf + "]" * depth
        return ('{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":{"t":' + nest + "}}}").encode()

    def tape(depth: int, leaf: str = "") -> Tape:
        builder = EventBuilder()
        events = [builder.message(d, copy.deepcopy(m)) for d, m in session(depth)]
        events.append(builder.line(S2C, line(depth, leaf)))
        path = tmp_path / f"deep{depth}{leaf}.tape.jsonl"
        path.write_bytes(tape_bytes(make_header("t"), events))
        return read_tape(path)

    assert check_tape(tape(500)) == []
    assert check_tape(tape(30)) == []  # conforms, checked all the way down
    broken = check_tape(tape(30, "1"))  # control: a number where the tree wants arrays is found
    assert len(broken) == 1 and broken[0].kind == "output_schema" and "is not of type 'array'" in broken[0].message


# --- the gate: which violations are known (conformance/gate.py) -------------------------------


def listing(tmp_path: Path, name: str, tools: list[dict[str, Any]]) -> Tape:
    """A session that lists `tools`, on its own path (two tapes of one test must not share a file)."""
    builder = EventBuilder()
    messages = [*legacy(), req(1, "tools/list"), res(1, {"tools": tools})]
    events = [builder.message(direction, copy.deepcopy(msg)) for direction, msg in messages]
    path = tmp_path / f"{name}.tape.jsonl"
    path.write_bytes(tape_bytes(make_header(name), events))
    return read_tape(path)


def judged(golden: Tape, fresh: Tape) -> list[tuple[str, str]]:
    """(severity, message) of every conformance finding of `fresh` judged against `golden`."""
    from mcptape.conformance.gate import conformance_drifts

    return [(f.severity, f.message) for _, drift in conformance_drifts(fresh, baseline=golden)
            for f in drift.findings]


def bad(name: str) -> dict[str, Any]:
    return {"name": name}  # no inputSchema: one violation of the MCP schema


def good(name: str) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}}


def test_a_known_violation_stays_known_when_the_server_reorders_its_tools(tmp_path: Path) -> None:
    golden = listing(tmp_path, "golden", [good("a"), bad("legacy_tool"), good("c")])
    reordered = listing(tmp_path, "reordered", [bad("legacy_tool"), good("c"), good("a")])
    assert [sev for sev, _ in judged(golden, reordered)] == ["info"]
    # The control: a tool that breaks the rule and was not there before is new, wherever it sits.
    added = listing(tmp_path, "added", [bad("new_tool"), good("c"), good("a")])
    assert [sev for sev, _ in judged(golden, added)] == ["structural"]


def test_a_bad_tool_added_does_not_relabel_the_known_ones_whatever_the_cap(tmp_path: Path) -> None:
    # Six tools already broke the rule (one more than a message shows one by one); a seventh joins.
    old = [bad(f"old{i}") for i in range(6)]
    golden = listing(tmp_path, "golden", old)
    assert all(sev == "info" for sev, _ in judged(golden, listing(tmp_path, "same", old)))
    verdict = judged(golden, listing(tmp_path, "fresh", [bad("new0"), *old]))
    assert [sev for sev, _ in verdict].count("structural") == 1, verdict  # only the new tool
    assert "structural" not in [sev for sev, message in verdict if "more problems" in message]
    assert verdict[0][0] == "structural" and verdict[-1][1].endswith("(and 2 more problems in this message)")
