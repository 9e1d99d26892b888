"""Conformance against real servers: the nonconformant fixture recorded through `mcptape rec` is
reported with its paths; the reference servers and an official-SDK 2.x server come out clean.

The fixture runs as a user would record it (a raw JSON-lines client -> `python -m mcptape rec` ->
the server, tape read back from disk), so finding paths carry the real tape lines. The reference
servers are recorded with tests/recording.py (a legacy session over StdioTransport); the SDK
server is spoken to in 2026-07-28 (server/discover, `_meta` on every request).
"""

from __future__ import annotations

import copy
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcptape.conformance.check import check_tape
from mcptape.jsonrpc import dumps
from mcptape.tape.events import C2S, S2C, EventBuilder, exit_event
from mcptape.tape.format import Tape, make_header
from mcptape.tape.reader import read_tape
from tests.conftest import FIXTURES, ROOT, mcptape_command, node_server
from tests.recording import Request, record, tool

NONCONFORMANT = FIXTURES / "servers" / "nonconformant_server.py"
SDK_SERVER = FIXTURES / "servers" / "http_calc_server.py"
WAIT = 20.0
LISTS: list[Request] = [("tools/list", None), ("resources/list", None), ("resources/templates/list", None),
                        ("prompts/list", None)]


# --- the nonconformant fixture, through mcptape rec ------------------------------------------


def with_one_answer_changed(tape: Tape, method: str, change: Callable[[dict[str, Any]], None]) -> Tape:
    """A copy of `tape` whose first answer to `method` is edited by `change` (the answer's
    `result` or `error`): the positive control of a "no findings" test."""
    copied = copy.deepcopy(tape)
    answer = next(ev for ev in copied.events if ev.get("kind") in ("response", "error") and ev.get("dir") == S2C
                  and ev.get("method") == method)
    change(answer["msg"].get("result", answer["msg"].get("error")))
    answer.pop("raw", None)
    return copied


def rec_session(tmp_path: Path, server: list[str], requests: list[tuple[str, dict[str, Any] | None]]) -> Tape:
    """Drive `mcptape rec` with raw JSON lines, one request at a time; the tape it wrote."""
    tape_path = tmp_path / "session.tape.jsonl"
    proc = subprocess.Popen(mcptape_command("rec", "--out", str(tape_path), "--", *server), cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()
    out = proc.stdout

    def pump() -> None:
        for line in out:
            lines.put(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()

    def send(msg: dict[str, Any]) -> None:
        proc.stdin.write(dumps(msg).encode("utf-8") + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    try:
        for msg_id, (method, params) in enumerate(requests):
            send({"jsonrpc": "2.0", "id": msg_id, "method": method, **({"params": params} if params else {})})
            while True:
                answer = json.loads(lines.get(timeout=WAIT))
                if answer.get("id") == msg_id and "method" not in answer:
                    break
            if method == "initialize":
                send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        proc.stdin.close()
        assert proc.wait(timeout=WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=WAIT)
    return read_tape(tape_path)


FIXTURE_SCRIPT: list[tuple[str, dict[str, Any] | None]] = [
    ("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    ("tools/list", None),
    tool("weather", city="Oslo"),
    tool("fail"),
    tool("log"),
]


def line_of(tape: Tape, kind: str, method: str) -> int:
    """Tape line of the first event of `kind` about `method` (the weather call: the first tools/call)."""
    index = next(i for i, ev in enumerate(tape.events) if ev.get("kind") == kind and ev.get("method") == method
                 and (method != "tools/call" or ev.get("params", {}).get("name") in ("weather", None)))
    return tape.line_of(index)


def fail_line(tape: Tape) -> int:
    return tape.line_of(next(i for i, ev in enumerate(tape.events)
                             if ev.get("kind") == "error" and ev.get("params", {}).get("name") == "fail"))


# variant -> (where the broken message is, the paths inside it, finding kind)
EXPECTED: dict[str, tuple[Callable[[Tape], int], list[str], str]] = {
    "bad_structured": (lambda t: line_of(t, "response", "tools/call"),
                       ["result.structuredContent.temp_c", "result.structuredContent.unit"], "output_schema"),
    "no_structured": (lambda t: line_of(t, "response", "tools/call"), ["result.structuredContent"], "output_schema"),
    "no_input_schema": (lambda t: line_of(t, "response", "tools/list"), ["result.tools[0].inputSchema"], "schema"),
    "content_not_list": (lambda t: line_of(t, "response", "tools/call"), ["result.content"], "schema"),
    "error_without_code": (fail_line, ["error.code"], "schema"),
    "bad_log_level": (lambda t: line_of(t, "notification", "notifications/message"), ["params.level"], "schema"),
}


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_nonconformant_server_is_reported_with_its_paths(tmp_path: Path, variant: str) -> None:
    tape = rec_session(tmp_path, [sys.executable, str(NONCONFORMANT), "--variant", variant], FIXTURE_SCRIPT)
    where, paths, kind = EXPECTED[variant]
    findings = check_tape(tape)
    line = where(tape)
    assert [f.path for f in findings] == [f"{line}:{p}" for p in paths], [(f.path, f.message) for f in findings]
    assert {(f.category, f.severity, f.kind) for f in findings} == {("conformance", "structural", kind)}


def test_the_fixture_in_its_clean_variant_is_clean(tmp_path: Path) -> None:
    tape = rec_session(tmp_path, [sys.executable, str(NONCONFORMANT), "--variant", "clean"], FIXTURE_SCRIPT)
    assert sum(1 for ev in tape.events if ev.get("kind") in ("response", "error", "notification")) >= 6
    assert check_tape(tape) == []
    # Positive control: the same tape with the weather answer's content made a string.
    broken = with_one_answer_changed(tape, "tools/call", lambda result: result.update(content="hello"))
    assert [f.path.split(":", 1)[1] for f in check_tape(broken)] == ["result.content"]


# --- real servers: no false positives ---------------------------------------------------------


def git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
           "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    (repo / "a.txt").write_text("hello\n", encoding="utf-8")
    for args in (["init", "-q"], ["add", "a.txt"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, timeout=WAIT)
    (repo / "a.txt").write_text("hello\nworld\n", encoding="utf-8")
    return repo


def reference_sessions(name: str, tmp_path: Path) -> tuple[list[str], list[Request]]:
    if name == "time":
        return [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"], [
            *LISTS, tool("get_current_time", timezone="UTC"),
            tool("convert_time", source_timezone="UTC", time="12:00", target_timezone="Asia/Tokyo"),
            tool("get_current_time", timezone="Not/AZone")]
    if name == "git":
        repo = str(git_repo(tmp_path))
        return [sys.executable, "-m", "mcp_server_git", "--repository", repo], [
            *LISTS, tool("git_status", repo_path=repo), tool("git_diff_unstaged", repo_path=repo),
            tool("git_log", repo_path=repo), tool("git_show", repo_path=repo, revision="HEAD")]
    if name == "everything":
        return ["node", str(node_server("everything")), "stdio"], [
            *LISTS, tool("echo", message="hi"), tool("get-sum", a=1, b=2),
            tool("get-structured-content", location="New York"), tool("get-tiny-image"),
            tool("get-resource-links", count=2), tool("get-resource-reference", resourceType="Text", resourceId=1),
            tool("get-annotated-message", messageType="error", includeImage=True),
            ("resources/read", {"uri": "demo://resource/static/document/architecture.md"}),
            ("prompts/get", {"name": "simple-prompt"}),
            ("completion/complete", {"ref": {"type": "ref/prompt", "name": "completable-prompt"},
                                     "argument": {"name": "department", "value": "E"}}),
            ("ping", None)]
    if name == "filesystem":
        root = tmp_path / "root"
        root.mkdir()
        (root / "x.txt").write_text("hello\n", encoding="utf-8")
        return ["node", str(node_server("filesystem")), str(root)], [
            *LISTS, tool("list_allowed_directories"), tool("read_text_file", path=str(root / "x.txt")),
            tool("list_directory", path=str(root)), tool("get_file_info", path=str(root / "x.txt")),
            tool("write_file", path=str(root / "y.txt"), content="c"), tool("directory_tree", path=str(root)),
            tool("read_text_file", path="/etc/hostname-outside")]
    if name == "memory":
        store = tmp_path / "memory.json"
        return ["env", f"MEMORY_FILE_PATH={store}", "node", str(node_server("memory"))], [
            *LISTS, tool("create_entities", entities=[{"name": "a", "entityType": "t", "observations": ["o"]}]),
            tool("create_relations", relations=[{"from": "a", "to": "a", "relationType": "self"}]),
            tool("read_graph"), tool("search_nodes", query="a"), tool("open_nodes", names=["a"])]
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["time", "git", "everything", "filesystem", "memory"])
def test_reference_server_tapes_are_conformant(tmp_path: Path, name: str) -> None:
    command, requests = reference_sessions(name, tmp_path)
    tape = record(command, requests, name=name, timeout=WAIT)
    answers = [ev for ev in tape.events if ev.get("kind") in ("response", "error") and ev.get("dir") == S2C]
    assert len(answers) == len(requests) + 1, "every request (and initialize) was answered"
    findings = check_tape(tape)
    assert findings == [], [(f.path, f.message) for f in findings]
    # Positive control: the same tape with the first tool's inputSchema gone.
    broken = with_one_answer_changed(tape, "tools/list", lambda result: result["tools"][0].pop("inputSchema"))
    assert [f.path.split(":", 1)[1] for f in check_tape(broken)] == ["result.tools[0].inputSchema"]


def record_2026(command: list[str], requests: list[Request], capabilities: dict[str, Any] | None = None) -> Tape:
    """A stateless 2026-07-28 session: server/discover, then each request with its `_meta`
    (declaring `capabilities`, or none)."""
    from mcptape.transports.stdio import StdioTransport, minimal_env

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities or {},
            "io.modelcontextprotocol/clientInfo": {"name": "mcptape-tests", "version": "0"}}
    builder = EventBuilder()
    events: list[dict[str, Any]] = []
    transport = StdioTransport(command, env=minimal_env())
    try:
        for msg_id, (method, params) in enumerate([("server/discover", None), *requests]):
            msg = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {**(params or {}), "_meta": meta}}
            transport.send(dumps(msg).encode("utf-8"))
            events.append(builder.message(C2S, msg))
            while True:
                raw = transport.receive(WAIT)
                assert raw is not None, f"no answer to {method}"
                events.append(builder.line(S2C, raw))
                if events[-1].get("kind") in ("response", "error") and events[-1].get("id") == msg_id:
                    break
    finally:
        events.append(exit_event(transport.close()))
    return Tape(header=make_header("sdk-2026"), events=events, footer={"mcptape": "end", "events": len(events)})


def test_official_sdk_server_speaking_2026_is_conformant() -> None:
    tape = record_2026([sys.executable, str(SDK_SERVER), "stdio"],
                       [*LISTS, tool("add", a=2, b=3), tool("divide", a=1, b=0), ("ping", None)])
    add = next(ev for ev in tape.events if ev.get("kind") == "response" and ev.get("method") == "tools/call")
    assert add["msg"]["result"]["resultType"] == "complete"  # really the 2026 shape, not a legacy fallback
    assert "structuredContent" in add["msg"]["result"]  # so its outputSchema was checked too
    assert check_tape(tape) == []
    # Positive control: the same tape with the add answer in the legacy shape (no resultType).
    broken = with_one_answer_changed(tape, "tools/call", lambda result: result.pop("resultType"))
    assert [f.path.split(":", 1)[1] for f in check_tape(broken)] == ["result.resultType"]
