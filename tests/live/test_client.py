"""live/client.py: the scripted client against our fixture servers.

Where the client's protocol logic is the point (ids, steps, schemas, timeouts) the calc fixture's
own code answers on the far end of an in-memory transport pair (transports/memory.py): the same
peer, no process. Where the process is the point (a crash, a server that dies at start, its
environment and working directory, the asking server) it runs as one, over real pipes; and one
test shows the in-memory calc gives exactly the events the calc process gives.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcptape.config.models import ClientSettings, Step
from mcptape.errors import ConfigError, ServerError, ServerTimeout
from mcptape.live.client import Recording, record_session
from mcptape.transports.base import Transport
from mcptape.transports.memory import MemoryPeer, MemoryTransport, memory_pair
from mcptape.transports.stdio import StdioTransport, minimal_env
from tests.conftest import CALC_SERVER, FIXTURES, calc_command

ASKING = [sys.executable, str(FIXTURES / "servers" / "asking_server.py")]


def run(
    command: list[str] | Transport,
    steps: list[Step],
    settings: ClientSettings | None = None,
    **kw: Any,
) -> Recording:
    transport = StdioTransport(command, env=minimal_env()) if isinstance(command, list) else command
    kw.setdefault("step_timeout", 10.0)
    return record_session(transport, steps, settings or ClientSettings(), session="t", **kw)


def calc_in_memory(variant: str = "identical") -> MemoryTransport:
    """The calc fixture server's own code (fixtures/servers/calc_server.py) answering on the far end
    of an in-memory pair: calc_command()'s peer without its process."""
    spec = importlib.util.spec_from_file_location("calc_server_in_memory", CALC_SERVER)
    assert spec is not None and spec.loader is not None
    calc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(calc)
    client, peer = memory_pair()

    class Lines:  # calc writes whole lines to a binary stdout and flushes
        def write(self, data: bytes) -> None:
            for line in data.splitlines():
                peer.send(line)

        def flush(self) -> None:
            pass

    def serve(peer: MemoryPeer) -> int:
        server = calc.Server(variant)
        server.out = Lines()
        while (line := peer.receive()) is not None:
            if line.strip():
                server.handle(json.loads(line))
        return 0

    peer.serve(serve)
    return client


def messages(rec: Recording) -> list[dict[str, Any]]:
    return [e for e in rec.events if e["kind"] in ("request", "notification", "response", "error")]


def test_every_step_kind_is_sent_with_deterministic_ids_and_recorded_under_its_step() -> None:
    steps = [
        Step(action="list_tools"),
        Step(action="list_resources"),
        Step(action="list_resource_templates"),
        Step(action="list_prompts"),
        Step(action="call", target="add", arguments={"a": 2, "b": 3}),
        Step(action="read_resource", target="calc://constants"),
        Step(action="get_prompt", target="explain", arguments={"topic": "sums"}),
        Step(action="complete", params={"ref": {"type": "ref/prompt", "name": "explain"}, "argument": {"name": "topic", "value": "s"}}),
        Step(action="set_log_level", target="info"),
        Step(action="ping"),
        Step(action="request", target="tools/call", params={"name": "echo", "arguments": {"text": "raw"}}),
        Step(action="notify", target="notifications/cancelled", params={"requestId": 99}),
        Step(action="call", target="divide", arguments={"a": 1, "b": 0}),
    ]
    rec = run(calc_in_memory(), steps)
    assert rec.error is None, rec.error
    assert rec.protocol == "2025-11-25"  # what current clients ask (mcp.LEGACY_DEFAULT_PROTOCOL)
    assert rec.server_info == {"name": "calc-fixture", "version": "1.0.0"}
    sent = [e for e in messages(rec) if e["dir"] == "c2s"]
    assert [e["msg"].get("method") for e in sent] == [
        "initialize", "notifications/initialized", "tools/list", "resources/list", "resources/templates/list",
        "prompts/list", "tools/call", "resources/read", "prompts/get", "completion/complete", "logging/setLevel",
        "ping", "tools/call", "notifications/cancelled", "tools/call",
    ]  # fmt: skip
    assert [e["id"] for e in sent if e["kind"] == "request"] == list(range(1, 14))
    by_step = {e.get("step"): e for e in messages(rec) if e["kind"] in ("response", "error")}
    assert by_step[None]["method"] == "initialize"
    assert by_step[5]["msg"]["result"]["content"][0]["text"] == "5"
    assert by_step[6]["msg"]["result"]["contents"][0]["uri"] == "calc://constants"
    assert by_step[7]["msg"]["result"]["messages"][0]["content"]["text"] == "Explain sums simply."
    assert by_step[3]["msg"]["error"]["code"] == -32601  # calc has no templates: the error is recorded
    assert by_step[11]["msg"]["result"]["content"][0]["text"] == "raw"
    assert by_step[13]["kind"] == "error" and by_step[13]["msg"]["error"]["message"] == "Division by zero"
    assert rec.returncode == 0 and rec.events[-1]["kind"] != "exit"  # clean shutdown: no exit event


def test_two_runs_of_the_same_session_give_the_same_events_in_memory_as_over_pipes() -> None:
    steps = [Step(action="list_tools"), Step(action="call", target="echo", arguments={"text": "x"})]
    over_pipes = run(calc_command(), steps).events
    assert over_pipes == run(calc_command(), steps).events == run(calc_in_memory(), steps).events
    changed = run(calc_in_memory("added_tool"), steps).events  # the comparison sees a real difference
    assert changed != over_pipes


def test_server_requests_are_answered_as_configured_and_recorded() -> None:
    settings = ClientSettings(
        capabilities={"roots": {"listChanged": False}, "sampling": {}, "elicitation": {}},
        roots=[{"uri": "file:///work", "name": "work"}],
        sampling={"role": "assistant", "content": {"type": "text", "text": "canned"}, "model": "m"},
        elicitation={"action": "accept", "content": {"name": "tape"}},
    )
    rec = run(ASKING, [Step(action="call", target="ask")], settings)
    assert rec.error is None, rec.error
    init = next(e for e in rec.events if e["kind"] == "response" and e["method"] == "initialize")
    assert init["msg"]["result"]["echoCapabilities"] == settings.capabilities  # declared exactly as configured
    result = next(e for e in rec.events if e["kind"] == "response" and e["method"] == "tools/call")
    answers = json.loads(result["msg"]["result"]["content"][0]["text"])
    assert answers == {
        "roots/list": {"roots": [{"uri": "file:///work", "name": "work"}]},
        "sampling/createMessage": settings.sampling,
        "elicitation/create": {"action": "accept", "content": {"name": "tape"}},
        "ping": {},
        "weird/method": {"code": -32601, "message": "Method not found: weird/method"},
    }
    ours = [e for e in rec.events if e.get("dir") == "c2s" and e["kind"] in ("response", "error")]
    assert [(e["method"], e["id"], e["step"]) for e in ours] == [
        ("roots/list", 0, 1), ("sampling/createMessage", 1, 1), ("elicitation/create", 2, 1), ("ping", 3, 1),
        ("weird/method", 4, 1),
    ]  # fmt: skip


def test_unconfigured_sampling_and_elicitation_are_declined() -> None:
    rec = run(ASKING, [Step(action="call", target="ask")])
    result = next(e for e in rec.events if e["kind"] == "response" and e["method"] == "tools/call")
    answers = json.loads(result["msg"]["result"]["content"][0]["text"])
    assert answers["elicitation/create"] == {"action": "decline"}
    assert answers["sampling/createMessage"]["code"] == -1
    assert answers["roots/list"] == {"roots": []}


def test_pagination_follows_next_cursor_and_records_every_page() -> None:
    rec = run(ASKING, [Step(action="list_tools")])
    pages = [e for e in rec.events if e["kind"] == "response" and e["method"] == "tools/list"]
    assert [len(p["msg"]["result"]["tools"]) for p in pages] == [2, 3]  # page 2: echo, agent, connect
    assert pages[1]["params"] == {"cursor": "page2"}


def test_listen_collects_notifications_until_count() -> None:
    rec = run(
        ASKING + ["--notify-after-initialized", "3"],
        [Step(action="listen", count=3), Step(action="call", target="log")],
    )
    assert rec.error is None
    listened = [e for e in rec.events if e.get("step") == 1 and e["kind"] == "notification"]
    assert len(listened) == 3
    step2 = [e["method"] for e in rec.events if e.get("step") == 2]
    # the schema fetch (two pages) comes first, then the call with its log and progress in arrival order
    assert step2 == ["tools/list"] * 4 + ["tools/call", "notifications/message", "notifications/progress", "tools/call"]


def test_step_timeout_names_the_step_and_keeps_the_partial_tape() -> None:
    steps = [Step(action="call", target="add", arguments={"a": 1, "b": 1}), Step(action="call", target="hang", timeout=0.5)]
    rec = run(calc_in_memory(), steps)
    assert isinstance(rec.error, ServerTimeout)
    assert "step 2 (call hang)" in rec.error.message and "step timeout (0.5s)" in rec.error.message
    assert any(e["kind"] == "response" and e.get("step") == 1 for e in rec.events)
    assert any(e["kind"] == "request" and e.get("step") == 2 for e in rec.events)
    assert rec.events[-1]["kind"] == "exit"


def test_session_timeout_stops_a_slow_session() -> None:
    steps = [Step(action="call", target="slow", arguments={"ms": 300}) for _ in range(20)]
    rec = run(calc_in_memory(), steps, session_timeout=1.0)
    assert isinstance(rec.error, ServerTimeout)
    assert "session timeout (1s)" in rec.error.message


def test_crash_mid_call_is_a_server_error_with_the_stderr_tail() -> None:
    rec = run(calc_command(), [Step(action="call", target="crash")])
    assert isinstance(rec.error, ServerError) and not isinstance(rec.error, ServerTimeout)
    assert "step 1 (call crash)" in rec.error.message
    assert "calc-fixture: crashing on purpose" in rec.error.message
    assert rec.events[-1] == {"kind": "exit", "code": 3}


def test_server_that_dies_at_start_reports_its_stderr() -> None:
    command = [sys.executable, "-c", "import sys; sys.stderr.write('missing API key\\n'); sys.exit(2)"]
    rec = run(command, [Step(action="list_tools")])
    assert isinstance(rec.error, ServerError)
    assert "failed to start" in rec.error.message and "missing API key" in rec.error.message


def test_arguments_the_live_schema_rejects_are_a_config_error_before_the_call_without_golden() -> None:
    rec = run(calc_in_memory(), [Step(action="call", target="add", arguments={"a": "two", "b": 3})])
    assert isinstance(rec.error, ConfigError)
    assert "tool `add`" in rec.error.message and "step 1" in rec.error.message and "rule `type`" in rec.error.message
    assert not any(e.get("method") == "tools/call" for e in rec.events)  # never sent


def test_arguments_the_golden_schema_accepted_are_a_breaking_change_not_a_config_error() -> None:
    golden_tools = {
        "add": {"name": "add", "inputSchema": {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]}}
    }
    rec = run(
        calc_in_memory("required_param"),
        [Step(action="list_tools"), Step(action="call", target="add", arguments={"a": 2, "b": 3})],
        golden_tools=golden_tools,
    )
    assert rec.error is None
    [brk] = rec.schema_breaks
    assert brk.step == 2 and brk.call.name == "add"
    assert brk.finding.category == "schema" and brk.finding.severity == "structural"
    assert "'c' is a required property" in brk.finding.message and "`required`" in brk.finding.message
    assert any(e.get("method") == "tools/call" and e["kind"] == "response" for e in rec.events)  # still called


def test_a_call_without_a_list_tools_step_fetches_the_schema_and_records_it() -> None:
    rec = run(calc_in_memory(), [Step(action="call", target="add", arguments={"a": 1, "b": 2})])
    assert [e["method"] for e in messages(rec) if e.get("step") == 1] == ["tools/list"] * 2 + ["tools/call"] * 2


def test_cwd_and_environment_are_minimal(tmp_path: Path) -> None:
    from mcptape.config.models import StdioServer
    from mcptape.live.launch import open_transport

    server = StdioServer(command=[sys.executable, "-c", "import os,sys; print(os.getcwd()); print(sorted(os.environ))"])
    transport = open_transport(server, base_dir=tmp_path, env={"ONLY_THIS": "1"})
    cwd = transport.receive(5)
    env_names = transport.receive(5)
    transport.close()
    assert cwd is not None and Path(cwd.decode()).resolve() == tmp_path.resolve()
    assert env_names is not None and "ONLY_THIS" in env_names.decode()
    assert "PYTEST_CURRENT_TEST" not in env_names.decode()


def test_a_missing_cwd_is_reported(tmp_path: Path) -> None:
    from mcptape.config.models import StdioServer
    from mcptape.live.launch import open_transport

    with pytest.raises(ServerError, match="working directory"):
        open_transport(StdioServer(command=["true"], cwd="nope"), base_dir=tmp_path, env={})


def test_auto_falls_back_to_initialize_when_the_probe_is_refused_with_id_null() -> None:
    # A legacy server that cannot tell which request it refuses answers with id null (as
    # server-everything does over HTTP): under auto that is the probe's refusal, and the session
    # opens with initialize; the probe and its refusal stay out of the tape.
    client, peer = memory_pair()

    def serve(peer: MemoryPeer) -> int:
        while (line := peer.receive()) is not None:
            msg = json.loads(line)
            if msg.get("method") == "server/discover":
                refusal = {"code": -32000, "message": "Bad Request: Server not initialized"}
                peer.send(json.dumps({"jsonrpc": "2.0", "error": refusal, "id": None}).encode())
            elif msg.get("method") == "initialize":
                result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "old"}}
                peer.send(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode())
            elif msg.get("method") == "tools/list":
                peer.send(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}}).encode())
        return 0

    peer.serve(serve)
    rec = run(client, [Step(action="list_tools")])
    assert rec.error is None, rec.error
    assert rec.negotiation == "fallback: initialize after -32000"
    assert [e.get("method") for e in messages(rec)] == ["initialize", "initialize", "notifications/initialized",
                                                         "tools/list", "tools/list"]
    # A pinned 2026-07-28 gets no such leniency: the refusal is an error naming the protocol.
    client, peer = memory_pair()
    peer.serve(serve)
    pinned = run(client, [Step(action="list_tools")], protocol="2026-07-28")
    assert isinstance(pinned.error, ServerError) and "refused protocol 2026-07-28" in pinned.error.message
