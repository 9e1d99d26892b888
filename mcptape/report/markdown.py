"""Markdown renderings of a RunReport: the GitHub job summary and the sticky PR comment.

Owns how a verdict reads on GitHub and the rules that make tape content safe to show there.
Posting, files and the GitHub API are github.py's; the verdict itself is diff/'s and ci/'s.
Each document is scrubbed with the run's Redactor (`scrub`) and verified where it leaves
(outlet.py: written, appended to the job summary, posted).

Everything that comes from a tape (tool names, arguments, results, error messages, before and
after values) is untrusted: a server under test, or a PR author controlling one, chooses it.
It is therefore only ever shown inside code — fenced blocks whose fence is longer than any
backtick run in the text, or code spans built the same way — where GitHub renders no HTML, no
markdown and no @mentions. Text outside code that is not ours (session names, paths) is
HTML-escaped and has its mentions broken with a zero-width joiner. `<!--` is defanged in all
untrusted text so no tape can plant a second `<!-- mcptape:... -->` marker in our comment.
Controls, bidi overrides and isolates and zero-width characters in untrusted text are shown
as escapes (logsafe.escape_controls, before our own zero-width marks go in), so a tool
`add\u202e` cannot read as another name and nothing invisible hides in one.
Sizes are capped by dropping whole sections, never by cutting through a fence or a <details>.
"""

from __future__ import annotations

import html
import json
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mcptape.logsafe import escape_controls
from mcptape.redact.redactor import Redactor, builtin_redactor
from mcptape.report.model import Drift, Finding, RunReport, SessionResult, SurfaceChanges

# GitHub rejects a comment body of 65,536 characters or more and a step summary over 1 MiB.
# Both are capped with a margin: the redaction pass may change lengths a little afterwards.
COMMENT_LIMIT_CHARS = 60_000
SUMMARY_LIMIT_BYTES = 1_000_000

MARKER_RE = re.compile(r"^<!-- mcptape:[A-Za-z0-9._/@+=-]{1,200} -->$")

VERDICT_LABEL = {
    "same": "✅ same",
    "updated": "📝 golden updated",
    "output": "🟡 output drift",
    "structural": "🔴 structural drift",
    "error": "⛔ could not run",
    "secret": "🔒 secret survived redaction",
}
RESULT_HEADLINE = {
    "none": "✅ no drift",
    "output": "🟡 output drift",
    "structural": "🔴 structural drift",
    "error": "⛔ could not run",
    "secret": "🔒 a secret survived redaction",
}

_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_BACKTICKS = re.compile(r"`+")
_NEWLINES = re.compile(r"\r\n|\r|\n")


# --- safe text primitives ----------------------------------------------------------------------


def _defang(text: str) -> str:
    """Break HTML comment openers so untrusted text can never carry a (forged) marker."""
    return text.replace("<!--", "<\u200b!--")


def _longest_backtick_run(text: str) -> int:
    return max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=0)


def clip(text: str, max_chars: int, max_lines: int | None = None) -> str:
    """Shorten text to a budget, saying how much was left out (so a reader knows it is cut)."""
    lines = _NEWLINES.split(text)
    cut_lines = 0
    if max_lines is not None and len(lines) > max_lines:
        cut_lines = len(lines) - max_lines
        text = "\n".join(lines[:max_lines])
    else:
        text = "\n".join(lines)
    cut_chars = 0
    if len(text) > max_chars:
        cut_chars = len(text) - max_chars
        text = text[:max_chars]
    if cut_lines or cut_chars:
        more = []
        if cut_lines:
            more.append(f"{cut_lines} more lines")
        if cut_chars:
            more.append(f"{cut_chars} more characters")
        text += f"… ({', '.join(more)} not shown)"
    return text


def one_line(text: str, max_chars: int = 200) -> str:
    """A single display line: newlines and tabs become visible marks, controls escapes, long text is clipped."""
    text = escape_controls(_NEWLINES.sub("⏎", text).replace("\t", " "))
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text


def code_span(text: str, *, table: bool = False, max_chars: int = 200) -> str:
    """Untrusted text as inline code: nothing inside renders as HTML, markdown or a mention."""
    s = _defang(one_line(text, max_chars))
    if table:
        # GFM splits table cells on `|` before it parses code spans; `\|` is the documented escape.
        s = s.replace("|", "\\|")
    ticks = "`" * (_longest_backtick_run(s) + 1)
    # A space on both sides is stripped again by the parser, and lets s start or end with a backtick.
    return f"{ticks} {s} {ticks}"


def fenced(text: str, info: str = "") -> str:
    """Untrusted text as a fenced code block whose fence no backtick run inside can close."""
    body = _defang(escape_controls(_NEWLINES.sub("\n", text)))
    fence = "`" * max(3, _longest_backtick_run(body) + 1)
    if not body.endswith("\n"):
        body += "\n"
    return f"{fence}{info}\n{body}{fence}"


def html_text(value: str) -> str:
    """Not-ours text inside our HTML (a <summary>): escaped, mentions broken, one line.

    Inside an HTML block GitHub renders no markdown, so escaping HTML is all the text needs;
    mentions are still linked in HTML text, hence the zero-width joiner after `@`.
    """
    escaped = html.escape(one_line(_defang(value), 300), quote=True)
    return _MENTION.sub("@\u200d", escaped)


def comment_marker(key: str) -> str:
    """The hidden first line that identifies the one mcptape comment of a config on a PR."""
    safe = re.sub(r"[^A-Za-z0-9._/@+=-]", "-", key)[:200] or "default"
    return f"<!-- mcptape:{safe} -->"


# --- pieces --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """Budgets for one rendering; the comment is far tighter than the job summary."""

    value_chars: int
    value_lines: int
    findings_per_session: int
    total: int
    measure: Callable[[str], int]


def _utf16_len(s: str) -> int:
    # GitHub counts the comment limit in characters as JavaScript does: UTF-16 code units.
    return len(s.encode("utf-16-le")) // 2


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8"))


COMMENT_LIMITS = Limits(value_chars=600, value_lines=12, findings_per_session=8, total=COMMENT_LIMIT_CHARS, measure=_utf16_len)
SUMMARY_LIMITS = Limits(value_chars=4000, value_lines=60, findings_per_session=40, total=SUMMARY_LIMIT_BYTES, measure=_utf8_len)


def _show_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=None, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


def _finding_lines(f: Finding, limits: Limits) -> list[str]:
    where = f"{f.path}: " if f.path else ""
    kind = f", {f.kind}" if f.kind else ""
    lines = [f"! {one_line(where + f.message, 300)} [{f.severity}{kind}]"]
    for sign, value in (("-", f.before), ("+", f.after)):
        if value is None:
            continue
        shown = clip(_show_value(value), limits.value_chars, limits.value_lines)
        lines.extend(f"{sign} {line}" for line in shown.split("\n"))
    return lines


def drift_diff(drift: Drift, limits: Limits) -> str:
    """The findings of one drifted call as a compact unified-diff-like text (untrusted: fence it)."""
    head = drift.call.one_line() if drift.call is not None else "session"
    lines = [f"@@ {one_line(head, 300)} @@"]
    shown = drift.findings[: limits.findings_per_session]
    for f in shown:
        lines.extend(_finding_lines(f, limits))
    if len(drift.findings) > len(shown):
        lines.append(f"… {len(drift.findings) - len(shown)} more findings in the JSON report")
    return "\n".join(lines)


def merged_surface(report: RunReport) -> SurfaceChanges:
    """The tool-surface changes of all sessions, each name once, in first-seen order."""
    out = SurfaceChanges()
    for s in report.sessions:
        if s.diff is None:
            continue
        for attr in ("added", "removed", "breaking", "compatible", "cosmetic"):
            dest: list[str] = getattr(out, attr)
            for name in getattr(s.diff.surface, attr):
                if name not in dest:
                    dest.append(name)
    return out


def surface_table(surface: SurfaceChanges) -> str:
    rows = ["| change | tools, resources, prompts |", "|---|---|"]
    for label, attr in (
        ("Added", "added"),
        ("Removed", "removed"),
        ("Breaking", "breaking"),
        ("Compatible", "compatible"),
        ("Cosmetic", "cosmetic"),
    ):
        names: list[str] = getattr(surface, attr)
        if names:
            cells = ", ".join(code_span(n, table=True, max_chars=80) for n in names[:50])
            if len(names) > 50:
                cells += f" and {len(names) - 50} more"
            rows.append(f"| {label} | {cells} |")
    return "\n".join(rows)


def _first_line(s: SessionResult) -> str | None:
    line = s.first_drift_line()
    if line and s.name and line.startswith(s.name + " · "):
        line = line[len(s.name) + 3 :]  # the session column already names it
    return line


def sessions_table(sessions: Iterable[SessionResult]) -> str:
    rows = ["| session | verdict | first drifted call |", "|---|---|---|"]
    for s in sessions:
        first = _first_line(s)
        cell = code_span(first, table=True, max_chars=160) if first else ""
        rows.append(f"| {code_span(s.name, table=True, max_chars=80)} | {VERDICT_LABEL.get(s.verdict, s.verdict)} | {cell} |")
    return "\n".join(rows)


def session_details(s: SessionResult, limits: Limits, *, compact: bool = False) -> str:
    """A collapsible section for one drifted or failed session: first call in a line, then its diff."""
    count = sum(len(d.findings) for d in s.diff.drifts) if s.diff else 0
    what = f"{count} finding{'s' * (count != 1)}" if s.diff else "no diff"
    parts = [
        "<details>",
        f"<summary><b>{html_text(s.name)}</b> — {VERDICT_LABEL.get(s.verdict, s.verdict)}, {what}</summary>",
        "",
    ]
    first = s.first_drift_line()
    if s.diff is not None and s.diff.first is not None:
        parts += [f"First drifted call: {code_span(first or '', max_chars=300)}", ""]
        if compact:
            parts += ["_Details cut to stay under GitHub's size limit; see the job summary or the JSON report._", ""]
        else:
            parts += [fenced(drift_diff(s.diff.first, limits), "diff"), ""]
            later = s.diff.drifts[1:]
            if later:
                parts.append(f"Later drifted calls ({len(later)}):")
                parts.append("")
                for d in later[:10]:
                    parts.append(f"- {code_span(d.one_line(), max_chars=200)}")
                if len(later) > 10:
                    parts.append(f"- … {len(later) - 10} more")
                parts.append("")
    elif s.error:
        parts += [fenced(clip(s.error, limits.value_chars * 2, limits.value_lines * 2)), ""]
    if s.golden:
        parts += [f"Golden tape: {code_span(s.golden, max_chars=200)}", ""]
    for note in s.notes[:5]:
        parts += [f"- {code_span(note, max_chars=300)}"]
    if s.notes:
        parts.append("")
    parts.append("</details>")
    return "\n".join(parts)


def accept_instructions(report: RunReport) -> str:
    goldens = sorted({s.golden for s in report.sessions if s.golden and s.verdict in ("output", "structural")})
    cmd = f"mcptape ci -c {_shell_quote(report.config)} --update-golden"
    add = "git add " + (" ".join(_shell_quote(g) for g in goldens[:20]) if goldens else "<golden_dir>")
    return "\n".join(
        [
            "**Intended change?** Accept it by re-recording the golden tapes and committing them; "
            "the tape diff is then reviewed in this PR like any other file:",
            "",
            fenced(f"{cmd}\n{add}\ngit commit -m 'Accept MCP drift'", "sh"),
        ]
    )


def _shell_quote(value: str) -> str:
    return shlex.quote(value)


def _headline(report: RunReport) -> str:
    return RESULT_HEADLINE.get(report.result, report.result)


def _has_drift(report: RunReport) -> bool:
    return any(s.verdict in ("output", "structural") for s in report.sessions)


def _drifted_or_failed(report: RunReport) -> list[SessionResult]:
    return [s for s in report.sessions if s.verdict in ("output", "structural", "error", "secret")]


def _assemble(head: list[str], blocks: list[tuple[str, str]], tail: list[str], limits: Limits) -> str:
    """Join sections under the size cap: full blocks while they fit, then compact ones, then a note."""
    sep = "\n\n"
    fixed = sep.join(head) + sep + sep.join(tail)
    budget = limits.total - limits.measure(fixed) - 400  # room for the cut note and separators
    chosen: list[str] = []
    omitted = 0
    for full, compact in blocks:
        for candidate in (full, compact):
            size = limits.measure(candidate) + len(sep)
            if size <= budget:
                chosen.append(candidate)
                budget -= size
                break
        else:
            omitted += 1
    if omitted:
        chosen.append(
            f"_{omitted} more section{'s' * (omitted != 1)} cut to stay under GitHub's size limit; "
            "the JSON report (`--json`) has everything._"
        )
    doc = sep.join([*head, *chosen, *tail]) + "\n"
    if limits.measure(doc) > limits.total:
        # Only a pathological head (thousands of sessions) gets here; cut on a line boundary.
        lines = doc.split("\n")
        while lines and limits.measure("\n".join(lines)) > limits.total - 200:
            lines.pop()
        doc = "\n".join(lines) + "\n\n_Report cut to stay under GitHub's size limit._\n"
    return doc


# --- the two documents ---------------------------------------------------------------------------


def render_summary(report: RunReport, *, redactor: Redactor | None = None) -> str:
    """The job summary: sessions table, tool-surface table, one collapsible diff per drifted session."""
    n = len(report.sessions)
    title = f"## mcptape · {code_span(report.config, max_chars=120)} · {_headline(report)}"
    if report.shard:
        title += f" · shard {code_span(report.shard, max_chars=20)}"
    head = [title, f"{n} session{'s' * (n != 1)} · exit code {report.exit_code}", sessions_table(report.sessions)]
    redacted = report.redaction_summary()
    if redacted:  # kinds and counts only: the values never reach a report
        head.append(f"Redaction: {code_span(redacted, max_chars=500)}")
    surface = merged_surface(report)
    if not surface.empty():
        head += ["### Tool surface", surface_table(surface)]
    if report.orphans:
        names = ", ".join(code_span(o, max_chars=120) for o in report.orphans[:50])
        head.append(f"Golden tapes with no session (delete them or add the session): {names}")
    blocks = [
        (session_details(s, SUMMARY_LIMITS), session_details(s, SUMMARY_LIMITS, compact=True))
        for s in _drifted_or_failed(report)
    ]
    if blocks:
        head.append("### Details")
    tail = [accept_instructions(report)] if _has_drift(report) else []
    doc = _assemble(head, blocks, tail, SUMMARY_LIMITS)
    return scrub(doc, redactor)


def render_comment(report: RunReport, marker: str, *, redactor: Redactor | None = None) -> str:
    """The sticky PR comment: marker, a headline naming the first drifted call, details, how to accept."""
    if not marker.startswith("<!--"):
        marker = comment_marker(marker)
    if not MARKER_RE.match(marker):
        raise ValueError(f"not an mcptape comment marker: {marker!r}")
    config = code_span(report.config, max_chars=120)
    n = len(report.sessions)
    if report.exit_code == 0:
        updated = sum(1 for s in report.sessions if s.verdict == "updated")
        detail = f"All {n} session{'s' * (n != 1)} of {config} match their golden tapes."
        if updated:
            detail = f"{n} session{'s' * (n != 1)} of {config}; {updated} golden tape{'s' * (updated != 1)} re-recorded."
        doc = "\n\n".join([marker, f"### mcptape: {_headline(report)}", detail]) + "\n"
        return scrub(doc, redactor)

    head = [marker]
    first = report.first_drift()
    head.append(f"### mcptape: {_headline(report)}")
    if first is not None:
        session, drift = first
        head.append(f"**First drifted call:** {code_span(drift.one_line(session.name), max_chars=400)}")
    else:
        failed = [s for s in report.sessions if s.exit_code == report.exit_code]
        if failed:
            head.append(f"{len(failed)} session{'s' * (len(failed) != 1)} of {config}: "
                        + ", ".join(code_span(s.name, max_chars=80) for s in failed[:20]))
    bad = _drifted_or_failed(report)
    same = n - len(bad)
    head.append(sessions_table(bad) + (f"\n\n{same} other session{'s' * (same != 1)} unchanged." if same else ""))
    surface = merged_surface(report)
    if not surface.empty():
        head.append(surface_table(surface))
    blocks = [(session_details(s, COMMENT_LIMITS), session_details(s, COMMENT_LIMITS, compact=True)) for s in bad]
    tail = [accept_instructions(report)] if _has_drift(report) else []
    doc = _assemble(head, blocks, tail, COMMENT_LIMITS)
    return scrub(doc, redactor)


# --- scrubbing --------------------------------------------------------------------------------


def scrub(doc: str, redactor: Redactor | None = None) -> str:
    """`doc` with the secrets `redactor` knows or finds replaced (the run's Redactor; without one the
    built-in detectors). Verifying what leaves is the outlet's (outlet.py), where it is written or posted."""
    return (redactor or builtin_redactor()).redact_text(doc)


__all__ = [
    "COMMENT_LIMIT_CHARS",
    "SUMMARY_LIMIT_BYTES",
    "clip",
    "code_span",
    "comment_marker",
    "fenced",
    "scrub",
    "render_comment",
    "render_summary",
    "html_text",
]
