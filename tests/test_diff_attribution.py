"""A log the canonical order moves after the last step is still its call's drift (issue 29, item
6c): mcptape/diff/attribution.py with normalize.canonical_order's `during`, on recordings of a real
server process (fixtures/servers/asking_server.py: its `log` tool logs before it answers)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcptape.client import record_session
from mcptape.config.models import ClientSettings, Step
from mcptape.diff.engine import diff_tapes
from mcptape.normalize import CAUSE_KEY, canonical_order
from mcptape.tape.format import Tape, make_footer, make_header
from mcptape.transports.stdio import StdioTransport, minimal_env

ASKING = [sys.executable, str(Path(__file__).parent.parent / "fixtures" / "servers" / "asking_server.py")]
STEPS = [
    Step(action="call", target="echo", arguments={"text": "one"}),
    Step(action="call", target="log"),
    Step(action="call", target="echo", arguments={"text": "two"}),
]


def recorded(log_text: str) -> Tape:
    """A session as ci keeps it: recorded, then in canonical order."""
    transport = StdioTransport([*ASKING, "--log-text", log_text], env=minimal_env())
    rec = record_session(transport, STEPS, ClientSettings(), session="logs", step_timeout=10.0)
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
