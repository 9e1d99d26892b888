"""`mcptape play TAPE [--lenient] [--listen HOST:PORT]`: serve a tape as an MCP server, offline.

Stdout is the MCP wire (stdio play): everything human goes to stderr, the report at the end.
What to answer is replay/engine.py's, the stdio loop replay/stdio.py's, HTTP replay/http.py's
(imported for --listen only: it is not on the path of a stdio play's cold start).
Exit codes: 0 every request answered, 1 misses, 2 the tape cannot be replayed.
"""

from __future__ import annotations

import argparse
import gc
import sys
from dataclasses import dataclass

from mcptape.commands.terminal import say
from mcptape.errors import EXIT_OK
from mcptape.logsafe import safe_log
from mcptape.replay.engine import ReplayEngine, load_tape, stream_tape
from mcptape.replay.stdio import hang_up, serve


@dataclass(frozen=True)
class Options:
    tape: str
    lenient: bool
    listen: str | None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(tape=args.tape, lenient=bool(args.lenient), listen=args.listen)


def run(options: Options) -> int:
    if options.listen:
        return _play_http(options, options.listen)
    stream = stream_tape(options.tape)
    if stream.streamable:
        tape = stream.tape
        engine = ReplayEngine(tape, lenient=options.lenient, stream=stream, say=say)
        held = stream.event_count
    else:  # let the whole-tape checks name what is wrong with it
        tape = load_tape(options.tape)
        engine = ReplayEngine(tape, lenient=options.lenient, say=say)
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
    return report.exit_code


def _play_http(options: Options, listen: str) -> int:
    """Serve the tape over streamable HTTP until SIGINT/SIGTERM, then report like stdio play."""
    from mcptape.replay.http import serve_http  # http.server, the HTTP transport's framing: --listen only

    tape = load_tape(options.tape)
    first = ReplayEngine(tape, lenient=options.lenient, say=say)  # fails early on a tape that cannot be replayed

    def ready(url: str) -> None:  # listening: what a person needs to know before the first client
        if not tape.complete:
            say(f"mcptape play: warning: {options.tape} was cut short (no footer); "
                f"replaying the {len(tape.events)} event(s) it holds")
        say(f"mcptape play: serving {options.tape} on {url} (stop with Ctrl-C)")

    engines = serve_http(first, listen, say=say, on_ready=ready)
    if not engines:
        say("mcptape play: no client connected")
        return EXIT_OK
    code = EXIT_OK
    for engine in engines:
        report = engine.report()
        say(report.render())
        code = max(code, report.exit_code)
    return code
