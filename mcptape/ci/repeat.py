"""`mcptape ci --repeat N`: run each session N times, find the values that vary, suggest the rules that fix them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mcptape.ci.session import CannotRecord, RunContext, Scrubbed, record, recording_error, scrub
from mcptape.config.models import HttpServer, NormalizeRule, Session, StdioServer
from mcptape.errors import EXIT_COULD_NOT_RUN
from mcptape.live.client import Recording
from mcptape.publish.telemetry import WireClock
from mcptape.tape.format import Tape
from mcptape.volatility.nondeterminism import (
    carried_state,
    find_volatile,
    ignore_hint,
    suggest_rules,
    unfixed,
    whole,
)
from mcptape.volatility.normalize import Normalizer

# -- the nondeterminism check: `mcptape ci --repeat N` -----------------------------------------------
#
# Exit codes: 0 every session gave the same normalized tape in all N runs; 1 volatile values or
# events were found (the suggested rules and advice are printed); 3 a session failed in a run
# (or the config is invalid). Goldens are never written, and no tape is compared with them.


@dataclass
class Repeated:
    """N runs of one session: normalized tapes (as ci compares them), redacted raw ones, errors."""

    session: Session
    normalized: list[list[dict[str, Any]]] = field(default_factory=list)
    raw: list[list[dict[str, Any]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class LiveRun:
    """One live run of a session: its events as ci compares them, and what else a comparison of
    two live sides needs (ci/baseline.py): the raw redacted events, the recording itself."""

    normalized: list[dict[str, Any]]  # redacted, normalized with the config's rules
    raw: list[dict[str, Any]]  # redacted, in canonical order
    recording: Recording
    scrubbed: Scrubbed | None = None  # the whole scrubbed recording: a fresh tape's parts (--out-dir, --otel)


def live_run(ctx: RunContext, session: Session, server: StdioServer | HttpServer | None = None, *,
             clock: WireClock | None = None) -> LiveRun | str:
    """One live run of `session` against `server` (default: the session's own), or the error
    (redacted): recorded and scrubbed as ci records and scrubs a session (ci/session.py).
    `clock` is told when each line crossed the wire (a trace's times: --otel)."""
    redactor = ctx.redactor.fork()
    try:
        recording = record(ctx, session, server, clock=clock)
    except CannotRecord as e:
        return redactor.redact_text(str(e))
    if recording.error is not None:
        return redactor.redact_text(recording_error(ctx, session, recording))
    scrubbed = scrub(ctx, session, recording, redactor)
    return LiveRun(scrubbed.events, scrubbed.as_sent, recording, scrubbed)


def repeat_session(ctx: RunContext, session: Session, runs: int) -> Repeated:
    # One run after the other, not side by side: a clock that ticks in seconds looks constant to
    # runs that start together, and a sandbox is restored between runs. Sessions run in parallel.
    out = Repeated(session)
    for run in range(1, runs + 1):
        got = live_run(ctx, session)
        if isinstance(got, str):
            out.errors.append(f"run {run}: {got}")
            continue
        out.normalized.append(got.normalized)
        out.raw.append(got.raw)
    return out


def _yaml_rule(rule: dict[str, Any]) -> str:
    key = "path" if rule.get("path") else "pattern"
    lines = []
    if rule.get("seen"):
        lines.append(f"  # seen: {', '.join(rule['seen'])}")
    lines.append(f"  - {key}: {json.dumps(rule[key], ensure_ascii=False)}")
    lines.append(f"    replace: {json.dumps(rule['replace'], ensure_ascii=False)}")
    lines.append(f"    reason: {json.dumps(rule['reason'], ensure_ascii=False)}")
    return "\n".join(lines)


def _tapes(events_per_run: list[list[dict[str, Any]]]) -> list[Tape]:
    return [Tape(header={}, events=events) for events in events_per_run]


@dataclass
class _SessionFindings:
    """What --repeat found in one session's runs."""

    lines: list[str]  # the report's lines about it
    exit_code: int  # 0, 1 (volatile values) or EXIT_COULD_NOT_RUN
    suggested: list[dict[str, Any]]  # the normalize rules that make it stable
    advice: list[str]  # the differences no suggested rule fixes


def _session_findings(rep: Repeated, runs: int) -> _SessionFindings:
    name = rep.session.name
    out = _SessionFindings([], 0, [], [])
    if rep.errors:
        out.exit_code = EXIT_COULD_NOT_RUN
        out.lines.append(f"{name}: FAILED in {len(rep.errors)} of {runs} runs")
        out.lines.extend(f"    {e.splitlines()[0]}" for e in rep.errors)
    if len(rep.normalized) < 2:
        if not rep.errors:
            out.lines.append(f"{name}: fewer than 2 runs, nothing to compare")
        return out
    volatiles = find_volatile(_tapes(rep.normalized))
    out.suggested = suggested = suggest_rules(volatiles)
    # Check the rules the way ci will apply them (validated as config rules, normalizer on top).
    checked = [NormalizeRule(**{k: r[k] for k in ("path", "pattern", "replace", "reason") if k in r})
               for r in suggested]
    again = Normalizer(checked, paths={})
    left = [v for v in find_volatile(_tapes([again.fresh(e) for e in rep.normalized])) if v.kind == "value"]
    left += [v for v in unfixed(volatiles, suggested) if (v.where, v.path) not in {(x.where, x.path) for x in left}]
    known = {(v.where, v.path) for v in volatiles}
    covered = [v for v in find_volatile(_tapes(rep.raw)) if v.kind == "value" and (v.where, v.path) not in known]
    state = [v for v in volatiles if carried_state(v)]
    values = [v for v in volatiles if v.kind == "value" and v not in state]
    others = [v for v in volatiles if v.kind != "value" and v not in state]
    left = [v for v in left if v not in state]
    if values or others or state:
        out.exit_code = max(out.exit_code, 1)
        out.lines.append(f"{name}: {len(values)} volatile value(s), {len(others)} difference(s) no rule can fix"
                         + (f", {len(state)} carried over between runs (state)" if state else ""))
        out.lines.extend(f"    {v.line()}" for v in values)
    elif not rep.errors:
        out.lines.append(f"{name}: stable in {len(rep.normalized)} runs")
    if state:
        out.lines.append("    state carried between runs, not volatility (the first run differs from the rest, or "
                         "a list grows run by run): the server keeps a store across runs. Reset it per run "
                         "(a fresh store file, a sandbox: see `sandbox:`), do not normalize it; no rule is proposed:")
        out.lines.extend(f"      {v.line()}" for v in state)
    if covered:
        out.lines.append(f"    already normalized (built-in rules or yours), {len(covered)} place(s):")
        out.lines.extend(f"      {v.line()}" for v in covered[:10])
    out.advice.extend(f"  {name} · {v.line()}\n    → {v.advice}" for v in others)
    for v in left:
        if whole(v):  # an ignore of a whole array would hide every change in it
            out.advice.append(f"  {name} · {v.line()}\n    → a whole list or object differs between runs: no rule "
                              "is proposed (it would hide every change inside); make the answer stable")
        else:
            out.advice.append(f"  {name} · {v.line()}\n    → no normalize rule found that makes it stable; "
                              f"ignore it with {ignore_hint(v)} if it is expected to vary")
    return out


def analyse_repeats(results: Sequence[Repeated], runs: int) -> tuple[str, int]:
    """The `--repeat` report text and its exit code (pure over the recorded runs)."""
    lines = [f"mcptape ci --repeat {runs}: each session ran {runs} times; normalized tapes compared run by run", ""]
    rules: dict[tuple[str, str], dict[str, Any]] = {}
    advice: list[str] = []
    exit_code = 0
    for rep in results:
        found = _session_findings(rep, runs)
        lines.extend(found.lines)
        exit_code = max(exit_code, found.exit_code)
        name = rep.session.name
        for rule in found.suggested:  # one rule for every session that needs it
            key = ("path" if rule.get("path") else "pattern", str(rule.get("path") or rule.get("pattern")))
            if key in rules:
                rules[key]["reason"] += f"; also in session {name}"
            else:
                rules[key] = {**rule, "reason": f"{name}: {rule['reason']}"}
        advice.extend(found.advice)
    if rules:
        lines += ["", "Paste into mcptape.yml (append the items to an existing `normalize:` list):", "", "normalize:"]
        lines += [_yaml_rule(r) for r in rules.values()]
    if advice:
        lines += ["", "Not fixable by a normalize rule:", *advice]
    lines.append("")
    if exit_code == EXIT_COULD_NOT_RUN:
        lines.append("exit 3: a session failed in some runs (see above); fix that first")
    elif exit_code == 1:
        lines.append("exit 1: volatile values found; paste the rules, then `mcptape ci --update-golden`, review, commit")
    else:
        lines.append("exit 0: every session is stable")
    return "\n".join(lines) + "\n", exit_code


