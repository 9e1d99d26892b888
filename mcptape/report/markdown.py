"""Markdown renderings of a RunReport: the GitHub job summary and the sticky PR comment.

Owns how a verdict reads on GitHub; what makes tape content safe to show there is md_safe.py's.
Posting, files and the GitHub API are publish/github.py's; the verdict itself is diff/'s and ci/'s.
Renderers only render: each document is scrubbed and verified once, where it leaves
(outlet.Outlet.document: written, appended to the job summary, posted).

Untrusted text is shown only through the safe primitives of report/md_safe.py (its docstring
says how).
Sizes are capped by dropping whole sections, never by cutting through a fence or a <details>;
what is cut says where the rest is (the job summary, the run's artifact).

Both documents share one design, the summary with more room: a title naming the verdict and the
config by its repository path; a small line with the counts, the commit it reflects and the run;
the headline — what the drift that decided the exit (report.first_drift()) changes for a client, in
our words around code spans (`in_words`), said once, with the sessions whose first drift is the
same change (`causes`) each linked to its golden tape at the line; other changes as a list; then
one collapsed <details> per session (a session sharing an earlier one's change names it instead of
repeating the diff) and how to accept, correct from the repository root. Code blocks wrap at
WRAP_COLUMNS so nothing scrolls sideways. Where the document is shown (links, paths, the install
line, the artifact) is a Context, which publish/github.py builds from the run's environment.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from string import Formatter
from typing import Any
from urllib.parse import quote

from mcptape.jsonrpc import dumps
from mcptape.report import surface_notes
from mcptape.report.anchors import session_anchor
from mcptape.report.md_safe import MARKER_RE, clip, code_span, comment_marker, fenced, html_text, one_line
from mcptape.tape.view import view_path
from mcptape.verdict.model import CallRef, Drift, Finding, RunReport, SessionResult, SurfaceChanges
from mcptape.verdict.vocabulary import DEFAULT_PHRASE, SEVERITY_EXIT, drift_kind

# GitHub rejects a comment body of 65,536 characters or more and a step summary over 1 MiB.
# Both are capped with a margin: the redaction pass may change lengths a little afterwards.
COMMENT_LIMIT_CHARS = 60_000
SUMMARY_LIMIT_BYTES = 1_000_000


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

# --- where the report is shown -------------------------------------------------------------------

DEFAULT_ACTION_REPOSITORY = "mcptape/action"  # the documented `uses: mcptape/action@v1`
DEFAULT_ACTION_REF = "v1"


@dataclass(frozen=True)
class Context:
    """Where a rendering is shown: the config's repository path, the commit and run it reflects,
    and how a reviewer installs mcptape and fetches the fresh tapes. publish/github.py builds it from the
    run's environment (`github.render_context`); without one, paths are the report's own and
    nothing is linked."""

    config_path: str | None = None  # the config's path from the repository root: fixtures/example/mcptape.yml
    run_dir: str = ""  # where `mcptape ci` ran, from the repository root ("" is the root)
    config_arg: str | None = None  # the `-c` argument as given there
    blob_base: str | None = None  # {server}/{owner/name}/blob/{head sha}, for links to golden lines
    commit: str | None = None  # the head commit the report reflects
    commit_url: str | None = None
    run_url: str | None = None  # {server}/{owner/name}/actions/runs/{run id}
    action_repository: str = DEFAULT_ACTION_REPOSITORY
    action_ref: str = DEFAULT_ACTION_REF
    artifact: str | None = None  # name of the workflow artifact holding the fresh tapes and report
    html_report: str | None = None  # the HTML report's file name in that artifact (`report.html`)
    attested_repo: str | None = None  # owner/name whose artifact attestations cover the artifact's tapes

    def config_shown(self, report: RunReport) -> str:
        return self.config_path or report.config

    def golden_path(self, golden: str) -> str:
        """A golden tape's path from the repository root (report paths are relative to the config)."""
        base = posixpath.dirname(self.config_path) if self.config_path else ""
        return posixpath.normpath(posixpath.join(base, golden)) if base else posixpath.normpath(golden)

    def golden_url(self, golden: str, line: int | None) -> str | None:
        if not self.blob_base:
            return None
        url = f"{self.blob_base}/{quote(self.golden_path(golden), safe='/')}"
        return url + (f"#L{line}" if line else "")

    def install_line(self) -> str:
        # mcptape is not on a package index: install the release this workflow's action runs.
        return f'pip install "git+https://github.com/{self.action_repository}@{self.action_ref}"'
# --- pieces --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """Budgets for one rendering; the comment is far tighter than the job summary."""

    value_chars: int
    value_lines: int
    findings_per_session: int
    names_per_cause: int  # sessions named after "affects:" before "and N more"
    causes: int  # causes listed before "and N more"
    total: int
    measure: Callable[[str], int]
    where_more: str  # where a reader finds what this rendering cut


def _utf16_len(s: str) -> int:
    # GitHub counts the comment limit in characters as JavaScript does: UTF-16 code units.
    return len(s.encode("utf-16-le")) // 2


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8"))


COMMENT_LIMITS = Limits(value_chars=600, value_lines=12, findings_per_session=8, names_per_cause=12, causes=10,
                        total=COMMENT_LIMIT_CHARS, measure=_utf16_len, where_more="the job summary")
SUMMARY_LIMITS = Limits(value_chars=4000, value_lines=60, findings_per_session=40, names_per_cause=200, causes=100,
                        total=SUMMARY_LIMIT_BYTES, measure=_utf8_len, where_more="the JSON report")
# Lines in a code block wrap here: GitHub scrolls a wide block sideways, where nobody reads it.
WRAP_COLUMNS = 100
ICON = {"structural": "🔴", "output": "🟡", "info": "ℹ️", "error": "⛔", "secret": "🔒"}  # noqa: RUF001


def _show_value(value: Any, *, pretty: bool = False) -> str:
    if isinstance(value, str):
        return value
    try:
        if pretty and isinstance(value, (dict, list)):
            return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False)
        return json.dumps(value, ensure_ascii=False, indent=None, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


def wrap_lines(text: str, prefix: str, width: int = WRAP_COLUMNS) -> list[str]:
    """`text` as lines of at most `width` characters, each starting with `prefix`; a wrapped line
    goes on with `prefix` and a `↪` so it reads as one."""
    out = []
    room = max(20, width - len(prefix) - 2)
    for line in text.split("\n"):
        first = True
        while True:
            cut = room
            if len(line) > room:  # break at a space when one is near the end, as text wraps
                space = line.rfind(" ", room // 2, room)
                cut = space + 1 if space > 0 else room
            out.append(f"{prefix}{'' if first else '↪ '}{line[:cut]}".rstrip() if len(line) > cut else
                       f"{prefix}{'' if first else '↪ '}{line}")
            line, first = line[cut:], False
            if not line:
                break
    return out


def _finding_lines(f: Finding, limits: Limits) -> list[str]:
    where = f"{f.path}: " if f.path else ""
    kind = f", {f.kind}" if f.kind else ""
    lines = wrap_lines(f"{one_line(where + f.message, 600)} [{f.severity}{kind}]", "! ")
    for sign, value in (("-", f.before), ("+", f.after)):
        if value is None:
            continue
        shown = clip(_show_value(value, pretty=True), limits.value_chars, limits.value_lines)
        lines.extend(wrap_lines(shown, f"{sign} "))
    return lines


def drift_diff(drift: Drift, limits: Limits) -> str:
    """The findings of one drifted call as a compact unified-diff-like text (untrusted: fence it)."""
    head = drift.call.one_line() if drift.call is not None else "session"
    lines = wrap_lines(f"@@ {one_line(head, 300)} @@", "")
    shown = drift.findings[: limits.findings_per_session]
    for f in shown:
        lines.extend(_finding_lines(f, limits))
    if len(drift.findings) > len(shown):
        lines.append(f"… {len(drift.findings) - len(shown)} more findings: see {limits.where_more}")
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


# --- a drift in words ----------------------------------------------------------------------------

_TOOL_PROPERTY = re.compile(r"tools\[(?P<tool>[^\]]+)\]\.inputSchema\.properties\.(?P<prop>[^.\[\]]+)$")
# A tool, prompt or resource named in a finding's path: result.tools[add], result.resources[calc://x].
_LISTED = re.compile(r"^result\.(?P<list>tools|prompts|resources|resourceTemplates)\[(?P<name>.+)\](?P<rest>(?:\.[^\[\]]+)?)$")
_LISTED_WORD = {"tools": "tool", "prompts": "prompt", "resources": "resource", "resourceTemplates": "resource template"}
_PLAIN_TEXT_RESULT = "result.content[0].text"


# How a rendering quotes untrusted text inside its own words: markdown's code_span here;
# report/html.py passes its own, so a drift reads in the same words on every page.
Code = Callable[..., str]


def _value(value: Any, code: Code = code_span) -> str:
    return code(_show_value(value), max_chars=80)


def call_words(call: CallRef | None, code: Code = code_span) -> str:
    """The call as a client writes it: `add(a=2, b=3)` for a tool, the method and name otherwise."""
    if call is None:
        return "the session"
    if call.method == "tools/call" and call.name:
        args = call.arguments
        if isinstance(args, dict):
            inner = ", ".join(f"{k}={dumps(v)}" for k, v in args.items())
        else:
            inner = "" if args is None else dumps(args)
        return code(f"{call.name}({inner})", max_chars=100)
    return code(call.method + (f" {call.name}" if call.name else ""), max_chars=100)


def in_words(drift: Drift, code: Code = code_span) -> str:
    """What the drift changes for a client, in one line of our words around code spans
    (`add` now requires `c`: calls without it break). The words are the drift table's phrases
    (verdict/vocabulary.py): the first of its kind's phrases whose places this finding fills.
    Untrusted names and values only ever fill a place, as spans made by `code` (markdown's
    code_span; the HTML report's own)."""
    f = drift.headline_finding
    places = _places(drift, code)
    for phrase in (*drift_kind(f.category, f.kind).phrases, DEFAULT_PHRASE):
        names = [name for _, name, _, _ in Formatter().parse(phrase) if name]
        if all(places.get(name) is not None for name in names):
            return phrase.format(**places)
    raise AssertionError("DEFAULT_PHRASE has a place every finding fills")  # pragma: no cover


def _places(drift: Drift, code: Code = code_span) -> dict[str, str | None]:
    """The places of the drift table's phrases this drift fills (None: it has nothing for that place)."""
    f = drift.headline_finding
    prop = _TOOL_PROPERTY.search(f.path)
    listed = _LISTED.match(f.path)
    rest = listed.group("rest") if listed else None  # "" for the item itself, ".description" for a member
    name = code(listed.group("name"), max_chars=80) if listed else None
    message = f.message
    error = f.after if isinstance(f.after, dict) else {}
    shown = " ".join(str(error[k]) for k in ("code", "message") if k in error)
    where = f"{f.path} " if f.path else ""
    both = f.before is not None and f.after is not None
    return {
        "call": call_words(drift.call, code),
        "what": code(message, max_chars=200),
        "detail": code(where + message, max_chars=200),
        "noun": _LISTED_WORD[listed.group("list")] if listed else "tool",
        "item": name if rest == "" else None,
        "tool": code(prop.group("tool"), max_chars=80) if prop else None,
        "required": code(prop.group("prop"), max_chars=80) if prop and "required" in message else None,
        "optional": code(prop.group("prop"), max_chars=80) if prop and "optional" in message else None,
        "described": name if rest == ".description" and both else None,
        "before": _value(f.before, code) if both else None,
        "after": _value(f.after, code) if both else None,
        "at": "" if f.path in ("", _PLAIN_TEXT_RESULT) else f" at {code(f.path, max_chars=100)}",
        "error": code(shown, max_chars=100) if shown else None,
    }


def _cause_key(drift: Drift) -> tuple[str, ...]:
    f = drift.headline_finding
    call = drift.call
    return (drift.severity, f.category, f.kind or "", f.path, f.message,
            call.method if call else "", (call.name or "") if call else "",
            dumps(call.arguments) if call and call.arguments is not None else "")


@dataclass
class Cause:
    """One change and the sessions whose first drift it is (structural first, then output)."""

    drift: Drift
    sessions: list[SessionResult]

    @property
    def severity(self) -> str:
        return self.drift.severity


def causes(report: RunReport) -> list[Cause]:
    """Drifted sessions grouped by the change their first drift names. The headline's cause
    (report.first_drift()) comes first; the rest by severity, then first seen."""
    by_key: dict[tuple[str, ...], Cause] = {}
    for s in report.sessions:
        drift = s.diff.first if s.diff is not None else None
        if s.verdict not in ("output", "structural") or drift is None:
            continue
        key = _cause_key(drift)
        if key in by_key:
            by_key[key].sessions.append(s)
        else:
            by_key[key] = Cause(drift, [s])
    first = report.first_drift()
    head = _cause_key(first[1]) if first is not None else None
    ordered = list(by_key.values())
    ordered.sort(key=lambda c: (_cause_key(c.drift) != head, -SEVERITY_EXIT[c.severity]))
    return ordered


def _session_link(s: SessionResult, ctx: Context) -> str:
    """The session's name, linked to its golden tape at the drifted line when there is a place to link."""
    name = code_span(s.name, max_chars=80)
    url = ctx.golden_url(s.golden, s.first_golden_line()) if s.golden else None
    return f"[{name}]({url})" if url else name


def _affects(sessions: list[SessionResult], ctx: Context, limits: Limits) -> str:
    shown = ", ".join(_session_link(s, ctx) for s in sessions[: limits.names_per_cause])
    more = len(sessions) - limits.names_per_cause
    return f"affects: {shown}" + (f" and {more} more (see {limits.where_more})" if more > 0 else "")


def _cause_lines(found: list[Cause], ctx: Context, limits: Limits) -> list[str]:
    """The headline (first cause, in bold) and the other causes as a list, each with what it affects."""
    if not found:
        return []
    first, rest = found[0], found[1 : limits.causes]
    out = [f"{ICON[first.severity]} **{in_words(first.drift)}.**", _affects(first.sessions, ctx, limits)]
    if rest:
        items = [f"- {ICON[c.severity]} {in_words(c.drift)} — {_affects(c.sessions, ctx, limits)}" for c in rest]
        left = len(found) - 1 - len(rest)
        if left > 0:
            items.append(f"- … {left} more changes: see {limits.where_more}")
        out.append("Also changed:\n\n" + "\n".join(items))
    return out


def _failed_lines(report: RunReport, limits: Limits) -> list[str]:
    failed = [s for s in report.sessions if s.verdict in ("error", "secret")]
    if not failed:
        return []
    items = []
    for s in failed[: limits.names_per_cause]:
        what = "a secret survived redaction" if s.verdict == "secret" else "could not run"
        items.append(f"- {ICON[s.verdict]} {code_span(s.name, max_chars=80)} {what}: "
                     f"{code_span(s.error or what, max_chars=FAILED_LINE_CHARS)}")
    if len(failed) > limits.names_per_cause:
        items.append(f"- … {len(failed) - limits.names_per_cause} more: see {limits.where_more}")
    return ["\n".join(items)]


FAILED_LINE_CHARS = 160  # a failed session's error in the list under the headline


def _said_whole(error: str) -> bool:
    return one_line(error, FAILED_LINE_CHARS + 1) == error and len(error) <= FAILED_LINE_CHARS


def counts_line(report: RunReport) -> str:
    """"3 sessions, 1 drifted, 2 unchanged": the counts under a report's title (here and report/html.py)."""
    n = len(report.sessions)
    bad = [s for s in report.sessions if s.verdict in ("output", "structural", "error", "secret")]
    drifted = sum(1 for s in bad if s.verdict in ("output", "structural"))
    parts = [f"{n} session{'s' * (n != 1)}"]
    if drifted:
        parts.append(f"{drifted} drifted")
    if len(bad) - drifted:
        parts.append(f"{len(bad) - drifted} failed")
    parts.append(f"{n - len(bad)} unchanged")
    return ", ".join(parts)


def _reflects(report: RunReport, ctx: Context) -> str:
    """The small line under the title: which commit this is about and which run said so."""
    parts = [counts_line(report)]
    if report.compared:  # no goldens: what the reference was (ci/baseline.py); its text is ours, refs in code spans
        parts.append(_compared(report.compared))
    if ctx.commit:
        sha = code_span(ctx.commit[:7], max_chars=12)
        parts.append(f"at commit [{sha}]({ctx.commit_url})" if ctx.commit_url else f"at commit {sha}")
    if ctx.run_url:
        parts.append(f"[workflow run]({ctx.run_url})")
    if ctx.html_report and ctx.artifact:
        parts.append(f"HTML report {code_span(ctx.html_report, max_chars=80)} in artifact {code_span(ctx.artifact, max_chars=120)}")
    if report.shard:
        parts.append(f"shard {code_span(report.shard, max_chars=20)}")
    return "<sub>" + " · ".join(parts) + "</sub>"


def _compared(label: str) -> str:
    """"against the merge base `abc1234`": the code spans re-made safe, the words HTML-escaped."""
    pieces = label.split("`")
    return "".join(code_span(p, max_chars=80) if i % 2 else html_text(p) for i, p in enumerate(pieces))


def comparison_section(report: RunReport, limits: Limits) -> str | None:
    """What a comparison of two live sides learned (volatile places) and measured (latency)."""
    if not report.comparison:
        return None
    body = clip("\n".join(report.comparison), limits.value_chars * 4, limits.value_lines * 4)
    return "\n".join(["<details>", f"<summary>Compared {_compared(report.compared or '')}: what was learned and measured"
                       "</summary>", "", fenced(body), "", "</details>"])


def _title(report: RunReport, ctx: Context) -> str:
    security = " · ⚠️ security review" if surface_notes.security_findings(report) else ""
    return f"mcptape: {_headline(report)}{security} · {code_span(ctx.config_shown(report), max_chars=120)}"


def _surface_lines(report: RunReport, limits: Limits) -> tuple[list[str], list[str]]:
    """(the security review, under the title; the context cost and coverage, per server), from
    report/surface_notes.py: untrusted names and words only ever in code spans."""
    head: list[str] = []
    found = surface_notes.security_findings(report)
    if found:
        first = found[0][1]
        head.append(f"**Security review: {len(found)} finding{'s' * (len(found) != 1)}** in what agents read or may do: "
                    f"{code_span(first.message, max_chars=240)} ({code_span(f'security.{first.kind}')})"
                    + "".join(f"\n- {code_span(f.message, max_chars=240)} ({code_span(f'security.{f.kind}')})"
                              for _, f in found[1:limits.causes]))
    lines: list[str] = []

    def span(name: str) -> str:
        return code_span(name, max_chars=80)

    for cost in surface_notes.costs(report):
        lines.append(f"Context cost of {span(cost.server)}: {surface_notes.cost_words(cost, span)}")
    added = set(merged_surface(report).added)
    for cov in surface_notes.coverage(report):
        lines.append(f"Coverage of {span(cov.server)}: {surface_notes.coverage_words(cov, span)}")
        for name in cov.uncalled.get("tools", []):
            if name in added:
                lines.append(f"New tool {code_span(name, max_chars=80)} is called by no session: add a "
                             f"{code_span(f'call: {name}', max_chars=100)} step to a session of mcptape.yml")
    return head, lines


def session_details(s: SessionResult, ctx: Context, limits: Limits, *, compact: bool = False,
                    same_as: SessionResult | None = None) -> str:
    """A collapsed section for one drifted or failed session: its golden tape at the line, then its
    diff. A first drift already shown for `same_as` (the same cause) is named, not shown again."""
    count = sum(len(d.findings) for d in s.diff.drifts) if s.diff else 0
    what = f"{count} finding{'s' * (count != 1)}" if s.diff else "no diff"
    parts = [
        "<details>",
        f"<summary>{VERDICT_LABEL.get(s.verdict, s.verdict)} · <b>{html_text(s.name)}</b> · {what}</summary>",
        "",
    ]
    if s.golden:
        path = ctx.golden_path(s.golden)
        line = s.first_golden_line()
        url = ctx.golden_url(s.golden, line)
        label = code_span(path + (f":{line}" if line else ""), max_chars=200)
        parts += [f"Golden tape: {f'[{label}]({url})' if url else label}", ""]
    if ctx.html_report and ctx.artifact:  # a page inside an artifact cannot be linked to: named, for who opens it
        parts += [f"In the HTML report: {code_span(f'{ctx.html_report}#{session_anchor(s.name)}', max_chars=200)}", ""]
    head = s.diff.first if s.diff is not None else None
    if s.diff is not None and head is not None:
        if compact:
            parts += [f"_Diff cut to stay under GitHub's size limit: see {limits.where_more}._", ""]
        else:
            if same_as is not None:
                parts += [f"First drift: the same change as in {code_span(same_as.name, max_chars=80)}, above.", ""]
            else:
                parts += [fenced(drift_diff(head, limits), "diff"), ""]
            later = [d for d in s.diff.drifts if d is not head]
            if later:
                parts += [f"Later drifted calls ({len(later)}):", ""]
                parts += [f"- {code_span(d.one_line(), max_chars=200)}" for d in later[:10]]
                if len(later) > 10:
                    parts.append(f"- … {len(later) - 10} more: see {limits.where_more}")
                parts.append("")
    elif s.error and not _said_whole(s.error):  # the list above said a short one in full already
        parts += [fenced("\n".join(wrap_lines(clip(s.error, limits.value_chars * 2, limits.value_lines * 2), ""))), ""]
    for note in s.notes[:5]:
        parts += [f"- {code_span(note, max_chars=300)}"]
    if s.notes:
        parts.append("")
    parts.append("</details>")
    return "\n".join(parts)


def _sh_lines(words: list[str], width: int = 90) -> str:
    """A shell command, quoted, with `\\` continuations so no line runs past `width`."""
    lines, line = [], ""
    for w in (shlex.quote(x) if i else x for i, x in enumerate(words)):
        if line and len(line) + 1 + len(w) > width:
            lines.append(line + " \\")
            line = "  " + w
        else:
            line = f"{line} {w}" if line else w
    lines.append(line)
    return "\n".join(lines)


def _golden_dirs(report: RunReport, ctx: Context) -> tuple[list[SessionResult], list[str]]:
    drifted = [s for s in report.sessions if s.golden and s.verdict in ("output", "structural")]
    return drifted, sorted({posixpath.dirname(ctx.golden_path(s.golden)) or "." for s in drifted if s.golden})


def _git_add(golden_dirs: list[str]) -> str:
    return _sh_lines(["git", "add", *[d.rstrip("/") + "/" for d in golden_dirs]] if golden_dirs else ["git", "add", "-A"])


def accept_commands(report: RunReport, ctx: Context | None = None) -> str:
    """The shell commands that accept the drift locally, from the repository root: install,
    re-record, add the golden tapes, commit (the comment's and the HTML report's)."""
    ctx = ctx or Context()
    config = ctx.config_arg or report.config
    run = f"mcptape ci -c {shlex.quote(config)} --update-golden"
    if ctx.run_dir not in ("", "."):
        run = f"(cd {shlex.quote(ctx.run_dir)} && {run})"
    return "\n".join([ctx.install_line(), run, _git_add(_golden_dirs(report, ctx)[1]), "git commit -m 'Accept MCP drift'"])


def accept_instructions(report: RunReport, ctx: Context | None = None) -> str:
    """How to accept the drift, correct from the repository root: re-record locally, or take the
    fresh tapes from the run's artifact when the server needs what only CI has (secrets)."""
    ctx = ctx or Context()
    drifted, golden_dirs = _golden_dirs(report, ctx)
    add = _git_add(golden_dirs)
    local = accept_commands(report, ctx)
    parts = [
        "<details>",
        "<summary><b>Intended change? How to accept it</b></summary>",
        "",
        "Re-record the golden tapes from the repository root and commit them; the tape diff is then "
        "reviewed in this PR like any other file:",
        "",
        fenced(local, "sh"),
    ]
    if ctx.artifact and drifted:
        # Each tape with its review view (tape/view.py), so the two never disagree in the PR.
        names = sorted({n for s in drifted if s.golden
                        for n in (posixpath.basename(s.golden), view_path(PurePosixPath(s.golden)).name)})
        dest = golden_dirs[0] if len(golden_dirs) == 1 else "<golden dir>"
        fetch = _sh_lines(["gh", "run", "download", ctx.run_url.rsplit("/", 1)[-1] if ctx.run_url else "<run id>",
                           "-n", ctx.artifact, "-D", "mcptape-artifact"])
        copy = _sh_lines(["cp", *[f"mcptape-artifact/fresh/{n}" for n in names], dest.rstrip("/") + "/"])
        if ctx.attested_repo:  # each file proven to be what this run recorded, or nothing is copied
            copy = "\n".join(_sh_lines(["gh", "attestation", "verify", f"mcptape-artifact/fresh/{n}",
                                         "--repo", ctx.attested_repo]) + " &&" for n in names) + "\n" + copy
        parts += [
            "",
            "If the server needs secrets only CI has, take the fresh tapes this run recorded "
            f"(artifact {code_span(ctx.artifact, max_chars=120)}"
            + (f" of the [workflow run]({ctx.run_url})" if ctx.run_url else "") + "):",
            "",
            fenced("\n".join([fetch, copy, add, "git commit -m 'Accept MCP drift'"]), "sh"),
        ]
    parts += ["", "</details>"]
    return "\n".join(parts)


def _headline(report: RunReport) -> str:
    return RESULT_HEADLINE.get(report.result, report.result)


def _has_drift(report: RunReport) -> bool:
    return any(s.verdict in ("output", "structural") for s in report.sessions)


def _drifted_or_failed(report: RunReport) -> list[SessionResult]:
    return [s for s in report.sessions if s.verdict in ("output", "structural", "error", "secret")]


def _cut_note(omitted: int, limits: Limits, ctx: Context) -> str:
    where = limits.where_more
    if ctx.run_url:
        where += f" of the [workflow run]({ctx.run_url})"
    if ctx.artifact:
        where += f" and the JSON report in its artifact {code_span(ctx.artifact, max_chars=120)}"
    return f"_{omitted} more section{'s' * (omitted != 1)} cut to stay under GitHub's size limit: see {where}._"


def _assemble(head: list[str], blocks: list[tuple[str, str]], tail: list[str], limits: Limits, ctx: Context) -> str:
    """Join sections under the size cap: full blocks while they fit, then compact ones, then a note."""
    sep = "\n\n"
    fixed = sep.join(head) + sep + sep.join(tail)
    budget = limits.total - limits.measure(fixed) - 800  # room for the cut note and separators
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
        chosen.append(_cut_note(omitted, limits, ctx))
    doc = sep.join([*head, *chosen, *tail]) + "\n"
    if limits.measure(doc) > limits.total:
        # Only a pathological head (thousands of sessions) gets here; cut on a line boundary.
        lines = doc.split("\n")
        while lines and limits.measure("\n".join(lines)) > limits.total - 400:
            lines.pop()
        doc = "\n".join(lines) + f"\n\n_Report cut to stay under GitHub's size limit: see {limits.where_more}._\n"
    return doc


# --- the two documents ---------------------------------------------------------------------------


def _document(report: RunReport, ctx: Context, limits: Limits, *, level: str, summary: bool) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """Head, per-session blocks and tail of either document: the same design, with more room in the summary."""
    head = [f"{level} {_title(report, ctx)}", _reflects(report, ctx)]
    security, surface_lines = _surface_lines(report, limits)
    head += security
    head += _cause_lines(causes(report), ctx, limits)
    head += _failed_lines(report, limits)
    redacted = report.redaction_summary()
    if redacted:  # kinds and counts only: the values never reach a report
        head.append(f"Redaction: {code_span(redacted, max_chars=500)}")
    if report.strength:  # `ci --strength`: how much of a change this gate catches (strength/report.py)
        head.append(code_span(report.strength, max_chars=600))
    head += surface_lines
    surface = merged_surface(report)
    # One changed tool is the headline already; a table earns its place when several changed.
    if sum(len(getattr(surface, a)) for a in ("added", "removed", "breaking", "compatible", "cosmetic")) > (0 if summary else 1):
        table = surface_table(surface)
        head.append(f"{'#' * (len(level) + 1)} Tool surface\n\n{table}" if summary else
                    f"<details>\n<summary>Tool surface changes</summary>\n\n{table}\n\n</details>")
    if summary:
        head += [f"{'#' * (len(level) + 1)} Sessions", sessions_table(report.sessions)]
    if report.orphans:
        names = ", ".join(code_span(o, max_chars=120) for o in report.orphans[:50])
        head.append(f"Golden tapes with no session (delete them or add the session): {names}")
    first_of_cause: dict[int, SessionResult] = {}
    for cause in causes(report):
        for s in cause.sessions[1:]:
            first_of_cause[id(s)] = cause.sessions[0]
    blocks = [(session_details(s, ctx, limits, same_as=first_of_cause.get(id(s))),
               session_details(s, ctx, limits, compact=True)) for s in _drifted_or_failed(report)]
    comparison = comparison_section(report, limits)
    if comparison:
        head.append(comparison)
    if blocks:
        head.append(f"{'#' * (len(level) + 1)} Per-session detail")
    # Against a live reference there is no golden tape to accept: the change is reviewed as code.
    tail = [accept_instructions(report, ctx)] if _has_drift(report) and not report.compared else []
    return head, blocks, tail


def render_summary(report: RunReport, *, context: Context | None = None) -> str:
    """The job summary: the comment's design with room for more — every session in a table, the
    tool surface, one collapsed diff per drifted session, how to accept."""
    ctx = context or Context()
    head, blocks, tail = _document(report, ctx, SUMMARY_LIMITS, level="##", summary=True)
    return _assemble(head, blocks, tail, SUMMARY_LIMITS, ctx)


def render_comment(report: RunReport, marker: str, *, context: Context | None = None) -> str:
    """The sticky PR comment: marker, a headline saying in words what changes for a client, the
    sessions each change affects, collapsed per-session detail, how to accept."""
    if not marker.startswith("<!--"):
        marker = comment_marker(marker)
    if not MARKER_RE.match(marker):
        raise ValueError(f"not an mcptape comment marker: {marker!r}")
    ctx = context or Context()
    if report.exit_code == 0:
        n = len(report.sessions)
        config = code_span(ctx.config_shown(report), max_chars=120)
        updated = sum(1 for s in report.sessions if s.verdict == "updated")
        detail = f"All {n} session{'s' * (n != 1)} of {config} match their golden tapes."
        if updated:
            detail = f"{n} session{'s' * (n != 1)} of {config}; {updated} golden tape{'s' * (updated != 1)} re-recorded."
        doc = "\n\n".join([marker, f"### {_title(report, ctx)}", detail, _reflects(report, ctx)]) + "\n"
        return doc
    head, blocks, tail = _document(report, ctx, COMMENT_LIMITS, level="###", summary=False)
    return _assemble([marker, *head], blocks, tail, COMMENT_LIMITS, ctx)


__all__ = [
    "COMMENT_LIMIT_CHARS",
    "Context",
    "SUMMARY_LIMIT_BYTES",
    "render_comment",
    "render_summary",
]
