"""A gate without goldens: the sessions run on a reference side and on the head, and the reference is the golden.

The reference is the same servers at another commit (`ci --baseline REF`: a git worktree of REF,
set up by the config's `baseline:` commands; ci/gitref.py finds and checks out the commit) or
another server (`ci --against NAME|COMMAND|URL`: two implementations of one contract). The
config and the sessions are always the head's.

Owns, per session: running the reference side `runs` times and learning what varies between its
own runs (volatility/nondeterminism.py's analysis, the `--repeat` one), applying what it learned to both
sides for this comparison only, comparing them with diff/ as a golden would be, and the two
findings only two live sides can have: a latency regression (volatility/latency.py's statistics, on
interleaved runs) and a structural change under a semver patch or minor bump (`release`). Both
are info unless `drift.fail_on` names them. Running one side is ci/repeat.py's `live_run`. The head
side gets what golden mode gives a session: its context cost and coverage, its fresh tape kept
(--out-dir) and its trace (--otel), through ci/session.py's functions.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcptape.ci import gitref
from mcptape.ci.repeat import LiveRun, live_run
from mcptape.ci.session import RunContext, export_trace, fresh_header, keep_fresh, run_in_pool
from mcptape.config.load import LoadedConfig
from mcptape.config.locations import suggest
from mcptape.config.models import Config, DriftSettings, HttpServer, NormalizeRule, Session, StdioServer
from mcptape.conformance import gate as conformance
from mcptape.diff.surface_cost import add_budget_drift, surface_facts
from mcptape.errors import ConfigError, McptapeError, SecretLeak, WriteError
from mcptape.live.client import describe_step
from mcptape.publish.outlet import Outlet
from mcptape.publish.telemetry import WireClock
from mcptape.redact.redactor import Redactor
from mcptape.tape.format import TAPE_SUFFIX, Tape, make_footer, make_header, tape_bytes
from mcptape.tape.view import render_view
from mcptape.transports.stdio import minimal_env
from mcptape.verdict.model import CallRef, DiffResult, Drift, Finding, RunReport, SessionResult
from mcptape.verdict.vocabulary import Severity
from mcptape.volatility import latency
from mcptape.volatility.nondeterminism import call_of, find_volatile, suggest_rules, unfixed
from mcptape.volatility.normalize import Normalizer

ServerModel = StdioServer | HttpServer
SETUP_TAIL_LINES = 20


@dataclass
class Reference:
    """The side that plays the golden: where its servers resolve, which server, how it is named."""

    ctx: RunContext  # its LoadedConfig's base_dir is the worktree's config directory (or the head's)
    label: str  # "against the merge base `abc1234` with `main`", "`ts` vs `py`"
    name: str  # short, in lines: "base", "py"
    server: ServerModel | None = None  # --against: this server for every session; None: the session's own

    def server_for(self, session: Session) -> ServerModel:
        return self.server if self.server is not None else self.ctx.loaded.config.servers[session.server]


@dataclass
class Compared:
    """One session compared: its result, and the lines the report's comparison section gets."""

    result: SessionResult
    lines: list[str] = field(default_factory=list)


# -- the base side's checkout ---------------------------------------------------------------------


def base_side(loaded: LoadedConfig, checkout: Path, repo: Path) -> LoadedConfig:
    """The head's config, with its paths resolved in `checkout` (REF's worktree of `repo`)."""
    return replace(loaded, base_dir=checkout / loaded.base_dir.resolve().relative_to(repo.resolve()))


def run_setup(base: LoadedConfig, sessions: Sequence[Session], redactor: Redactor) -> list[str]:
    """The `baseline:` setup commands in REF's checkout: the config's, then those of each server a
    selected session uses. Same rules as a server: allowlisted environment plus `baseline.env`,
    a timeout, output redacted (by the run's `redactor`). A failing command is a McptapeError
    (exit 3) naming it."""
    settings = base.config.baseline
    env = minimal_env(settings.env)
    steps: list[tuple[list[str], Path]] = [(cmd, base.base_dir) for cmd in settings.setup]
    used = list(dict.fromkeys(s.server for s in sessions))
    for name in used:
        server = base.config.servers[name]
        cwd = base.resolve(server.cwd) if server.cwd else base.base_dir
        steps += [(cmd, cwd) for cmd in settings.servers.get(name, [])]
    done = []
    for cmd, cwd in steps:
        shown = redactor.redact_text(shlex.join(cmd))
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=settings.timeout, check=False)
        except subprocess.TimeoutExpired as e:
            raise McptapeError(f"baseline setup `{shown}` took more than {settings.timeout:g} s",
                               hint="raise `baseline: {timeout: ...}` in mcptape.yml") from e
        except OSError as e:
            raise McptapeError(f"baseline setup `{shown}` could not start: {e.strerror or e}",
                               hint="fix `baseline: {setup: ...}` in mcptape.yml") from e
        if proc.returncode != 0:
            tail = proc.stdout.decode("utf-8", "replace").splitlines()[-SETUP_TAIL_LINES:]
            said = redactor.redact_text("\n".join(f"    {line}" for line in tail))
            raise McptapeError(f"baseline setup `{shown}` failed (exit {proc.returncode}) in {cwd}:\n{said}",
                               hint="the base commit's checkout needs these commands to pass; fix `baseline:`")
        done.append(shown)
    return done


# -- one session ------------------------------------------------------------------------------------


def _tape(session: Session, run: LiveRun, events: list[dict[str, Any]], server: str) -> Tape:
    header = make_header(session.name, server=server, protocol=run.recording.protocol,
                         negotiation=run.recording.negotiation)
    return Tape(header=header, events=events, footer=make_footer(len(events)),
                event_lines=[i + 2 for i in range(len(events))])


@dataclass
class Learned:
    """What varied between the reference side's own runs, as rules for this comparison only."""

    rules: list[dict[str, Any]]  # normalize rules (nondeterminism.suggest_rules)
    ignore: list[dict[str, str]]  # drift.ignore rules for what no placeholder can fix

    def lines(self, session: str) -> list[str]:
        out = [f"{session}: normalized `{r.get('path') or r.get('pattern')}` → {r['replace']} "
               f"({r['reason']})" for r in self.rules]
        out += [f"{session}: ignored {', '.join(f'{k}={v}' for k, v in r.items())} (varies between the reference's runs)"
                for r in self.ignore]
        return out


def learn(runs: Sequence[LiveRun]) -> Learned:
    """volatility/nondeterminism.py's analysis of the reference's runs: rules where a placeholder fixes a
    value, ignore rules scoped to the call (and path) for everything else that varied."""
    volatiles = find_volatile([Tape(header={}, events=r.normalized) for r in runs])
    rules = suggest_rules(volatiles)
    ignore: list[dict[str, str]] = []
    left = [v for v in volatiles if v.kind != "value"] + unfixed(volatiles, rules)
    for v in left:
        method, name = call_of(v)
        rule: dict[str, str] = {}
        if v.kind == "presence" and not v.path and method.startswith("notifications/"):
            rule["category"] = "notification*"  # a notification's findings belong to the call it came in
        else:
            rule.update({"method": method} if method else {})
            rule.update({"name": name} if name else {})
            rule.update({"path": v.path} if v.path else {})
        if rule and rule not in ignore:
            ignore.append(rule)
    return Learned(rules, ignore)


def _severity(drift: DriftSettings, category: str, kind: str) -> Severity:
    return drift.fail_on.get(f"{category}.{kind}") or drift.fail_on.get(category) or "info"


_SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def release_finding(old: str | None, new: str | None, diff: DiffResult, drift: DriftSettings) -> Finding | None:
    """`2.3.1 → 2.3.2 removes tool `search`: a breaking change in a patch release`, or None."""
    if diff.verdict != "structural" or not old or not new:
        return None
    a, b = _SEMVER.match(old), _SEMVER.match(new)
    if a is None or b is None:
        return None
    (x1, y1, z1), (x2, y2, z2) = (tuple(int(g) for g in m.groups()) for m in (a, b))
    if x2 != x1 or (y2, z2) <= (y1, z1):
        return None  # a major bump may break, and a downgrade or the same version is not a release
    kind = "minor" if y2 > y1 else "patch"
    s = diff.surface
    what = (f"removes tool `{s.removed[0]}`" if s.removed else f"breaks the schema of `{s.breaking[0]}`"
            if s.breaking else "changes the interface")
    if not s.removed and not s.breaking:
        first = next((d for d in diff.drifts if d.severity == "structural"), None)
        if first is not None:
            what = f"changes the interface ({first.one_line()})"
    return Finding.of("release", kind, "", f"{old} → {new} {what}: a breaking change in a {kind} release", old,
                      new, severity=_severity(drift, "release", kind))


def _version(run: LiveRun) -> str | None:
    info = run.recording.server_info or {}
    version = info.get("version")
    return version if isinstance(version, str) else None


def _cannot_run(session: Session, ref: Reference, errors: list[str]) -> SessionResult:
    """Every reference run failed: the session is new in this change (or needs what the base lacks)."""
    finding = Finding.of("session", "no_reference", "",
                         f"cannot run on the reference ({ref.name}): {errors[0].splitlines()[0]}")
    diff = DiffResult(verdict="structural", drifts=[Drift(call=None, findings=[finding])], a=ref.name, b=session.name)
    return SessionResult(name=session.name, verdict="structural", diff=diff,
                         notes=[f"the session's steps cannot run on {ref.label.removeprefix('against ')}: "
                                "new in this change, or the reference lacks what it needs"])


def compare_session(head: RunContext, ref: Reference, session: Session, *, runs: int, latency_runs: int = 0) -> Compared:
    """The reference side `runs` times, the head once, learned volatility, diff, release and latency findings."""
    cfg: Config = head.loaded.config
    ref_server = ref.server_for(session)
    base_runs: list[LiveRun] = []
    errors: list[str] = []
    for _ in range(runs):
        got = live_run(ref.ctx, session, ref_server)
        if isinstance(got, str):
            errors.append(got)
        else:
            base_runs.append(got)
    clock = WireClock() if head.telemetry is not None else None
    head_run = live_run(head, session, clock=clock)
    if isinstance(head_run, str):
        return Compared(SessionResult(name=session.name, verdict="error", error=head_run))
    if not base_runs:
        return Compared(_cannot_run(session, ref, errors))
    if errors:
        return Compared(SessionResult(name=session.name, verdict="error",
                                      error=f"the reference ({ref.name}) failed in {len(errors)} of {runs} runs: {errors[0]}"))
    learned = learn(base_runs) if len(base_runs) > 1 else Learned([], [])
    extra = Normalizer([NormalizeRule(**{k: r[k] for k in ("path", "pattern", "replace") if k in r})
                        for r in learned.rules], paths={})
    drift = cfg.drift.model_copy(update={"ignore": [*cfg.drift.ignore, *learned.ignore]})
    golden = _tape(session, base_runs[0], extra.fresh(base_runs[0].normalized), ref.name)
    fresh = _tape(session, head_run, extra.fresh(head_run.normalized), session.server)
    diff = conformance.diff_checked(golden, fresh, drift, as_sent=_tape(session, head_run, head_run.raw, session.server))
    diff.a, diff.b = ref.name, "head" if ref.server is None else session.server
    lines = learned.lines(session.name)
    release = release_finding(_version(base_runs[0]), _version(head_run), diff, cfg.drift)
    if release is not None:
        diff.drifts.insert(0, Drift(call=None, findings=[release]))
    if latency_runs:
        found, measured = latency_findings(head, ref, session, latency_runs)
        diff.drifts.extend(found)
        lines += measured
    facts = surface_facts(fresh, golden, session.server)  # context cost and coverage, as golden mode reports them
    add_budget_drift(diff, facts, cfg.drift)
    severities = {d.severity for d in diff.drifts}
    diff.verdict = "structural" if "structural" in severities else "output" if "output" in severities else "same"
    result = SessionResult(name=session.name, verdict=diff.verdict, diff=diff, surface_facts=facts,
                           duration_s=round(head_run.recording.duration_s, 3))
    if learned.rules or learned.ignore:
        result.notes.append(f"{len(learned.rules) + len(learned.ignore)} volatile place(s) learned from "
                            f"{len(base_runs)} runs of the reference and normalized for this comparison")
    _keep_head(head, session, head_run, result, clock)
    return Compared(result, lines)


def _keep_head(head: RunContext, session: Session, run: LiveRun, result: SessionResult, clock: WireClock | None) -> None:
    """The head side's fresh tape (--out-dir) and trace (--otel), as golden mode keeps and exports them;
    a secret that survived, or a tape that cannot be written, fails the session as it would there."""
    if run.scrubbed is None:
        return
    outlet = Outlet(head.redactor.fork())
    release = outlet.release()  # the tape, its timing and its view: all verified, then written, or none
    try:
        if head.out_dir is not None:
            header = fresh_header(head, session, run.recording)
            data = outlet.verified(tape_bytes(header, run.normalized), f"fresh tape of session {session.name}")
            fresh = keep_fresh(head, session, release, data, run.scrubbed.footer_timing(),
                               render_view(header, run.normalized))
        if head.telemetry is not None and clock is not None:
            export_trace(head.telemetry, head, session, result, run.recording.protocol, run.scrubbed.redacted, clock,
                         outlet)
        release.write()
        if head.out_dir is not None:
            result.fresh = str(fresh)
    except SecretLeak as e:
        result.verdict, result.error = "secret", str(e)
    except WriteError as e:
        result.verdict, result.error = "error", str(e)


# -- latency ----------------------------------------------------------------------------------------


def latency_findings(head: RunContext, ref: Reference, session: Session, n: int) -> tuple[list[Drift], list[str]]:
    """N interleaved runs a side (ABBA order, so a machine getting slower hurts both alike); per
    step a latency.compare; a regression becomes a `latency` finding (info unless fail_on says)."""
    samples: dict[str, dict[int, list[float]]] = {"ref": {}, "head": {}}
    for i in range(n):
        order = ("ref", "head") if i % 2 == 0 else ("head", "ref")
        for side in order:
            got = live_run(ref.ctx, session, ref.server_for(session)) if side == "ref" else live_run(head, session)
            if isinstance(got, str):
                raise McptapeError(f"session {session.name}: a latency run of the {side} side failed: {got}")
            for number, seconds in got.recording.step_s.items():
                samples[side].setdefault(number, []).append(seconds)
    drifts: list[Drift] = []
    lines: list[str] = []
    severity = _severity(head.loaded.config.drift, "latency", "regression")
    for number, step in enumerate(session.steps, start=1):
        base, new = samples["ref"].get(number, []), samples["head"].get(number, [])
        if len(base) < n or len(new) < n:
            continue
        c = latency.compare(base, new)
        lines.append(f"{session.name} · step {number} · {describe_step(step)}: {c.line()}")
        if c.regression:
            call = CallRef(method="tools/call" if step.action == "call" else step.action, name=step.target,
                           arguments=step.arguments, step=number)
            drifts.append(Drift(call=call, findings=[Finding.of("latency", "regression", "",
                                                                f"{c.shift * 1000:.1f} ms slower per call (median {c.base.median * 1000:.1f} → "
                        f"{c.head.median * 1000:.1f} ms, Mann-Whitney p={c.p:.2g})", severity=severity)]))
    return drifts, lines


# -- a whole run --------------------------------------------------------------------------------------


def has_goldens(ctx: RunContext, sessions: Sequence[Session]) -> bool:
    """`--baseline auto`: goldens when the repository keeps them (one for every selected session)."""
    return all((ctx.golden_dir / f"{s.name}{TAPE_SUFFIX}").is_file() for s in sessions)


def against_server(cfg: Config, value: str) -> tuple[str, ServerModel]:
    """`--against`: a `servers:` name, a URL, or a command (split like a shell would)."""
    if value in cfg.servers:
        return value, cfg.servers[value]
    if re.match(r"https?://", value):
        return value, HttpServer(url=value)
    try:
        argv = shlex.split(value)
    except ValueError as e:
        raise ConfigError(f"--against {value}: cannot split the command ({e})") from e
    if not argv:
        raise ConfigError("--against is empty: name a server of mcptape.yml, a command or a URL")
    if len(argv) == 1 and not Path(argv[0]).exists() and shutil.which(argv[0]) is None:
        raise ConfigError(f'--against {value}: neither a server of mcptape.yml{suggest(value, list(cfg.servers))} '
                          "nor a program; give a `servers:` name, a command or a URL")
    # `node port.mjs`, `python -m pkg`: the script names the implementation better than its interpreter.
    name = next((a for a in argv[1:] if not a.startswith("-")), argv[0]) if len(argv) > 1 else argv[0]
    return Path(name).name, StdioServer(command=argv)


def _label_against(sessions: Sequence[Session], name: str) -> str:
    heads = list(dict.fromkeys(s.server for s in sessions))
    return f"{', '.join(f'`{h}`' for h in heads)} vs `{name}` (the reference)"


def compare_all(ctx: RunContext, ref: Reference, sessions: Sequence[Session], *, runs: int, latency_runs: int,
                jobs: int) -> list[Compared]:
    # Sessions in parallel as in a golden run; a latency run keeps one session at a time, since
    # sessions competing for the cores would be noise in each other's timings.
    workers = 1 if latency_runs else jobs
    return run_in_pool(workers, lambda s: compare_session(ctx, ref, s, runs=runs, latency_runs=latency_runs),
                       sessions, "baseline", servers=[server for s in sessions for server in
                                                      (ref.server_for(s), ctx.loaded.config.servers[s.server])])


def reference_report(ctx: RunContext, sessions: Sequence[Session], *, baseline: str | None, against: str | None,
                     runs: int | None, latency_runs: int | None, jobs: int) -> RunReport:
    """`ci --baseline REF` or `ci --against SERVER`: every selected session compared with the reference."""
    loaded = ctx.loaded
    runs = runs or loaded.config.baseline.runs
    if runs < 2:
        raise ConfigError(f"--reference-runs {runs}: the reference runs at least twice, to learn what varies between its runs")
    if latency_runs is not None and latency_runs < latency.MIN_RUNS:
        raise ConfigError(f"--latency {latency_runs}: at least {latency.MIN_RUNS} runs a side, e.g. --latency 10 "
                          f"(fewer cannot tell a regression from noise at p < {latency.ALPHA})")
    lines: list[str] = []
    if against is not None:
        name, server = against_server(loaded.config, against)
        ref = Reference(ctx, _label_against(sessions, name), name, server)
        compared = compare_all(ctx, ref, sessions, runs=runs, latency_runs=latency_runs or 0, jobs=jobs)
    else:
        assert baseline is not None
        repo = gitref.repo_root(loaded.base_dir)
        base = gitref.resolve(repo, baseline)
        with gitref.worktree(repo, base.sha) as checkout:
            base_loaded = base_side(loaded, checkout, repo)
            if not base_loaded.base_dir.is_dir():
                raise ConfigError(f"{loaded.path}: its directory does not exist at {base.label}",
                                  hint="the base commit predates the servers this config runs; compare with a later ref")
            lines += [f"setup: {cmd}" for cmd in run_setup(base_loaded, sessions, ctx.redactor.fork())]
            # The head's config, so the head's Redactor: compiled once for both sides.
            ref_ctx = RunContext(loaded=base_loaded, update=False, out_dir=None, golden_dir=base_loaded.golden_dir,
                                 run_redactor=ctx.redactor)
            ref = Reference(ref_ctx, f"against {base.label}", "base")
            compared = compare_all(ctx, ref, sessions, runs=runs, latency_runs=latency_runs or 0, jobs=jobs)
    for c in compared:
        lines += c.lines
    return RunReport(config=os.path.basename(loaded.path), sessions=[c.result for c in compared],
                     compared=ref.label, comparison=lines)
