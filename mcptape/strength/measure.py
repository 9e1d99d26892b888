"""Measuring a gate: every session's mutants judged, and what no session reaches at all.

Owns the run over a config: the goldens of its sessions (ci/session.py's golden_path, read with the
one reader; or recordings handed in, as init's trial runs are), one SessionJudge each, the mutants
of mutants.py judged in order, and the tools, resources and prompts a server lists that no session
of that server calls, reads or gets: a change to what they answer passes whatever the rules, so
each counts as survivors (a changed answer, an answer turned into an error). Pure over what it is
given but for reading goldens; report.py scores and renders the result.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcptape.ci.selection import select_sessions
from mcptape.ci.session import RunContext, golden_path
from mcptape.config.load import LoadedConfig
from mcptape.config.models import Session
from mcptape.errors import TapeError
from mcptape.strength.judge import Judgement, Mask, SessionJudge, config_masks
from mcptape.strength.mutants import MUTATIONS, SURFACE, Golden, Mutant, mutants
from mcptape.tape.format import Tape
from mcptape.tape.reader import read_tape
from mcptape.verdict.model import DiffResult

# What a change to an answer no session asks for is counted as: the two kinds any answer can have.
UNREACHED_KINDS = {"tool": ("result_text_changed", "result_to_error"),
                   "resource": ("resource_content_changed", "result_to_error"),
                   "prompt": ("result_text_changed", "result_to_error")}
_ASKED = {"tools/call": ("tool", "name"), "resources/read": ("resource", "uri"), "prompts/get": ("prompt", "name")}


@dataclass
class Judged:
    """One mutant and its verdict (the mutant's events are not kept: a report holds thousands)."""

    kind: str
    session: str
    subject: str
    detail: str
    expects: str
    judgement: Judgement

    @classmethod
    def of(cls, mutant: Mutant, judgement: Judgement) -> Judged:
        return cls(mutant.kind, mutant.session, mutant.subject, mutant.detail, mutant.expects, judgement)


@dataclass
class SessionMeasure:
    name: str
    golden: str  # the golden's path as the config names it, or where the recording came from
    judged: list[Judged] = field(default_factory=list)
    problem: str | None = None  # why it was not measured (no golden; the golden fails against itself)


@dataclass
class Measure:
    config: str
    seed: int
    masks: list[Mask]
    sessions: list[SessionMeasure] = field(default_factory=list)

    @property
    def judged(self) -> list[Judged]:
        return [j for s in self.sessions for j in s.judged]


def measure(ctx: RunContext, sessions: Sequence[Session], *, seed: int = 0,
            goldens: Mapping[str, Tape] | None = None) -> Measure:
    """The strength of the gate `ctx.loaded` makes of `sessions`: their goldens from golden_dir,
    or `goldens` (session name -> tape) when given."""
    masks = config_masks(ctx)
    placeholders = tuple(rule.replace for rule in ctx.loaded.config.normalize if rule.order is None)
    out = Measure(str(ctx.loaded.path), seed, masks)
    read: dict[str, Golden] = {}
    for session in sessions:
        entry = SessionMeasure(session.name, os.path.relpath(golden_path(ctx, session), ctx.loaded.base_dir))
        out.sessions.append(entry)
        tape = goldens.get(session.name) if goldens is not None else _read(ctx, session, entry)
        if tape is None:
            entry.problem = entry.problem or "no golden tape: record it with `mcptape ci --update-golden`"
            continue
        judge = SessionJudge(ctx, session, tape, masks)
        failed = judge.baseline()
        if failed is not None:
            entry.problem = f"the golden fails against itself ({_headline(failed)}): fix the config's rules first"
            continue
        golden = Golden.read(session.name, tape.events, placeholders)
        read[session.name] = golden
        entry.judged.extend(Judged.of(m, judge.judge(m)) for m in mutants(golden, seed))
    _unreached(out, sessions, read)
    return out


def measure_config(loaded: LoadedConfig, *, seed: int = 0, goldens: Mapping[str, Tape] | None = None) -> Measure:
    """The strength of the whole gate `loaded` makes: every session (each era of a `protocol: both`
    one), whatever a run selects, since a tool one session calls is reached by the gate."""
    ctx = RunContext(loaded=loaded, update=False, out_dir=None, golden_dir=loaded.golden_dir)
    return measure(ctx, select_sessions(loaded, (), None), seed=seed, goldens=goldens)


def _read(ctx: RunContext, session: Session, entry: SessionMeasure) -> Tape | None:
    path = golden_path(ctx, session)
    if not path.exists():
        return None
    try:
        return read_tape(path)
    except TapeError as e:
        entry.problem = f"the golden tape cannot be read: {e}"
        return None


def _headline(diff: DiffResult) -> str:
    first = diff.first
    return first.one_line() if first is not None else diff.verdict


def _unreached(out: Measure, sessions: Sequence[Session], read: Mapping[str, Golden]) -> None:
    """A survivor per answer kind for each tool (resource, prompt) a server lists and none of its sessions asks for."""
    listed: dict[str, dict[str, str]] = {}  # server -> "tool NAME" -> first session listing it
    asked: dict[str, set[str]] = {}
    for session in sessions:
        golden = read.get(session.name)
        if golden is None:
            continue
        for method, (_, noun, _) in SURFACE.items():
            for name in golden.surface_items(method):
                listed.setdefault(session.server, {}).setdefault(f"{noun} {name}", session.name)
        asked.setdefault(session.server, set()).update(_asked(golden.events))
    by_name = {s.name: s for s in out.sessions}
    for server, subjects in listed.items():
        for subject, session_name in subjects.items():
            if subject in asked.get(server, set()):
                continue
            noun = subject.split(" ", 1)[0]
            verb = {"tool": "calls", "resource": "reads", "prompt": "gets"}[noun]
            for kind in UNREACHED_KINDS[noun]:
                by_name[session_name].judged.append(Judged(
                    kind, session_name, subject, f"no session of server {server} {verb} it", MUTATIONS[kind].expects,
                    Judgement("survived", masks=[])))


def _asked(events: Sequence[dict[str, Any]]) -> set[str]:
    """The subjects the session's client asked for: "tool NAME" of each tools/call it sent, ..."""
    out: set[str] = set()
    for event in events:
        method = event.get("method")
        if event.get("dir") != "c2s" or event.get("kind") != "request" or method not in _ASKED:
            continue
        noun, key = _ASKED[method]
        params = event["msg"].get("params") if isinstance(event.get("msg"), dict) else None
        if isinstance(params, dict) and isinstance(params.get(key), str):
            out.add(f"{noun} {params[key]}")
    return out
