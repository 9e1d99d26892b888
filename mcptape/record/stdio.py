"""rec: a transparent stdio proxy between an MCP client and a server that records a tape.

Owns the byte path of `mcptape rec` and the recorder process behind it. Leaves the tape's
bytes to tape/format.py, what an event means to tape/events.py, spawning and the shutdown
ladder to transports/stdio.py, scrubbing and verifying to publish/outlet.py and redact/, and HTTP recording
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
  exit event + note `server_exited_mid_session` + footer; exit 3 (docs/design.md: crashed).
- SIGINT / SIGTERM / SIGHUP to rec: the server is shut down the same way; note
  `interrupted` + footer; exit 130 / 143 / 129. Not after the client closed our stdin (the
  TypeScript SDK's close() sends SIGTERM 2 s later): that session ended as the client chose,
  so it is the first ending, the signal only sends the server SIGTERM at once.
- rec itself is SIGKILLed: the writer sees EOF on the tee without an end record, writes
  the events it has, then a note `recorder_killed`, and NO footer: a footer means a clean end,
  so `Tape.complete` is False and the tape reads fine up to the last complete event.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcptape.errors import EXIT_COULD_NOT_RUN, EXIT_SECRET, McptapeError, TapeError
from mcptape.publish.outlet import Outlet
from mcptape.publish.telemetry import TapeTrace
from mcptape.record.relay import PIPE_SIZE, Relay
from mcptape.record.writer import run_writer
from mcptape.redact.policy import argv_secrets
from mcptape.redact.redactor import make_redactor
from mcptape.tape.format import TapeWriter, serialize
from mcptape.transports.stdio import ServerProcess

# The writer may need a while for a big backlog; past this we stop waiting for it.
WRITER_WAIT = 120.0

REDACTED = "<redacted>"


def strip_command_secrets(command: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The command with secret values replaced, and the values found (source name -> value).

    What is secret is redact/policy.py's rule (`argv_secrets`: `--token=X`, `--api-key X`, `API_KEY=X`,
    URL passwords and secret query parameters, token-shaped arguments; never `--author Alice`).
    The values are handed to the redactor so they are scrubbed from the traffic as well.
    """
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


# --------------------------------------------------------------------------------------------
# CLI entry


def record(
    command: Sequence[str],
    out: Path,
    header: dict[str, Any],
    *,
    secrets: Mapping[str, str] | None = None,
    say: Callable[[str], None],
    otel: TapeTrace | None = None,
) -> int:
    """Spawn `command`, relay stdio both ways, record to `out`. Returns rec's exit code.

    `secrets` are the known values the redactor scrubs (the command line's, the environment's);
    `say` is where rec speaks to a person (its stderr: stdout is the wire).
    """
    # The header is scrubbed and verified here, before the session starts, so a leak there fails
    # fast with nothing written. The server starts first: building the redactor (~20-60 ms of
    # imports and compiling) overlaps its start-up; only a server that answers faster than that
    # sees its first round trip wait (measured: median +27 ms to the first answer, load 5, 2 CPUs).
    server = ServerProcess(command)
    try:
        outlet = Outlet(make_redactor(secrets))
        with outlet.redactor.rules_deferred():  # before the fork: see redact/rules.py
            header = scrub_header(outlet, header, f"{out}:1")
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
        run_writer(tee_r, writer, server, outlet, str(out), header, otel)
    os.close(tee_r)
    writer.abandon()  # the child owns the tape now; this closes only our copy of the file
    say(f"mcptape rec: recording {' '.join(header['server']['command'])} -> {out}")

    relay = Relay(server, tee_w, say)
    code = relay.run()
    writer_code = _wait_child(pid, say)
    if code == 0 and writer_code == EXIT_SECRET:
        return EXIT_SECRET
    if code == 0 and writer_code != 0:
        return EXIT_COULD_NOT_RUN
    return code


def scrub_header(outlet: Outlet, header: dict[str, Any], where: str) -> dict[str, Any]:
    """The header as it may be written: scrubbed (home paths, secrets in the command) and verified.

    Raises SecretLeak if anything survives; the caller then writes no tape at all.
    """
    clean: dict[str, Any] = outlet.redactor.redact_obj(header)
    outlet.verified(serialize(clean), where)
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


def _wait_child(pid: int, say: Callable[[str], None]) -> int:
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
            say(f"mcptape rec: the tape writer is still busy after {WRITER_WAIT:g}s; it finishes in the background")
            return EXIT_COULD_NOT_RUN
        time.sleep(0.002)


