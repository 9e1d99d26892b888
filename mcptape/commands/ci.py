"""`mcptape ci`: run mcptape.yml's sessions, compare each fresh tape with its golden, exit with the worst verdict.

Owns the command: its options and their safety rules (`--update-golden` under CI=true), running
the selected sessions in parallel (one server process per session, so a thread each is enough),
writing the reports and the exit code. The per-session pipeline is ci/session.py's, which
sessions ci/selection.py's, `--repeat` ci/repeat.py's; rendering is report/'s and github.py's.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from mcptape.ci.repeat import analyse_repeats, repeat_session
from mcptape.ci.selection import check_output_paths, select_sessions
from mcptape.ci.session import RunContext, SessionOutcome, orphan_goldens, run_session
from mcptape.config.load import LoadedConfig, load_config
from mcptape.errors import (
    EXIT_SECRET,
    ConfigError,
    McptapeError,
    SecretLeak,
)
from mcptape.outlet import Outlet
from mcptape.report.json_report import report_bytes
from mcptape.report.junit import junit_xml
from mcptape.report.markdown import render_summary
from mcptape.report.model import RunReport, worst_exit
from mcptape.report.terminal import render_run_text

# -- the command ----------------------------------------------------------------------------------


def run_ci(args: argparse.Namespace) -> int:
    if getattr(args, "repeat", None) is not None:
        return run_repeat(args)
    update = bool(args.update_golden)
    if update and os.environ.get("CI", "").lower() == "true" and not args.allow_update_in_ci:
        raise McptapeError(
            "refusing --update-golden with CI=true: golden tapes are accepted by a person, not by the gate",
            hint="run it locally and commit the tapes, or pass --allow-update-in-ci if this job is meant to",
        )
    loaded = load_config(args.config)
    sessions = select_sessions(loaded, args.session or [], args.shard)
    out_dir = Path(args.out_dir).resolve() if args.out_dir else None
    check_output_paths(loaded, args, out_dir)
    ctx = RunContext(loaded=loaded, update=update, out_dir=out_dir, golden_dir=loaded.golden_dir)
    jobs = max(1, min(args.jobs or os.cpu_count() or 1, len(sessions) or 1))

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="session") as pool:
        outcomes = list(pool.map(lambda s: run_session(ctx, s), sessions))

    report = RunReport(
        config=os.path.basename(loaded.path),
        sessions=[o.result for o in outcomes],
        orphans=orphan_goldens(ctx),
        updated_golden=update,
        shard=args.shard,
    )
    exit_code = report.exit_code
    outlet = Outlet.for_config(loaded)
    try:
        text = render_run_text(report)
        if update:
            text += "".join(_update_lines(outcomes))
        outlet.show(text, "terminal report")
        _write_reports(args, report, outlet)
    except SecretLeak as e:
        print(f"mcptape ci: {e}", file=sys.stderr)
        return EXIT_SECRET
    exit_code = worst_exit([exit_code, _publish(report, loaded, outlet)])
    return exit_code


def _update_lines(outcomes: Sequence[SessionOutcome]) -> list[str]:
    lines = ["\ngolden tapes:\n"]
    for o in outcomes:
        r = o.result
        if o.golden_change is None:
            lines.append(f"  not written  {r.golden}  (session {r.name}: {r.verdict})\n")
        else:
            lines.append(f"  {o.golden_change:<11}  {r.golden}\n")
    if any(o.golden_change in ("created", "updated") for o in outcomes):
        lines.append("review the changes with `git diff`, then commit the tapes\n")
    return lines


def _write_reports(args: argparse.Namespace, report: RunReport, outlet: Outlet) -> None:
    if args.json_report:
        outlet.write(args.json_report, report_bytes(report), what="JSON report", where=f"JSON report {args.json_report}")
    if args.junit:
        outlet.write(args.junit, junit_xml(report).encode("utf-8"), what="JUnit report", where=f"JUnit report {args.junit}")
    if getattr(args, "summary", None):
        data = render_summary(report, redactor=outlet.redactor).encode("utf-8")
        outlet.write(args.summary, data, what="markdown summary", where=f"summary {args.summary}")


def _publish(report: RunReport, loaded: LoadedConfig, outlet: Outlet) -> int:
    """In a GitHub Actions job: summary, annotations, outputs, PR comment (github.py decides how)."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return 0
    from mcptape.github import publish_run

    try:
        publish_run(report, config_path=str(loaded.path), outlet=outlet)
    except McptapeError as e:
        print(f"mcptape ci: publishing to GitHub failed: {e}", file=sys.stderr)
        return e.exit_code
    return 0


def run_repeat(args: argparse.Namespace) -> int:
    """`mcptape ci --repeat N`: run each selected session N times live and suggest normalize rules."""
    runs = int(args.repeat)
    if runs < 2:
        raise ConfigError(f"--repeat {runs}: compare at least 2 runs, e.g. --repeat 5")
    if args.update_golden:
        raise ConfigError("--repeat never writes golden tapes; run it without --update-golden")
    loaded = load_config(args.config)
    sessions = select_sessions(loaded, args.session or [], args.shard)
    ctx = RunContext(loaded=loaded, update=False, out_dir=None, golden_dir=loaded.golden_dir)
    jobs = max(1, min(args.jobs or os.cpu_count() or 1, len(sessions) or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="repeat") as pool:
        results = list(pool.map(lambda s: repeat_session(ctx, s, runs), sessions))
    text, exit_code = analyse_repeats(results, runs)
    try:
        Outlet.for_config(loaded).show(text, "--repeat report", escape=True)
    except SecretLeak as e:
        print(f"mcptape ci: {e}", file=sys.stderr)
        return EXIT_SECRET
    return exit_code


