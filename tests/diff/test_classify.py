"""What each classifier reports and how bad it is (mcptape/diff/classify.py), one row per rule.

Every row is a golden and a fresh hand-built tape that differ in one way, and the exact set of
(category, kind, severity) the diff must give, so a rule that is dropped, that emits another
kind, or whose severity is flipped fails its row. The same golden tape diffed with itself is
the row's negative control: the difference is what the findings come from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

import pytest

from mcptape.config.models import DriftSettings
from mcptape.diff.compare import diff_tapes
from mcptape.diff.schema_change import SchemaKind
from mcptape.tape.events import C2S, S2C, garbage_event, note_event
from mcptape.tape.format import Tape, make_header
from mcptape.verdict.vocabulary import FINDING_KINDS
from tests.recording import ADD, INIT_RESULT, TapeBuilder

Build = Callable[[], Tape]


def base(**kw: Any) -> TapeBuilder:
    return TapeBuilder(**kw).call("tools/list", None, {"tools": [ADD]})


def listing(method: str, key: str, *items: dict[str, Any], **rest: Any) -> Build:
    return lambda: TapeBuilder().call(method, None, {key: list(items), **rest}).tape()


def tools(*items: dict[str, Any], **rest: Any) -> Build:
    return listing("tools/list", "tools", *items, **rest)


def prompts(*arguments: dict[str, Any]) -> Build:
    return listing("prompts/list", "prompts", {"name": "explain", "arguments": list(arguments)})


def add_call(text: str = "5", **kw: Any) -> Build:
    return lambda: base().tool("add", {"a": 2, "b": 3}, text, **kw).tape()


def unanswered(exit_code: int | None = 0) -> Build:
    def build() -> Tape:
        tb = base()
        tb.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        return tb.tape(exit_code=exit_code)
    return build


def with_garbage(line: bytes | None) -> Build:
    """An add call during which the server writes `line` (not JSON) to stdout."""
    def build() -> Tape:
        tb = base()
        msg_id = tb.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        if line is not None:
            tb.events.append(garbage_event(S2C, line))
        tb.answer(msg_id, {"content": [{"type": "text", "text": "5"}], "isError": False})
        return tb.tape()
    return build


def with_note(what: str | None) -> Build:
    def build() -> Tape:
        tb = base().tool("add", {"a": 2, "b": 3}, "5")
        if what is not None:
            tb.events.append(note_event(what, {"after": 1}))
        return tb.tape()
    return build


def roots_request(count: int) -> Build:
    def build() -> Tape:
        tb = base()
        for k in range(count):
            tb.send(S2C, {"jsonrpc": "2.0", "id": k, "method": "roots/list"})
            tb.send(C2S, {"jsonrpc": "2.0", "id": k, "result": {"roots": []}})
        return tb.tool("add", {"a": 2, "b": 3}, "5").tape()
    return build


def progress(late: bool) -> Build:
    def build() -> Tape:
        tb = base()
        msg_id = tb.request("tools/call", {"name": "t", "arguments": {}, "_meta": {"progressToken": 7}})
        if not late:
            tb.notify("notifications/progress", {"progressToken": 7, "progress": 1})
        tb.answer(msg_id, {"content": []})
        if late:
            tb.notify("notifications/progress", {"progressToken": 7, "progress": 1})
        return tb.tape()
    return build


def session(**changes: Any) -> Build:
    """The handshake with `changes` merged into the initialize result (a None value drops the key)."""
    result = {k: v for k, v in {**INIT_RESULT, **changes}.items() if v is not None}
    return lambda: base(init_result=result).tape()


def client_asked(asked: str, answered: str) -> Build:
    """The handshake of a client that asked `asked` in `initialize`, answered `answered`."""
    return lambda: base(init_result={**INIT_RESULT, "protocolVersion": answered}, asked=asked).tape()


def no_handshake(protocol: str) -> Build:
    """A legacy tape whose recording began after the handshake (its header still names the version)."""
    def build() -> Tape:
        tb = base()
        events = [ev for ev in tb.tool("add", {"a": 2, "b": 3}, "5").tape().events
                  if ev.get("method") not in ("initialize", "notifications/initialized")
                  and not (ev.get("kind") == "response" and ev.get("id") == 0)]
        return Tape(make_header("t", protocol=protocol), events, {"mcptape": "end", "events": len(events)})
    return build


def wide_result(changed: int) -> Build:
    """A structured result with 30 fields, the first `changed` of them different."""
    fields = {f"f{n:02}": n + (1000 if n < changed else 0) for n in range(30)}
    return lambda: base().tool("t", {}, result={"content": [], "structuredContent": fields}).tape()


MUL = dict(ADD, name="mul")
RES = {"uri": "file:///a", "name": "a", "mimeType": "text/plain"}
OUT = {"type": "object", "properties": {"n": {"type": "number"}}}
STRUCT, OUTPUT = "structural", "output"

ROWS = [
    # surface
    pytest.param(tools(ADD, MUL), tools(ADD), {("surface", "removed", STRUCT)}, STRUCT, id="tool removed"),
    pytest.param(tools(ADD), tools(ADD, MUL), {("surface", "added", STRUCT)}, STRUCT, id="tool added"),
    pytest.param(tools(ADD, nextCursor="a"), tools(ADD, nextCursor="b"), {("result", "changed", OUTPUT)}, OUTPUT,
                 id="beside the list"),
    # schema, per item key
    pytest.param(tools(ADD), tools(dict(ADD, description="Sum.")), {("schema", "cosmetic", OUTPUT)}, OUTPUT, id="description"),
    pytest.param(tools(ADD), tools({k: v for k, v in ADD.items() if k != "inputSchema"}), {("schema", "breaking", STRUCT)}, STRUCT,
                 id="inputSchema removed"),
    pytest.param(tools(dict(ADD, outputSchema=OUT)), tools(ADD),
                 {("schema", "breaking", STRUCT), ("security", "output_dropped", STRUCT)}, STRUCT, id="outputSchema removed"),
    pytest.param(tools(ADD), tools(dict(ADD, outputSchema=OUT)), {("schema", "compatible", OUTPUT)}, OUTPUT, id="outputSchema added"),
    pytest.param(listing("resources/list", "resources", RES), listing("resources/list", "resources", dict(RES, mimeType="text/markdown")),
                 {("schema", "compatible", OUTPUT)}, OUTPUT, id="resource mimeType"),
    pytest.param(tools(dict(ADD, annotations={"readOnlyHint": True})), tools(dict(ADD, annotations={})),
                 {("schema", "breaking", STRUCT), ("security", "widened", STRUCT)}, STRUCT, id="readOnlyHint lost"),
    pytest.param(prompts({"name": "topic", "required": True}), prompts({"name": "topic"}), {("schema", "compatible", OUTPUT)}, OUTPUT,
                 id="prompt argument no longer required"),
    pytest.param(prompts({"name": "topic"}), prompts({"name": "topic", "required": True}), {("schema", "breaking", STRUCT)}, STRUCT,
                 id="prompt argument became required"),
    # calls and answers
    pytest.param(add_call(), lambda: base().tool("add", {"a": 2, "b": 4}, "5").tape(), {("call", "arguments", OUTPUT)}, OUTPUT,
                 id="arguments"),
    pytest.param(add_call(), add_call("6"), {("result", "changed", OUTPUT)}, OUTPUT, id="result changed"),
    pytest.param(wide_result(0), wide_result(30), {("result", "changed", OUTPUT)}, OUTPUT, id="list of changes cut short"),
    pytest.param(add_call(), unanswered(), {("process", "no_answer", STRUCT)}, STRUCT, id="no answer"),
    pytest.param(unanswered(), add_call(), {("process", "answered", STRUCT)}, STRUCT, id="answered now"),
    pytest.param(add_call(), add_call(error={"code": -32000, "message": "m"}), {("error", "result_to_error", STRUCT)}, STRUCT,
                 id="result to error"),
    pytest.param(add_call(error={"code": -32000, "message": "m"}), add_call(), {("error", "error_to_result", STRUCT)}, STRUCT,
                 id="error to result"),
    pytest.param(add_call(error={"code": -32000, "message": "m"}), add_call(error={"code": -32602, "message": "m"}),
                 {("error", "code", STRUCT)}, STRUCT, id="error code"),
    pytest.param(add_call(error={"code": 1, "message": "m"}), add_call(error={"code": 1, "message": "n"}),
                 {("error", "message", OUTPUT)}, OUTPUT, id="error message"),
    pytest.param(add_call(error={"code": 1, "message": "m", "data": 1}), add_call(error={"code": 1, "message": "m", "data": 2}),
                 {("error", "data", OUTPUT)}, OUTPUT, id="error data"),
    pytest.param(add_call(result={"content": [], "isError": False}), add_call(result={"content": [], "isError": True}),
                 {("error", "is_error", STRUCT)}, STRUCT, id="isError"),
    # notifications
    pytest.param(add_call(notes=[("notifications/message", {"data": "a"})]), add_call(notes=[("notifications/message", {"data": "b"})]),
                 {("notification", "changed", OUTPUT)}, OUTPUT, id="notification changed"),
    pytest.param(add_call(), add_call(notes=[("notifications/message", {"data": "a"})]), {("notification", "added", OUTPUT)}, OUTPUT,
                 id="notification added"),
    pytest.param(add_call(notes=[("notifications/message", {"data": "a"})]), add_call(), {("notification", "removed", OUTPUT)}, OUTPUT,
                 id="notification removed"),
    pytest.param(progress(False), progress(True), {("notification", "order", OUTPUT)}, OUTPUT, id="progress after the response"),
    # session
    pytest.param(session(), session(protocolVersion="2025-03-26"), {("session", "protocol", STRUCT)}, STRUCT, id="protocol version"),
    pytest.param(session(), session(capabilities={"tools": {"listChanged": True}}), {("session", "capability_removed", STRUCT)}, STRUCT,
                 id="capability removed"),
    pytest.param(session(), session(capabilities={**INIT_RESULT["capabilities"], "prompts": {}}),
                 {("session", "capability_added", OUTPUT)}, OUTPUT, id="capability added"),
    pytest.param(session(), session(capabilities={"tools": {"listChanged": False}, "logging": {}}),
                 {("session", "capability_changed", STRUCT)}, STRUCT, id="capability feature lost"),
    pytest.param(session(capabilities={"tools": {"listChanged": False}, "logging": {}}), session(),
                 {("session", "capability_changed", OUTPUT)}, OUTPUT, id="capability feature gained"),
    pytest.param(session(), session(serverInfo={"name": "calc", "version": "2"}), {("session", "server_info", OUTPUT)}, OUTPUT,
                 id="server version"),
    pytest.param(session(), session(instructions="Be nice."), {("session", "changed", OUTPUT)}, OUTPUT, id="instructions"),
    pytest.param(no_handshake("2025-06-18"), no_handshake("2025-03-26"), {("session", "protocol", STRUCT)}, STRUCT,
                 id="protocol in the header"),
    # the client asked another version: the server accepting each is the same server (info)
    pytest.param(client_asked("2025-06-18", "2025-06-18"), client_asked("2025-11-25", "2025-11-25"),
                 {("session", "client_protocol", "info")}, "same", id="client asked another version, server accepted each"),
    pytest.param(client_asked("2025-11-25", "2025-06-18"), client_asked("2025-06-18", "2025-06-18"),
                 {("session", "client_protocol", "info")}, "same", id="client asked another version, same answer"),
    pytest.param(client_asked("2025-06-18", "2025-06-18"), client_asked("2025-11-25", "2025-03-26"),
                 {("session", "client_protocol", OUTPUT)}, OUTPUT, id="client asked another version, server refused it"),
    pytest.param(client_asked("2025-11-25", "2025-11-25"), client_asked("2025-11-25", "2025-06-18"),
                 {("session", "protocol", STRUCT)}, STRUCT, id="same question, another answer: the server's"),
    # server requests, process, garbage, notes
    pytest.param(roots_request(1), roots_request(2), {("call", "server_request_added", OUTPUT)}, OUTPUT, id="server request added"),
    pytest.param(roots_request(1), roots_request(0), {("call", "server_request_removed", OUTPUT)}, OUTPUT, id="server request removed"),
    pytest.param(add_call(), lambda: base().tool("add", {"a": 2, "b": 3}, "5").tape(exit_code=1), {("process", "crash", STRUCT)}, STRUCT,
                 id="crashed"),
    pytest.param(lambda: base().tool("add", {"a": 2, "b": 3}, "5").tape(exit_code=1), add_call(), {("process", "exit", OUTPUT)}, OUTPUT,
                 id="no longer crashes"),
    pytest.param(add_call(), lambda: base().tool("add", {"a": 2, "b": 3}, "5").tape(complete=False), {("process", "crash", STRUCT)}, STRUCT,
                 id="fresh tape cut short"),
    pytest.param(with_garbage(None), with_garbage(b"debug: hi"), {("process", "garbage", OUTPUT)}, OUTPUT, id="garbage now"),
    pytest.param(with_garbage(b"debug: hi"), with_garbage(None), {("process", "garbage", OUTPUT)}, OUTPUT, id="garbage gone"),
    pytest.param(with_note(None), with_note("timeout"), {("process", "note", OUTPUT)}, OUTPUT, id="note now"),
    pytest.param(with_note("timeout"), with_note(None), {("process", "note", OUTPUT)}, OUTPUT, id="note gone"),
]


@pytest.mark.parametrize(("golden", "fresh", "findings", "verdict"), ROWS)
def test_each_rule_gives_its_finding_and_severity(golden: Build, fresh: Build, findings: set[tuple[str, str, str]],
                                                 verdict: str) -> None:
    assert diff_tapes(golden(), golden()).verdict == "same"  # negative control: the tape against itself
    result = diff_tapes(golden(), fresh())
    assert {(f.category, f.kind, f.severity) for d in result.drifts for f in d.findings} == findings
    assert result.verdict == verdict
    assert all(kind in FINDING_KINDS[category] for category, kind, _ in findings)  # what fail_on can name


def test_a_cut_short_list_of_changes_says_so_in_an_output_finding() -> None:
    result = diff_tapes(wide_result(0)(), wide_result(30)())
    findings = [f for d in result.drifts for f in d.findings]
    assert len(findings) == 26 and findings[-1].message == "… and more differences (list cut short)"
    assert findings[-1].severity == OUTPUT
    assert len([f for d in diff_tapes(wide_result(0)(), wide_result(3)()).drifts for f in d.findings]) == 3
    # The marker is of the class it stands for: the rule that relaxes the others relaxes it.
    assert diff_tapes(wide_result(0)(), wide_result(30)(), DriftSettings(fail_on={"result.changed": "info"})).exit_code == 0


def test_a_cut_short_list_of_argument_changes_follows_the_rule_for_arguments() -> None:
    def call(offset: int) -> Tape:
        return base().tool("t", {f"a{n:02}": n + offset for n in range(30)}, "ok").tape()

    assert diff_tapes(call(0), call(1)).exit_code == 1
    relaxed = diff_tapes(call(0), call(1), DriftSettings(fail_on={"call.arguments": "info"}))
    assert len(relaxed.drifts[0].findings) == 26 and relaxed.exit_code == 0


# --- the kinds that come from a variable are the table's (the literal ones: tests/verdict/test_drift_table.py) ---


def test_the_kinds_that_come_from_a_variable_are_rows_of_the_drift_table() -> None:
    # schema changes and value changes name their kind at run time
    assert set(FINDING_KINDS["schema"]) == set(get_args(SchemaKind))
    assert {"changed", "added", "removed"} <= set(FINDING_KINDS["result"])


@pytest.mark.parametrize(("before", "after", "kind"), [
    (None, {"taskSupport": "forbidden"}, "cosmetic"),  # restates the default
    ({"taskSupport": "forbidden"}, None, "cosmetic"),
    (None, {"taskSupport": "optional"}, "compatible"),
    ({"taskSupport": "optional"}, {"taskSupport": "required"}, "breaking"),  # task-only now
    (None, {"taskSupport": "required"}, "breaking"),
    ({"taskSupport": "optional"}, None, "breaking"),  # stopped supporting tasks
    ({"taskSupport": "required"}, {"taskSupport": "forbidden"}, "breaking"),
    ({"taskSupport": "required"}, {"taskSupport": "optional"}, "compatible"),
    ({"taskSupport": "forbidden"}, {"taskSupport": "required"}, "breaking"),  # the default said out loud, then task-only
    ({"taskSupport": "optional"}, {"taskSupport": "forbidden"}, "breaking"),
    ({}, {"taskSupport": "forbidden"}, "cosmetic"),
])
def test_task_support_is_compared_after_its_default(before: Any, after: Any, kind: str) -> None:
    def tool(execution: Any) -> dict[str, Any]:
        return dict(ADD, execution=execution) if execution is not None else ADD

    result = diff_tapes(tools(tool(before))(), tools(tool(after))())
    assert [(f.category, f.kind) for d in result.drifts for f in d.findings] == [("schema", kind)]
    # Task-only now, or no longer a task: structural (exit 2); the rest is output drift.
    assert result.verdict == ("structural" if kind == "breaking" else "output")
    assert diff_tapes(tools(tool(before))(), tools(tool(before))()).verdict == "same"
    if kind == "breaking":
        assert "task" in result.drifts[0].one_line()
