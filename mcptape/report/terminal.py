"""Terminal reports with rich: the diff verdict, the ci run, and what `ls` / `show` print of a tape.

Reads the verdict model (verdict/model.py) and tapes; decides nothing about drift (that is diff/'s).
Only the commands that print a report import this module (never `mcptape --version` or `play`),
so rich is imported here at module level. Renderers draw on a console they are handed; where it
goes (stdout, a buffer the outlet verifies) is the command's (commands/output.py).
All text goes through `_text`: rich.text.Text, never markup, so a tool result holding "[red]"
prints as written, and logsafe.escape_controls first, so one holding `\x1b[2J` prints that
escape instead of clearing the screen.
"""

from __future__ import annotations

import io
import shutil
import sys
from typing import IO, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

import mcptape.environment as environment
from mcptape.jsonrpc import dumps
from mcptape.logsafe import escape_controls
from mcptape.report import surface_notes
from mcptape.verdict.model import DiffResult, Drift, Finding, RunReport, SessionResult

MAX_DETAILED_DRIFTS = 20
MAX_FINDINGS_PER_DRIFT = 12
MAX_SURFACE_ROWS = 20  # names per column of the tool-surface table; a table of 10 000 rows took rich 10 s
_STYLE = {"structural": "bold red", "output": "yellow", "info": "dim", "same": "green", "updated": "cyan",
          "error": "bold magenta", "secret": "bold magenta"}


def make_console(file: IO[str], *, terminal: bool = False) -> Console:
    """A console rendering into `file` (the outlet's buffer: report/ only renders, publish/outlet.py
    prints); as for a terminal of this one's width when `terminal`, else wide, so lines stay whole
    in logs."""
    columns = environment.get("COLUMNS") or ""
    if terminal:
        width = shutil.get_terminal_size().columns
    else:
        width = int(columns) if columns.isdigit() and 0 < int(columns) < 10_000 else 160
    return Console(file=file, highlight=False, width=width, soft_wrap=False, force_terminal=terminal or None)


def rich_text(*parts: tuple[str, str] | str) -> Any:
    """Rich text from plain strings (and (string, style) pairs): no markup, controls escaped."""
    out = Text()
    for part in parts:
        if isinstance(part, tuple):
            out.append(escape_controls(part[0]), style=part[1])
        else:
            out.append(escape_controls(part))
    return out


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else dumps(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- diff --------------------------------------------------------------------------------------


def render_diff(result: DiffResult, console: Console, *, session: str | None = None) -> None:
    """The headline drift (verdict/model.headline, DiffResult.first) in one line, the tool-surface table, then details with context."""
    verdict = result.verdict
    head = result.first
    if head is None or verdict == "same":
        console.print(rich_text(("same", _STYLE["same"]), f" · {result.a} ↔ {result.b} · no drift"), soft_wrap=True)
        _render_info(result, console)
        return
    console.print(rich_text((verdict, _STYLE[verdict]), " drift · first drifted call:"), soft_wrap=True)
    console.print(rich_text("  ", head.one_line(session)), soft_wrap=True)
    if not result.surface.empty():
        console.print(surface_table(result))
    _render_details(result, console)


def surface_table(result: DiffResult) -> Any:
    s = result.surface
    table = Table(title=rich_text("tool surface"), title_justify="left")
    columns = (("Added", s.added), ("Removed", s.removed), ("Breaking", s.breaking),
               ("Compatible", s.compatible), ("Cosmetic", s.cosmetic))
    for title, _ in columns:
        table.add_column(title)
    depth = max(len(names) for _, names in columns)
    for i in range(min(depth, MAX_SURFACE_ROWS)):
        table.add_row(*[rich_text(names[i]) if i < len(names) else "" for _, names in columns])
    if depth > MAX_SURFACE_ROWS:
        table.add_row(*[rich_text((f"… {len(names) - MAX_SURFACE_ROWS} more", "dim"))
                        if len(names) > MAX_SURFACE_ROWS else "" for _, names in columns])
    return table


def _render_details(result: DiffResult, console: Console) -> None:
    drifts = [d for d in result.drifts if d.severity != "info"]
    tapes = f", golden {result.a} → fresh {result.b}" if result.a is not None and result.b is not None else ""
    console.print(rich_text(("details", "bold"), f" ({len(drifts)} drifted call{'s' if len(drifts) != 1 else ''}"
                            f"{tapes})"), soft_wrap=True)
    for n, drift in enumerate(drifts[:MAX_DETAILED_DRIFTS]):
        _render_drift(drift, console, context=n == 0)
    if len(drifts) > MAX_DETAILED_DRIFTS:
        console.print(f"  … {len(drifts) - MAX_DETAILED_DRIFTS} more drifted calls (`--json FILE` has them all)")
    _render_info(result, console)


def _render_drift(drift: Drift, console: Console, *, context: bool) -> None:
    head = drift.call.one_line() if drift.call is not None else "session"
    console.print(rich_text("  ", (drift.severity, _STYLE[drift.severity]), f"  {head}"), soft_wrap=True)
    for finding in drift.findings[:MAX_FINDINGS_PER_DRIFT]:
        console.print(_finding_line(finding), soft_wrap=True)
        if context and (finding.before is not None or finding.after is not None):
            # The first drift gets its values in full-ish: the reviewer's starting point.
            console.print(rich_text(("      golden: ", "dim"), _short(finding.before, 200)), soft_wrap=True)
            console.print(rich_text(("      fresh:  ", "dim"), _short(finding.after, 200)), soft_wrap=True)
    if len(drift.findings) > MAX_FINDINGS_PER_DRIFT:
        console.print(f"      … {len(drift.findings) - MAX_FINDINGS_PER_DRIFT} more differences in this call")


def _finding_line(finding: Finding) -> Any:
    where = []
    if finding.golden_line is not None:
        where.append(f"golden:{finding.golden_line}")
    if finding.fresh_line is not None:
        where.append(f"fresh:{finding.fresh_line}")
    label = finding.category + (f".{finding.kind}" if finding.kind else "")
    return rich_text("    - ", (f"{finding.path} " if finding.path else "", "bold"), finding.message,
                 (f"  [{label}, {finding.severity}{'; ' + ' '.join(where) if where else ''}]", "dim"))


def _render_info(result: DiffResult, console: Console) -> None:
    info = [d for d in result.drifts if d.severity == "info"]
    if info:
        console.print(rich_text(("not failing (info)", "dim"), f": {len(info)} call(s)"))
        for drift in info[:MAX_DETAILED_DRIFTS]:
            console.print(rich_text("    ", (drift.one_line(), "dim")), soft_wrap=True)


def note_lines(notes: list[str], console: Console) -> None:
    for note in notes:
        console.print(rich_text(("note", "dim"), f" · {note}"), soft_wrap=True)


# --- ci run --------------------------------------------------------------------------------------


def render_run(report: RunReport, console: Console) -> None:
    """One line per session (verdict + first drifted call), then details per drifted session."""
    table = Table(title=rich_text(f"mcptape ci · {report.config}"), title_justify="left")
    table.add_column("verdict")
    table.add_column("session")
    table.add_column("first drifted call / error")
    for s in report.sessions:
        table.add_row(rich_text((s.verdict, _STYLE.get(s.verdict, ""))), rich_text(s.name), rich_text(_session_line(s)))
    console.print(table)
    for s in report.sessions:
        if s.diff is not None and s.verdict in ("output", "structural"):
            console.print(rich_text(("── ", "dim"), (s.name, "bold"), f" ({s.verdict})", f" golden: {s.golden}" if s.golden else ""),
                          soft_wrap=True)
            render_diff(s.diff, console, session=s.name)
    errors = [s for s in report.sessions if s.verdict in ("error", "secret")]
    for s in errors:
        console.print(rich_text(("── ", "dim"), (s.name, "bold"), " ", (s.verdict, _STYLE[s.verdict]), f": {s.error or ''}"),
                      soft_wrap=True)
    for s in report.sessions:
        for note in s.notes:
            console.print(rich_text(f"note · {s.name}: {note}"), soft_wrap=True)
    for line in surface_notes.plain_lines(report):  # context cost and coverage, per server
        console.print(rich_text((line, "dim")), soft_wrap=True)
    if report.orphans:
        console.print(rich_text(("golden tapes with no session", "bold"), ": ", ", ".join(report.orphans)), soft_wrap=True)
    redacted = report.redaction_summary()
    if redacted:
        console.print(rich_text(("redaction: ", "bold"), redacted), soft_wrap=True)
    counts: dict[str, int] = {}
    for s in report.sessions:
        counts[s.verdict] = counts.get(s.verdict, 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in counts.items()) or "no sessions"
    console.print(rich_text(("result: ", "bold"), (report.result, _STYLE.get(report.result, "")),
                        f" (exit {report.exit_code}) · {summary}"), soft_wrap=True)



def render_run_text(report: RunReport) -> str:
    """The ci run's terminal report (render_run) as text, for the outlet to verify before it is shown."""
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=sys.stdout.isatty(), width=120, soft_wrap=True)
    render_run(report, console)
    return buffer.getvalue()


def _session_line(s: SessionResult) -> str:
    if s.verdict == "same":
        return "no drift"
    if s.verdict == "updated":
        return "golden tape written"
    head = s.diff.first if s.diff is not None else None
    if head is not None:
        return head.one_line()
    return s.error or ""


# --- ls / show -------------------------------------------------------------------------------


def message_summary(event: dict[str, Any], limit: int | None = 80) -> str:
    """What one event says, in one line: tool + arguments, result text, error code and message, ..."""
    kind = event.get("kind")
    msg = event.get("msg") if isinstance(event.get("msg"), dict) else {}
    assert isinstance(msg, dict)
    if kind in ("request", "notification"):
        params = msg.get("params")
        if isinstance(params, dict) and event.get("method") == "tools/call":
            text = f"{params.get('name')} {dumps(params.get('arguments') or {})}"
        else:
            text = dumps(params) if params is not None else ""
    elif kind == "response":
        result = msg.get("result")
        content = result.get("content") if isinstance(result, dict) else None
        if isinstance(content, list) and content and isinstance(content[0], dict) and "text" in content[0]:
            text = ("error: " if result.get("isError") else "") + str(content[0]["text"])  # type: ignore[union-attr]
        else:
            text = dumps(result)
    elif kind == "error":
        err = msg.get("error") if isinstance(msg.get("error"), dict) else {}
        assert isinstance(err, dict)
        text = f"{err.get('code')} {err.get('message')}"
    elif kind == "garbage":
        text = str(event.get("text", f"<{event.get('bytes')} bytes, not UTF-8>"))
    elif kind == "stderr":
        text = str(event.get("text", ""))
    elif kind == "exit":
        text = f"signal {event['signal']}" if event.get("signal") else f"exit code {event.get('code')}"
    elif kind == "note":
        text = f"{event.get('what')} {dumps(event.get('detail'))}" if "detail" in event else str(event.get("what"))
    else:
        text = dumps(event)
    text = text.replace("\n", "\\n")
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + f"… ({len(text)} chars)"
    return text


