"""What the HTML pages show, as plain data: a run's sessions, drifts, surface and timelines; a tape's messages.

Owns the choices of the pages (report/html.py renders them): which message of a drifted call is
put beside its recorded twin, how a session's calls line up on its timeline, which server
request belongs under which call, a task's status path, what each tool looked like before and
after. It reads the verdict (report/model.py), the wording of report/markdown.py (the headline
and each drift said in the same words as the PR comment: `in_words`, `causes`) and the tapes a
command loaded (`SessionTapes`); it reads no file and escapes nothing: every string here may be a
server's, and only html.py's one escaper ever puts one on a page.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcptape.diff.classify import SURFACE_LISTS
from mcptape.jsonrpc import dumps, id_key
from mcptape.report import markdown, surface_notes
from mcptape.report.anchors import session_anchor
from mcptape.report.json_diff import Row, changed_paths, side_by_side
from mcptape.report.terminal import message_summary
from mcptape.tape.events import C2S, S2C
from mcptape.tape.format import Tape
from mcptape.tape.timing import call_label, event_times
from mcptape.verdict.model import Drift, Finding, RunReport, SessionResult

TIMELINE_CALLS = 400  # calls of one session on the run page; the tape page has them all
LATER_DRIFTS = 50  # drifts after the first shown per session, with their findings
FINDINGS_PER_DRIFT = 40
MESSAGE_CHARS = 64_000  # of one message's pretty JSON on the tape page; the tape file has the rest
VALUE_CHARS = 4_000  # of a finding's before/after value


@dataclass(frozen=True)
class SessionTapes:
    """The tapes behind one session's verdict, as far as the command could load them: the golden
    (A) and the fresh (B) tape as they were compared, and per fresh event its time (ms) if timed."""

    golden: Tape | None = None
    fresh: Tape | None = None
    fresh_times: list[float | None] | None = None
    missing: tuple[str, ...] = ()  # what could not be loaded, said on the page


# --- words -------------------------------------------------------------------------------------

Words = list[tuple[str, bool]]  # (text, is code): our words, and untrusted text shown as code


def words(say: Callable[[markdown.Code], str]) -> Words:
    """markdown's wording (`say(code)` builds it around code spans) as segments: each code span's
    text kept apart, so the page escapes it as untrusted and our words around it as ours."""
    spans: list[str] = []

    def code(text: str, **_: Any) -> str:
        spans.append(text)
        return f"\x00{len(spans) - 1}\x00"

    out: Words = []
    for i, piece in enumerate(say(code).split("\x00")):
        if i % 2:
            out.append((spans[int(piece)], True))
        elif piece:
            out.append((piece, False))
    return out


def plain_label(label: str) -> str:
    """A verdict label of report/markdown.py without its emoji (`🔴 structural drift` -> `structural
    drift`): a page that loads no font cannot count on one that draws them; its colours say it."""
    head, _, rest = label.partition(" ")
    return rest if rest and not head.isascii() else label


def _said(drift: Drift) -> Words:
    """The drift in the PR comment's words (markdown.in_words)."""
    return words(lambda code: markdown.in_words(drift, code))


# --- the run page ------------------------------------------------------------------------------


@dataclass
class FindingView:
    id: str
    finding: Finding
    before: str | None  # the value as text, clipped
    after: str | None


@dataclass
class DriftView:
    id: str
    drift: Drift
    said: Words
    call: str  # the call in one line (CallRef.one_line) or "session"
    findings: list[FindingView]
    more_findings: int = 0
    rows: list[Row] | None = None  # the recorded and fresh message side by side, when both tapes were loaded
    paths: list[str] = field(default_factory=list)  # the paths that differ in `rows`
    message: str = ""  # which message `rows` shows: "answer", "request", ...
    golden_line: int | None = None
    fresh_line: int | None = None
    rows_missing: str | None = None  # why there is no side-by-side


@dataclass
class TimelineCall:
    index: int  # of the request event, 1-based
    step: int | None
    label: str
    outcome: str  # ok | error | no answer
    sent_ms: float | None
    latency_ms: float | None
    share: float  # latency / the session's slowest (0..1), for the bar
    nested: int  # server requests and notifications that arrived during it
    drifted: str | None = None  # the id of the drift at this call


@dataclass
class Timeline:
    calls: list[TimelineCall]
    timed: bool
    more: int  # calls not shown
    total_ms: float | None


@dataclass
class SessionView:
    id: str
    result: SessionResult
    label: str  # ✅ same, 🔴 structural drift, ...
    first: DriftView | None
    later: list[DriftView]
    more_drifts: int
    timeline: Timeline | None
    missing: tuple[str, ...]


@dataclass
class CauseView:
    severity: str
    said: Words
    sessions: list[tuple[str, str]]  # (name, anchor)


@dataclass
class ItemView:
    """One tool (prompt, resource) of a server's surface, before and after."""

    kind: str  # tool | prompt | resource | resource template
    name: str
    change: str  # same | added | removed | breaking | compatible | cosmetic | renamed
    rows: list[Row]


@dataclass
class SurfaceView:
    server: str
    session: str  # the session whose tapes show it
    items: list[ItemView]

    @property
    def changed(self) -> int:
        return sum(1 for item in self.items if item.change != "same")


@dataclass
class RunView:
    report: RunReport
    headline: str  # 🔴 structural drift
    counts: str
    causes: list[CauseView]
    first: SessionView | None  # the session of the headline's drift
    sessions: list[SessionView]
    surfaces: list[SurfaceView]
    security: list[tuple[str, str, Finding]]  # (session, anchor, finding)
    costs: list[surface_notes.ServerCost]
    coverage: list[surface_notes.ServerCoverage]
    redactions: str | None
    accept: str | None  # the commands that accept the drift


def _text(value: Any, limit: int = VALUE_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=repr)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


def _event_at(tape: Tape | None, line: int | None) -> tuple[int, dict[str, Any]] | None:
    if tape is None or line is None:
        return None
    for i in range(len(tape.events)):
        if tape.line_of(i) == line:
            return i, tape.events[i]
    return None


def _message_of(event: dict[str, Any]) -> Any:
    """What a reviewer compares of an event: its JSON-RPC message without the id (which shifts
    when a call moves and says nothing), or the event itself when it is no message."""
    msg = event.get("msg")
    if isinstance(msg, dict):
        return {k: v for k, v in msg.items() if k not in ("id", "jsonrpc")}
    return {k: v for k, v in event.items() if k not in ("raw",)}


def _what(event: dict[str, Any] | None) -> str:
    if event is None:
        return "message"
    kind = event.get("kind")
    return {"response": "answer", "error": "error answer"}.get(str(kind), str(kind or "event"))


def drift_view(drift: Drift, did: str, tapes: SessionTapes | None, *, side_by_side_rows: bool) -> DriftView:
    findings = drift.findings[:FINDINGS_PER_DRIFT]
    view = DriftView(
        id=did, drift=drift, said=_said(drift),
        call=drift.call.one_line() if drift.call is not None else "session",
        findings=[FindingView(f"{did}-finding-{k + 1}", f, None if f.before is None else _text(f.before),
                              None if f.after is None else _text(f.after)) for k, f in enumerate(findings)],
        more_findings=len(drift.findings) - len(findings),
    )
    first = drift.headline_finding
    view.golden_line = next((f.golden_line for f in (first, *drift.findings) if f.golden_line is not None), None)
    view.fresh_line = next((f.fresh_line for f in (first, *drift.findings) if f.fresh_line is not None), None)
    if not side_by_side_rows:
        return view
    if tapes is None or (tapes.golden is None and tapes.fresh is None):
        view.rows_missing = "the tapes were not loaded"
        return view
    recorded = _event_at(tapes.golden, view.golden_line)
    fresh = _event_at(tapes.fresh, view.fresh_line)
    if recorded is None and fresh is None:
        gone = [side for side, tape in (("golden", tapes.golden), ("fresh", tapes.fresh)) if tape is None]
        view.rows_missing = (f"the {' and '.join(gone)} tape {'is' if len(gone) == 1 else 'are'} not at hand"
                             if gone else "the finding names no message")
        return view
    view.message = _what((fresh or recorded or (0, None))[1])
    view.rows = side_by_side(None if recorded is None else _message_of(recorded[1]),
                             None if fresh is None else _message_of(fresh[1]))
    view.paths = changed_paths(view.rows)
    return view


def _calls(tape: Tape, times: list[float | None] | None) -> list[tuple[int, int | None, dict[str, Any]]]:
    """(request index, answer index, request event) for each client request, in order."""
    open_calls: dict[str, int] = {}
    answers: dict[int, int] = {}
    for i, ev in enumerate(tape.events):
        if ev.get("kind") == "request" and ev.get("dir") == C2S:
            open_calls[id_key(ev.get("id"))] = i
        elif ev.get("kind") in ("response", "error") and ev.get("dir") == S2C:
            req = open_calls.pop(id_key(ev.get("id")), None)
            if req is not None:
                answers[req] = i
    return [(i, answers.get(i), ev) for i, ev in enumerate(tape.events) if ev.get("kind") == "request" and ev.get("dir") == C2S]


def timeline(tape: Tape, times: list[float | None] | None, drifted: Mapping[tuple[int | None, str], str],
             limit: int = TIMELINE_CALLS) -> Timeline:
    """The session's calls in order, with their latency where the tape is timed; `drifted` maps a
    call (its step and label, `tools/call add`) to the drift found at it."""
    parents = nesting(tape)
    under: dict[int, int] = {}
    for parent in parents.values():
        under[parent] = under.get(parent, 0) + 1
    rows: list[TimelineCall] = []
    slowest = 0.0
    for i, answer, ev in _calls(tape, times):
        sent = times[i] if times is not None else None
        got = times[answer] if times is not None and answer is not None else None
        latency = round(got - sent, 2) if sent is not None and got is not None else None
        slowest = max(slowest, latency or 0.0)
        outcome = "no answer" if answer is None else "error" if _failed(tape.events[answer]) else "ok"
        step = ev.get("step") if isinstance(ev.get("step"), int) else None
        label = call_label(str(ev.get("method")), (ev.get("msg") or {}).get("params"))
        rows.append(TimelineCall(i + 1, step, label, outcome, sent, latency, 0.0, under.get(i, 0),
                                 drifted.get((step, label))))
    for row in rows:
        if row.latency_ms is not None and slowest > 0:
            row.share = max(0.01, row.latency_ms / slowest)
    timed = times is not None and any(r.latency_ms is not None for r in rows)
    total = round(sum(r.latency_ms or 0.0 for r in rows), 2) if timed else None
    return Timeline(rows[:limit], timed, max(0, len(rows) - limit), total)


def _failed(answer: dict[str, Any]) -> bool:
    if answer.get("kind") == "error":
        return True
    result = (answer.get("msg") or {}).get("result")
    return isinstance(result, dict) and result.get("isError") is True


def session_view(s: SessionResult, tapes: SessionTapes | None) -> SessionView:
    sid = session_anchor(s.name)
    # The headline (verdict/model.headline: the drift that decided the exit) first, the rest in the
    # diff's order; a session with info notes alone has no first drift, only later ones.
    head = s.diff.first if s.diff is not None else None
    listed = s.diff.drifts if s.diff is not None else []
    drifts = [head, *(d for d in listed if d is not head)] if head is not None else list(listed)
    shown = 1 if head is not None else 0
    views = [drift_view(d, f"{sid}-drift-{k + 1}", tapes, side_by_side_rows=k < shown)
             for k, d in enumerate(drifts[:LATER_DRIFTS + shown])]
    line = None
    tape: Tape | None = None
    times = None
    if tapes is not None:
        tape = tapes.fresh or tapes.golden
        times = tapes.fresh_times if tapes.fresh is not None else None
    if tape is not None:
        drifted: dict[tuple[int | None, str], str] = {}
        for d in views:
            if d.drift.call is not None:
                label = f"{d.drift.call.method} {d.drift.call.name}" if d.drift.call.name else d.drift.call.method
                drifted.setdefault((d.drift.call.step, label), d.id)
        line = timeline(tape, times, drifted)
    return SessionView(sid, s, plain_label(markdown.VERDICT_LABEL.get(s.verdict, s.verdict)), views[0] if shown else None,
                       views[shown:], max(0, len(drifts) - shown - LATER_DRIFTS), line,
                       tapes.missing if tapes is not None else ())


def _listed(tape: Tape | None, method: str) -> dict[str, Any] | None:
    """name -> item of the last answer to `method` (tools/list, ...) in the tape; None if it never listed."""
    if tape is None:
        return None
    list_key, id_field, _, _ = SURFACE_LISTS[method]
    found: dict[str, Any] | None = None
    for ev in tape.events:
        if ev.get("kind") == "response" and ev.get("method") == method and ev.get("dir") == S2C:
            result = (ev.get("msg") or {}).get("result")
            items = result.get(list_key) if isinstance(result, dict) else None
            if isinstance(items, list):
                found = found or {}
                for item in items:
                    if isinstance(item, dict) and isinstance(item.get(id_field), str):
                        found[item[id_field]] = item
    return found


def _classes(report: RunReport) -> dict[str, str]:
    """What the verdict called each changed item (prefixed as SurfaceChanges names it: `prompt:x`)."""
    out: dict[str, str] = {}
    surface = markdown.merged_surface(report)
    for attr in ("added", "removed", "breaking", "compatible", "cosmetic"):
        for name in getattr(surface, attr):
            if " → " in name:  # a rename: `old → new`
                old, new = name.split(" → ", 1)
                out.setdefault(old, "renamed")
                out.setdefault(new, "renamed")
            else:
                out.setdefault(name, attr)
    return out


def surfaces(report: RunReport, tapes: Mapping[str, SessionTapes]) -> list[SurfaceView]:
    """Per server, from the first session whose tapes list its surface: every item, before and after."""
    classes = _classes(report)
    out: dict[str, SurfaceView] = {}
    for s in report.sessions:
        t = tapes.get(s.name)
        if t is None:
            continue
        server = s.surface_facts.server if s.surface_facts is not None and s.surface_facts.server else None
        either = t.fresh or t.golden
        server = server or str((either.header if either is not None else {}).get("server") or "(server)")
        if server in out:
            continue
        items: list[ItemView] = []
        for method, (_, _, noun, prefix) in SURFACE_LISTS.items():
            before, after = _listed(t.golden, method), _listed(t.fresh, method)
            if before is None and after is None:
                continue
            a, b = before or {}, after or {}
            for name in [*b, *(n for n in a if n not in b)]:
                change = classes.get(prefix + name) or ("added" if name not in a else "removed" if name not in b
                                                         else "same" if a[name] == b[name] else "changed")
                items.append(ItemView(noun, name, change, side_by_side(a.get(name), b.get(name))))
        if items:
            out[server] = SurfaceView(server, s.name, items)
    return list(out.values())


def run_view(report: RunReport, tapes: Mapping[str, SessionTapes], accept: str | None = None) -> RunView:
    first = report.first_drift()
    sessions = [session_view(s, tapes.get(s.name)) for s in report.sessions]
    first_view = next((v for v in sessions if first is not None and v.result is first[0]), None)
    causes = [CauseView(c.severity, _said(c.drift), [(s.name, session_anchor(s.name)) for s in c.sessions])
              for c in markdown.causes(report)]
    return RunView(
        report=report,
        headline=plain_label(markdown.RESULT_HEADLINE.get(report.result, report.result)),
        counts=markdown.counts_line(report),
        causes=causes,
        first=first_view,
        sessions=sessions,
        surfaces=surfaces(report, tapes),
        security=[(s.name, session_anchor(s.name), f) for s, f in surface_notes.security_findings(report)],
        costs=surface_notes.costs(report),
        coverage=surface_notes.coverage(report),
        redactions=report.redaction_summary(),
        accept=accept,
    )


# --- the tape page -----------------------------------------------------------------------------


def nesting(tape: Tape) -> dict[int, int]:
    """Which client call each server message arrived in: event index -> the request's index.

    A server request (sampling, elicitation, roots), the client's answer to it and a server
    notification belong to the client call open when they crossed the wire: the one their
    progress token names, else the latest still open. What arrives with no call open (a log
    line at start-up) belongs to none and is absent here.
    """
    open_calls: list[int] = []
    by_id: dict[str, int] = {}
    by_token: dict[str, int] = {}
    server_requests: dict[str, int] = {}  # id of a server request -> the call it came in
    out: dict[int, int] = {}
    for i, ev in enumerate(tape.events):
        kind, direction = ev.get("kind"), ev.get("dir")
        msg = ev.get("msg") if isinstance(ev.get("msg"), dict) else {}
        assert isinstance(msg, dict)
        if kind == "request" and direction == C2S:
            open_calls.append(i)
            by_id[id_key(ev.get("id"))] = i
            params = msg.get("params")
            meta = params.get("_meta") if isinstance(params, dict) else None
            token = meta.get("progressToken") if isinstance(meta, dict) else None
            if token is not None:
                by_token[dumps(token)] = i
        elif kind in ("response", "error") and direction == S2C:
            req = by_id.pop(id_key(ev.get("id")), None)
            if req is not None and req in open_calls:
                open_calls.remove(req)
        elif direction == S2C and kind in ("request", "notification"):
            params = msg.get("params")
            token = params.get("progressToken") if isinstance(params, dict) else None
            parent = by_token.get(dumps(token)) if token is not None else None
            if parent is None and open_calls:
                parent = open_calls[-1]
            if parent is not None:
                out[i] = parent
                if kind == "request":
                    server_requests[id_key(ev.get("id"))] = parent
        elif direction == C2S and kind in ("response", "error"):
            parent = server_requests.pop(id_key(ev.get("id")), None)
            if parent is not None:
                out[i] = parent
    return out


@dataclass
class EventView:
    index: int  # 1-based
    line: int
    dir: str
    kind: str
    id: str
    method: str
    target: str  # the tool, prompt or resource
    summary: str
    body: str  # the message, pretty JSON, clipped at MESSAGE_CHARS
    at_ms: float | None
    latency_ms: float | None
    parent: int | None  # the 1-based index of the call it arrived in
    method_key: int  # index into TapeView.methods (the filter's value: never a server's text in an attribute)
    target_key: int  # index into TapeView.targets, 0 for none
    problem: bool  # an error answer, garbage, a crash


@dataclass
class TaskView:
    task_id: str
    call: int | None  # the 1-based index of the request that started it
    label: str
    statuses: list[str]


@dataclass
class TapeView:
    id: str  # the anchor prefix of its rows: `a`, `b`, or `tape`
    title: str  # golden (A), fresh (B), or the tape's name
    tape: Tape
    facts: list[tuple[str, str]]  # (label, value) for the header
    events: list[EventView]
    methods: list[str]  # the filter's options; methods[0] is ""
    targets: list[str]
    tasks: list[TaskView]
    timed: bool

    @property
    def directions(self) -> list[str]:
        return sorted({e.dir for e in self.events if e.dir})

    @property
    def kinds(self) -> list[str]:
        return sorted({e.kind for e in self.events if e.kind})


def _pretty(event: dict[str, Any]) -> str:
    value = event.get("msg") if isinstance(event.get("msg"), dict) else {k: v for k, v in event.items() if k != "raw"}
    text = json.dumps(value, ensure_ascii=False, indent=2, default=repr)
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + f"\n… {len(text) - MESSAGE_CHARS} more characters (in the tape)"


def _target(event: dict[str, Any]) -> str:
    msg = event.get("msg") if isinstance(event.get("msg"), dict) else {}
    assert isinstance(msg, dict)
    params = msg.get("params") if event.get("kind") in ("request", "notification") else event.get("params")
    if isinstance(params, dict):
        for key in ("name", "uri"):
            if isinstance(params.get(key), str):
                return str(params[key])
    return ""


_STATUS_HOLDERS = (("result",), ("result", "task"), ("params",))


def tasks(tape: Tape) -> list[TaskView]:
    """Every task the tape shows and its status path (working → input_required → completed), from
    the answers and notifications that name a `taskId` with a `status`, in wire order."""
    found: dict[str, TaskView] = {}
    requests: dict[str, int] = {}
    for i, ev in enumerate(tape.events):
        if ev.get("kind") == "request" and ev.get("dir") == C2S:
            requests[id_key(ev.get("id"))] = i
        if ev.get("dir") != S2C or ev.get("kind") not in ("response", "notification"):
            continue
        msg = ev.get("msg") if isinstance(ev.get("msg"), dict) else {}
        assert isinstance(msg, dict)
        for holder_path in _STATUS_HOLDERS:
            holder: Any = msg
            for key in holder_path:
                holder = holder.get(key) if isinstance(holder, dict) else None
            if not (isinstance(holder, dict) and isinstance(holder.get("taskId"), str) and isinstance(holder.get("status"), str)):
                continue
            task_id = holder["taskId"]
            view = found.get(task_id)
            if view is None:
                req = requests.get(id_key(ev.get("id"))) if ev.get("kind") == "response" else None
                label = call_label(str(tape.events[req].get("method")), (tape.events[req].get("msg") or {}).get("params")) \
                    if req is not None else ""
                view = found[task_id] = TaskView(task_id, None if req is None else req + 1, label, [])
            if not view.statuses or view.statuses[-1] != holder["status"]:
                view.statuses.append(holder["status"])
            break
    return list(found.values())


def tape_view(tape: Tape, *, id: str = "tape", title: str | None = None, times: list[float | None] | None = None) -> TapeView:
    times = times if times is not None else event_times(tape)
    parents = nesting(tape)
    answered: dict[int, float] = {}
    for i, answer, _ in _calls(tape, times):
        if times is not None and answer is not None and times[i] is not None and times[answer] is not None:
            answered[answer] = round((times[answer] or 0.0) - (times[i] or 0.0), 2)
    methods: dict[str, int] = {"": 0}
    targets: dict[str, int] = {"": 0}
    events: list[EventView] = []
    for i, ev in enumerate(tape.events):
        method = str(ev.get("method") or "")
        target = _target(ev)
        kind = str(ev.get("kind") or "")
        events.append(EventView(
            index=i + 1, line=tape.line_of(i), dir=str(ev.get("dir") or ""), kind=kind,
            id=dumps(ev["id"]) if "id" in ev else "", method=method, target=target,
            summary=message_summary(ev, 160) or "(no parameters)", body=_pretty(ev),
            at_ms=times[i] if times is not None else None, latency_ms=answered.get(i),
            parent=parents[i] + 1 if i in parents else None,
            method_key=methods.setdefault(method, len(methods)), target_key=targets.setdefault(target, len(targets)),
            problem=kind in ("error", "garbage", "exit") or (kind == "response" and _failed(ev)),
        ))
    header = tape.header
    facts = [("protocol", str(tape.protocol or "?")), ("transport", str(header.get("transport", "?"))),
             ("events", str(len(tape.events))), ("complete", "yes" if tape.complete else "no: cut short (no footer)"),
             ("recorded by", f"mcptape {header.get('version', '?')}")]
    if isinstance(header.get("server"), str):
        facts.insert(0, ("server", header["server"]))
    fork = header.get("fork")
    if isinstance(fork, dict):
        facts.append(("fork of", f"{fork.get('parent')} at call {fork.get('at')} ({fork.get('change')})"))
    return TapeView(id, title or tape.name, tape, facts, events, list(methods), list(targets), tasks(tape),
                    timed=times is not None)


__all__ = ["RunView", "SessionTapes", "TapeView", "nesting", "run_view", "tape_view", "tasks", "timeline"]
