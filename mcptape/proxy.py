"""rec: a transparent stdio proxy between an MCP client and a server that records a tape.

Owns the byte path of `mcptape rec` and the recorder process behind it. Leaves the tape's
bytes to tape/format.py, what an event means to tape/events.py, spawning and the shutdown
ladder to transports/stdio.py, scrubbing secrets to redact.py (if present) and HTTP recording
to http_proxy.py.

Two processes, so recording can never slow or block the wire:

    client ──stdin──▶ ┌────────────────────┐ ──stdin──▶ server
    client ◀─stdout── │ relay (this proc)  │ ◀─stdout── server
                      │ poll loop, readv   │ ◀─stderr── server
                      └─────────┬──────────┘
                                │ tee socket pair (non-blocking; overflow waits in memory)
                      ┌─────────▼──────────┐
    stderr ◀───────── │ writer (forked)    │  lines -> events -> redact -> TapeWriter
       (scrubbed lines, from a thread)     │  stderr lines -> redact -> our fd 2
                      └────────────────────┘

The relay moves every stdin/stdout chunk unchanged the moment it arrives and tees a copy,
framed as (direction, length, bytes), into a socket to the writer. Nothing on the relay parses
JSON or touches the tape: a 20 MB line is parsed in the writer, which holds its own GIL.

The server's stderr is not the MCP wire, and rec's stderr is often a public CI log, so it is
not relayed raw: the relay only tees it, and the writer shows each line *after* redaction (the
same scrubbed text the tape gets). See TapeRecorder.stderr_line for the trade-off.

The tape header (server command, ...) goes through the same redactor before anything is
written; a secret surviving there means no tape at all and exit 4 (SecretLeak).

Endings (the tape always says which one happened):
- the client closes our stdin: the server's stdin is closed, then SIGTERM, then SIGKILL
  (while still relaying what it writes); exit event + footer; exit 0.
- the server dies or closes its stdout first: our stdout is closed so the client sees EOF;
  exit event + note `server_exited_mid_session` + footer; exit 3 (DESIGN.md: crashed).
- SIGINT / SIGTERM / SIGHUP to rec: the server is shut down the same way; note
  `interrupted` + footer; exit 130 / 143 / 129.
- rec itself is SIGKILLed: the writer sees EOF on the tee without an end record, writes
  the events it has, then a note `recorder_killed`, and NO footer: a footer means a clean end,
  so `Tape.complete` is False and the tape reads fine up to the last complete event.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import json
import os
import re
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcptape.errors import EXIT_COULD_NOT_RUN, EXIT_SECRET, McptapeError, SecretLeak, TapeError
from mcptape.logsafe import safe_log
from mcptape.tape.events import (
    C2S,
    S2C,
    EventBuilder,
    exit_event,
    note_detail,
    note_event,
    stderr_event,
)
from mcptape.tape.format import TAPE_SUFFIX, Event, TapeWriter, make_header, serialize
from mcptape.transports.stdio import ServerProcess

if TYPE_CHECKING:
    from mcptape.redact import Redactor

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

# Shutdown ladder after the server's stdin is closed (same steps as ServerProcess.shutdown,
# driven from the poll loop so the server's last words are still relayed).
GRACE = 2.0
TERM_GRACE = 2.0
KILL_GRACE = 3.0
# After the server process is gone, how long its pipes may stay open (a grandchild holding them).
DRAIN_AFTER_EXIT = 1.0
# The writer may need a while for a big backlog; past this we stop waiting for it.
WRITER_WAIT = 120.0
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

EXIT_SIGNALS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}

# Tee frame: tag, payload length, payload.
TAG_C2S = 1
TAG_S2C = 2
TAG_ERR = 3
TAG_CTL = 4
FRAME = struct.Struct("<BI")
_TAG_DIR = {TAG_C2S: C2S, TAG_S2C: S2C}

REDACTED = "<redacted>"


# --------------------------------------------------------------------------------------------
# pure parts


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


def strip_command_secrets(command: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The command with secret values replaced, and the values found (source name -> value).

    What is secret is redact.py's rule (`argv_secrets`: `--token=X`, `--api-key X`, `API_KEY=X`,
    URL passwords and secret query parameters, token-shaped arguments; never `--author Alice`).
    The values are handed to the redactor so they are scrubbed from the traffic as well. Without
    mcptape.redact (the benchmark's raw mode) nothing is redacted, so nothing is stripped either.
    """
    try:
        from mcptape.redact import argv_secrets
    except ImportError:
        return list(command), {}
    return argv_secrets(command, REDACTED)


_LAUNCHERS = re.compile(
    r"^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|npx|uvx|uv|pipx|env|sh|bash|zsh|ruby|java|docker|podman|run)$"
)
_GENERIC_FILES = {"index", "main", "server", "__main__", "cli", "app"}
_BUILD_DIRS = {"dist", "build", "lib", "src", "bin", "out"}


def default_name(command: Sequence[str]) -> str:
    """A session name from a server command: the program, or the script a launcher runs.

    `python calc_server.py` -> calc_server; `python -m mcp_server_time` -> mcp_server_time;
    `node .../server-everything/dist/index.js stdio` -> server-everything.
    """
    args = list(command)
    chosen: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        base = os.path.basename(arg)
        if arg == "-m" and i + 1 < len(args):
            chosen = args[i + 1]
            break
        if arg.startswith("-") or "=" in arg or (i == 0 and _LAUNCHERS.match(base) and len(args) > 1):
            i += 1
            continue
        if _LAUNCHERS.match(base) and i + 1 < len(args):
            i += 1
            continue
        path = Path(arg)
        stem = path.name
        for ext in (".py", ".js", ".mjs", ".cjs", ".ts", ".sh", ".exe"):
            if stem.endswith(ext):
                stem = stem[: -len(ext)]
                break
        parent = path.parent
        while stem in _GENERIC_FILES or stem in _BUILD_DIRS:
            if parent.name in ("", ".", ".."):
                break
            stem, parent = parent.name, parent.parent
        chosen = stem
        break
    if not chosen:
        chosen = os.path.basename(args[0]) if args else "session"
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", chosen).strip(".-")
    return name or "session"


def _env_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """The secrets of the environment the server inherits, by redact.py's rule (`env_secrets`):
    GITHUB_TOKEN's value is one, AUTHOR_NAME's and GIT_AUTHOR_EMAIL's are not."""
    try:
        from mcptape.redact import env_secrets
    except ImportError:
        return {}
    return env_secrets(env)


def _warn_own_text_secrets(secrets: Mapping[str, str]) -> None:
    """Say which secrets cannot be scrubbed: their values are mcptape's own text (a JSON key, a
    method name), which the redactor never rewrites (redact.own_text_secrets). Never the values."""
    try:
        from mcptape.redact import own_text_secrets
    except ImportError:
        return
    for source in own_text_secrets(secrets):
        print(
            f"mcptape rec: {source}: its value is also a word of MCP or of the tape format, so it is "
            "not scrubbed from the tape; give it a real secret value if it is one",
            file=sys.stderr,
        )


# --------------------------------------------------------------------------------------------
# CLI entry


def run_rec(args: argparse.Namespace) -> int:
    """`mcptape rec [--out TAPE] [--name NAME] -- <server command...>`; returns the exit code."""
    if getattr(args, "listen", None) or getattr(args, "upstream", None):
        from mcptape.http_proxy import run_http_rec  # type: ignore[import-not-found,unused-ignore]

        return int(run_http_rec(args))
    command = list(args.server or [])
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise McptapeError(
            "mcptape rec: no server command given",
            hint="mcptape rec [--out TAPE] [--name NAME] -- python server.py",
        )
    name = args.name or default_name(command)
    out = Path(args.out) if args.out else Path("tapes") / f"{name}{TAPE_SUFFIX}"
    clean_command, secrets = strip_command_secrets(command)
    secrets.update(_env_secrets(os.environ))
    _warn_own_text_secrets(secrets)
    header = make_header(name, transport="stdio", server={"command": clean_command})
    return record(command, out, header, secrets=secrets)


def record(
    command: Sequence[str],
    out: Path,
    header: dict[str, Any],
    *,
    secrets: Mapping[str, str] | None = None,
) -> int:
    """Spawn `command`, relay stdio both ways, record to `out`. Returns rec's exit code."""
    # The header is scrubbed and verified here, before the session starts, so a leak there fails
    # fast with nothing written. The server starts first: building the redactor (~20-60 ms of
    # imports and compiling) overlaps its start-up; only a server that answers faster than that
    # sees its first round trip wait (measured: median +27 ms to the first answer, load 5, 2 CPUs).
    server = ServerProcess(command)
    try:
        redactor = _make_redactor(dict(secrets or {}))
        header = scrub_header(redactor, header, f"{out}:1")
        try:
            writer = TapeWriter(out, header)
        except OSError as e:
            raise TapeError(
                f"{out}: cannot write the tape: {e.strerror or e}",
                hint="choose another path with --out, or check the directory's permissions",
            ) from e
    except McptapeError:
        # Nothing was written (a header that leaks is never written); the server must not linger.
        server.shutdown(grace=0.5, term_grace=1.0)
        raise
    for f in (server.popen.stdout, server.popen.stdin):
        if f is not None:
            _grow_pipe(f.fileno())

    tee_r, tee_w = _tee_channel()
    # Fork before any thread exists: the child is a plain copy of a single-threaded process
    # (it inherits the redactor built above, so header and events share its placeholders).
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, covered by the integration tests
        os.close(tee_w)
        _writer_child(tee_r, writer, server, redactor, str(out))
    os.close(tee_r)
    writer.abandon()  # the child owns the tape now; this closes only our copy of the file
    print(
        safe_log(f"mcptape rec: recording {' '.join(header['server']['command'])} -> {out}"),
        file=sys.stderr,
        flush=True,
    )

    relay = _Relay(server, tee_w)
    code = relay.run()
    writer_code = _wait_child(pid)
    if code == 0 and writer_code == EXIT_SECRET:
        return EXIT_SECRET
    if code == 0 and writer_code != 0:
        return EXIT_COULD_NOT_RUN
    return code


def scrub_header(redactor: Redactor | None, header: dict[str, Any], where: str) -> dict[str, Any]:
    """The header as it may be written: scrubbed (home paths, secrets in the command) and verified.

    Raises SecretLeak if anything survives; the caller then writes no tape at all.
    """
    if redactor is None:
        return header
    clean: dict[str, Any] = redactor.redact_obj(header)
    redactor.verify(serialize(clean), where)
    return clean


def _tee_channel() -> tuple[int, int]:
    """The (read, write) ends the relay tees into and the writer reads from: a Unix socket pair.

    Not a pipe: a pipe has one lock that the reader holds while it copies data out, so a relay
    writing to it waits whenever the writer, the lowest-priority process here, was preempted
    mid-read, until that process is scheduled again: a priority inversion that can cost the
    wire milliseconds on a busy box. A stream socket's sender and receiver do not share such a
    lock. Frames sent before the relay dies stay readable, as with a pipe.
    """
    relay_end, writer_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(OSError):  # the kernel caps it at net.core.wmem_max; fine
        relay_end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, PIPE_SIZE)
    return writer_end.detach(), relay_end.detach()


def _grow_pipe(fd: int) -> None:
    """Enlarge a pipe so big messages cross in few syscalls; the kernel may refuse (fine)."""
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)


def _wait_child(pid: int) -> int:
    """The writer's exit code once it has written everything; it may take a while on a backlog."""
    deadline = time.monotonic() + WRITER_WAIT
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return EXIT_COULD_NOT_RUN
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= deadline:
            print(
                f"mcptape rec: the tape writer is still busy after {WRITER_WAIT:g}s; it finishes in the background",
                file=sys.stderr,
            )
            return EXIT_COULD_NOT_RUN
        time.sleep(0.002)


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

    __slots__ = ("fd", "pending", "pending_bytes", "partial", "broken", "overflowed", "err_dropped")

    def __init__(self, fd: int) -> None:
        self.fd = fd
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
        head = FRAME.pack(tag, len(data))
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
        print(
            f"mcptape rec: the tape writer fell {TEE_BACKLOG_MAX >> 20} MiB behind; recording stopped, still relaying",
            file=sys.stderr,
        )
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
        if not self.broken:
            print(
                "mcptape rec: the tape writer died; recording stopped and the server's stderr is "
                "no longer shown, still relaying",
                file=sys.stderr,
            )
        self.broken = True
        self.pending.clear()
        self.pending_bytes = 0


def _write_all(fd: int, data: bytes) -> None:
    n = os.write(fd, data)
    if n != len(data):
        view = memoryview(data)[n:]
        while view:
            view = view[os.write(fd, view) :]


class _Relay:
    """The single-threaded poll loop that moves bytes and drives the server's shutdown."""

    def __init__(self, server: ServerProcess, tee_fd: int) -> None:
        self.server = server
        popen = server.popen
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        self.srv_in = popen.stdin.fileno()
        self.srv_out = popen.stdout.fileno()
        self.srv_err = popen.stderr.fileno()
        os.set_blocking(self.srv_in, False)
        self.tee = _Tee(tee_fd)
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
            returncode = self.server.shutdown(grace=0.5, term_grace=TERM_GRACE)
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
        srv_out, srv_err, tee = self.srv_out, self.srv_err, self.tee
        poll = self.poller.poll
        # Poll masks change only when state does; the hot path (a chunk read and forwarded)
        # leaves them alone unless something is left pending, so an idle round costs nothing.
        dirty = True
        while self.srv_out_open or self.srv_err_open:
            if self.signal_count:
                if self.reason != "interrupted":
                    self.reason = "interrupted"
                    self.stdin_open = False
                    self._begin_closing(drop_pending=True)
                if self.signal_count > 1 and self.closing_at is not None:
                    # A second Ctrl-C: no more patience, straight down the ladder to SIGKILL.
                    self.closing_at = min(self.closing_at, time.monotonic() - GRACE - TERM_GRACE)
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
                        if self.stdout_open:
                            try:
                                _write_all(1, data)
                            except OSError:
                                # The client stopped reading our stdout: it is gone.
                                self._close_stdout()
                                self._client_gone()
                                dirty = True
                        tee.send(TAG_S2C, data)
                    elif data is not None:
                        self.srv_out_open = False
                        self._server_stdout_closed()
                        dirty = True
                elif fd == 0:
                    data = _read(0)
                    if data:
                        self._to_server(data)
                        tee.send(TAG_C2S, data)
                    elif data is not None:
                        self.stdin_open = False
                        self._client_gone()
                        dirty = True
                else:
                    dirty = True
                    if fd == srv_err:
                        # Only teed: the writer shows it, scrubbed (see TapeRecorder.stderr_line).
                        data = _read(fd)
                        if data:
                            tee.send(TAG_ERR, data)
                        elif data is not None:
                            self.srv_err_open = False
                    elif fd == self.srv_in:
                        self._flush_c2s()
                    elif fd == tee.fd:
                        tee.flush()
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
            steps = (GRACE, GRACE + TERM_GRACE, GRACE + TERM_GRACE + KILL_GRACE)
            while self.ladder < len(steps) and now >= self.closing_at + steps[self.ladder]:
                self._escalate(self.ladder)
                self.ladder += 1
            deadlines.append(self.closing_at + steps[self.ladder] if self.ladder < len(steps) else now)
        if not deadlines:
            return None
        left = min(deadlines) - now
        return 0 if left <= 0 else max(1, int(left * 1000) + 1)

    def _escalate(self, step: int) -> None:
        if step == 0:
            self._signal_group(signal.SIGTERM)
        elif step == 1:
            self._signal_group(signal.SIGKILL)
        # step 2: give up waiting for the pipes (a grandchild may hold them); the loop ends.

    def _signal_group(self, sig: signal.Signals) -> None:
        if self.server.popen.poll() is not None:
            return
        try:
            os.killpg(self.server.pid, sig)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                self.server.popen.send_signal(sig)

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


# --------------------------------------------------------------------------------------------
# the writer child


def _make_redactor(secrets: dict[str, str]) -> Redactor | None:
    """The single choke point between the server and anything rec writes (tape, header, stderr).

    It knows the secret values stripped from the command line and the environment, so they are
    scrubbed from the traffic too. None without mcptape.redact (the benchmark's raw mode): then
    events are only serialized and stderr lines shown as they came.
    """
    try:
        from mcptape.redact import Redactor
    except ImportError:
        return None
    return Redactor(known=secrets)


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


def _writer_child(
    tee_r: int, writer: TapeWriter, server: ServerProcess, redactor: Redactor | None, where: str
) -> None:
    """Body of the forked writer; never returns (os._exit), whatever happens."""
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
        code = TapeRecorder(writer, where=where, redactor=redactor, stderr_fd=stderr_fd).run(tee_r)
    except BaseException:  # noqa: BLE001 - a forked child must reach os._exit, never the parent's stack
        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stderr.flush()
        os._exit(code)


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

    With `stderr_fd` it also shows the server's stderr there, line by line, after redaction.
    """

    def __init__(
        self,
        writer: TapeWriter,
        secrets: dict[str, str] | None = None,
        where: str = "tape",
        *,
        redactor: Redactor | None = None,
        stderr_fd: int | None = None,
    ) -> None:
        self.writer = writer
        self.where = where
        self.builder = EventBuilder()
        self.lines = {TAG_C2S: LineAssembler(), TAG_S2C: LineAssembler(), TAG_ERR: LineAssembler()}
        self.redactor = redactor if redactor is not None else _make_redactor(secrets or {})
        self.relay = _StderrRelay(stderr_fd) if stderr_fd is not None else None
        self.failed: str | None = None
        self.leaked = False
        self.end: dict[str, Any] | None = None
        self.overflowed = False

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
                tag, n = FRAME.unpack_from(buf, pos)
                start = pos + FRAME.size
                if size - start < n:
                    break
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
        self.emit(*self.builder.line_and_text(_TAG_DIR[tag], line))
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
        if self.redactor is not None:
            event = self.redactor.redact_event(event)
        try:
            data = self._verified(event, self._where_next())
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
            if self.redactor is not None:
                data = self.redactor.line_bytes(event, self._where_next(), text)
            elif text is not None:
                data = (text + "\n").encode("utf-8")
            else:
                data = serialize(event)
        except SecretLeak as e:
            # Fail closed: this event is not written (the message names place and kind, never
            # the value); the tape says something was withheld and rec exits 4.
            self.leaked = True
            self._say(f"mcptape rec: {e}; the event was not written")
            data = serialize(note_event("event_withheld", {"kind": event.get("kind")}))
        self._write(data)

    def _where_next(self) -> str:
        return f"{self.where}:{self.writer.count + 2}"  # the line the next event will land on

    def _verified(self, event: Event, where: str) -> bytes:
        """A scrubbed event serialized and verified (stderr lines: their scrubbed text is shown too)."""
        data = serialize(event)
        if self.redactor is not None:
            self.redactor.verify(data, where)
        return data

    def _write(self, data: bytes) -> None:
        if not self.failed:
            self.writer.write_line(data, flush=False)  # held in memory until _flush

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
        else:
            print(safe_log(message), file=sys.stderr, flush=True)  # it may quote the server

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
            return
        for tag in (TAG_C2S, TAG_S2C, TAG_ERR):
            rest = self.lines[tag].finish()
            if rest is not None:
                self.line(tag, rest)
        unanswered = [
            {"dir": d, "id": json.loads(k), "method": m} for d, k, m in self.builder.open_requests()
        ]
        if unanswered:
            self.emit(note_event("unanswered", unanswered))
        returncode = end.get("returncode")
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
            return
        try:
            self.writer.close()
        except OSError as e:
            self.failed = f"{self.where}: cannot finish the tape: {e.strerror or e}"
        status = "server exited " + (
            f"{returncode}"
            if returncode is None or returncode >= 0
            else f"by {exit_event(returncode).get('signal')}"
        )
        self._summary(status)

    def _summary(self, status: str) -> None:
        self._say(f"mcptape rec: {self.writer.count} events -> {self.writer.path} ({status})")
