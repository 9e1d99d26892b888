"""Which call a drift belongs to, when the events do not sit where calls.py looks for it.

Owns two corrections to the drifts compare.py places:
- moved notifications: normalize.canonical_order moves racing notifications (log messages,
  list_changed, ...) after the last step, so calls.py's rule (a notification belongs to the
  latest client message) hands each of them to the session's last call. One that arrived while a
  client request was unanswered carries that request's id (normalize.CAUSE_KEY, `"during"`): its
  findings go to the drift of that call, placed where that call is, so "first drifted call" and
  the report name the call whose handler logged, not the last step. A notification without it
  (a timer's, between calls; a tape from before the key) stays where calls.py put it.
- server requests: they are compared over the session (classify.check_server_requests: their
  timing races the calls), so their drifts had no call. One sent while a client request was
  unanswered (a sampling request inside the tool call that runs the loop) is that call's drift,
  as the same question asked in a 2026-07-28 input_required answer is. A timer's (roots/list
  between calls) stays the session's.
Pure: reads the tapes' events, builds no calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcptape.diff.calls import Call
from mcptape.jsonrpc import id_key
from mcptape.tape.format import Tape
from mcptape.verdict.model import CallRef, Drift, Finding
from mcptape.volatility.normalize import CAUSE_KEY

Placed = list[tuple[int, int, Drift]]  # compare.py's: (position in the fresh tape, tie-breaker, drift)


class _Side:
    """One tape's events by line (findings name lines) and its client requests by id, on demand."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        self._by_line: dict[int, int] | None = None
        self._requests: dict[str, int] | None = None
        self._open: list[int | None] | None = None

    def index_at(self, line: int | None) -> int | None:
        if line is None:
            return None
        if self._by_line is None:
            self._by_line = {self.tape.line_of(i): i for i in range(len(self.tape.events))}
        return self._by_line.get(line)

    def event_at(self, line: int | None) -> dict[str, Any] | None:
        index = self.index_at(line)
        return self.tape.events[index] if index is not None else None

    def open_at(self, index: int) -> int | None:
        """The event index of the newest client request still unanswered when event `index` came."""
        if self._open is None:
            self._open = []
            waiting: dict[str, int] = {}
            for i, ev in enumerate(self.tape.events):
                self._open.append(next(reversed(waiting.values()), None))
                kind, direction = ev.get("kind"), ev.get("dir")
                if kind == "request" and direction == "c2s":
                    waiting[id_key(ev.get("id"))] = i
                elif kind in ("response", "error") and direction == "s2c":
                    waiting.pop(id_key(ev.get("id")), None)
        return self._open[index]

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
    step, session = ev.get("step"), ev.get("session")
    return CallRef(call.method, call.name, call.arguments, step if isinstance(step, int) else None,
                   session if isinstance(session, int) else None)


Target = Callable[[Finding, "_Side", "_Side"], "tuple[int, CallRef] | None"]


def attribute_notifications(placed: Placed, golden: Tape, fresh: Tape) -> Placed:
    """`placed` with the findings of moved notifications under the call that caused them (module
    docstring); as it is when no drifted notification names another call."""
    return _move(placed, golden, fresh, lambda f: f.category == "notification", _cause)


def attribute_server_requests(placed: Placed, golden: Tape, fresh: Tape) -> Placed:
    """`placed` with the findings of server requests sent inside a call under that call (module
    docstring)."""
    return _move(placed, golden, fresh, lambda f: str(f.kind).startswith("server_request_"), _caller)


def _move(placed: Placed, golden: Tape, fresh: Tape, concerns: Callable[[Finding], bool], target_of: Target) -> Placed:
    if not any(concerns(f) for _, _, d in placed for f in d.findings):
        return placed
    g_side, f_side = _Side(golden), _Side(fresh)
    out: Placed = []
    moved: dict[tuple[int, str], tuple[int, CallRef, list[Finding]]] = {}
    for pos, tie, drift in placed:
        kept: list[Finding] = []
        for finding in drift.findings:
            target = target_of(finding, g_side, f_side) if concerns(finding) else None
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


def _caller(finding: Finding, g_side: _Side, f_side: _Side) -> tuple[int, CallRef] | None:
    """(fresh position, call) of the client request a server request's finding was sent inside."""
    for side, line in ((f_side, finding.fresh_line), (g_side, finding.golden_line)):
        index = side.index_at(line)
        if index is None or side.tape.events[index].get("kind") != "request":
            continue
        caller = side.open_at(index)
        if caller is None:
            continue
        at = caller if side is f_side else f_side.request(side.tape.events[caller].get("id"))
        if at is None:
            continue
        return at, _ref(side.tape, caller)
    return None
