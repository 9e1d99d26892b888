"""A run's report on its way out, for `mcptape ci` and `mcptape merge` alike: one path for both.

Owns what happens once a RunReport exists: the terminal report, the files the options ask for
(`--json`, `--junit`, `--summary`, `--sarif`, `--html`), warnings about the run, and in a GitHub Actions job
the job summary, annotations, step outputs and PR comment (publish/github.py's publish_run), all through
one Outlet (publish/outlet.py), and the exit code of that part. The report itself is ci/'s (a run, or
ci/merge.py's merged shards); how each format looks is report/'s.

The HTML page also shows what the tapes hold (the drifted messages side by side, the surface
before and after, each session's timeline), so the tapes are loaded here for it (`session_tapes`):
each golden from the config's directory, each fresh one from what ci recorded (`FreshTape`) or,
for merge, from where the shard kept it (`--out-dir`). A tape that cannot be read is said on the
page, never a failed report.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcptape.environment as environment
from mcptape.commands.grammar import STDOUT
from mcptape.commands.output import report_stream, stdout_or
from mcptape.errors import EXIT_SECRET, McptapeError, SecretLeak, TapeError
from mcptape.logsafe import utf8
from mcptape.publish.github import command, post, prepare_run, render_context
from mcptape.publish.outlet import Outlet, Release
from mcptape.report.html_views import SessionTapes
from mcptape.report.json_report import report_bytes
from mcptape.report.junit import junit_xml
from mcptape.report.markdown import Context, render_summary
from mcptape.report.sarif import sarif_bytes
from mcptape.report.terminal import render_run_text
from mcptape.tape.format import Tape
from mcptape.tape.reader import parse_tape_bytes, read_tape
from mcptape.tape.timing import event_times, footer_times
from mcptape.verdict.model import RunReport


@dataclass(frozen=True)
class ReportFiles:
    """Where the options say the report goes besides the terminal (None: not written)."""

    json_report: str | None = None  # each: a file, or `-` for stdout (then the terminal report goes to stderr)
    junit: str | None = None
    summary: str | None = None
    sarif: str | None = None
    html: str | None = None  # always a file (commands/output.py's check_html)

    def paths(self) -> tuple[str | None, ...]:
        return (self.json_report, self.junit, self.summary, self.sarif, self.html)


@dataclass(frozen=True)
class FreshTape:
    """A session's fresh tape as ci recorded it: the verified bytes (golden-ready) and its timing."""

    data: bytes
    timing: dict[str, Any] | None = None


def leave(report: RunReport, files: ReportFiles, outlet: Outlet, *, name: str, config_path: str,
          config_dir: Path, extra: str = "", warnings: Sequence[str] = (),
          session_lines: Mapping[str, int] | None = None, fresh: Mapping[str, FreshTape] | None = None) -> int:
    """Show, write and publish `report`: 0, or the exit code of what failed (EXIT_SECRET if a
    secret survived: then nothing leaves). The verdict's own exit code is the caller's.

    Everything is rendered and verified before anything leaves: a secret that one rendering
    shows and another does not (the comment, say) leaves no report file behind it either.
    `name` is the command (`ci`, `merge`) its messages start with; `config_path` the config as the
    job names it (the PR comment's key); `config_dir` where SARIF's paths and the golden tapes'
    start; `extra` more terminal text; `warnings` are said after the files are written, before
    publishing; `session_lines`: each session's line in the config, where SARIF points for a
    session with no golden tape (a live reference: ci/baseline.py); `fresh` the fresh tapes ci has
    in hand, by session (the HTML page shows them).
    """
    stream = report_stream(*files.paths())
    outlet.commands_to = stream
    on_github = environment.on_github_actions()
    try:
        text = render_run_text(report) + extra
        if report.compared:
            text += "".join(f"{line}\n" for line in [f"\ncompared {report.compared}", *report.comparison])
        if report.strength:
            text += f"\n{report.strength}\n"
        outlet.verified(text, "terminal report")
        release = _files(report, files, outlet, config_dir, session_lines or {})
        if files.html:
            from mcptape.report.html import render_run  # jinja2, for --html only

            page = render_run(report, session_tapes(report, config_dir, fresh or {}), context=_context(config_path))
            release.add(files.html, utf8(page), what="HTML report")
        said = [outlet.verified(f"mcptape {name}: warning: {w}", "warning") for w in warnings]
        shown = [outlet.verified(command("warning", w, title=f"mcptape {name}"), "warning") for w in warnings]
        report_path = None if files.json_report == STDOUT else files.json_report
        publication = prepare_run(report, config_path=config_path, report_path=report_path,
                                  outlet=outlet) if on_github else None
    except SecretLeak as e:
        outlet.say(f"mcptape {name}: {e}")
        return EXIT_SECRET
    outlet.show(text, "terminal report", file=stream)
    release.write()
    for line in said:
        outlet.say(line)
    if on_github:
        for line in shown:
            outlet.command(line, "warning")
    if publication is None:
        return 0
    try:
        post(publication)
    except McptapeError as e:
        outlet.say(f"mcptape {name}: publishing to GitHub failed: {e}")
        return e.exit_code
    return 0


def _files(report: RunReport, files: ReportFiles, outlet: Outlet, config_dir: Path,
           session_lines: Mapping[str, int]) -> Release:
    """The report files the options ask for, rendered and verified, to be written together."""
    release = outlet.release()
    if files.json_report:
        release.output(stdout_or(files.json_report), report_bytes(report), what="JSON report")
    if files.junit == STDOUT:
        release.show(junit_xml(report), what="JUnit report")
    elif files.junit:
        release.add(files.junit, utf8(junit_xml(report)), what="JUnit report")
    if files.summary:
        summary = outlet.document(render_summary(report), "markdown summary")
        if files.summary == STDOUT:
            release.show(summary, what="markdown summary")
        else:
            release.add(files.summary, utf8(summary), what="markdown summary")
    if files.sarif:
        data = sarif_bytes(report, config_dir=config_dir, root=Path(os.environ.get("GITHUB_WORKSPACE") or "."),
                           session_lines=session_lines)
        release.output(stdout_or(files.sarif), data, what="SARIF report")
    return release


def _context(config_path: str) -> Context:
    """Where the page is shown: in a GitHub job, linked to the commit and run as the comment is."""
    if not environment.on_github_actions():
        return Context()
    return render_context(os.environ, config_path, os.environ.get("GITHUB_WORKSPACE") or os.getcwd())


def _read(path: Path, what: str, missing: list[str]) -> Tape | None:
    try:
        return read_tape(path)
    except TapeError as e:
        missing.append(f"The {what} tape could not be read: {e}")
        return None


def session_tapes(report: RunReport, config_dir: Path, fresh: Mapping[str, FreshTape]) -> dict[str, SessionTapes]:
    """Each session's golden and fresh tape, as far as they can be had (module docstring)."""
    out: dict[str, SessionTapes] = {}
    for s in report.sessions:
        missing: list[str] = []
        golden = None
        if s.golden and (config_dir / s.golden).is_file():
            golden = _read(config_dir / s.golden, "golden", missing)
        tape, times = None, None
        kept = fresh.get(s.name)
        if kept is not None:
            try:
                tape = parse_tape_bytes(kept.data, Path(s.fresh or f"{s.name} (fresh)"))
                times = footer_times({"timing": kept.timing}) if kept.timing is not None else None
            except TapeError as e:
                missing.append(f"The fresh tape could not be read: {e}")
        elif s.fresh and Path(s.fresh).is_file():
            tape = _read(Path(s.fresh), "fresh", missing)
            times = event_times(tape) if tape is not None else None
        elif s.diff is not None and s.diff.first is not None:
            missing.append("The fresh tape was not kept (`mcptape ci --out-dir DIR` keeps it): the drifted "
                           "messages are shown from the findings alone.")
        out[s.name] = SessionTapes(golden=golden, fresh=tape, fresh_times=times, missing=tuple(missing))
    return out
