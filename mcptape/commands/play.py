"""`mcptape play TAPE [--lenient] [--listen HOST:PORT] [--ignore-arg PATH] [--match-on name] [--allow-reuse]
[--json[=FILE]] [--pace recorded|xN] [--fault RULE]... [--fault-seed N] [--keep-placeholders]
[--live-tools NAME,...] [--fallback -- <server command...> | --fallback-url URL]`: serve a tape as an MCP server,
offline unless --fallback or --live-tools.

The agent lab's options (pace, faults, live tools, served values) are replay/lab.py's, wrapped
around the engine here (`lab_options`).

Stdout is the MCP wire (stdio play): everything human goes to stderr, the report at the end.
What to answer is replay/engine.py's, the stdio loop replay/stdio.py's, HTTP replay/http.py's
(imported for --listen only: it is not on the path of a stdio play's cold start), the live side
of --fallback replay/fallback.py's (imported for --fallback only).
Exit codes: 0 every request answered by its recording (or, with --fallback, live), 1 misses or
--lenient substitutions, 3 the tape cannot be replayed (missing, unreadable, invalid) or the live
recording could not be appended, 4 a secret survived redaction in the live recording.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mcptape.commands.grammar import STDOUT, Output, check_outputs
from mcptape.commands.output import say, write_output
from mcptape.errors import EXIT_OK, ConfigError, McptapeError, UsageError
from mcptape.jsonrpc import dumps
from mcptape.logsafe import safe_log, utf8
from mcptape.replay.engine import Fallback, ReplayEngine, load_tape, stream_tape
from mcptape.replay.era_pair import choose, era_tapes
from mcptape.replay.lab import LabEngine, LabOptions, Served
from mcptape.replay.matching import match_on_name_only
from mcptape.replay.outcome import ReplayReport
from mcptape.replay.pacing import parse_pace
from mcptape.replay.stdio import ClientLines, hang_up, serve
from mcptape.tape.seal import require as require_sealed

Say = Callable[[str], None]  # where a human line goes: stderr for the command, a warning for the library


class TapeMemory:
    """Play's garbage-collector policy for the tape, a process concern kept out of the engine.

    The tape and its index live as long as the process and hold no reference cycles, so
    collections while they grow are pure cost (a quarter of the load time on big tapes): inside,
    automatic collection is off; on leaving, what was built is frozen out of every later
    collection (gc.freeze). Entered around a whole load, or by the engine around each batch of a
    streamed tape (ReplayEngine's `reading`).
    """

    def __init__(self) -> None:
        self._enabled = True

    def __enter__(self) -> None:  # not reentrant: a load, or one batch, at a time
        self._enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        gc.freeze()
        if self._enabled:
            gc.enable()


TAPE_MEMORY = TapeMemory()


@dataclass(frozen=True)
class Options:
    tape: str
    lenient: bool
    listen: str | None
    allow_hosts: tuple[str, ...] = ()  # --allow-host: names --listen answers besides the loopback ones
    ignore: tuple[str, ...] = ()
    match_on: str = "params"
    allow_reuse: bool = False
    fallback: bool = False
    server: tuple[str, ...] = ()  # the live server's command, after `--` (with --fallback)
    fallback_url: str | None = None
    json: str | None = None  # --json[=FILE]: the report as JSON too (the pytest plugin reads it); stdout with --listen only
    pace: str | None = None
    faults: tuple[str, ...] = ()
    fault_seed: int | None = None
    live_tools: tuple[str, ...] = ()
    keep_placeholders: bool = False
    allow_edited: bool = False  # play a tape that does not match its seal (tape/seal.py), and say so
    otel: bool = False  # --otel: export the session as a trace at the end (publish/telemetry.py)
    otel_payloads: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        server = list(args.server or [])  # the words after `--` (cli.main splits them off)
        return cls(
            tape=args.tape,
            lenient=bool(args.lenient),
            listen=args.listen,
            allow_hosts=tuple(args.allow_host),
            ignore=tuple(args.ignore_arg or ()),
            match_on=args.match_on,
            allow_reuse=bool(args.allow_reuse),
            fallback=bool(args.fallback),
            server=tuple(server),
            fallback_url=args.fallback_url,
            json=args.json,
            pace=args.pace,
            faults=tuple(args.fault or ()),
            fault_seed=args.fault_seed,
            live_tools=tuple(t.strip() for t in (args.live_tools or "").split(",") if t.strip()),
            keep_placeholders=args.keep_placeholders,
            allow_edited=args.allow_edited,
            otel=args.otel or args.otel_payloads, otel_payloads=args.otel_payloads,
        )

    def engine_options(self, say: Say = say) -> dict[str, Any]:
        """The matching options every engine of this play gets."""
        return {
            "lenient": self.lenient,
            "match_on": match_on_name_only() if self.match_on == "name" else None,
            "ignore": self.ignore,
            "allow_reuse": self.allow_reuse,
            "say": say,
        }


def lab_options(options: Options, say: Say = say) -> LabOptions:
    """The lab options of this play (replay/lab.py), and the live side's options, checked before
    anything is served."""
    if options.server and not options.fallback and not options.live_tools:
        raise ConfigError(
            f"play got a server command ({options.server[0]}) without --fallback; replay never goes live unless asked",
            hint="mcptape play TAPE --fallback -- <server command...> (or --live-tools NAME,... -- <server command...>)",
        )
    if options.fallback and options.fallback_url:
        raise ConfigError("give --fallback -- <server command> or --fallback-url URL, not both")
    refuse_unpaired(options)
    plan = None
    if options.faults:
        from mcptape.replay.faults import FaultPlan, parse_faults  # random: --fault only

        plan = FaultPlan(parse_faults(options.faults), options.fault_seed or 0)
    new_live = None
    if options.live_tools:
        if not options.server and not options.fallback_url:
            raise ConfigError("--live-tools needs the live server: its command after `--` (or --fallback-url URL)",
                              hint="mcptape play TAPE --live-tools search,fetch -- python server.py")
        from mcptape.replay.fallback import LiveFallback

        new_live = lambda: LiveFallback(options.tape, options.server, say, url=options.fallback_url,  # noqa: E731
                                        live_tools=True)
    return LabOptions(pace=parse_pace(options.pace), faults=plan, live_tools=frozenset(options.live_tools),
                      new_live=new_live, serve_placeholders=not options.keep_placeholders)


def run(options: Options) -> int:
    check_outputs([Output("--json", options.json)], reads=[options.tape])
    lab = lab_options(options)
    if options.listen:
        if options.otel or options.otel_payloads:
            raise ConfigError("--otel traces stdio play only; play --listen does not export traces yet")
        return _play_http(options, options.listen, lab)
    if options.allow_hosts:
        raise ConfigError("--allow-host names what play --listen answers; stdio play listens on no port",
                          hint="mcptape play TAPE --listen 127.0.0.1:8765 --allow-host NAME")
    telemetry = None
    if options.otel or options.otel_payloads:
        from mcptape.publish.telemetry import open_telemetry  # the SDK: only a traced play pays for it

        telemetry = open_telemetry(options.otel, options.otel_payloads)
    options, client = _era_of_pair(options)
    live_fallback = options.fallback or (options.fallback_url is not None and not options.live_tools)
    fallback = _new_fallback(options, say)() if live_fallback else None
    stream = stream_tape(options.tape)
    if not stream.verbatim:  # else its digest matched already, computed by the stream
        _require_sealed(options, say)
    if stream.streamable:
        tape = stream.tape
        engine = ReplayEngine(tape, stream=stream, reading=TAPE_MEMORY, fallback=fallback, **options.engine_options())
        held = stream.event_count
    else:  # let the whole-tape checks name what is wrong with it
        with TAPE_MEMORY:
            tape = load_tape(options.tape)
            engine = ReplayEngine(tape, fallback=fallback, **options.engine_options())
        held = len(tape.events)
    served = LabEngine(engine, lab, options.pace)
    _say_unpaced(served, say)
    if not tape.complete:
        print(
            f"mcptape play: warning: {options.tape} was cut short (no footer); replaying the {held} event(s) it holds",
            file=sys.stderr,
        )
    sys.stdout.flush()
    out = sys.stdout.fileno()
    log = None
    if telemetry is not None:
        from mcptape.publish.telemetry import WireLog

        log = WireLog()
    serve(served, sys.stdin.fileno(), out, log, client)
    if served.hung_up:
        print("mcptape play: --fault close: hanging up", file=sys.stderr)
        hang_up(out)
    elif engine.closed:
        print("mcptape play: the recorded server exited here; closing the connection", file=sys.stderr)
        hang_up(out)
    report = served.report()
    print(safe_log(report.render()), file=sys.stderr)  # quotes the client's requests and the tape
    _save_report(options, [report])
    code = report.exit_code
    if telemetry is not None and log is not None:
        _export(options, telemetry, log, tape.protocol, code)
    if fallback is not None:
        code = max(code, fallback.finish())
    live = served.own_live
    if live is not None:
        code = max(code, live.finish())
    return code


def _era_of_pair(options: Options) -> tuple[Options, ClientLines | None]:
    """A `protocol: both` golden pair (replay/era_pair.py): the tape of the era the client's first
    line opens, and the client's reader holding that line; the options as given otherwise."""
    tapes = era_tapes(options.tape)
    if tapes is None:
        return options, None
    client = ClientLines(sys.stdin.fileno())
    first = client.readline()
    client.push_back(first)
    tape, why = choose(tapes, first)
    say(f"mcptape play: {options.tape}: a `protocol: both` pair; {why}: serving {tape}")
    return replace(options, tape=str(tape)), client


def _say_unpaced(served: LabEngine, say: Say) -> None:
    if served.pacer is not None and not served.pacer.timed:
        say(f"mcptape play: --pace: {served.tape.path or served.tape.name} carries no timing "
            "(a golden, or recorded before timing); answering at once")


def _export(options: Options, telemetry: Any, log: Any, protocol: str | None, code: int) -> None:
    """--otel: the session as play served it. The client's lines are scrubbed as the tape was
    recorded (the built-in detectors) and, with payloads, verified before anything is sent."""
    from mcptape.publish.outlet import Outlet
    from mcptape.publish.telemetry import SessionMeta

    outlet = Outlet.for_config(None)
    events = [(at, outlet.redactor.redact_event(ev)) for at, ev in log.events]
    name = str(Path(options.tape).name).removesuffix(".tape.jsonl")
    try:
        telemetry.export(SessionMeta("play", name, protocol=protocol, attributes={"mcptape.exit_code": code}),
                         events, outlet)
    except McptapeError as e:  # a payload that leaked: nothing was sent
        say(f"mcptape play: --otel: {e}")
    finally:
        telemetry.close()


def _play_http(options: Options, listen: str, lab: LabOptions) -> int:
    """Serve the tape over streamable HTTP until SIGINT/SIGTERM, then report like stdio play."""
    from mcptape.replay.http import serve_http  # http.server, the HTTP transport's framing: --listen only

    first = served_engine(options, lab, say)
    tape = first.tape

    def ready(url: str) -> None:  # listening: what a person needs to know before the first client
        if not tape.complete:
            say(f"mcptape play: warning: {options.tape} was cut short (no footer); "
                f"replaying the {len(tape.events)} event(s) it holds")
        say(f"mcptape play: serving {options.tape} on {url} (stop with Ctrl-C)")

    engines = serve_http(first, listen, on_ready=ready, allow_hosts=options.allow_hosts, say=say)
    if not engines:
        say("mcptape play: no client connected")
        _save_report(options, [first.report()])
        return EXIT_OK
    reports, code = finish_sessions(engines)
    for report in reports:
        say(report.render())
    _save_report(options, reports)
    return code


def served_engine(options: Options, lab: LabOptions, say: Say,
                  memory: AbstractContextManager[Any] = TAPE_MEMORY, tell: Say | None = None) -> LabEngine:
    """The engine of the first client session of HTTP play (and of the library's replays): the
    whole tape read and checked against its seal, a live side made per session for --fallback,
    the lab's options applied. Raises before anything is served for a tape that cannot be replayed;
    each later session gets its own engine (LabEngine.fresh), sharing this one's index of the tape.
    `memory` is the garbage-collector policy while the tape is read (TapeMemory: a process's);
    `tell` is where each miss is said as it happens (`say` unless given)."""
    pair = era_tapes(options.tape)
    if pair is not None and not Path(options.tape).exists():
        raise ConfigError(f"{options.tape} is a `protocol: both` pair; play --listen serves one tape",
                          hint=f"give one of {pair['modern']} and {pair['legacy']} (stdio play picks by the client)")
    with memory:
        tape = load_tape(options.tape)
    _require_sealed(options, say)
    go_live = options.fallback or (options.fallback_url is not None and not options.live_tools)
    live = _new_fallback(options, tell or say) if go_live else None
    with memory:
        first = LabEngine(ReplayEngine(tape, new_fallback=live, **options.engine_options(tell or say)), lab,
                          options.pace)
    _say_unpaced(first, say)
    return first


def finish_sessions(engines: Sequence[Served]) -> tuple[list[ReplayReport], int]:
    """Each client session's report, and the exit code of them all: the live sides of --fallback
    and --live-tools stopped, what they recorded appended to the tape, one session after another."""
    code = EXIT_OK
    reports = [engine.report() for engine in engines]
    # One engine per client session, each with its own idea of what it used: a recorded call went
    # unused only if no session asked it, said once (on the first report) rather than per session.
    asked_by_none = set.intersection(*(set(report.unused) for report in reports))
    for k, report in enumerate(reports):
        report.unused = [u for u in report.unused if u in asked_by_none] if k == 0 else []
    if any(report.handshake_answered for report in reports):
        # A refused probe and the handshake that followed it are separate HTTP sessions (engines):
        # a session followed the refusal, so it was negotiation (ReplayReport.only_refused).
        for report in reports:
            report.handshake_answered = True
    for report in reports:
        code = max(code, report.exit_code)
    for engine in engines:  # one after another: each appends to the tape the last one wrote
        if engine.fallback is not None:
            code = max(code, engine.fallback.finish())
        own = engine.own_live if isinstance(engine, LabEngine) else None
        if own is not None:
            code = max(code, own.finish())
    return reports, code


def _require_sealed(options: Options, say: Say) -> None:
    """Refuse a tape that does not match its seal (a TapeError, exit 3), unless --allow-edited: said."""
    note = require_sealed(options.tape, allow_edited=options.allow_edited)
    if note is not None:
        say(f"mcptape play: {note}")


def _new_fallback(options: Options, say: Say) -> Callable[[], Fallback]:
    """What makes the live side of --fallback / --fallback-url (one per client session)."""
    from mcptape.replay.fallback import LiveFallback  # subprocess, tempfile: --fallback only

    return lambda: LiveFallback(options.tape, options.server, say, url=options.fallback_url)


def refuse_unpaired(options: Options) -> None:
    """An option that means something only with another one is refused, with the reason (never
    accepted and then ignored)."""
    if options.fallback and not options.server:
        raise UsageError("--fallback forwards to the live server given after `--`, and none is given",
                         hint="mcptape play TAPE --fallback -- <server command...> (or --fallback-url URL)")
    if options.fault_seed is not None and not options.faults:
        raise UsageError(f"--fault-seed {options.fault_seed} seeds the p= draws of --fault rules, and none is given",
                         hint="add --fault RULE (e.g. --fault tool=add,p=0.5,error=-32000), or drop --fault-seed")
    if options.json == STDOUT and not options.listen:
        raise UsageError("--json alone writes the report to stdout, and stdio play's stdout is the MCP wire",
                         hint="give it a file: --json=report.json")


def _save_report(options: Options, reports: list[ReplayReport]) -> None:
    """--json[=FILE]: each client session's report (one per HTTP session), as JSON, written atomically
    (or on stdout, for play --listen, whose stdout is not the wire)."""
    if options.json is None:
        return
    # The report quotes the client's requests: they were scrubbed of redacted values (replay/nearmiss.py).
    data = dumps({"sessions": [r.to_dict() for r in reports]}) + "\n"
    write_output(options.json, utf8(data), what="replay report")
