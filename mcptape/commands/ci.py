"""`mcptape ci`: run mcptape.yml's sessions, compare each fresh tape with its reference, exit with the worst verdict.

Owns the command: its options, its modes and which options each mode honours (one table, MODE_FLAGS),
the safety rules (`--update-golden` under CI=true), and the one path every mode takes: load the
config, check it as `mcptape check` does, select the sessions, check where the run will write, open
the traces, run, and leave through commands/run_report.py (merge's path too). A combination no mode
can honour is refused with exit 3 before anything starts, never accepted and ignored.

The modes:
    golden    (the default) compare each fresh tape with its golden tape; -u accepts the fresh ones
    baseline  --baseline REF: the same sessions at REF are the reference (ci/baseline.py)
    against   --against SERVER: another implementation is the reference (ci/baseline.py)
    repeat    --repeat N: each session N times, the volatile values and the rules that fix them (ci/repeat.py)

Running one session is ci/session.py's, choosing which ci/selection.py's; rendering is report/'s.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import mcptape.environment as environment
from mcptape.ci.baseline import has_goldens, reference_report
from mcptape.ci.repeat import analyse_repeats, repeat_session
from mcptape.ci.selection import select_sessions
from mcptape.ci.session import RunContext, SessionOutcome, orphan_goldens, run_in_pool, run_session
from mcptape.commands.grammar import Output, check_outputs, deprecated_spelling
from mcptape.commands.output import check_html, say
from mcptape.commands.run_report import FreshTape, ReportFiles, leave
from mcptape.commands.strength import gate_strength
from mcptape.config.load import LoadedConfig, load_config
from mcptape.config.models import HttpServer, Session, StdioServer
from mcptape.config.semantics import check_config, outside_repository
from mcptape.errors import EXIT_COULD_NOT_RUN, EXIT_SECRET, McptapeError, SecretLeak, UsageError
from mcptape.publish.outlet import Outlet
from mcptape.publish.telemetry import open_telemetry
from mcptape.verdict.model import RunReport
from mcptape.verdict.vocabulary import worst_exit

# -- the modes and what each one honours ----------------------------------------------------------


class Mode(Enum):
    GOLDEN = "golden"
    BASELINE = "baseline"
    AGAINST = "against"
    REPEAT = "repeat"

    @property
    def named(self) -> str:
        """How a sentence names the mode: by the flag that chose it."""
        return "golden mode" if self is Mode.GOLDEN else f"--{self.value}"

    @property
    def does(self) -> str:
        return {
            Mode.GOLDEN: "compares each fresh tape with its golden tape",
            Mode.BASELINE: "compares two live sides (the sessions at another commit and here) and reads and "
                           "writes no golden tape",
            Mode.AGAINST: "compares two live sides (another implementation and this one) and reads and writes "
                          "no golden tape",
            Mode.REPEAT: "compares a session's runs with each other and prints the volatile values it found; it "
                         "reads and writes no golden tape and writes no report",
        }[self]


ALL_MODES = frozenset(Mode)
REFERENCE = frozenset({Mode.BASELINE, Mode.AGAINST})
REPORTING = frozenset({Mode.GOLDEN, Mode.BASELINE, Mode.AGAINST})


@dataclass(frozen=True)
class ModeFlag:
    """A flag that works in some modes only: the modes, and what it does (said when it is refused)."""

    spelling: str
    modes: frozenset[Mode]
    does: str
    given: Callable[[Options], bool]


# The one place that says which option works in which mode; `--session`, `--shard`, `--jobs` and
# `-c` work in every mode. tests/commands/test_ci_modes.py drives every row in every mode.
MODE_FLAGS: tuple[ModeFlag, ...] = (
    ModeFlag("--update-golden", frozenset({Mode.GOLDEN}), "accepts the fresh tapes as golden tapes",
             lambda o: o.update_golden),
    ModeFlag("--allow-update-in-ci", frozenset({Mode.GOLDEN}), "lets --update-golden write golden tapes under CI=true",
             lambda o: o.allow_update_in_ci),
    ModeFlag("--allow-edited", frozenset({Mode.GOLDEN}), "reads golden tapes that do not match their seal",
             lambda o: o.allow_edited),
    ModeFlag("--strength", frozenset({Mode.GOLDEN}), "measures the gate on its golden tapes", lambda o: o.strength),
    ModeFlag("--reference-runs", REFERENCE, "sets how often the live reference runs", lambda o: o.reference_runs is not None),
    ModeFlag("--latency", REFERENCE, "times both live sides", lambda o: o.latency is not None),
    ModeFlag("--json", REPORTING, "writes the run's JSON report", lambda o: o.json is not None),
    ModeFlag("--junit", REPORTING, "writes the run's JUnit report", lambda o: o.junit is not None),
    ModeFlag("--summary", REPORTING, "writes the run's markdown summary", lambda o: o.summary is not None),
    ModeFlag("--sarif", REPORTING, "writes the run's security findings", lambda o: o.sarif is not None),
    ModeFlag("--html", REPORTING, "writes the run as one page", lambda o: o.html is not None),
    ModeFlag("--out-dir", REPORTING, "keeps each session's fresh tape", lambda o: o.out_dir is not None),
    ModeFlag("--otel", REPORTING, "exports each session's recording as a trace", lambda o: o.otel and not o.otel_payloads),
    ModeFlag("--otel-payloads", REPORTING, "exports each session's recording as a trace, with its messages",
             lambda o: o.otel_payloads),
)


def refuse_combinations(options: Options, modes: frozenset[Mode]) -> None:
    """UsageError (exit 3, why) for an option the run's mode cannot honour. `modes`: the modes the
    run may turn out to be (two for `--baseline auto`, which picks when it sees the goldens)."""
    for flag in MODE_FLAGS:
        if flag.given(options):
            for mode in sorted(modes - flag.modes, key=list(Mode).index):
                works = " or ".join(m.named for m in Mode if m in flag.modes)
                raise UsageError(f"{flag.spelling} does not work in {mode.named}: {flag.spelling} {flag.does}, and "
                                 f"{mode.named} {mode.does}",
                                 hint=f"drop {flag.spelling}, or run it in {works}"
                                 + (" (--baseline auto is golden mode where there are goldens)" if options.baseline == "auto" else ""))
    # Pairs inside a mode: an option that only means something with another one.
    if options.allow_update_in_ci and not options.update_golden:
        raise UsageError("--allow-update-in-ci lets --update-golden write golden tapes under CI=true; without "
                         "--update-golden it allows nothing", hint="add -u, or drop --allow-update-in-ci")
    if options.allow_edited and options.update_golden:
        raise UsageError("--allow-edited reads golden tapes that do not match their seal; --update-golden replaces "
                         "them without reading their seals", hint="drop --allow-edited")
    if options.latency is not None and options.jobs is not None:
        raise UsageError("--latency runs one session at a time, so sessions do not slow each other; --jobs would "
                         "not be honoured", hint="drop --jobs")


# -- the command ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    config: str
    update_golden: bool = False
    allow_update_in_ci: bool = False
    sessions: tuple[str, ...] = ()
    jobs: int | None = None
    shard: str | None = None
    repeat: int | None = None  # --repeat N: repeat mode
    json: str | None = None  # the report options (commands/grammar.py: `-` is stdout)
    junit: str | None = None
    summary: str | None = None
    sarif: str | None = None
    out_dir: str | None = None
    baseline: str | None = None  # --baseline REF: no goldens, REF's run is the reference (ci/baseline.py)
    against: str | None = None  # --against SERVER: another implementation is the reference
    reference_runs: int | None = None  # the reference's runs (default: the config's baseline.runs)
    latency: int | None = None
    allow_edited: bool = False  # --allow-edited: read goldens that do not match their seal
    otel: bool = False  # --otel (or --otel-payloads, which implies it): export each session as a trace
    otel_payloads: bool = False  # with the messages, redacted
    strength: bool = False  # --strength: the gate's strength in one line of the report (commands/strength.py)
    html: str | None = None  # --html=FILE: the run as one self-contained page (report/html.py)
    notes: tuple[str, ...] = ()  # lines for stderr about how the options were read (a deprecated meaning)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        repeat, reference_runs, notes = args.repeat, args.reference_runs, []
        if repeat is not None and (args.baseline is not None or args.against is not None) and reference_runs is None:
            # --repeat once also meant the reference's runs here; it has one meaning now (repeat mode).
            notes.append(deprecated_spelling(f"--repeat {repeat} with --baseline/--against", f"--reference-runs {repeat}"))
            repeat, reference_runs = None, repeat
        return cls(
            config=args.config, update_golden=args.update_golden, allow_update_in_ci=args.allow_update_in_ci,
            sessions=tuple(args.session), jobs=args.jobs, shard=args.shard, repeat=repeat,
            json=args.json, junit=args.junit, summary=args.summary, sarif=args.sarif, out_dir=args.out_dir,
            baseline=args.baseline, against=args.against, reference_runs=reference_runs, latency=args.latency,
            allow_edited=args.allow_edited, otel=args.otel or args.otel_payloads, otel_payloads=args.otel_payloads,
            strength=args.strength, html=args.html, notes=tuple(notes),
        )

    def modes(self) -> frozenset[Mode]:
        """The mode the options choose (two for `--baseline auto`); UsageError for two choices."""
        chosen = [m for m, given in ((Mode.BASELINE, self.baseline is not None), (Mode.AGAINST, self.against is not None),
                                     (Mode.REPEAT, self.repeat is not None)) if given]
        if len(chosen) > 1:
            raise UsageError(f"{' and '.join(m.named for m in chosen)} are two modes: give one",
                             hint="--baseline REF or --against SERVER picks the reference; --repeat N finds volatile "
                             "values (use --reference-runs N for the reference's runs)")
        if not chosen:
            return frozenset({Mode.GOLDEN})
        if chosen == [Mode.BASELINE] and self.baseline == "auto":
            return frozenset({Mode.GOLDEN, Mode.BASELINE})
        return frozenset(chosen)

    def outputs(self) -> list[Output]:
        return [Output("--json", self.json), Output("--junit", self.junit), Output("--summary", self.summary),
                Output("--sarif", self.sarif), Output("--html", self.html),
                Output("--out-dir", self.out_dir, directory=True)]

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


@dataclass
class _Prepared:
    """What every mode starts from: the options checked, the config loaded and checked, the sessions."""

    mode: Mode
    ctx: RunContext
    sessions: list[Session]


def run(options: Options) -> int:
    for note in options.notes:
        say(f"mcptape ci: {note}")
    prepared = _prepare(options, warn=lambda text: say(f"mcptape ci: warning: {text}"))
    if prepared.mode is Mode.REPEAT:
        return _repeat(options, prepared.ctx, prepared.sessions)
    gated = _judge(options, prepared)
    code = _finish(options, gated.ctx, gated.report, gated.extra, gated.fresh)
    if gated.weak is not None:  # a weaker gate than drift.min_strength asks for: it cannot vouch (exit 3, docs/strength.md)
        say(f"mcptape ci: {gated.weak}")
        return worst_exit([code, EXIT_COULD_NOT_RUN])
    return code


def gate(options: Options, warn: Callable[[str], None]) -> Gated | None:
    """Run the sessions and judge them (the library's `mcptape.run`): the report, nothing shown or
    written but the golden tapes under --update-golden. None in repeat mode (another report).
    `warn` gets what the run goes on despite (a config outside the repository)."""
    prepared = _prepare(options, warn)
    return None if prepared.mode is Mode.REPEAT else _judge(options, prepared)


def _prepare(options: Options, warn: Callable[[str], None]) -> _Prepared:
    """The one path into every mode: refuse what the mode cannot honour, load and check the config as
    `mcptape check` does, select the sessions, check where the run will write."""
    modes = options.modes()
    refuse_combinations(options, modes)
    check_html(options.html)
    if options.repeat is not None and options.repeat < 2:
        raise UsageError(f"--repeat {options.repeat}: compare at least 2 runs, e.g. --repeat 5")
    if options.jobs is not None and options.jobs < 1:
        raise UsageError(f"--jobs {options.jobs}: run at least 1 session at a time", hint="leave --jobs out for one per core")
    if options.update_golden and environment.in_ci() and not options.allow_update_in_ci:
        raise McptapeError(
            f"refusing --update-golden with CI={environment.get('CI')}: golden tapes are accepted by a person, not by the gate",
            hint="run it locally and commit the tapes, or pass --allow-update-in-ci if this job is meant to",
        )
    check_outputs(options.outputs(), reads=[options.config])
    loaded = load_config(options.config)
    check_config(loaded)  # what `mcptape check` checks, before any server starts, in every mode
    for warning in outside_repository(loaded):
        warn(warning)
    sessions = select_sessions(loaded, options.sessions, options.shard)
    ctx = RunContext(loaded=loaded, update=options.update_golden, out_dir=_out_dir(options, loaded),
                     golden_dir=loaded.golden_dir, allow_edited=options.allow_edited)
    return _Prepared(_mode(options, modes, ctx, sessions), ctx, sessions)


def _judge(options: Options, prepared: _Prepared) -> Gated:
    """Golden, baseline or against mode: the sessions run and judged, traced under --otel."""
    ctx, sessions = prepared.ctx, prepared.sessions
    ctx.telemetry = open_telemetry(options.otel, options.otel_payloads)
    try:
        if prepared.mode is Mode.GOLDEN:
            report, extra, fresh = _golden(options, ctx, sessions)
            report.strength, weak = gate_strength(ctx.loaded, asked=options.strength)  # after -u: the goldens just written
            return Gated(report, ctx, extra, weak, fresh)
        baseline = "merge-base" if options.baseline == "auto" else options.baseline
        report = reference_report(ctx, sessions, baseline=baseline, against=options.against,
                                  runs=options.reference_runs, latency_runs=options.latency,
                                  jobs=options.jobs_for(sessions))
        return Gated(report, ctx, [])
    finally:
        if ctx.telemetry is not None:
            ctx.telemetry.close()


def _mode(options: Options, modes: frozenset[Mode], ctx: RunContext, sessions: Sequence[Session]) -> Mode:
    """The run's one mode: `--baseline auto` is golden mode where the goldens are, else the merge base."""
    if len(modes) == 1:
        return next(iter(modes))
    return Mode.GOLDEN if has_goldens(ctx, sessions) else Mode.BASELINE


def _out_dir(options: Options, loaded: LoadedConfig) -> Path | None:
    """--out-dir, resolved; never the golden directory, whose tapes it would replace (-u's job)."""
    if options.out_dir is None:
        return None
    out_dir = Path(options.out_dir).resolve()
    if out_dir == loaded.golden_dir.resolve():
        raise UsageError(f"--out-dir {options.out_dir}: that is the golden directory of {loaded.path}; the fresh tapes "
                         "would replace the golden ones", hint="give --out-dir another directory (-u accepts fresh tapes as golden)")
    return out_dir


def _golden(options: Options, ctx: RunContext, sessions: Sequence[Session]
            ) -> tuple[RunReport, list[str], dict[str, FreshTape]]:
    """Golden mode's run: the report, the lines -u adds, and the fresh tapes in hand (the HTML page's)."""
    outcomes = run_in_pool(options.jobs_for(sessions), lambda s: run_session(ctx, s), sessions, "session",
                           servers=_servers(ctx, sessions))
    report = RunReport(config=os.path.basename(ctx.loaded.path), sessions=[o.result for o in outcomes],
                       orphans=orphan_goldens(ctx), updated_golden=ctx.update, shard=options.shard)
    fresh = {o.result.name: FreshTape(o.fresh_bytes, o.fresh_timing) for o in outcomes if o.fresh_bytes is not None}
    return report, _update_lines(outcomes) if ctx.update else [], fresh


def _finish(options: Options, ctx: RunContext, report: RunReport, extra: Sequence[str],
            fresh: Mapping[str, FreshTape] | None = None) -> int:
    """Show, write and publish a run's report (commands/run_report.py, as merge does); the exit code
    is the worst of the verdict and of that."""
    files = ReportFiles(options.json, options.junit, options.summary, options.sarif, options.html)
    lines = {s.name: ctx.loaded.line_of("sessions", i) for i, s in enumerate(ctx.loaded.config.sessions)}
    left = leave(report, files, Outlet(ctx.redactor.fork()), name="ci", config_path=str(ctx.loaded.path),
                 config_dir=ctx.loaded.base_dir, extra="".join(extra), session_lines=lines, fresh=fresh)
    return worst_exit([report.exit_code, left])


def _servers(ctx: RunContext, sessions: Sequence[Session]) -> list[StdioServer | HttpServer]:
    """The servers the sessions' workers open (run_in_pool imports what they need first)."""
    return [ctx.loaded.config.servers[s.server] for s in sessions]


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


def _repeat(options: Options, ctx: RunContext, sessions: Sequence[Session]) -> int:
    """Repeat mode: each selected session N times live; the volatile values and the normalize rules
    that fix them, on the terminal (ci/repeat.py: exit 0 stable, 1 volatile, 3 a run failed)."""
    runs = int(options.repeat or 0)
    results = run_in_pool(options.jobs_for(sessions), lambda s: repeat_session(ctx, s, runs), sessions, "repeat",
                          servers=_servers(ctx, sessions))
    text, exit_code = analyse_repeats(results, runs)
    try:
        Outlet(ctx.redactor.fork()).show(text, "--repeat report", escape=True)
    except SecretLeak as e:
        say(f"mcptape ci: {e}")
        return EXIT_SECRET
    return exit_code
