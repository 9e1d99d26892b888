"""`protocol: both` (issue 29, item 7): one session line, a golden per era, each diffed and each
served to its era's client by play (mcptape/ci/eras.py, mcptape/replay/era_pair.py).

Real servers: `mcptape ci` (tests/in_process.py) against fixtures/servers/sdk2_server.py (the official SDK
2.x `MCPServer`, which speaks 2026-07-28 and answers `initialize` 2025-11-25) and the legacy-only
fixtures/servers/calc_server.py; `mcptape play` driven by the official SDK's `Client`.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcptape.ci.eras import base_name, era_refusal
from mcptape.config.models import Session, Step
from mcptape.errors import RequestRefused
from mcptape.live.client import _with_stderr
from mcptape.replay.era_pair import client_era, era_tapes
from tests.conftest import CALC_SERVER, FIXTURES, ROOT, mcptape_command, user_env
from tests.in_process import run_mcptape

SDK2 = FIXTURES / "servers" / "sdk2_server.py"
ENV = user_env(PYTHONPATH=str(ROOT))
CONFIG = """\
version: 1
golden_dir: tapes
servers:
  sdk2:
    command: [{python}, {sdk2}, --variant, {variant}]
    protocol: both
  calc:
    command: [{python}, {calc}]
sessions:
  - name: arith
    server: sdk2
    steps:
      - list_tools
      - call: add
        arguments: {{a: 2, b: 3}}
      - read_resource: calc://constants
"""
LEGACY_ONLY = """\
  - name: calc
    server: calc
    client: {protocol: both}
    steps:
      - call: add
        arguments: {a: 2, b: 3}
"""


def mcptape(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_mcptape(args, cwd=cwd, env=ENV, timeout=120)


def write(path: Path, variant: str, *, legacy_only: bool = False) -> None:
    text = CONFIG.format(python=sys.executable, sdk2=SDK2, calc=CALC_SERVER, variant=variant)
    path.write_text(text + (LEGACY_ONLY if legacy_only else ""), encoding="utf-8")


def header(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8").splitlines()[0]))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("both")
    write(root / "mcptape.yml", "identical")
    write(root / "changed.yml", "changed_result")
    update = mcptape("ci", "--update-golden", cwd=root)
    assert update.returncode == 0, update.stdout + update.stderr
    return root


def test_one_session_line_gives_an_exact_golden_per_era_green_until_the_server_changes(project: Path) -> None:
    tapes = project / "tapes"
    modern, legacy = tapes / "arith@2026-07-28.tape.jsonl", tapes / "arith@2025-11-25.tape.jsonl"
    assert (header(modern)["protocol"], header(modern)["negotiation"]) == ("2026-07-28", "discover")
    assert (header(legacy)["protocol"], header(legacy)["negotiation"]) == ("2025-11-25", "initialize")
    assert not (tapes / "arith.tape.jsonl").exists()
    legacy_methods = [json.loads(line).get("method") for line in legacy.read_text(encoding="utf-8").splitlines()]
    assert "initialize" in legacy_methods and "server/discover" not in legacy_methods  # recorded, not synthesized

    green = mcptape("ci", "--json=green.json", cwd=project)
    assert green.returncode == 0, green.stdout + green.stderr
    report = json.loads((project / "green.json").read_text(encoding="utf-8"))
    assert {s["name"]: s["verdict"] for s in report["sessions"]} == {"arith@2026-07-28": "same", "arith@2025-11-25": "same"}
    assert "orphan" not in green.stdout  # the era goldens belong to the session

    # The same change (add returns a + b + 1) drifts in both eras, each under its era's name.
    drift = mcptape("ci", "-c", "changed.yml", "--json=changed.json", cwd=project)
    assert drift.returncode == 1, drift.stdout + drift.stderr
    report = json.loads((project / "changed.json").read_text(encoding="utf-8"))
    assert {s["name"]: s["verdict"] for s in report["sessions"]} == {"arith@2026-07-28": "output", "arith@2025-11-25": "output"}
    assert "── arith@2026-07-28 (output)" in drift.stdout and "── arith@2025-11-25 (output)" in drift.stdout

    one = mcptape("ci", "--session", "arith@2025-11-25", "--json=one.json", cwd=project)  # one era by its name
    assert one.returncode == 0, one.stdout + one.stderr
    assert [s["name"] for s in json.loads((project / "one.json").read_text(encoding="utf-8"))["sessions"]] == ["arith@2025-11-25"]


def test_a_server_that_does_not_speak_an_era_is_a_finding_and_its_other_era_still_gates(tmp_path: Path) -> None:
    project = tmp_path  # its own goldens: the module's project holds only the SDK 2.x session's
    write(project / "legacy.yml", "identical", legacy_only=True)
    update = mcptape("ci", "-c", "legacy.yml", "--update-golden", "--session", "calc", "--json=calc.json", cwd=project)
    assert update.returncode == 2, update.stdout + update.stderr
    assert "Traceback" not in update.stderr
    verdicts = {s["name"]: s for s in json.loads((project / "calc.json").read_text(encoding="utf-8"))["sessions"]}
    assert verdicts["calc@2025-11-25"]["verdict"] == "updated"
    refused = verdicts["calc@2026-07-28"]
    assert refused["verdict"] == "structural"
    assert "the server does not speak 2026-07-28: it refused `server/discover` (-32601)" in update.stdout
    assert "protocol: 2025-11-25" in update.stdout  # the fix
    assert not (project / "tapes" / "calc@2026-07-28.tape.jsonl").exists()
    assert (project / "tapes" / "calc@2025-11-25.tape.jsonl").exists()
    legacy = mcptape("ci", "-c", "legacy.yml", "--session", "calc@2025-11-25", cwd=project)
    assert legacy.returncode == 0, legacy.stdout + legacy.stderr


async def sdk_call(tape: Path, mode: str) -> tuple[str, Any, str]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    server = StdioServerParameters(command=sys.executable, args=["-m", "mcptape", "play", str(tape)], cwd=str(ROOT))
    async with Client(server, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
        result = await client.call_tool("add", {"a": 2, "b": 3})
        return str(client.session.protocol_version), result.structured_content, mode


@pytest.mark.parametrize(("given", "mode", "version"), [
    ("arith.tape.jsonl", "legacy", "2025-11-25"),  # the session's name: the pair
    ("arith.tape.jsonl", "auto", "2026-07-28"),
    ("arith@2026-07-28.tape.jsonl", "legacy", "2025-11-25"),  # either tape of the pair: its sibling answers
    ("arith@2025-11-25.tape.jsonl", "auto", "2026-07-28"),
])
def test_play_serves_each_era_from_its_own_golden(project: Path, given: str, mode: str, version: str) -> None:
    import anyio

    assert anyio.run(sdk_call, project / "tapes" / given, mode) == (version, {"result": 5.0}, mode)
    # stderr says which tape served, and the legacy client got the recorded handshake, not play's synthesis
    done = subprocess.run(mcptape_command("play", str(project / "tapes" / given)), cwd=project, env=ENV,
                          input=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                              "protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}}) + "\n",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "serving " + str(project / "tapes" / "arith@2025-11-25.tape.jsonl") in done.stderr
    assert "answered this legacy client" not in done.stderr  # legacy_client.py's synthesis was not needed


def test_the_pair_and_the_era_of_a_first_line_are_read_from_names_and_messages(tmp_path: Path) -> None:
    assert era_tapes(str(tmp_path / "s.tape.jsonl")) is None  # no pair on disk
    for v in ("2026-07-28", "2025-11-25"):
        (tmp_path / f"s@{v}.tape.jsonl").write_text("", encoding="utf-8")
    pair = era_tapes(str(tmp_path / "s.tape.jsonl"))
    assert pair == {"modern": tmp_path / "s@2026-07-28.tape.jsonl", "legacy": tmp_path / "s@2025-11-25.tape.jsonl"}
    assert era_tapes(str(tmp_path / "s@2025-11-25.tape.jsonl")) == pair
    assert client_era(b'{"jsonrpc":"2.0","id":1,"method":"initialize"}\n') == "legacy"
    assert client_era(b'{"jsonrpc":"2.0","id":0,"method":"server/discover"}\n') == "modern"
    assert client_era(b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":'
                      b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}\n') == "modern"
    assert client_era(b"not json\n") is None
    assert base_name("s@2026-07-28") == "s" and base_name("plain") == "plain"
    with pytest.raises(ValueError):  # a configured name cannot hold the era's mark: no clash with an era session
        Session(name="s@2026-07-28", server="x", steps=[Step(action="list_tools")])
    era = Session(name="s", server="x", steps=[Step(action="list_tools")]).model_copy(update={"name": "s@2026-07-28"})
    refused = [{"dir": "s2c", "kind": "error", "method": "server/discover", "msg": {"error": {"code": -32601}}}]
    assert era_refusal(era, refused, None) is not None
    assert era_refusal(era, [], None) is None  # no answer at all (a crash) stays the session's error
    assert era_refusal(era, refused, "2026-07-28") is None
    # Over HTTP a legacy server refuses the POST itself (server-everything: 400), with the status kept
    # through the client's error (client._with_stderr).
    http = _with_stderr(RequestRefused("refused", request_id=0, status=400), "Server not initialized")
    assert isinstance(http, RequestRefused) and (http.status, http.request_id) == (400, 0)
    assert "Server not initialized" in http.message
    by_http = era_refusal(era, [], None, http)
    assert by_http is not None and "refused `server/discover` (HTTP 400)" in by_http.drifts[0].findings[0].message


def test_play_listen_names_the_two_tapes_of_a_pair_it_cannot_choose_between(project: Path) -> None:
    done = mcptape("play", "tapes/arith.tape.jsonl", "--listen", "127.0.0.1:0", cwd=project)
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert "is a `protocol: both` pair; play --listen serves one tape" in done.stderr
    assert "tapes/arith@2026-07-28.tape.jsonl and tapes/arith@2025-11-25.tape.jsonl" in done.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_two_eras_of_a_server_ci_starts_on_one_port_take_turns(tmp_path: Path) -> None:
    """An HTTP server with `start:` listens on the one port of its `url`: its two era sessions run in
    parallel workers (-j 2) one after the other, not into "port already in use"."""
    port = free_port()
    (tmp_path / "mcptape.yml").write_text(f"""\
version: 1
golden_dir: tapes
servers:
  calc:
    url: http://127.0.0.1:{port}/mcp
    start: [{sys.executable}, {FIXTURES / "servers" / "http_calc_server.py"}, streamable-http, --port, "{port}"]
    protocol: both
sessions:
  - name: http
    server: calc
    steps:
      - call: add
        arguments: {{a: 2, b: 3}}
""", encoding="utf-8")
    update = mcptape("ci", "--update-golden", "-j", "2", cwd=tmp_path)
    assert update.returncode == 0, update.stdout + update.stderr
    for version, negotiation in (("2026-07-28", "discover"), ("2025-11-25", "initialize")):
        tape = tmp_path / "tapes" / f"http@{version}.tape.jsonl"
        assert (header(tape)["protocol"], header(tape)["negotiation"], header(tape)["transport"]) == (
            version, negotiation, "http")
    green = mcptape("ci", "-j", "2", cwd=tmp_path)
    assert green.returncode == 0, green.stdout + green.stderr
