"""The stdio loop of `mcptape play`: client lines from stdin to a ReplayEngine, its answers to stdout.

Owns reading the client's lines without blocking the engine's idle-time work (`_ClientLines`)
and writing each batch of answers in one system call. What to answer is engine.py's.
"""

from __future__ import annotations

import gc
import os
import select
import sys
from collections.abc import Iterable
from typing import Any

from mcptape.logsafe import safe_log
from mcptape.replay.engine import ReplayEngine, load_tape, stream_tape


class _ClientLines:
    """The client's lines from a file descriptor, and whether one is due without blocking for it.

    Our own reader (not sys.stdin.buffer) because play asks `waiting()` between requests to
    spend idle time on ReplayEngine.lookahead, and a buffered reader cannot tell without a read.
    Reads are 64 KiB: under malloc's mmap threshold, so a small request costs no mmap/munmap.
    """

    READ_SIZE = 64 << 10

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()
        self.scanned = 0  # bytes of buf known to hold no newline
        self.eof = False
        self.poller = select.poll()
        self.poller.register(fd, select.POLLIN)

    def waiting(self) -> bool:
        """A line (or EOF) is here or on its way: the caller should read rather than do other work."""
        if self.eof or self.buf.find(b"\n", self.scanned) >= 0:
            return True
        return bool(self.poller.poll(0))

    def readline(self) -> bytes:
        """The next line with its newline; at EOF what is left (b"" when nothing is)."""
        while True:
            nl = self.buf.find(b"\n", self.scanned)
            if nl >= 0:
                line = bytes(self.buf[: nl + 1])
                del self.buf[: nl + 1]
                self.scanned = 0
                return line
            self.scanned = len(self.buf)
            if self.eof:
                line = bytes(self.buf)
                self.buf.clear()
                return line
            data = os.read(self.fd, self.READ_SIZE)
            if data:
                self.buf += data
            else:
                self.eof = True


def _write(fd: int, lines: Iterable[str]) -> None:
    # One write per batch, straight to the fd: every line in it is a whole message that is due now.
    data = "".join(line + "\n" for line in lines)
    if data:
        view = memoryview(data.encode("utf-8", "surrogateescape"))
        while view:
            view = view[os.write(fd, view) :]


def run_play(args: Any) -> int:
    """`mcptape play TAPE [--lenient]`: serve a tape on stdin/stdout; report on stderr at EOF."""
    if getattr(args, "listen", None):
        from mcptape.replay.http import run_http_play

        return int(run_http_play(args))
    lenient = bool(getattr(args, "lenient", False))
    stream = stream_tape(args.tape)
    if stream.streamable:
        tape = stream.tape
        engine = ReplayEngine(tape, lenient=lenient, stream=stream)
        held = stream.event_count
    else:  # let the whole-tape checks name what is wrong with it
        tape = load_tape(args.tape)
        engine = ReplayEngine(tape, lenient=lenient)
        gc.freeze()  # the tape lives as long as we do: keep it out of every later collection
        held = len(tape.events)
    if not tape.complete:
        print(
            f"mcptape play: warning: {args.tape} was cut short (no footer); replaying the {held} event(s) it holds",
            file=sys.stderr,
        )
    sys.stdout.flush()
    out = sys.stdout.fileno()
    client = _ClientLines(sys.stdin.fileno())
    try:
        _write(out, engine.pending_startup())
        while not engine.closed:
            # While the client thinks, read ahead in the tape (see ReplayEngine.lookahead).
            while not client.waiting() and engine.lookahead():
                pass
            raw = client.readline()
            if not raw:
                break
            _write(out, engine.handle(raw.decode("utf-8", "surrogateescape")))
    except BrokenPipeError:
        pass  # the client hung up; the report below still says what happened
    if engine.closed:
        print("mcptape play: the recorded server exited here; closing the connection", file=sys.stderr)
        # The client must see EOF now, as it did when the server died: point fd 1 at /dev/null
        # (closing the pipe) rather than closing sys.stdout under the interpreter's feet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out)
        os.close(devnull)
    report = engine.report()
    print(safe_log(report.render()), file=sys.stderr)  # quotes the client's requests and the tape
    return report.exit_code
