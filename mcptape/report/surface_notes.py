"""A run's surface, in words for the reports: security findings, context cost, coverage.

Each session carries its own facts (report.model.SurfaceFacts, from diff/surface_cost.py) and its
diff's findings; a server is usually exercised by several sessions, so what a reviewer wants is
per server: the cost of its tool list once (the same in every session that lists it), the
items no session of the run calls (listed by any, called by none), the security findings of
every session. The sums are verdict/model.py's (costs, coverage, surface_data: the JSON report
holds them); the words are this module's (names are untrusted text: the renderers quote them,
report/markdown.py, report/terminal.py).
"""

from __future__ import annotations

from collections.abc import Callable

from mcptape.verdict.model import (  # the per-server sums are the model's: the JSON report holds them too
    KINDS,
    Finding,
    RunReport,
    ServerCost,
    ServerCoverage,
    SessionResult,
    costs,
    coverage,
    surface_data,
    tool_label,
)


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


# The model's per-server sums, named here too: every report reads a run's surface through this module.
__all__ = ["KINDS", "ServerCost", "ServerCoverage", "costs", "cost_words", "coverage", "coverage_words", "group_number",
           "plain_lines", "security_findings", "surface_data", "tool_label"]
