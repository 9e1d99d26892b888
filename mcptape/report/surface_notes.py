"""A run's surface, summed up per server for the reports: security findings, context cost, coverage.

Each session carries its own facts (report.model.SurfaceFacts, from diff/surface_cost.py) and its
diff's findings; a server is usually exercised by several sessions, so what a reviewer wants is
per server: the cost of its tool list once (the same in every session that lists it), the
items no session of the run calls (listed by any, called by none), the security findings of
every session. Plain data in, plain data out (names are untrusted text: the renderers quote them,
report/markdown.py, report/terminal.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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


def _as_is(name: str) -> str:
    return name


def cost_words(cost: ServerCost, quote: Callable[[str], str] = _as_is) -> str:
    """`1 240 bytes of tools and instructions ... (+312 bytes: new multiply +300, add +12)`; names
    are untrusted: `quote` shows each (markdown: a code span), or the caller escapes the line."""
    said = f"{group_number(cost.total)} bytes of tools and instructions for every agent that loads them"
    if cost.delta:
        parts = [f"{'new ' if k in cost.added else 'removed ' if k in cost.removed else ''}{quote(tool_label(k))} {d:+}"
                 for k, d in cost.changes[:5]]
        said += f" ({cost.delta:+} bytes: {', '.join(parts)})"
    return said


def coverage_words(cov: ServerCoverage, quote: Callable[[str], str] = _as_is, max_names: int = 10) -> str:
    """`2 of 3 tools called by a session; not called: divide`; names shown by `quote` (cost_words)."""
    counts = ", ".join(f"{len(cov.listed[k]) - len(cov.uncalled[k])} of {len(cov.listed[k])} {k}" for k in cov.listed)
    said = f"{counts} called by a session"
    names = [n for k in cov.uncalled for n in cov.uncalled[k]]
    if names:
        said += f"; not called: {', '.join(quote(n) for n in names[:max_names])}" + \
            (f" and {len(names) - max_names} more" if len(names) > max_names else "")
    return said


def plain_lines(report: RunReport) -> list[str]:
    """The context cost and coverage of each server in plain words, one line each (terminal, JUnit)."""
    lines = [f"context cost of {cost.server}: {cost_words(cost)}" for cost in costs(report)]
    lines += [f"coverage of {cov.server}: {coverage_words(cov)}" for cov in coverage(report)]
    return lines


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
