"""The pytest plugin (mcptape/pytest_plugin.py), run the way a user runs it: pytester's own pytest
process, loading the plugin through its `pytest11` entry point, with test files whose MCP client
is the official SDK's `ClientSession` (and FastMCP's `Client`) against `mcptape_server`.

Each record mode is shown on the calc fixture server, copied into the test's directory so that
"offline" is literal: after recording, the server file is deleted and the replay still passes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CALC_SERVER, ROOT

pytest_plugins = ["pytester"]

AGENT = '''
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

SERVER = [sys.executable, str(Path(__file__).with_name("calc_server.py"))]


async def add(server, *pairs):
    async with stdio_client(server.stdio_parameters()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out = []
        for a, b in pairs:
            result = await session.call_tool("add", {"a": a, "b": b})
            out.append(result.content[0].text)
        return out


@pytest.mark.mcptape(server=SERVER)
def test_add(mcptape_server):
    assert anyio.run(add, mcptape_server, *PAIRS) == EXPECTED
'''


def agent(pairs: list[tuple[int, int]], expected: list[str]) -> str:
    return AGENT + f"\nPAIRS = {pairs!r}\nEXPECTED = {expected!r}\n"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A directory with the calc server, and a developer's environment (this suite runs under CI=true)."""
    shutil.copy(CALC_SERVER, pytester.path / "calc_server.py")
    for name in ("CI", "GITHUB_ACTIONS", "MCPTAPE_RECORD_MODE", "MCPTAPE_ALLOW_RECORD_IN_CI", "MCPTAPE_FIXTURE_VARIANT"):
        monkeypatch.delenv(name, raising=False)
    return pytester


TAPE = Path("tapes") / "test_agent" / "test_add.tape.jsonl"


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    # Without hypothesis' plugin, a dev dependency of ours that a user's project need not have:
    # it imports all of hypothesis at start, 0.6 s of CPU in each of this module's 40 pytest runs.
    return project.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-q", *args, timeout=240)


def requests(path: Path) -> list[str]:
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:-1]]
    return [json.dumps(e["msg"]["params"], sort_keys=True) for e in events if e.get("kind") == "request" and e["method"] == "tools/call"]


def test_none_is_the_default_and_a_missing_tape_fails_with_how_to_record_it(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]))
    result = run(project)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*mcptape: no tape at *test_add.tape.jsonl (record mode none plays only)*--mcptape-record-mode=once*"])
    assert not (project.path / TAPE).exists()


def test_once_records_then_replays_offline_with_the_server_gone(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=agent([(2, 3), (20, 22)], ["5", "42"]))
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)
    tape = project.path / TAPE
    assert tape.exists() and len(requests(tape)) == 2
    recorded = tape.read_bytes()
    (project.path / "calc_server.py").unlink()  # offline: nothing left to go live to
    run(project).assert_outcomes(passed=1)
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)  # once: the tape exists, so it plays
    assert tape.read_bytes() == recorded


def test_a_call_the_tape_lacks_fails_the_test_with_plays_near_miss(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]))
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)
    project.makepyfile(test_agent=agent([(2, 4)], ["6"]))
    result = run(project)
    result.assert_outcomes(failed=1)  # one failure, no second error at teardown, no unused noise
    result.stdout.fnmatch_lines(["*no recorded tools/call add {\"a\":2,\"b\":4} on the tape*arguments.b differs: 3 recorded, 4 asked*"])
    assert "recordings no test used" not in str(result.stdout)


def test_a_miss_the_client_swallows_still_fails_the_test(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]))
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]) + '''

async def swallow(server):
    async with stdio_client(server.stdio_parameters()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("add", {"a": 2, "b": 3})
        try:
            await session.call_tool("add", {"a": 7, "b": 7})
        except Exception:
            pass


@pytest.mark.mcptape(server=SERVER, tape="tapes/test_agent/test_add.tape.jsonl")
def test_swallowing(mcptape_server):
    anyio.run(swallow, mcptape_server)
''')
    result = run(project)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*mcptape: 1 request(s) the tape *test_add.tape.jsonl could not answer:*",
                                 "*tools/call add {\"a\":7,\"b\":7}: nearest: *"])


def test_new_episodes_replays_and_records_what_the_tape_lacks(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]))
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)
    tape = project.path / TAPE
    project.makepyfile(test_agent=agent([(2, 3), (20, 22)], ["5", "42"]))
    run(project).assert_outcomes(failed=1)  # none: the new call is a miss, nothing goes live
    assert len(requests(tape)) == 1
    run(project, "--mcptape-record-mode=new_episodes").assert_outcomes(passed=1)
    assert requests(tape) == [json.dumps({"arguments": {"a": 2, "b": 3}, "name": "add"}, sort_keys=True),
                              json.dumps({"arguments": {"a": 20, "b": 22}, "name": "add"}, sort_keys=True)]
    (project.path / "calc_server.py").unlink()
    run(project).assert_outcomes(passed=1)  # both calls now play offline


def test_all_re_records_every_tape(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]))
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)
    tape = project.path / TAPE
    changed = agent([(2, 3)], ["6"]).replace(  # the server now answers a+b+1
        'with_name("calc_server.py"))]', 'with_name("calc_server.py")), "--variant", "changed_result"]')
    project.makepyfile(test_agent=changed)
    run(project, "--mcptape-record-mode=once").assert_outcomes(failed=1)  # once: the old tape plays, "5"
    run(project, "--mcptape-record-mode=all").assert_outcomes(passed=1)
    assert '"text":"6"' in tape.read_text(encoding="utf-8")
    (project.path / "calc_server.py").unlink()
    run(project).assert_outcomes(passed=1)  # the re-recorded tape answers 6 without the server


def test_the_mode_comes_from_the_environment_or_the_ini_file(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]))
    project.makeini("[pytest]\nmcptape_record_mode = once\n")
    run(project).assert_outcomes(passed=1)
    (project.path / TAPE).unlink()
    monkeypatch.setenv("MCPTAPE_RECORD_MODE", "none")  # the environment wins over the ini file
    run(project).assert_outcomes(errors=1)
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)  # and the option over both
    monkeypatch.setenv("MCPTAPE_RECORD_MODE", "sometimes")
    result = run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*mcptape record mode 'sometimes': expected one of none, once, new_episodes, all*"])


def test_recording_under_ci_is_refused_unless_allowed(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]))
    monkeypatch.setenv("CI", "true")
    result = run(project, "--mcptape-record-mode=once")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*CI=true: refusing to record*--mcptape-allow-record-in-ci*"])
    assert not (project.path / TAPE).exists()
    run(project, "--mcptape-record-mode=once", "--mcptape-allow-record-in-ci").assert_outcomes(passed=1)
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)  # playing under CI is what CI is for
    run(project, "--mcptape-record-mode=all").assert_outcomes(errors=1)


def test_recordings_no_test_used_are_reported_and_can_fail_the_run(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=agent([(2, 3), (20, 22)], ["5", "42"]))
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]))
    result = run(project)
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*mcptape: recordings no test used*", "*test_add.tape.jsonl: 1 recorded call(s) never asked*",
                                 '*tools/call add {"a":20,"b":22}*'])
    failing = run(project, "--mcptape-fail-unused")
    failing.assert_outcomes(passed=1)
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    # A test that uses every recording reports nothing, and --mcptape-fail-unused passes.
    project.makepyfile(test_agent=agent([(2, 3), (20, 22)], ["5", "42"]))
    clean = run(project, "--mcptape-fail-unused")
    assert clean.ret == 0 and "recordings no test used" not in str(clean.stdout)


def test_a_misspelt_marker_argument_fails_the_test_and_names_the_right_ones(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]).replace("mcptape(server=SERVER)", "mcptape(sever=SERVER)"))
    result = run(project, "--mcptape-record-mode=once")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*@pytest.mark.mcptape: unknown argument(s) sever; it takes tape, server, url*"])


def test_marker_matching_options_reach_play(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]))
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]).replace(
        "@pytest.mark.mcptape(server=SERVER)", '@pytest.mark.mcptape(server=SERVER, match_on="name", allow_reuse=True)'
    ).replace("PAIRS = [(2, 3)]", "PAIRS = [(1, 1), (8, 9)]").replace("EXPECTED = ['5']", "EXPECTED = ['5', '5']"))
    run(project).assert_outcomes(passed=1)


FALLBACK_AGENT = '''

async def agent(server):
    """On an error from add, this agent falls back to echoing what it meant to add."""
    from mcp.shared.exceptions import MCPError

    async with stdio_client(server.stdio_parameters()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        try:
            return (await session.call_tool("add", {"a": 2, "b": 3})).content[0].text
        except MCPError as e:
            return f"fallback {e.error.code}"


@pytest.mark.mcptape(server=SERVER, MARKER)
def test_lab(mcptape_server):
    assert anyio.run(agent, mcptape_server) == EXPECTED_LAB
'''


def test_the_marker_plays_a_fork_spec_and_faults_and_leaves_the_tape_alone(project: pytest.Pytester) -> None:
    project.makepyfile(test_agent=agent([(2, 3)], ["5"]))
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)
    tape = project.path / TAPE
    recorded = tape.read_bytes()
    lab = agent([(2, 3)], ["5"]) + FALLBACK_AGENT
    at = 2  # initialize, then add

    def with_marker(marker: str, expected: str) -> str:
        return lab.replace("MARKER", marker).replace("EXPECTED_LAB", repr(expected)).replace(
            "def test_lab", "def test_add_lab").replace('tape=None', '')

    # The lab test plays test_add's tape (tape=...): a fork whose error sends the agent down its fallback path.
    spec = f'tape="{TAPE}", fork={{"at": {at}, "error": "-32000:quota"}}'
    project.makepyfile(test_agent=with_marker(spec, "fallback -32000"))
    run(project).assert_outcomes(passed=2)
    project.makepyfile(test_agent=with_marker(f'tape="{TAPE}", faults=["tool=add,error=-32042:flaky"]', "fallback -32042"))
    run(project).assert_outcomes(passed=2)
    # No fork, no fault: the recorded answer, at the recorded pace (play's --pace; a bad one fails the test).
    project.makepyfile(test_agent=with_marker(f'tape="{TAPE}", pace="recorded"', "5"))
    run(project).assert_outcomes(passed=2)
    assert tape.read_bytes() == recorded
    # A typo in pace= or faults= is the test's setup error naming the option, not "Connection closed"
    # from the client when play exits 3 under it.
    project.makepyfile(test_agent=with_marker(f'tape="{TAPE}", pace="slowly"', "5"))
    slow = run(project)
    slow.assert_outcomes(passed=1, errors=1)
    slow.stdout.fnmatch_lines(["*mcptape: --pace 'slowly': give `recorded`*"])
    project.makepyfile(test_agent=with_marker(f'tape="{TAPE}", faults=["tool=add,eror=-32042:flaky"]', "fallback -32042"))
    typo = run(project)
    typo.assert_outcomes(passed=1, errors=1)
    typo.stdout.fnmatch_lines(["*mcptape: --fault 'tool=add,eror=-32042:flaky': unknown item 'eror'*"])
    assert "Connection closed" not in str(typo.stdout)
    project.makepyfile(test_agent=with_marker(spec, "fallback -32000"))
    refused = run(project, "--mcptape-record-mode=all")
    refused.stdout.fnmatch_lines(["*fork= plays a fork of a recorded tape*"])


FASTMCP_AGENT = '''
import sys
from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport


@pytest.mark.mcptape(server=[sys.executable, str(Path(__file__).with_name("calc_server.py"))])
def test_fastmcp_add(mcptape_server):
    async def main():
        command = mcptape_server.command
        async with Client(StdioTransport(command=command[0], args=command[1:])) as client:
            return (await client.call_tool("add", {"a": 2, "b": 3})).content[0].text

    assert anyio.run(main) == "5"
'''


def test_fastmcp_client_records_and_replays_through_the_fixture(project: pytest.Pytester) -> None:
    project.makepyfile(test_fm=FASTMCP_AGENT)
    run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)
    tape = project.path / "tapes" / "test_fm" / "test_fastmcp_add.tape.jsonl"
    assert tape.exists()
    (project.path / "calc_server.py").unlink()
    run(project).assert_outcomes(passed=1)


HTTP_AGENT = '''
import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


@pytest.mark.mcptape(url=URL)
def test_http_add(mcptape_server):
    async def main():
        async with streamable_http_client(mcptape_server.url) as (read, write, *_), ClientSession(read, write) as session:
            await session.initialize()
            return (await session.call_tool("add", {"a": 2, "b": 3})).content[0].text

    assert mcptape_server.url.startswith("http://127.0.0.1:") and mcptape_server.command == []
    assert anyio.run(main) == "5.0"
'''


def test_an_http_server_is_recorded_through_rec_listen_and_replayed_by_play_listen(project: pytest.Pytester) -> None:
    from tests.integration.http_helpers import background, calc_http_cmd, free_port

    port = free_port()
    project.makepyfile(test_web=HTTP_AGENT.replace("URL", repr(f"http://127.0.0.1:{port}/mcp")))
    with background(calc_http_cmd(port), port):
        run(project, "--mcptape-record-mode=once").assert_outcomes(passed=1)
    tape = project.path / "tapes" / "test_web" / "test_http_add.tape.jsonl"
    assert '"text":"5.0"' in tape.read_text(encoding="utf-8")
    run(project).assert_outcomes(passed=1)  # the server is stopped: play --listen serves the tape
    # new_episodes over HTTP: play --listen answers the tape's call, the live server the new one.
    project.makepyfile(test_web=HTTP_AGENT.replace("URL", repr(f"http://127.0.0.1:{port}/mcp")).replace(
        '("add", {"a": 2, "b": 3})).content[0].text', '("add", {"a": 2, "b": 3})).content[0].text, '
        '(await session.call_tool("add", {"a": 20, "b": 22})).content[0].text').replace('== "5.0"', '== ("5.0", "42.0")'))
    run(project).assert_outcomes(failed=1)
    with background(calc_http_cmd(port), port):
        run(project, "--mcptape-record-mode=new_episodes").assert_outcomes(passed=1)
    assert '"text":"42.0"' in tape.read_text(encoding="utf-8")
    run(project).assert_outcomes(passed=1)


def test_the_plugin_is_registered_and_loads_nothing_heavy() -> None:
    code = (
        "import sys, importlib.metadata as m\n"
        "[ep] = [e for e in m.entry_points(group='pytest11') if e.name == 'mcptape']\n"
        "ep.load()\n"
        "heavy = sorted({k.split('.')[0] for k in sys.modules} & {'rich', 'pydantic', 'jsonschema', 'mcp', 'httpx', 'ghapi'})\n"
        "print(ep.value, heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "mcptape.pytest_plugin []"


EXAMPLE = ROOT / "fixtures" / "example" / "agent" / "test_calc_agent.py"


def test_the_readme_example_is_the_committed_one_and_passes_offline_from_a_fresh_clone(tmp_path: Path) -> None:
    from tests.checkout import clean_copy

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "```python\n" + EXAMPLE.read_text(encoding="utf-8") + "```" in readme
    clone = clean_copy(tmp_path / "clone")
    (clone / "fixtures" / "servers" / "calc_server.py").unlink()  # offline: the tapes are all there is
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "MCPTAPE_RECORD_MODE")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "fixtures/example/agent"],
                          cwd=clone, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 passed" in done.stdout and "recordings no test used" not in done.stdout
    # Positive control: a tape the example needs, gone, fails it with how to record it.
    (clone / "fixtures" / "example" / "agent" / "tapes" / "test_calc_agent" / "test_the_sdk_client_adds.tape.jsonl").unlink()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "fixtures/example/agent"],
                          cwd=clone, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 1 and "--mcptape-record-mode=once" in done.stdout
