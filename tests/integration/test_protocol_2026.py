"""MCP 2026-07-28 next to the legacy protocol, end to end with real peers.

The server is fixtures/servers/sdk2_server.py, built on the official Python SDK 2.x
(`MCPServer`), which speaks 2026-07-28 to a client that discovers and the legacy shape to one
that initializes. Its three entries in one mcptape.yml differ only in `protocol:` (auto, pinned
2026-07-28, pinned 2025-11-25); `changed.yml` is the same server with `--variant changed_result`
(add returns a + b + 1). The goldens are recorded once per module (the SDK server takes seconds
to start on a loaded machine), then checked, replayed to the SDK's and FastMCP's clients, and
diffed across versions. The Node reference servers run under `auto` and fall back to initialize.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, ROOT, mcptape_command, node_server, user_env
from tests.in_process import run_mcptape

SDK2 = FIXTURES / "servers" / "sdk2_server.py"
TIMEOUT = 120
META_KEYS = {
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
}
VERSIONS = {"auto": "auto", "modern": "2026-07-28", "legacy": "2025-11-25"}

CONFIG = """\
version: 1
golden_dir: tapes
client:
  capabilities: {{elicitation: {{}}}}
  elicitation: {{action: accept, content: {{name: Ada}}}}
servers:
{servers}
sessions:
{sessions}
"""
STEPS = """\
      - list_tools
      - call: add
        arguments: {a: 2, b: 3}
      - call: divide
        arguments: {a: 1, b: 0}
      - read_resource: calc://constants
      - get_prompt: explain
        arguments: {topic: sums}
"""
GREET = """\
  - name: greet
    server: modern
    steps:
      - call: greet
      - listen:
        duration: 0.2
"""


def write_config(path: Path, variant: str, *, greet: bool) -> None:
    servers = "".join(
        f"  {name}:\n    command: [{sys.executable}, {SDK2}, --variant, {variant}]\n    protocol: \"{version}\"\n"
        for name, version in VERSIONS.items()
    )
    sessions = "".join(f"  - name: {name}\n    server: {name}\n    steps:\n{STEPS}" for name in VERSIONS)
    path.write_text(CONFIG.format(servers=servers, sessions=sessions + (GREET if greet else "")), encoding="utf-8")


ENV = user_env(PYTHONPATH=str(ROOT))  # mcptape runs from the checkout, in the project's directory


def mcptape(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_mcptape(args, cwd=cwd, env=ENV, timeout=TIMEOUT)


def events(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return lines[0], lines[1:-1]


def sent(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in evs if e.get("dir") == "c2s" and e["kind"] in ("request", "notification")]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Goldens of every session, a clean re-check kept in fresh/, and the changed server's run in changed/."""
    root = tmp_path_factory.mktemp("proto2026")
    write_config(root / "mcptape.yml", "identical", greet=True)
    write_config(root / "changed.yml", "changed_result", greet=False)
    update = mcptape("ci", "--update-golden", "-j", "4", cwd=root)
    assert update.returncode == 0, update.stdout + update.stderr
    return root


@pytest.fixture(scope="module")
def recheck(project: Path) -> subprocess.CompletedProcess[str]:
    return mcptape("ci", "-j", "4", "--out-dir", "fresh", cwd=project)


@pytest.fixture(scope="module")
def changed(project: Path) -> subprocess.CompletedProcess[str]:
    return mcptape("ci", "-c", "changed.yml", "-j", "3", "--out-dir", "changed", "--json=changed.json", cwd=project)


def test_each_version_choice_is_negotiated_recorded_in_the_header_and_rechecks_clean(
    project: Path, recheck: subprocess.CompletedProcess[str], changed: subprocess.CompletedProcess[str]
) -> None:
    headers = {name: events(project / "tapes" / f"{name}.tape.jsonl")[0] for name in VERSIONS}
    assert {n: (h["protocol"], h["negotiation"]) for n, h in headers.items()} == {
        "auto": ("2026-07-28", "discover"),
        "modern": ("2026-07-28", "discover"),
        "legacy": ("2025-11-25", "initialize"),
    }
    for name in ("auto", "modern"):
        msgs = sent(events(project / "tapes" / f"{name}.tape.jsonl")[1])
        assert msgs[0]["method"] == "server/discover"
        assert not {"initialize", "notifications/initialized"} & {m["method"] for m in msgs}
        assert all(set(m["msg"]["params"]["_meta"]) >= META_KEYS for m in msgs if m["kind"] == "request")
    legacy = sent(events(project / "tapes" / "legacy.tape.jsonl")[1])
    assert [m["method"] for m in legacy[:2]] == ["initialize", "notifications/initialized"]
    assert not any("_meta" in (m["msg"].get("params") or {}) for m in legacy)

    assert recheck.returncode == 0, recheck.stdout + recheck.stderr
    for name in (*VERSIONS, "greet"):  # unchanged server: the fresh tape is the golden, byte for byte
        # (its timing is in a sidecar beside it: tape/timing.py)
        fresh_bytes, golden_bytes = ((project / d / f"{name}.tape.jsonl").read_bytes() for d in ("fresh", "tapes"))
        assert fresh_bytes == golden_bytes, name
        assert json.loads((project / "fresh" / f"{name}.tape.timing.json").read_text(encoding="utf-8"))["timing"]
    # Positive control: the same sessions on the server whose add answers 6 differ in that answer's line
    # (and the footer's checksum), under every version.
    assert changed.returncode == 1, changed.stdout + changed.stderr
    for name in VERSIONS:
        golden, fresh = ((project / d / f"{name}.tape.jsonl").read_bytes().splitlines() for d in ("tapes", "changed"))
        differing = [b for a, b in zip(golden, fresh, strict=True) if a != b]
        assert len(differing) == 2 and b'"structuredContent":{"result":6.0}' in differing[0], name


def test_a_changed_result_is_output_drift_under_every_version(changed: subprocess.CompletedProcess[str],
                                                               project: Path) -> None:
    assert changed.returncode == 1, changed.stdout + changed.stderr
    report = json.loads((project / "changed.json").read_text(encoding="utf-8"))
    for session in report["sessions"]:
        assert session["verdict"] == "output", session
        first = session["diff"]["drifts"][0]
        assert (first["call"]["method"], first["call"]["name"]) == ("tools/call", "add")
        assert {f["after"] for f in first["findings"] if f["path"] == "result.structuredContent.result"} == {6.0}


def test_input_required_round_trip_is_answered_from_config_and_recorded_under_one_step(project: Path) -> None:
    header, evs = events(project / "tapes" / "greet.tape.jsonl")
    calls = [e for e in evs if e.get("method") == "tools/call"]
    first_req, first_res, retry, final = calls
    assert {e["step"] for e in calls} == {1}
    asked = first_res["msg"]["result"]
    assert asked["resultType"] == "input_required"
    (key, question), = asked["inputRequests"].items()
    assert question["method"] == "elicitation/create"
    params = retry["msg"]["params"]
    assert params["inputResponses"] == {key: {"action": "accept", "content": {"name": "Ada"}}}
    assert params["requestState"] == asked["requestState"] == "<REQUEST_STATE>"  # sealed afresh each run
    assert final["msg"]["result"]["structuredContent"] == {"result": "Hello, Ada!"}
    # the listen step: subscriptions/listen, the acknowledgement, and the cancel that ends it, all step 2
    listen = [e for e in evs if e.get("step") == 2]
    assert [e["method"] for e in listen] == [
        "subscriptions/listen", "notifications/subscriptions/acknowledged", "notifications/cancelled"]


async def sdk_session(tape: str, cwd: str, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
    """The official SDK client (`mode="auto"`: discover, fall back to initialize) against `mcptape play`."""
    import mcp_types as types
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    async def elicit(ctx: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    server = StdioServerParameters(command=sys.executable, args=["-m", "mcptape", "play", tape], cwd=cwd)
    async with Client(server, mode="auto", elicitation_callback=elicit, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
        result = await client.call_tool(tool, arguments)
        return str(client.session.protocol_version), result.structured_content


@pytest.mark.parametrize(("tape", "tool", "arguments", "expected"), [
    # 2026-07-28: discover from the tape, the input-required round trip answered by the client's callback
    ("greet", "greet", {}, ("2026-07-28", {"result": "Hello, Ada!"})),
    # legacy: play answers discover with -32601, as the recorded server would, and the SDK initializes
    ("legacy", "add", {"a": 2, "b": 3}, ("2025-11-25", {"result": 5.0})),
    ("modern", "add", {"a": 2, "b": 3}, ("2026-07-28", {"result": 5.0})),
])
def test_play_serves_both_eras_to_the_sdk_client(
    project: Path, tape: str, tool: str, arguments: dict[str, Any], expected: tuple[str, Any]
) -> None:
    import anyio

    got = anyio.run(sdk_session, str(project / "tapes" / f"{tape}.tape.jsonl"), str(ROOT), tool, arguments)
    assert got == expected


def diff_json(project: Path, a: str, b: str, *extra: str) -> tuple[int, dict[str, Any]]:
    done = mcptape("diff", "--json", a, b, *extra, cwd=project)
    return done.returncode, json.loads(done.stdout)


def test_cross_version_diff_is_one_protocol_finding_and_no_behaviour_drift(
    project: Path, recheck: subprocess.CompletedProcess[str], changed: subprocess.CompletedProcess[str]
) -> None:
    code, result = diff_json(project, "tapes/legacy.tape.jsonl", "fresh/modern.tape.jsonl")
    findings = [f for d in result["drifts"] for f in d["findings"]]
    assert code == 2
    assert [(f["category"], f["severity"]) for f in findings] == [("protocol", "structural")], findings
    assert findings[0]["before"]["protocol"] == "2025-11-25" and findings[0]["after"]["protocol"] == "2026-07-28"
    assert "2025-11-25 (initialize) → 2026-07-28 (server/discover)" in result["first_drift"]

    # SDK upgraded *and* add changed: the protocol finding first, then the behaviour, named.
    code, result = diff_json(project, "tapes/legacy.tape.jsonl", "changed/modern.tape.jsonl")
    assert code == 2
    protocol, behaviour = result["drifts"]
    assert [f["category"] for f in protocol["findings"]] == ["protocol"]
    assert (behaviour["call"]["method"], behaviour["call"]["name"], behaviour["call"]["step"]) == ("tools/call", "add", 2)
    assert {f["severity"] for f in behaviour["findings"]} == {"output"}
    assert {f["path"] for f in behaviour["findings"]} >= {"result.structuredContent.result"}


def test_input_required_session_diffs_clean_against_itself_and_names_a_changed_answer(project: Path) -> None:
    code, result = diff_json(project, "tapes/greet.tape.jsonl", "fresh/greet.tape.jsonl")
    assert (code, result["verdict"]) == (0, "same")
    tampered = (project / "tapes" / "greet.tape.jsonl").read_text(encoding="utf-8").replace("Hello, Ada!", "Hi, Ada!")
    (project / "greet-tampered.tape.jsonl").write_text(tampered, encoding="utf-8")
    code, result = diff_json(project, "tapes/greet.tape.jsonl", "greet-tampered.tape.jsonl", "--allow-edited")
    assert code == 1
    assert result["drifts"][0]["call"]["name"] == "greet" and result["drifts"][0]["call"]["step"] == 1


@pytest.mark.node
def test_node_reference_servers_under_auto_fall_back_to_initialize_and_stay_green(tmp_path: Path) -> None:
    config = f"""\
version: 1
golden_dir: tapes
servers:
  everything:
    command: [node, {node_server("everything")}, stdio]
  memory:
    command: [node, {node_server("memory")}]
    env: {{MEMORY_FILE_PATH: "${{MEMORY_FILE}}"}}
sessions:
  - name: everything
    server: everything
    steps:
      - list_tools
      - call: echo
        arguments: {{message: hi}}
  - name: memory
    server: memory
    steps:
      - list_tools
      - call: read_graph
"""
    (tmp_path / "mcptape.yml").write_text(config, encoding="utf-8")

    def ci(*args: str, run: int) -> subprocess.CompletedProcess[str]:
        env = {**ENV, "MEMORY_FILE": str(tmp_path / f"memory-{run}.json")}
        return run_mcptape(["ci", *args], cwd=tmp_path, env=env, timeout=TIMEOUT)

    update = ci("--update-golden", run=1)
    assert update.returncode == 0, update.stdout + update.stderr
    check = ci(run=2)
    assert check.returncode == 0, check.stdout + check.stderr
    # Positive control: the same memory session over a store that already holds an entity drifts.
    (tmp_path / "memory-3.json").write_text(
        '{"type":"entity","name":"left-over","entityType":"thing","observations":[]}\n', encoding="utf-8")
    changed = ci("--session", "memory", run=3)
    assert changed.returncode == 1 and "left-over" in changed.stdout, changed.stdout + changed.stderr
    for name in ("everything", "memory"):
        header, evs = events(tmp_path / "tapes" / f"{name}.tape.jsonl")
        assert header["negotiation"] == "fallback: initialize after -32601"
        assert header["protocol"] == "2025-11-25"  # auto's fallback asks what current clients ask
        assert sent(evs)[0]["method"] == "initialize"  # the refused probe is not part of the tape
        assert sent(evs)[0]["id"] == 1


def test_fastmcp_client_through_rec_and_against_play(project: Path) -> None:
    # One process drives both runs: importing fastmcp costs seconds on a loaded machine.
    script = """\
import asyncio, json, sys
from fastmcp import Client
ROOT = sys.argv[3]
from fastmcp.client.transports import StdioTransport

async def run(argv):
    async with Client(StdioTransport(command=argv[0], args=argv[1:], cwd=ROOT)) as client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 2, "b": 3})
        return [sorted(t.name for t in tools), result.content[0].text]

async def main():
    live = await run(json.loads(sys.argv[1]))
    # rec's writer ends the tape after the client has gone (it never holds up the wire), and
    # FastMCP does not wait for rec to exit: play starts once the tape is whole, as a user's would.
    tape = json.loads(sys.argv[1])[json.loads(sys.argv[1]).index("--out") + 1]
    for _ in range(600):
        try:
            with open(tape, encoding="utf-8") as fh:
                if '"mcptape":"end"' in fh.read():
                    break
        except OSError:
            pass
        await asyncio.sleep(0.05)
    replayed = await run(json.loads(sys.argv[2]))
    print(json.dumps([live, replayed]))

asyncio.run(main())
"""
    (project / "fm.py").write_text(script, encoding="utf-8")
    tape = project / "fastmcp.tape.jsonl"
    rec = mcptape_command("rec", "--out", str(tape), "--", sys.executable, str(SDK2))
    play = mcptape_command("play", str(tape))
    done = subprocess.run([sys.executable, str(project / "fm.py"), json.dumps(rec), json.dumps(play), str(ROOT)],
                          env=ENV, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    live, replayed = json.loads(done.stdout)
    assert live == [["add", "divide", "echo", "greet"], "5.0"]
    assert replayed == live
    _, evs = events(tape)
    assert sent(evs)[0]["method"] == "server/discover"  # fastmcp opens the 2026-07-28 way; rec recorded it
    assert "3 request(s) answered from the tape, clean" in done.stderr  # play's report: no miss
