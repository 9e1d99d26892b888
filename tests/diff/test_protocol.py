"""diff/protocol.py: the 2026-07-28 envelope, the handshake as the session, input-required rounds (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from mcptape.diff.compare import diff_tapes
from mcptape.diff.protocol import (
    collapse_input_rounds,
    handshake_summary,
    prepare,
    strip_request_params,
    strip_result,
)
from mcptape.mcp import era
from mcptape.tape.events import C2S, S2C, EventBuilder
from mcptape.tape.format import Tape, make_footer, make_header

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "mcptape", "version": "0"},
}
INFO = {"name": "calc", "version": "1.0.0"}
ENVELOPE = {"resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": INFO}}
TOOLS = [{"name": "add", "inputSchema": {"type": "object"}}]


def tape(messages: list[tuple[str, dict[str, Any]]], protocol: str | None = None) -> Tape:
    builder = EventBuilder()
    events = [builder.message(direction, msg) for direction, msg in messages]
    header = make_header("t", protocol=protocol)
    return Tape(header=header, events=events, footer=make_footer(len(events)),
                event_lines=[i + 2 for i in range(len(events))])


def req(i: int, method: str, params: dict[str, Any] | None = None, modern: bool = False) -> tuple[str, dict[str, Any]]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": i, "method": method}
    if modern:
        params = {"_meta": META, **(params or {})}
    if params is not None:
        msg["params"] = params
    return C2S, msg


def res(i: int, result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return S2C, {"jsonrpc": "2.0", "id": i, "result": result}


def legacy(add: float = 5.0) -> Tape:
    return tape([
        req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x"}}),
        res(1, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": False}}, "serverInfo": INFO}),
        (C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        req(2, "tools/list"),
        res(2, {"tools": TOOLS}),
        req(3, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
        res(3, {"content": [{"type": "text", "text": str(add)}], "structuredContent": {"result": add}}),
    ])


def modern(add: float = 5.0, info: dict[str, Any] = INFO) -> Tape:
    return tape([
        req(0, "server/discover", modern=True),
        res(0, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": True}},
                "cacheScope": "private", "ttlMs": 0, "resultType": "complete",
                "_meta": {"io.modelcontextprotocol/serverInfo": info}}),
        req(1, "tools/list", modern=True),
        res(1, {"tools": TOOLS, "cacheScope": "private", "ttlMs": 0, **ENVELOPE}),
        req(2, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, modern=True),
        res(2, {"content": [{"type": "text", "text": str(add)}], "structuredContent": {"result": add}, **ENVELOPE}),
    ])


def findings(result: Any) -> list[tuple[str, str, str]]:
    return [(f.category, f.severity, f.path) for d in result.drifts for f in d.findings]


def test_era_and_tape_protocol_of_a_2026_tape_without_header_field() -> None:
    assert (era("2025-11-25"), era("2026-07-28"), era(None)) == ("legacy", "modern", None)
    assert modern().protocol == "2026-07-28"  # read off the answered discover's _meta
    assert legacy().protocol == "2025-11-25"


def test_envelope_fields_are_stripped_and_other_meta_kept() -> None:
    result = {"content": [], "resultType": "complete", "cacheScope": "public", "ttlMs": 5,
              "_meta": {"io.modelcontextprotocol/serverInfo": INFO, "com.example/trace": 1}}
    assert strip_result(result, cross=True) == {"content": [], "_meta": {"com.example/trace": 1}}
    # Within 2026-07-28, cacheScope is behaviour (who may see a cached answer): kept, compared.
    assert strip_result(result) == {"content": [], "cacheScope": "public", "_meta": {"com.example/trace": 1}}
    assert strip_result({"resultType": "input_required", "requestState": "s"}) == {
        "resultType": "input_required", "requestState": "s"}  # not the envelope: a different answer
    assert strip_result({"supportedVersions": ["2026-07-28"], **ENVELOPE}, "server/discover", cross=True) == {
        "supportedVersions": ["2026-07-28"], "serverInfo": INFO}
    assert strip_request_params({"_meta": META}) is None  # as a legacy request without params
    assert strip_request_params({"_meta": {**META, "progressToken": 7}, "name": "add"}) == {
        "_meta": {"progressToken": 7}, "name": "add"}
    legacy_result: dict[str, object] = {"content": []}
    assert strip_result(legacy_result) is legacy_result  # nothing to strip: no copy


def test_same_server_across_versions_is_one_protocol_finding_and_no_behaviour_drift() -> None:
    result = diff_tapes(legacy(), modern())
    assert result.verdict == "structural"
    assert findings(result) == [("protocol", "structural", "protocol")]
    finding = result.drifts[0].findings[0]
    assert finding.before["handshake"] == "initialize" and finding.after["handshake"] == "server/discover"
    assert "2025-11-25 (initialize) → 2026-07-28 (server/discover)" in result.drifts[0].one_line()


def test_across_versions_a_changed_result_is_still_found_and_named_beneath_the_protocol_finding() -> None:
    result = diff_tapes(legacy(), modern(add=6.0))
    assert findings(result)[0] == ("protocol", "structural", "protocol")
    behaviour = result.drifts[1]
    assert behaviour.call is not None
    assert (behaviour.call.method, behaviour.call.name) == ("tools/call", "add")
    assert {f.path for f in behaviour.findings} == {"result.content[0].text", "result.structuredContent.result"}
    assert behaviour.severity == "output"


def test_a_new_server_version_across_eras_is_reported_and_same_era_tapes_compare_as_before() -> None:
    result = diff_tapes(legacy(), modern(info={"name": "calc", "version": "2.0.0"}))
    assert findings(result) == [("protocol", "structural", "protocol"), ("session", "output", "serverInfo")]
    assert diff_tapes(modern(), modern()).verdict == "same"
    assert diff_tapes(legacy(), legacy()).verdict == "same"
    assert diff_tapes(legacy(), legacy(add=6.0)).verdict == "output"  # positive control within the era
    # 2026 vs 2026: a new serverInfo in the discover result is the handshake's session finding, as for initialize
    moved = diff_tapes(modern(), modern(info={"name": "calc", "version": "2.0.0"}))
    assert [(f.category, f.kind) for d in moved.drifts for f in d.findings] == [("session", "server_info")]


def test_envelope_changes_alone_are_not_drift_between_two_2026_tapes() -> None:
    def envelope_changed(tape: Tape, scope: str | None = None) -> Tape:
        for ev in tape.events:
            result = (ev.get("msg") or {}).get("result")
            if isinstance(result, dict) and "ttlMs" in result:
                result["ttlMs"] = 60000
                if scope is not None:
                    result["cacheScope"] = scope
        return tape

    assert diff_tapes(modern(), envelope_changed(modern())).verdict == "same"
    # Positive control: the same envelope change with one changed result is that result's drift.
    changed = diff_tapes(modern(), envelope_changed(modern(add=6.0)))
    assert changed.verdict == "output"
    assert {f.path for d in changed.drifts for f in d.findings} == {"result.content[0].text", "result.structuredContent.result"}
    # Issue 29: cacheScope is who may see a cached answer — behaviour, not envelope.
    private = envelope_changed(modern(), "private")
    assert diff_tapes(private, envelope_changed(modern(), "private")).verdict == "same"
    scoped = diff_tapes(private, envelope_changed(modern(), "public"))
    # ... and a flip that widens who may see an answer is a security finding (issue 31): structural.
    assert scoped.verdict == "structural"
    assert ("security", "widened") in {(f.category, f.kind) for d in scoped.drifts for f in d.findings}
    assert {(f.path, f.message) for d in scoped.drifts for f in d.findings} >= {("result.cacheScope", '"private" → "public"')}
    # Across eras it is still envelope: a legacy answer has no cache scope to compare with.
    assert "result.cacheScope" not in {f.path for d in diff_tapes(legacy(), private).drifts for f in d.findings}


def test_prepare_returns_untouched_legacy_tapes_as_they_are() -> None:
    a, b = legacy(), legacy()
    assert prepare(a, b) == (a, b)


def test_handshake_summary_skips_a_refused_probe() -> None:
    t = tape([req(0, "server/discover", modern=True),
              (S2C, {"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "Method not found"}}),
              req(1, "initialize", {"protocolVersion": "2025-06-18"}),
              res(1, {"protocolVersion": "2025-06-18", "serverInfo": INFO})])
    assert handshake_summary(t.events) == {"method": "initialize", "serverInfo": INFO}


def greet_rounds() -> list[tuple[str, dict[str, Any]]]:
    question = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object"}}}
    answer = {"action": "accept", "content": {"name": "Ada"}}
    return [
        req(3, "tools/call", {"name": "greet", "arguments": {}}, modern=True),
        res(3, {"inputRequests": {"k": question}, "requestState": "<REQUEST_STATE>", "resultType": "input_required"}),
        req(4, "tools/call", {"name": "greet", "arguments": {}, "inputResponses": {"k": answer},
                              "requestState": "<REQUEST_STATE>"}, modern=True),
        res(4, {"content": [{"type": "text", "text": "Hello, Ada!"}], **ENVELOPE}),
    ]


def test_input_required_rounds_become_the_legacy_server_request_and_one_call() -> None:
    t = tape(greet_rounds())
    events, lines = collapse_input_rounds(t.events, t.event_lines)
    assert [(e["kind"], e["dir"], e.get("method")) for e in events] == [
        ("request", "s2c", "elicitation/create"), ("response", "c2s", "elicitation/create"),
        ("request", "c2s", "tools/call"), ("response", "s2c", "tools/call")]
    assert events[1]["msg"]["result"] == {"action": "accept", "content": {"name": "Ada"}}
    assert "inputResponses" not in events[2]["msg"]["params"]
    assert lines == [3, 4, 4, 5]  # the synthetic events point at the tape lines they come from


def test_input_required_tool_across_versions_pairs_with_the_legacy_elicitation() -> None:
    question = {"message": "Name?", "requestedSchema": {"type": "object"}}
    old = tape([
        req(1, "initialize", {"protocolVersion": "2025-11-25"}),
        res(1, {"protocolVersion": "2025-11-25", "serverInfo": INFO}),
        req(3, "tools/call", {"name": "greet", "arguments": {}}),
        (S2C, {"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": question}),
        (C2S, {"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {"name": "Ada"}}}),
        res(3, {"content": [{"type": "text", "text": "Hello, Ada!"}]}),
    ])
    new = tape([req(0, "server/discover", modern=True),
                res(0, {"supportedVersions": ["2026-07-28"], "_meta": {"io.modelcontextprotocol/serverInfo": INFO}}),
                *greet_rounds()])
    assert findings(diff_tapes(old, new)) == [("protocol", "structural", "protocol")]


def test_across_eras_a_feature_gained_or_lost_is_named_under_the_protocol_finding() -> None:
    # Issue 18: mcp-server-time 0.6.2 declared only tools; today's release on 2026-07-28 also
    # prompts and resources. What is inside a feature differs by era by design (listChanged).
    richer = modern()
    discover = richer.events[1]["msg"]["result"]
    discover["capabilities"] = {"tools": {}, "prompts": {}, "resources": {}}
    result = diff_tapes(legacy(), richer)
    got = [(f.category, f.severity, f.kind, f.message) for d in result.drifts for f in d.findings if f.category == "session"]
    assert got == [("session", "output", "capability_added", "capability added `prompts` (with the protocol change)"),
                   ("session", "output", "capability_added", "capability added `resources` (with the protocol change)")]
    assert result.drifts[0].findings[0].category == "protocol"
    fewer = modern()
    fewer.events[1]["msg"]["result"]["capabilities"] = {}
    lost = [(f.severity, f.kind) for d in diff_tapes(legacy(), fewer).drifts for f in d.findings if f.category == "session"]
    assert lost == [("structural", "capability_removed")]


# --- issue 29 item 4: across revisions, the same behaviour reads the same ----------------------


def reads(protocol: str, code: int, uris: tuple[str, ...] = ("file:///gone", "file:///lost")) -> Tape:
    messages = [req(1, "initialize", {"protocolVersion": protocol, "capabilities": {}, "clientInfo": {"name": "x"}}),
                res(1, {"protocolVersion": protocol, "capabilities": {"resources": {}}, "serverInfo": INFO}),
                (C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"})]
    for n, uri in enumerate(uris, start=2):
        messages += [req(n, "resources/read", {"uri": uri}),
                     (S2C, {"jsonrpc": "2.0", "id": n, "error": {"code": code, "message": "Resource not found"}})]
    return tape(messages, protocol)


def test_resource_not_found_moving_to_32602_with_the_revision_is_said_once() -> None:
    result = diff_tapes(reads("2025-06-18", -32002), reads("2025-11-25", -32602))
    assert result.verdict == "same", [d.one_line() for d in result.drifts]
    moved = [f for d in result.drifts for f in d.findings if f.category == "error"]
    assert len(moved) == 1 and moved[0].severity == "info" and "the protocol's change" in moved[0].message, moved
    # Control: the same code change under one revision is the server's, structural, on each call.
    same_revision = diff_tapes(reads("2025-11-25", -32002), reads("2025-11-25", -32602))
    assert same_revision.verdict == "structural"
    assert [f.kind for d in same_revision.drifts for f in d.findings if f.category == "error"] == ["code", "code"]
    # And another code across the revision change is still the server's.
    assert diff_tapes(reads("2025-06-18", -32002), reads("2025-11-25", -32603)).verdict == "structural"


def with_tools(tools: list[dict[str, Any]]) -> Tape:
    return tape([req(1, "tools/list"), res(1, {"tools": tools})], "2025-11-25")


UI = {"ui": {"resourceUri": "ui://calc/app.html"}}


@pytest.mark.parametrize(("before", "after", "expected"), [
    ({}, UI, ("schema", "compatible", "output")),
    (UI, {}, ("schema", "breaking", "structural")),
    (UI, {"ui": {"resourceUri": "ui://calc/other.html"}}, ("schema", "compatible", "output")),
    ({**UI, "com.example/note": 1}, {**UI, "com.example/note": 2}, ("schema", "cosmetic", "output")),
])
def test_the_ui_of_mcp_apps_is_behaviour(before: dict[str, Any], after: dict[str, Any],
                                         expected: tuple[str, str, str]) -> None:
    old = with_tools([{**TOOLS[0], "_meta": before}])
    assert diff_tapes(old, with_tools([{**TOOLS[0], "_meta": before}])).verdict == "same"
    result = diff_tapes(old, with_tools([{**TOOLS[0], "_meta": after}]))
    assert [(f.category, f.kind, f.severity) for d in result.drifts for f in d.findings] == [expected]


def logging_modern() -> Tape:
    t = modern()
    log = EventBuilder().message(S2C, {"jsonrpc": "2.0", "method": "notifications/message",
                                       "params": {"level": "info", "data": "hi"}})
    events = [*t.events, log]
    return Tape(t.header, events, make_footer(len(events)), event_lines=[i + 2 for i in range(len(events))])


def test_deprecations_a_server_still_relies_on_are_info() -> None:
    result = diff_tapes(logging_modern(), logging_modern())
    assert result.verdict == "same"
    deprecated = [f for d in result.drifts for f in d.findings if f.kind == "deprecated"]
    assert [(f.path, f.severity) for f in deprecated] == [("deprecated.logging", "info")], deprecated
    assert "SEP-2577" in deprecated[0].message
    # Control: a 2026-07-28 server without logging, and a legacy server with it, rely on nothing deprecated.
    assert not [f for d in diff_tapes(modern(), modern()).drifts for f in d.findings]
    sse = Tape({**legacy().header, "transport": "sse"}, legacy().events, legacy().footer, event_lines=legacy().event_lines)
    assert [f.path for d in diff_tapes(legacy(), sse).drifts for f in d.findings if f.kind == "deprecated"] == ["deprecated.sse"]
