"""init's trial: the session run as ci runs it, to find what changes from run to run before it is gated.

Owns the Trial: two runs (ci/repeat.py's repeat_session), the normalize rules that make them equal
(volatility/nondeterminism.py's suggestions, each narrowed so a real change still shows: narrow_rules;
a list or text in random order gets `order: sorted`, which wins over a placeholder), what differed
where no rule helps, and which calls that was in. trial_rounds runs it until no active call is
unstable (at most TRIAL_ROUNDS): each round comments out the calls the last one found unstable
(plan.unstable), since their golden tapes would drift on every run, and runs again without them.

The draft config it runs lives outside the repository (the command's temporary directory): a
server that lists the repository must not see a file that exists only while init runs.
Progress goes to the `progress` callback the command gives; this module never prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from mcptape.ci.repeat import repeat_session
from mcptape.ci.session import RunContext
from mcptape.config.load import LoadedConfig
from mcptape.init.plan import Plan, unstable
from mcptape.init.server import Progress
from mcptape.tape.format import Tape
from mcptape.volatility.nondeterminism import (
    Volatile,
    call_of,
    find_volatile,
    fixed_by,
    path_candidates,
    suggest_rules,
    unfixed,
)
from mcptape.volatility.normalize import Normalizer

TRIAL_GAP = 1.1  # seconds from the start of one trial run to the next (see run_trial)
TRIAL_ROUNDS = 3  # trials, each without the calls the one before found unstable (commented out)


@dataclass
class Trial:
    """What two runs of the written session showed: the normalize rules that make it stable."""

    rules: list[dict[str, Any]] = field(default_factory=list)  # suggest_rules' (path|pattern, replace, reason)
    unfixable: list[str] = field(default_factory=list)  # differences no rule fixes, one line each
    errors: list[str] = field(default_factory=list)  # runs that failed (redacted)
    unstable: dict[str, str] = field(default_factory=dict)  # tool -> how its answer differed where no rule helps
    recorded: list[dict[str, Any]] | None = None  # the second run's events, redacted: the gate's strength is measured on them


def trial_rounds(draft: Callable[[Mapping[str, Plan]], LoadedConfig], plans: Mapping[str, Plan], *,
                 http_unmanaged: bool, progress: Progress) -> tuple[Trial, dict[str, Plan]]:
    """The trial of the session `draft(plans)` writes, and the plans with the calls it found unstable
    commented out (module docstring)."""
    current = dict(plans)
    trial = Trial()
    for _ in range(TRIAL_ROUNDS):
        trial = run_trial(draft(current), http_unmanaged=http_unmanaged, progress=progress)
        found = {t: why for t, why in trial.unstable.items() if t in current and current[t].active}
        if trial.errors or not found:
            break
        # A call whose answer no rule makes stable would make the first `ci` red: it is commented
        # out with what differed, and the trial runs again without it (its calls may have moved what
        # others answer: a usage counter, a call history).
        current = unstable(current, found)
        progress(f"{len(found)} call{'s' * (len(found) != 1)} answered differently in the two trial runs where no "
                 f"normalize rule helps ({', '.join(sorted(found))}): commented out; trying again without them")
    return trial, current


def run_trial(loaded: LoadedConfig, *, http_unmanaged: bool = False, progress: Progress = lambda _line: None) -> Trial:
    """Run the session twice, as ci runs it, and keep the normalize rules that make it stable.

    Two runs, the second starting at least TRIAL_GAP seconds after the first: a clock printed in
    seconds ("created at 12:58:40 AM") must tick between them, or it looks constant here and
    drifts on the first `ci`. Each run starts the server afresh (a stdio process, an HTTP `start:`
    command), so state one run leaves is seen as what it is; an HTTP server mcptape does not start
    keeps its state between the runs, and init says so.
    """
    session = loaded.config.sessions[0]
    ctx = RunContext(loaded=loaded, update=False, out_dir=None, golden_dir=loaded.golden_dir)
    if http_unmanaged:
        progress("warning: the trial runs reach the same HTTP server process (mcptape does not start it): "
            "state it keeps between runs looks stable here, and drifts when it restarts; give init the command that "
            "starts it (mcptape init --url URL -- <command>: written as `start:`) so each run starts it afresh")
    started = time.monotonic()
    progress("trial run 1 of 2 (finding values that change from run to run)")
    first = repeat_session(ctx, session, 1)
    if first.errors:  # the second run would fail the same way: say it once
        return Trial(errors=[e.partition(": ")[2] or e for e in first.errors])
    time.sleep(max(0.0, TRIAL_GAP - (time.monotonic() - started)))
    progress("trial run 2 of 2")
    second = repeat_session(ctx, session, 1)
    trial = Trial(errors=[e.partition(": ")[2] or e for e in second.errors])
    if trial.errors:
        return trial
    trial.recorded = second.raw[0]  # for the strength of the gate written (commands/strength.py)
    volatiles = find_volatile([Tape(header={}, events=events) for events in first.normalized + second.normalized])
    trial.rules = narrow_rules(suggest_rules(volatiles), volatiles)
    for v in unfixed(volatiles, trial.rules):  # a text or list in random order: no placeholder fits it
        ordered = _order_rule(v)
        if ordered is not None and not fixed_by(v, trial.rules):
            trial.rules.append(ordered)
    left = unfixed(volatiles, trial.rules) + [v for v in volatiles if v.kind == "presence"]
    trial.unfixable = [v.line() for v in left]
    for v in left:
        method, tool = call_of(v)
        if method == "tools/call" and tool is not None:
            trial.unstable.setdefault(tool, f"{v.path}: {v.line().rpartition(': ')[2]}" if v.path else v.line())
    return trial


def _order_rule(v: Volatile) -> dict[str, Any] | None:
    """An `order: sorted` rule for a place whose runs hold the same items in another order, or None."""
    if not all(_is_text(x) or isinstance(x, list) for x in v.values):
        return None
    for candidate in path_candidates(v):
        rule: dict[str, Any] = {"path": candidate["path"], "order": "sorted"}
        if fixed_by(v, [rule]):
            rule["reason"] = _order_reason(v)
            return rule
    return None


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and len(value.split()) >= 4


def narrow_rules(rules: Sequence[dict[str, Any]], volatiles: Sequence[Volatile]) -> list[dict[str, Any]]:
    """The rules, each checked to keep a real change visible: a rule that would also hide a change the
    trial did not see (its placeholder swallows a whole text: an item added to a listed text) becomes a
    canonical order when the runs differ only in the order of the same items, and is dropped otherwise
    (the difference is then reported as one no rule fixes). Where the runs differ only in order, the
    order wins over a placeholder whatever it covers: a placeholder over "Allowed commands: ls, cat"
    would hide a command removed, the order does not."""
    out: list[dict[str, Any]] = []
    for rule in rules:
        clean: dict[str, Any] = {k: rule[k] for k in ("path", "pattern", "replace") if k in rule}
        covered = [v for v in volatiles if v.kind == "value" and fixed_by(v, [clean])]
        texts = [x for v in covered for x in v.values if _is_text(x)]
        if not texts:
            out.append(rule)
            continue
        if "pattern" in clean:
            reordered: dict[str, Any] = {"pattern": clean["pattern"], "order": "sorted"}
            if all(fixed_by(v, [reordered]) for v in covered):
                out.append({**reordered, "reason": _order_reason(covered[0])})
                continue
            probe = Normalizer([SimpleNamespace(**clean)])
            if all(probe.text(t + " and one more") != probe.text(t) for t in texts):
                out.append(rule)  # the placeholder covers a token inside the text: a change elsewhere shows
                continue
        if "pattern" in clean:
            ordered: dict[str, Any] | None = {"pattern": clean["pattern"], "order": "sorted"}
        else:  # by key, not by the list index the trial saw (a list in random order moves its items)
            ordered = next((r for r in map(_order_rule, covered) if r is not None), None)
        if ordered is not None and covered and all(fixed_by(v, [ordered]) for v in covered):
            out.append({**ordered, "reason": _order_reason(covered[0])})
    return out


def _order_reason(v: Volatile) -> str:
    return (f"the same items in {v.distinct} different orders in {v.runs} runs at {v.where} · {v.path}: put in a "
            "canonical order (an item added or removed still drifts)")
