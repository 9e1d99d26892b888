"""A `call` step with `task: true`: the tool call run as a task, in either era, under its step.

Owns both tasks protocols as the scripted client speaks them: 2025-11-25's (`params.task`, tasks/get
polls, tasks/result) and 2026-07-28's tasks extension (declared per request, polled with tasks/get,
input answered with tasks/update, the result inlined in the last poll). A task's tape keeps its status
path, not its polls: a poll whose status is the one last recorded leaves the events again, and polls
use their own ids (`mcptape-poll-N`), so the session's ids do not depend on how many there were
(volatility/normalize.py numbers the recorded ones 1, 2, ...). The wire is live/wire.py's, the answers
to a task's input requests live/server_requests.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcptape.live.server_requests import ServerRequests
from mcptape.live.wire import Wire
from mcptape.mcp import META_CAPABILITIES
from mcptape.tape.events import note_event

TASK_ENDS = frozenset({"completed", "failed", "cancelled"})
TASK_TTL_MS = 60000  # how long the server keeps a task the step made: longer than any step
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"  # 2026-07-28's tasks (SEP-2663)

Request = Callable[[str, "dict[str, Any] | None"], "dict[str, Any]"]


class Tasks:
    """The task calls of one session (module docstring). `request` is the client's whole request:
    input rounds and URL elicitations included, as for any other call."""

    def __init__(self, wire: Wire, answers: ServerRequests, request: Request) -> None:
        self.wire = wire
        self.answers = answers
        self.request = request
        self._polls = 0  # tasks/get polls sent (their ids: mcptape-poll-N)

    def call(self, params: dict[str, Any]) -> None:
        """Run one tools/call as a task, in the session's era."""
        if self.wire.modern:
            self._call_as_extension_task(params)
        else:
            self._call_as_task(params)

    # -- tasks (2025-11-25) --------------------------------------------------------------------

    def _call_as_task(self, params: dict[str, Any]) -> None:
        """tools/call with `params.task`; a CreateTaskResult is polled with tasks/get (at the
        server's pollInterval, within the step's timeout) until the task ends or asks for input,
        then its result is fetched with tasks/result, all under this step."""
        answer = self.request("tools/call", {**params, "task": {"ttl": TASK_TTL_MS}})
        result = answer.get("result")
        task = result.get("task") if isinstance(result, dict) else None
        if not (isinstance(task, dict) and isinstance(task.get("taskId"), str)):
            return  # the server ran it as a plain call (or refused): that answer is the step's
        task_id, status = task["taskId"], task.get("status")
        interval = task.get("pollInterval")
        while status not in TASK_ENDS and status != "input_required":
            self._wait_poll(interval)
            got = self._poll_task({"taskId": task_id}, (status,))
            if got is None:
                return  # the error (or an answer without a status) is recorded: the step ends on it
            status = got.get("status")
            interval = got.get("pollInterval", interval)
        # input_required: the task's requests to us come on the tasks/result stream (answered as they
        # arrive, like any server request), which then waits for the task's end and its result.
        if status in ("completed", "failed", "input_required"):
            self.request("tasks/result", {"taskId": task_id})

    def _wait_poll(self, interval_ms: Any) -> None:
        """Wait the server's poll interval (0.5 s when it gives none, never under 50 ms), ending
        a second before the step's deadline so the last poll still has time to be answered."""
        pause = max(float(interval_ms) / 1000 if isinstance(interval_ms, int | float) else 0.5, 0.05)
        time.sleep(min(pause, max(self.wire.step_deadline - self.wire.clock() - 1.0, 0.05)))

    def _poll_task(self, params: dict[str, Any], last: tuple[Any, ...]) -> dict[str, Any] | None:
        """One tasks/get poll (id `mcptape-poll-N`); its result, or None if it failed (recorded).
        A poll whose status (and open input requests) is `last`, the one recorded before, leaves
        the events again: how many polls a task takes is timing, not behaviour."""
        self._polls += 1
        poll_id = f"mcptape-poll-{self._polls}"
        events = self.wire.events
        start = len(events)
        polled = self.wire.request_once("tasks/get", params, poll_id)
        got = polled.get("result")
        if "error" in polled or not isinstance(got, dict) or got.get("status") is None:
            return None
        if _task_state(got)[: len(last)] == last:
            events[start:] = [e for e in events[start:] if e.get("id") != poll_id]
        return got

    # -- the tasks extension (2026-07-28, io.modelcontextprotocol/tasks) -------------------------

    def _call_as_extension_task(self, params: dict[str, Any]) -> None:
        """The tools/call declares the tasks extension in its per-request capabilities (as the SDK's
        clients do: `clientCapabilities.extensions`), and so do the tasks/* requests after it. A
        `resultType: "task"` answer is polled with tasks/get at its `pollIntervalMs` within the
        step's timeout; an `input_required` status's `inputRequests` are answered from the
        session's canned answers with one tasks/update per new set of keys (a key is answered once:
        the server may show it again until the update lands); the final result comes inlined in the
        last tasks/get. A server that answers with a plain result ran the call inline: that answer
        is the step's. An input request with no canned answer ends the step with a note and
        tasks/cancel (the task would wait for it until its TTL)."""
        meta = {"_meta": {META_CAPABILITIES: self._with_tasks_extension()}}
        answer = self.request("tools/call", {**meta, **params})
        result = answer.get("result")
        if not (isinstance(result, dict) and result.get("resultType") == "task" and isinstance(result.get("taskId"), str)):
            return
        task_id = result["taskId"]
        got: dict[str, Any] = result
        answered: set[str] = set()
        while got.get("status") not in TASK_ENDS:
            asked = got.get("inputRequests") if got.get("status") == "input_required" else None
            fresh = {k: v for k, v in asked.items() if k not in answered} if isinstance(asked, dict) else {}
            if fresh:
                responses = {key: self.answers.input_response(req) for key, req in fresh.items()}
                missing = [k for k, reply in responses.items() if reply is None]
                if missing:
                    what = fresh[missing[0]].get("method") if isinstance(fresh[missing[0]], dict) else fresh[missing[0]]
                    self.wire.record(note_event("input_required", f"tools/call {params.get('name')}: task input "
                                                f"{missing[0]!r} not answered: the server asks {what}, which "
                                                "mcptape.yml gives no answer for; the task is cancelled"))
                    self.request("tasks/cancel", {**meta, "taskId": task_id})
                    return
                ack = self.request("tasks/update", {**meta, "taskId": task_id, "inputResponses": responses})
                if "error" in ack:
                    return  # refused (recorded): the task would wait for an answer that never lands
                answered |= set(fresh)
            else:
                self._wait_poll(got.get("pollIntervalMs"))
            polled = self._poll_task({**meta, "taskId": task_id}, _task_state(got))
            if polled is None:
                return
            got = polled

    def _with_tasks_extension(self) -> dict[str, Any]:
        """This session's client capabilities with the tasks extension declared."""
        caps = dict(self.wire.settings.capabilities)
        extensions = caps.get("extensions")
        caps["extensions"] = {**(extensions if isinstance(extensions, dict) else {}), TASKS_EXTENSION: {}}
        return caps


def _task_state(result: dict[str, Any]) -> tuple[Any, ...]:
    """What a poll must change to be recorded: the task's status, then the keys it asks input for."""
    asked = result.get("inputRequests")
    return result.get("status"), sorted(asked) if isinstance(asked, dict) else None
