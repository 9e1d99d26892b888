"""live/client.py's tasks extension (2026-07-28, `io.modelcontextprotocol/tasks`) against a scripted peer.

The peer (in memory, transports/memory.py) answers `server/discover` at 2026-07-28, makes a task
of a `tools/call` that declares the extension (else -32021), and answers each tasks/get with the
next status of its script (the last one holds). The real SDK 2.x server is
tests/integration/test_tasks_2026.py's; here the edge cases a server rarely shows on cue: an
input request shown again before the update lands, one with no canned answer, a plain result,
a failed task, a task that never ends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcptape.config.models import ClientSettings, Step
from mcptape.errors import ServerTimeout
from mcptape.live.client import Recording, record_session
from mcptape.live.task_calls import TASKS_EXTENSION
from mcptape.transports.memory import MemoryPeer, MemoryTransport, memory_pair

META_CAPS = "io.modelcontextprotocol/clientCapabilities"
TASK = {"taskId": "t-7", "createdAt": "2026-12-01T10:00:00Z", "lastUpdatedAt": "2026-12-01T10:00:00Z",
        "ttlMs": 60000, "pollIntervalMs": 1}
ASK = {"q-1": {"method": "elicitation/create", "params": {"mode": "form", "message": "How many?",
                                                          "requestedSchema": {"type": "object"}}}}
SAMPLE = {"s-1": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}
DONE = {"content": [{"type": "text", "text": "done"}]}


def peer(statuses: list[dict[str, Any]], *, as_task: bool = True, refuse_update: bool = False) -> MemoryTransport:
    client, end = memory_pair()
    polls = iter(statuses)
    last: dict[str, Any] = {}

    def serve(p: MemoryPeer) -> int:
        nonlocal last
        while (line := p.receive()) is not None:
            msg = json.loads(line)
            if "method" not in msg or "id" not in msg:
                continue
            method, params = msg["method"], msg.get("params") or {}
            declared = TASKS_EXTENSION in (params.get("_meta", {}).get(META_CAPS, {}).get("extensions") or {})
            result: dict[str, Any] | None = {"resultType": "complete"}
            error = None
            if method == "server/discover":
                result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete"}
            elif method == "tools/list":
                result = {"tools": [{"name": "job", "inputSchema": {"type": "object"}}], "resultType": "complete"}
            elif method == "tools/call" and not as_task:
                result = {**DONE, "resultType": "complete"}
            elif method in ("tools/call", "tasks/get", "tasks/update", "tasks/cancel") and not declared:
                result, error = None, {"code": -32021, "message": "missing extension",
                                       "data": {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}}
            elif method == "tools/call":
                result = {"resultType": "task", **TASK, "status": "working"}
            elif method == "tasks/update" and refuse_update:
                result, error = None, {"code": -32602, "message": "no such input request"}
            elif method == "tasks/get":
                last = next(polls, last)
                result = {"resultType": "complete", **TASK, **last}
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
            reply.update({"error": error} if error else {"result": result})
            p.send(json.dumps(reply).encode())
        return 0

    end.serve(serve)
    return client


def run(transport: MemoryTransport, settings: ClientSettings | None = None, timeout: float = 10.0) -> Recording:
    step = Step.model_validate({"call": "job", "arguments": {}, "task": True})
    return record_session(transport, [step], settings or ClientSettings(), session="t", protocol="2026-07-28",
                          step_timeout=timeout)


def sent(rec: Recording) -> list[tuple[str, Any]]:
    return [(e["method"], e["id"]) for e in rec.events if e["kind"] == "request" and e.get("step") == 1]


def statuses(rec: Recording) -> list[str]:
    return [e["msg"]["result"]["status"] for e in rec.events
            if e["kind"] == "response" and e.get("method") == "tasks/get"]


def test_an_input_request_is_answered_once_and_repeated_statuses_leave_the_tape() -> None:
    settings = ClientSettings.model_validate({"elicitation": [
        {"contains": "How many?", "answer": {"action": "accept", "content": {"n": 2}}}]})
    script: list[dict[str, Any]] = [{"status": "working"}, {"status": "input_required", "inputRequests": ASK},
              {"status": "input_required", "inputRequests": ASK},  # the update has not landed yet
              {"status": "working"}, {"status": "working"}, {"status": "completed", "result": DONE}]
    rec = run(peer(script), settings)
    assert rec.error is None, rec.error
    assert sent(rec) == [("tools/list", 1), ("tools/call", 2), ("tasks/get", "mcptape-poll-2"),
                         ("tasks/update", 3), ("tasks/get", "mcptape-poll-4"), ("tasks/get", "mcptape-poll-6")]
    assert statuses(rec) == ["input_required", "working", "completed"]
    update = next(e["msg"]["params"] for e in rec.events if e.get("method") == "tasks/update" and e["kind"] == "request")
    assert update["taskId"] == "t-7" and update["inputResponses"] == {"q-1": {"action": "accept", "content": {"n": 2}}}
    # Every task request declares the extension; the schema lookup before the call does not.
    declared = [TASKS_EXTENSION in (e["msg"]["params"]["_meta"][META_CAPS].get("extensions") or {})
                for e in rec.events if e["kind"] == "request" and e.get("step") == 1]
    assert declared == [False, True, True, True, True, True]


def test_a_new_input_request_under_the_same_status_is_recorded_and_answered() -> None:
    second = {"q-2": {"method": "elicitation/create", "params": {"mode": "form", "message": "Sure?",
                                                                 "requestedSchema": {"type": "object"}}}}
    settings = ClientSettings.model_validate({"elicitation": {"action": "accept", "content": {}}})
    script = [{"status": "input_required", "inputRequests": ASK}, {"status": "input_required", "inputRequests": second},
              {"status": "completed", "result": DONE}]
    rec = run(peer(script), settings)
    assert statuses(rec) == ["input_required", "input_required", "completed"]
    assert [m for m, _ in sent(rec)].count("tasks/update") == 2


def test_an_input_request_without_a_canned_answer_cancels_the_task_with_a_note() -> None:
    rec = run(peer([{"status": "input_required", "inputRequests": SAMPLE}]))
    assert rec.error is None
    assert [m for m, _ in sent(rec)][-2:] == ["tasks/get", "tasks/cancel"]
    notes = [e["detail"] for e in rec.events if e["kind"] == "note" and e.get("what") == "input_required"]
    assert len(notes) == 1 and "sampling/createMessage" in notes[0] and "cancelled" in notes[0]


def test_a_refused_update_ends_the_step_on_it() -> None:
    settings = ClientSettings.model_validate({"elicitation": {"action": "accept", "content": {}}})
    rec = run(peer([{"status": "input_required", "inputRequests": ASK}], refuse_update=True), settings, timeout=5.0)
    assert rec.error is None and [m for m, _ in sent(rec)][-1] == "tasks/update"
    assert any(e["kind"] == "error" and e.get("method") == "tasks/update" for e in rec.events)


def test_a_plain_result_ends_the_step_and_a_failed_task_is_its_last_poll() -> None:
    plain = run(peer([], as_task=False))
    assert [m for m, _ in sent(plain)] == ["tools/list", "tools/call"]
    failed = run(peer([{"status": "failed", "error": {"code": -32603, "message": "boom"}}]))
    assert statuses(failed) == ["failed"] and [m for m, _ in sent(failed)][-1] == "tasks/get"


def test_a_task_that_never_ends_times_out_naming_the_step_and_keeps_what_was_seen() -> None:
    rec = run(peer([{"status": "working"}]), timeout=0.5)
    assert isinstance(rec.error, ServerTimeout) and "step 1 (call job)" in rec.error.message
    assert [m for m, _ in sent(rec)][:2] == ["tools/list", "tools/call"]


@pytest.mark.parametrize("declared", [{}, {"extensions": {"io.example/other": {}}}])
def test_the_extension_joins_what_the_config_declares(declared: dict[str, Any]) -> None:
    settings = ClientSettings.model_validate({"capabilities": declared})
    rec = run(peer([{"status": "completed", "result": DONE}]), settings)
    call = next(e for e in rec.events if e.get("method") == "tools/call" and e["kind"] == "request")
    caps = call["msg"]["params"]["_meta"][META_CAPS]
    assert caps["extensions"] == {**declared.get("extensions", {}), TASKS_EXTENSION: {}}
