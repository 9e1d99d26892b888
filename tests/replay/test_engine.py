"""Replay engine: content matching, near misses, anchoring, server requests, byte fidelity.

The engine is pure (a line in, lines out), so tapes are built here with EventBuilder from
literal wire lines; the few tests that need the command itself spawn `mcptape play`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcptape.errors import ReplayError
from mcptape.replay.engine import ReplayEngine
from mcptape.replay.matching import describe_call, json_diff
from mcptape.tape.events import EventBuilder, exit_event, stderr_event
from mcptape.tape.format import Tape, make_header, tape_bytes
from tests.conftest import mcptape_command


def make_tape(*lines: Any, complete: bool = True) -> Tape:
    """A tape from ("c2s"|"s2c", wire text or message) pairs; plain dicts pass as events."""
    b = EventBuilder()
    events = []
    for item in lines:
        if isinstance(item, dict):
            events.append(item)
            continue
        direction, msg = item
        text = msg if isinstance(msg, str) else json.dumps(msg, separators=(",", ":"))
        events.append(b.line(direction, text.encode("utf-8")))
    footer = {"mcptape": "end", "events": len(events)} if complete else None
    return Tape(header=make_header("t"), events=events, footer=footer)


def req(i: Any, method: str, params: Any = None) -> dict[str, Any]:
    m: dict[str, Any] = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    return m


def res(i: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "result": result}


def note(method: str, params: Any = None) -> dict[str, Any]:
    m: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    return m


def call(i: Any, name: str, **arguments: Any) -> dict[str, Any]:
    return req(i, "tools/call", {"name": name, "arguments": arguments})


def text(t: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": t}], "isError": False}


def ask(engine: ReplayEngine, msg: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in engine.handle(json.dumps(msg))]


def test_reordered_parallel_calls_match_by_content() -> None:
    tape = make_tape(
        ("c2s", call(1, "add", a=1, b=2)),
        ("c2s", call(2, "add", a=3, b=4)),
        ("s2c", res(2, text("7"))),
        ("s2c", res(1, text("3"))),
    )
    engine = ReplayEngine(tape)
    assert ask(engine, call(10, "add", a=3, b=4)) == [res(10, text("7"))]
    assert ask(engine, call(11, "add", a=1, b=2)) == [res(11, text("3"))]
    report = engine.report()
    assert report.exit_code == 0 and report.misses == [] and report.unused == []
    # Positive control: the same tape asked one changed argument misses, and says so.
    engine = ReplayEngine(tape)
    assert ask(engine, call(10, "add", a=3, b=4)) == [res(10, text("7"))]
    [miss] = ask(engine, call(11, "add", a=1, b=5))
    assert "arguments.b differs: 2 recorded, 5 asked" in miss["error"]["message"]
    assert engine.report().exit_code == 1


def test_identical_repeats_consume_in_order_then_miss() -> None:
    tape = make_tape(
        ("c2s", call(1, "counter")),
        ("s2c", res(1, text("1"))),
        ("c2s", call(2, "counter")),
        ("s2c", res(2, text("2"))),
    )
    engine = ReplayEngine(tape)
    assert ask(engine, call("a", "counter"))[0]["result"] == text("1")
    assert ask(engine, call("b", "counter"))[0]["result"] == text("2")
    [third] = ask(engine, call("c", "counter"))
    assert third["id"] == "c"
    assert "already answered (the tape holds 2 such call(s))" in third["error"]["message"]
    assert engine.report().exit_code == 1


def test_near_miss_error_names_nearest_calls_and_why() -> None:
    tape = make_tape(
        ("c2s", call(1, "add", a=2, b=3)),
        ("s2c", res(1, text("5"))),
        ("c2s", call(2, "divide", a=2, b=4)),
        ("s2c", res(2, text("0.5"))),
    )
    engine = ReplayEngine(tape)
    [answer] = ask(engine, call(7, "add", a=2, b=4))
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32603
    assert answer["error"]["data"]["mcptape"] == "replay-miss"
    message = answer["error"]["message"]
    # The same tool comes first, with the argument that differs; the other tool after it.
    assert 'tools/call add {"a":2,"b":3} (line 2): arguments.b differs: 3 recorded, 4 asked' in message
    assert message.index("tools/call add") < message.index("tools/call divide")
    assert "name differs" in message
    report = engine.report()
    assert report.exit_code == 1
    assert report.misses[0].call == 'tools/call add {"a":2,"b":4}'
    assert any("tools/call add" in u for u in report.unused)
    assert "arguments.b differs" in report.render()


def test_missing_and_extra_arguments_are_named() -> None:
    assert json_diff({"arguments": {"a": 1, "c": 2}}, {"arguments": {"a": 1, "b": 2}}) == [
        "arguments.c: recorded 2, not asked",
        "arguments.b: asked 2, not recorded",
    ]


def test_unknown_method_miss_lists_what_the_tape_holds() -> None:
    engine = ReplayEngine(make_tape(("c2s", req(1, "tools/list")), ("s2c", res(1, {"tools": []}))))
    [answer] = ask(engine, req(2, "resources/list"))
    assert "no resources/list request at all (it holds: tools/list)" in answer["error"]["message"]


def test_lenient_answers_the_closest_recording_of_the_same_tool_and_exits_1() -> None:
    tape = make_tape(
        ("c2s", call(1, "add", a=2, b=3)),
        ("s2c", res(1, text("5"))),
        ("c2s", call(2, "echo", text="hi")),
        ("s2c", res(2, text("hi"))),
    )
    said: list[str] = []
    engine = ReplayEngine(tape, lenient=True, say=said.append)
    assert ask(engine, call(9, "add", a=2, b=4)) == [res(9, text("5"))]
    report = engine.report()
    assert report.exit_code == 1  # answered, but with another call's recording: not a clean replay
    [line] = said
    assert 'lenient: tools/call add {"a":2,"b":4} answered with tools/call add {"a":2,"b":3}' in line
    [sub] = report.substitutions
    assert "arguments.b differs: 3 recorded, 4 asked" in sub.why
    assert sub.substituted is not None and sub.substituted.startswith("tools/call add")
    # lenient does not invent methods the tape never saw
    [answer] = ask(engine, req(10, "prompts/list"))
    assert "error" in answer
    assert engine.report().exit_code == 1


def test_lenient_never_answers_with_another_tools_recording() -> None:
    # The case: add(2,3) is used, add(2,4) is asked; the nearest *unused* recording is
    # echo's (and divide's error), which must not answer an add.
    tape = make_tape(
        ("c2s", call(1, "add", a=2, b=3)),
        ("s2c", res(1, text("5"))),
        ("c2s", call(2, "echo", message="hi")),
        ("s2c", res(2, text("hi"))),
        ("c2s", call(3, "divide", a=1, b=0)),
        ("s2c", {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "Division by zero"}}),
    )
    strict = ReplayEngine(tape)
    lenient = ReplayEngine(tape, lenient=True)
    for engine in (strict, lenient):
        assert ask(engine, call(1, "add", a=2, b=3)) == [res(1, text("5"))]
    # A used recording of the same tool is still a substitute: said, and exit 1.
    assert ask(lenient, call(2, "add", a=2, b=4)) == [res(2, text("5"))]
    [sub] = lenient.report().substitutions
    assert sub.substituted is not None and sub.substituted.startswith('tools/call add {"a":2,"b":3}')
    # A tool the tape recorded only under other names gets a miss, never echo's or divide's answer.
    for engine in (strict, lenient):
        [answer] = ask(engine, call(3, "multiply", a=2, b=4))
        assert "result" not in answer and answer["error"]["code"] == -32603, answer
    [answer] = ask(lenient, call(4, "multiply", a=2, b=4))
    assert "--lenient substitutes only another recording of tools/call multiply" in answer["error"]["message"]
    assert lenient.report().exit_code == 1


def test_lenient_substitutes_only_within_the_method_asked() -> None:
    tape = make_tape(("c2s", req(1, "prompts/get", {"name": "explain"})), ("s2c", res(1, {"messages": []})))
    engine = ReplayEngine(tape, lenient=True)
    [answer] = ask(engine, call(2, "explain"))  # a tools/call of the prompt's name
    assert answer["error"]["code"] == -32603
    assert "no tools/call request at all" in answer["error"]["message"]


def test_ignore_arg_leaves_a_volatile_argument_out_of_matching() -> None:
    tape = make_tape(
        ("c2s", call(1, "log", text="a", ts="2026-01-01T00:00:00Z", meta={"request_id": "r1"})),
        ("s2c", res(1, text("logged a"))),
    )
    asked = call(7, "log", text="a", ts="2026-12-02T01:00:00Z", meta={"request_id": "r9"})
    [miss] = ask(ReplayEngine(tape), asked)
    assert "arguments.ts differs" in miss["error"]["message"]
    engine = ReplayEngine(tape, ignore=("ts", "$.arguments.meta.request_id"))
    assert ask(engine, asked) == [res(7, text("logged a"))]
    assert engine.report().exit_code == 0
    # Only what is named is ignored: another argument still decides.
    [miss] = ask(ReplayEngine(tape, ignore=("ts", "request_id")), call(8, "log", text="b", ts="x", meta={"request_id": "y"}))
    assert 'arguments.text differs: "a" recorded, "b" asked' in miss["error"]["message"]


def test_an_invalid_ignore_path_is_refused_up_front() -> None:
    tape = make_tape(("c2s", call(1, "a")), ("s2c", res(1, text("x"))))
    with pytest.raises(ReplayError, match="--ignore-arg '\\$\\.\\[': "):
        ReplayEngine(tape, ignore=("$.[",))


def test_match_on_name_matches_a_tool_whatever_its_arguments_but_not_another_tool() -> None:
    from mcptape.replay.matching import match_on_name_only

    tape = make_tape(
        ("c2s", call(1, "add", a=2, b=3)),
        ("s2c", res(1, text("5"))),
        ("c2s", call(2, "echo", message="hi")),
        ("s2c", res(2, text("hi"))),
    )
    engine = ReplayEngine(tape, match_on=match_on_name_only())
    assert ask(engine, call(5, "add", a=9, b=9)) == [res(5, text("5"))]
    [miss] = ask(engine, call(6, "sub", a=9, b=9))
    assert 'name differs: "add" recorded, "sub" asked' in miss["error"]["message"]
    # Used once: a second add needs --allow-reuse.
    [miss] = ask(engine, call(7, "add", a=1, b=1))
    assert "already answered" in miss["error"]["message"]
    reusing = ReplayEngine(tape, match_on=match_on_name_only(), allow_reuse=True)
    for i in (8, 9, 10):
        assert ask(reusing, call(i, "add", a=i, b=1)) == [res(i, text("5"))]
    assert reusing.report().exit_code == 0


def test_allow_reuse_answers_an_exact_repeat_from_the_used_recording() -> None:
    tape = make_tape(("c2s", req(1, "tools/list")), ("s2c", res(1, {"tools": []})))
    strict = ReplayEngine(tape)
    assert ask(strict, req(1, "tools/list")) == [res(1, {"tools": []})]
    [miss] = ask(strict, req(2, "tools/list"))
    assert "already answered" in miss["error"]["message"]
    reusing = ReplayEngine(tape, allow_reuse=True)
    assert ask(reusing, req(1, "tools/list")) == [res(1, {"tools": []})]
    assert ask(reusing, req(2, "tools/list")) == [res(2, {"tools": []})]
    assert reusing.report().exit_code == 0


def test_notifications_are_emitted_where_they_were_recorded() -> None:
    tape = make_tape(
        ("c2s", req(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "a"}})),
        ("s2c", res(0, {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s"}})),
        ("c2s", note("notifications/initialized")),
        ("s2c", note("notifications/tools/list_changed")),
        ("s2c", note("notifications/tools/list_changed")),
        ("c2s", req(1, "tools/call", {"name": "slow", "arguments": {}, "_meta": {"progressToken": 1}})),
        ("s2c", note("notifications/progress", {"progressToken": 1, "progress": 1})),
        ("s2c", res(1, text("slept"))),
        ("s2c", note("notifications/message", {"level": "info", "data": "done"})),
    )
    engine = ReplayEngine(tape)
    assert engine.pending_startup() == []
    [init] = ask(engine, req(5, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b"}}))
    assert init["id"] == 5 and init["result"]["serverInfo"] == {"name": "s"}
    got = ask(engine, note("notifications/initialized"))
    assert [m["method"] for m in got] == ["notifications/tools/list_changed"] * 2
    got = ask(engine, req(42, "tools/call", {"name": "slow", "arguments": {}, "_meta": {"progressToken": "tok"}}))
    assert [m.get("method", "response") for m in got] == ["notifications/progress", "response", "notifications/message"]
    # _meta (and the progress token in it) did not prevent the match; the token follows the live one
    assert got[0]["params"] == {"progressToken": "tok", "progress": 1}
    assert got[1] == res(42, text("slept"))
    assert engine.report().exit_code == 0


def test_meta_is_ignored_when_matching() -> None:
    tape = make_tape(
        ("c2s", req(1, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})),
        ("s2c", res(1, {"tools": []})),
    )
    engine = ReplayEngine(tape)
    assert ask(engine, req(2, "tools/list")) == [res(2, {"tools": []})]


def test_json_equal_numbers_match_but_booleans_do_not() -> None:
    tape = make_tape(
        ("c2s", call(1, "add", a=2, b=3)),
        ("s2c", res(1, text("5"))),
        ("c2s", call(2, "flag", on=1)),
        ("s2c", res(2, text("on"))),
    )
    engine = ReplayEngine(tape)
    assert ask(engine, call(3, "add", a=2.0, b=3))[0]["result"] == text("5")
    [answer] = ask(engine, call(4, "flag", on=True))
    assert "arguments.on differs: 1 recorded, true asked" in answer["error"]["message"]


def test_initialize_ignores_client_info_and_notes_capabilities() -> None:
    tape = make_tape(
        ("c2s", req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}}, "clientInfo": {"name": "rec", "version": "1"}})),
        ("s2c", res(0, {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s"}})),
    )
    engine = ReplayEngine(tape)
    [init] = ask(engine, req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "other", "version": "9"}}))
    assert "result" in init
    report = engine.report()
    assert report.exit_code == 0
    assert any("capabilities" in w for w in report.warnings)


def test_initialize_with_another_protocol_version_gets_the_recorded_answer() -> None:
    tape = make_tape(
        ("c2s", req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "a"}})),
        ("s2c", res(0, {"protocolVersion": "2025-11-25"})),
    )
    # A server answers with a version it supports; the client decides whether it can live with it.
    asked = {"protocolVersion": "2024-11-05", "capabilities": {}}
    assert ask(ReplayEngine(tape), req(0, "initialize", asked)) == [res(0, {"protocolVersion": "2025-11-25"})]
    # Other params of initialize still decide (a field no client sends is not waved through).
    [answer] = ask(ReplayEngine(tape), req(0, "initialize", {**asked, "extra": 1}))
    assert "extra: asked 1, not recorded" in answer["error"]["message"]


def test_ping_is_always_answered() -> None:
    engine = ReplayEngine(make_tape(("c2s", req(1, "tools/list")), ("s2c", res(1, {"tools": []}))))
    assert ask(engine, req("p", "ping")) == [res("p", {})]
    assert engine.report().exit_code == 0


def test_replay_is_byte_identical_with_only_the_id_rewritten() -> None:
    raw = '{"result" : {"z": 1,  "a": ["é", 2.50], "id": 7},\t"jsonrpc":"2.0", "id" : 7 }'
    tape = make_tape(("c2s", call(7, "odd")), ("s2c", raw))
    engine = ReplayEngine(tape)
    [line] = engine.handle(json.dumps(call("live-1", "odd")))
    # Only the top-level id changed; the nested "id" in the result and all spacing stayed.
    assert line == '{"result" : {"z": 1,  "a": ["é", 2.50], "id": 7},\t"jsonrpc":"2.0", "id" : "live-1" }'


def test_server_requests_are_reissued_and_the_answer_absorbed() -> None:
    sampling = req(0, "sampling/createMessage", {"messages": [], "maxTokens": 10})
    answer = res(0, {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"})
    tape = make_tape(
        ("c2s", call(0, "sample")),
        ("s2c", sampling),
        ("c2s", answer),
        ("s2c", note("notifications/message", {"data": "got it"})),
        ("s2c", res(0, text("LLM said hi"))),
    )
    engine = ReplayEngine(tape)
    # The server request goes out with its recorded id; the tool's answer waits for the client.
    assert ask(engine, call(5, "sample")) == [sampling]
    got = ask(engine, answer)
    assert got == [note("notifications/message", {"data": "got it"}), res(5, text("LLM said hi"))]
    assert engine.report().exit_code == 0


def test_a_client_answer_that_differs_from_the_recording_is_reported() -> None:
    tape = make_tape(
        ("c2s", call(0, "roots")),
        ("s2c", req(0, "roots/list")),
        ("c2s", res(0, {"roots": [{"uri": "file:///a"}]})),
        ("s2c", res(0, text("a"))),
    )
    engine = ReplayEngine(tape)
    assert ask(engine, call(1, "roots")) == [req(0, "roots/list")]
    assert ask(engine, res(0, {"roots": []})) == [res(1, text("a"))]
    [miss] = engine.report().misses
    assert "roots/list" in miss.why and "result.roots" in miss.why


def test_server_reusing_request_ids_cannot_be_replayed() -> None:
    tape = make_tape(
        ("c2s", call(0, "x")),
        ("s2c", req(0, "roots/list")),
        ("c2s", res(0, {"roots": []})),
        ("s2c", req(0, "roots/list")),
        ("c2s", res(0, {"roots": []})),
        ("s2c", res(0, text("x"))),
    )
    with pytest.raises(ReplayError, match="reused request id 0"):
        ReplayEngine(tape)


def test_a_tape_without_requests_cannot_be_replayed() -> None:
    with pytest.raises(ReplayError, match="no client requests"):
        ReplayEngine(make_tape(("s2c", note("notifications/message"))))


def test_startup_lines_and_garbage_are_sent_where_recorded() -> None:
    tape = make_tape(
        ("s2c", note("notifications/message", {"data": "booting"})),
        ("c2s", call(1, "garbage")),
        ("s2c", "this is not json"),
        ("s2c", res(1, text("after garbage"))),
    )
    engine = ReplayEngine(tape)
    assert [json.loads(x)["method"] for x in engine.pending_startup()] == ["notifications/message"]
    assert engine.pending_startup() == []
    lines = engine.handle(json.dumps(call(2, "garbage")))
    assert lines[0] == "this is not json"
    assert json.loads(lines[1]) == res(2, text("after garbage"))


def test_server_crash_mid_call_closes_the_wire() -> None:
    tape = make_tape(
        ("c2s", call(1, "add", a=1, b=1)),
        ("s2c", res(1, text("2"))),
        ("c2s", call(2, "crash")),
        stderr_event(b"crashing on purpose"),
        exit_event(3),
    )
    engine = ReplayEngine(tape)
    assert ask(engine, call(1, "add", a=1, b=1))[0]["result"] == text("2")
    assert not engine.closed
    assert ask(engine, call(2, "crash")) == []
    assert engine.closed


def test_exit_after_the_session_is_not_replayed() -> None:
    tape = make_tape(("c2s", call(1, "add", a=1, b=1)), ("s2c", res(1, text("2"))), exit_event(0))
    engine = ReplayEngine(tape)
    ask(engine, call(1, "add", a=1, b=1))
    assert not engine.closed


def test_cut_short_tape_answers_a_lost_response_with_an_error() -> None:
    tape = make_tape(("c2s", call(1, "add", a=1, b=1)), ("s2c", res(1, text("2"))), ("c2s", call(2, "echo", text="x")), complete=False)
    engine = ReplayEngine(tape)
    assert ask(engine, call(1, "add", a=1, b=1))[0]["result"] == text("2")
    [answer] = ask(engine, call(2, "echo", text="x"))
    assert "cut short" in answer["error"]["message"]


def test_garbage_from_the_client_gets_a_parse_error() -> None:
    engine = ReplayEngine(make_tape(("c2s", req(1, "tools/list")), ("s2c", res(1, {}))))
    [answer] = ask_raw(engine, "{not json")
    assert answer["error"]["code"] == -32700 and answer["id"] is None


def ask_raw(engine: ReplayEngine, line: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in engine.handle(line)]


def test_describe_call() -> None:
    assert describe_call("tools/call", {"name": "add", "arguments": {"a": 1}, "_meta": {"x": 1}}) == 'tools/call add {"a":1}'
    assert describe_call("resources/read", {"uri": "calc://constants"}) == "resources/read calc://constants"
    assert describe_call("tools/list", None) == "tools/list"


# --- the command, as a real process ------------------------------------------------------


def _write_tape(path: Path, tape: Tape) -> None:
    path.write_bytes(tape_bytes(tape.header, tape.events))


def test_play_unknown_tape_format_exits_3_and_says_why(tmp_path: Path) -> None:
    tape = tmp_path / "future.tape.jsonl"
    tape.write_text('{"mcptape":"tape","format":99,"version":"9.0.0","name":"x"}\n', encoding="utf-8")
    proc = subprocess.run(mcptape_command("play", str(tape)), input=b"", capture_output=True, timeout=30)
    assert proc.returncode == 3  # could not run, not drift
    err = proc.stderr.decode()
    assert "format 99" in err and "re-record" in err
    assert proc.stdout == b""


def test_play_serves_stdio_and_reports_misses_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "calc.tape.jsonl"
    _write_tape(
        path,
        make_tape(
            ("c2s", call(1, "add", a=2, b=3)),
            ("s2c", res(1, text("5"))),
            ("c2s", call(2, "echo", text="unused")),
            ("s2c", res(2, text("unused"))),
        ),
    )
    stdin = (json.dumps(call(1, "add", a=2, b=3)) + "\n" + json.dumps(call(2, "add", a=2, b=4)) + "\n").encode()
    proc = subprocess.run(mcptape_command("play", str(path)), input=stdin, capture_output=True, timeout=30)
    assert proc.returncode == 1, proc.stderr
    first, second = (json.loads(x) for x in proc.stdout.decode().splitlines())
    assert first == res(1, text("5"))
    assert "arguments.b differs: 3 recorded, 4 asked" in second["error"]["message"]
    err = proc.stderr.decode()
    assert "1 miss(es)" in err and 'tools/call echo {"text":"unused"}' in err

    clean = subprocess.run(
        mcptape_command("play", str(path)),
        input=(json.dumps(call(9, "add", a=2, b=3)) + "\n").encode(),
        capture_output=True,
        timeout=30,
    )
    assert clean.returncode == 0, clean.stderr
    assert json.loads(clean.stdout) == res(9, text("5"))


# --- redacted tapes: placeholders in recorded requests match the live secret ------------------

TOKEN = "ghp_" + "Xk3v9QzR7mW2pL8sT4nB6yH1cJ5dF0gA2eK7"  # GitHub-shaped, generated for the test
PLACEHOLDER = "<REDACTED:github-token#1a2b3c4d>"


def redacted_tape() -> Tape:
    return make_tape(
        ("c2s", call(1, "login", token=PLACEHOLDER, user="alice")),
        ("s2c", res(1, text("welcome alice"))),
        ("c2s", call(2, "fetch", auth=f"Bearer {PLACEHOLDER}", path="<HOME>/repo")),
        ("s2c", res(2, text("fetched"))),
    )


def test_a_redacted_recorded_value_matches_the_live_secret() -> None:
    engine = ReplayEngine(redacted_tape())
    assert ask(engine, call(7, "login", token=TOKEN, user="alice")) == [res(7, text("welcome alice"))]
    # A placeholder inside a longer string: only it is a wildcard, the rest stays literal.
    assert ask(engine, call(8, "fetch", auth=f"Bearer {TOKEN}", path="/home/ci/repo")) == [res(8, text("fetched"))]
    assert engine.report().exit_code == 0


def test_a_live_call_that_differs_elsewhere_misses_without_echoing_the_secret() -> None:
    engine = ReplayEngine(redacted_tape())
    [answer] = ask(engine, call(7, "login", token=TOKEN, user="bob"))
    message = answer["error"]["message"]
    assert 'arguments.user differs: "alice" recorded, "bob" asked' in message
    assert "arguments.token: matches only modulo a redacted value" in message
    assert TOKEN not in message and TOKEN[4:] not in message
    assert PLACEHOLDER in message  # the live call is described as the tape shows it
    report = engine.report()
    assert report.exit_code == 1
    assert TOKEN not in report.render() and TOKEN not in json.dumps(report.to_dict())


def test_a_live_value_that_does_not_fit_the_redacted_pattern_misses_and_is_not_shown() -> None:
    engine = ReplayEngine(redacted_tape())
    [answer] = ask(engine, call(7, "fetch", auth=f"Token {TOKEN}", path="/home/ci/repo"))
    message = answer["error"]["message"]
    assert "arguments.auth differs" in message and "not shown: redacted on the tape" in message
    assert "arguments.path: matches only modulo a redacted value" in message
    assert TOKEN not in message and TOKEN not in engine.report().render()


def test_a_placeholder_stands_for_a_non_empty_run_only() -> None:
    engine = ReplayEngine(redacted_tape())
    [answer] = ask(engine, call(7, "login", token="", user="alice"))
    assert answer["error"]["data"]["mcptape"] == "replay-miss"


def test_a_secret_sent_where_nothing_was_redacted_is_scrubbed_from_the_miss() -> None:
    engine = ReplayEngine(make_tape(("c2s", call(1, "add", a=1, b=2)), ("s2c", res(1, text("3")))))
    [answer] = ask(engine, call(7, "add", a=1, b=2, key=TOKEN))
    message = answer["error"]["message"]
    assert "arguments.key: asked" in message and TOKEN not in message
    assert TOKEN not in engine.report().render()


def test_replay_reads_the_placeholders_the_redactor_writes_as_patterns() -> None:
    from mcptape.placeholders import placeholder_pattern
    from mcptape.redact.redactor import Redactor

    recorded = Redactor(known={"env.CALC_TOKEN": "s3cr3t-value-1"}).redact_text("a.b+s3cr3t-value-1(c)")
    assert recorded == "a.b+<REDACTED:env.CALC_TOKEN>(c)"
    pattern = placeholder_pattern(recorded)
    assert pattern is not None
    assert pattern.fullmatch("a.b+s3cr3t(c)") and not pattern.fullmatch("aXb+s3cr3t(c)")
    tagged = Redactor().redact_text("token ghp_" + "A1b2C3d4E5" * 4)
    assert tagged.startswith("token <REDACTED:github-token#")
    assert placeholder_pattern(tagged).fullmatch("token ghp_another0token")  # type: ignore[union-attr]
    assert placeholder_pattern("no placeholder <REDACTED> here") is None


# --- stdio play streams the tape: the first answer does not wait for the whole of it ----------


def _long_tape(path: Path, calls: int) -> Tape:
    lines: list[Any] = [("c2s", req(0, "initialize", {"protocolVersion": "2025-06-18"})), ("s2c", res(0, {"ok": 1}))]
    lines.append(("c2s", note("notifications/initialized")))
    for i in range(1, calls + 1):
        lines += [("c2s", call(i, "add", a=i, b=1)), ("s2c", res(i, text(str(i + 1))))]
    tape = make_tape(*lines)
    _write_tape(path, tape)
    return tape


def test_a_streamed_tape_answers_before_it_is_read_and_replays_like_a_loaded_one(tmp_path: Path) -> None:
    from mcptape.replay.engine import load_tape
    from mcptape.tape.reader import TapeStream

    path = tmp_path / "long.tape.jsonl"
    _long_tape(path, 500)
    stream = TapeStream(str(path))
    assert stream.streamable and stream.tape.complete and stream.event_count == 1003
    streamed = ReplayEngine(stream.tape, stream=stream)
    loaded = ReplayEngine(load_tape(str(path)))
    assert streamed.pending_startup() == loaded.pending_startup() == []
    first = req(5, "initialize", {"protocolVersion": "2025-06-18"})
    assert ask(streamed, first) == ask(loaded, first) == [res(5, {"ok": 1})]
    assert len(stream.tape.events) < 1003  # answered from the first batch
    for engine in (streamed, loaded):
        engine.handle(json.dumps(note("notifications/initialized")))
    for i in (3, 1, 500, 2, 250):  # out of order too: by content, not position
        assert ask(streamed, call(i, "add", a=i, b=1)) == ask(loaded, call(i, "add", a=i, b=1))
    assert ask(streamed, call(9, "add", a=1, b=1)) == ask(loaded, call(9, "add", a=1, b=1))  # a miss
    assert streamed.report().to_dict() == loaded.report().to_dict()
    assert len(streamed.report().unused) == 495


def test_lookahead_between_requests_reads_and_keys_the_whole_tape_without_changing_answers(tmp_path: Path) -> None:
    from mcptape.replay.engine import load_tape
    from mcptape.tape.reader import TapeStream

    path = tmp_path / "long.tape.jsonl"
    _long_tape(path, 300)
    stream = TapeStream(str(path))
    ahead = ReplayEngine(stream.tape, stream=stream)
    loaded = ReplayEngine(load_tape(str(path)))
    first = req(0, "initialize", {"protocolVersion": "2025-06-18"})
    assert ask(ahead, first) == ask(loaded, first)
    steps = 0
    for i in (1, 300, 2, 150):  # idle time between requests, a little each time
        for _ in range(3):
            steps += ahead.lookahead()
        assert ask(ahead, call(i, "add", a=i, b=1)) == ask(loaded, call(i, "add", a=i, b=1))
    while ahead.lookahead():
        steps += 1
    assert steps > 3 and len(stream.tape.events) == 603
    assert all(c.key is not None for c in ahead.calls if c.method == "tools/call")
    assert not ahead.lookahead()  # nothing left: the stdio loop goes back to blocking reads
    assert ask(ahead, call(7, "add", a=7, b=1)) == ask(loaded, call(7, "add", a=7, b=1))
    assert ahead.report().to_dict() == loaded.report().to_dict()


def test_client_lines_tell_whether_a_line_is_due_without_blocking() -> None:
    import os

    from mcptape.replay.stdio import ClientLines

    r, w = os.pipe()
    try:
        lines = ClientLines(r)
        assert not lines.waiting()
        os.write(w, b'{"a":1}\n{"b":')
        assert lines.waiting()
        assert lines.readline() == b'{"a":1}\n'
        assert not lines.waiting()  # half a line read, the rest not sent yet: time for other work
        os.write(w, b"2}\n")
        assert lines.waiting()
        assert lines.readline() == b'{"b":2}\n'
        assert not lines.waiting()
        os.write(w, b"tail without newline")
        os.close(w)
        w = -1
        assert lines.waiting()
        assert lines.readline() == b"tail without newline"
        assert lines.waiting() and lines.readline() == b""
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


def test_play_of_a_tape_corrupt_in_the_middle_stops_with_exit_2_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "long.tape.jsonl"
    _long_tape(path, 300)
    lines = path.read_bytes().split(b"\n")
    lines[400] = b'{"kind":"response", oops'
    path.write_bytes(b"\n".join(lines))
    init = json.dumps(req(0, "initialize", {"protocolVersion": "2025-06-18"})) + "\n"
    late = json.dumps(call(290, "add", a=290, b=1)) + "\n"
    # The seal finds the changed line up front: nothing is answered from the tape.
    proc = subprocess.run(
        mcptape_command("play", str(path)), input=(init + late).encode(), capture_output=True, timeout=30
    )
    assert proc.returncode == 3 and proc.stdout == b""
    assert f"{path}:401: this line is not the one sealed".encode() in proc.stderr
    # Read anyway (--allow-edited), the streamed reader meets the line only when it gets there.
    proc = subprocess.run(
        mcptape_command("play", str(path), "--allow-edited"), input=(init + late).encode(), capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 3
    assert b"--allow-edited: " in proc.stderr
    assert f"{path}:401: line is not a JSON object".encode() in proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])["result"] == {"ok": 1}  # answered before it got there


def test_play_refuses_a_tape_whose_server_reuses_request_ids_up_front(tmp_path: Path) -> None:
    tape = make_tape(
        ("c2s", call(1, "a")),
        ("s2c", req(0, "roots/list")),
        ("c2s", res(0, {"roots": []})),
        ("s2c", req(0, "roots/list")),
        ("c2s", res(0, {"roots": []})),
        ("s2c", res(1, text("x"))),
    )
    path = tmp_path / "reuse.tape.jsonl"
    _write_tape(path, tape)
    proc = subprocess.run(mcptape_command("play", str(path)), input=b"", capture_output=True, timeout=30)
    assert proc.returncode == 3 and b"reused request id 0" in proc.stderr


def test_a_matcher_given_to_one_engine_decides_there_only() -> None:
    from mcptape.replay.matching import default_matchers

    tape = make_tape(("c2s", call(1, "add", a=1, b=2)), ("s2c", res(1, text("3"))))

    def any_arguments(recorded: Any, asked: Any) -> list[str]:
        return [] if recorded.get("name") == asked.get("name") else ["another tool"]

    lax = ReplayEngine(tape, match_on={"tools/call": ("any",)}, matchers={**default_matchers(), "any": any_arguments})
    [answer] = ask(lax, call(5, "add", a=9, b=9))
    assert answer["result"] == text("3")
    [miss] = ask(ReplayEngine(tape), call(5, "add", a=9, b=9))
    assert "error" in miss
    with pytest.raises(ReplayError, match="unknown matcher 'any'"):
        ReplayEngine(tape, match_on={"tools/call": ("any",)})


@pytest.mark.parametrize(
    "content, why",
    [
        (None, "No such file"),
        (b"\x00\xff not a tape\n", "not"),
        (b'{"mcptape":"tape","format":1,"version":"0.1.0","name":"x"}\n{"mcptape":"end","events":0}\n', "no client requests"),
    ],
    ids=["missing", "garbage", "empty"],
)
def test_play_of_a_missing_unreadable_or_empty_tape_exits_3(tmp_path: Path, content: bytes | None, why: str) -> None:
    tape = tmp_path / "t.tape.jsonl"
    if content is not None:
        tape.write_bytes(content)
    for extra in ([], ["--listen", "127.0.0.1:0"]):
        proc = subprocess.run(mcptape_command("play", str(tape), *extra), input=b"", capture_output=True, timeout=30)
        assert proc.returncode == 3, (extra, proc.stderr)
        assert why in proc.stderr.decode() and b"Traceback" not in proc.stderr
        assert proc.stdout == b""


INIT_RECORDED = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcptape", "version": "0.1.0"}}
INIT_ANSWER = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "calc", "version": "1"}}


def test_initialize_asking_any_version_gets_the_version_the_recorded_server_negotiated() -> None:
    tape = make_tape(
        ("c2s", req(1, "initialize", INIT_RECORDED)),
        ("s2c", res(1, INIT_ANSWER)),
        ("c2s", note("notifications/initialized")),
        ("c2s", req(2, "tools/list")),
        ("s2c", res(2, {"tools": []})),
    )
    for version in ("2025-11-25", "2024-11-05", "1999-01-01"):
        engine = ReplayEngine(tape)
        asked = {
            "protocolVersion": version,
            "capabilities": {"sampling": {}, "roots": {"listChanged": True}},
            "clientInfo": {"name": "another-client", "version": "9"},
            "_meta": {"io.modelcontextprotocol/related": "x"},
        }
        assert ask(engine, req(0, "initialize", asked)) == [res(0, INIT_ANSWER)]
        assert ask(engine, note("notifications/initialized")) == []
        assert ask(engine, req(1, "tools/list")) == [res(1, {"tools": []})]
        report = engine.report()
        assert report.exit_code == 0 and not report.misses
        assert any(f'asked protocol "{version}"; answered with the recorded server\'s "2025-06-18"' in w for w in report.warnings)
    # What a handshake cannot skip: a second initialize has nothing left to answer with.
    engine = ReplayEngine(tape)
    ask(engine, req(0, "initialize", INIT_RECORDED))
    [again] = ask(engine, req(5, "initialize", INIT_RECORDED))
    assert again["error"]["code"] == -32603 and "already answered" in again["error"]["message"]


DISCOVER_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
DISCOVERED = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete"}


def modern_tape() -> Tape:
    return make_tape(
        ("c2s", req(1, "server/discover", {"_meta": DISCOVER_META})),
        ("s2c", res(1, {**DISCOVERED, "cacheScope": "private", "ttlMs": 0,
                        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "calc", "version": "2"}}})),
        ("c2s", req(2, "tools/list", {"_meta": DISCOVER_META})),
        ("s2c", res(2, {"tools": [], "resultType": "complete", "cacheScope": "private", "ttlMs": 0})),
    )


def test_a_2026_tape_serves_a_legacy_client_and_refuses_initialize_once_discover_was_answered() -> None:
    # Issue 29: as the SDK 2.x server answers a fresh connection's initialize 2025-11-25.
    engine = ReplayEngine(modern_tape())
    [init] = ask(engine, req(0, "initialize", {**INIT_RECORDED, "protocolVersion": "2025-11-25"}))
    assert init == res(0, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "calc", "version": "2"}})
    assert ask(engine, {"jsonrpc": "2.0", "method": "notifications/initialized"}) == []
    assert ask(engine, req(1, "tools/list")) == [res(1, {"tools": []})]  # without the 2026-07-28 envelope
    report = engine.report()
    assert report.exit_code == 0 and report.unused == []
    assert any("answered this legacy client" in w for w in report.warnings)
    # An old client asking 2025-06-18 gets it, as the live server answers.
    [old] = ask(ReplayEngine(modern_tape()), req(0, "initialize", INIT_RECORDED))
    assert old["result"]["protocolVersion"] == "2025-06-18"
    # Once the connection speaks 2026-07-28, initialize is refused with -32022, as its server does,
    # and the 2026-07-28 client gets the recorded answers as they were.
    engine = ReplayEngine(modern_tape())
    [discovered] = ask(engine, req(1, "server/discover", {"_meta": {**DISCOVER_META, "x": 1}}))
    assert discovered["result"]["resultType"] == "complete"
    [refused] = ask(engine, req(0, "initialize", {**INIT_RECORDED, "protocolVersion": "2025-11-25"}))
    assert refused["error"]["code"] == -32022
    assert refused["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2025-11-25"}
    assert ask(engine, req(2, "tools/list", {"_meta": DISCOVER_META})) == [
        res(2, {"tools": [], "resultType": "complete", "cacheScope": "private", "ttlMs": 0})]
    assert engine.report().exit_code == 0  # the refusal came after a session the tape answered


def test_play_exits_1_when_a_handshake_was_answered_only_by_a_made_up_refusal() -> None:
    legacy = ReplayEngine(make_tape(("c2s", req(1, "initialize", INIT_RECORDED)), ("s2c", res(1, INIT_ANSWER))))
    [probe] = ask(legacy, req(0, "server/discover", {"_meta": DISCOVER_META}))
    assert probe["error"]["code"] == -32601
    report = legacy.report()
    assert report.exit_code == 1 and "answered only by a refusal play made up" in report.render()
    # Control: the client falls back to initialize, answered from the tape: the refusal was negotiation.
    assert ask(legacy, req(1, "initialize", INIT_RECORDED)) == [res(1, INIT_ANSWER)]
    assert legacy.report().exit_code == 0 and "clean" in legacy.report().render()
