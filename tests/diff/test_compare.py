"""diff_tapes on hand-built tapes: alignment, classification, settings. Pure, no processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mcptape.config.models import DriftSettings
from mcptape.conformance.gate import diff_checked
from mcptape.diff.compare import diff_tapes
from mcptape.diff.schema_change import schema_changes
from mcptape.tape.events import C2S, S2C
from mcptape.tape.format import Tape
from mcptape.verdict.model import DiffResult
from tests.recording import ADD, INIT_RESULT, TapeBuilder


def base(**kw: Any) -> TapeBuilder:
    return TapeBuilder(**kw).call("tools/list", None, {"tools": [ADD]})


def kinds(result: DiffResult) -> list[tuple[str, str | None]]:
    return [(f.category, f.kind) for d in result.drifts for f in d.findings]


# --- alignment ---------------------------------------------------------------------------------


def test_identical_tapes_are_same() -> None:
    g = base().tool("add", {"a": 2, "b": 3}, "5").tape()
    f = base(client="another-client").tool("add", {"a": 2, "b": 3}, "5").tape()
    result = diff_tapes(g, f)
    assert result.verdict == "same" and result.drifts == [] and result.exit_code == 0
    changed = diff_tapes(g, base(client="another-client").tool("add", {"a": 2, "b": 3}, "6").tape())
    assert changed.verdict == "output" and changed.exit_code == 1  # positive control: one changed result


def test_one_call_inserted_early_reports_only_that_call() -> None:
    g = base()
    f = base().tool("echo", {"text": "hi"}, "hi")
    for n in range(20):
        g.tool("add", {"a": n, "b": 1}, str(n + 1))
        f.tool("add", {"a": n, "b": 1}, str(n + 1))
    result = diff_tapes(g.tape(), f.tape())
    assert result.verdict == "structural"
    assert len(result.drifts) == 1
    first = result.drifts[0]
    assert first.call is not None and first.call.name == "echo"
    assert kinds(result) == [("call", "added")]
    assert first.findings[0].fresh_line == 7  # header, init req/resp, initialized, list req/resp, then the echo request


def test_one_call_removed_reports_only_that_call() -> None:
    g = base().tool("add", {"a": 1, "b": 1}, "2").tool("divide", {"a": 1, "b": 1}, "1").tool("add", {"a": 2, "b": 2}, "4")
    f = base().tool("add", {"a": 1, "b": 1}, "2").tool("add", {"a": 2, "b": 2}, "4")
    result = diff_tapes(g.tape(), f.tape())
    assert kinds(result) == [("call", "removed")]
    assert result.first is not None and result.first.call is not None and result.first.call.name == "divide"
    assert result.first.findings[0].golden_line is not None


def test_reordered_parallel_calls_are_not_drift() -> None:
    def parallel(order: list[int]) -> Tape:
        tb = base()
        ids = {n: tb.request("tools/call", {"name": "add", "arguments": {"a": n, "b": n}}) for n in order}
        for n in reversed(order):  # answers arrive out of order too
            tb.answer(ids[n], {"content": [{"type": "text", "text": str(2 * n)}]})
        return tb.tape()

    assert diff_tapes(parallel([1, 2, 3]), parallel([3, 1, 2])).verdict == "same"
    # Positive control: the same reordering with one answer changed is that call's drift.
    changed = parallel([3, 1, 2])
    last_answer = next(ev for ev in reversed(changed.events) if ev["kind"] == "response")
    last_answer["msg"]["result"]["content"][0]["text"] = "7"  # the answer to a=3 (sent first, answered last)
    result = diff_tapes(parallel([1, 2, 3]), changed)
    assert [d.call.arguments for d in result.drifts if d.call] == [{"a": 3, "b": 3}]


def test_repeated_identical_calls_pair_in_order() -> None:
    g = base().tool("add", {"a": 1, "b": 1}, "2").tool("add", {"a": 1, "b": 1}, "2").tool("add", {"a": 1, "b": 1}, "2")
    f = base().tool("add", {"a": 1, "b": 1}, "2").tool("add", {"a": 1, "b": 1}, "3").tool("add", {"a": 1, "b": 1}, "2")
    result = diff_tapes(g.tape(), f.tape())
    assert result.verdict == "output"
    assert len(result.drifts) == 1
    assert result.drifts[0].findings[0].fresh_line == 10  # the second add's response


def test_changed_arguments_pair_with_the_same_tool() -> None:
    g = base().tool("add", {"a": 2, "b": 3}, "5").tool("echo", {"text": "x"}, "x")
    f = base().tool("add", {"a": 2, "b": 4}, "6").tool("echo", {"text": "x"}, "x")
    result = diff_tapes(g.tape(), f.tape())
    assert len(result.drifts) == 1
    assert ("call", "arguments") in kinds(result) and ("result", "changed") in kinds(result)
    assert result.verdict == "output"
    paths = [f.path for f in result.drifts[0].findings]
    assert "params.arguments.b" in paths and "result.content[0].text" in paths


def test_the_headline_is_the_most_severe_drift_and_the_rest_are_in_fresh_order() -> None:
    # Issue 18: a structural verdict is headed by a structural drift, not by an earlier output one.
    g = (base().tool("add", {"a": 1, "b": 1}, "2").tool("divide", {"a": 1, "b": 0}, error={"code": -32602, "message": "x"})
         .tool("mul", {"a": 2, "b": 2}, "4"))
    f = (base().tool("add", {"a": 1, "b": 1}, "3").tool("divide", {"a": 1, "b": 0}, error={"code": -32000, "message": "x"})
         .tool("mul", {"a": 2, "b": 2}, "5"))
    result = diff_tapes(g.tape(), f.tape())
    assert result.verdict == "structural"
    assert [d.call.name for d in result.drifts if d.call] == ["divide", "add", "mul"]
    assert result.first is not None and result.first.severity == "structural"
    assert result.first.one_line("arith").startswith("arith · step 3 · tools/call divide")
    # Among drifts of one severity the first in the fresh tape heads the report.
    g_out = base().tool("add", {"a": 1, "b": 1}, "2").tool("mul", {"a": 2, "b": 2}, "4")
    f_out = base().tool("add", {"a": 1, "b": 1}, "3").tool("mul", {"a": 2, "b": 2}, "5")
    out = diff_tapes(g_out.tape(), f_out.tape())
    assert out.first is not None
    assert out.first.one_line("arith") == 'arith · step 2 · tools/call add {"a":1,"b":1} · result.content[0].text "2" → "3" (output)'


# --- result ------------------------------------------------------------------------------------


def test_json_in_text_is_compared_as_json() -> None:
    g = base().tool("now", {}, '{"datetime": "2024-01-01T00:00:00", "tz": "UTC"}').tape()
    f = base().tool("now", {}, '{"tz": "UTC", "datetime": "2025-02-02T00:00:00"}').tape()
    result = diff_tapes(g, f)
    assert [fd.path for fd in result.drifts[0].findings] == ["result.content[0].text(json).datetime"]
    assert result.drifts[0].findings[0].message == '"2024-01-01T00:00:00" → "2025-02-02T00:00:00"'


def test_structured_content_compared_structurally_as_json_values() -> None:
    # JSON equality (jsonvalue.py): 1 and 1.0 are one number; true is not 1, though Python's == says so.
    g = base().tool("t", {}, result={"content": [], "structuredContent": {"n": 1, "ok": True, "items": [1, 2]}}).tape()
    f = base().tool("t", {}, result={"content": [], "structuredContent": {"n": 1.0, "ok": 1, "items": [1, 2, 3]}}).tape()
    result = diff_tapes(g, f)
    got = {(fd.path, fd.kind) for fd in result.drifts[0].findings}
    assert got == {("result.structuredContent.ok", "changed"), ("result.structuredContent.items[2]", "added")}


@pytest.mark.parametrize(("before", "after", "verdict"), [(True, 1, "output"), (0, False, "output"), (1, 1.0, "same"),
                                                          (1, 2, "output"), ({"a": 1, "b": True}, {"b": True, "a": 1.0}, "same")])
def test_a_boolean_is_never_a_number_even_where_both_tapes_are_alike(before: Any, after: Any, verdict: str) -> None:
    # Only this value differs, so the unchanged stretches around it are skipped (calls.find_window),
    # by Python's ==, which calls true and 1 equal: the window checks them as JSON values too.
    def tape(value: Any) -> Tape:
        return base().tool("t", {}, result={"content": [], "structuredContent": {"v": value}}).tool("u", {}).tape()

    assert diff_tapes(tape(before), tape(after)).verdict == verdict


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("golden", "fresh", "expected", "verdict"),
    [
        ({"error": {"code": -32602, "message": "m"}}, {"error": {"code": -32000, "message": "m"}}, ("error", "code"), "structural"),
        ({"error": {"code": -32602, "message": "m"}}, {"error": {"code": -32602, "message": "n"}}, ("error", "message"), "output"),
        ({"error": {"code": 1, "message": "m", "data": {"x": 1}}}, {"error": {"code": 1, "message": "m", "data": {"x": 2}}},
         ("error", "data"), "output"),
        ({"text": "5"}, {"error": {"code": -32603, "message": "broken"}}, ("error", "result_to_error"), "structural"),
        ({"error": {"code": -32603, "message": "broken"}}, {"text": "5"}, ("error", "error_to_result"), "structural"),
        ({"result": {"content": [], "isError": False}}, {"result": {"content": [], "isError": True}}, ("error", "is_error"),
         "structural"),
    ],
)
def test_error_drift(golden: dict[str, Any], fresh: dict[str, Any], expected: tuple[str, str], verdict: str) -> None:
    result = diff_tapes(base().tool("t", {}, **golden).tape(), base().tool("t", {}, **fresh).tape())
    assert kinds(result)[0] == expected
    assert result.verdict == verdict


def test_crash_in_fresh_is_structural() -> None:
    g = base().tool("add", {"a": 1, "b": 1}, "2").tape(exit_code=0)
    tb = base()
    tb.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    f = tb.tape(exit_code=3)
    result = diff_tapes(g, f)
    assert result.verdict == "structural"
    assert ("process", "no_answer") in kinds(result) and ("process", "crash") in kinds(result)
    assert result.first is not None and result.first.call is not None and result.first.call.name == "add"


def test_cut_short_fresh_tape_is_structural() -> None:
    g = base().tape()
    f = base().tape(complete=False)
    assert ("process", "crash") in kinds(diff_tapes(g, f))


# --- notifications -----------------------------------------------------------------------------


def log(data: str) -> tuple[str, Any]:
    return ("notifications/message", {"level": "info", "data": data})


def test_log_messages_compare_as_a_multiset_per_call() -> None:
    g = base().tool("t", {}, "ok", notes=[log("a"), log("b")]).tape()
    f = base().tool("t", {}, "ok", notes=[log("b"), log("a")]).tape()
    assert diff_tapes(g, f).verdict == "same"
    changed = base().tool("t", {}, "ok", notes=[log("b"), log("c")]).tape()  # positive control: one message changed
    assert kinds(diff_tapes(g, changed)) == [("notification", "changed")]


def test_notification_added_removed_changed_are_output() -> None:
    g = base().tool("t", {}, "ok", notes=[log("a"), ("notifications/resources/updated", {"uri": "x"})]).tape()
    f = base().tool("t", {}, "ok", notes=[log("z"), ("notifications/tools/list_changed", {})]).tape()
    result = diff_tapes(g, f)
    assert result.verdict == "output"
    assert set(kinds(result)) == {("notification", "changed"), ("notification", "added"), ("notification", "removed")}
    changed = next(fd for fd in result.drifts[0].findings if fd.kind == "changed")
    assert changed.path == "notifications[notifications/message].params.data"


def test_progress_after_the_response_is_an_order_drift() -> None:
    def run(late: bool) -> Tape:
        tb = base()
        msg_id = tb.request("tools/call", {"name": "t", "arguments": {}, "_meta": {"progressToken": 7}})
        progress = {"progressToken": 7, "progress": 1}
        if not late:
            tb.notify("notifications/progress", progress)
        tb.answer(msg_id, {"content": []})
        if late:
            tb.notify("notifications/progress", progress)
        return tb.tape()

    result = diff_tapes(run(False), run(True))
    assert kinds(result) == [("notification", "order")]


# --- session -----------------------------------------------------------------------------------


def test_session_changes() -> None:
    changed = {
        "protocolVersion": "2025-03-26",
        "capabilities": {"logging": {}, "prompts": {}},
        "serverInfo": {"name": "calc", "version": "1.1.0"},
    }
    result = diff_tapes(base().tape(), base(init_result=changed).tape())
    found = {(fd.path, fd.kind, fd.severity) for fd in result.drifts[0].findings}
    assert found == {
        ("result.protocolVersion", "protocol", "structural"),
        ("result.capabilities.tools", "capability_removed", "structural"),
        ("result.capabilities.prompts", "capability_added", "output"),
        ("result.serverInfo.version", "server_info", "output"),
    }
    assert result.drifts[0].call is not None and result.drifts[0].call.method == "initialize"


# --- surface and schema ------------------------------------------------------------------------


def test_surface_added_removed_and_setting() -> None:
    # Another schema and description: with either equal, `mul` would be `add` renamed (surface_review.py)
    mul = dict(ADD, name="mul", description="Multiply.", inputSchema={"type": "object", "properties": {"x": {}}})
    g = TapeBuilder().call("tools/list", None, {"tools": [ADD]}).tape()
    f = TapeBuilder().call("tools/list", None, {"tools": [mul]}).tape()
    result = diff_tapes(g, f)
    assert result.surface.added == ["mul"] and result.surface.removed == ["add"]
    assert result.verdict == "structural"
    only_added = diff_tapes(g, TapeBuilder().call("tools/list", None, {"tools": [ADD, mul]}).tape(),
                            DriftSettings(added_surface="output"))
    assert only_added.verdict == "output" and kinds(only_added) == [("surface", "added")]


def S(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if required is not None:
        out["required"] = required
    return out


NUM = {"type": "number"}
SCHEMA_TABLE = [
    # (golden, fresh, role, expected kind, fragment of the message)
    (S({"a": NUM}, ["a"]), S({"a": NUM, "c": NUM}, ["a", "c"]), "input", "breaking", "required property `c` added"),
    (S({"a": NUM}, ["a"]), S({"a": NUM, "c": NUM}, ["a"]), "input", "compatible", "optional property `c` added"),
    (S({"a": NUM, "b": NUM}), S({"a": NUM}), "input", "breaking", "property `b` removed"),
    (S({"a": NUM}), S({"a": NUM}, ["a"]), "input", "breaking", "became required"),
    (S({"a": NUM}, ["a"]), S({"a": NUM}), "input", "compatible", "no longer required"),
    (S({"a": NUM}), S({"a": {"type": "integer"}}), "input", "breaking", "type narrowed"),
    (S({"a": {"type": "integer"}}), S({"a": NUM}), "input", "compatible", "type widened"),
    (S({"a": {"type": "string"}}), S({"a": {"type": ["string", "null"]}}), "input", "compatible", "type widened"),
    (S({"a": {"type": "string"}}), S({"a": NUM}), "input", "breaking", "type changed"),
    (S({"u": {"enum": ["a", "b"]}}), S({"u": {"enum": ["a"]}}), "input", "breaking", "enum value(s) removed"),
    (S({"u": {"enum": ["a"]}}), S({"u": {"enum": ["a", "b"]}}), "input", "compatible", "enum value(s) added"),
    (S({"a": NUM}), S({"a": NUM}, additionalProperties=False), "input", "breaking", "additionalProperties closed"),
    (S({"a": NUM}, additionalProperties=False), S({"a": NUM}), "input", "compatible", "additionalProperties opened"),
    (S({"a": {"type": "number", "description": "x"}}), S({"a": {"type": "number", "description": "y"}}), "input",
     "cosmetic", "description"),
    (S({"a": {"type": "string"}}), S({"a": {"type": "string", "maxLength": 5}}), "input", "breaking", "maxLength"),
    (S({"a": {"type": "array", "items": NUM}}), S({"a": {"type": "array", "items": {"type": "integer"}}}), "input",
     "breaking", "type narrowed"),
    # Output schemas read the other way round for values.
    (S({"r": NUM}), S({"r": {"type": ["number", "string"]}}), "output", "breaking", "type widened"),
    (S({"r": NUM, "s": NUM}), S({"r": NUM}), "output", "breaking", "property `s` removed"),
    (S({"r": NUM}), S({"r": NUM, "s": NUM}, ["s"]), "output", "compatible", "property `s` added"),
    (S({"u": {"enum": ["a"]}}), S({"u": {"enum": ["a", "b"]}}), "output", "breaking", "enum value(s) added"),
]


@pytest.mark.parametrize(("golden", "fresh", "role", "kind", "fragment"), SCHEMA_TABLE)
def test_schema_classification(golden: Any, fresh: Any, role: Any, kind: str, fragment: str) -> None:
    found = schema_changes(golden, fresh, "s", role)
    assert [c.kind for c in found] == [kind], found
    assert fragment in found[0].message


def test_schema_rules_end_to_end_fill_the_surface_table() -> None:
    def tools(*ts: dict[str, Any]) -> Tape:
        return TapeBuilder().call("tools/list", None, {"tools": list(ts)}).tape()

    breaking = dict(ADD, name="b1", inputSchema=S({"a": NUM}, ["a"]))
    compatible = dict(ADD, name="c1", inputSchema=S({"a": NUM}))
    cosmetic = dict(ADD, name="d1", title="x")
    g = tools(dict(breaking, inputSchema=S({"a": NUM})), dict(compatible, inputSchema=S({"a": NUM}, ["a"])),
              dict(cosmetic, title="old"))
    f = tools(breaking, compatible, cosmetic)
    result = diff_tapes(g, f)
    assert (result.surface.breaking, result.surface.compatible, result.surface.cosmetic) == (["b1"], ["c1"], ["d1"])
    assert result.verdict == "structural"


@pytest.mark.parametrize(
    ("golden", "fresh", "kind"),
    [
        ({"readOnlyHint": True}, {"destructiveHint": True}, "breaking"),
        ({"readOnlyHint": True}, {}, "breaking"),
        ({"title": "Add"}, {"title": "Sum"}, "cosmetic"),
        ({"idempotentHint": True}, {"idempotentHint": False}, "compatible"),
        # Issue 18: compared after the MCP defaults. A hint that restates its default is cosmetic.
        ({}, {"destructiveHint": True}, "cosmetic"),
        ({"readOnlyHint": False}, {}, "cosmetic"),
        ({}, {"openWorldHint": True, "idempotentHint": False}, "cosmetic"),
        ({"readOnlyHint": True}, {"readOnlyHint": True, "destructiveHint": True}, "cosmetic"),
        ({"destructiveHint": False}, {}, "breaking"),  # the default is destructive
        ({}, {"destructiveHint": False}, "compatible"),
    ],
)
def test_annotation_changes(golden: dict[str, Any], fresh: dict[str, Any], kind: str) -> None:
    g = TapeBuilder().call("tools/list", None, {"tools": [dict(ADD, annotations=golden)]}).tape()
    f = TapeBuilder().call("tools/list", None, {"tools": [dict(ADD, annotations=fresh)]}).tape()
    result = diff_tapes(g, f)
    # the schema's view; a flip that widens the tool is also a security finding (test_surface_review.py)
    assert {fd.kind for fd in result.drifts[0].findings if fd.category == "schema"} == {kind}
    assert getattr(result.surface, kind) == ["add"]


@pytest.mark.parametrize(
    ("golden", "fresh", "kind"),
    [
        ([{"name": "topic", "required": True}], [{"name": "topic", "required": True}, {"name": "lang", "required": True}],
         "breaking"),
        ([{"name": "topic", "required": True}], [{"name": "topic", "required": True}, {"name": "lang"}], "compatible"),
        ([{"name": "topic"}], [], "breaking"),
        ([{"name": "topic"}], [{"name": "topic", "required": True}], "breaking"),
        ([{"name": "topic", "description": "a"}], [{"name": "topic", "description": "b"}], "cosmetic"),
    ],
)
def test_prompt_arguments(golden: list[Any], fresh: list[Any], kind: str) -> None:
    g = TapeBuilder().call("prompts/list", None, {"prompts": [{"name": "explain", "arguments": golden}]}).tape()
    f = TapeBuilder().call("prompts/list", None, {"prompts": [{"name": "explain", "arguments": fresh}]}).tape()
    result = diff_tapes(g, f)
    assert [fd.kind for fd in result.drifts[0].findings] == [kind]
    assert getattr(result.surface, kind) == ["prompt:explain"]


# --- settings ----------------------------------------------------------------------------------


def cosmetic_and_result() -> tuple[Tape, Tape]:
    g = TapeBuilder().call("tools/list", None, {"tools": [ADD]}).tool("add", {"a": 1, "b": 1}, "2").tape()
    f = TapeBuilder().call("tools/list", None, {"tools": [dict(ADD, description="Sum.")]}) \
        .tool("add", {"a": 1, "b": 1}, "3").tape()
    return g, f


def test_fail_on_by_category_and_kind() -> None:
    g, f = cosmetic_and_result()
    result = diff_tapes(g, f, DriftSettings(fail_on={"schema.cosmetic": "info", "result": "structural"}))
    assert result.verdict == "structural"
    assert result.first is not None and result.first.call is not None and result.first.call.name == "add"
    # The info finding is still reported, after the failing ones, and does not fail.
    assert result.drifts[-1].severity == "info"


def test_ignore_rules_by_category_and_path_glob() -> None:
    g, f = cosmetic_and_result()
    result = diff_tapes(g, f, DriftSettings(ignore=[{"category": "schema.cosmetic"}, {"path": "result.content[*].text"}]))
    assert result.verdict == "same" and result.drifts == [] and result.surface.empty()
    # Positive control: without the second rule, the changed result is drift again.
    assert diff_tapes(g, f, DriftSettings(ignore=[{"category": "schema.cosmetic"}])).verdict == "output"
    # `[0]` is the index, not a character class; a path also ignores what lies beneath it.
    g2 = base().tool("now", {}, '{"t": 1}').tape()
    f2 = base().tool("now", {}, '{"t": 2}').tape()
    assert diff_tapes(g2, f2, DriftSettings(ignore=[{"path": "result.content[0].text"}])).verdict == "same"
    assert diff_tapes(g2, f2, DriftSettings(ignore=[{"path": "result.content0.text"}])).verdict == "output"
    assert diff_tapes(g2, f2, DriftSettings(ignore=[{"method": "tools/call", "name": "now"}])).verdict == "same"
    assert diff_tapes(g2, f2, DriftSettings(ignore=[{"method": "tools/call", "name": "other"}])).verdict == "output"


def test_bad_ignore_rule_or_fail_on_key_is_refused_before_any_diff() -> None:
    # Settings built in code are checked as mcptape.yml's are (tests/configs/broken/drift_*.yml).
    with pytest.raises(ValidationError, match='unknown key "paht" in an ignore rule; did you mean "path"'):
        DriftSettings(ignore=[{"paht": "x"}])
    with pytest.raises(ValidationError, match='unknown drift class "schema.braking"'):
        DriftSettings(fail_on={"schema.braking": "info"})
    # Positive control: the keys spelled right are taken, and they do change the verdict.
    g, f = cosmetic_and_result()
    assert diff_tapes(g, f).verdict == "output"
    assert diff_tapes(g, f, DriftSettings(ignore=[{"path": "result.content[*].text"}],
                                          fail_on={"schema.cosmetic": "info"})).verdict == "same"


def test_result_round_trips_through_json() -> None:
    g, f = cosmetic_and_result()
    result = diff_tapes(g, f)
    again = DiffResult.from_dict(result.to_dict())
    assert again == result


def test_server_requests_compare_over_the_session_not_per_call() -> None:
    def with_roots(where: int, count: int = 1) -> Tape:
        tb = base()
        for n in range(3):
            if n == where:
                for k in range(count):
                    tb.send(S2C, {"jsonrpc": "2.0", "id": k, "method": "roots/list"})
                    tb.send(C2S, {"jsonrpc": "2.0", "id": k, "result": {"roots": []}})
            tb.tool("add", {"a": n, "b": n}, str(2 * n))
        return tb.tape()

    assert diff_tapes(with_roots(0), with_roots(2)).verdict == "same"  # a timer fired at another moment
    result = diff_tapes(with_roots(0), with_roots(0, count=2))
    assert kinds(result) == [("call", "server_request_added")] and result.verdict == "output"


def test_long_text_change_names_the_first_differing_character() -> None:
    g = base().tool("big", {}, "x" * 100_000 + "a").tape()
    f = base().tool("big", {}, "x" * 100_000 + "b").tape()
    finding = diff_tapes(g, f).drifts[0].findings[0]
    assert "first difference at character 100000" in finding.message
    assert len(str(finding.before)) < 2100  # reports carry a clipped value, not 100 kB


def test_handshake_is_lenient_about_the_client() -> None:
    g = TapeBuilder(client="claude").tape()
    f = TapeBuilder(client="cursor").tape()
    assert diff_tapes(g, f).verdict == "same"
    # Positive control: another client and a server that now says another version.
    server = TapeBuilder(client="cursor", init_result=dict(INIT_RESULT, serverInfo={"name": "calc", "version": "2"}))
    assert kinds(diff_tapes(g, server.tape())) == [("session", "server_info")]


# --- redaction placeholders: a rotated secret is not drift ---------------------------------------


def gh(tag: str) -> str:
    return f"<REDACTED:github-token#{tag}>"


def test_rotated_secret_tags_are_not_drift_in_results_params_errors_and_notifications() -> None:
    def run(tag: str) -> Tape:
        tb = base()
        tb.tool("whoami", {"token": gh(tag)}, f"token is {gh(tag)}",
                notes=[log(f"using {gh(tag)}")])
        tb.tool("json", {}, result={"content": [{"type": "text", "text": '{"auth": "Bearer ' + gh(tag) + '"}'}],
                                    "structuredContent": {"auth": gh(tag), "list": [gh(tag)]}})
        tb.tool("fail", {}, error={"code": -32000, "message": f"bad token {gh(tag)}", "data": {"token": gh(tag)}})
        tb.call("resources/read", {"uri": f"https://api.example/{gh(tag)}/x"}, {"contents": []})
        return tb.tape()

    result = diff_tapes(run("1a2b3c4d"), run("5e6f7a8b"))
    assert result.verdict == "same" and result.drifts == []
    # Positive control: the same rotation beside one changed word of a result is drift.
    changed = run("5e6f7a8b")
    next(ev for ev in reversed(changed.events) if ev["kind"] == "response")["msg"]["result"]["contents"] = [{"text": "new"}]
    assert diff_tapes(run("1a2b3c4d"), changed).verdict == "output"


def test_a_placeholder_of_another_kind_is_still_drift() -> None:
    g = base().tool("whoami", {}, f"token is {gh('1a2b3c4d')}").tape()
    f = base().tool("whoami", {}, "token is <REDACTED:openai-key#1a2b3c4d>").tape()
    result = diff_tapes(g, f)
    assert result.verdict == "output"
    assert [fd.path for fd in result.drifts[0].findings] == ["result.content[0].text"]
    # And text around the placeholder still counts.
    f2 = base().tool("whoami", {}, f"token was {gh('5e6f7a8b')}").tape()
    assert diff_tapes(g, f2).verdict == "output"


def test_rotated_secret_in_arguments_still_pairs_the_call() -> None:
    # Pass 2 pairs identical calls by key: with the tag in the key, the rotated call would be
    # "removed" + "added" (structural) instead of paired.
    def run(tag: str) -> Tape:
        tb = base()
        ids = [tb.request("tools/call", {"name": "t", "arguments": {"k": gh(tag) if n == 1 else str(n)}}) for n in (1, 2)]
        for msg_id in reversed(ids):
            tb.answer(msg_id, {"content": []})
        return tb.tape()

    g = run("1a2b3c4d")
    tb = base()
    ids = [tb.request("tools/call", {"name": "t", "arguments": {"k": str(n) if n == 2 else gh("5e6f7a8b")}}) for n in (2, 1)]
    for msg_id in ids:
        tb.answer(msg_id, {"content": []})
    assert diff_tapes(g, tb.tape()).verdict == "same"
    # Positive control: a rotated secret beside an argument that did change is an arguments drift.
    tb = base()
    ids = [tb.request("tools/call", {"name": "t", "arguments": {"k": "3" if n == 2 else gh("5e6f7a8b")}}) for n in (2, 1)]
    for msg_id in ids:
        tb.answer(msg_id, {"content": []})
    assert ("call", "arguments") in kinds(diff_tapes(g, tb.tape()))


# --- conformance of the fresh tape (diff_checked(...)) ---------------------------


def test_conformance_findings_of_the_fresh_tape_are_placed_and_follow_the_settings() -> None:
    g = base().tool("t", {}, "ok").tool("u", {}, "ok").tape()
    f = base().tool("t", {}, result={"content": "not a list"}).tool("u", {}, "ok").tape()
    plain = diff_tapes(g, f)
    assert ("conformance", "schema") not in kinds(plain)  # opt-in

    result = diff_checked(g, f)
    assert result.verdict == "structural"
    conf = [(d, fd) for d in result.drifts for fd in d.findings if fd.category == "conformance"]
    assert len(conf) == 1
    drift, finding = conf[0]
    assert finding.path == "8:result.content" and finding.fresh_line == 8 and finding.severity == "structural"
    assert drift.call is not None and (drift.call.method, drift.call.name) == ("tools/call", "t")
    # The structural conformance drift heads the report (issue 18: the most severe first); the
    # output drift of the same response follows it.
    assert [fd.category for d in result.drifts for fd in d.findings][:2] == ["conformance", "result"]

    assert diff_checked(g, f, DriftSettings(conformance="info")).verdict == "output"
    assert diff_checked(g, f, DriftSettings(fail_on={"conformance": "output"})).verdict == "output"
    ignored = diff_checked(g, f, DriftSettings(ignore=[{"category": "conformance*", "name": "t"}]))
    assert ("conformance", "schema") not in kinds(ignored)
    # Only the fresh tape is checked: a broken golden is the past.
    assert [fd for d in diff_checked(f, g).drifts for fd in d.findings
            if fd.category == "conformance"] == []


# --- big tapes: the unchanged stretches are skipped, with the same verdict -------------------------


def test_changes_deep_inside_long_identical_stretches_are_found_and_placed() -> None:
    def session(changed: int | None = None, insert: int | None = None, progress: bool = False) -> Tape:
        tb = base()
        for n in range(300):
            if n == insert:
                tb.tool("echo", {"text": "new"}, "new")
            meta = {"_meta": {"progressToken": 1}} if progress and n in (150, 151) else {}
            notes = [("notifications/progress", {"progressToken": 1, "progress": 1})] if progress and n == 151 else []
            tb.call("tools/call", {"name": "add", "arguments": {"a": n, "b": 1}, **meta},
                    {"content": [{"type": "text", "text": str(n + 1 + (n == changed))}]}, notes=notes)
        return tb.tape()

    assert diff_tapes(session(), session()).verdict == "same"
    result = diff_tapes(session(), session(changed=200))
    assert [d.call.arguments for d in result.drifts if d.call] == [{"a": 200, "b": 1}]
    assert result.drifts[0].findings[0].golden_line == result.drifts[0].findings[0].fresh_line == 408
    result = diff_tapes(session(), session(insert=100, changed=200))
    assert [(d.call.name, d.findings[0].kind) for d in result.drifts if d.call] == [("echo", "added"), ("add", "changed")]
    assert result.drifts[1].findings[0].fresh_line == 410  # the echo's two lines came before
    removed = diff_tapes(session(insert=100), session())
    assert [(d.call.name, d.findings[0].kind, d.call.step) for d in removed.drifts if d.call] == [("echo", "removed", 102)]
    # A progress notification naming a request before the changed stretch still belongs to it.
    assert diff_tapes(session(progress=True), session(progress=True, changed=250)).verdict == "output"


# --- big tapes: every shortcut gives what building every call gives ---------------------------------


def _slowly(golden: Tape, fresh: Tape, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """diff_tapes with no window at all: every call of both tapes built, aligned and compared."""
    import mcptape.diff.compare as engine
    from mcptape.diff.calls import Window

    with monkeypatch.context() as m:
        m.setattr(engine, "find_window", lambda g, f: Window())
        return diff_tapes(golden, fresh).to_dict()


def _long_session(
    *,
    insert: int | None = None,
    again: int | None = None,
    remove: int | None = None,
    changed: tuple[int, ...] = (),
    error: int | None = None,
    log: int | None = None,
    progress: bool = False,
    late_progress: int | None = None,
    roots: str = "a",
    exit_code: int = 0,
    calls: int = 300,
) -> Tape:
    """tools/list, then `calls` add calls, with the given differences. The inserted call has an id
    of its own and a removed one leaves a gap, so the ids after them stay (as with a client
    numbering each of its parallel workers' calls apart). `progress`: calls 100 and 101 carry
    progress tokens, and call 101 is answered late, after call 102 (its progress notification
    too, with `late_progress` as its value): the cuts must keep them together."""
    tb = base()
    late: int | None = None
    for n in range(calls):
        if n == insert:
            params = {"name": "echo", "arguments": {"text": "new"}}
            tb.send(C2S, {"jsonrpc": "2.0", "id": "inserted", "method": "tools/call", "params": params})
            tb.send(S2C, {"jsonrpc": "2.0", "id": "inserted", "result": {"content": [{"type": "text", "text": "new"}]}})
        if n == again:  # the same call twice in a row, the first time with an id of its own
            params = {"name": "add", "arguments": {"a": n, "b": 1}}
            tb.send(C2S, {"jsonrpc": "2.0", "id": "again", "method": "tools/call", "params": params})
            tb.send(S2C, {"jsonrpc": "2.0", "id": "again", "result": {"content": [{"type": "text", "text": "0"}]}})
        if n == remove:
            tb.next_id += 1
            continue
        meta = {"_meta": {"progressToken": n}} if progress and n in (100, 101) else {}
        text = str(n + 1 + (n in changed))
        if progress and n == 101:
            late = tb.request("tools/call", {"name": "add", "arguments": {"a": n, "b": 1}, **meta})
            continue
        notes = [("notifications/message", {"level": "info", "data": f"n{n}"})] if n == log else []
        if n == error:
            tb.call("tools/call", {"name": "add", "arguments": {"a": n, "b": 1}}, error={"code": -1, "message": "no"})
        else:
            tb.tool("add", {"a": n, "b": 1}, text, notes=notes)
        if progress and n == 102 and late is not None:
            tb.notify("notifications/progress", {"progressToken": 101, "progress": late_progress or 1})
            tb.answer(late, {"content": [{"type": "text", "text": "102"}], "isError": False})
        if n == 200:  # a server request in the middle of the session, and the client's reply
            tb.send(S2C, {"jsonrpc": "2.0", "id": 0, "method": "roots/list"})
            tb.send(C2S, {"jsonrpc": "2.0", "id": 0, "result": {"roots": [{"uri": f"file:///{roots}"}]}})
    return tb.tape(exit_code=exit_code)


@pytest.mark.parametrize("fresh", [
    {"changed": (2,)},  # drift near the start
    {"changed": (150,)},  # in the middle
    {"changed": (299,)},  # at the end
    {"log": 150},  # a notification only
    {"insert": 5, "changed": (150,)},  # one call inserted early, one result changed later
    {"insert": 5, "changed": (150, 151, 290)},
    {"remove": 5, "error": 150},
    {"insert": 5, "log": 250},
    {"insert": 5, "roots": "b", "exit_code": 1},  # session-wide events after the change
    {"insert": 5, "changed": tuple(range(100, 300, 2))},  # more changed results than a window's end takes in
    {"insert": 290, "changed": (10,)},
    {"again": 5, "changed": (150,)},
])
def test_shortcuts_find_what_building_every_call_finds(fresh: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    golden_tape, fresh_tape = _long_session(), _long_session(**fresh)
    fast = diff_tapes(golden_tape, fresh_tape)
    assert fast.drifts, "every case is drift"
    assert fast.to_dict() == _slowly(golden_tape, fresh_tape, monkeypatch)


@pytest.mark.parametrize("late_progress", [1, 2])
def test_a_call_answered_late_stays_whole_at_the_windows_end(late_progress: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Call 101's progress and answer come after call 102: no cut may fall between them.
    golden_tape = _long_session(progress=True)
    fresh_tape = _long_session(progress=True, insert=5, late_progress=late_progress, changed=(102,))
    fast = diff_tapes(golden_tape, fresh_tape)
    assert fast.to_dict() == _slowly(golden_tape, fresh_tape, monkeypatch)
    changed = {d.call.arguments["a"] for d in fast.drifts if d.call and d.call.name == "add"}
    assert changed == ({101, 102} if late_progress == 2 else {102})


def test_a_changed_answer_after_an_inserted_call_is_compared_in_a_stretch() -> None:
    from mcptape.diff.calls import find_window

    golden_tape, fresh_tape = _long_session(), _long_session(insert=5, changed=(150,))
    window = find_window(golden_tape.events, fresh_tape.events)
    assert window.stop_f is not None and window.stop_f - window.start == 2  # the echo call alone
    assert len(window.stretches) == 1
    result = diff_tapes(golden_tape, fresh_tape)
    assert [(d.call.name, d.call.step, d.findings[0].kind) for d in result.drifts if d.call] == [
        ("echo", 7, "added"), ("add", 153, "changed")]


def test_a_window_end_that_would_not_pair_falls_back_to_where_the_events_stop_being_equal() -> None:
    from mcptape.diff import protocol
    from mcptape.diff.compare import _build

    # The repeated call is the same request as the first call after the window that ends at it,
    # so align.py's prefix pass would pair them: the window ends where the tapes stop being equal.
    golden_tape, fresh_tape = _long_session(), _long_session(again=5, changed=(150,))
    g, f, window, pairs = _build(protocol.prepare_pair(golden_tape, fresh_tape))
    assert window.stop_g is not None and not window.stretches and pairs == []
    assert len(g.calls) == 146 and len(f.calls) == 147  # calls 5 to 150, and the repeated one


# --- reading a pair: the fresh tape shares the golden's events, and is what read_tape reads -------------


def _pair_files(tmp_path: Path, golden: list[bytes], fresh: list[bytes]) -> tuple[Path, Path]:
    a, b = tmp_path / "g.tape.jsonl", tmp_path / "f.tape.jsonl"
    a.write_bytes(b"".join(golden))
    b.write_bytes(b"".join(fresh))
    return a, b


def _lines(tape: Tape) -> list[bytes]:
    from mcptape.tape.format import make_footer, serialize

    return [serialize(tape.header), *(serialize(ev) for ev in tape.events), serialize(make_footer(len(tape.events)))]


@pytest.mark.parametrize("edit", [
    "same", "insert_and_change", "footer_differs", "blank_line", "golden_blank_line", "cut_short", "no_footer",
    "after_footer", "footer_inside", "header_only", "all_different",
])
def test_read_pair_reads_the_fresh_tape_as_read_tape_does(edit: str, tmp_path: Path) -> None:
    from mcptape.tape.format import serialize
    from mcptape.tape.reader import read_pair, read_tape

    golden = _lines(_long_session(calls=30))
    fresh = _lines(_long_session(calls=30, insert=3, changed=(20,))) if edit == "insert_and_change" else list(golden)
    if edit == "footer_differs":
        fresh[-1] = serialize({"mcptape": "end", "events": len(fresh) - 2, "note": "other"})
    elif edit == "blank_line":
        fresh.insert(10, b"  \n")
    elif edit == "golden_blank_line":
        golden.insert(10, b"\n")
    elif edit == "cut_short":
        fresh[-1] = fresh[-1][:10]
    elif edit == "no_footer":
        fresh.pop()
    elif edit == "after_footer":
        fresh.append(fresh[5])
    elif edit == "footer_inside":
        fresh.insert(20, fresh[-1])
    elif edit == "header_only":
        fresh = fresh[:1]
    elif edit == "all_different":
        fresh = [fresh[0]] + [line.replace(b'"add"', b'"sum"') for line in fresh[1:]]
    a, b = _pair_files(tmp_path, golden, fresh)
    g, f = read_pair(a, b)
    plain = read_tape(b)
    assert (f.header, f.events, f.event_lines, f.footer, f.path) == (
        plain.header, plain.events, plain.event_lines, plain.footer, plain.path)
    assert g.events == read_tape(a).events
    if edit in ("same", "insert_and_change", "footer_differs"):
        shared = {id(ev) for ev in g.events}
        assert sum(id(ev) in shared for ev in f.events) >= len(f.events) - 3  # parsed once


def test_read_pair_says_what_read_tape_says_about_a_corrupt_fresh_tape(tmp_path: Path) -> None:
    from mcptape.errors import TapeError
    from mcptape.tape.reader import read_pair

    golden = _lines(_long_session(calls=10))
    a, b = _pair_files(tmp_path, golden, [*golden[:5], b'{"kind":"broken\n', *golden[5:]])
    with pytest.raises(TapeError, match=r"f.tape.jsonl:6: line is not a JSON object"):
        read_pair(a, b)


def test_a_part_nested_past_max_depth_is_compared_as_text_and_the_change_says_so() -> None:
    from mcptape.diff.values import changes, describe
    from mcptape.jsonrpc import DEEP_KEY, loads

    def result(leaf: str, layout: str = "") -> Any:
        return loads('{"v":' + f"[{layout}" * 80 + f'"{leaf}"' + f"{layout}]" * 80 + "}")

    assert changes(result("same"), result("same", " ")) == []  # the same JSON in another layout
    (change,) = changes(result("bottom"), result("changed"), "result")
    assert change.path == "result.v" + "[0]" * 63 + "(deep)"  # the part at level 65
    assert describe(change).endswith("(nested deeper than 64 levels: compared as JSON text)")
    assert describe(change).startswith("\"" + "[" * 17 + "\\\"bottom\\\"")  # the texts, shown as strings
    (mixed,) = changes({"v": {DEEP_KEY: "[[1]]"}}, {"v": "plain"}, "result")  # deep on one side only
    assert (mixed.path, mixed.before, mixed.after) == ("result.v(deep)", "[[1]]", "plain")  # its text, not the marker


def test_a_string_holding_json_too_deep_to_walk_is_compared_as_text_and_says_so() -> None:
    from mcptape.diff.values import changes, describe

    def text(leaf: str, depth: int) -> str:
        return "[" * depth + f'"{leaf}"' + "]" * depth

    (deep,) = changes({"t": text("a", 100)}, {"t": text("b", 100)}, "result")
    assert deep.path == "result.t" and describe(deep).endswith("(holds JSON nested deeper than 64 levels: compared as text)")
    (shallow,) = changes({"t": text("a", 10)}, {"t": text("b", 10)}, "result")  # control: walked into
    assert shallow.path == "result.t(json)" + "[0]" * 10 and shallow.note is None


def test_a_check_registered_in_one_registry_runs_in_that_diff_only() -> None:
    from mcptape.diff.checks import default_checks
    from mcptape.verdict.model import Finding

    g, f = base().tool("t", {}).tape(), base().tool("t", {}).tape()
    mine = default_checks()
    mine.session_checks["mine"] = lambda g_calls, f_calls: [(0, Finding("process", "output", "", "mine", kind="note"))]
    assert [d.findings[0].message for d in diff_tapes(g, f, checks=mine).drifts] == ["mine"]
    assert diff_tapes(g, f).verdict == "same" and "mine" not in default_checks().session_checks


# --- issue 18: the headline, and tapes of one session by different clients --------------------


def test_handshake_metadata_and_the_clients_own_change_do_not_head_a_call_that_drifted() -> None:
    # A new serverInfo and capability (output, in initialize) come before the call's drift in
    # the tape; the call's drift heads the report all the same.
    init = {**INIT_RESULT, "serverInfo": {"name": "calc", "version": "2"},
            "capabilities": {**INIT_RESULT.get("capabilities", {}), "prompts": {}}}
    g = base().tool("add", {"a": 1, "b": 1}, "2")
    f = base(init_result=init).tool("add", {"a": 1, "b": 1}, "3")
    result = diff_tapes(g.tape(), f.tape())
    assert result.first is not None and result.first.call is not None
    assert (result.first.call.method, result.first.call.name) == ("tools/call", "add"), result.first.one_line()
    assert any(d.call is not None and d.call.method == "initialize" for d in result.drifts[1:])
    # A client that declared other capabilities (its config) changed only its own request: the
    # server's answer to a call still heads the report.
    mine = base().tool("add", {"a": 1, "b": 1}, "3")
    for event in mine.events[:2]:  # the initialize request and the echo of its params in the answer
        params = event["msg"]["params"] if event["kind"] == "request" else event["params"]
        params["capabilities"] = {"roots": {}}
    result = diff_tapes(g.tape(), mine.tape())
    assert [d.call.method for d in result.drifts if d.call] == ["tools/call", "initialize"], \
        [d.one_line() for d in result.drifts]


def test_empty_params_and_empty_arguments_are_absent_ones() -> None:
    g = base().call("prompts/get", {"name": "p"}, {"messages": []}).call("resources/list", None, {"resources": []})
    f = base().call("prompts/get", {"name": "p", "arguments": {}}, {"messages": []}).call("resources/list", {}, {"resources": []})
    assert diff_tapes(g.tape(), f.tape()).verdict == "same"
    # Control: arguments that say something are compared.
    h = base().call("prompts/get", {"name": "p", "arguments": {"x": "1"}}, {"messages": []}).call("resources/list", {}, {"resources": []})
    assert diff_tapes(g.tape(), h.tape()).verdict != "same"


def test_a_refused_discover_probe_before_initialize_is_negotiation_not_a_call() -> None:
    from mcptape.tape.events import note_event
    from mcptape.tape.format import Tape, make_header

    g = base().tool("add", {"a": 1, "b": 1}, "2").tape()
    probe = [
        {"kind": "request", "dir": C2S, "id": 0, "method": "server/discover",
         "msg": {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {}}},
        note_event("http", {"request": "POST", "status": 400}),
        {"kind": "error", "dir": S2C, "id": None,
         "msg": {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "Bad Request: Server not initialized"}}},
    ]
    f = Tape(make_header("t", protocol="2025-06-18"), probe + g.events, g.footer)
    assert diff_tapes(g, f).verdict == "same"
    # Control: the same probe *answered* (a 2026-07-28 server) and no initialize after it is a session of its own.
    answered = [probe[0], {"kind": "response", "dir": S2C, "id": 0, "method": "server/discover",
                           "msg": {"jsonrpc": "2.0", "id": 0, "result": {"supportedVersions": ["2026-07-28"]}}}]
    later = [e for e in g.events if e.get("method") not in ("initialize", "notifications/initialized")]
    assert diff_tapes(g, Tape(make_header("t"), answered + later, g.footer)).verdict != "same"


def test_conformance_findings_the_golden_has_too_are_known_and_only_new_ones_fail() -> None:
    # An unchanged server that breaks the MCP schema (an old release's inputSchema without `type`)
    # must not fail every run; the day it breaks another rule, that one is drift.
    broken = base().tool("t", {}, result={"content": "not a list"}).tool("u", {}, "ok")
    same = diff_checked(broken.tape(), broken.tape())
    assert same.verdict == "same", [d.one_line() for d in same.drifts]
    known = [f for d in same.drifts for f in d.findings if f.category == "conformance"]
    assert known and all(f.severity == "info" and f.message.startswith("known: ") for f in known)
    worse = base().tool("t", {}, result={"content": "not a list"}).tool("u", {}, result={"content": 7})
    result = diff_checked(broken.tape(), worse.tape())
    assert result.verdict == "structural"
    new = [(d.call.name if d.call else None, f.severity) for d in result.drifts for f in d.findings
           if f.category == "conformance" and f.severity != "info"]
    assert new == [("u", "structural")], [d.one_line() for d in result.drifts]


def test_paginated_lists_are_compared_as_one_list() -> None:
    # Issue 18: a golden walked 3 pages of resources; today's server has one page, and the
    # resource that was on page 3 is gone. That is one removed resource, no "call removed".
    def res(n: int) -> dict[str, Any]:
        return {"uri": f"test://r/{n}", "name": f"r{n}"}

    g = (base().call("resources/list", None, {"resources": [res(1), res(2)], "nextCursor": "p2"})
         .call("resources/list", {"cursor": "p2"}, {"resources": [res(3), res(4)], "nextCursor": "p3"})
         .call("resources/list", {"cursor": "p3"}, {"resources": [res(5)]}))
    f = base().call("resources/list", None, {"resources": [res(1), res(2), res(3), res(4)]})
    result = diff_tapes(g.tape(), f.tape())
    assert ("call", "removed") not in kinds(result), [d.one_line() for d in result.drifts]
    assert result.surface.removed == ["resource:test://r/5"], result.surface
    # The same resources cut into other pages are the same list.
    again = (base().call("resources/list", None, {"resources": [res(1)], "nextCursor": "a"})
             .call("resources/list", {"cursor": "a"}, {"resources": [res(2), res(3), res(4), res(5)]}))
    assert diff_tapes(g.tape(), again.tape()).verdict == "same"


def test_a_json_rpc_error_that_became_an_is_error_result_is_named_with_both_forms() -> None:
    unknown = {"code": -32603, "message": "Unknown tool: delete_graph"}
    g = base().tool("delete_graph", {}, error=unknown)
    f = base().tool("delete_graph", {}, result={"content": [{"type": "text", "text": "Tool delete_graph not found"}],
                                                "isError": True})
    result = diff_tapes(g.tape(), f.tape())
    assert result.verdict == "structural"
    message = result.drifts[0].findings[0].message
    assert message == 'JSON-RPC error -32603 "Unknown tool: delete_graph" → isError result "Tool delete_graph not found"'
    back = diff_tapes(f.tape(), g.tape()).drifts[0].findings[0].message
    assert back == 'isError result "Tool delete_graph not found" → JSON-RPC error -32603 "Unknown tool: delete_graph"'
    # A real result (no isError) after an error is still "→ result".
    ok = base().tool("delete_graph", {}, "deleted")
    assert diff_tapes(g.tape(), ok.tape()).drifts[0].findings[0].message.endswith("→ result")


def test_arrays_of_objects_with_a_natural_key_are_aligned_by_it() -> None:
    from mcptape.diff.values import changes

    tape = {"type": "entity", "name": "tape", "entityType": "thing", "observations": ["recorded"]}
    visitor = {"type": "entity", "name": "visitor", "entityType": "person", "observations": ["came by"]}
    # One entity inserted at the front of a graph (server-memory's read_graph) is one added entity.
    (added,) = changes({"entities": [tape]}, {"entities": [visitor, tape]}, "result")
    assert (added.kind, added.path, added.after) == ("added", "result.entities[0]", visitor)
    # ... in the JSON text copy too.
    text = changes({"t": json.dumps({"entities": [tape]})}, {"t": json.dumps({"entities": [visitor, tape]})}, "r")
    assert [(c.kind, c.path) for c in text] == [("added", "r.t(json).entities[0]")]
    # A changed entity is found under its new place; a removed one at its old place.
    older = dict(tape, observations=["recorded", "again"])
    found = changes({"e": [visitor, tape]}, {"e": [older]}, "r")
    assert [(c.kind, c.path) for c in found] == [("added", "r.e[0].observations[1]"), ("removed", "r.e[0]")]
    # The same items in another order: one change that says so.
    (order,) = changes({"e": [tape, visitor]}, {"e": [visitor, tape]}, "r")
    assert order.note == "the same items by name, in another order"
    # No item kept (a tool's one text content changed): by position, one change, not removed + added.
    (text_changed,) = changes({"c": [{"text": "a", "type": "text"}]}, {"c": [{"text": "b", "type": "text"}]}, "r")
    assert (text_changed.kind, text_changed.path) == ("changed", "r.c[0].text")
    # No key (duplicates, or not objects): by position, as before.
    assert [c.path for c in changes({"e": [1, 2]}, {"e": [0, 1, 2]}, "r")] == ["r.e[0]", "r.e[1]", "r.e[2]"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_racing_notification_on_one_side_counts_as_output_except_outside_a_request_over_http(transport: str) -> None:
    """Over streamable HTTP a list_changed sent outside a request reaches only a client holding a GET
    stream open in time: one side's extra one is said at info. Over stdio every client gets it: output."""
    def tape(with_notification: bool) -> Tape:
        b = TapeBuilder()
        if with_notification:
            b.notify("notifications/tools/list_changed", None)
        b.tool("add", {"a": 2, "b": 3}, "5")
        t = b.tape()
        t.header["transport"] = transport
        return t

    result = diff_tapes(tape(False), tape(True))
    assert "notifications/tools/list_changed sent now" in result.drifts[0].one_line()
    assert result.exit_code == (0 if transport == "http" else 1)
    assert (result.first is None) == (transport == "http")  # an info note never heads the diff
    changed = tape(True)
    answer = next(e for e in changed.events if e.get("method") == "tools/call" and e["kind"] == "response")
    answer["msg"]["result"]["content"][0]["text"] = "6"  # a real change still differs over HTTP
    assert diff_tapes(tape(True), changed).exit_code == 1
