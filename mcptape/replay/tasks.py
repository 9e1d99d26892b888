"""play's side of tasks (2025-11-25 tasks and the 2026-07-28 tasks extension): a recorded task served back at once.

A task's tape is its call, its status path (the tasks/get polls, one per status change when the
scripted client recorded it, every poll when `rec` did) and its result (tasks/result, or inlined
in the last tasks/get); matching serves the polls in order like any identical repeats (engine.py).
This module owns the two things a task needs beyond that, and leaves matching, emission and
pacing to engine.py, lab.py and pacing.py:

* Waits compressed. A served task's poll interval (`pollInterval`, `pollIntervalMs`, or a
  golden's `<POLL_INTERVAL>`: volatility/normalize.py; in a message that names a `taskId`, so a tool's own
  field of that name is served as recorded) goes out as SERVED_POLL_MS, so a client that honours
  it walks the recorded status path at replay speed, not at the recorded server's interval.
  Under `--pace` a recorded interval stays as recorded (the pace is the point); a golden's
  placeholder has no value to keep, so it is served as SERVED_POLL_MS then too.
* A status holds. A tasks/get asked after every recorded poll of that task was served (a client
  that polls more often than the recording did, or a task recorded before it ended) gets the
  latest recorded poll of the same task again: a task's status stays until its next recorded
  change, as the live server's would.

Polls of two tasks whose ids a golden normalized to the same `<TASK_ID>` are told apart only by
their order: tasks run one after another replay exactly, interleaved ones may swap polls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable
from typing import Any, Protocol, TypeVar

TASK_POLLS = frozenset({"tasks/get"})  # the methods a client repeats while a task runs
SERVED_POLL_MS = 1  # a poll interval play serves: valid everywhere (> 0), no wait worth the name
PLACEHOLDER = "<POLL_INTERVAL>"  # normalize.POLL_INTERVAL (normalize is a layer play must not import)

_INTERVAL = re.compile(
    r'("pollInterval(?:Ms)?"\s*:\s*)(?:"' + re.escape(PLACEHOLDER) + r'"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)'
)
_PLACEHOLDER_ONLY = re.compile(r'("pollInterval(?:Ms)?"\s*:\s*)"' + re.escape(PLACEHOLDER) + '"')


class Recorded(Protocol):
    """What this module reads of a recorded call (index.RecordedCall): its place in the tape."""

    index: int


def served_interval(line: str, *, paced: bool) -> str:
    """`line` (a wire message) with its task poll intervals as play serves them (module docstring)."""
    if '"pollInterval' not in line or '"taskId"' not in line:  # nearly every line: no task in it
        return line
    pattern = _PLACEHOLDER_ONLY if paced else _INTERVAL
    return pattern.sub(lambda m: f"{m.group(1)}{SERVED_POLL_MS}", line)


C = TypeVar("C", bound=Recorded)


def held_status(
    method: str, params: Any, calls: Iterable[C], used: Container[int], reasons: Callable[[C, Any], list[str]]
) -> C | None:
    """For a task poll no unused recording answers: the latest used recording (its index in
    `used`, one replay's state) that matches it."""
    if method not in TASK_POLLS:
        return None
    held = None
    for call in calls:
        if call.index in used and not reasons(call, params):
            held = call
    return held
