"""rec's relay: the single-threaded poll loop that moves every byte between client and server.

Owns the hot path of `mcptape rec` over stdio (see record/stdio.py for the two processes): the
client's stdin to the server, the server's stdout to the client, each chunk forwarded unchanged
the moment it arrives and teed, framed as (tag, length, bytes), into a socket to the writer
(writer.py). Nothing here parses JSON or touches the tape. It also drives the server's shutdown
from the poll loop, so the server's last words are still relayed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import signal
import struct
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcptape.errors import EXIT_COULD_NOT_RUN
from mcptape.transports.stdio import Ladder, ServerProcess

if TYPE_CHECKING:
    pass

# Big reads: a 20 MB line crosses in ~20 syscalls instead of ~300 (the pipes are enlarged to match).
# They go into one buffer allocated once (see ChunkReader): a fresh 1 MiB bytes object per read
# is an mmap/munmap pair in malloc, which cost more than the rest of a relay hop together.
READ_SIZE = 1 << 20
PIPE_SIZE = 1 << 20
# Above this many bytes waiting for the server's stdin we stop reading the client, so memory
# stays bounded; we never stop reading the server's stdout for it (that would deadlock a server
# that writes a big answer while a big request arrives, which a direct connection would not).
C2S_HIGH_WATER = 16 << 20

# How far the tape writer may fall behind before recording is given up (never the wire).
TEE_BACKLOG_MAX = 256 << 20

# The shutdown ladder after the server's stdin is closed (transports/stdio.py), climbed from the
# poll loop so the server's last words are still relayed; after SIGKILL, how long the pipes may stay
# open (a grandchild holding them) before the loop ends.
LADDER = Ladder(grace=2.0, term_grace=2.0, kill_grace=3.0)
# After the server process is gone, how long its pipes may stay open (a grandchild holding them).
DRAIN_AFTER_EXIT = 1.0

EXIT_SIGNALS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}

# Tee frame: tag, payload length, the monotonic clock when the chunk was read, payload. The clock
# is what a tape's timing is made of (tape/timing.py): read here, on the wire, because the writer
# reads frames late on purpose (it naps, and runs at idle priority).
TAG_C2S = 1
TAG_S2C = 2
TAG_ERR = 3
TAG_CTL = 4
FRAME = struct.Struct("<BId")
_clock = time.monotonic


# --------------------------------------------------------------------------------------------
# the relay (hot path)


class _Tee:
    """Non-blocking framed writes to the writer; what the socket cannot take waits here, in order.

    The backlog is bounded: a writer that falls TEE_BACKLOG_MAX behind (a slow disk, a very
    slow redactor) costs the recording, never the wire nor unbounded memory. The wire frames
    not yet handed over are dropped, an `overflow` control record tells the writer, and the
    tape ends with a note and without a footer. Stderr frames are kept and still sent after
    an overflow, because the writer is the only way the server's stderr reaches the user; past
    the bound again they are dropped too and a `stderr_dropped` record says how much.
    """

    __slots__ = ("fd", "say", "pending", "pending_bytes", "partial", "broken", "overflowed", "err_dropped")

    def __init__(self, fd: int, say: Callable[[str], None] | None = None) -> None:
        self.fd = fd
        self.say = say  # where rec tells a person that recording stopped (its stderr)
        os.set_blocking(fd, False)
        # Items alternate head, data; the first `partial` items finish a frame already begun.
        self.pending: deque[bytes | memoryview] = deque()
        self.pending_bytes = 0
        self.partial = 0
        self.broken = False
        self.overflowed = False
        self.err_dropped = 0

    def send(self, tag: int, data: bytes) -> None:
        if self.broken:
            return
        if self.overflowed:
            if tag == TAG_ERR:
                if self.pending_bytes > TEE_BACKLOG_MAX:
                    self.err_dropped += len(data)
                    return
            elif tag != TAG_CTL:
                return
            if self.err_dropped:
                # Before anything else goes: the writer must drop its torn stderr line and say so.
                dropped, self.err_dropped = self.err_dropped, 0
                self.send(TAG_CTL, json.dumps({"stderr_dropped": dropped}).encode("utf-8"))
        head = FRAME.pack(tag, len(data), _clock())
        if self.pending:
            self.pending.append(head)
            self.pending.append(data)
            self.pending_bytes += len(head) + len(data)
            if self.pending_bytes > TEE_BACKLOG_MAX and not self.overflowed:
                self._overflow()
            return
        try:
            n = os.writev(self.fd, (head, data))
        except BlockingIOError:
            n = 0
        except OSError:
            self._break()
            return
        if n == len(head) + len(data):
            return
        if n < len(head):
            self.pending.append(head[n:])
            self.pending.append(data)
            self.partial = 2 if n else 0
        else:
            self.pending.append(memoryview(data)[n - len(head) :])
            self.partial = 1
        self.pending_bytes = len(head) + len(data) - n

    def flush(self) -> None:
        """Write what is pending, as much as the socket takes now."""
        pending = self.pending
        while pending:
            parts = [pending[i] for i in range(min(len(pending), 512))]
            try:
                n = os.writev(self.fd, parts)
            except BlockingIOError:
                return
            except OSError:
                self._break()
                return
            self.pending_bytes -= n
            while n:
                first = pending[0]
                if n >= len(first):
                    n -= len(first)
                    pending.popleft()
                    # a whole head gone with no frame in progress: its data is now in progress
                    self.partial = self.partial - 1 if self.partial else 1
                else:
                    pending[0] = memoryview(first)[n:]
                    n = 0
                    if not self.partial:
                        self.partial = 2

    def _overflow(self) -> None:
        # Past the first `partial` items the backlog is whole (head, data) pairs; keep the
        # frame in progress (framing) and the stderr frames (the user's only copy of them).
        items = list(self.pending)
        keep = items[: self.partial]
        for i in range(self.partial, len(items) - 1, 2):
            if items[i][0] == TAG_ERR:
                keep += items[i : i + 2]
        dropped = self.pending_bytes - sum(len(x) for x in keep)
        self.pending.clear()
        self.pending.extend(keep)
        self.pending_bytes -= dropped
        self.overflowed = True
        if self.say is not None:
            self.say(f"mcptape rec: the tape writer fell {TEE_BACKLOG_MAX >> 20} MiB behind; recording stopped, still relaying")
        self.send(TAG_CTL, json.dumps({"overflow": dropped}).encode("utf-8"))

    def finish(self) -> None:
        """Hand everything to the writer (blocking now: the wire is done) and close the socket."""
        if not self.broken:
            os.set_blocking(self.fd, True)
            self.flush()
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def _break(self) -> None:
        # The writer died: recording stops, the wire goes on (it must never block on us).
        # The server's stderr is not shown from here on: unscrubbed, it could leak into a log.
        if not self.broken and self.say is not None:
            self.say("mcptape rec: the tape writer died; recording stopped and the server's stderr is "
                     "no longer shown, still relaying")
        self.broken = True
        self.pending.clear()
        self.pending_bytes = 0


def _write_all(fd: int, data: bytes) -> None:
    n = os.write(fd, data)
    if n != len(data):
        view = memoryview(data)[n:]
        while view:
            view = view[os.write(fd, view) :]


class Relay:
    """The single-threaded poll loop that moves bytes and drives the server's shutdown."""

    def __init__(self, server: ServerProcess, tee_fd: int, say: Callable[[str], None] | None = None) -> None:
        self.server = server
        popen = server.popen
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        self.srv_in = popen.stdin.fileno()
        self.srv_out = popen.stdout.fileno()
        self.srv_err = popen.stderr.fileno()
        os.set_blocking(self.srv_in, False)
        self.tee = _Tee(tee_fd, say)
        self.c2s_pending: deque[bytes | memoryview] = deque()
        self.c2s_size = 0
        self.stdin_open = True
        self.stdout_open = True
        self.srv_in_open = True
        self.srv_out_open = True
        self.srv_err_open = True
        self.reason: str | None = None  # client_closed | server_exited | interrupted
        self.signum: int | None = None
        self.signal_count = 0
        self.closing_at: float | None = None
        self.ladder = 0
        self.exited_at: float | None = None
        self.pidfd: int | None = None
        self.poller = select.poll()
        self.masks: dict[int, int] = {}

    # -- poll registration ------------------------------------------------------------------
    def _want(self, fd: int, mask: int) -> None:
        old = self.masks.get(fd)
        if mask == old:
            return
        if mask:
            if old is None:
                self.poller.register(fd, mask)
            else:
                self.poller.modify(fd, mask)
            self.masks[fd] = mask
        elif old is not None:
            self.poller.unregister(fd)
            del self.masks[fd]

    def _update_masks(self) -> None:
        read_client = self.stdin_open and self.c2s_size < C2S_HIGH_WATER
        self._want(0, select.POLLIN if read_client else 0)
        self._want(self.srv_out, select.POLLIN if self.srv_out_open else 0)
        self._want(self.srv_err, select.POLLIN if self.srv_err_open else 0)
        self._want(self.srv_in, select.POLLOUT if (self.srv_in_open and self.c2s_pending) else 0)
        self._want(self.tee.fd, select.POLLOUT if (self.tee.pending and not self.tee.broken) else 0)

    # -- main loop --------------------------------------------------------------------------
    def run(self) -> int:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        old_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        old_handlers = {s: signal.signal(s, self._on_signal) for s in EXIT_SIGNALS}
        self.poller.register(wake_r, select.POLLIN)
        with contextlib.suppress(OSError, AttributeError):
            self.pidfd = os.pidfd_open(self.server.pid)
            self.poller.register(self.pidfd, select.POLLIN)
        returncode: int | None = None
        try:
            self._loop(wake_r)
        finally:
            # Whatever happened, the client must see EOF and the server must not outlive us.
            self._close_stdout()
            returncode = self.server.shutdown(grace=0.5, term_grace=LADDER.term_grace)
            self._drain_server_tail()
            ctl: dict[str, Any] = {"returncode": returncode, "reason": self.reason or "recorder_error"}
            if self.signum is not None:
                ctl["signal"] = signal.Signals(self.signum).name
            self.tee.send(TAG_CTL, json.dumps(ctl).encode("utf-8"))
            self.tee.finish()
            signal.set_wakeup_fd(old_wakeup)
            for s, h in old_handlers.items():
                signal.signal(s, h)
            for fd in (wake_r, wake_w, self.pidfd):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
        if self.reason == "interrupted" and self.signum is not None:
            return EXIT_SIGNALS.get(signal.Signals(self.signum), 130)
        if self.reason == "server_exited":
            return EXIT_COULD_NOT_RUN
        return 0

    def _on_signal(self, signum: int, frame: object) -> None:
        # The C handler has already written to the wakeup fd; poll returns and _loop acts.
        if self.signum is None:
            self.signum = signum
        self.signal_count += 1

    def _loop(self, wake_r: int) -> None:
        srv_out, tee = self.srv_out, self.tee
        poll = self.poller.poll
        # Poll masks change only when state does; the hot path (a chunk read and forwarded, inline
        # below) leaves them alone unless something is left pending, so an idle round costs nothing.
        # Everything else is rare and a method of its own.
        dirty = True
        while self.srv_out_open or self.srv_err_open:
            if self.signal_count:
                self._signalled()
                dirty = True
            if dirty or tee.pending or self.c2s_pending:
                self._update_masks()
                dirty = False
            timeout = None
            if self.closing_at is not None or self.exited_at is not None:
                timeout = self._timeout_ms()
                if timeout == 0:
                    break
            for fd, _ev in poll(timeout):
                if fd == srv_out:
                    data = _read(fd)
                    if data:
                        # Teed first (a non-blocking write to the writer's socket), then forwarded:
                        # a rec SIGKILLed between the two must not leave the client holding an
                        # answer the tape lacks (2 runs in 40 lost the last one, forwarding first).
                        tee.send(TAG_S2C, data)
                        if self.stdout_open:
                            try:
                                _write_all(1, data)
                            except OSError:
                                self._client_stopped_reading()
                                dirty = True
                    elif data is not None:
                        self.srv_out_open = False
                        self._server_stdout_closed()
                        dirty = True
                elif fd == 0:
                    data = _read(0)
                    if data:
                        tee.send(TAG_C2S, data)  # teed first, as above
                        self._to_server(data)
                    elif data is not None:
                        self.stdin_open = False
                        self._client_gone()
                        dirty = True
                else:
                    dirty = True
                    self._ready(fd, wake_r)

    def _signalled(self) -> None:
        """A signal arrived (the handler only counts): close the session, the second time at once.

        A client that already closed our stdin has ended the session itself; its signal (the
        TypeScript SDK sends SIGTERM 2 s after closing stdin, whatever the server is doing) only
        hurries the server down the ladder to SIGTERM now. The tape keeps the client's ending: every
        request was delivered, so nothing was interrupted (an unanswered one is noted as such)."""
        if self.reason == "client_closed" and self.closing_at is not None and not self.c2s_pending:
            if self.signal_count == 1:
                term_at = LADDER.rungs()[0][0]
                self.closing_at = min(self.closing_at, time.monotonic() - term_at)
                return
        elif self.reason != "interrupted":
            self.reason = "interrupted"
            self.stdin_open = False
            self._begin_closing(drop_pending=True)
        if self.signal_count > 1 and self.closing_at is not None:
            # A second Ctrl-C: no more patience, straight down the ladder to SIGKILL.
            kill_at = LADDER.rungs()[1][0]
            self.closing_at = min(self.closing_at, time.monotonic() - kill_at)

    def _client_stopped_reading(self) -> None:
        """Writing to our stdout failed: the client is gone."""
        self._close_stdout()
        self._client_gone()

    def _ready(self, fd: int, wake_r: int) -> None:
        """A descriptor other than the two hot ones is ready: server stderr, a writable pipe, the
        wakeup fd, the server's pidfd."""
        if fd == self.srv_err:
            # Only teed: the writer shows it, scrubbed (see TapeRecorder.stderr_line).
            data = _read(fd)
            if data:
                self.tee.send(TAG_ERR, data)
            elif data is not None:
                self.srv_err_open = False
        elif fd == self.srv_in:
            self._flush_c2s()
        elif fd == self.tee.fd:
            self.tee.flush()
        elif fd == wake_r:
            with contextlib.suppress(OSError):
                os.read(wake_r, 512)
        elif fd == self.pidfd:
            # The server process is gone; its pipes may still hold its last words.
            self.exited_at = time.monotonic()
            self.poller.unregister(fd)
            if self.reason is None:
                self.reason = "server_exited"
            self.stdin_open = False
            if self.closing_at is None:
                self._begin_closing(drop_pending=True)

    def _timeout_ms(self) -> int | None:
        """How long poll may sleep: forever while the session runs (no wake-ups on the wire)."""
        now = time.monotonic()
        deadlines: list[float] = []
        if self.exited_at is not None:
            deadlines.append(self.exited_at + DRAIN_AFTER_EXIT)
        if self.closing_at is not None:
            rungs = LADDER.rungs()
            while self.ladder < len(rungs) and now >= self.closing_at + rungs[self.ladder][0]:
                sig = rungs[self.ladder][1]
                if sig is not None:  # the last rung: give up waiting for the pipes; the loop ends
                    self.server.signal_group(sig)
                self.ladder += 1
            deadlines.append(self.closing_at + rungs[self.ladder][0] if self.ladder < len(rungs) else now)
        if not deadlines:
            return None
        left = min(deadlines) - now
        return 0 if left <= 0 else max(1, int(left * 1000) + 1)

    # -- directions -------------------------------------------------------------------------
    def _to_server(self, data: bytes) -> None:
        if not self.srv_in_open:
            return
        if self.c2s_pending:
            self.c2s_pending.append(data)
            self.c2s_size += len(data)
            return
        try:
            n = os.write(self.srv_in, data)
        except BlockingIOError:
            n = 0
        except OSError:
            self._server_stdin_broken()
            return
        if n < len(data):
            self.c2s_pending.append(memoryview(data)[n:] if n else data)
            self.c2s_size += len(data) - n

    def _flush_c2s(self) -> None:
        while self.c2s_pending:
            first = self.c2s_pending[0]
            try:
                n = os.write(self.srv_in, first)
            except BlockingIOError:
                return
            except OSError:
                self._server_stdin_broken()
                return
            self.c2s_size -= n
            if n == len(first):
                self.c2s_pending.popleft()
            else:
                self.c2s_pending[0] = memoryview(first)[n:]
                return
        if not self.stdin_open and self.closing_at is None:
            self._begin_closing(drop_pending=False)

    def _server_stdin_broken(self) -> None:
        self.c2s_pending.clear()
        self.c2s_size = 0
        self._close_server_stdin()

    def _client_gone(self) -> None:
        if self.reason is None:
            self.reason = "client_closed"
        self.stdin_open = False
        if not self.c2s_pending:
            self._begin_closing(drop_pending=False)

    def _server_stdout_closed(self) -> None:
        if self.reason is None:
            self.reason = "server_exited"
        self._close_stdout()
        self.stdin_open = False
        if self.closing_at is None:
            self._begin_closing(drop_pending=True)

    def _begin_closing(self, *, drop_pending: bool) -> None:
        if drop_pending:
            self.c2s_pending.clear()
            self.c2s_size = 0
        if self.c2s_pending:
            return  # _flush_c2s comes back here once the client's last bytes are delivered
        self._close_server_stdin()
        if self.closing_at is None:
            self.closing_at = time.monotonic()

    def _close_server_stdin(self) -> None:
        if self.srv_in_open:
            self.srv_in_open = False
            self._want(self.srv_in, 0)
            stdin = self.server.popen.stdin
            if stdin is not None:
                with contextlib.suppress(OSError):
                    stdin.close()

    def _close_stdout(self) -> None:
        """Make the client see EOF: point fd 1 at /dev/null (fd 1 stays valid for Python)."""
        if not self.stdout_open:
            return
        self.stdout_open = False
        try:
            null = os.open(os.devnull, os.O_WRONLY)
        except OSError:
            return
        with contextlib.suppress(OSError):
            os.dup2(null, 1)
        os.close(null)

    def _drain_server_tail(self) -> None:
        """After the server is reaped, record what is still in its pipes (no more waiting)."""
        for fd, tag, is_open in (
            (self.srv_out, TAG_S2C, self.srv_out_open),
            (self.srv_err, TAG_ERR, self.srv_err_open),
        ):
            if not is_open:
                continue
            with contextlib.suppress(OSError):
                os.set_blocking(fd, False)
            while True:
                try:
                    data = _reader.read(fd)
                except (BlockingIOError, OSError):
                    break
                if not data:
                    break
                self.tee.send(tag, data)


class ChunkReader:
    """Reads up to READ_SIZE bytes into a buffer allocated once; returns exactly what came.

    `os.read(fd, 1 MiB)` allocates a 1 MiB bytes object and shrinks it: above malloc's mmap
    threshold that is an mmap, page faults and an mremap/munmap (a TLB shootdown across cores)
    on every read, even for a 100-byte message. Measured on the relay's hop it was most of
    the latency rec added (bench/bench_rec.py). readv into a reused buffer plus a copy of the
    bytes that arrived costs a small allocation instead.
    """

    __slots__ = ("_buf", "_view")

    def __init__(self, size: int = READ_SIZE) -> None:
        self._buf = bytearray(size)
        self._view = memoryview(self._buf)

    def read(self, fd: int) -> bytes:
        """A chunk, or b"" at EOF; raises what os.read raises."""
        n = os.readv(fd, (self._buf,))
        return self._view[:n].tobytes()


_reader = ChunkReader()


def _read(fd: int) -> bytes | None:
    """A chunk, b"" at EOF, None if nothing is there after all (a non-blocking fd we share)."""
    try:
        return _reader.read(fd)
    except BlockingIOError:
        return None
    except OSError as e:
        if e.errno in (errno.EIO, errno.EBADF, errno.ECONNRESET):
            return b""
        raise


