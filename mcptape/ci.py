"""`mcptape ci`: run mcptape.yml's sessions, compare each fresh tape with its golden, exit with the worst verdict.

Owns the orchestration: choosing sessions (`--session`, `--shard`), running them in parallel
(one server process per session, so a thread each is enough), the per-session pipeline
(record -> redact -> normalize -> compare or write the golden), golden files and orphans,
`--update-golden` and its safety rules, and writing the reports. It leaves the protocol to
client.py, volatile values to normalize.py, secrets to redact/, the verdict of one pair of
tapes to diff/, and rendering to report/ (terminal, junit, markdown) and github.py.

Conformance: every fresh recording, redacted but not normalized, is checked against the MCP
schema (diff_tapes with conformance=True; `drift.conformance` sets the severity). Without a
golden the findings join the "no golden" drift; with --update-golden they are notes on the
session and do not stop the golden being written (accepting it is a person's call), since every
later gate run checks again.

Every byte that leaves this module for a file or the terminal passes `_Outlet.emit`, the single
choke point where redaction is verified (redact/redactor.py); a secret that survives fails closed (exit 4).

Sessions run in worker threads, so everything the session pipeline imports is imported here, at
module level, in the main thread, before any worker starts (see the imports below): a first
import racing in two threads can hand one of them a partially initialized module. Files are
written with tape.atomic.write_atomic, whose OSErrors are WriteErrors (exit 3); a golden or fresh
tape that cannot be written fails its session, a report that cannot be written fails the run.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import io
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The session pipeline's imports, including the ones its modules make lazily (to keep
# `mcptape --version` and `play` light): ci.py is imported only for `mcptape ci` (and merge), so
# they cost nothing elsewhere, and no worker thread ever does a first import. Two threads importing
# `mcptape.diff` (diff_tapes) and `mcptape.diff.engine` (conformance_drifts) at once deadlocked
# in the import system, which then gave one of them a partially initialized module (ImportError).
# tests/integration/test_ci_concurrency.py fails if a worker thread does a first import.
import httpx  # noqa: F401  (transports/http.py imports it where it is used)
import jsonschema  # noqa: F401  (client.schema_violation, against a golden's inputSchema)

import mcptape.conformance  # noqa: F401  (diff/engine.py: conformance_drifts; mcp_types, pydantic, jsonschema)
import mcptape.diff.values  # noqa: F401  (diff/engine.py, diff/classify.py)
import mcptape.transports.http  # noqa: F401  (transports/factory.py, for `url:` servers)
from mcptape.client import Recording, record_session
from mcptape.config.load import LoadedConfig, load_config
from mcptape.config.models import HttpServer, Session
from mcptape.diff import diff_tapes
from mcptape.diff.engine import conformance_drifts
from mcptape.errors import (
    EXIT_COULD_NOT_RUN,
    EXIT_SECRET,
    ConfigError,
    McptapeError,
    SecretLeak,
    TapeError,
    WriteError,
)
from mcptape.logsafe import ci_log_block, safe_log
from mcptape.normalize import Normalizer, canonical_order, session_paths
from mcptape.redact.redactor import Redactor
from mcptape.report.model import DiffResult, Drift, Finding, RunReport, SessionResult, worst_exit
from mcptape.sandbox import Sandbox
from mcptape.tape.atomic import write_atomic
from mcptape.tape.events import recording_notes
from mcptape.tape.format import TAPE_SUFFIX, Tape, make_footer, make_header, tape_bytes
from mcptape.tape.reader import read_tape
from mcptape.transports.factory import open_transport

UPDATE_HINT = "mcptape ci --update-golden"


# -- redaction: the one choke point ---------------------------------------------------------------


def make_redactor(loaded: LoadedConfig) -> Redactor:
    """A fresh Redactor for one tape or report (placeholders are stable within one instance)."""
    cfg = loaded.config
    return Redactor(known=loaded.secrets, patterns=cfg.redact.patterns, allow=cfg.redact.allow)


def emit(redactor: Redactor, data: bytes, where: str) -> bytes:
    """THE choke point: every tape, report and terminal byte is verified here before it leaves."""
    redactor.verify(data, where)
    return data


# -- one session ----------------------------------------------------------------------------------


@dataclass
class SessionOutcome:
    result: SessionResult
    fresh_bytes: bytes | None = None  # the verified fresh tape, if one could be built
    golden_change: str | None = None  # update mode: created | updated | unchanged


@dataclass
class RunContext:
    loaded: LoadedConfig
    update: bool
    out_dir: Path | None
    golden_dir: Path
    messages: list[str] = field(default_factory=list)


def golden_path(ctx: RunContext, session: Session) -> Path:
    return ctx.golden_dir / f"{session.name}{TAPE_SUFFIX}"


def _rel(ctx: RunContext, path: Path) -> str:
    try:
        return os.path.relpath(path, ctx.loaded.base_dir)
    except ValueError:
        return str(path)


def golden_tools(tape: Tape) -> dict[str, Any]:
    """name -> tool definition from the golden tape's tools/list answers (the schema it accepted)."""
    tools: dict[str, Any] = {}
    for event in tape.events:
        if event.get("kind") == "response" and event.get("method") == "tools/list":
            result = (event.get("msg") or {}).get("result") or {}
            for tool in result.get("tools") or []:
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    tools[tool["name"]] = tool
    return tools


def _normalizer(ctx: RunContext, session: Session) -> Normalizer:
    loaded = ctx.loaded
    extra = [loaded.resolve(d) for d in session.sandbox]
    server = loaded.config.servers[session.server]
    if server.cwd:
        extra.append(loaded.resolve(server.cwd))
    paths = session_paths(config_dir=loaded.base_dir, extra=extra)
    return Normalizer(loaded.config.normalize, paths=paths)


# -- side effects: the session's sandbox directories (sandbox.py) ----------------------------------


def open_sandbox(ctx: RunContext, session: Session) -> Sandbox | None:
    """Snapshot the session's `sandbox:` directories before its server starts (None if it declares none)."""
    if not session.sandbox:
        return None
    roots = [ctx.loaded.resolve(d) for d in session.sandbox]
    # File names pass the session's normalizer: a timestamp in a name must not be drift.
    sandbox = Sandbox(roots, label=_normalizer(ctx, session).text)
    try:
        sandbox.start()
    except OSError as e:
        sandbox.restore()
        raise ConfigError(
            f"session {session.name}: cannot snapshot its sandbox {e.filename or ''}: {e.strerror or e}",
            hint="`sandbox:` names scratch directories the server may write to; check they are readable",
        ) from e
    return sandbox


def _last_side_effects(sandbox: Sandbox | None, recording: Recording) -> None:
    """Changes after the last step (during shutdown) or in the step that failed: recorded, not lost."""
    if sandbox is None:
        return
    step = recording.failed_step if recording.error is not None else None
    recording.events.extend(sandbox.step(step))


def _merge_schema_breaks(diff: DiffResult, recording: Recording) -> DiffResult:
    """Add the client's schema findings (golden accepted the arguments, live does not) in step order."""
    for brk in recording.schema_breaks:
        drift = Drift(call=brk.call, findings=[brk.finding])
        at = len(diff.drifts)
        for i, existing in enumerate(diff.drifts):
            if existing.call is not None and existing.call.step is not None and existing.call.step > brk.step:
                at = i
                break
        diff.drifts.insert(at, drift)
        diff.verdict = "structural"
    return diff


def _no_golden(ctx: RunContext, session: Session) -> DiffResult:
    rel = _rel(ctx, golden_path(ctx, session))
    finding = Finding(
        category="session",
        severity="structural",
        path="",
        message=f"no golden tape {rel}: record it with `{UPDATE_HINT} --session {session.name}`, review and commit it",
    )
    return DiffResult(verdict="structural", drifts=[Drift(call=None, findings=[finding])], b=session.name)


def run_session(ctx: RunContext, session: Session) -> SessionOutcome:
    """Record one session and judge it; never raises for a session-level failure."""
    loaded = ctx.loaded
    cfg = loaded.config
    started = time.monotonic()
    gpath = golden_path(ctx, session)
    result = SessionResult(name=session.name, verdict="error", golden=_rel(ctx, gpath))
    redactor = make_redactor(loaded)

    def fail(message: str, verdict: str = "error") -> SessionOutcome:
        result.verdict = verdict  # type: ignore[assignment]
        result.error = redactor.redact_text(message)
        result.duration_s = round(time.monotonic() - started, 3)
        return SessionOutcome(result)

    golden: Tape | None = None
    if gpath.exists():
        try:
            golden = read_tape(gpath)
        except TapeError as e:
            if not ctx.update:
                return fail(str(e))
    server = cfg.servers[session.server]
    settings = cfg.client_for(session)
    try:
        sandbox = open_sandbox(ctx, session)
    except McptapeError as e:
        return fail(str(e))
    try:
        try:
            transport = open_transport(server, base_dir=loaded.base_dir, env=server.env)
        except McptapeError as e:
            return fail(f"session {session.name}: server `{session.server}` failed to start: {e}")
        recording = record_session(
            transport,
            session.steps,
            settings,
            session=session.name,
            protocol=server.protocol,
            step_timeout=session.step_timeout,
            session_timeout=session.timeout,
            golden_tools=None if (ctx.update or golden is None) else golden_tools(golden),
            after_step=sandbox.step if sandbox is not None else None,
        )
        _last_side_effects(sandbox, recording)
    finally:
        if sandbox is not None:
            sandbox.restore()
    normalizer = _normalizer(ctx, session)
    # Redaction first: a rotated token must not be drift, and nothing unredacted is normalized into a golden.
    redacted = [redactor.redact_event(e) for e in recording.events]
    events = normalizer.fresh(redacted)
    result.notes.extend(recording_notes(events))  # a limit that triggered is reported, never silent
    header = make_header(
        session.name,
        transport="http" if isinstance(server, HttpServer) else "stdio",
        server=session.server,
        protocol=recording.protocol,
        negotiation=recording.negotiation,
    )
    try:
        fresh_bytes = emit(redactor, tape_bytes(header, events), f"fresh tape of session {session.name}")
    except SecretLeak as e:
        return fail(str(e), "secret")
    result.redactions = dict(getattr(redactor, "counts", {}) or {})
    if ctx.out_dir is not None:
        fresh_path = ctx.out_dir / f"{session.name}{TAPE_SUFFIX}"
        try:
            write_atomic(fresh_path, fresh_bytes, what=f"fresh tape of session {session.name}")
        except WriteError as e:
            return fail(str(e))
        result.fresh = str(fresh_path)
    outcome = SessionOutcome(result, fresh_bytes=fresh_bytes)
    result.duration_s = round(recording.duration_s, 3)

    if recording.error is not None:
        result.verdict = "error"
        message = str(recording.error)
        if isinstance(recording.error, ConfigError) and recording.failed_step is not None:
            index = cfg.sessions.index(session)
            message = f"{loaded.path}:{loaded.step_line(index, recording.failed_step - 1)}: {message}"
        result.error = redactor.redact_text(message)
        if ctx.update:
            result.notes.append(f"golden tape {result.golden} left untouched: the session did not complete")
        return outcome

    if ctx.update:
        try:
            old = gpath.read_bytes() if gpath.exists() else None
        except OSError as e:  # e.g. a directory where the golden tape should be
            return fail(f"{gpath}: cannot read the golden tape to replace it: {e.strerror or e}")
        if old == fresh_bytes:
            outcome.golden_change = "unchanged"
            result.verdict = "same"
        else:
            try:
                write_atomic(gpath, fresh_bytes, what=f"golden tape of session {session.name}")
            except WriteError as e:
                outcome = fail(str(e))
                outcome.result.notes.append(f"golden tape {result.golden} left untouched: it could not be written")
                return outcome
            outcome.golden_change = "created" if old is None else "updated"
            result.verdict = "updated"
            if golden is not None:
                result.diff = _compare(golden, header, events, redacted, normalizer, cfg, recording)
        # Accepting a golden is a person's call, so a nonconformant server does not fail it; but
        # they are told, and the gate checks every fresh run's conformance anyway.
        drifts = _conformance(header, redacted, cfg)
        if drifts:
            result.notes.append(
                f"conformance: the server broke the MCP schema in {len(drifts)} message(s) of this recording; "
                "the golden tape was written anyway, and `mcptape ci` fails until the server conforms "
                "(or `drift: {conformance: info}`)")
            result.notes.extend(f"conformance: {d.one_line()}" for d in drifts[:5])
            if len(drifts) > 5:
                result.notes.append(f"conformance: … and {len(drifts) - 5} more message(s)")
        return outcome

    if golden is None:
        result.verdict = "structural"
        result.diff = _no_golden(ctx, session)
        result.diff.drifts.extend(_conformance(header, redacted, cfg))
        result.notes.append(f"no golden tape yet: run `{UPDATE_HINT} --session {session.name}`")
        return outcome
    diff = _compare(golden, header, events, redacted, normalizer, cfg, recording)
    diff.a = result.golden
    diff.b = result.fresh or "(live run; --out-dir DIR keeps it)"
    result.diff = diff
    result.verdict = diff.verdict
    return outcome


def _compare(
    golden: Tape,
    header: dict[str, Any],
    events: list[dict[str, Any]],
    redacted: list[dict[str, Any]],
    normalizer: Normalizer,
    cfg: Any,
    recording: Recording,
) -> DiffResult:
    # The golden is normalized again with today's rules (values only: its order is already
    # canonical, and keeping it keeps its line numbers right for annotations).
    golden_n = Tape(
        header=golden.header,
        events=normalizer.events(golden.events),
        footer=golden.footer,
        path=golden.path,
        event_lines=list(golden.event_lines),
    )
    diff = diff_tapes(golden_n, _fresh_tape(header, events), cfg.drift, conformance=True,
                      as_sent=_as_sent(header, redacted))
    return _merge_schema_breaks(diff, recording)


def _fresh_tape(header: dict[str, Any], events: list[dict[str, Any]]) -> Tape:
    return Tape(header=header, events=events, footer=make_footer(len(events)), path=None,
                event_lines=[i + 2 for i in range(len(events))])


def _as_sent(header: dict[str, Any], redacted: list[dict[str, Any]]) -> Tape:
    """The fresh recording for the conformance check: redacted, not normalized (a normalize rule
    may rewrite what the server sent, even a schema), in the fresh tape's order. Only the floating
    block (normalize.py) can order differently, where normalized values sort differently."""
    return _fresh_tape(header, canonical_order(redacted))


def _conformance(header: dict[str, Any], redacted: list[dict[str, Any]], cfg: Any) -> list[Drift]:
    """Failing conformance findings (mcptape/conformance.py, drift settings applied) of a fresh
    recording that is not compared with a golden one: no golden yet, or --update-golden."""
    return [d for _, d in conformance_drifts(_as_sent(header, redacted), cfg.drift) if d.severity != "info"]


# -- selecting sessions -----------------------------------------------------------------------


def select_sessions(loaded: LoadedConfig, names: Sequence[str], shard: str | None) -> list[Session]:
    sessions = list(loaded.config.sessions)
    known = [s.name for s in sessions]
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean `{close[0]}`?" if close else f"sessions in {loaded.path}: {', '.join(known)}"
            raise ConfigError(f"--session {name}: no session of that name in {loaded.path}", hint=hint)
    if names:
        sessions = [s for s in sessions if s.name in names]
    if shard:
        index, total = parse_shard(shard)
        ordered = sorted(sessions, key=lambda s: s.name)
        chosen = {s.name for i, s in enumerate(ordered) if i % total == index - 1}
        sessions = [s for s in sessions if s.name in chosen]
    return sessions


def parse_shard(text: str) -> tuple[int, int]:
    try:
        left, right = text.split("/")
        index, total = int(left), int(right)
    except ValueError:
        index, total = 0, 0
    if total < 1 or not 1 <= index <= total:
        raise ConfigError(f"--shard {text}: expected I/N with 1 <= I <= N, e.g. --shard 1/3")
    return index, total


def _not_a_directory(path: Path) -> Path | None:
    """The nearest existing one of `path` and its parents when it is not a directory (a file in
    the way), else None: then `path` is a directory or can be made one."""
    for candidate in (path, *path.parents):
        if candidate.is_symlink() or candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def check_output_paths(loaded: LoadedConfig, args: argparse.Namespace, out_dir: Path | None) -> None:
    """Refuse at once, before any server starts, the places a run could not write to: a golden_dir,
    --out-dir or report directory that is (or lies under) a file, a report path that is a directory.
    What only the write itself can tell (read-only, disk full) is a WriteError when it happens."""
    blocker = _not_a_directory(loaded.golden_dir)
    if blocker is not None:
        raise ConfigError(
            f"{loaded.path}:{loaded.line_of('golden_dir')}: golden_dir {loaded.config.golden_dir!r}: "
            f"{blocker} is a file, not a directory",
            hint="golden_dir names the directory that holds the golden tapes; move the file or point golden_dir elsewhere",
        )
    if out_dir is not None and (blocker := _not_a_directory(out_dir)) is not None:
        raise ConfigError(f"--out-dir {args.out_dir}: {blocker} is a file, not a directory",
                          hint="--out-dir names a directory to keep the fresh tapes in")
    reports = (("--json", "json_report"), ("--junit", "junit"), ("--summary", "summary"))
    for flag, value in ((flag, getattr(args, name, None)) for flag, name in reports):
        if not value:
            continue
        target = Path(value)
        if target.is_dir():
            raise ConfigError(f"{flag} {value}: is a directory", hint=f"{flag} names the file to write")
        if (blocker := _not_a_directory(target.parent)) is not None:
            raise ConfigError(f"{flag} {value}: {blocker} is a file, not a directory",
                              hint=f"{flag} names the file to write, in a directory")


def orphan_goldens(ctx: RunContext) -> list[str]:
    """Golden tapes in golden_dir that no session of the config (selected or not) owns."""
    if not ctx.golden_dir.is_dir():
        return []
    names = {s.name for s in ctx.loaded.config.sessions}
    return sorted(
        _rel(ctx, p)
        for p in ctx.golden_dir.glob(f"*{TAPE_SUFFIX}")
        if p.name[: -len(TAPE_SUFFIX)] not in names
    )


# -- rendering ------------------------------------------------------------------------------


def render_terminal(report: RunReport) -> str:
    """The terminal report as text, rendered by report/terminal.py."""
    from rich.console import Console

    from mcptape.report.terminal import render_run

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=sys.stdout.isatty(), width=120, soft_wrap=True)
    render_run(report, console)
    return buffer.getvalue()


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
    outlet = make_redactor(loaded)
    try:
        text = render_terminal(report)
        if update:
            text += "".join(_update_lines(outcomes))
        sys.stdout.write(ci_log_block(emit(outlet, text.encode("utf-8"), "terminal report").decode("utf-8")))
        sys.stdout.flush()
        _write_reports(args, report, outlet)
    except SecretLeak as e:
        print(f"mcptape ci: {e}", file=sys.stderr)
        return EXIT_SECRET
    exit_code = worst_exit([exit_code, _publish(report, loaded)])
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


def _write_reports(args: argparse.Namespace, report: RunReport, outlet: Redactor) -> None:
    if args.json_report:
        data = json.dumps(report.to_dict(), indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
        write_atomic(args.json_report, emit(outlet, data, f"JSON report {args.json_report}"), what="JSON report")
    if args.junit:
        from mcptape.report.junit import junit_xml

        data = junit_xml(report).encode("utf-8")
        write_atomic(args.junit, emit(outlet, data, f"JUnit report {args.junit}"), what="JUnit report")
    if getattr(args, "summary", None):
        from mcptape.report.markdown import render_summary

        data = render_summary(report).encode("utf-8")
        write_atomic(args.summary, emit(outlet, data, f"summary {args.summary}"), what="markdown summary")


def _publish(report: RunReport, loaded: LoadedConfig) -> int:
    """In a GitHub Actions job: summary, annotations, outputs, PR comment (github.py decides how)."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return 0
    from mcptape.github import publish_run

    try:
        publish_run(report, config_path=str(loaded.path))
    except McptapeError as e:
        print(f"mcptape ci: publishing to GitHub failed: {e}", file=sys.stderr)
        return e.exit_code
    return 0


# -- the nondeterminism check: `mcptape ci --repeat N` -----------------------------------------------
#
# Exit codes: 0 every session gave the same normalized tape in all N runs; 1 volatile values or
# events were found (the suggested rules and advice are printed); 3 a session failed in a run
# (or the config is invalid). Goldens are never written, and no tape is compared with them.


@dataclass
class _Repeated:
    """N runs of one session: normalized tapes (as ci compares them), redacted raw ones, errors."""

    session: Session
    normalized: list[list[dict[str, Any]]] = field(default_factory=list)
    raw: list[list[dict[str, Any]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _record_once(ctx: RunContext, session: Session) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | str:
    """One live run: (normalized events, redacted events in canonical order), or the error (redacted)."""
    loaded = ctx.loaded
    cfg = loaded.config
    server = cfg.servers[session.server]
    redactor = make_redactor(loaded)
    try:
        sandbox = open_sandbox(ctx, session)
    except McptapeError as e:
        return redactor.redact_text(str(e))
    try:
        try:
            transport = open_transport(server, base_dir=loaded.base_dir, env=server.env)
        except McptapeError as e:
            return redactor.redact_text(f"server `{session.server}` failed to start: {e}")
        recording = record_session(
            transport,
            session.steps,
            cfg.client_for(session),
            session=session.name,
            protocol=server.protocol,
            step_timeout=session.step_timeout,
            session_timeout=session.timeout,
            after_step=sandbox.step if sandbox is not None else None,
        )
        _last_side_effects(sandbox, recording)
    finally:
        if sandbox is not None:
            sandbox.restore()
    if recording.error is not None:
        return redactor.redact_text(str(recording.error))
    redacted = [redactor.redact_event(e) for e in recording.events]
    return _normalizer(ctx, session).fresh(redacted), canonical_order(redacted)


def _repeat_session(ctx: RunContext, session: Session, runs: int) -> _Repeated:
    # One run after the other, not side by side: a clock that ticks in seconds looks constant to
    # runs that start together, and a sandbox is restored between runs. Sessions run in parallel.
    out = _Repeated(session)
    for run in range(1, runs + 1):
        got = _record_once(ctx, session)
        if isinstance(got, str):
            out.errors.append(f"run {run}: {got}")
            continue
        out.normalized.append(got[0])
        out.raw.append(got[1])
    return out


def _yaml_rule(rule: dict[str, Any]) -> str:
    key = "path" if rule.get("path") else "pattern"
    lines = []
    if rule.get("seen"):
        lines.append(f"  # seen: {', '.join(rule['seen'])}")
    lines.append(f"  - {key}: {json.dumps(rule[key], ensure_ascii=False)}")
    lines.append(f"    replace: {json.dumps(rule['replace'], ensure_ascii=False)}")
    lines.append(f"    reason: {json.dumps(rule['reason'], ensure_ascii=False)}")
    return "\n".join(lines)


def analyse_repeats(results: Sequence[_Repeated], runs: int) -> tuple[str, int]:
    """The `--repeat` report text and its exit code (pure over the recorded runs)."""
    from mcptape.config.models import NormalizeRule
    from mcptape.nondeterminism import find_volatile, suggest_rules, unfixed
    from mcptape.normalize import Normalizer

    def tapes(events_per_run: list[list[dict[str, Any]]]) -> list[Tape]:
        return [Tape(header={}, events=events) for events in events_per_run]

    lines = [f"mcptape ci --repeat {runs}: each session ran {runs} times; normalized tapes compared run by run", ""]
    rules: dict[tuple[str, str], dict[str, Any]] = {}
    advice: list[str] = []
    exit_code = 0
    for rep in results:
        name = rep.session.name
        if rep.errors:
            exit_code = EXIT_COULD_NOT_RUN
            lines.append(f"{name}: FAILED in {len(rep.errors)} of {runs} runs")
            lines.extend(f"    {e.splitlines()[0]}" for e in rep.errors)
        if len(rep.normalized) < 2:
            if not rep.errors:
                lines.append(f"{name}: fewer than 2 runs, nothing to compare")
            continue
        volatiles = find_volatile(tapes(rep.normalized))
        suggested = suggest_rules(volatiles)
        # Check the rules the way ci will apply them (validated as config rules, normalizer on top).
        checked = [NormalizeRule(**{k: r[k] for k in ("path", "pattern", "replace", "reason") if k in r})
                   for r in suggested]
        again = Normalizer(checked, paths={})
        left = [v for v in find_volatile(tapes([again.fresh(e) for e in rep.normalized])) if v.kind == "value"]
        left += [v for v in unfixed(volatiles, suggested) if (v.where, v.path) not in {(x.where, x.path) for x in left}]
        known = {(v.where, v.path) for v in volatiles}
        covered = [v for v in find_volatile(tapes(rep.raw)) if v.kind == "value" and (v.where, v.path) not in known]
        values = [v for v in volatiles if v.kind == "value"]
        others = [v for v in volatiles if v.kind != "value"]
        if values or others:
            exit_code = max(exit_code, 1)
            lines.append(f"{name}: {len(values)} volatile value(s), {len(others)} difference(s) no rule can fix")
            lines.extend(f"    {v.line()}" for v in values)
        elif not rep.errors:
            lines.append(f"{name}: stable in {len(rep.normalized)} runs")
        if covered:
            lines.append(f"    already normalized (built-in rules or yours), {len(covered)} place(s):")
            lines.extend(f"      {v.line()}" for v in covered[:10])
        for rule in suggested:
            key = ("path" if rule.get("path") else "pattern", str(rule.get("path") or rule.get("pattern")))
            if key in rules:
                rules[key]["reason"] += f"; also in session {name}"
            else:
                rules[key] = {**rule, "reason": f"{name}: {rule['reason']}"}
        for v in others:
            advice.append(f"  {name} · {v.line()}\n    → {v.advice}")
        for v in left:
            advice.append(f"  {name} · {v.line()}\n    → no normalize rule found that makes it stable; "
                          f"ignore it with drift: {{ignore: [{{path: \"{v.path}\"}}]}} if it is expected to vary")
    if rules:
        lines += ["", "Paste into mcptape.yml (append the items to an existing `normalize:` list):", "", "normalize:"]
        lines += [_yaml_rule(r) for r in rules.values()]
    if advice:
        lines += ["", "Not fixable by a normalize rule:", *advice]
    lines.append("")
    if exit_code == EXIT_COULD_NOT_RUN:
        lines.append("exit 3: a session failed in some runs (see above); fix that first")
    elif exit_code == 1:
        lines.append("exit 1: volatile values found; paste the rules, then `mcptape ci --update-golden`, review, commit")
    else:
        lines.append("exit 0: every session is stable")
    return "\n".join(lines) + "\n", exit_code


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
        results = list(pool.map(lambda s: _repeat_session(ctx, s, runs), sessions))
    text, exit_code = analyse_repeats(results, runs)
    try:
        sys.stdout.write(
            safe_log(emit(make_redactor(loaded), text.encode("utf-8"), "--repeat report").decode("utf-8"))
        )
        sys.stdout.flush()
    except SecretLeak as e:
        print(f"mcptape ci: {e}", file=sys.stderr)
        return EXIT_SECRET
    return exit_code


__all__ = ["EXIT_COULD_NOT_RUN", "run_ci", "run_session", "select_sessions"]
