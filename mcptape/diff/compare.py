"""diff_tapes: golden + fresh tape -> DiffResult. Pure: no I/O, no clock, no heavy imports.

First both tapes lose what is negotiation, not calls (a refused `server/discover` probe,
protocol.without_refused_probe) and have each paginated list walk merged into one answer
(pages.py). Then it builds the calls of both tapes (calls.py) — only inside the window where they are not the
same, closed stretches of events (calls.find_window; `_build` checks the window's two
assumptions and widens it when they fail), and in the window's Stretches after it, whose calls
pair one for one — pairs them (align.py), runs the registered classifiers (classify.py) on each
pair that is not the same events on both sides (calls.Call.same_events: such calls cannot
drift, which is what skipping the unchanged stretches relies on) and the session checks once,
applies the project's DriftSettings, and groups what is left per call in fresh-tape order, the
headline first (verdict.model.headline). Drifts judged elsewhere on a fresh tape (`Placed`: the
conformance gate's, mcptape/conformance/gate.py, which sits above diff) join them, placed the same way.

DriftSettings, as read here (config/models.py holds the model):
- `added_surface`: severity of a tool/resource/prompt that appeared (default structural).
- `fail_on`: {"category" or "category.kind": severity} overrides the severity of matching
  findings; "category.kind" wins over "category". E.g. {"schema.cosmetic": "info",
  "notification": "structural"}. Severity "info" reports without failing.
- `ignore`: a list of rules; a finding matching every key a rule gives is dropped. Keys:
  `path` (a glob over the finding path; matches the path or anything beneath it, so
  "result.content[0].text" also drops "result.content[0].text(json).time"),
  `category` (a glob over "category.kind", e.g. "schema.cosmetic" or "notification*"),
  `method` (a glob over the call's method) and `name` (a glob over the tool/prompt/URI).
  In globs `*` matches any run of characters (dots and brackets included), `?` one character;
  everything else is literal (so `[0]` means the index 0, not a character class).
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcptape.diff import classify, protocol
from mcptape.diff.align import Step, align
from mcptape.diff.attribution import attribute_notifications, attribute_server_requests
from mcptape.diff.calls import Call, TapeCalls, Window, build_calls, build_stretch, find_window
from mcptape.diff.checks import Checks, default_checks
from mcptape.diff.classify import Pair, SurfaceNote
from mcptape.diff.pages import merged_pages
from mcptape.diff.values import clip
from mcptape.tape.format import Tape
from mcptape.verdict.model import (
    CallRef,
    DiffResult,
    Drift,
    Finding,
    SurfaceChanges,
    headline,
)
from mcptape.verdict.vocabulary import SEVERITY_EXIT, Severity

if TYPE_CHECKING:
    from mcptape.config.models import DriftSettings

def _glob(pattern: str, *, subtree: bool = False) -> re.Pattern[str]:
    parts = []
    for ch in pattern:
        parts.append(".*" if ch == "*" else "." if ch == "?" else re.escape(ch))
    tail = r"(?:[.\[(].*)?" if subtree else ""
    return re.compile("".join(parts) + tail + r"\Z", re.DOTALL)


@dataclass
class _Rule:
    path: re.Pattern[str] | None
    category: re.Pattern[str] | None
    method: re.Pattern[str] | None
    name: re.Pattern[str] | None

    def matches(self, finding: Finding, call: Call | None) -> bool:
        if self.path is not None and not self.path.match(finding.path):
            return False
        if self.category is not None and not self.category.match(f"{finding.category}.{finding.kind or ''}") \
                and not self.category.match(finding.category):
            return False
        if self.method is not None and (call is None or not self.method.match(call.method)):
            return False
        return not (self.name is not None and (call is None or not self.name.match(call.name or "")))


@dataclass
class Policy:
    added_surface: Severity
    fail_on: dict[str, Severity]
    rules: list[_Rule]

    @classmethod
    def from_settings(cls, drift: DriftSettings | None) -> Policy:
        if drift is None:
            return cls("structural", {}, [])
        rules = []
        for rule in drift.ignore:  # its keys were checked when the config loaded (config.DriftSettings)
            rules.append(_Rule(
                _glob(rule["path"], subtree=True) if "path" in rule else None,
                _glob(rule["category"]) if "category" in rule else None,
                _glob(rule["method"]) if "method" in rule else None,
                _glob(rule["name"]) if "name" in rule else None,
            ))
        return cls(drift.added_surface, dict(drift.fail_on), rules)

    def apply(self, findings: Iterable[Finding], call: Call | None) -> list[Finding]:
        out = []
        for f in findings:
            if any(rule.matches(f, call) for rule in self.rules):
                continue
            override = self.fail_on.get(f"{f.category}.{f.kind}") or self.fail_on.get(f.category)
            if override is not None:
                f.severity = override
            out.append(f)
        return out


def call_ref(tc: TapeCalls, call: Call) -> CallRef:
    step = session = None
    event = call.request_event if call.request_event is not None else call.answer_event
    if event is not None:
        step = tc.tape.events[event].get("step")
        session = tc.tape.events[event].get("session")
    if not isinstance(step, int):
        step = call.ordinal
    return CallRef(method=call.method, name=call.name, arguments=call.arguments, step=step,
                   session=session if isinstance(session, int) else None)


@dataclass(frozen=True)
class Placed:
    """Drifts found by another judge on one tape, each at an event index of that `tape` (the fresh
    recording it checked, possibly before normalization: the same events, perhaps fewer of the
    handshake's): diff places them in the report among its own by that event's line."""

    tape: Tape
    drifts: list[tuple[int, Drift]]


def diff_tapes(
    golden: Tape,
    fresh: Tape,
    drift: DriftSettings | None = None,
    *,
    placed: Placed | None = None,
    checks: Checks | None = None,
) -> DiffResult:
    """Compare a golden (A) and a fresh (B) tape; drifts[0] is the first drifted call.

    `placed`: drifts another judge found on the fresh recording (the conformance gate,
    conformance/gate.py), placed in tape order among these and ranked with them for the headline.
    `checks` is the registry of checks to run (checks.py; default: mcptape's own).
    """
    with no_cyclic_gc():
        return _diff(golden, fresh, drift, placed, checks or default_checks())


@contextlib.contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Judging creates ~3 objects per event and no cycles; with a few million live objects from
    the tapes, the cyclic GC's full passes would cost more than the diff itself (2.5x measured)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def comparable(golden: Tape) -> Tape:
    """The golden tape as diff reads it before pairing: the refused `server/discover` probe out,
    each paginated list walk merged into one answer. A judge placing drifts (Placed) reads its
    baseline this way too, so a finding's path means the same on both sides."""
    return merged_pages(protocol.without_refused_probe(golden))


def _build(prep: protocol.Prepared) -> tuple[TapeCalls, TapeCalls, Window, list[tuple[Call, Call]]]:
    """Calls of both tapes inside their window (calls.find_window), checked against its two
    assumptions, and the pairs of calls in its stretches (calls.Stretch)."""
    window = find_window(prep.golden.events, prep.fresh.events)
    alike = True  # the window's end may take in events that differ in server output (Stretches)
    pairs: list[tuple[Call, Call]] = []
    while True:
        g = build_calls(prep.golden, window, prepare=prep.strip)
        f = build_calls(prep.fresh, window, fresh=True, prepare=prep.strip)
        if window.cuts_prefix() and (g.unknown_token or f.unknown_token):
            # A progress notification may name a request before the window: build from the start.
            window = window.without_prefix()
            continue
        if not window.cuts_suffix():
            break
        stretched = _stretch_pairs(prep, window, g, f)
        if stretched is not None and _suffix_pairs(g.calls, f.calls, prep, window):
            pairs = stretched
            break
        if alike:  # the end where the events stop being equal may hold where this one did not
            alike = False
            strict = find_window(prep.golden.events, prep.fresh.events, alike=False)
            if strict.stop_g != window.stop_g:
                window = strict if window.cuts_prefix() else strict.without_prefix()
                continue
        window = window.without_suffix()
    if prep.protocols is not None:
        g.protocol_of, f.protocol_of = prep.protocols
    return g, f, window, pairs


def _stretch_pairs(prep: protocol.Prepared, window: Window, g: TapeCalls, f: TapeCalls) -> list[tuple[Call, Call]] | None:
    """The calls of the window's stretches, golden with fresh (align.py's suffix pass pairs them
    so, see _suffix_pairs); None if a stretch does not hold the same calls in both tapes."""
    pairs: list[tuple[Call, Call]] = []
    shift = window.shift
    for stretch in window.stretches:
        golden = build_stretch(prep.golden, stretch.start, stretch.stop, g.last_ordinal + stretch.calls_before,
                               prep.strip)
        fresh = build_stretch(prep.fresh, stretch.start + shift, stretch.stop + shift,
                              f.last_ordinal + stretch.calls_before, prep.strip)
        if len(golden) != len(fresh) or not all(a.same_request(b) for a, b in zip(golden, fresh, strict=True)):
            return None
        pairs.extend(zip(golden, fresh, strict=True))
    return pairs


def _suffix_pairs(golden: list[Call], fresh: list[Call], prep: protocol.Prepared, window: Window) -> bool:
    """Would align.py's suffix pass pair the calls after the window with each other?

    It would unless its prefix pass runs through all of one side's calls inside the window
    while the other side has more, and then on: it compares the first call after the window on
    the short side with the long side's next call, and pairs them if they are the same request.
    (Calls before the window pair with each other in either case.)
    """
    n, m = len(golden), len(fresh)
    lo = 0
    while lo < n and lo < m and golden[lo].same_request(fresh[lo]):
        lo += 1
    if lo < min(n, m) or n == m or window.stop_g is None:
        return True
    # The window ends at a client message, the same in both tapes: the first call after it.
    after = build_stretch(prep.golden, window.stop_g, window.stop_g + 1, 0, prep.strip)
    return bool(after) and not after[0].same_request(fresh[lo] if n < m else golden[lo])


# (position in the fresh tape, tie-breaker, drift): sorted, the report's order
_Placed = list[tuple[int, int, Drift]]


def _diff(golden: Tape, fresh: Tape, drift: DriftSettings | None, more: Placed | None, registry: Checks) -> DiffResult:
    policy = Policy.from_settings(drift)
    # Negotiation out, the pages of each list walk as one list (pages.py): both tapes alike.
    golden, fresh = comparable(golden), comparable(fresh)
    # 2026-07-28 envelope out, handshakes paired across eras (protocol.py); unchanged stretches skipped (calls.py)
    prep = protocol.prepare_pair(golden, fresh)
    golden, fresh = prep.golden, prep.fresh
    g, f, window, stretch_pairs = _build(prep)
    steps = align(g.calls, f.calls)
    # Removed golden calls wait before the next fresh call; after the window, that is its first one.
    end = window.stop_f if window.stop_f is not None else len(fresh.events)
    placed, surface_notes = _call_drifts(g, f, steps, stretch_pairs, end, policy, registry)
    placed = attribute_notifications(placed, golden, fresh)  # a moved log stays its call's (attribution.py)
    last_step = len(steps) + len(stretch_pairs)
    placed.extend(_session_drifts(g, f, policy, registry, last_step))
    placed = attribute_server_requests(placed, golden, fresh)  # a sampling request is its tool call's
    if more is not None:
        for pos, d in more.drifts:
            placed.append((_prepared_index(more.tape, fresh, pos), last_step + 1, d))

    placed.sort(key=lambda t: (t[0], t[1]))
    # The headline (verdict.model.headline) first, for readers of the JSON's drifts[0]; the rest stay
    # in fresh-tape order, as a reviewer walks the session.
    real = [d for _, _, d in placed if d.severity != "info"]
    head = headline(real)
    if head is not None:
        real.insert(0, real.pop(next(i for i, d in enumerate(real) if d is head)))
    info = [d for _, _, d in placed if d.severity == "info"]
    worst: Severity = max((d.severity for d in real), key=SEVERITY_EXIT.__getitem__, default="info")
    verdict: Any = "same" if worst == "info" else worst
    return DiffResult(
        verdict=verdict,
        drifts=real + info,
        surface=_surface(surface_notes),
        a=str(golden.path) if golden.path else golden.name,
        b=str(fresh.path) if fresh.path else fresh.name,
    )


def _call_drifts(
    g: TapeCalls, f: TapeCalls, steps: list[Step], stretch_pairs: list[tuple[Call, Call]], end: int, policy: Policy,
    registry: Checks,
) -> tuple[_Placed, list[SurfaceNote]]:
    """The drifts of the aligned calls (the call checks on each pair; added and removed calls),
    then of the calls after the window that differ in server output; and their surface notes."""
    placed: _Placed = []
    surface_notes: list[SurfaceNote] = []
    next_pos = [end] * (len(steps) + 1)
    for k in range(len(steps) - 1, -1, -1):
        fc = steps[k].fresh
        next_pos[k] = fc.position if fc is not None else next_pos[k + 1]

    checks = list(registry.call_checks.values())
    g_events, f_events = g.tape.events, f.tape.events

    def compare(k: int, g_call: Call, fc: Call) -> None:
        if g_call.same_events(g_events, fc, f_events):
            return  # nothing to compare (Call.same_events); most pairs of a big tape
        pair = Pair(g_call, fc, g, f, added_surface=policy.added_surface, result_classifiers=registry.result_classifiers)
        raw: list[Finding] = []
        for check in checks:
            raw.extend(check(pair))
        if not raw:
            return
        kept = policy.apply(raw, fc)
        kept_ids = {id(x) for x in kept}
        surface_notes.extend(n for n in pair.surface if id(n.finding) in kept_ids)
        if kept:
            placed.append((fc.position, k, Drift(call_ref(f, fc), kept)))

    for k, step in enumerate(steps):
        g_call, fc = step.golden, step.fresh
        if g_call is not None and fc is not None:
            compare(k, g_call, fc)
        elif fc is not None:
            finding = Finding.of("call", "added", "", "call added (not in the golden tape)", None,
                                 _answer_brief(fc), fresh_line=f.line(fc.position))
            kept = policy.apply([finding], fc)
            if kept:
                placed.append((fc.position, k, Drift(call_ref(f, fc), kept)))
        elif g_call is not None:
            finding = Finding.of("call", "removed", "", "call removed (not in the fresh tape)",
                                 _answer_brief(g_call), golden_line=g.line(g_call.position))
            kept = policy.apply([finding], g_call)
            if kept:
                placed.append((next_pos[k], k, Drift(call_ref(g, g_call), kept)))
    # The calls after the window that differ in server output come after all of the window's.
    for k, (g_call, fc) in enumerate(stretch_pairs, start=len(steps)):
        compare(k, g_call, fc)
    return placed, surface_notes


def _session_drifts(g: TapeCalls, f: TapeCalls, policy: Policy, registry: Checks, last_step: int) -> _Placed:
    """Notifications and garbage that came before any client message, then the session checks."""
    placed: _Placed = []
    if g.prelude_notifications or f.prelude_notifications:
        pre_g = Call(-1, "(before the first call)", None, True, None, notifications=g.prelude_notifications)
        pre_f = Call(-1, "(before the first call)", None, True, None, notifications=f.prelude_notifications)
        found = classify.compare_notifications(Pair(pre_g, pre_f, g, f), pre_g.notifications, pre_f.notifications)
        kept = policy.apply(found, None)
        if kept:
            placed.append((0, -1, Drift(None, kept)))
    for session_check in registry.session_checks.values():
        for pos, finding in session_check(g, f):
            kept = policy.apply([finding], None)
            if kept:
                placed.append((pos, last_step, Drift(None, kept)))
    return placed


def _prepared_index(raw: Tape, prepared: Tape, pos: int) -> int:
    """Where event `pos` of the raw fresh tape (the one another judge checked: Placed) sits in the
    prepared one (the same index unless a refused probe or, across protocol eras, the handshake
    left it): by tape line."""
    if prepared is raw or prepared.events is raw.events:
        return pos
    return bisect.bisect_left(prepared.event_lines, raw.line_of(pos))


def _answer_brief(call: Call) -> Any:
    if call.notify:
        return {"notification": call.method}
    if call.answer is None:
        return None
    return {"error": call.answer["error"]} if "error" in call.answer else {"result": clip(call.answer.get("result"), 300)}


def _surface(notes: list[SurfaceNote]) -> SurfaceChanges:
    """Each name once per column; a changed item sits in its worst column only."""
    surface = SurfaceChanges()
    changed_rank = {"breaking": 3, "compatible": 2, "cosmetic": 1}
    worst: dict[str, str] = {}
    for note in notes:
        if note.column in ("added", "removed"):
            column = getattr(surface, note.column)
            if note.name not in column:
                column.append(note.name)
        elif changed_rank[note.column] > changed_rank.get(worst.get(note.name, ""), 0):
            worst[note.name] = note.column
    for name, column_name in worst.items():
        getattr(surface, column_name).append(name)
    return surface
