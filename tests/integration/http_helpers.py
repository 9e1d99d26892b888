"""Helpers for the HTTP tests: free loopback ports, servers stopped in `finally`, a tiny JSON-RPC driver.

Everything listens and connects on 127.0.0.1 only; every wait has a timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, ROOT, mcptape_command

HTTP_CALC = FIXTURES / "servers" / "http_calc_server.py"
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process exited with {proc.returncode} before port {port} opened")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listened on {LOOPBACK}:{port} within {timeout}s")


def stop_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> int | None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        return proc.wait(10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(10)


@contextlib.contextmanager
def background(cmd: Sequence[str], port: int, env: dict[str, str] | None = None, timeout: float = 30.0) -> Iterator[subprocess.Popen[bytes]]:
    """A server process listening on `port`, stopped (group SIGTERM, then SIGKILL) afterwards."""
    proc = subprocess.Popen(
        list(cmd),
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        cwd=ROOT,
    )
    try:
        wait_port(port, timeout, proc)
        yield proc
    finally:
        stop_group(proc)


@dataclass
class Listening:
    """A `mcptape rec/play --listen` process; `returncode` and `stderr` are set once it stopped."""

    proc: subprocess.Popen[bytes]
    url: str
    returncode: int | None = None
    stderr: str = ""
    lines: list[str] = field(default_factory=list)


@contextlib.contextmanager
def mcptape_listening(*args: str, path: str = "/mcp", timeout: float = 30.0) -> Iterator[Listening]:
    """Run `mcptape ARGS --listen 127.0.0.1:0`, yield its URL, stop it with SIGINT like a user.

    Port 0 lets the OS pick a port no other process holds; the URL is read off the line
    mcptape prints on stderr once it listens.
    """
    proc = subprocess.Popen(
        mcptape_command(*args, "--listen", f"{LOOPBACK}:0"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        start_new_session=True,
        # A process that does not stop on SIGINT gets SIGABRT below: its threads' stacks, on stderr.
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
    )
    lines: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    err_chunks: list[bytes] = []

    def read() -> None:
        for line in iter(proc.stderr.readline, b""):  # type: ignore[union-attr]
            err_chunks.append(line)
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    lst = Listening(proc, "")
    try:
        deadline = time.monotonic() + timeout
        while not lst.url:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"mcptape did not say where it listens within {timeout}s: {err_chunks}") from None
            found = re.search(rb"http://127\.0\.0\.1:(\d+)", line)
            if found:
                lst.url = f"http://{LOOPBACK}:{int(found.group(1))}{path}"
        yield lst
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            lst.returncode = proc.wait(30)
        except subprocess.TimeoutExpired:  # where it hangs is what a failing test should show
            lst.returncode = stop_group(proc, signal.SIGABRT)
        reader.join(5)
        lst.stderr = b"".join(err_chunks).decode("utf-8", "replace")


class Rpc:
    """Drives any mcptape Transport with JSON-RPC: requests by id, server requests answered."""

    def __init__(self, transport: Any, roots: list[dict[str, str]] | None = None) -> None:
        self.t = transport
        self.next_id = 1
        self.seen: list[dict[str, Any]] = []
        self.roots = roots or []

    def send(self, obj: dict[str, Any]) -> None:
        self.t.send(json.dumps(obj, separators=(",", ":")).encode("utf-8"))

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 15.0) -> dict[str, Any]:
        msg_id = self.next_id
        self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m, timeout)

    def wait_for(self, pred: Any, timeout: float = 15.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no matching message within {timeout}s; saw {self.seen[-5:]}")
            line = self.t.receive(left)
            assert line is not None, "transport ended"
            msg = json.loads(line)
            self.seen.append(msg)
            if msg.get("method") == "roots/list" and "id" in msg:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": self.roots}})
            if pred(msg):
                return msg

    def initialize(
        self,
        capabilities: dict[str, Any] | None = None,
        version: str = "2025-06-18",
        client_info: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        info = client_info or {"name": "mcptape-tests", "version": "0"}
        init = self.request("initialize", {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": info})
        self.notify("notifications/initialized")
        return init


def calc_http_cmd(port: int, *extra: str) -> list[str]:
    return [sys.executable, str(HTTP_CALC), "streamable-http", "--port", str(port), *extra]


def text_of(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result["result"]["content"])


def message_events(path: Path) -> list[dict[str, Any]]:
    from mcptape.tape.events import is_message
    from mcptape.tape.reader import read_tape

    return [ev for ev in read_tape(path).events if is_message(ev)]
