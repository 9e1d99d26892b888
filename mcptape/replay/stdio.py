"""The stdio loop of `mcptape play`: client lines from a file descriptor to a ReplayEngine, its answers out.

Owns reading the client's lines without blocking the engine's idle-time work (`ClientLines`)
and writing each batch of answers in one system call. What to answer is engine.py's; the command
(the tape, the warnings, the report on stderr) commands/play.py's.
"""

from __future__ import annotations

import os
import select
from collections.abc import Callable, Iterable

from mcptape.replay.lab import Served
from mcptape.replay.outgoing import Outgoing
from mcptape.tape.events import C2S, S2C


class ClientLines:
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

    def push_back(self, line: bytes) -> None:
        """Give back a line already read (play read the first one to pick a tape: era_pair.py)."""
        self.buf[0:0] = line
        self.scanned = 0

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


Observer = Callable[[str, bytes], None]


def _seen(observe: Observer | None, direction: str, lines: list[str]) -> list[str]:
    if observe is not None:
        for line in lines:
            observe(direction, line.encode("utf-8", "surrogateescape"))
    return lines


def _write(fd: int, lines: Iterable[str]) -> None:
    # One write per batch, straight to the fd: every line in it is a whole message that is due now.
    _write_data(fd, "".join(line + "\n" for line in lines))


def _write_sent(fd: int, sent: list[Outgoing], observe: Observer | None) -> None:
    """The engine's messages for one client line, as _write writes lines (without a list of them first)."""
    if observe is not None:
        _seen(observe, S2C, [message.line for message in sent])
    _write_data(fd, "".join(message.line + "\n" for message in sent))


def _write_data(fd: int, data: str) -> None:
    if data:
        view = memoryview(data.encode("utf-8", "surrogateescape"))
        while view:
            view = view[os.write(fd, view) :]


def serve(engine: Served, in_fd: int, out_fd: int, observe: Observer | None = None,
          client: ClientLines | None = None) -> None:
    """Answer the client's lines on `in_fd` (or `client`, a reader of it already used) on `out_fd`
    until it hangs up or the recorded server died (engine.closed; then `hang_up`). Startup lines
    first; idle time reads the tape ahead.
    `observe(direction, line)` is told of every line after it was sent (--otel: publish/telemetry.py)."""
    client = client if client is not None else ClientLines(in_fd)
    try:
        _write(out_fd, _seen(observe, S2C, engine.pending_startup()))
        while not engine.closed:
            # While the client thinks, read ahead in the tape (see ReplayEngine.lookahead).
            while not client.waiting() and engine.lookahead():
                pass
            raw = client.readline()
            if not raw:
                break
            if observe is not None:
                observe(C2S, raw.rstrip(b"\n"))
            _write_sent(out_fd, engine.exchange(raw.decode("utf-8", "surrogateescape")), observe)
    except BrokenPipeError:
        pass  # the client hung up; the report still says what happened


def hang_up(out_fd: int) -> None:
    """Make the client see EOF now, as it did when the server died: point the fd at /dev/null
    (closing the pipe) rather than closing sys.stdout under the interpreter's feet."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, out_fd)
    os.close(devnull)
