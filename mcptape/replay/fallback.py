"""`mcptape play TAPE --fallback -- <server command...>` (or `--fallback-url URL`): what the tape
cannot answer goes live, recorded.

Owns the live side of a fallback replay: starting the live server through the recorder (`mcptape
rec` in a child process, so the recording is redacted and verified exactly as `rec`'s, by rec's
own code), replaying the client's handshake to it, forwarding each request the tape misses and
bringing back its answer (with what the server sent before it), and at the end appending what
was recorded to the tape in one atomic write, through the outlet (publish/outlet.py: the appended lines
are checked again with the environment's and the command line's known secrets, as rec's are).
Which requests miss is
engine.py's; it calls `LiveFallback.forward` instead of answering a miss. An HTTP server
(`--fallback-url`) is reached through `mcptape rec --listen` in front of it, with the streamable
HTTP transport (transports/http.py, imported then: httpx).

The live server starts at the first miss, not before: a session the tape answers in full never
spawns it (replay never goes live unless a request needs it, docs/design.md principle 4). The
client's `initialize` was answered from the tape, so the live server gets the same request and
`notifications/initialized` first; that handshake is already on the tape and is not appended
again. Requests the live server sends while a forwarded call runs (sampling, roots) are refused
with -32601: they would need the client's answer, which play does not relay.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcptape.errors import EXIT_OK, EXIT_SECRET, McptapeError, SecretLeak, ServerError
from mcptape.jsonrpc import classify, dumps, id_key, loads
from mcptape.publish.outlet import Outlet
from mcptape.redact.policy import command_secrets
from mcptape.redact.redactor import make_redactor
from mcptape.tape.atomic import write_atomic
from mcptape.tape.events import C2S
from mcptape.tape.format import SESSIONS_FORMAT, Event, Tape, tape_bytes
from mcptape.tape.reader import read_tape
from mcptape.tape.seal import FOOTER_FIELDS

# The variable rec --listen reads its upstream URL from (`--upstream ${VAR}`): not its argv.
UPSTREAM_VARIABLE = "MCPTAPE_FALLBACK_UPSTREAM"

# How long a forwarded call may take before play answers it with an error instead.
FORWARD_TIMEOUT = 60.0
# Ids of the requests play itself sends the live server (the replayed handshake): a string no
# client uses, so the live answers cannot be confused with the client's.
_HANDSHAKE_ID = "mcptape-fallback-initialize"
_LIVE_ERROR = -32603


class LiveFallback:
    """The live server behind a replay, recorded by `mcptape rec` into a temporary tape."""

    def __init__(
        self, tape: str | os.PathLike[str], command: Sequence[str], say: Callable[[str], None], url: str | None = None,
        *, live_tools: bool = False,
    ) -> None:
        if not command and not url:
            raise McptapeError(
                "--fallback needs the live server's command after `--`",
                hint="mcptape play TAPE --fallback -- python server.py (or --fallback-url URL)",
            )
        self.tape = Path(tape)
        self.command = list(command)
        self.url = url
        self._http: Any = None  # the streamable HTTP transport to rec --listen, for --fallback-url
        self.say = say
        self.forwarded: list[str] = []  # the calls that went live, described
        self._proc: subprocess.Popen[bytes] | None = None
        self._readers: list[threading.Thread] = []  # the threads reading rec's pipes, joined before they close
        self._lines: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._dir: str | None = None
        self._handshake: list[dict[str, Any]] = []  # the client's initialize and initialized, as sent
        self._failed: str | None = None
        self.replayed_handshake = False  # the live server got the client's handshake from us
        # play --live-tools (replay/lab.py): the live side of named tools, not of misses. Its
        # recording is not appended: those calls go live on every run, so the tape keeps its own.
        self.live_tools = live_tools

    # --- what the engine tells us ------------------------------------------------------

    def saw(self, msg: dict[str, Any]) -> None:
        """A client message the tape answered: the handshake is kept to be replayed to the live server."""
        if self._proc is None:
            if msg.get("method") in ("initialize", "notifications/initialized"):
                self._handshake.append(msg)
        elif "id" not in msg:
            self._send(msg)  # a notification once live (initialized, cancelled, roots changed): the server should know

    def forward(self, msg: dict[str, Any], label: str) -> list[str]:
        """The live server's lines for client request `msg`: what it sent before the answer, then the answer."""
        self.forwarded.append(label)
        if self._failed is None and self._proc is None:
            self._start()
        if self._failed is not None:
            return [_error(msg["id"], f"mcptape play --fallback: {self._failed}")]
        self._send(msg)
        return self._until_answer(msg["id"])

    # --- the live side -----------------------------------------------------------------

    def _start(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="mcptape-fallback-")
        out = Path(self._dir) / "live.tape.jsonl"
        rec = [sys.executable, "-m", "mcptape", "rec", "--out", str(out), "--name", "fallback"]
        if self.url is not None:
            self.say("mcptape play: --fallback-url: the tape misses a call; recording the live server from here on")
            if not self._start_http(rec):
                return
        else:
            why = "--live-tools: a live tool is called" if self.live_tools else "--fallback: the tape misses a call"
            self.say(f"mcptape play: {why}; starting the live server ({self.command[0]})")
            try:
                self._proc = subprocess.Popen([*rec, "--", *self.command], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            except OSError as e:
                self._failed = f"could not start the recorder: {e.strerror or e}"
                return
            self._reader(self._read, "fallback-reader")
        init = next((m for m in self._handshake if m.get("method") == "initialize"), None)
        if init is None:
            return  # a 2026-07-28 session (no handshake), or the client has not initialized yet
        self._send({**init, "id": _HANDSHAKE_ID})
        answer = self._until_answer(_HANDSHAKE_ID)
        if not answer or "error" in loads(answer[-1]):
            self._failed = f"the live server did not accept the replayed initialize: {answer[-1] if answer else 'no answer'}"
            return
        self.replayed_handshake = True
        for note in self._handshake:
            if note.get("method") != "initialize":
                self._send(note)

    def _start_http(self, rec: list[str]) -> bool:
        """rec --listen in front of the URL, and the HTTP transport to it; False (and why) if it fails."""
        from mcptape.transports.http import StreamableHttpTransport  # httpx: --fallback-url only

        assert self.url is not None
        # The URL (a password in it) goes by the environment, not the command line `ps` shows.
        argv = [*rec, "--listen", "127.0.0.1:0", "--upstream", "${" + UPSTREAM_VARIABLE + "}"]
        env = {**os.environ, UPSTREAM_VARIABLE: self.url}
        try:
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
            )
        except OSError as e:
            self._failed = f"could not start the recorder: {e.strerror or e}"
            return False
        listening: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._reader(lambda: self._rec_stderr(listening), "fallback-rec-stderr")
        try:
            base = listening.get(timeout=FORWARD_TIMEOUT)
        except queue.Empty:
            base = None
        if base is None:
            self._failed = "the recorder did not start listening"
            return False
        self._http = StreamableHttpTransport(base + (urlsplit(self.url).path or "/"), {})
        threading.Thread(target=self._pump_http, name="fallback-http-reader", daemon=True).start()
        return True

    def _reader(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._readers.append(thread)
        thread.start()

    def _rec_stderr(self, listening: queue.SimpleQueue[str | None]) -> None:
        """rec's stderr onto ours (it is already redacted), and the URL it listens on, once."""
        assert self._proc is not None and self._proc.stderr is not None
        told = False
        for raw in self._proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            found = re.search(r"http://127\.0\.0\.1:\d+", line)
            if found and not told:
                listening.put(found.group(0))
                told = True
            self.say(line)
        if not told:
            listening.put(None)

    def _pump_http(self) -> None:
        while True:
            try:
                data = self._http.receive()
            except ServerError as e:
                self.say(f"mcptape play: --fallback-url: {e.message}")
                data = None
            if data is None:
                self._lines.put(None)
                return
            self._lines.put(data)

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, msg: dict[str, Any]) -> None:
        if self._http is not None:
            self._http.send((dumps(msg) + "\n").encode("utf-8"))
            return
        if self._proc is None or self._proc.stdin is None:
            return
        try:
            self._proc.stdin.write((dumps(msg) + "\n").encode("utf-8"))
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._failed = "the live server is gone"

    def _until_answer(self, msg_id: Any) -> list[str]:
        """Lines from the live server up to and including the answer to `msg_id`."""
        want = id_key(msg_id)
        out: list[str] = []
        while True:
            try:
                raw = self._lines.get(timeout=FORWARD_TIMEOUT)
            except queue.Empty:
                self._failed = f"the live server did not answer within {FORWARD_TIMEOUT:g}s"
                return [*out, _error(msg_id, f"mcptape play --fallback: {self._failed}")]
            if raw is None:
                self._failed = "the live server exited"
                return [*out, _error(msg_id, f"mcptape play --fallback: {self._failed}")]
            text = raw.decode("utf-8", "surrogateescape").rstrip("\r\n")
            try:
                msg = loads(text)
            except ValueError:
                out.append(text)
                continue
            kind = classify(msg)
            if kind in ("response", "error") and id_key(msg.get("id")) == want:
                if msg_id != _HANDSHAKE_ID:
                    out.append(text)
                else:
                    out = [text]  # the handshake's answer is ours, not the client's
                return out
            if kind == "request":
                self._send(_error_obj(msg["id"], -32601, "mcptape play --fallback does not relay server requests"))
                continue
            if msg_id != _HANDSHAKE_ID:
                out.append(text)

    # --- the end -----------------------------------------------------------------------

    def finish(self) -> int:
        """Stop the live server, append what it recorded to the tape (atomically); an exit code.

        0 nothing went live or it was appended. Raises ServerError (3) if the live server failed
        (would not start, exited, hung), SecretLeak (4) if a secret survived redaction (rec wrote
        nothing), McptapeError (3) if there is nothing to append.
        """
        if self._proc is None:
            if self._failed is not None:
                raise ServerError(f"--fallback: {self._failed}")
            return EXIT_OK
        try:
            if self._http is not None:  # end the HTTP session, then stop rec --listen as a user would
                self._http.close()
                self._proc.send_signal(signal.SIGINT)
            else:
                assert self._proc.stdin is not None
                with contextlib.suppress(OSError):  # the live side already gone: nothing to tell it
                    self._proc.stdin.close()
            try:
                code = self._proc.wait(timeout=FORWARD_TIMEOUT)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                code = self._proc.wait()
            # rec has exited: its pipes end, the readers finish, and the pipes are closed here, not by the GC.
            for thread in self._readers:
                thread.join(FORWARD_TIMEOUT)
            for stream in (self._proc.stdout, self._proc.stderr):
                if stream is not None:
                    stream.close()
            assert self._dir is not None
            live = Path(self._dir) / "live.tape.jsonl"
            if self._failed is not None:
                raise ServerError(f"--fallback: {self._failed}; nothing was appended to {self.tape}")
            if code == EXIT_SECRET:
                raise SecretLeak(f"--fallback: a secret survived redaction in the live recording; nothing was appended to {self.tape}")
            if self.live_tools:
                return EXIT_OK  # recorded (so redacted and verified like any rec) but not appended: see __init__
            if not live.exists():
                raise McptapeError(f"--fallback: the recorder wrote no tape (exit {code}); nothing was appended to {self.tape}")
            outlet = Outlet(make_redactor(command_secrets(self.command, os.environ)))
            appended = append_recording(self.tape, live, outlet, replayed_handshake=self.replayed_handshake)
            self.say(f"mcptape play: --fallback: appended {appended} event(s) recorded live to {self.tape}")
            return EXIT_OK
        finally:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)


def append_recording(tape: Path, live: Path, outlet: Outlet, *, replayed_handshake: bool) -> int:
    """Append the events of the `live` tape (recorded by rec, already redacted) to `tape`, minus the
    handshake play replayed to the live server (the tape holds the client's own). Atomic: readers
    see the old tape or the new one; the new lines pass `outlet` first (SecretLeak: nothing is
    written). Returns how many events were appended."""
    old, new = read_tape(tape), read_tape(live)
    ours = id_key(_HANDSHAKE_ID)
    added: list[Event] = []
    for ev in new.events:
        if ev.get("kind") in ("request", "response", "error") and "id" in ev and id_key(ev.get("id")) == ours:
            continue
        if replayed_handshake and ev.get("dir") == C2S and ev.get("method") == "notifications/initialized":
            continue
        if ev.get("kind") in ("exit", "stderr"):
            continue  # the live server's end and logs belong to this run, not to the session
        added.append(ev)
    if not added:
        return 0
    added = _in_sessions_of(old, added)
    outlet.verified("\n".join(dumps(ev) for ev in added), f"--fallback: the live recording appended to {tape}")
    footer = {k: v for k, v in (old.footer or {}).items() if k not in FOOTER_FIELDS}
    write_atomic(tape, tape_bytes(old.header, [*old.events, *added], **footer), what="tape")
    return len(added)


def _in_sessions_of(old: Tape, added: list[Event]) -> list[Event]:
    """The live events as `old` numbers HTTP sessions (tape/format.py's format 3): rec --listen numbered
    the live run's from 1, so on a tape of sessions they follow its last one; a tape without sessions
    gets them without the marks, which it would not read."""
    if old.header.get("format") == SESSIONS_FORMAT:
        last = max((ev["session"] for ev in old.events if isinstance(ev.get("session"), int)), default=0)
        return [{**ev, "session": ev["session"] + last} if isinstance(ev.get("session"), int) else ev for ev in added]
    return [{k: v for k, v in ev.items() if k not in ("session", "sse")} for ev in added]


def _error_obj(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def _error(msg_id: Any, message: str) -> str:
    return json.dumps(_error_obj(msg_id, _LIVE_ERROR, message), ensure_ascii=False, separators=(",", ":"))
