"""The verdict as plain data: what diff produces, what ci aggregates, what every report renders.

Its vocabulary (severities, finding kinds, drift classes, the exit code of a verdict) is
mcptape/verdict/vocabulary.py's, at the bottom, where config/ reads it too.

diff/ fills DiffResult; ci.py wraps one per session in SessionResult and all of them in
RunReport; report/terminal.py, report/markdown.py, report/junit.py and publish/github.py only read
these. `to_dict`/`from_dict` are the JSON report format (`mcptape ci --json`, `mcptape merge`).
The headline of a diff, a session and a run is one choice, `headline()`, which every report reads
(DiffResult.first, SessionResult.first_drift_line, RunReport.first_drift); a run's surface summed
per server (context cost, coverage: `surface_data`) is in the JSON report, and in every other
report through report/surface_notes.py's words.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from mcptape.errors import EXIT_COULD_NOT_RUN
from mcptape.jsonrpc import dumps
from mcptape.verdict.vocabulary import (
    RANK_CLIENT,
    RANK_FAILS,
    RANK_LOST,
    SEVERITY_EXIT,
    VERDICT_EXIT,
    Severity,
    drift_kind,
    worst_exit,
)


def headline_priority(f: Finding) -> int:
    """Which of two findings of one severity heads a drift, lower first: the drift table's rank
    (RANK_PROTOCOL ... RANK_CLIENT), but for what only the finding shows — an `isError` that turned
    on is a call that now fails, and a change under `params` is the client's own."""
    rank = drift_kind(f.category, f.kind).rank
    if f.category == "error" and f.kind == "is_error" and f.after is True:
        return RANK_FAILS
    if rank > RANK_LOST and (f.path == "params" or f.path.startswith(("params.", "params["))):
        return RANK_CLIENT
    return rank


def headline_rank(drift: Drift) -> tuple[int, int]:
    """Which drift heads a report: the least key (the first in the drifts' order among equals).

    First the worst severity (structural, then output); then what a reviewer most needs to read
    (headline_priority of the drift's own headline finding): the protocol (version or era: it
    explains what changes with it), a call that now fails, what callers lose (a tool removed, a
    breaking schema), a changed answer, what callers may use or read (a tool added, a changed
    hint or description), handshake metadata (serverInfo, capabilities, instructions), and last
    what the client itself sent differently (request `params`: what mcptape.yml scripted, such as
    the client capabilities declared in `initialize`).
    """
    return -SEVERITY_EXIT[drift.severity], headline_priority(drift.headline_finding)


def headline(drifts: Iterable[Drift]) -> Drift | None:
    """The drift that heads a session, in every report and every mode: one that decided the exit
    (of the worst severity that fails, by headline_rank), None when nothing fails. An info note (a
    deprecation, a latency shift `fail_on` lets pass, a release note) never heads a session, and
    where it comes in the drifts does not matter: a mode that adds drifts after diff (ci/baseline.py's
    latency and release findings) is headed the same way as a diff."""
    return min((d for d in drifts if d.severity != "info"), key=headline_rank, default=None)


@dataclass
class CallRef:
    """The call a drift belongs to, as a reviewer names it."""

    method: str
    name: str | None = None  # tool, prompt or resource URI
    arguments: Any = None
    step: int | None = None  # 1-based step of the session, when ci ran it
    # The HTTP session it was asked in, on a tape of several (rec --listen; tape/format.py's format 3).
    session: int | None = None

    def one_line(self) -> str:
        parts = [f"HTTP session {self.session}"] if self.session is not None else []
        parts += [f"step {self.step}"] if self.step is not None else []
        head = self.method + (f" {self.name}" if self.name else "")
        if self.arguments not in (None, {}):
            args = dumps(self.arguments)
            head += " " + (args if len(args) <= 80 else args[:77] + "...")
        parts.append(head)
        return " · ".join(parts)


@dataclass
class Finding:
    """One difference: its class, how bad it is, where (a path into the message) and what changed."""

    category: str  # a key of FINDING_KINDS: surface | schema | session | call | result | error | ...
    severity: Severity
    path: str  # e.g. "result.content[0].text"; "" for whole-call findings
    message: str  # one line: '"5" → "6"', "tool `divide` removed", ...
    before: Any = None
    after: Any = None
    kind: str | None = None  # finer class, one of FINDING_KINDS[category]: breaking | added | changed | ...
    golden_line: int | None = None  # line in the golden (A) tape, for annotations
    fresh_line: int | None = None

    @classmethod
    def of(cls, category: str, kind: str, path: str, message: str, before: Any = None, after: Any = None, *,
           severity: Severity | None = None, golden_line: int | None = None, fresh_line: int | None = None) -> Finding:
        """A finding of a class the drift table holds, at the table's severity unless its check decides
        another the table allows (`DriftKind.may_be`, by the rule its meaning states). How every check
        builds one: a class or a severity the table does not give is a bug here, not a silent new name."""
        row = drift_kind(category, kind)
        if severity is None:
            severity = row.severity
        elif severity != row.severity and severity not in row.may_be:
            raise ValueError(f"{row.name} is {row.severity} (or {', '.join(row.may_be) or 'nothing else'}), not {severity}")
        return cls(category, severity, path, message, before, after, kind, golden_line, fresh_line)


@dataclass
class Drift:
    """All findings that belong to one call (or to the session as a whole when call is None)."""

    call: CallRef | None
    findings: list[Finding]

    @property
    def severity(self) -> Severity:
        sevs = {f.severity for f in self.findings}
        return "structural" if "structural" in sevs else "output" if "output" in sevs else "info"

    @property
    def headline_finding(self) -> Finding:
        """The finding that names this drift: of its own severity, the one a reviewer most needs
        (headline_priority), the first of those."""
        severity = self.severity  # once: a property, and a drift may hold 10 000 findings
        top = [f for f in self.findings if f.severity == severity] or self.findings
        return min(top, key=headline_priority)

    def one_line(self, session: str | None = None) -> str:
        """`arith · step 3 · tools/call add {"a":2,"b":3} · result.content[0].text "5" → "6" (output)`."""
        first = self.headline_finding
        parts = [session] if session else []
        if self.call is not None:
            parts.append(self.call.one_line())
        parts.append(f"{first.path} {first.message}".strip() if first.path else first.message)
        return " · ".join(parts) + f" ({self.severity})"


@dataclass
class SurfaceChanges:
    """The tool-surface table that heads a report where tools (resources, prompts) changed."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    breaking: list[str] = field(default_factory=list)
    compatible: list[str] = field(default_factory=list)
    cosmetic: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.added or self.removed or self.breaking or self.compatible or self.cosmetic)


@dataclass
class DiffResult:
    """The verdict of comparing a golden (A) with a fresh (B) tape: its drifts in fresh-tape order
    (diff/ puts the headline first), the failing ones before the info notes."""

    verdict: Literal["same", "output", "structural"]
    drifts: list[Drift] = field(default_factory=list)
    surface: SurfaceChanges = field(default_factory=SurfaceChanges)
    a: str | None = None  # paths or names of the two tapes
    b: str | None = None

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]

    @property
    def first(self) -> Drift | None:
        """The first drifted call as every report names it: the headline, the drift that decided the
        exit (headline()); None when nothing fails (info notes alone)."""
        return headline(self.drifts)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for drift in data["drifts"]:  # `session` only where a tape has sessions: reports stay as they were
            if drift["call"] is not None and drift["call"]["session"] is None:
                del drift["call"]["session"]
        data["exit_code"] = self.exit_code
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DiffResult:
        drifts = [
            Drift(
                call=CallRef(**d["call"]) if d.get("call") else None,
                findings=[Finding(**f) for f in d.get("findings", [])],
            )
            for d in data.get("drifts", [])
        ]
        return cls(
            verdict=data["verdict"],
            drifts=drifts,
            surface=SurfaceChanges(**data.get("surface", {})),
            a=data.get("a"),
            b=data.get("b"),
        )


@dataclass
class Verdict:
    """What `mcptape diff A B` found; `to_dict()` is the document `diff --json` writes (one source for both).

    `result` is the comparison; `notes` what shaped it (a tape read though edited, a limit hit while
    recording). Two tapes that are a parent and its fork (tape/lineage.py) are that fork, not drift:
    `fork` then says where they part, `result` holds no drift, and the verdict is "fork" (exit 0).

    >>> verdict = mcptape.diff("tapes/arithmetic.tape.jsonl", "tapes/surface.tape.jsonl")
    >>> verdict.verdict, verdict.exit_code, verdict.to_dict()["first_drift"] == verdict.first_drift()
    ('structural', 2, True)
    """

    result: DiffResult
    notes: list[str] = field(default_factory=list)
    fork: dict[str, Any] | None = None

    @property
    def verdict(self) -> Literal["same", "output", "structural", "fork"]:
        return "fork" if self.fork is not None else self.result.verdict

    @property
    def exit_code(self) -> int:
        return 0 if self.fork is not None else self.result.exit_code

    @property
    def drifts(self) -> list[Drift]:
        return self.result.drifts

    @property
    def first(self) -> Drift | None:
        """The first drifted call as every report names it: the headline (the drift that decided the
        exit, headline()), None when nothing fails."""
        return self.result.first

    def first_drift(self) -> str | None:
        """The first drifted call in one line, as the report's headline reads."""
        head = self.result.first
        return head.one_line() if head is not None else None

    def to_dict(self) -> dict[str, Any]:
        if self.fork is not None:
            return {"verdict": "fork", "exit_code": 0, "fork": self.fork, "first_drift": None}
        data = self.result.to_dict()
        data["first_drift"] = self.first_drift()
        data["notes"] = list(self.notes)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        if data.get("verdict") == "fork":
            return cls(result=DiffResult("same"), fork=data.get("fork"))
        return cls(result=DiffResult.from_dict(data), notes=list(data.get("notes", [])))


@dataclass
class SurfaceFacts:
    """What one session's tapes say about its server's surface (diff/surface_cost.py): the bytes each
    tool (and the instructions) costs every agent that loads it, and which items the session called."""

    server: str | None = None
    unit: str = "bytes"  # of UTF-8 JSON as listed; not tokens (diff/surface_cost.py says why)
    size: dict[str, int] = field(default_factory=dict)  # "tool:NAME" | "instructions" -> size in the fresh tape
    golden_size: dict[str, int] | None = None  # the same in the golden tape, when both list tools
    listed: dict[str, list[str]] = field(default_factory=dict)  # "tools" | "prompts" | "resources" -> names
    called: dict[str, list[str]] = field(default_factory=dict)  # the same: called, got, read by the session

    def total(self, golden: bool = False) -> int:
        sizes = self.golden_size if golden else self.size
        return sum((sizes or {}).values())


@dataclass
class SessionResult:
    """One session of a ci run: its verdict, the diff behind it, or the error that stopped it."""

    name: str
    verdict: Literal["same", "updated", "output", "structural", "error", "secret"]
    diff: DiffResult | None = None
    error: str | None = None  # for verdict error/secret: what happened, secrets already redacted
    golden: str | None = None  # golden tape path, relative to the config's directory
    fresh: str | None = None  # fresh tape path, if kept
    duration_s: float | None = None
    redactions: dict[str, int] = field(default_factory=dict)  # kind -> count, never values
    notes: list[str] = field(default_factory=list)  # e.g. "no golden tape: run mcptape ci --update-golden"
    surface_facts: SurfaceFacts | None = None  # context cost and coverage (diff/surface_cost.py)

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]

    def first_golden_line(self) -> int | None:
        """The golden tape's line of the headline drift (DiffResult.first): of its headline finding, else
        of any of its findings."""
        drift = self.diff.first if self.diff is not None else None
        if drift is None:
            return None
        return next((f.golden_line for f in (drift.headline_finding, *drift.findings) if f.golden_line is not None), None)

    def first_drift_line(self) -> str | None:
        """The headline drift (DiffResult.first) in one line (`arith · step 3 · ... (output)`), else the
        error, else None."""
        drift = self.diff.first if self.diff is not None else None
        return drift.one_line(self.name) if drift is not None else self.error

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["diff"] = self.diff.to_dict() if self.diff else None
        data["exit_code"] = self.exit_code
        head = self.diff.first if self.diff is not None else None
        data["headline"] = head.one_line(self.name) if head is not None else None  # derived: not read back
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionResult:
        fields = {k: v for k, v in data.items() if k not in ("exit_code", "diff", "surface_facts", "headline")}
        facts = SurfaceFacts(**data["surface_facts"]) if data.get("surface_facts") else None
        return cls(diff=DiffResult.from_dict(data["diff"]) if data.get("diff") else None, surface_facts=facts, **fields)


@dataclass
class RunReport:
    """A whole `mcptape ci` run (or several merged shards): its sessions' results, and the exit code
    and `result` of the run. `to_dict()` is the document `mcptape ci --json` writes.

    >>> report = mcptape.run(sessions=["surface"])
    >>> report.result, report.to_dict()["sessions"][0]["verdict"]
    ('none', 'same')
    """

    config: str
    sessions: list[SessionResult] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)  # golden tapes with no session
    updated_golden: bool = False
    shard: str | None = None
    # Set when the reference is not golden tapes (ci/baseline.py): "against the merge base `abc1234`",
    # "`ts` vs `py`"; `comparison` holds what that comparison learned and measured, line by line.
    compared: str | None = None
    comparison: list[str] = field(default_factory=list)
    strength: str | None = None  # `ci --strength` / drift.min_strength: the gate's strength in one line (strength/)

    @property
    def exit_code(self) -> int:
        return worst_exit([s.exit_code for s in self.sessions])

    @property
    def result(self) -> str:
        """The action's `result` output: none | output | structural | error | secret."""
        return {0: "none", 1: "output", 2: "structural", 3: "error", 4: "secret"}[self.exit_code]

    def redaction_summary(self) -> str | None:
        """How many values of which kind were redacted across the run, never the values."""
        totals: dict[str, int] = {}
        for s in self.sessions:
            for kind, n in s.redactions.items():
                totals[kind] = totals.get(kind, 0) + n
        if not totals:
            return None
        parts = ", ".join(f"{n} {kind}" for kind, n in sorted(totals.items()))
        count = sum(totals.values())
        return f"{count} secret value{'s' if count != 1 else ''} redacted: {parts}"

    def first_drift(self) -> tuple[SessionResult, Drift] | None:
        """The run's headline: of every session's (DiffResult.first), the one that ranks first
        (headline_rank: a structural drift of a later session before an output drift of an earlier
        one), the first session among equals. None when no session drifted."""
        heads = [(s, d) for s in self.sessions if s.diff is not None and (d := s.diff.first) is not None]
        return min(heads, key=lambda pair: headline_rank(pair[1]), default=None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mcptape_report": 1,
            "config": self.config,
            "exit_code": self.exit_code,
            "result": self.result,
            "headline": head[1].one_line(head[0].name) if (head := self.first_drift()) is not None else None,
            "updated_golden": self.updated_golden,
            "shard": self.shard,
            "compared": self.compared,
            "comparison": list(self.comparison),
            "strength": self.strength,
            "orphans": list(self.orphans),
            "sessions": [s.to_dict() for s in self.sessions],
            "surface": surface_data(self),  # derived from the sessions' surface_facts: not read back
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunReport:
        return cls(
            config=data["config"],
            sessions=[SessionResult.from_dict(s) for s in data.get("sessions", [])],
            orphans=list(data.get("orphans", [])),
            updated_golden=bool(data.get("updated_golden")),
            shard=data.get("shard"),
            compared=data.get("compared"),
            comparison=list(data.get("comparison", [])),
            strength=data.get("strength"),
        )


# --- a run's surface per server (sessions of one server share its tool list): the JSON report's
# `surface`, and what report/surface_notes.py puts in words.

KINDS = ("tools", "prompts", "resources")


@dataclass
class ServerCost:
    """The context cost of one server's listed tools and instructions, fresh and golden."""

    server: str
    total: int
    golden_total: int | None  # None: no golden tape listed its tools
    changes: list[tuple[str, int]] = field(default_factory=list)  # (tool or "instructions", delta), biggest first
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def delta(self) -> int:
        return 0 if self.golden_total is None else self.total - self.golden_total


@dataclass
class ServerCoverage:
    server: str
    listed: dict[str, list[str]]  # kind -> names any session listed
    uncalled: dict[str, list[str]]  # kind -> of those, the ones no session called


def _facts(report: RunReport) -> list[tuple[SessionResult, str]]:
    return [(s, s.surface_facts.server or "(server)") for s in report.sessions if s.surface_facts is not None]


def costs(report: RunReport) -> list[ServerCost]:
    """Per server, from its first session that listed tools (they all list the same tools)."""
    out: dict[str, ServerCost] = {}
    for s, server in _facts(report):
        facts = s.surface_facts
        assert facts is not None
        if server in out or "tools" not in facts.listed:
            continue
        cost = ServerCost(server, facts.total(), facts.total(golden=True) if facts.golden_size is not None else None)
        if facts.golden_size is not None:
            g, f = facts.golden_size, facts.size
            deltas = [(k, f.get(k, 0) - g.get(k, 0)) for k in dict.fromkeys([*f, *g]) if f.get(k, 0) != g.get(k, 0)]
            cost.changes = sorted(deltas, key=lambda t: -abs(t[1]))
            cost.added = [k for k in f if k not in g]
            cost.removed = [k for k in g if k not in f]
        out[server] = cost
    return list(out.values())


def coverage(report: RunReport) -> list[ServerCoverage]:
    """Per server: what its sessions listed, and which of those no session of the run called."""
    listed: dict[str, dict[str, dict[str, None]]] = {}
    called: dict[str, dict[str, set[str]]] = {}
    for s, server in _facts(report):
        facts = s.surface_facts
        assert facts is not None
        for kind, names in facts.listed.items():
            listed.setdefault(server, {}).setdefault(kind, {}).update(dict.fromkeys(names))
        for kind, names in facts.called.items():
            called.setdefault(server, {}).setdefault(kind, set()).update(names)
    out = []
    for server, kinds in listed.items():
        done = called.get(server, {})
        out.append(ServerCoverage(
            server,
            {k: list(kinds[k]) for k in KINDS if k in kinds},
            {k: [n for n in kinds[k] if n not in done.get(k, set())] for k in KINDS if k in kinds},
        ))
    return out


def tool_label(key: str) -> str:
    """A SurfaceFacts.size key as a reader names it: the tool's name, or `instructions`."""
    return key.removeprefix("tool:")


def surface_data(report: RunReport) -> list[dict[str, Any]]:
    """Per server, its context cost and coverage as plain data (the JSON report, SARIF's run properties)."""
    out: dict[str, dict[str, Any]] = {}
    for cost in costs(report):
        out.setdefault(cost.server, {"server": cost.server})["context_cost"] = {
            "unit": "bytes", "total": cost.total, "golden_total": cost.golden_total, "delta": cost.delta,
            "changes": [{"item": tool_label(k), "delta": d} for k, d in cost.changes],
        }
    for cov in coverage(report):
        out.setdefault(cov.server, {"server": cov.server})["coverage"] = {
            k: {"listed": len(cov.listed[k]), "called": len(cov.listed[k]) - len(cov.uncalled[k]),
                "not_called": cov.uncalled[k]} for k in cov.listed
        }
    return list(out.values())


__all__ = [
    "EXIT_COULD_NOT_RUN",
    "CallRef",
    "DiffResult",
    "Drift",
    "Finding",
    "RunReport",
    "SessionResult",
    "SurfaceChanges",
    "SurfaceFacts",
    "Verdict",
    "headline",
    "headline_rank",
]
