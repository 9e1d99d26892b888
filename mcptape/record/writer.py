"""rec's tape writer: the forked process that turns teed frames into a redacted, verified tape.

Owns everything after the tee (record/relay.py): reassembling lines per direction, building
events (tape/events.py), redacting and verifying each line, writing the tape a batch at a time
(tape/format.py), and showing the server's stderr on rec's stderr *after* redaction, from a
thread of its own. It runs at the lowest priority, so recording never slows the wire.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any

from mcptape.errors import EXIT_COULD_NOT_RUN, EXIT_SECRET, McptapeError, SecretLeak
from mcptape.logsafe import safe_log
from mcptape.publish.outlet import Outlet
from mcptape.publish.telemetry import TapeTrace, WireClock
from mcptape.record.relay import EXIT_SIGNALS, FRAME, TAG_C2S, TAG_CTL, TAG_ERR, TAG_S2C, ChunkReader
from mcptape.redact.redactor import make_redactor
from mcptape.tape.events import (
    C2S,
    S2C,
    EventBuilder,
    exit_event,
    note_detail,
    note_event,
    stderr_event,
)
from mcptape.tape.format import Event, TapeWriter, serialize
from mcptape.tape.timing import timing_footer
from mcptape.transports.stdio import ServerProcess

# The writer runs below the wire's processes so that on a busy box it yields the core to them:
# SCHED_IDLE where the OS has it (see _step_aside), else this niceness.
WRITER_NICE = 19
# The writer's reads: under malloc's mmap threshold (see ChunkReader), big enough to take a
# nap's worth of frames at once.
WRITER_READ = 64 << 10
# After a read that did not fill its buffer, the writer naps this long before the next one, so
# the relay's tee writes land in the socket without waking it: it takes the frames of many round
# trips per wake-up instead of one or two, and stays off the cores the wire needs. Nothing is
# lost by it (the frames wait in the socket's buffer, which outlives a killed relay); the tape on
# disk just trails the wire by up to this much.
WRITER_NAP = 0.005
# Scrubbed server stderr waiting for rec's own stderr to take it. A reader of rec's stderr that
# stalls costs lines past this (with a notice), never the tape nor the wire.
STDERR_QUEUE_MAX = 16 << 20
# At the end, how long the writer waits for rec's stderr to take the last scrubbed lines.
STDERR_DRAIN_WAIT = 10.0

_TAG_DIR = {TAG_C2S: C2S, TAG_S2C: S2C}


class LineAssembler:
    """Splits a byte stream into newline-terminated lines, linear in the stream's size.

    A partial line is kept as a list of pieces and joined once when its newline arrives,
    so a 20 MB line fed in 1 MiB chunks costs one copy, not twenty growing ones.
    """

    __slots__ = ("_pieces", "pending_bytes")

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self.pending_bytes = 0

    def feed(self, data: bytes) -> list[bytes]:
        """The lines completed by `data`, without their newline."""
        lines: list[bytes] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            if self._pieces:
                self._pieces.append(data[start:nl])
                lines.append(b"".join(self._pieces))
                self._pieces.clear()
                self.pending_bytes = 0
            else:
                lines.append(data[start:nl])
            start = nl + 1
        if start < len(data):
            rest = data[start:] if start else data
            self._pieces.append(rest)
            self.pending_bytes += len(rest)
        return lines

    def finish(self) -> bytes | None:
        """The unterminated last line at end of stream, if any."""
        if not self._pieces:
            return None
        line = b"".join(self._pieces)
        self._pieces.clear()
        self.pending_bytes = 0
        return line



# --------------------------------------------------------------------------------------------
# the writer child


def _step_aside() -> None:
    """Make the writer the process any wire process preempts at once.

    Under SCHED_IDLE the kernel preempts the writer the moment client, relay or server wakes
    (a nice-19 task only loses its turn at the scheduler's next check), so its parsing and
    redaction (hundreds of µs per KB) fill cores the wire leaves idle instead of delaying a
    round trip; when the wire is done the writer has the machine to itself. Where the policy is
    missing (not Linux) or refused, plain nice 19.

    Only within one scheduling group, though: where the kernel groups processes by session
    (autogroups, on by default in many distributions), a SCHED_IDLE task in a session of its own
    makes a group that competes with the wire's at full weight, and a server in another session
    competes group against group. So the writer and the server get process groups of their own
    but stay in rec's session; with separate sessions every run had 2-5 ms p99 round trips, with
    one session 0.2-0.35 ms (`bench/bench_rec.py --sizes 1k`, side by side, this machine).
    """
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return
    except (AttributeError, OSError):
        pass
    with contextlib.suppress(OSError):
        os.nice(WRITER_NICE)


def run_writer(
    tee_r: int, writer: TapeWriter, server: ServerProcess, outlet: Outlet, where: str,
    header: dict[str, Any] | None = None, otel: TapeTrace | None = None,
) -> None:
    """Body of the forked writer; never returns (os._exit), whatever happens.

    `header`, as written before the fork with our own detectors only, is verified again here with
    the rule set (redact/rules.py): if it leaks, the tape is removed and the writer exits 4."""
    code = EXIT_COULD_NOT_RUN
    try:
        # Our copies of the wire must go, or the client would not see EOF when the relay
        # closes stdout, nor the server when the relay closes its stdin.
        for f in (server.popen.stdin, server.popen.stdout, server.popen.stderr):
            if f is not None:
                with contextlib.suppress(OSError):
                    os.close(f.fileno())
        # Our own process group: a client that kills rec's group on shutdown (the SDK does, 2 s
        # after closing stdin) must not cut the tape short while a backlog is written. Not our
        # own session: that would be our own autogroup and undo SCHED_IDLE (see _step_aside).
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        # Ctrl-C reaches the whole foreground group; the writer ends on the relay's EOF instead.
        for s in EXIT_SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        _step_aside()
        stderr_fd: int | None = None
        with contextlib.suppress(OSError):
            stderr_fd = os.dup(2)  # rec's stderr: where the server's scrubbed stderr is shown
        say = None if stderr_fd is not None else _say_on_stderr
        if header is not None:
            try:
                outlet.verified(serialize(header), f"{where}:1")
            except SecretLeak as e:
                writer.abandon()
                with contextlib.suppress(OSError):
                    os.unlink(writer.path)
                print(safe_log(f"mcptape rec: {e}"), file=sys.stderr, flush=True)
                code = EXIT_SECRET
                return
        code = TapeRecorder(writer, where=where, outlet=outlet, stderr_fd=stderr_fd, say=say, otel=otel).run(tee_r)
    except BaseException:  # noqa: BLE001 - a forked child must reach os._exit, never the parent's stack
        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stderr.flush()
        os._exit(code)


def _say_on_stderr(message: str) -> None:
    """The writer's own messages when its copy of rec's stderr could not be made: straight to fd 2."""
    print(safe_log(message), file=sys.stderr, flush=True)  # it may quote the server


class _StderrRelay:
    """Shows scrubbed server stderr on rec's stderr from its own thread, in order.

    A thread, so that a reader of rec's stderr that stalls (a client that pipes it and never
    reads) holds up neither the tape nor, through the tee's backlog, the wire. What waits is
    bounded by STDERR_QUEUE_MAX; past it lines are dropped and a notice says how many bytes.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.queue: deque[bytes] = deque()
        self.size = 0
        self.dropped = 0
        self.closed = False
        self.broken = False
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="mcptape-stderr", daemon=True)
        self.thread.start()

    def put(self, data: bytes) -> None:
        with self.cond:
            if self.broken or self.closed:
                return
            if self.size + len(data) > STDERR_QUEUE_MAX:
                self.dropped += len(data)
                return
            if self.dropped:
                self._notice()
            self.queue.append(data)
            self.size += len(data)
            self.cond.notify()

    def _notice(self) -> None:
        self.queue.append(
            f"mcptape rec: {self.dropped} bytes of the server's stderr were not shown "
            "(rec's stderr was not read fast enough)\n".encode()
        )
        self.dropped = 0

    def _run(self) -> None:
        while True:
            with self.cond:
                while not self.queue and not self.closed:
                    self.cond.wait()
                if not self.queue:
                    return
                batch = b"".join(self.queue)
                self.queue.clear()
                self.size = 0
            try:
                _write_blocking(self.fd, self._shown(batch))
            except OSError:  # rec's stderr is gone (EPIPE, closed): nobody left to show it to
                with self.cond:
                    self.broken = True
                    self.queue.clear()
                return

    @staticmethod
    def _shown(batch: bytes) -> bytes:
        """Server text as it may reach a terminal or CI log: undecodable bytes as `\\xNN`, what
        could act escaped, and in a GitHub job framed (logsafe.safe_log); CRLF endings kept plain."""
        text = batch.decode("utf-8", "backslashreplace").replace("\r\n", "\n")
        return safe_log(text).encode("utf-8")

    def close(self, timeout: float) -> None:
        """Let the last lines out (at most `timeout` seconds: a stalled reader must not keep rec alive)."""
        with self.cond:
            if self.dropped and not self.broken:
                self._notice()
            self.closed = True
            self.cond.notify()
        self.thread.join(timeout)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _write_blocking(fd: int, data: bytes) -> None:
    """Write all of `data`, waiting out EAGAIN: a terminal shared with O_NONBLOCK set elsewhere."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [], 1.0)


class TapeRecorder:
    """Turns tee frames into tape events: per-direction line reassembly, events, redaction, write.

    Every line leaves through `outlet` (publish/outlet.py: scrubbed and verified; rec builds it with the
    secrets of its command line and environment), else through one built with `secrets`: there is
    no recorder without redaction. With `stderr_fd` it also shows the server's stderr there, line
    by line, after redaction.
    """

    def __init__(
        self,
        writer: TapeWriter,
        secrets: dict[str, str] | None = None,
        where: str = "tape",
        *,
        outlet: Outlet | None = None,
        stderr_fd: int | None = None,
        say: Callable[[str], None] | None = None,
        otel: TapeTrace | None = None,
    ) -> None:
        self.writer = writer
        # --otel: when each message crossed the wire, keyed for the export. The same instants as the
        # footer's timing (self.clock, the relay's time.monotonic in each frame), as epoch ns: the
        # writer's own reading of the time trails the wire by up to WRITER_NAP and its backlog.
        self.otel = otel
        self.otel_clock = WireClock() if otel is not None else None
        self._epoch_ns = time.time_ns() - time.monotonic_ns()  # CLOCK_MONOTONIC is the relay's too
        self.where = where
        self.builder = EventBuilder()
        self.lines = {TAG_C2S: LineAssembler(), TAG_S2C: LineAssembler(), TAG_ERR: LineAssembler()}
        self.outlet = outlet if outlet is not None else Outlet(make_redactor(secrets))
        self.relay = _StderrRelay(stderr_fd) if stderr_fd is not None else None
        self.say = say  # rec's own messages when there is no stderr relay to keep them in order with the server's
        self.failed: str | None = None
        self.leaked = False
        self.end: dict[str, Any] | None = None
        self.overflowed = False
        # When the frame being read crossed the wire (the relay's clock), and per line written
        # the clock of the frame that completed it: the footer's timing (tape/timing.py).
        self.clock: float | None = None
        self.times: list[float | None] = []

    def run(self, fd: int) -> int:
        buf = bytearray()
        reader = ChunkReader(WRITER_READ)
        while True:
            try:
                chunk = reader.read(fd)
            except InterruptedError:
                continue
            if not chunk:
                break
            buf += chunk
            pos = 0
            size = len(buf)
            while size - pos >= FRAME.size:
                tag, n, clock = FRAME.unpack_from(buf, pos)
                start = pos + FRAME.size
                if size - start < n:
                    break
                self.clock = clock
                self.frame(tag, bytes(buf[start : start + n]))
                pos = start + n
            if pos:
                del buf[:pos]
            self._flush()  # one write per batch of events: the tape lags the tee by one batch at most
            if len(chunk) < WRITER_READ:
                time.sleep(WRITER_NAP)
        try:
            self.finish()
        finally:
            if self.relay is not None:
                self.relay.close(STDERR_DRAIN_WAIT)
        if self.leaked:
            return EXIT_SECRET
        return EXIT_COULD_NOT_RUN if self.failed else 0

    def frame(self, tag: int, payload: bytes) -> None:
        if tag == TAG_CTL:
            ctl = json.loads(payload)
            if "overflow" in ctl:
                # The relay dropped wire frames: the wire lines in progress are lost too. Stderr
                # frames were kept (see _Tee), so its line in progress is whole.
                self.overflowed = True
                self.lines[TAG_C2S].finish()
                self.lines[TAG_S2C].finish()
                self.emit(note_event("recording_overflow", {"dropped_bytes": ctl["overflow"]}))
            elif "stderr_dropped" in ctl:
                self.lines[TAG_ERR].finish()  # torn by the gap: neither shown nor recorded
                self._say(
                    f"mcptape rec: {ctl['stderr_dropped']} bytes of the server's stderr were dropped "
                    "(the tape writer fell too far behind)"
                )
            else:
                self.end = ctl
            return
        if self.overflowed and tag != TAG_ERR:
            return
        assembler = self.lines.get(tag)
        if assembler is None:
            return
        for line in assembler.feed(payload):
            self.line(tag, line)

    def line(self, tag: int, line: bytes) -> None:
        if tag == TAG_ERR:
            self.stderr_line(line)
            return
        if not line.strip():
            return  # blank lines carry no message; peers skip them and so does the tape
        event, text = self.builder.line_and_text(_TAG_DIR[tag], line)
        if self.otel_clock is not None:
            wire = None if self.clock is None else self._epoch_ns + round(self.clock * 1e9)
            self.otel_clock.saw_event(event, wire)
        self.emit(event, text)
        for note in self.builder.take_notes():  # a deep message's cut, an answer that is not UTF-8
            self.emit(note)
            self._say(f"mcptape rec: noted {note['what']}: {note_detail(note)}")

    def stderr_line(self, line: bytes, *, to_tape: bool = True) -> None:
        """One server stderr line: scrubbed once, then shown on rec's stderr and written to the tape.

        Trade-off: rec's stderr now shows the server's stderr a line at a time, as fast as this
        (nice 19) writer gets to it, behind any backlog of wire frames, instead of the chunk the
        moment it arrives; a line without a newline (a progress bar) waits for one or for the end.
        In exchange nothing unscrubbed reaches what is often a public CI log, and the relay on the
        wire does no redaction work at all (the stdin/stdout path is unchanged). The same scrubbed,
        verified text goes to both places; a line that fails verification goes to neither.
        """
        event = stderr_event(line)
        shown = event["text"]
        event = self.outlet.redactor.redact_event(event)
        try:
            data = self.outlet.verified(serialize(event), self._where_next())
        except SecretLeak as e:
            self.leaked = True
            self._say(f"mcptape rec: {e}; the server's stderr line was neither shown nor written")
            if to_tape and not self.overflowed:
                self._write(serialize(note_event("event_withheld", {"kind": "stderr"})))
            return
        if self.relay is not None:
            text = event.get("text", "")
            # Unchanged lines go out as their bytes; the relay escapes what could act (_StderrRelay._shown).
            self.relay.put(line + b"\n" if text == shown else text.encode("utf-8", "backslashreplace") + b"\n")
        if to_tape and not self.overflowed:
            self._write(data)

    def emit(self, event: Event, text: str | None = None) -> None:
        """Write one event; `text`, if given, is `dumps(event)` already made (line_and_text)."""
        if self.failed:
            return
        try:
            data = self.outlet.tape_line(event, self._where_next(), text)
        except SecretLeak as e:
            # Fail closed: this event is not written (the message names place and kind, never
            # the value); the tape says something was withheld and rec exits 4.
            self.leaked = True
            self._say(f"mcptape rec: {e}; the event was not written")
            data = serialize(note_event("event_withheld", {"kind": event.get("kind")}))
        self._write(data)

    def _where_next(self) -> str:
        return f"{self.where}:{self.writer.count + 2}"  # the line the next event will land on

    def _write(self, data: bytes) -> None:
        if not self.failed:
            self.writer.write_line(data, flush=False)  # held in memory until _flush
            self.times.append(self.clock)

    def _flush(self) -> None:
        if self.failed:
            return
        try:
            self.writer.flush()
        except OSError as e:
            # Keep draining the tee so the relay never backs up; just stop writing.
            self.failed = f"{self.where}: cannot write the tape: {e.strerror or e}"
            self._say(f"mcptape rec: {self.failed}; still relaying, the tape is cut short")

    def _say(self, message: str) -> None:
        """rec's own messages from the writer, in order with the server's stderr lines around them."""
        if self.relay is not None:
            self.relay.put(message.encode("utf-8", "backslashreplace") + b"\n")
        elif self.say is not None:
            self.say(message)

    def finish(self) -> None:
        end = self.end
        if end is None:
            # The relay vanished without its end record: it was killed. Keep what we have and
            # leave the footer off, so the tape says it was cut short.
            partial = {
                C2S if t == TAG_C2S else S2C if t == TAG_S2C else "stderr": a.pending_bytes
                for t, a in self.lines.items()
                if a.pending_bytes
            }
            last_words = self.lines[TAG_ERR].finish()
            if last_words is not None:
                self.stderr_line(last_words, to_tape=False)  # shown; the tape counts it as partial
            self.emit(note_event("recorder_killed", {"partial_bytes": partial} if partial else None))
            self._flush()
            self._summary("recorder killed; tape cut short")
            self.writer.abandon()
            self._export()
            return
        for tag in (TAG_C2S, TAG_S2C, TAG_ERR):
            rest = self.lines[tag].finish()
            if rest is not None:
                self.line(tag, rest)
        unanswered = self.builder.unanswered_note()
        if unanswered is not None:
            self.emit(unanswered)
        returncode = end.get("returncode")
        self.clock = None  # what follows is mcptape's, not the wire's
        self.emit(exit_event(returncode))
        reason = end.get("reason")
        if reason == "server_exited":
            self.emit(note_event("server_exited_mid_session"))
        elif reason == "interrupted":
            self.emit(note_event("interrupted", {"signal": end.get("signal")}))
        elif reason == "recorder_error":
            self.emit(note_event("recorder_error"))
        self._flush()
        if self.overflowed:
            self.writer.abandon()  # events are missing: no footer, the tape is not a clean record
            self._summary("writer fell behind; tape incomplete")
            self._export()
            return
        try:
            self.writer.close(timing=timing_footer(self.times))
        except OSError as e:
            self.failed = f"{self.where}: cannot finish the tape: {e.strerror or e}"
        status = "server exited " + (
            f"{returncode}"
            if returncode is None or returncode >= 0
            else f"by {exit_event(returncode).get('signal')}"
        )
        self._summary(status)
        self._export()

    def _export(self) -> None:
        """--otel: the session's trace, from the tape as written (redacted) and the clock's times."""
        if self.otel is None or self.otel_clock is None or self.failed:
            return
        try:
            self.otel.export(self.writer.path, self.otel_clock, self.outlet)
        except McptapeError as e:  # a payload that leaked (nothing sent), the tape unreadable
            self._say(f"mcptape rec: --otel: {e}")

    def _summary(self, status: str) -> None:
        self._say(f"mcptape rec: {self.writer.count} events -> {self.writer.path} ({status})")
