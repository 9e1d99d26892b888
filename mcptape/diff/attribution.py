"""Which call a drifted notification belongs to, when the canonical order moved it.

Owns one correction to the drifts engine.py places: normalize.canonical_order moves racing
notifications (log messages, list_changed, ...) after the last step, so calls.py's rule (a
notification belongs to the latest client message) hands each of them to the session's last
call. One that arrived while a client request was unanswered carries that request's id
(normalize.CAUSE_KEY, `"during"`): its findings go to the drift of that call, placed where that
call is, so "first drifted call" and the report name the call whose handler logged, not the
last step. A notification without it (a timer's, between calls; a tape from before the key)
stays where calls.py put it. Pure: reads the tapes' events, builds no calls.
"""

from __future__ import annotations

from typing import Any

from mcptape.diff.calls import Call
from mcptape.jsonrpc import id_key
from mcptape.normalize import CAUSE_KEY
from mcptape.report.model import CallRef, Drift, Finding
from mcptape.tape.format import Tape

Placed = list[tuple[int, int, Drift]]  # engine.py's: (position in the fresh tape, tie-breaker, drift)


class _Side:
    """One tape's events by line (findings name lines) and its client requests by id, on demand."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        self._by_line: dict[int, int] | None = None
        self._requests: dict[str, int] | None = None

    def event_at(self, line: int | None) -> dict[str, Any] | None:
        if line is None:
            return None
        if self._by_line is None:
            self._by_line = {self.tape.line_of(i): i for i in range(len(self.tape.events))}
        index = self._by_line.get(line)
        return self.tape.events[index] if index is not None else None

    def request(self, request_id: Any) -> int | None:
        """The event index of the client request with this id."""
        if self._requests is None:
            self._requests = {}
            for i, ev in enumerate(self.tape.events):
                if ev.get("kind") == "request" and ev.get("dir") == "c2s":
                    self._requests.setdefault(id_key(ev.get("id")), i)
        return self._requests.get(id_key(request_id))


def _ref(tape: Tape, index: int) -> CallRef:
    ev = tape.events[index]
    msg = ev.get("msg")
    params = msg.get("params") if isinstance(msg, dict) else None
    call = Call(seq=0, method=str(ev.get("method")), params=params, notify=False, request_event=index)
    step = ev.get("step")
    return CallRef(call.method, call.name, call.arguments, step if isinstance(step, int) else None)


def attribute_notifications(placed: Placed, golden: Tape, fresh: Tape) -> Placed:
    """`placed` with the findings of moved notifications under the call that caused them (module
    docstring); as it is when no drifted notification names another call."""
    if not any(f.category == "notification" for _, _, d in placed for f in d.findings):
        return placed
    g_side, f_side = _Side(golden), _Side(fresh)
    out: Placed = []
    moved: dict[tuple[int, str], tuple[int, CallRef, list[Finding]]] = {}
    for pos, tie, drift in placed:
        kept: list[Finding] = []
        for finding in drift.findings:
            target = _cause(finding, g_side, f_side) if finding.category == "notification" else None
            if target is None or target[1] == drift.call:
                kept.append(finding)
                continue
            at, ref = target
            moved.setdefault((at, ref.one_line()), (at, ref, []))[2].append(finding)
        if kept:
            out.append((pos, tie, Drift(drift.call, kept) if len(kept) != len(drift.findings) else drift))
    for at, ref, findings in moved.values():
        same = next((d for p, _, d in out if d.call == ref and p == at), None)
        if same is not None:
            same.findings.extend(findings)
        else:
            out.append((at, -1, Drift(ref, findings)))
    return out


def _cause(finding: Finding, g_side: _Side, f_side: _Side) -> tuple[int, CallRef] | None:
    """(fresh position, call) of the request a notification's finding names, if it names one."""
    for side, line in ((f_side, finding.fresh_line), (g_side, finding.golden_line)):
        event = side.event_at(line)
        if event is None or event.get("kind") != "notification" or CAUSE_KEY not in event:
            continue
        cause = event[CAUSE_KEY]
        index = side.request(cause)
        if index is None:
            continue
        # Placed where the call is in the fresh tape (a golden-only notification: the same request there).
        at = index if side is f_side else f_side.request(cause)
        if at is None:
            continue
        return at, _ref(side.tape, index)
    return None
