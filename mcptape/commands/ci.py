"""`mcptape ci`: run mcptape.yml's sessions, compare each fresh tape with its golden, exit with the worst verdict.

Owns the command: its options and their safety rules (`--update-golden` under CI=true), running
the selected sessions in parallel (one server process per session, so a thread each is enough)
and the exit code. The per-session pipeline is ci/session.py's, which sessions ci/selection.py's,
`--repeat` ci/repeat.py's; writing and publishing the report is commands/run_report.py's (merge's
too), rendering report/'s and publish/github.py's.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcptape import environment
from mcptape.ci.baseline import has_goldens, reference_report
from mcptape.ci.repeat import analyse_repeats, repeat_session
from mcptape.ci.selection import check_output_paths, select_sessions
from mcptape.ci.session import RunContext, SessionOutcome, orphan_goldens, run_in_pool, run_session
from mcptape.commands.output import check_html
from mcptape.commands.run_report import FreshTape, ReportFiles, leave
from mcptape.commands.strength import gate_strength
from mcptape.config.load import load_config
from mcptape.config.models import Session
from mcptape.config.semantics import check_config, outside_repository
from mcptape.errors import (
    EXIT_COULD_NOT_RUN,
    EXIT_SECRET,
    ConfigError,
    McptapeError,
    SecretLeak,
)
from mcptape.logsafe import safe_log
from mcptape.publish.outlet import Outlet
from mcptape.publish.telemetry import open_telemetry
from mcptape.verdict.model import RunReport
from mcptape.verdict.vocabulary import worst_exit

# -- the command ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    config: str
    update_golden: bool
    allow_update_in_ci: bool
    sessions: tuple[str, ...]
    jobs: int | None
    shard: str | None
    repeat: int | None
    json_report: str | None
    junit: str | None
    summary: str | None
    out_dir: str | None
    baseline: str | None = None  # --baseline REF: no goldens, REF's run is the reference (ci/baseline.py)
    against: str | None = None  # --against SERVER: another implementation is the reference
    latency: int | None = None
    sarif: str | None = None
    allow_edited: bool = False  # --allow-edited: read goldens that do not match their seal
    otel: bool = False  # --otel: export each session as a trace (publish/telemetry.py)
    otel_payloads: bool = False  # --otel-payloads: with the messages, redacted
    strength: bool = False  # --strength: the gate's strength in one line of the report (commands/strength.py)
    html: str | None = None  # --html FILE: the run as one self-contained page (report/html.py)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(
            config=args.config, update_golden=bool(args.update_golden), allow_update_in_ci=bool(args.allow_update_in_ci),
            sessions=tuple(args.session or ()), jobs=args.jobs, shard=args.shard, repeat=args.repeat,
            json_report=args.json_report, junit=args.junit, summary=args.summary, out_dir=args.out_dir,
            baseline=getattr(args, "baseline", None), against=getattr(args, "against", None),
            latency=getattr(args, "latency", None),
            sarif=getattr(args, "sarif", None),
            allow_edited=bool(getattr(args, "allow_edited", False)),
            otel=bool(getattr(args, "otel", False)), otel_payloads=bool(getattr(args, "otel_payloads", False)),
            strength=bool(getattr(args, "strength", False)),
            html=getattr(args, "html", None),
        )

    def jobs_for(self, sessions: Sequence[Session]) -> int:
        """Sessions in parallel: --jobs, else the cores; never more than there are sessions."""
        return max(1, min(self.jobs or os.cpu_count() or 1, len(sessions) or 1))


@dataclass
class Gated:
    """A run's report before it leaves: what `run` shows, writes and publishes, and what the
    library's `mcptape.run` returns. `extra` is said after the report (the golden tapes written)."""

    report: RunReport
    ctx: RunContext
    extra: list[str]
    weak: str | None = None  # what a gate weaker than drift.min_strength says (it cannot vouch: exit 3)
    fresh: Mapping[str, FreshTape] | None = None  # each session's fresh tape, for the HTML report's side-by-side


def run(options: Options) -> int:
    gated = gate(options, warn=lambda text: print(safe_log(f"mcptape ci: warning: {text}"), file=sys.stderr))
    if gated is None:
        return run_repeat(options)
    code = _finish(options, gated.ctx, gated.report, gated.extra, gated.fresh)
    if gated.weak is not None:  # a weaker gate than drift.min_strength asks for: it cannot vouch (exit 3, docs/strength.md)
        print(safe_log(f"mcptape ci: {gated.weak}"), file=sys.stderr)
        return worst_exit([code, EXIT_COULD_NOT_RUN])
    return code


def gate(options: Options, warn: Callable[[str], None]) -> Gated | None:
    """Run the sessions and judge them: the report, nothing shown or written but the golden tapes
    under --update-golden. None for `--repeat` without a reference (run_repeat: another report).
    `warn` gets what the run goes on despite (a config outside the repository)."""
    check_html(options.html)
    if options.strength and (options.repeat is not None or options.baseline is not None or options.against is not None):
        raise ConfigError("--strength measures the gate on its golden tapes; --repeat, --baseline and --against run "
                          "without them: run `mcptape ci --strength` (or `mcptape check --strength`) on its own")
    if options.baseline is not None or options.against is not None:
        reference = run_reference(options)
        if reference is not None:
            return reference
    elif options.latency is not None:
        raise ConfigError("--latency compares two live sides: add --baseline REF or --against SERVER")
    if options.repeat is not None:
        return None
    update = options.update_golden
    if update and environment.in_ci() and not options.allow_update_in_ci:
        raise McptapeError(
            f"refusing --update-golden with CI={environment.get('CI')}: golden tapes are accepted by a person, not by the gate",
            hint="run it locally and commit the tapes, or pass --allow-update-in-ci if this job is meant to",
        )
    loaded = load_config(options.config)
    for warning in outside_repository(loaded):
        warn(warning)
    sessions = select_sessions(loaded, options.sessions, options.shard)
    check_output_paths(loaded, options.out_dir, (("--json", options.json_report), ("--junit", options.junit),
                                                  ("--summary", options.summary), ("--sarif", options.sarif),
                                                  ("--html", options.html)))
    out_dir = Path(options.out_dir).resolve() if options.out_dir else None
    telemetry = open_telemetry(options.otel, options.otel_payloads)
    ctx = RunContext(loaded=loaded, update=update, out_dir=out_dir, golden_dir=loaded.golden_dir,
                     allow_edited=options.allow_edited, telemetry=telemetry)

    try:
        outcomes = run_in_pool(options.jobs_for(sessions), lambda s: run_session(ctx, s), sessions, "session")
    finally:
        if telemetry is not None:
            telemetry.close()

    report = RunReport(
        config=os.path.basename(loaded.path),
        sessions=[o.result for o in outcomes],
        orphans=orphan_goldens(ctx),
        updated_golden=update,
        shard=options.shard,
    )
    report.strength, weak = gate_strength(loaded, asked=options.strength)  # after -u: the goldens just written
    fresh = {o.result.name: FreshTape(o.fresh_bytes, o.fresh_timing) for o in outcomes if o.fresh_bytes is not None}
    return Gated(report, ctx, _update_lines(outcomes) if update else [], weak, fresh)


def run_reference(options: Options) -> Gated | None:
    """`--baseline REF` / `--against SERVER`: the reference is a live side (ci/baseline.py); None
    when `--baseline auto` finds goldens, which then gate as usual."""
    if options.baseline is not None and options.against is not None:
        raise ConfigError("--baseline and --against name two references; give one")
    if options.update_golden:
        raise ConfigError("--baseline/--against compare two live sides and write no golden tape; drop --update-golden")
    loaded = load_config(options.config)
    sessions = select_sessions(loaded, options.sessions, options.shard)
    check_output_paths(loaded, options.out_dir, (("--json", options.json_report), ("--junit", options.junit),
                                                  ("--summary", options.summary), ("--html", options.html)))
    ctx = RunContext(loaded=loaded, update=False, out_dir=None, golden_dir=loaded.golden_dir)
    baseline = options.baseline
    if baseline == "auto":
        if has_goldens(ctx, sessions):
            return None
        baseline = "merge-base"
    report = reference_report(ctx, sessions, baseline=baseline, against=options.against, runs=options.repeat,
                              latency_runs=options.latency, jobs=options.jobs_for(sessions))
    return Gated(report, ctx, [])


def _finish(options: Options, ctx: RunContext, report: RunReport, extra: Sequence[str],
            fresh: Mapping[str, FreshTape] | None = None) -> int:
    """Show, write and publish a run's report (commands/run_report.py, as merge does); the exit code
    is the worst of the verdict and of that."""
    files = ReportFiles(options.json_report, options.junit, options.summary, options.sarif, options.html)
    left = leave(report, files, Outlet(ctx.redactor.fork()), name="ci", config_path=str(ctx.loaded.path),
                 config_dir=ctx.loaded.base_dir, extra="".join(extra), fresh=fresh)
    return worst_exit([report.exit_code, left])


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


def run_repeat(options: Options) -> int:
    """`mcptape ci --repeat N`: run each selected session N times live and suggest normalize rules.

    Exit codes: 0 every session gave the same normalized tape in all N runs; 1 volatile values or
    events were found (the suggested rules and advice are printed); 3 a session failed in a run
    (or the config is invalid). Goldens are never written, and no tape is compared with them.
    """
    runs = int(options.repeat or 0)
    if runs < 2:
        raise ConfigError(f"--repeat {runs}: compare at least 2 runs, e.g. --repeat 5")
    if options.update_golden:
        raise ConfigError("--repeat never writes golden tapes; run it without --update-golden")
    if options.html is not None:  # its report is the suggested rules on the terminal, no verdict to show
        raise ConfigError("--repeat writes no HTML report (it compares runs, not goldens); run it without --html")
    loaded = load_config(options.config)
    check_config(loaded)  # what `mcptape check` checks, before any server starts
    sessions = select_sessions(loaded, options.sessions, options.shard)
    ctx = RunContext(loaded=loaded, update=False, out_dir=None, golden_dir=loaded.golden_dir)
    results = run_in_pool(options.jobs_for(sessions), lambda s: repeat_session(ctx, s, runs), sessions, "repeat")
    text, exit_code = analyse_repeats(results, runs)
    try:
        Outlet(ctx.redactor.fork()).show(text, "--repeat report", escape=True)
    except SecretLeak as e:
        print(f"mcptape ci: {e}", file=sys.stderr)
        return EXIT_SECRET
    return exit_code


