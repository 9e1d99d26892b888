"""A drift is the call's it came in (mcptape/diff/attribution.py), on recordings of a real server
process (fixtures/servers/asking_server.py): a log the canonical order moves after the last step
(issue 29, item 6c: normalize.canonical_order's `during`; its `log` tool logs before it answers),
and a server request compared over the session (its `agent` tool runs a sampling loop)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcptape.config.models import ClientSettings, Step
from mcptape.diff.compare import diff_tapes
from mcptape.live.client import record_session
from mcptape.tape.format import Tape, make_footer, make_header
from mcptape.transports.stdio import StdioTransport, minimal_env
from mcptape.volatility.normalize import CAUSE_KEY, canonical_order

ASKING = [sys.executable, str(Path(__file__).parents[2] / "fixtures" / "servers" / "asking_server.py")]
STEPS = [
    Step(action="call", target="echo", arguments={"text": "one"}),
    Step(action="call", target="log"),
    Step(action="call", target="echo", arguments={"text": "two"}),
]


def recorded(log_text: str, *args: str, steps: list[Step] = STEPS, settings: ClientSettings | None = None) -> Tape:
    """A session as ci keeps it: recorded, then in canonical order."""
    transport = StdioTransport([*ASKING, "--log-text", log_text, *args], env=minimal_env())
    rec = record_session(transport, steps, settings or ClientSettings(), session="logs", step_timeout=10.0)
    assert rec.error is None, rec.error
    events = canonical_order(rec.events)
    return Tape(make_header("logs", protocol=rec.protocol), events, make_footer(len(events)), path=None,
                event_lines=[i + 2 for i in range(len(events))])


def logs(tape: Tape) -> list[dict[str, Any]]:
    return [e for e in tape.events if e.get("method") == "notifications/message"]


def test_a_changed_log_is_the_drift_of_the_call_that_logged_not_of_the_last_step() -> None:
    golden = recorded("working")
    [log] = logs(golden)
    assert golden.events[-1] is log and "step" not in log  # moved after the last step, as before
    call = next(e for e in golden.events if e.get("kind") == "request" and e.get("id") == log[CAUSE_KEY])
    assert call["msg"]["params"]["name"] == "log" and call["step"] == 2

    assert diff_tapes(golden, recorded("working")).verdict == "same"  # unchanged: nothing to attribute
    changed = diff_tapes(golden, recorded("stalled"))
    assert changed.verdict == "output"
    first = changed.drifts[0]
    assert first.call is not None and first.call.one_line() == "step 2 · tools/call log"
    assert [(f.category, f.before, f.after) for f in first.findings] == [("notification", "working", "stalled")]
    assert all(d.call is None or d.call.step != 3 for d in changed.drifts)  # not the last step's


def test_a_notification_between_calls_has_no_cause_and_the_order_stays_idempotent() -> None:
    events = [
        {"kind": "request", "dir": "c2s", "id": 1, "method": "tools/call", "msg": {"id": 1}, "step": 1},
        {"kind": "notification", "dir": "s2c", "method": "notifications/message", "msg": {"params": {"data": "in"}},
         "step": 1},
        {"kind": "response", "dir": "s2c", "id": 1, "method": "tools/call", "msg": {"id": 1}, "step": 1},
        {"kind": "notification", "dir": "s2c", "method": "notifications/message", "msg": {"params": {"data": "timer"}},
         "step": 1},
    ]
    ordered = canonical_order(events)
    by_data = {e["msg"]["params"]["data"]: e for e in ordered if e["kind"] == "notification"}
    assert by_data["in"][CAUSE_KEY] == 1 and CAUSE_KEY not in by_data["timer"]
    assert canonical_order(ordered) == ordered


def test_a_changed_sampling_request_is_the_drift_of_the_tool_call_that_ran_the_loop() -> None:
    tool_use = {"role": "assistant", "model": "m", "stopReason": "toolUse",
                "content": [{"type": "tool_use", "id": "u1", "name": "add", "input": {"a": 2, "b": 3}}]}
    final = {"role": "assistant", "model": "m", "stopReason": "endTurn", "content": {"type": "text", "text": "5"}}
    settings = ClientSettings(capabilities={"sampling": {"tools": {}}}, sampling=[tool_use, final])
    steps = [Step(action="call", target="echo", arguments={"text": "one"}), Step(action="call", target="agent"),
             Step(action="call", target="echo", arguments={"text": "two"})]
    golden = recorded("working", steps=steps, settings=settings)
    assert diff_tapes(golden, recorded("working", steps=steps, settings=settings)).verdict == "same"
    changed = diff_tapes(golden, recorded("working", "--question", "What is 2+4?", steps=steps, settings=settings))
    assert changed.verdict == "output"
    assert [(d.call.one_line() if d.call else None, [f.kind for f in d.findings]) for d in changed.drifts] == [
        ("step 2 · tools/call agent", ["server_request_changed", "server_request_changed"])]


def test_a_task_status_push_names_the_call_that_made_the_task_whether_it_lands_in_a_poll_or_between() -> None:
    def run(in_poll: bool) -> list[dict[str, Any]]:
        push = {"kind": "notification", "dir": "s2c", "method": "notifications/tasks/status",
                "msg": {"params": {"status": "completed"}}, "step": 1}
        poll = [{"kind": "request", "dir": "c2s", "id": "mcptape-poll-1", "method": "tasks/get", "msg": {}, "step": 1},
                {"kind": "response", "dir": "s2c", "id": "mcptape-poll-1", "method": "tasks/get",
                 "msg": {"result": {"status": "completed"}}, "step": 1}]
        return [
            {"kind": "request", "dir": "c2s", "id": 3, "method": "tools/call", "msg": {}, "step": 1},
            {"kind": "response", "dir": "s2c", "id": 3, "method": "tools/call",
             "msg": {"result": {"task": {"taskId": "<TASK_ID>", "status": "working"}}}, "step": 1},
            *([poll[0], push, poll[1]] if in_poll else [push, *poll]),
            {"kind": "request", "dir": "c2s", "id": 4, "method": "tools/list", "msg": {}, "step": 2},
            {"kind": "notification", "dir": "s2c", "method": "notifications/message", "msg": {"params": {}}, "step": 2},
            {"kind": "response", "dir": "s2c", "id": 4, "method": "tools/list", "msg": {"result": {}}, "step": 2},
        ]

    in_poll, between = canonical_order(run(True)), canonical_order(run(False))
    assert in_poll == between  # how the push raced the client's poll is timing: one golden
    causes = {e["method"]: e.get(CAUSE_KEY) for e in in_poll if e["kind"] == "notification"}
    assert causes == {"notifications/tasks/status": 3, "notifications/message": 4}  # the task's call; the next call's
