"""volatility/normalize.py: volatile values -> placeholders, and the canonical order of racing events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcptape.config.models import NormalizeRule
from mcptape.volatility.normalize import (
    CAUSE_KEY,
    Normalizer,
    apply_path,
    canonical_order,
    parse_path,
    session_paths,
    sorted_items,
)


def rule(**kw: Any) -> NormalizeRule:
    return NormalizeRule(**kw)


# -- JSON paths -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "doc", "expected"),
    [
        ("$..ts", {"a": {"ts": 1, "b": [{"ts": 2}]}, "ts": 3}, {"a": {"ts": "X", "b": [{"ts": "X"}]}, "ts": "X"}),
        ("$.a.b", {"a": {"b": 1, "c": 2}, "b": 3}, {"a": {"b": "X", "c": 2}, "b": 3}),
        ("$.a[0]", {"a": [1, 2]}, {"a": ["X", 2]}),
        ("$.a[-1]", {"a": [1, 2]}, {"a": [1, "X"]}),
        ("$.a[*].b", {"a": [{"b": 1, "c": 1}, {"b": 2}]}, {"a": [{"b": "X", "c": 1}, {"b": "X"}]}),
        ("$..a.b", {"x": {"a": {"b": 1}}, "b": 2, "a": {"c": 3}}, {"x": {"a": {"b": "X"}}, "b": 2, "a": {"c": 3}}),
        ("$['key.with.dots']", {"key.with.dots": 1, "key": {"with": 2}}, {"key.with.dots": "X", "key": {"with": 2}}),
        ("$.a.*", {"a": {"x": 1, "y": 2}, "b": 1}, {"a": {"x": "X", "y": "X"}, "b": 1}),
    ],
)
def test_json_path_subset_selects_what_it_says(path: str, doc: object, expected: object) -> None:
    before = json.dumps(doc)
    assert apply_path(doc, parse_path(path), "X") == expected
    assert json.dumps(doc) == before  # the input is never mutated


def test_a_path_that_selects_nothing_changes_nothing() -> None:
    doc = {"a": [1, {"b": 2}]}
    assert apply_path(doc, parse_path("$.a.b"), "X") == doc
    assert apply_path(doc, parse_path("$.a[5]"), "X") == doc


def test_path_rules_are_relative_to_the_message_and_cover_the_params_echo() -> None:
    n = Normalizer([rule(path="$.result.structuredContent.datetime", replace="<NOW>"), rule(path="$.params.seed")])
    response: dict[str, Any] = {
        "kind": "response",
        "dir": "s2c",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "t", "seed": 42},
        "msg": {"jsonrpc": "2.0", "id": 3, "result": {"structuredContent": {"datetime": "now", "x": 1}}},
        "raw": '{"jsonrpc": "2.0", ...}',
    }
    out = n.event(response)
    assert out["msg"]["result"]["structuredContent"] == {"datetime": "<NOW>", "x": 1}
    assert out["params"] == {"name": "t", "seed": "<NORMALIZED>"}
    assert "raw" not in out  # the exact bytes held the volatile value
    assert response["msg"]["result"]["structuredContent"]["datetime"] == "now"


def test_unchanged_event_keeps_its_raw_bytes() -> None:
    event = {"kind": "response", "dir": "s2c", "id": 1, "msg": {"id": 1, "result": {}}, "raw": '{"id": 1, "result": {}}'}
    assert Normalizer().event(event) == event


# -- built-in string rules ------------------------------------------------------------------------


def at(iso: str) -> float:
    """Epoch seconds of an ISO date-time: the `now` a test's Normalizer judges dates against."""
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def test_builtin_rules_replace_timestamps_uuids_and_temp_paths_but_not_protocol_versions() -> None:
    n = Normalizer(now=at("2026-11-29T14:00:00+00:00"))
    text = "at 2026-11-29T13:44:48+00:00 task 123e4567-e89b-12d3-a456-426614174000 in /tmp/tmpab_12/out.txt"
    assert n.text(text) == "at <TIMESTAMP> task <UUID> in <TMP>/out.txt"
    assert n.text("2024-11-05") == "2024-11-05"
    n = Normalizer(now=at("2024-01-02T12:00:00+00:00"))
    assert n.text("2024-01-02 03:04:05.123456") == "<TIMESTAMP>"
    assert n.text("2024-01-02T03:04Z") == "<TIMESTAMP>"
    assert n.text("/var/tmp/x and /home/tmp/y") == "/var/tmp/x and /home/tmp/y"


def test_known_session_paths_win_over_the_generic_temp_rule_and_respect_path_boundaries() -> None:
    paths = {"/tmp/pytest-1/proj": "<CONFIG_DIR>", "/home/dev": "<HOME>", "/tmp/pytest-1/proj/repo": "<REPO>"}
    n = Normalizer(paths=paths)
    assert n.text("/tmp/pytest-1/proj/tapes/x") == "<CONFIG_DIR>/tapes/x"
    assert n.text("file:///tmp/pytest-1/proj/repo/a.py") == "file://<REPO>/a.py"
    assert n.text("/home/dev/.cache and /home/developer") == "<HOME>/.cache and /home/developer"
    assert n.text("'/tmp/pytest-1/proj'") == "'<CONFIG_DIR>'"


def test_session_paths_names_config_dir_repo_home_and_extras(tmp_path) -> None:  # type: ignore[no-untyped-def]
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    cfg = repo / "ci"
    cfg.mkdir()
    paths = session_paths(config_dir=cfg, extra=[tmp_path / "sandbox"], environ={"HOME": "/home/u"})
    assert paths == {"/home/u": "<HOME>", str(repo): "<REPO>", str(cfg): "<CONFIG_DIR>", str(tmp_path / "sandbox"): "<DIR>"}


def test_progress_tokens_are_placeholders() -> None:
    n = Normalizer()
    msg = {"method": "notifications/progress", "params": {"progressToken": "tok-93ab", "progress": 1}}
    assert n.value(msg)["params"] == {"progressToken": "<PROGRESS_TOKEN>", "progress": 1}


def test_regex_rules_apply_to_every_string_with_a_literal_placeholder() -> None:
    n = Normalizer([rule(pattern=r"pid \d+", replace=r"pid <\1>")])
    assert n.value({"a": ["pid 4242 done"], "b": {"c": "pid 1"}}) == {"a": ["pid <\\1> done"], "b": {"c": "pid <\\1>"}}


def test_json_inside_text_is_normalized_and_reserialized_deterministically() -> None:
    n = Normalizer([rule(path="$..datetime", replace="<NOW>"), rule(path="$.result.x")])
    pretty = json.dumps({"timezone": "UTC", "datetime": "2026-01-01T00:00:00+00:00", "x": 1}, indent=2)
    compact = json.dumps({"list": [{"datetime": "a"}], "x": 2}, separators=(",", ":"))
    msg = {"result": {"content": [{"type": "text", "text": pretty}, {"type": "text", "text": compact}], "x": 3}}
    out = n.value(msg)
    first, second = out["result"]["content"][0]["text"], out["result"]["content"][1]["text"]
    assert json.loads(first) == {"timezone": "UTC", "datetime": "<NOW>", "x": 1}  # absolute rule not applied inside
    assert first == json.dumps(json.loads(first), indent=2)
    assert second == '{"list":[{"datetime":"<NOW>"}],"x":2}'
    assert out["result"]["x"] == "<NORMALIZED>"
    unchanged = '{ "a" :1}'
    assert n.value({"t": unchanged}) == {"t": unchanged}  # nothing volatile: the text is kept as it was


def test_stderr_and_garbage_text_are_normalized() -> None:
    n = Normalizer(now=at("2026-01-01T00:00:05+00:00"))
    assert n.event({"kind": "stderr", "dir": "s2c", "text": "started 2026-01-01T00:00:00Z"})["text"] == "started <TIMESTAMP>"


def test_normalization_is_idempotent() -> None:
    n = Normalizer([rule(path="$..id2"), rule(pattern="x+")], paths={"/srv/app": "<CONFIG_DIR>"})
    msg = {"id2": 5, "t": "xx /srv/app/f 2026-01-01T00:00:00Z", "j": '{"id2": 1, "u": "/tmp/tmpq/f"}'}
    once = n.value(msg)
    assert n.value(once) == once


# -- canonical order ----------------------------------------------------------------------------


def req(step: int | None, msg_id: int, method: str, direction: str = "c2s") -> dict[str, Any]:
    e: dict[str, Any] = {"kind": "request", "dir": direction, "id": msg_id, "method": method, "msg": {"id": msg_id, "method": method}}
    if step is not None:
        e["step"] = step
    return e


def resp(step: int | None, msg_id: int, method: str, direction: str = "s2c", result: object = None) -> dict[str, Any]:
    e: dict[str, Any] = {"kind": "response", "dir": direction, "id": msg_id, "method": method, "msg": {"id": msg_id, "result": result or {}}}
    if step is not None:
        e["step"] = step
    return e


def note(step: int | None, method: str, data: str) -> dict[str, Any]:
    e: dict[str, Any] = {"kind": "notification", "dir": "s2c", "method": method, "msg": {"method": method, "params": {"data": data}}}
    if step is not None:
        e["step"] = step
    return e


def test_floating_events_land_in_one_canonical_place_whatever_step_they_raced_into() -> None:
    # Run A: the roots/list timer fired during step 1 and a log line came in step 2.
    run_a = [
        req(1, 2, "tools/call"),
        req(1, 0, "roots/list", "s2c"),
        resp(1, 0, "roots/list", "c2s", {"roots": []}),
        resp(1, 2, "tools/call"),
        req(2, 3, "tools/call"),
        note(2, "notifications/message", "b"),
        note(2, "notifications/message", "a"),
        resp(2, 3, "tools/call"),
        {"kind": "stderr", "dir": "s2c", "text": "hello"},
        {"kind": "exit", "code": 0},
    ]
    # Run B: the same traffic, the timer fired later, the log lines in the other order.
    run_b = [
        req(1, 2, "tools/call"),
        resp(1, 2, "tools/call"),
        note(1, "notifications/message", "a"),
        req(2, 3, "tools/call"),
        req(2, 0, "roots/list", "s2c"),
        note(2, "notifications/message", "b"),
        resp(2, 0, "roots/list", "c2s", {"roots": []}),
        resp(2, 3, "tools/call"),
        {"kind": "stderr", "dir": "s2c", "text": "hello"},
        {"kind": "exit", "code": 0},
    ]
    a, b = canonical_order(run_a), canonical_order(run_b)
    # Log "a" came inside step 2's call in run A and between the calls in run B: only A can name
    # the call it came in (`during`, diff/attribution.py's). Where it is and what it says are one.
    assert [e.get(CAUSE_KEY) for e in a[4:6]] == [3, 3] and [e.get(CAUSE_KEY) for e in b[4:6]] == [None, 3]
    assert [{k: v for k, v in e.items() if k != CAUSE_KEY} for e in a] == [
        {k: v for k, v in e.items() if k != CAUSE_KEY} for e in b]
    # Positive control: the same race with one log line's text changed does not map to run A.
    run_c = [note(2, "notifications/message", "c") if e.get("msg", {}).get("params") == {"data": "b"} else e
             for e in run_b]
    assert canonical_order(run_c) != a
    assert [e.get("method") or e["kind"] for e in a] == [
        "tools/call", "tools/call", "tools/call", "tools/call",
        "notifications/message", "notifications/message", "roots/list", "roots/list", "stderr", "exit",
    ]  # fmt: skip
    assert [e["msg"]["params"]["data"] for e in a if e["kind"] == "notification"] == ["a", "b"]
    assert all("step" not in e for e in a[4:8])
    assert canonical_order(a) == a  # idempotent: a golden maps to itself


def test_step_bound_events_keep_their_arrival_order() -> None:
    progress = [
        req(1, 2, "tools/call"),
        note(1, "notifications/progress", "2"),
        note(1, "notifications/progress", "1"),
        req(1, 0, "sampling/createMessage", "s2c"),
        resp(1, 0, "sampling/createMessage", "c2s"),
        resp(1, 2, "tools/call"),
    ]
    assert canonical_order(progress) == progress


def test_server_request_ids_are_renumbered_in_canonical_order() -> None:
    events = [
        req(1, 2, "tools/call"),
        req(1, 0, "roots/list", "s2c"),
        resp(1, 0, "roots/list", "c2s"),
        req(1, 1, "sampling/createMessage", "s2c"),
        resp(1, 1, "sampling/createMessage", "c2s"),
        resp(1, 2, "tools/call"),
    ]
    out = canonical_order(events)
    sampling = [e for e in out if e.get("method") == "sampling/createMessage"]
    roots = [e for e in out if e.get("method") == "roots/list"]
    assert [e["id"] for e in sampling] == [0, 0] and [e["msg"]["id"] for e in sampling] == [0, 0]
    assert [e["id"] for e in roots] == [1, 1]
    assert [e["id"] for e in out if e.get("method") == "tools/call"] == [2, 2]  # client ids untouched


def test_log_clock_prefixes_on_stderr_are_placeholders_but_not_in_messages() -> None:
    n = Normalizer()
    line = "[11/29/26 13:53:24] INFO     Tool failed at 13:53:24.123"
    assert n.event({"kind": "stderr", "dir": "s2c", "text": line})["text"] == "[<DATE> <TIME>] INFO     Tool failed at <TIME>"
    msg = {"kind": "response", "dir": "s2c", "id": 1, "msg": {"id": 1, "result": {"text": "12:00:00 on 1/2/24"}}}
    assert n.event(msg) == msg  # a tool's answer is content, not a log


def test_a_deep_message_is_normalized_as_text_and_keeps_a_true_wire_form() -> None:
    """A message nested past jsonrpc.MAX_DEPTH: its deep part (a marker holding JSON text) gets
    the string rules, and when anything changed its `raw` is rebuilt, not dropped (the message
    alone cannot say its wire form)."""
    from mcptape.jsonrpc import DEEP_KEY
    from mcptape.tape.events import EventBuilder, wire_text

    b = EventBuilder()
    b.line("c2s", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deep"}}')
    deep = "[" * 100 + '"at 2025-11-29T13:53:24Z"' + "]" * 100
    line = '{"jsonrpc":"2.0","id":1,"result":{"when":"2025-11-29T13:53:24Z","v":' + deep + "}}"
    event = b.line("s2c", line.encode())
    n = Normalizer(now=at("2025-11-29T13:53:30+00:00"))
    out = n.event(event)
    expected = line.replace("2025-11-29T13:53:24Z", "<TIMESTAMP>")
    assert out["raw"] == expected and wire_text(out) == expected
    assert json.loads(out["raw"])["result"]["when"] == "<TIMESTAMP>"
    marker = out["msg"]["result"]["v"]
    while isinstance(marker, list):
        marker = marker[0]
    assert "<TIMESTAMP>" in marker[DEEP_KEY]
    assert n.event(out) == out  # idempotent: a golden normalized again is the same
    # Control: with nothing volatile the event, raw and all, is unchanged.
    calm = b.line("s2c", line.replace("2025-11-29T13:53:24Z", "then").replace('"id":1', '"id":2').encode())
    assert Normalizer().event(calm) == calm


def test_the_clocks_dates_are_placeholders_and_pinned_dates_stay_visible() -> None:
    # What a run stamps is near the moment it is normalized; a date the project pinned (a fixture
    # repository's commit date) is not, and a changed pinned date must still be drift.
    n = Normalizer(now=at("2026-12-02T00:57:14+00:00"))
    assert n.text("Date:   2026-12-02 09:57:14+09:00") == "Date:   <TIMESTAMP>"
    assert n.text("Date:   2024-01-02 03:04:05+00:00") == "Date:   2024-01-02 03:04:05+00:00"


def test_the_date_formats_real_servers_print_are_normalized() -> None:
    n = Normalizer(now=at("2026-12-02T00:57:14+00:00"))
    js = "created: Wed Dec 02 2026 00:50:01 GMT+0000 (Coordinated Universal Time)"  # server-filesystem
    pinned = "modified: Wed Jan 01 2025 00:00:00 GMT+0000 (Coordinated Universal Time)"
    assert n.text(f"{js}\n{pinned}") == f"created: <TIMESTAMP>\n{pinned}"
    assert n.text("Last-Modified: Wed, 02 Dec 2026 00:57:14 GMT") == "Last-Modified: <TIMESTAMP>"
    assert n.text("Resource 1: created at 11:45:51 PM") == "Resource 1: created at <TIME>"  # server-everything
    assert n.text("at 13:45:51 on the wall") == "at 13:45:51 on the wall"  # a 24-hour time in content is data
    repr_ = "tzinfo=<git.objects.util.tzoffset object at 0x7f3a1c2b9e50>"  # mcp-server-git's git_show
    assert n.text(repr_) == "tzinfo=<git.objects.util.tzoffset object at <ADDRESS>>"
    now_ms = int(at("2026-12-02T00:57:00+00:00") * 1000)
    assert n.value({"createdAt": now_ms, "count": now_ms}) == {"createdAt": "<TIMESTAMP>", "count": now_ms}


def test_a_weekday_goes_with_the_date_it_belongs_to() -> None:
    # mcp-server-time answers {"datetime": ..., "day_of_week": ...}: a normalized date takes its day along.
    n = Normalizer(now=at("2026-12-02T00:57:14+00:00"))
    now = {"timezone": "Asia/Tokyo", "datetime": "2026-12-02T09:57:14+09:00", "day_of_week": "Wednesday"}
    assert n.value(now) == {"timezone": "Asia/Tokyo", "datetime": "<TIMESTAMP>", "day_of_week": "<DAY>"}
    pinned = {"datetime": "2024-01-02T03:04:05+00:00", "day_of_week": "Tuesday"}
    assert n.value(pinned) == pinned
    schema = {"properties": {"datetime": {"type": "string"}, "day_of_week": {"type": "string"}}}
    assert n.value(schema) == schema  # the outputSchema that names the same keys is left alone
    text = json.dumps({"source": now}, indent=2)  # the JSON text copy of the same answer
    assert json.loads(n.value({"t": text})["t"])["source"]["day_of_week"] == "<DAY>"


# -- lines no rule could change (mcptape diff's shortcut) -----------------------------------------

NOW = 1796173034  # 2026-12-02T00:57:14Z: the dates below are the clock's
VOLATILE_VALUES = [
    "2026-12-02T00:57:14Z", "2026-12-02 00:57", "Wed Dec 02 2026 00:57:14 GMT+0000 (Coordinated Universal Time)",
    "Wed, 02 Dec 2026 00:57:14 GMT", "created at 11:45:51 PM", "550e8400-e29b-41d4-a716-446655440000",
    "<tzoffset object at 0x7f3a2b1c>", "/tmp/pytest-of-root/x", '{"at": "2026-12-02T00:57:14Z"}',
    ' \n[{"at": "2026-12-02T00:57:14Z"}]', '\u00a0{"at": "2026-12-02T00:57:14Z"}', "at 2026\u002d12-02T00:57:14Z",
]


def _line(value: Any, key: str = "text", kind: str = "response") -> bytes:
    from mcptape.jsonrpc import dumps
    if kind == "stderr":
        return dumps({"kind": "stderr", "text": value}).encode()
    return dumps({"kind": kind, "dir": "s2c", "id": 3, "method": "tools/call",
                  "msg": {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", key: value}]}}}).encode()


@pytest.mark.parametrize(("value", "key", "kind"), [*((v, "text", "response") for v in VOLATILE_VALUES),
                                                    (NOW * 1000, "createdAt", "response"),
                                                    ("step 1", "progressToken", "response"),
                                                    ("[11/29/26 13:53:24] INFO", "text", "stderr")])
def test_a_line_a_rule_changes_is_always_walked(value: Any, key: str, kind: str) -> None:
    n = Normalizer(now=NOW)
    line = _line(value, key, kind)
    event = json.loads(line)
    assert n.event(event) != event  # the rule does change it ...
    assert n.lines_it_may_change(b"header\n" + line + b"\n") == {2}  # ... and its line is walked


def test_lines_no_rule_could_change_are_the_ones_it_leaves_unchanged() -> None:
    """Every event of every tape in the repository: a line left out of lines_it_may_change
    normalizes to itself; and the plain lines of a tape are left out (the shortcut is taken)."""
    from tests.conftest import ROOT
    n = Normalizer()
    left_out = walked = 0
    for path in sorted(ROOT.glob("**/*.tape.jsonl")):
        if "node_modules" in path.parts:
            continue
        data = path.read_bytes()
        may = n.lines_it_may_change(data)
        assert may is not None
        for number, raw in enumerate(data.split(b"\n"), start=1):
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if number in may:
                walked += 1
            else:
                left_out += 1
                assert n.event(event) == event, f"{path}:{number}"
    assert left_out and walked  # both kinds occur in the repository's tapes
    plain = _line("5")
    assert n.lines_it_may_change(plain + b"\n" + _line("2026-12-02T00:57:14Z") + b"\n") == {2}
    assert Normalizer([NormalizeRule(pattern="5", replace="<N>")]).lines_it_may_change(plain) is None  # own rules: all
    escaped = plain.replace(b'"text":"5"', b'"text":"2026\\u002d12\\u002d02T00:57:14Z"')  # JSON escapes hide the date
    assert json.loads(escaped)["msg"]["result"]["content"][0]["text"] == "2026-12-02T00:57:14Z"
    assert Normalizer(now=NOW).lines_it_may_change(escaped) == {1}


def test_an_order_sorted_rule_makes_the_same_items_equal_and_keeps_a_removed_item_visible() -> None:
    from types import SimpleNamespace

    norm = Normalizer([SimpleNamespace(path=None, pattern="(?<=Allowed commands: ).+", replace="x", order="sorted")])
    a = norm.text("Allowed commands: ls, cat, pwd.")
    assert a == norm.text("Allowed commands: pwd, ls, cat.") == "Allowed commands: cat, ls, pwd."
    assert norm.text("Allowed commands: pwd, ls.") != a
    # Idempotent: a golden tape is normalized again before it is compared with a fresh one.
    for text in ("Head: z, b y, c", "Intro.\n\n`B`, `A`\n- Hour: \"03\" (PM or AM, \"15\", \"3\")", "b\na", "x y a"):
        once = sorted_items(text)
        assert sorted_items(once) == once
    by_path = Normalizer([SimpleNamespace(path="$.result.items", pattern=None, replace="x", order="sorted")])
    assert by_path.value({"result": {"items": [3, 1, 2]}}) == {"result": {"items": [1, 2, 3]}}


def poll(msg_id: int, result: dict[str, Any], method: str = "tasks/get") -> list[dict[str, Any]]:
    """A task request (as `rec` records a client's poll) and its answer."""
    params = {"taskId": "t"} if method == "tasks/get" else {"name": "job"}
    return [{"kind": "request", "dir": "c2s", "id": msg_id, "method": method,
             "msg": {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}},
            {"kind": "response", "dir": "s2c", "id": msg_id, "method": method,
             "msg": {"jsonrpc": "2.0", "id": msg_id, "result": result}}]


def test_task_polls_that_repeat_the_state_before_them_leave_the_tape() -> None:
    working = {"taskId": "t", "status": "working"}
    asked = {"taskId": "t", "status": "input_required", "inputRequests": {"q-1": {}}}
    tape = (poll(1, {"resultType": "task", **working}, "tools/call") + poll(2, working) + poll(3, working)
            + poll(4, asked) + poll(5, asked) + poll(6, {**asked, "inputRequests": {"q-2": {}}})
            + poll(7, working) + poll(8, {"taskId": "t", "status": "completed", "result": {}}))
    positions: list[int] = []
    kept = canonical_order(tape, positions)
    assert [e["id"] for e in kept if e["dir"] == "c2s"] == [1, 4, 6, 7, 8]  # the path; a new question counts
    assert positions == [0, 1, 6, 7, 10, 11, 12, 13, 14, 15] and canonical_order(kept) == kept
    # 2025-11-25: the state of the task made sits in result.task, the polls' at the top.
    legacy = poll(1, {"task": working}, "tools/call") + poll(2, working) + poll(3, {**working, "status": "completed"})
    assert [e["id"] for e in canonical_order(legacy) if e["dir"] == "c2s"] == [1, 3]
    # Not a task answer (no taskId): nothing leaves.
    plain = poll(1, {"status": "working"}) + poll(2, {"status": "working"})
    assert canonical_order(plain) == plain


def test_a_regex_rule_written_against_a_built_in_placeholder_hits_the_raw_value_too() -> None:
    # mcp-server-analyzer's answer names a temp file; init's trial saw it as `<TMP>/tmp/tmpab1.py` (the
    # built-in rule had run) and wrote this rule. A fresh run and the golden read back must agree.
    n = Normalizer([rule(pattern=r"(?<=<TMP>/tmp/)[\w.:-]+", replace="<FILE>")])
    fresh = n.value({"filename": "/tmp/pytest-x1/tmp/tmpq1x2.py"})
    assert fresh == {"filename": "<TMP>/tmp/<FILE>"}
    assert n.value(fresh) == fresh  # the golden, normalized again when it is read back
    assert n.value({"filename": "/tmp/pytest-x1/tmp/tmpq1x2.py", "other": "tmp/keep.py"})["other"] == "tmp/keep.py"
