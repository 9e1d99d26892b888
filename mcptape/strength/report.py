"""The strength report: scores per session, per tool and for the gate, the survivors named, in text and JSON.

Owns counting (`Tally`: killed, survived, ignored by design, equivalent; the score is killed over
killed + survived, the by-design and equivalent mutants counted apart), the one-line summary that
init, ci's summary and its PR comment carry, the terminal text and the JSON document. It renders
only: a server's words in it (a tool's name, a description) are escaped by the outlet that shows it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass

from mcptape.strength.judge import Mask
from mcptape.strength.measure import Judged, Measure
from mcptape.strength.mutants import MUTATIONS

REPORT_VERSION = 1
SHOWN = 12  # survivors a summary names before "… and N more"


@dataclass
class Tally:
    killed: int = 0
    survived: int = 0
    by_design: int = 0
    equivalent: int = 0

    @classmethod
    def of(cls, judged: Iterable[Judged]) -> Tally:
        tally = cls()
        for j in judged:
            setattr(tally, j.judgement.verdict, getattr(tally, j.judgement.verdict) + 1)
        return tally

    @property
    def score(self) -> float | None:
        """Killed over killed + survived, in percent, one decimal, never rounded up to 100 past a
        survivor; None if there is nothing to score."""
        scored = self.killed + self.survived
        if not scored:
            return None
        return math.floor(1000 * self.killed / scored) / 10

    def percent(self) -> str:
        score = self.score
        return "n/a" if score is None else f"{score:g}%"

    def to_dict(self) -> dict[str, object]:
        return {"score": self.score, "killed": self.killed, "survived": self.survived, "by_design": self.by_design,
                "equivalent": self.equivalent}


def meets(measure: Measure, minimum: int) -> bool:
    """Does the gate's score reach `minimum` percent? A gate with nothing to score does not."""
    score = Tally.of(measure.judged).score
    return score is not None and score >= minimum


def below_minimum(measure: Measure, minimum: int, line: int) -> str | None:
    """What a gate weaker than `drift.min_strength` says (the config's file:line, the score, the
    fix), or None if it is strong enough."""
    if meets(measure, minimum):
        return None
    passing = what_passes(measure) or "no change could be derived from the goldens"
    return (f"{measure.config}:{line}: drift.min_strength: the gate's strength is "
            f"{Tally.of(measure.judged).percent()}, under the minimum {minimum}%: {passing}; "
            "call the tools no session calls, narrow the rules named (`mcptape check --strength` lists "
            "every change that passes and why), or lower the minimum")


def _where(measure: Measure, mask: Mask) -> str:
    if mask.line <= 0:
        return mask.says
    return f"{os.path.basename(measure.config)}:{mask.line}: {mask.says}"


def _reason(measure: Measure, judged: Judged) -> str:
    if not judged.judgement.masks:
        return judged.detail  # no session reaches it: the detail says so
    return "masked by " + "; and by ".join(_where(measure, m) for m in judged.judgement.masks)


def summary_line(measure: Measure) -> str:
    """One line: the gate's score and what lets changes through, grouped by rule."""
    judged = measure.judged
    tally = Tally.of(judged)
    if tally.score is None:
        problems = [s.problem for s in measure.sessions if s.problem]
        why = f": {problems[0]}" if problems else ""
        return f"gate strength: not measured (no change to derive from the goldens{why})"
    head = (f"gate strength {tally.percent()}: {tally.killed} of {tally.killed + tally.survived} changes "
            f"derived from the goldens fail the gate")
    passing = what_passes(measure)
    if passing is None:
        return head + (f" ({tally.by_design} more hidden on purpose)" if tally.by_design else "")
    return f"{head}; {passing}"


def what_passes(measure: Measure) -> str | None:
    """"N pass: M in tools no session calls, K masked by mcptape.yml:14, ...", or None if none does."""
    survivors = [j for j in measure.judged if j.judgement.verdict == "survived"]
    if not survivors:
        return None
    unreached = [j for j in survivors if not j.judgement.masks]
    subjects = {j.subject for j in unreached}
    masked: dict[str, int] = {}
    for j in survivors:
        for mask in j.judgement.masks:
            key = f"{os.path.basename(measure.config)}:{mask.line}" if mask.line > 0 else mask.says
            masked[key] = masked.get(key, 0) + 1
    parts = [f"{len(unreached)} in {len(subjects)} tool(s), resource(s) or prompt(s) no session asks for"] if unreached else []
    parts.extend(f"{n} masked by {key}" for key, n in masked.items())
    return f"{len(survivors)} pass: {', '.join(parts)}"


def survivor_lines(measure: Measure, limit: int | None = None) -> list[str]:
    """Each survivor group (session, subject, why) on a line, the changes it covers listed."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for j in measure.judged:
        if j.judgement.verdict == "survived":
            key = (j.session, j.subject, _reason(measure, j))
            what = MUTATIONS[j.kind].what if not j.judgement.masks else f"{MUTATIONS[j.kind].what} ({j.detail})"
            groups.setdefault(key, []).append(what)
    lines = [f"{session} · {subject}: {'; '.join(whats)} — {why}" for (session, subject, why), whats in groups.items()]
    if limit is not None and len(lines) > limit:
        lines = [*lines[:limit], f"… and {len(lines) - limit} more (`mcptape check --strength` names them all)"]
    return lines


def render_text(measure: Measure) -> str:
    judged = measure.judged
    tally = Tally.of(judged)
    out = [summary_line(measure), f"  seed {measure.seed}; {tally.by_design} ignored by design, "
                                  f"{tally.equivalent} equivalent (not scored)", "", "sessions:"]
    width = max((len(s.name) for s in measure.sessions), default=0)
    for session in measure.sessions:
        t = Tally.of(session.judged)
        tail = f"  ({session.problem})" if session.problem else f"  {t.killed} of {t.killed + t.survived} caught"
        out.append(f"  {session.name:<{width}}  {t.percent():>6}{tail}")
    subjects = _by_subject(judged)
    if subjects:
        out += ["", "tools, resources, prompts:"]
        width = max(len(s) for s in subjects)
        for subject, items in subjects.items():
            t = Tally.of(items)
            out.append(f"  {subject:<{width}}  {t.percent():>6}  {t.killed} of {t.killed + t.survived} caught")
    survivors = survivor_lines(measure)
    out += ["", f"survived ({tally.survived}): changes the gate lets through"] + [f"  {line}" for line in survivors]
    if not survivors:
        out.append("  none")
    designed = [j for j in judged if j.judgement.verdict == "by_design"]
    if designed:
        out += ["", f"ignored by design ({len(designed)}): hidden by a rule written for that value"]
        out += [f"  {j.session} · {j.subject}: {MUTATIONS[j.kind].what} ({j.detail}) — {_reason(measure, j)}"
                for j in designed]
    return "\n".join(out) + "\n"


def _by_subject(judged: Iterable[Judged]) -> dict[str, list[Judged]]:
    out: dict[str, list[Judged]] = {}
    for j in judged:
        if j.subject.split(" ", 1)[0] in ("tool", "resource", "prompt"):
            out.setdefault(j.subject, []).append(j)
    return dict(sorted(out.items()))


def to_dict(measure: Measure, minimum: int | None = None) -> dict[str, object]:
    judged = measure.judged
    kinds: dict[str, list[Judged]] = {}
    for j in judged:
        kinds.setdefault(j.kind, []).append(j)
    return {
        "mcptape_strength": REPORT_VERSION,
        "config": os.path.basename(measure.config),
        "seed": measure.seed,
        **Tally.of(judged).to_dict(),
        "minimum": minimum,
        "meets_minimum": None if minimum is None else meets(measure, minimum),
        "sessions": [{"name": s.name, "golden": s.golden, "problem": s.problem, **Tally.of(s.judged).to_dict()}
                     for s in measure.sessions],
        "subjects": [{"subject": subject, **Tally.of(items).to_dict()} for subject, items in _by_subject(judged).items()],
        "kinds": [{"kind": kind, "what": MUTATIONS[kind].what, "expects": MUTATIONS[kind].expects,
                   **Tally.of(items).to_dict()} for kind, items in kinds.items()],
        "mutants": [{"session": j.session, "subject": j.subject, "kind": j.kind, "detail": j.detail,
                     "expects": j.expects, "verdict": j.judgement.verdict, "caught_by": j.judgement.caught_by,
                     "masks": [{"rule": m.says, "line": m.line or None} for m in j.judgement.masks]}
                    for j in judged],
    }


def render_json(measure: Measure, minimum: int | None = None) -> bytes:
    return (json.dumps(to_dict(measure, minimum), ensure_ascii=False, indent=2) + "\n").encode("utf-8")
