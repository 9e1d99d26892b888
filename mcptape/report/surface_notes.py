"""A run's surface, summed up per server for the reports: security findings, context cost, coverage.

Each session carries its own facts (report.model.SurfaceFacts, from diff/surface_cost.py) and its
diff's findings; a server is usually exercised by several sessions, so what a reviewer wants is
per server: the cost of its tool list once (the same in every session that lists it), the
items no session of the run calls (listed by any, called by none), the security findings of
every session. Plain data in, plain data out (names are untrusted text: the renderers quote them,
report/markdown.py, report/terminal.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcptape.verdict.model import Finding, RunReport, SessionResult

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


def security_findings(report: RunReport) -> list[tuple[SessionResult, Finding]]:
    """Every failing `security` finding of the run, once per message (sessions list the same tools)."""
    seen: set[str] = set()
    out = []
    for s in report.sessions:
        for drift in s.diff.drifts if s.diff is not None else []:
            for f in drift.findings:
                if f.category == "security" and f.severity != "info" and f.message not in seen:
                    seen.add(f.message)
                    out.append((s, f))
    return out


def tool_label(key: str) -> str:
    """A SurfaceFacts.size key as a reader names it: the tool's name, or `instructions`."""
    return key.removeprefix("tool:")


def group_number(n: int) -> str:
    """1240 -> "1 240" (thin groups, as the report reads them), with its sign when asked by the caller."""
    return f"{n:,}".replace(",", "\u202f")
