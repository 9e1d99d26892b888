"""One ci session: record it, redact, normalize, and compare with its golden tape or write the golden.

Owns the per-session pipeline (record -> redact -> normalize -> compare or write the golden),
golden files and orphans. Recording a session and scrubbing it (`record`, `scrub`) are the same
for every job that runs one: `--repeat` and `--baseline`/`--against` take them from here
(ci/repeat.py's live_run). It leaves the protocol to live/client.py, volatile values to volatility/normalize.py,
secrets to redact/, the verdict of one pair of tapes to diff/; which sessions run is
selection.py's and running them (threads, reports, exit code) commands/ci.py's.

Conformance: every fresh recording, redacted but not normalized, is checked against the MCP
schema (conformance/gate.py: diff_checked; `drift.conformance` sets the severity). Without a
golden the findings join the "no golden" drift; with --update-golden they are notes on the
session and do not stop the golden being written (accepting it is a person's call), since every
later gate run checks again.

Sessions run in worker threads (run_in_pool), so everything the session pipeline imports is
imported here, at module level, in the main thread, before any worker starts (see the imports
below), but for two: the conformance check, which the main thread imports while the sessions'
servers start (conformance/gate.py), and the HTTP transports, which it imports before the workers
start where a session's server is a `url:` one (run_in_pool). A first import racing in two threads
can hand one of them a partially initialized module. Files are verified and written through the
outlet (publish/outlet.py; its OSErrors are WriteErrors, exit 3); a golden or fresh tape that cannot
be written fails its session, one a secret survived in is not written.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import InitVar, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

# Every module of the session pipeline imports what it uses at module level, so importing this
# module (the main thread does, for `mcptape ci`, before any worker starts) imports all of it and
# no worker thread ever does a first import. Two threads importing one module at once deadlocked
# in the import system, which then gave one of them a partially initialized module (ImportError);
# tests/integration/test_ci_concurrency.py fails if a worker thread does a first import.
# The one exception is the conformance check (conformance/gate.py, loaded by run_in_pool).
import mcptape.environment as environment
from mcptape.ci.eras import config_index, era_of, era_refusal, session_names
from mcptape.config.load import LoadedConfig
from mcptape.config.models import Config, DriftSettings, HttpServer, NormalizeRule, Session, StdioServer
from mcptape.conformance import gate as conformance
from mcptape.diff.compare import diff_tapes
from mcptape.diff.surface_cost import add_budget_drift, surface_facts
from mcptape.errors import (
    ConfigError,
    McptapeError,
    SecretLeak,
    TapeError,
    WriteError,
)
from mcptape.live.client import Recording, SchemaBreak, record_session
from mcptape.live.launch import load_transports, open_transport
from mcptape.live.refusal import refused_everything
from mcptape.live.sandbox import Sandbox
from mcptape.publish.outlet import Outlet, Release, config_redactor
from mcptape.publish.telemetry import SessionMeta, Telemetry, TimedTransport, WireClock
from mcptape.redact import rules
from mcptape.redact.redactor import Redactor
from mcptape.tape.events import recording_notes
from mcptape.tape.format import TAPE_SUFFIX, Tape, make_footer, make_header, tape_bytes
from mcptape.tape.reader import read_tape
from mcptape.tape.seal import require as require_sealed
from mcptape.tape.timing import sidecar_bytes, sidecar_path, timing_footer
from mcptape.tape.view import render_view, view_path
from mcptape.verdict.model import DiffResult, Drift, Finding, SessionResult
from mcptape.volatility.normalize import Normalizer, canonical_order, session_paths

UPDATE_HINT = "mcptape ci --update-golden"


# -- one session ----------------------------------------------------------------------------------


@dataclass
class SessionOutcome:
    result: SessionResult
    fresh_bytes: bytes | None = None  # the verified fresh tape, if one could be built
    fresh_timing: dict[str, Any] | None = None  # its footer's timing (tape/timing.py), for the HTML report
    golden_change: str | None = None  # update mode: created | updated | unchanged


@dataclass
class RunContext:
    loaded: LoadedConfig
    update: bool
    out_dir: Path | None
    golden_dir: Path
    messages: list[str] = field(default_factory=list)
    allow_edited: bool = False  # --allow-edited: goldens that do not match their seal are read anyway
    telemetry: Telemetry | None = None  # --otel: each session's trace is exported (publish/telemetry.py)
    # The run's Redactor, compiled once: the config's, or `run_redactor` (the head's, for the other
    # side of a comparison: ci/baseline.py). Each session and output scrubs with a fork of it
    # (Redactor.fork: its own counts, nothing compiled again).
    run_redactor: InitVar[Redactor | None] = None
    redactor: Redactor = field(init=False)

    def __post_init__(self, run_redactor: Redactor | None) -> None:
        self.redactor = run_redactor if run_redactor is not None else config_redactor(self.loaded)


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
            result = (event.get("msg") or {}).get("result")
            tools_listed = result.get("tools") if isinstance(result, dict) else None  # a server may answer `"x"`
            for tool in tools_listed if isinstance(tools_listed, list) else []:
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    tools[tool["name"]] = tool
    return tools


def session_normalizer(ctx: RunContext, session: Session, rules: Sequence[NormalizeRule] | None = None) -> Normalizer:
    """The session's Normalizer: the config's rules (or `rules`: strength/ judges with some of
    them left out) and the session's paths."""
    loaded = ctx.loaded
    extra = [loaded.resolve(d) for d in session.sandbox]
    server = loaded.config.servers[session.server]
    if server.cwd:
        extra.append(loaded.resolve(server.cwd))
    paths = session_paths(config_dir=loaded.base_dir, extra=extra)
    return Normalizer(loaded.config.normalize if rules is None else rules, paths=paths)


# -- side effects: the session's sandbox directories (live/sandbox.py) ----------------------------------


def open_sandbox(ctx: RunContext, session: Session) -> Sandbox | None:
    """Snapshot the session's `sandbox:` directories before its server starts (None if it declares none)."""
    if not session.sandbox:
        return None
    roots = [ctx.loaded.resolve(d) for d in session.sandbox]
    # File names pass the session's normalizer: a timestamp in a name must not be drift.
    sandbox = Sandbox(roots, label=session_normalizer(ctx, session).text)
    try:
        sandbox.start()
    except OSError as e:
        sandbox.restore()
        raise ConfigError(
            f"session {session.name}: cannot snapshot its sandbox {e.filename or ''}: {e.strerror or e}",
            hint="`sandbox:` names scratch directories the server may write to; check they are readable",
        ) from e
    return sandbox


def last_side_effects(sandbox: Sandbox | None, recording: Recording) -> None:
    """Changes after the last step (during shutdown) or in the step that failed: recorded, not lost."""
    if sandbox is None:
        return
    step = recording.failed_step if recording.error is not None else None
    recording.events.extend(sandbox.step(step))


def _merge_schema_breaks(diff: DiffResult, schema_breaks: Sequence[SchemaBreak]) -> DiffResult:
    """Add the client's schema findings (golden accepted the arguments, live does not) in step order."""
    for brk in schema_breaks:
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
    finding = Finding.of("session", "no_golden", "",
                         f"no golden tape {rel}: record it with `{UPDATE_HINT} --session {session.name}`, review and commit it")
    return DiffResult(verdict="structural", drifts=[Drift(call=None, findings=[finding])], b=session.name)


class _Failed(Exception):
    """A session-level failure: run_session turns it into the session's verdict and error line."""

    def __init__(self, message: str, verdict: str = "error", note: str | None = None) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.note = note


class CannotRecord(Exception):
    """The session could not be recorded at all: its sandbox or its server did not start (the message says which)."""


@dataclass
class Scrubbed:
    """A session's recording as every job has it (ci, --repeat, --baseline/--against, init's trial):
    redacted, then normalized in canonical order (scrub)."""

    recording: Recording
    redacted: list[dict[str, Any]]  # redacted, in recorded order
    events: list[dict[str, Any]]  # redacted and normalized, in canonical order: what is compared and written
    positions: list[int]  # where each of `events` was recorded: its time moves with it
    normalizer: Normalizer

    @cached_property
    def as_sent(self) -> list[dict[str, Any]]:
        """Redacted, not normalized (a normalize rule may rewrite what the server sent, even a
        schema), in canonical order: what the conformance check reads. Ordered once per session.
        Only the floating block (volatility/normalize.py) can order differently from `events`, where
        normalized values sort differently."""
        return canonical_order(self.redacted)

    def footer_timing(self) -> dict[str, Any] | None:
        """The footer timing of the fresh tape (`events`' order), None if the times are incomplete."""
        times = self.recording.times
        return timing_footer([times[p] for p in self.positions]) if len(times) == len(self.redacted) else None


@dataclass(kw_only=True)
class _Fresh(Scrubbed):
    """A session's fresh recording as ci's pipeline has it: scrubbed, serialized and verified."""

    header: dict[str, Any]
    data: bytes  # the verified tape: golden-ready, so without timing (tape/timing.py)
    timing: dict[str, Any] | None = None  # the footer's timing, for the fresh tape --out-dir keeps
    _checked: list[tuple[int, Finding]] | None = field(default=None, repr=False)

    @cached_property
    def sent(self) -> Tape:
        """`as_sent` as a tape, in the fresh tape's order: the one the conformance check reads."""
        return fresh_tape(self.header, self.as_sent)

    @cached_property
    def view(self) -> bytes:
        """The review view of the tape (tape/view.py), made once: the fresh tape's and the golden's are one."""
        return render_view(self.header, self.events)

    def checked(self, drift: DriftSettings) -> list[tuple[int, Finding]]:
        """The conformance check of `sent`, made once per session however many verdicts read it
        (under --update-golden: the comparison with the old golden, and the notes)."""
        if self._checked is None:
            self._checked = conformance.check(self.sent, drift)
        return self._checked


def run_session(ctx: RunContext, session: Session) -> SessionOutcome:
    """Record one session and judge it; never raises for a session-level failure."""
    started = time.monotonic()
    result = SessionResult(name=session.name, verdict="error", golden=_rel(ctx, golden_path(ctx, session)))
    redactor = ctx.redactor.fork()  # this session's: its counts are the session's
    learned: dict[str, str] = {}  # secrets the session learns as it runs (an OAuth token, launch.py)

    def failed(verdict: str, message: str, note: str | None = None) -> SessionOutcome:
        """The outcome of a session that could not be judged: `message` scrubbed, with what it learned too."""
        result.verdict = verdict  # type: ignore[assignment]
        result.error = (redactor.with_known(learned) if learned else redactor).redact_text(message)
        result.duration_s = round(time.monotonic() - started, 3)
        if note is not None:
            result.notes.append(note)
        return SessionOutcome(result)

    try:
        return _run(ctx, session, result, Outlet(redactor), learned)
    except _Failed as e:
        return failed(e.verdict, str(e), e.note)
    except SecretLeak as e:
        # A secret a check found, at whatever stage (the fresh tape, a view, the golden, a trace's
        # payload): the session's verdict is `secret` (exit 4) and nothing of it was written, its
        # files leaving as one release once all are verified (_run). Never an internal error,
        # with MCPTAPE_DEBUG or without.
        result.diff, result.fresh = None, None
        return failed("secret", str(e), f"nothing of session {session.name} was written: a secret survived redaction")
    except Exception as e:  # noqa: BLE001 - a session is the gate's unit (below)
        # A bug met by one session's data (a server answering what no check foresaw) must not take
        # the verdicts of the other sessions with it: this session could not run (exit 3), said
        # as an internal error so it is reported and found (tests/fuzz looks for exactly that).
        if environment.flag("MCPTAPE_DEBUG"):
            raise  # the traceback, as cli.py prints it
        return failed("error", f"internal error while running session {session.name}: {type(e).__name__}: {e} "
                               "(a bug in mcptape: please report it; MCPTAPE_DEBUG=1 shows the traceback)")


def _run(ctx: RunContext, session: Session, result: SessionResult, outlet: Outlet,
         learned: dict[str, str]) -> SessionOutcome:
    """Record, scrub and judge the session; then its files leave as one release, once every one of
    them (and with --otel its trace's payloads) is verified: a secret found at any stage leaves
    none of them written (SecretLeak, run_session)."""
    golden = _read_golden(ctx, session, result)
    clock = WireClock() if ctx.telemetry is not None else None
    recording = _record(ctx, session, golden, clock, learned)
    if learned:  # known before the tape, the report or a message is written
        outlet = Outlet(outlet.redactor.with_known(learned))
    fresh = _fresh(ctx, session, recording, outlet, result)
    release = outlet.release()
    try:
        outcome = _judge(ctx, session, result, release, golden, fresh)
    finally:
        if ctx.telemetry is not None and clock is not None:
            # SecretLeak (and nothing sent) if a payload asked for (--otel-payloads) held a secret.
            export_trace(ctx.telemetry, ctx, session, result, fresh.recording.protocol, fresh.redacted, clock, outlet)
    try:
        release.write()
    except WriteError as e:
        untouched = outcome.golden_change in ("created", "updated") and golden_path(ctx, session) not in release.written
        note = f"golden tape {result.golden} left untouched: it could not be written" if untouched else None
        raise _Failed(str(e), note=note) from e
    return outcome


def export_trace(telemetry: Telemetry, ctx: RunContext, session: Session, result: SessionResult, protocol: str | None,
                 redacted: list[dict[str, Any]], clock: WireClock, outlet: Outlet) -> None:
    """--otel: the session's trace, from its redacted events and the times the client saw them
    (every mode that records a session: golden here, the head side of ci/baseline.py)."""
    server = ctx.loaded.config.servers[session.server]
    meta = SessionMeta("ci", session.name, transport="http" if isinstance(server, HttpServer) else "stdio",
                       protocol=protocol,
                       attributes={"mcptape.verdict": str(result.verdict), "mcptape.server": session.server})
    telemetry.export(meta, clock.timed(redacted), outlet)


def _judge(ctx: RunContext, session: Session, result: SessionResult, release: Release, golden: Tape | None,
           fresh: _Fresh) -> SessionOutcome:
    """The session's verdict; the files it writes are added to `release` (verified, not yet written)."""
    outlet = release.outlet
    result.redactions = dict(outlet.redactor.counts)
    if ctx.out_dir is not None:
        result.fresh = str(keep_fresh(ctx, session, release, fresh.data, fresh.timing, fresh.view))
    outcome = SessionOutcome(result, fresh_bytes=fresh.data, fresh_timing=fresh.timing)
    recording = fresh.recording
    refusal = refused_everything(recording.events)
    if refusal is not None:  # a golden tape of refusals gates nothing: say so, with the fix
        result.notes.append(f"{refusal[0]}; {refusal[1]}")
    result.duration_s = round(recording.duration_s, 3)
    refused = era_refusal(session, fresh.redacted, recording.protocol, recording.error)
    if refused is not None:  # `protocol: both` and a server that does not speak this era (ci/eras.py)
        result.verdict, result.diff = "structural", refused
        if ctx.update:
            result.notes.append(f"golden tape {result.golden} not written: the server does not speak this era")
        return outcome
    if recording.error is not None:
        result.verdict = "error"
        result.error = outlet.redactor.redact_text(recording_error(ctx, session, recording))
        if ctx.update:
            result.notes.append(f"golden tape {result.golden} left untouched: the session did not complete")
        return outcome
    result.surface_facts = surface_facts(fresh_tape(fresh.header, fresh.events), golden, session.server)
    if ctx.update:
        outcome.golden_change = _update_golden(ctx, session, result, golden, fresh, release)
        return outcome
    cfg = ctx.loaded.config
    if golden is None:
        result.verdict = "structural"
        result.diff = _no_golden(ctx, session)
        result.diff.drifts.extend(_conformance(fresh, cfg))
        add_budget_drift(result.diff, result.surface_facts, cfg.drift)
        result.notes.append(f"no golden tape yet: run `{UPDATE_HINT} --session {session.name}`")
        return outcome
    diff = _compare(golden, fresh, cfg)
    add_budget_drift(diff, result.surface_facts, cfg.drift)  # drift.budget: the surface's context cost
    diff.a = result.golden
    diff.b = result.fresh or "(live run; --out-dir DIR keeps it)"
    result.diff = diff
    result.verdict = diff.verdict
    return outcome


def keep_fresh(ctx: RunContext, session: Session, release: Release, data: bytes, timing: dict[str, Any] | None,
               view: bytes) -> Path:
    """--out-dir: a session's fresh tape kept in ctx.out_dir (every mode that records one), with
    its timing and its review view beside it, added to `release` (each verified now, all written
    together or none: Release.write; SecretLeak here). The fresh tape is golden-ready bytes
    (accepting a change copies it into golden_dir as it is); its timing goes beside it
    (tape/timing.py)."""
    assert ctx.out_dir is not None
    fresh_path = ctx.out_dir / f"{session.name}{TAPE_SUFFIX}"
    release.add(fresh_path, data, what=f"fresh tape of session {session.name}")
    if timing is not None:
        release.add(sidecar_path(fresh_path), sidecar_bytes(timing), what=f"timing of the fresh tape of session {session.name}")
    release.add(view_path(fresh_path), view, what=f"review view of the fresh tape of session {session.name}", form="view")
    return fresh_path


def _read_golden(ctx: RunContext, session: Session, result: SessionResult) -> Tape | None:
    """The session's golden tape, None if there is none; one that cannot be read or does not match
    its seal (tape/seal.py) fails the session, except in update mode, which replaces it."""
    gpath = golden_path(ctx, session)
    if not gpath.exists():
        return None
    try:
        if not ctx.update:
            note = require_sealed(gpath, allow_edited=ctx.allow_edited)
            if note is not None:
                result.notes.append(note)
        return read_tape(gpath)
    except TapeError as e:
        if not ctx.update:
            raise _Failed(str(e)) from e
        return None


_STARTED: dict[str, threading.Lock] = {}  # url -> held while a session runs a server `start:` serves there
_STARTED_GUARD = threading.Lock()


def started_server_lock(server: StdioServer | HttpServer) -> threading.Lock | None:
    """The lock of an HTTP server ci starts itself (`start:`): it listens on the one port its `url`
    names, so two sessions of it (the two eras of `protocol: both`, ci/eras.py, or any two) run one
    after the other, never into "port already in use". None for any other server."""
    if not isinstance(server, HttpServer) or not server.start:
        return None
    with _STARTED_GUARD:
        return _STARTED.setdefault(server.url, threading.Lock())


def _record(ctx: RunContext, session: Session, golden: Tape | None, clock: WireClock | None = None,
            learned: dict[str, str] | None = None) -> Recording:
    """ci's recording of the session (record), the arguments checked against the golden's schemas."""
    try:
        return record(ctx, session, golden_tools=None if (ctx.update or golden is None) else golden_tools(golden),
                      clock=clock, learned=learned)
    except CannotRecord as e:
        raise _Failed(str(e)) from e


def record(ctx: RunContext, session: Session, server: StdioServer | HttpServer | None = None, *,
           golden_tools: dict[str, Any] | None = None, clock: WireClock | None = None,
           learned: dict[str, str] | None = None) -> Recording:
    """Start the session's server (or `server`: the other side of a comparison, ci/baseline.py) in
    the session's sandbox and run its steps against it: the one recording of a session, for every
    job that runs one. `golden_tools`: the schemas the golden accepted (live/client.py checks the
    arguments against them); `clock` is told when each line crossed the wire (--otel); `learned`
    gets the secrets learned meanwhile (an `auth:` server's tokens).
    CannotRecord if the sandbox or the server does not start; a step that fails is the recording's
    `error`. ctx.loaded.base_dir is where the server's paths resolve."""
    server = server if server is not None else ctx.loaded.config.servers[session.server]
    lock = started_server_lock(server)  # one port: one run of it at a time
    if lock is None:
        return _record_alone(ctx, session, server, golden_tools, clock, learned)
    with lock:
        return _record_alone(ctx, session, server, golden_tools, clock, learned)


def _record_alone(ctx: RunContext, session: Session, server: StdioServer | HttpServer,
                  golden_tools: dict[str, Any] | None, clock: WireClock | None,
                  learned: dict[str, str] | None = None) -> Recording:
    loaded = ctx.loaded
    try:
        sandbox = open_sandbox(ctx, session)
    except McptapeError as e:
        raise CannotRecord(str(e)) from e
    try:
        try:
            transport = open_transport(server, base_dir=loaded.base_dir, env=server.env, learned=learned)
        except McptapeError as e:
            raise CannotRecord(f"session {session.name}: server `{session.server}` failed to start: {e}") from e
        if clock is not None:
            transport = TimedTransport(transport, clock)
        recording = record_session(
            transport,
            session.steps,
            loaded.config.client_for(session),
            session=session.name,
            protocol=era_of(session) or server.protocol,  # an era of `protocol: both` pins it (ci/eras.py)
            step_timeout=session.step_timeout,
            session_timeout=session.timeout,
            golden_tools=golden_tools,
            after_step=sandbox.step if sandbox is not None else None,
        )
        last_side_effects(sandbox, recording)
    finally:
        if sandbox is not None:
            sandbox.restore()
    return recording


def recording_error(ctx: RunContext, session: Session, recording: Recording) -> str:
    """What a recording that failed says (not redacted): a step the config got wrong with its file:line."""
    message = str(recording.error)
    if isinstance(recording.error, ConfigError) and recording.failed_step is not None:
        index = config_index(ctx.loaded.config, session)
        message = f"{ctx.loaded.path}:{ctx.loaded.step_line(index, recording.failed_step - 1)}: {message}"
    return message


def scrub(ctx: RunContext, session: Session, recording: Recording, redactor: Redactor) -> Scrubbed:
    """A recording redacted, then normalized with the session's rules, in canonical order."""
    normalizer = session_normalizer(ctx, session)
    # Redaction first: a rotated token must not be drift, and nothing unredacted is normalized into a golden.
    redacted = [redactor.redact_event(e) for e in recording.events]
    positions: list[int] = []
    events = canonical_order(normalizer.events(redacted), positions)  # normalizer.fresh, keeping positions
    return Scrubbed(recording, redacted, events, positions, normalizer)


def _fresh(ctx: RunContext, session: Session, recording: Recording, outlet: Outlet, result: SessionResult) -> _Fresh:
    """Scrub and serialize the recording; a tape a secret survived in fails the session."""
    scrubbed = scrub(ctx, session, recording, outlet.redactor)
    redacted, events, positions = scrubbed.redacted, scrubbed.events, scrubbed.positions
    timing = scrubbed.footer_timing()
    result.notes.extend(recording_notes(events))  # a limit that triggered is reported, never silent
    header = fresh_header(ctx, session, recording)
    data = outlet.verified(tape_bytes(header, events), f"fresh tape of session {session.name}")  # or SecretLeak
    return _Fresh(recording=recording, redacted=redacted, events=events, positions=positions,
                  normalizer=scrubbed.normalizer, header=header, data=data, timing=timing)


def fresh_header(ctx: RunContext, session: Session, recording: Recording) -> dict[str, Any]:
    """The header of a session's fresh tape (golden-ready: no time, no path)."""
    server = ctx.loaded.config.servers[session.server]
    return make_header(session.name, transport="http" if isinstance(server, HttpServer) else "stdio",
                       server=session.server, protocol=recording.protocol, negotiation=recording.negotiation)


def _add_view(release: Release, tape: Path, fresh: _Fresh, what: str) -> None:
    """The review view beside a tape (tape/view.py: the tape diff, readable), to the release."""
    release.add(view_path(tape), fresh.view, what=what, form="view")


def _update_golden(ctx: RunContext, session: Session, result: SessionResult, golden: Tape | None, fresh: _Fresh,
                   release: Release) -> str:
    """--update-golden: the fresh tape as the golden one, to the release; created, updated or unchanged."""
    gpath = golden_path(ctx, session)
    try:
        old = gpath.read_bytes() if gpath.exists() else None
    except OSError as e:  # e.g. a directory where the golden tape should be
        raise _Failed(f"{gpath}: cannot read the golden tape to replace it: {e.strerror or e}") from e
    what = f"review view of the golden tape of session {session.name}"
    if old == fresh.data:
        change = "unchanged"
        result.verdict = "same"
        if not view_path(gpath).exists():  # a golden from before views existed gets its view now
            _add_view(release, gpath, fresh, what)
    else:
        release.add(gpath, fresh.data, what=f"golden tape of session {session.name}")
        _add_view(release, gpath, fresh, what)
        change = "created" if old is None else "updated"
        result.verdict = "updated"
        if golden is not None:
            result.diff = _compare(golden, fresh, ctx.loaded.config)
    # Accepting a golden is a person's call, so a nonconformant server does not fail it; but
    # they are told, and the gate checks every fresh run's conformance anyway.
    drifts = _conformance(fresh, ctx.loaded.config)
    if drifts:
        result.notes.append(
            f"conformance: the server broke the MCP schema in {len(drifts)} message(s) of this recording; "
            "the golden tape was written anyway; checks against it report these as known and fail only "
            "on new violations (`drift: {conformance: info}` never fails on them)")
        result.notes.extend(f"conformance: {d.one_line()}" for d in drifts[:5])
        if len(drifts) > 5:
            result.notes.append(f"conformance: … and {len(drifts) - 5} more message(s)")
    return change


def _compare(golden: Tape, fresh: _Fresh, cfg: Config) -> DiffResult:
    return compare(normalized_golden(golden, fresh.normalizer), fresh_tape(fresh.header, fresh.events), cfg.drift,
                   as_sent=fresh.sent, checked=fresh.checked(cfg.drift), schema_breaks=fresh.recording.schema_breaks)


def normalized_golden(golden: Tape, normalizer: Normalizer) -> Tape:
    """The golden normalized again with today's rules (values only: its order is already
    canonical, and keeping it keeps its line numbers right for annotations)."""
    return Tape(header=golden.header, events=normalizer.events(golden.events), footer=golden.footer,
                path=golden.path, event_lines=list(golden.event_lines))


def compare(golden_n: Tape, fresh: Tape, drift: DriftSettings, *, as_sent: Tape,
            checked: list[tuple[int, Finding]] | None = None, schema_breaks: Sequence[SchemaBreak] = (),
            conformance_check: bool = True) -> DiffResult:
    """ci's verdict on a session: its fresh tape (scrubbed: redacted, normalized, canonical order)
    against its golden (normalized_golden), the conformance gate on `as_sent` (the fresh events
    before normalization; `checked`: its check, if made already) and the client's schema breaks.

    `conformance_check=False` leaves the conformance gate out: it only ever adds drifts, so a
    verdict that fails without it fails with it (strength/ asks that first, since the check costs
    a schema validation of every message, and asks again with it only of what passed)."""
    if conformance_check:
        diff = conformance.diff_checked(golden_n, fresh, drift, as_sent=as_sent, checked=checked)
    else:
        diff = diff_tapes(golden_n, fresh, drift)
    return _merge_schema_breaks(diff, schema_breaks)


def fresh_tape(header: dict[str, Any], events: list[dict[str, Any]]) -> Tape:
    return Tape(header=header, events=events, footer=make_footer(len(events)), path=None,
                event_lines=[i + 2 for i in range(len(events))])


def _conformance(fresh: _Fresh, cfg: Config) -> list[Drift]:
    """Failing conformance findings (conformance/gate.py, drift settings applied) of a fresh
    recording that is not compared with a golden one: no golden yet, or --update-golden."""
    drifts = conformance.conformance_drifts(fresh.sent, cfg.drift, checked=fresh.checked(cfg.drift))
    return [d for _, d in drifts if d.severity != "info"]


Item = TypeVar("Item")
Outcome = TypeVar("Outcome")


def run_in_pool(jobs: int, work: Callable[[Item], Outcome], items: Sequence[Item], name: str, *,
                servers: Iterable[StdioServer | HttpServer]) -> list[Outcome]:
    """`work` over `items` on `jobs` worker threads, results in order. Before they start, the main
    thread imports the HTTP transports if one of `servers` (those the workers open) needs them; while
    the workers start their servers, the conformance check they need once they have recorded."""
    load_transports(servers)
    conformance.will_load()
    rules.preload()  # the secret rule set: workers redact their first message at once (~0.1 s)
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix=name) as pool:
        futures = [pool.submit(work, item) for item in items]
        conformance.load()
        return [future.result() for future in futures]


def orphan_goldens(ctx: RunContext) -> list[str]:
    """Golden tapes in golden_dir that no session of the config (selected or not) owns."""
    if not ctx.golden_dir.is_dir():
        return []
    names = set(session_names(ctx.loaded.config))
    return sorted(
        _rel(ctx, p)
        for p in ctx.golden_dir.glob(f"*{TAPE_SUFFIX}")
        if p.name[: -len(TAPE_SUFFIX)] not in names
    )


