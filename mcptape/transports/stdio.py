"""Stdio transport: spawn a server, frame newline-delimited messages, shut it down.

Knows nothing about MCP methods (see live/client.py). Two users: the scripted client reads whole
lines through StdioTransport; the recorder (record/) takes the raw pipes of ServerProcess
and moves bytes itself, because it must forward them unchanged and at once.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence

from mcptape.errors import ServerError, ServerTimeout

# What a server process may inherit besides the variables its config lists: enough to find
# interpreters and run, nothing that identifies the CI job or carries its credentials.
ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT", "PYTHONIOENCODING")

STDERR_TAIL_LINES = 40
# stderr is never compared; a tape keeps it for a reviewer, up to this much per session. A server
# that floods it (50 MB) made a 54 MB golden, a 54 MB view and a `show` of 45 s: past the bound it
# is counted (`stderr_left_out`), not kept, and read in pieces of at most this size.
STDERR_KEPT_BYTES = 64 * 1024


def minimal_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allowlisted part of our environment plus `extra` (the config's `env:`)."""
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.update(extra or {})
    return env


class ServerProcess:
    """A spawned server with raw pipes, in its own process group so we control its shutdown."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        self.command = list(command)
        try:
            self.popen = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                # Its own process group (shutdown signals the group), not its own session: on
                # Linux with autogroups a new session is a new scheduling group that competes
                # with ours as a whole, which cost rec millisecond stalls (see record/writer.py, _step_aside).
                process_group=0,
            )
        except OSError as e:
            raise ServerError(
                f"server failed to start: {' '.join(self.command)}: {e.strerror or e}",
                hint="check the command and that the program is installed and on PATH",
            ) from e

    @property
    def pid(self) -> int:
        return self.popen.pid

    def shutdown(self, grace: float = 2.0, term_grace: float = 2.0) -> int | None:
        """Close stdin and go down the shutdown ladder (`Ladder`), waiting; returns the returncode."""
        p = self.popen
        if p.stdin and not p.stdin.closed:
            with contextlib.suppress(OSError):
                p.stdin.close()
        waited = 0.0
        for at, sig in Ladder(grace, term_grace).rungs():
            try:
                return p.wait(at - waited)
            except subprocess.TimeoutExpired:
                waited = at
            if sig is not None:
                self.signal_group(sig)
        return p.poll()

    def signal_group(self, sig: signal.Signals) -> None:
        """Send `sig` to the server's process group (to the process alone if the group is gone), unless it exited."""
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(sig)


class Ladder:
    """The one shutdown ladder of a server process, once its stdin is closed: wait `grace`; SIGTERM
    its process group, wait `term_grace`; SIGKILL, wait `kill_grace`; then stop waiting.

    Node servers do not exit on stdin EOF while one of their own requests is pending, so the
    SIGTERM step is routine, not exceptional. ServerProcess.shutdown climbs it blocking; rec's
    relay (record/relay.py) climbs it from its poll loop, so the server's last words are relayed.
    """

    __slots__ = ("grace", "term_grace", "kill_grace")

    def __init__(self, grace: float = 2.0, term_grace: float = 2.0, kill_grace: float = 5.0) -> None:
        self.grace = grace
        self.term_grace = term_grace
        self.kill_grace = kill_grace

    def rungs(self) -> list[tuple[float, signal.Signals | None]]:
        """(seconds after stdin was closed, the signal sent then; None: stop waiting), in order."""
        term_at = self.grace
        kill_at = term_at + self.term_grace
        return [(term_at, signal.SIGTERM), (kill_at, signal.SIGKILL), (kill_at + self.kill_grace, None)]


class StdioTransport:
    """Line-level transport over a ServerProcess: send a message, receive a message, close.

    Reader threads drain stdout and stderr so a chatty server never blocks on a full pipe.
    stdout lines are queued whole (a 20 MB line is one readline, linear in its size).
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        self.server = ServerProcess(command, env=env, cwd=cwd)
        self._lines: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.stderr_lines: list[bytes] = []  # the first STDERR_KEPT_BYTES of it
        self.stderr_left_out = [0, 0]  # lines and bytes past the bound (live/client.py notes them)
        self.spawned = True
        self._stderr_kept = 0
        self._stderr_tail: collections.deque[bytes] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_lock = threading.Lock()
        self.returncode: int | None = None
        self._threads = [
            threading.Thread(target=self._read_stdout, name="stdio-out", daemon=True),
            threading.Thread(target=self._read_stderr, name="stdio-err", daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_stdout(self) -> None:
        out = self.server.popen.stdout
        assert out is not None
        reader = os.fdopen(out.fileno(), "rb", buffering=1 << 16, closefd=False)
        try:
            for line in reader:
                self._lines.put(line.rstrip(b"\n"))
        except (OSError, ValueError):
            pass
        finally:
            self._lines.put(None)

    def _read_stderr(self) -> None:
        err = self.server.popen.stderr
        assert err is not None
        reader = os.fdopen(err.fileno(), "rb", buffering=1 << 16, closefd=False)
        try:
            while line := reader.readline(STDERR_KEPT_BYTES):
                with self._stderr_lock:
                    self._stderr_tail.append(line)
                    if self._stderr_kept < STDERR_KEPT_BYTES:
                        self._stderr_kept += len(line)
                        self.stderr_lines.append(line)
                    else:
                        self.stderr_left_out[0] += line.endswith(b"\n")
                        self.stderr_left_out[1] += len(line)
        except (OSError, ValueError):
            pass

    def send(self, line: bytes) -> None:
        """Write one message (without its newline). A dead server raises ServerError."""
        stdin = self.server.popen.stdin
        assert stdin is not None
        try:
            stdin.write(line + b"\n")
        except (BrokenPipeError, OSError, ValueError) as e:
            raise ServerError(f"server closed its input (exited?): {self.stderr_tail() or 'no stderr'}") from e

    def receive(self, timeout: float | None = None) -> bytes | None:
        """The next stdout line, None at EOF; ServerTimeout if none arrives within `timeout`."""
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            raise ServerTimeout(f"no message from the server within {timeout:g}s") from None

    def stderr_tail(self, lines: int = 20) -> str:
        with self._stderr_lock:
            tail = list(self._stderr_tail)[-lines:]
        return b"".join(tail).decode("utf-8", "backslashreplace").rstrip()

    def close(self, grace: float = 2.0) -> int | None:
        """Shut the server down (close stdin, wait, SIGTERM, SIGKILL) and return its returncode."""
        self.returncode = self.server.shutdown(grace=grace)
        for t in self._threads:
            t.join(timeout=2.0)
        return self.returncode
