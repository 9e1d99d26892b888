"""play serving a recorded task (replay/tasks.py): the status path in order, waits compressed, a status that holds."""

from __future__ import annotations

import json
from typing import Any

from mcptape.replay.engine import ReplayEngine
from mcptape.replay.lab import LabEngine, LabOptions
from mcptape.replay.tasks import SERVED_POLL_MS, served_interval
from tests.replay.test_engine import make_tape, req, res

TASK = {"taskId": "t-1", "createdAt": "2026-12-01T10:00:00Z", "lastUpdatedAt": "2026-12-01T10:00:00Z",
        "ttlMs": 60000, "pollIntervalMs": 5000}
ASK = {"q": {"method": "elicitation/create", "params": {"mode": "form", "message": "How many?",
                                                        "requestedSchema": {"type": "object"}}}}
DONE = {"content": [{"type": "text", "text": "Ordered 3"}]}


def extension_task_tape() -> Any:
    """A 2026 tasks-extension task as `rec` records it: every poll, the real interval."""
    get = {"taskId": "t-1"}
    return make_tape(
        ("c2s", req(1, "tools/call", {"name": "order", "arguments": {"item": "pens"}})),
        ("s2c", res(1, {"resultType": "task", **TASK, "status": "working"})),
        ("c2s", req(2, "tasks/get", get)),
        ("s2c", res(2, {"resultType": "complete", **TASK, "status": "working"})),
        ("c2s", req(3, "tasks/get", get)),
        ("s2c", res(3, {"resultType": "complete", **TASK, "status": "input_required", "inputRequests": ASK})),
        ("c2s", req(4, "tasks/update", {**get, "inputResponses": {"q": {"action": "accept", "content": {"n": 3}}}})),
        ("s2c", res(4, {"resultType": "complete"})),
        ("c2s", req(5, "tasks/get", get)),
        ("s2c", res(5, {"resultType": "complete", **TASK, "status": "completed", "result": DONE})),
    )


def ask(lab: LabEngine, msg: dict[str, Any]) -> dict[str, Any]:
    out = [json.loads(line) for line in lab.handle(json.dumps(msg))]
    assert len(out) == 1, out
    answer: dict[str, Any] = out[0]
    return answer


def test_a_replayed_task_walks_its_status_path_with_the_wait_compressed() -> None:
    lab = LabEngine(ReplayEngine(extension_task_tape()), LabOptions())
    made = ask(lab, req(10, "tools/call", {"name": "order", "arguments": {"item": "pens"}}))["result"]
    assert made["resultType"] == "task" and made["pollIntervalMs"] == SERVED_POLL_MS  # recorded: 5000
    path = []
    for n in range(11, 14):
        got = ask(lab, req(n, "tasks/get", {"taskId": "t-1"}))["result"]
        path.append(got["status"])
        assert got["pollIntervalMs"] == SERVED_POLL_MS
        if got["status"] == "input_required":
            ack = ask(lab, req(20, "tasks/update", {"taskId": "t-1", "inputResponses": {
                "q": {"action": "accept", "content": {"n": 3}}}}))
            assert ack["result"] == {"resultType": "complete"}
    assert path == ["working", "input_required", "completed"]
    # One poll more than recorded: the task's last status holds, it is no miss.
    again = ask(lab, req(30, "tasks/get", {"taskId": "t-1"}))
    assert again["id"] == 30 and again["result"]["status"] == "completed" and again["result"]["result"] == DONE
    # A poll of a task the tape never made is still a miss.
    unknown = ask(lab, req(31, "tasks/get", {"taskId": "t-2"}))
    assert unknown["error"]["data"]["mcptape"] == "replay-miss"
    report = lab.report()
    assert [m.method for m in report.misses] == ["tasks/get"] and not report.unused


def test_paced_replay_keeps_the_recorded_interval() -> None:
    lab = LabEngine(ReplayEngine(extension_task_tape()), LabOptions(pace=1000.0), "x1000")
    made = ask(lab, req(1, "tools/call", {"name": "order", "arguments": {"item": "pens"}}))["result"]
    assert made["pollIntervalMs"] == 5000


def test_a_goldens_placeholder_interval_is_served_as_a_number_paced_or_not() -> None:
    # 2025-11-25: the interval sits in result.task (CreateTaskResult) or the tasks/get result.
    line = '{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"<TASK_ID>","status":"working","pollInterval":"<POLL_INTERVAL>"}}}'
    for paced in (False, True):
        assert json.loads(served_interval(line, paced=paced))["result"]["task"]["pollInterval"] == SERVED_POLL_MS
    spaced = '{"result": {"taskId": "t", "pollIntervalMs": 2.5e3, "note": "pollInterval is 5"}}'
    assert json.loads(served_interval(spaced, paced=False)) == {
        "result": {"taskId": "t", "pollIntervalMs": 1, "note": "pollInterval is 5"}}
    assert served_interval(spaced, paced=True) == spaced
    # A tool's own field of that name, in a message about no task, is served as recorded.
    own = '{"result":{"structuredContent":{"pollIntervalMs":30000}}}'
    assert served_interval(own, paced=False) == own
