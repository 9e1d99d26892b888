"""`mcptape play TAPE [--lenient] [--listen HOST:PORT] [--ignore-arg PATH] [--match-on name] [--allow-reuse]
[--report FILE] [--fallback -- <server command...> | --fallback-url URL]`: serve a tape as an MCP server, offline unless --fallback.

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcptape.commands.terminal import say
from mcptape.errors import EXIT_OK, ConfigError
from mcptape.jsonrpc import dumps
from mcptape.logsafe import safe_log, utf8
from mcptape.replay.engine import Fallback, ReplayEngine, ReplayReport, load_tape, stream_tape
from mcptape.replay.matching import match_on_name_only
from mcptape.replay.stdio import hang_up, serve


@dataclass(frozen=True)
class Options:
    tape: str
    lenient: bool
    listen: str | None
    ignore: tuple[str, ...] = ()
    match_on: str = "params"
    allow_reuse: bool = False
    fallback: bool = False
    server: tuple[str, ...] = ()  # the live server's command, after `--` (with --fallback)
    fallback_url: str | None = None
    report: str | None = None  # --report FILE: the report as JSON too (the pytest plugin reads it)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        server = list(args.server or [])  # the words after `--` (cli.main splits them off)
        return cls(
            tape=args.tape,
            lenient=bool(args.lenient),
            listen=args.listen,
            ignore=tuple(args.ignore_arg or ()),
            match_on=args.match_on,
            allow_reuse=bool(args.allow_reuse),
            fallback=bool(args.fallback),
            server=tuple(server),
            fallback_url=args.fallback_url,
            report=args.report,
        )

    def engine_options(self) -> dict[str, Any]:
        """The matching options every engine of this play gets."""
        return {
            "lenient": self.lenient,
            "match_on": match_on_name_only() if self.match_on == "name" else None,
            "ignore": self.ignore,
            "allow_reuse": self.allow_reuse,
            "say": say,
        }


def run(options: Options) -> int:
    if options.server and not options.fallback:
        raise ConfigError(
            f"play got a server command ({options.server[0]}) without --fallback; replay never goes live unless asked",
            hint="mcptape play TAPE --fallback -- <server command...>",
        )
    if options.fallback and options.fallback_url:
        raise ConfigError("give --fallback -- <server command> or --fallback-url URL, not both")
    if options.listen:
        return _play_http(options, options.listen)
    fallback = _new_fallback(options)() if options.fallback or options.fallback_url else None
    stream = stream_tape(options.tape)
    if stream.streamable:
        tape = stream.tape
        engine = ReplayEngine(tape, stream=stream, fallback=fallback, **options.engine_options())
        held = stream.event_count
    else:  # let the whole-tape checks name what is wrong with it
        tape = load_tape(options.tape)
        engine = ReplayEngine(tape, fallback=fallback, **options.engine_options())
        gc.freeze()  # the tape lives as long as we do: keep it out of every later collection
        held = len(tape.events)
    if not tape.complete:
        print(
            f"mcptape play: warning: {options.tape} was cut short (no footer); replaying the {held} event(s) it holds",
            file=sys.stderr,
        )
    sys.stdout.flush()
    out = sys.stdout.fileno()
    serve(engine, sys.stdin.fileno(), out)
    if engine.closed:
        print("mcptape play: the recorded server exited here; closing the connection", file=sys.stderr)
        hang_up(out)
    report = engine.report()
    print(safe_log(report.render()), file=sys.stderr)  # quotes the client's requests and the tape
    _save_report(options, [report])
    if fallback is not None:
        return max(report.exit_code, fallback.finish())
    return report.exit_code


def _play_http(options: Options, listen: str) -> int:
    """Serve the tape over streamable HTTP until SIGINT/SIGTERM, then report like stdio play."""
    from mcptape.replay.http import serve_http  # http.server, the HTTP transport's framing: --listen only

    tape = load_tape(options.tape)
    live = _new_fallback(options) if options.fallback or options.fallback_url else None
    # Built before serving, so a tape that cannot be replayed fails early; each session gets its own live side.
    first = ReplayEngine(tape, new_fallback=live, **options.engine_options())

    def ready(url: str) -> None:  # listening: what a person needs to know before the first client
        if not tape.complete:
            say(f"mcptape play: warning: {options.tape} was cut short (no footer); "
                f"replaying the {len(tape.events)} event(s) it holds")
        say(f"mcptape play: serving {options.tape} on {url} (stop with Ctrl-C)")

    engines = serve_http(first, listen, on_ready=ready)
    if not engines:
        say("mcptape play: no client connected")
        _save_report(options, [first.report()])
        return EXIT_OK
    code = EXIT_OK
    reports = [engine.report() for engine in engines]
    for report in reports:
        say(report.render())
        code = max(code, report.exit_code)
    _save_report(options, reports)
    for engine in engines:  # one after another: each appends to the tape the last one wrote
        if engine.fallback is not None:
            code = max(code, engine.fallback.finish())
    return code


def _new_fallback(options: Options) -> Callable[[], Fallback]:
    """What makes the live side of --fallback / --fallback-url (one per client session)."""
    from mcptape.replay.fallback import LiveFallback  # subprocess, tempfile: --fallback only

    return lambda: LiveFallback(options.tape, options.server, say, url=options.fallback_url)


def _save_report(options: Options, reports: list[ReplayReport]) -> None:
    """--report FILE: each client session's report (one per HTTP session), as JSON, written atomically."""
    if options.report is None:
        return
    from mcptape.tape.atomic import write_atomic  # tempfile: not on the path of a plain play

    # The report quotes the client's requests: they were scrubbed of redacted values (engine._scrub).
    data = dumps({"sessions": [r.to_dict() for r in reports]}) + "\n"
    write_atomic(options.report, utf8(data), what="replay report")
