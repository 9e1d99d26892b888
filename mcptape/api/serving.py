"""`mcptape.replay` and `mcptape.record`: a tape served, or a session recorded, where a client connects.

Owns the library's Endpoint (what a client connects to: a stdio command, a URL, or an in-memory
ClientSession), what a record mode does with a tape (modes.py) and turning how a replay or a
recording ended into values and exceptions. What is served and how is play's: the engine comes
from commands/play.py's `served_engine` and `lab_options` (the same checks, so a tape that cannot
be replayed fails before the block starts), recording is rec's, a fork is `mcptape fork`'s
(commands/fork.py's `write_fork`). Per transport:

* stdio: the client spawns the process, so the Endpoint's command is `mcptape play` (or `rec`)
  run by child.py, which leaves its exit code, its stderr and play's report in a scratch
  directory this module reads when the block ends;
* http: play's HTTP server (replay/http.py) or rec's recording proxy (record/http.py) in a thread
  of this process, on a port the OS picks, stopped when the block ends;
* memory: the engine answers the official SDK's ClientSession through memory streams (sdk_streams.py),
  no process at all.

Nothing here prints or exits: a command's stderr line is a warning (notices.py), a failure one
of errors.py's exceptions, raised when the block ends without an exception of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack
from urllib.parse import urlsplit

import mcptape.environment as environment
from mcptape.api import child
from mcptape.api.endpoint import Endpoint, PlayReport
from mcptape.api.modes import Action, RecordMode
from mcptape.api.notices import tell, warn
from mcptape.api.options import (
    LAB_OPTIONS,
    PlayOptions,
    Transport,
    check_options,
    forked,
    live_server,
    play_argv,
    play_options,
    record_mode_of,
    transport_of,
    words,
)
from mcptape.commands import play as play_command
from mcptape.commands import rec as rec_command
from mcptape.errors import (
    EXIT_OK,
    EXIT_OUTPUT_DRIFT,
    EXIT_SECRET,
    ConfigError,
    McptapeError,
    ReplayMiss,
    SecretLeak,
    ServerError,
    TapeError,
)
from mcptape.replay.lab import LabEngine
from mcptape.tape.format import TAPE_SUFFIX
from mcptape.tape.seal import check as check_seal

if TYPE_CHECKING:
    from mcp import ClientSession

    from mcptape.replay.outcome import ReplayReport

# How long the end of a block waits for a stdio child the client started to finish (writing its
# tape or report), and for an HTTP server thread to start or stop.
CHILD_WAIT = 30.0
THREAD_WAIT = 30.0
# Exit codes of a rec stopped by a signal (129 SIGHUP, 130 SIGINT, 143 SIGTERM): its tape still ends
# in a footer. A client closing its stdio transport may end rec so (the SDK terminates after 2 s).
_INTERRUPTED = (129, 130, 143)


@contextlib.contextmanager
def replay(
    tape: str | os.PathLike[str],
    *,
    transport: Transport | None = None,
    record_mode: RecordMode | str = RecordMode.NONE,
    allow_record_in_ci: bool = False,
    **options: Unpack[PlayOptions],
) -> Iterator[Endpoint]:
    """Serve `tape` as an MCP server while the block runs; the Endpoint says how to connect.

    `transport` is "stdio" (the default; "http" when `url` names the live server), "http" or
    "memory" (no process: `endpoint.client_session()`). `options` are play's (PlayOptions): the
    agent lab's `pace`, `faults`, `fork`, `live_tools`, and `fallback` with the live `server` or `url`.
    `record_mode` (RecordMode) may record instead, as the pytest plugin's modes do; recording under
    CI=true is refused unless `allow_record_in_ci`. A tape that cannot be replayed raises (TapeError,
    ReplayError, ConfigError) before the block starts; requests the tape could not answer raise
    ReplayMiss when the block ends without an exception of its own.

    >>> import asyncio
    >>> from mcp import ClientSession
    >>> from mcp.client.stdio import stdio_client
    >>> async def add(endpoint: mcptape.Endpoint) -> str:  # any MCP client: here the official SDK's
    ...     async with stdio_client(endpoint.stdio_parameters()) as (read, write):
    ...         async with ClientSession(read, write) as session:
    ...             await session.initialize()
    ...             result = await session.call_tool("add", {"a": 2, "b": 3})
    ...     return result.content[0].text
    >>> with mcptape.replay("tapes/arithmetic.tape.jsonl") as endpoint:
    ...     asyncio.run(add(endpoint))
    '5'
    >>> endpoint.reports[0].clean, endpoint.reports[0].unused[0]
    (True, 'tools/call divide {"a":1,"b":0} (tape line 9)')
    """
    path = Path(tape)
    mode = record_mode_of(record_mode)
    check_options(options)
    server, url = live_server(options)
    chosen = transport_of(transport, url)
    action = mode.action(path.exists())
    if action == "play" and options.get("fallback"):
        action = "fallback"
    if action == "record":
        if environment.in_ci() and not allow_record_in_ci:
            raise McptapeError(f"CI={environment.get('CI')}: refusing to record {path} (record mode {mode.value}); "
                               "in CI tapes are played, not recorded",
                               hint="commit the tape, or pass allow_record_in_ci=True if recording here is meant")
        if options.get("fork") is not None:
            raise ConfigError(f"fork= plays a fork of a recorded tape; record mode {mode.value} would record {path} "
                              "instead", hint="record it first, then play the fork with record_mode='none'")
        unapplied = [name for name in LAB_OPTIONS if options.get(name)]
        if unapplied:
            warn(f"{', '.join(unapplied)}: not applied: record mode {mode.value} records {path} this time")
        # rec never writes over a file (commands/grammar.py); record mode 'all' asks for exactly that.
        path.unlink(missing_ok=True)
        with _recording(path, chosen, server, url, name=None) as endpoint:
            yield endpoint
        return
    if not path.exists():
        raise TapeError(f"{path}: no tape (record mode {mode.value} plays only)",
                        hint="record it: mcptape.replay(tape, record_mode='once', server=[...]) or mcptape.record(tape, ...)")
    if action == "fallback" and server is None and url is None:
        raise ConfigError("fallback needs the live server: server=[...] or url=...")
    with _playing(path, action, chosen, options, server, url) as endpoint:
        yield endpoint


@contextlib.contextmanager
def record(
    tape: str | os.PathLike[str],
    command: Sequence[str] | str,
    *,
    name: str | None = None,
) -> Iterator[Endpoint]:
    """Record the session of the client that connects to the Endpoint, as `mcptape rec` does, into `tape`.

    `command` is the live server: its command as a list of words (the client connects over stdio,
    through rec) or its streamable HTTP URL (the client connects to `endpoint.url`, a recording
    proxy). The tape is redacted and verified as rec's are (a secret that survives: SecretLeak,
    nothing written) and sealed; `name` is the session's name in its header (the file's name
    by default). When the block ends the tape is written, or the reason it is not is raised.

    >>> import asyncio, sys
    >>> async def add(endpoint: mcptape.Endpoint) -> str:
    ...     async with endpoint.client_session() as session:
    ...         await session.initialize()
    ...         return (await session.call_tool("add", {"a": 2, "b": 3})).content[0].text
    >>> with mcptape.record("calc.tape.jsonl", [sys.executable, "../servers/calc_server.py"]) as endpoint:
    ...     asyncio.run(add(endpoint))
    '5'
    >>> with mcptape.replay("calc.tape.jsonl", transport="memory") as endpoint:  # offline from now on
    ...     asyncio.run(add(endpoint))
    '5'
    """
    path = Path(tape)
    if isinstance(command, str):
        if not command.startswith(("http://", "https://")):
            raise ConfigError(f"record(tape, {command!r}): a command is a list of words, a URL starts with http(s)://",
                              hint='mcptape.record(tape, ["python", "server.py"]) or mcptape.record(tape, "http://127.0.0.1:3001/mcp")')
        with _recording(path, "http", None, command, name=name) as endpoint:
            yield endpoint
    else:
        with _recording(path, "stdio", words(command, "command"), None, name=name) as endpoint:
            yield endpoint


@contextlib.asynccontextmanager
async def connect(
    tape: str | os.PathLike[str],
    *,
    session_options: dict[str, Any] | None = None,
    **options: Unpack[PlayOptions],
) -> AsyncIterator[ClientSession]:
    """The official SDK's ClientSession, connected to `tape` in this process: no subprocess, no socket.

    The session is not yet initialized (call `initialize()` as with any transport);
    `session_options` go to ClientSession (client_info, sampling_callback, ...), `options` are
    `mcptape.replay`'s (PlayOptions: pace, faults, fork, live_tools, fallback, ...). Requests the
    tape could not answer raise ReplayMiss when the block ends without an exception of its own.

    >>> import asyncio
    >>> async def echo() -> str:
    ...     async with mcptape.connect("tapes/arithmetic.tape.jsonl") as session:
    ...         await session.initialize()
    ...         result = await session.call_tool("echo", {"text": "hello, tape"})
    ...     return result.content[0].text
    >>> asyncio.run(echo())
    'hello, tape'
    """
    with replay(tape, transport="memory", **options) as endpoint:
        async with endpoint.client_session(**(session_options or {})) as session:
            yield session


# --- replaying -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _playing(path: Path, action: Action, transport: Transport, options: PlayOptions,
             server: list[str] | None, url: str | None) -> Iterator[Endpoint]:
    with tempfile.TemporaryDirectory(prefix="mcptape-") as scratch:
        where = Path(scratch)
        played = forked(path, options["fork"], where) if options.get("fork") is not None else path
        play = play_options(played, options, fallback=action == "fallback", server=server, url=url)
        lab = play_command.lab_options(play, tell)
        first = play_command.served_engine(play, lab, warn, memory=contextlib.nullcontext(), tell=tell)
        if not first.tape.complete:
            warn(f"{path} was cut short (no footer); replaying the {len(first.tape.events)} event(s) it holds")
        endpoint = Endpoint(path, action, transport)
        if transport == "stdio":
            endpoint.command, endpoint.args = sys.executable, ["-m", "mcptape.api.child", str(where),
                                                                *play_argv(play)]
            ended = yield from _block(endpoint, lambda: _stdio_play_ended(endpoint, where))
        elif transport == "http":
            with _http_thread(lambda stop, ready: _serve_http(first, stop, ready)) as (thread, url_base):
                endpoint.url = url_base
                ended = yield from _block(endpoint, lambda: _http_play_ended(endpoint, thread))
        else:
            endpoint.engine = first
            ended = yield from _block(endpoint, lambda: _ended(endpoint, *play_command.finish_sessions(endpoint.engines)))
        if ended is not None:
            raise ended


def _block(endpoint: Endpoint, end: Any) -> Any:
    """Yield `endpoint` to the caller's block; when it ends, `end()` says how the replay or recording
    ended (an exception to raise, or None). Raised only if the block itself raised nothing: the
    caller's own exception is the news, and is never masked by the one it probably caused."""
    try:
        yield endpoint
    except BaseException:
        with contextlib.suppress(Exception):  # the caller's exception goes on, whatever the end says
            end()
        raise
    return end()


def _ended(endpoint: Endpoint, reports: Sequence[ReplayReport], code: int) -> McptapeError | None:
    """The end of a replay served here (HTTP, memory): its reports kept, what went wrong as an exception."""
    endpoint.reports = [PlayReport.from_dict(report.to_dict()) for report in reports]
    return _verdict(endpoint, code, "")


def _verdict(endpoint: Endpoint, code: int | None, said: str) -> McptapeError | None:
    """The exception a replay's end raises (None: all went well): a secret in what went live, a
    live side that failed, or requests the tape could not answer."""
    if code == EXIT_SECRET:
        return SecretLeak(f"{endpoint.tape}: a secret survived redaction in what went live; nothing of it was "
                          f"appended{_said(said)}")
    if code is not None and code not in (EXIT_OK, EXIT_OUTPUT_DRIFT):  # play's 3: could not run (or a signal)
        return McptapeError(f"{endpoint.tape}: the replay could not finish{_said(said)}")
    problems = [line for report in endpoint.reports for line in report.problems()]
    if problems:
        return ReplayMiss(f"{len(problems)} request(s) the tape {endpoint.tape} could not answer:\n"
                          + "\n".join(f"  {line}" for line in problems), misses=problems,
                          hint="re-record the tape, or replay with fallback=True and the live server")
    return None


def _said(text: str) -> str:
    text = text.strip()
    return f": {text.splitlines()[-1]}" if text else ""


def _stdio_play_ended(endpoint: Endpoint, where: Path) -> McptapeError | None:
    statuses = _children(where)
    for pid in sorted(statuses):
        report = child.report_path(where, pid)
        if report.exists():
            sessions = json.loads(report.read_text(encoding="utf-8")).get("sessions", [])
            endpoint.reports += [PlayReport.from_dict(s) for s in sessions]
    codes = [code for code in statuses.values() if code is not None]
    worst = max(codes, default=None)
    killed = [pid for pid, code in statuses.items() if code is None]
    if killed and worst is None:
        return McptapeError(f"{endpoint.tape}: mcptape play ended without an exit status (killed?)"
                            f"{_said(_stderr(where, killed[0]))}")
    return _verdict(endpoint, worst, "".join(_stderr(where, pid) for pid in statuses))


def _children(where: Path) -> dict[int, int | None]:
    """The stdio children the client started (pid -> exit code, None if it has none), each waited
    for while it runs (CHILD_WAIT at most); what each said, logged."""
    deadline = time.monotonic() + CHILD_WAIT
    found: dict[int, int | None] = {}
    for status in sorted(where.glob("*.status.json")):
        pid = int(status.name.split(".", 1)[0])
        while True:
            code = json.loads(status.read_text(encoding="utf-8")).get("exit_code")
            if code is not None or not _alive(pid) or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        found[pid] = code
        for line in _stderr(where, pid).splitlines():
            tell(line)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stderr(where: Path, pid: int) -> str:
    try:
        return child.stderr_path(where, pid).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _serve_http(first: LabEngine, stop: threading.Event, ready: Any) -> Any:
    from mcptape.replay.http import serve_http  # http.server: HTTP replays only

    return serve_http(first, "127.0.0.1:0", on_ready=ready, stop=stop)


def _http_play_ended(endpoint: Endpoint, thread: _Thread) -> McptapeError | None:
    engines = thread.result()
    if not engines:
        return None
    return _ended(endpoint, *play_command.finish_sessions(engines))


# --- recording -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _recording(path: Path, transport: Transport, server: list[str] | None, url: str | None,
               name: str | None) -> Iterator[Endpoint]:
    name = name or path.name.removesuffix(TAPE_SUFFIX).removesuffix(".jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    endpoint = Endpoint(path, "record", transport)
    if transport == "memory":
        raise ConfigError("recording needs a process to record: transport 'stdio' (a server command) or 'http' (a URL)")
    if transport == "stdio":
        if not server:
            raise ConfigError(f"recording {path} over stdio needs the live server's command: server=[...]",
                              hint="or url=... with transport='http'")
        with tempfile.TemporaryDirectory(prefix="mcptape-") as scratch:
            where = Path(scratch)
            endpoint.command, endpoint.args = sys.executable, ["-m", "mcptape.api.child", str(where), "rec",
                                                                "--out", str(path.resolve()), "--name", name, "--", *server]
            ended = yield from _block(endpoint, lambda: _stdio_record_ended(endpoint, where))
    else:
        if not url:
            raise ConfigError(f"recording {path} over HTTP needs the live server's URL: url=...",
                              hint="or server=[...] with transport='stdio'")
        upstream, out, name = rec_command.http_plan(rec_command.Options(
            out=str(path), name=name, listen="127.0.0.1:0", upstream=url, server=()))
        with _http_thread(lambda stop, ready: _record_http(upstream, out, name, stop, ready)) as (thread, base):
            endpoint.url = base + (urlsplit(upstream).path or "/")
            ended = yield from _block(endpoint, lambda: _http_record_ended(endpoint, thread))
    if ended is not None:
        raise ended


def _record_http(upstream: str, out: Path, name: str, stop: threading.Event, ready: Any) -> int:
    from mcptape.record.http import record_http  # httpx: HTTP recordings only

    return record_http(upstream, "127.0.0.1:0", out, name, on_ready=ready, stop=stop, say=tell)


def _stdio_record_ended(endpoint: Endpoint, where: Path) -> McptapeError | None:
    statuses = _children(where)
    if not statuses:
        return McptapeError(f"{endpoint.tape}: no client connected to the recorder; nothing was recorded",
                            hint="connect a client to endpoint.stdio_parameters() (or endpoint.command and endpoint.args)")
    pid = max(statuses)  # a client that opened several sessions keeps the last (the tape is one session)
    code, said = statuses[pid], _stderr(where, pid)
    if code == EXIT_SECRET:
        return SecretLeak(f"{endpoint.tape}: a secret survived redaction; nothing was written{_said(said)}")
    if code is None:
        return McptapeError(f"{endpoint.tape}: mcptape rec ended without an exit status (killed?){_said(said)}")
    if code not in (EXIT_OK, *_INTERRUPTED):
        return ServerError(f"{endpoint.tape}: the recording did not complete (rec exit {code}){_said(said)}")
    return _sealed(endpoint.tape)


def _http_record_ended(endpoint: Endpoint, thread: _Thread) -> McptapeError | None:
    try:
        messages = thread.result()
    except McptapeError as e:
        return e
    if not messages:
        return McptapeError(f"{endpoint.tape}: no client connected to the recording proxy; nothing was recorded",
                            hint="connect a client to endpoint.url")
    return _sealed(endpoint.tape)


def _sealed(path: Path) -> McptapeError | None:
    """A recording that ended well has written a whole, sealed tape (tape/seal.py)."""
    try:
        state = check_seal(path.read_bytes()).state
    except OSError as e:
        return TapeError(f"{path}: the recording left no tape: {e.strerror or e}")
    if state != "sealed":
        return TapeError(f"{path}: the recording left a tape that is not sealed ({state})")
    return None


# --- threads of this process (HTTP) --------------------------------------------------------------


class _Thread:
    """A server of this process (play's HTTP server, rec's proxy) in a thread: serving until `stop`."""

    def __init__(self, run: Any) -> None:
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.url = ""
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(run,), name="mcptape-endpoint", daemon=True)

    def _run(self, run: Any) -> None:
        try:
            self._value = run(self.stop, self._on_ready)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread, raised there
            self._error = e
        finally:
            self.ready.set()

    def _on_ready(self, url: str) -> None:
        self.url = url
        self.ready.set()

    def start(self) -> str:
        self._thread.start()
        if not self.ready.wait(THREAD_WAIT) or not self.url:
            self.stop.set()
            self.result()
            raise ServerError("the endpoint did not start listening")
        return self.url

    def finish(self) -> None:
        self.stop.set()
        self._thread.join(THREAD_WAIT)

    def result(self) -> Any:
        self.finish()
        if self._error is not None:
            raise self._error
        return self._value


@contextlib.contextmanager
def _http_thread(run: Any) -> Iterator[tuple[_Thread, str]]:
    thread = _Thread(run)
    url = thread.start()
    try:
        yield thread, url
    finally:
        thread.finish()


__all__ = ["connect", "record", "replay"]
