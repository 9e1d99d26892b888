"""`mcptape init` as a newcomer runs it: init, `ci --update-golden`, `ci` green, and a change then drifts.

On our annotated fixture (fixtures/servers/notes_server.py: a destructive tool, an unannotated
one, one annotated read-only but named like a change) and on the five reference servers, each in
its own workspace, with real server processes; mcptape's commands run as `python -m mcptape` runs
them, in the test's process (tests/in_process.py). Each server's test is one chain of
commands: init (which runs the session twice itself), record, gate, change the server's world,
gate again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from mcptape.config.json_schema import SCHEMA_ID
from mcptape.config.load import load_config
from tests.conftest import FIXTURES, calc_command, node_server, user_env
from tests.in_process import run_mcptape
from tests.integration.http_helpers import LOOPBACK, background, calc_http_cmd, free_port
from tests.integration.real_servers import GIT_ENV

NOTES_SERVER = FIXTURES / "servers" / "notes_server.py"
TIMEOUT = 240


def mcptape(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_mcptape(args, cwd=cwd, env=env or user_env(), timeout=TIMEOUT)


def ok(proc: subprocess.CompletedProcess[str], code: int = 0) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == code and "Traceback" not in proc.stderr, \
        f"exit {proc.returncode} (wanted {code})\n{proc.stdout}\n{proc.stderr}"
    return proc


def uncommented(text: str) -> str:
    """The config with every commented-out step put back (what a user does to record them)."""
    return re.sub(r"(?m)^(\s+)# (- call: .*|  arguments: .*)$", r"\1\2", text)


def test_init_on_an_annotated_server_gates_it_and_keeps_changes_out_of_the_first_run(tmp_path: Path) -> None:
    env = user_env(NOTES_VARIANT="identical")
    proc = ok(mcptape(tmp_path, "init", "--env", "NOTES_VARIANT", "--", sys.executable, str(NOTES_SERVER), env=env))
    assert "mcptape ci --update-golden" in proc.stdout and "uses: mcptape/action@v1" in proc.stdout
    config = tmp_path / "mcptape.yml"
    text = config.read_text(encoding="utf-8")
    assert text.splitlines()[0] == f"# yaml-language-server: $schema={SCHEMA_ID}"

    steps = load_config(config, env=env).config.sessions[0].steps
    run = [(s.action, s.target, s.arguments) for s in steps]
    assert run == [
        ("list_tools", None, None), ("list_resources", None, None), ("list_resource_templates", None, None),
        ("list_prompts", None, None),
        # examples (through a $ref), an enum's first value, a default; the optional `verbose` left out
        ("call", "lookup", {"key": "welcome", "format": "text", "limit": 3}),
        ("call", "count_notes", None),
        ("call", "clock", None),
        ("read_resource", "notes://index", None),
        ("get_prompt", "draft", {"topic": "example"}),  # the required argument only
    ]
    for tool, why in (("delete_note", "annotated destructiveHint"), ("summarize", "not annotated readOnlyHint"),
                      ("rename_note", "its name says it may change something (rename)")):
        assert re.search(rf"# not run: {re.escape(why)}.*\n\s+# - call: {tool}\n", text), (tool, text)
    assert "# - read_resource: \"notes://note/{key}\"" in text  # the template, to fill in
    # The commented calls are valid steps too: uncommented, the file still loads, with them in it.
    again = tmp_path / "all.yml"
    again.write_text(uncommented(text), encoding="utf-8")
    calls = [s.target for s in load_config(again, env=env).config.sessions[0].steps if s.action == "call"]
    assert calls == ["lookup", "count_notes", "clock", "delete_note", "summarize", "rename_note"]
    # The clock's answer differed between init's two trial runs: a rule for it is in the file.
    rules = load_config(config, env=env).config.normalize
    assert len(rules) == 1 and rules[0].pattern is not None and "clock" in (rules[0].reason or "")

    assert ok(mcptape(tmp_path, "check", env=env)).stdout.startswith("ok: 1 session, 1 server")
    ok(mcptape(tmp_path, "ci", "-u", env=env))
    ok(mcptape(tmp_path, "ci", env=env))
    # The same gate sees a changed server: lookup's answer changes.
    changed = ok(mcptape(tmp_path, "ci", env=user_env(NOTES_VARIANT="changed")), 1)
    assert "tools/call lookup" in changed.stdout

    # Never over an existing file: exit 3, the fix, the file untouched.
    refused = ok(mcptape(tmp_path, "init", "--", sys.executable, str(NOTES_SERVER), env=env), 3)
    assert "mcptape.yml already exists" in refused.stderr and "-o" in refused.stderr
    assert config.read_text(encoding="utf-8") == text
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".mcptape-init")) == []


def test_without_the_trial_runs_the_clock_drifts_on_the_first_gate(tmp_path: Path) -> None:
    """The control for the rule above: the same server, init --no-trial, and the second run differs."""
    ok(mcptape(tmp_path, "init", "--no-trial", "--", sys.executable, str(NOTES_SERVER)))
    assert "\nnormalize:" not in (tmp_path / "mcptape.yml").read_text(encoding="utf-8")
    ok(mcptape(tmp_path, "ci", "-u"))
    drifted = ok(mcptape(tmp_path, "ci"), 1)
    assert "tools/call clock" in drifted.stdout


def test_init_refuses_what_it_cannot_list_and_writes_nothing(tmp_path: Path) -> None:
    nothing = ok(mcptape(tmp_path, "init"), 3)
    assert "mcptape init -- <server command...>" in nothing.stderr
    bad_url = ok(mcptape(tmp_path, "init", "--url", "ftp://127.0.0.1/mcp"), 3)
    assert bad_url.stderr.startswith('mcptape init: --url: "ftp://127.0.0.1/mcp" is not an http(s) URL')
    bad_protocol = ok(mcptape(tmp_path, "init", "--protocol", "2099-01-01", "--", sys.executable, str(NOTES_SERVER)), 3)
    assert 'mcptape init: --protocol: unknown protocol version "2099-01-01"' in bad_protocol.stderr
    dead = ok(mcptape(tmp_path, "init", "--", sys.executable, "-c", "import sys; sys.exit(5)"), 3)
    assert "listing the server failed" in dead.stderr
    secret = ok(mcptape(tmp_path, "init", "--", sys.executable, str(NOTES_SERVER),
                        "--api-key", "sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"), 3)
    assert "holds a secret" in secret.stderr and "9f8e7d6c" not in secret.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_secret_env_value_is_written_as_a_reference(tmp_path: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    ok(mcptape(tmp_path, "init", "--no-trial", "-o", "gate.yml", "--name", "notes", "--env", f"NOTES_TOKEN={token}",
               "--env", "NOTES_MODE=plain", "--", sys.executable, str(NOTES_SERVER)))
    text = (tmp_path / "gate.yml").read_text(encoding="utf-8")
    assert token not in text
    assert 'NOTES_TOKEN: "${NOTES_TOKEN}"' in text and "NOTES_MODE: plain" in text
    assert "  notes:\n" in text and "- name: notes\n" in text


# -- the reference servers ----------------------------------------------------------------------------


@dataclass
class Reference:
    """One reference server's workspace: how to init it, its env, and a change to its world."""

    init: list[str]
    env: dict[str, str] = field(default_factory=dict)
    change: Callable[[], dict[str, str]] = dict  # makes the change; returns env for the ci that must drift


def _python() -> str:
    return sys.executable


def time_server(work: Path) -> Reference:
    # The server's local zone comes from TZ (passed through to servers): another zone changes the
    # descriptions of its tools.
    return Reference(["--", _python(), "-m", "mcp_server_time"], {"TZ": "UTC"}, lambda: {"TZ": "Asia/Tokyo"})


def git_server(work: Path) -> Reference:
    env = dict(GIT_ENV)
    repo = work / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, env=user_env(**env), check=True, capture_output=True, timeout=60)

    git("init", "-q")
    (repo / "a.txt").write_text("one\n", encoding="utf-8")
    git("add", "a.txt")
    git("commit", "-qm", "first")

    def change() -> dict[str, str]:
        (repo / "a.txt").write_text("two\n", encoding="utf-8")
        git("commit", "-qam", "second")
        return {}

    passed = [a for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM") for a in ("--env", name)]
    return Reference([*passed, "--", _python(), "-m", "mcp_server_git", "--repository", "repo"], env, change)


def everything_server(work: Path) -> Reference:
    # get-env answers the server's environment: a variable more is a changed answer.
    entry = str(node_server("everything"))
    return Reference(["--", "node", entry, "stdio"], {"LANG": "C.UTF-8"}, lambda: {"LANG": "en_US.UTF-8"})


def filesystem_server(work: Path) -> Reference:
    files = work / "files"
    files.mkdir()
    (files / "a.txt").write_text("hello\n", encoding="utf-8")

    def change() -> dict[str, str]:
        (files / "b.txt").write_text("new\n", encoding="utf-8")
        return {}

    # Its tools resolve a relative path against its root, not its working directory: started on the
    # absolute directory, init's path arguments (taken from the command) name that directory.
    return Reference(["--", "node", str(node_server("filesystem")), str(files)], {}, change)


def memory_server(work: Path) -> Reference:
    store = work / "memory.jsonl"

    def change() -> dict[str, str]:
        entity = {"type": "entity", "name": "tape", "entityType": "thing", "observations": ["recorded"]}
        store.write_text(json.dumps(entity) + "\n", encoding="utf-8")
        return {}

    return Reference(["--env", f"MEMORY_FILE_PATH={store}", "--", "node", str(node_server("memory"))], {}, change)


REFERENCES = {"time": time_server, "git": git_server, "everything": everything_server,
              "filesystem": filesystem_server, "memory": memory_server}


@pytest.mark.node
@pytest.mark.parametrize("server", sorted(REFERENCES))
def test_init_then_record_then_the_gate_is_green_and_sees_a_change(server: str, tmp_path: Path) -> None:
    if shutil.which("node") is None or shutil.which("git") is None:
        pytest.skip("git and node are needed for the reference servers")
    ref = REFERENCES[server](tmp_path)
    env = user_env(**ref.env)
    ok(mcptape(tmp_path, "init", *ref.init, env=env))
    text = (tmp_path / "mcptape.yml").read_text(encoding="utf-8")
    steps = yaml.safe_load(text)["sessions"][0]["steps"]
    assert steps[0] == "list_tools" and any(isinstance(s, dict) and "call" in s for s in steps), text
    ok(mcptape(tmp_path, "check", env=env))
    ok(mcptape(tmp_path, "ci", "--update-golden", env=env))
    golden = sorted((tmp_path / "tapes").glob("*.tape.jsonl"))
    assert len(golden) == 1
    ok(mcptape(tmp_path, "ci", env=env))
    drifted = mcptape(tmp_path, "ci", env=user_env(**{**ref.env, **ref.change()}))
    assert drifted.returncode in (1, 2), f"{server}: the change went unseen\n{drifted.stdout}\n{drifted.stderr}"
    assert os.environ.get("MCPTAPE_DEBUG") or "Traceback" not in drifted.stderr


@pytest.mark.node
def test_init_over_http_negotiates_or_pins_the_protocol_it_was_given_and_gates_the_server(tmp_path: Path) -> None:
    """server-everything over streamable HTTP refuses server/discover with HTTP 400 (REFERENCE-SERVERS.md):
    init falls back to initialize as ci does, and with --protocol writes the pinned revision for ci.
    Restarted with another LANG, its get-env answer changes: the gate sees it."""
    if shutil.which("node") is None:
        pytest.skip("node is needed for server-everything")
    entry = str(node_server("everything"))
    port = free_port()
    url = f"http://{LOOPBACK}:{port}/mcp"
    with background(["node", entry, "streamableHttp"], port, env={"PORT": str(port), "LANG": "C.UTF-8"}):
        auto = tmp_path / "auto"
        auto.mkdir()
        ok(mcptape(auto, "init", "--no-trial", "--url", url))
        server = yaml.safe_load((auto / "mcptape.yml").read_text(encoding="utf-8"))["servers"]
        assert list(server.values()) == [{"url": url}]  # negotiated each run, as ci does
        pinned = ok(mcptape(tmp_path, "init", "--protocol", "2025-11-25", "--url", url))
        # Its trial runs reach the one process mcptape did not start: state kept between them looks stable.
        assert "the trial runs reach the same HTTP server process (mcptape does not start it)" in pinned.stderr
        server = yaml.safe_load((tmp_path / "mcptape.yml").read_text(encoding="utf-8"))["servers"]
        assert list(server.values()) == [{"url": url, "protocol": "2025-11-25"}]
        ok(mcptape(tmp_path, "ci", "-u"))
        ok(mcptape(tmp_path, "ci"))
    with background(["node", entry, "streamableHttp"], port, env={"PORT": str(port), "LANG": "en_US.UTF-8"}):
        assert mcptape(tmp_path, "ci").returncode == 1


def test_init_over_http_with_the_command_that_starts_it_gets_the_trial_of_a_stdio_server(tmp_path: Path) -> None:
    """`--url URL -- CMD` writes `start:`: each run, the trial's and ci's, starts the server afresh, so a
    count it keeps in its process is the same every run and needs no rule. Without it, the same
    server kept running carries the count from run to run: the trial can only hide it (the control)."""
    port = free_port()
    url = f"http://{LOOPBACK}:{port}/mcp"
    start = calc_http_cmd(port, "--stateful")
    proc = ok(mcptape(tmp_path, "init", "--url", url, "--", *start))
    assert "mcptape does not start it" not in proc.stderr
    config = tmp_path / "mcptape.yml"
    server = load_config(config).config.servers
    assert [(s.url, s.start) for s in server.values()] == [(url, start)]  # type: ignore[union-attr]
    text = config.read_text(encoding="utf-8")
    assert "      - call: get_visits\n" in text and "\nnormalize:" not in text  # "visits: 1" every run
    ok(mcptape(tmp_path, "ci", "-u"))
    ok(mcptape(tmp_path, "ci"))
    config.write_text(text.replace(", --stateful]", "]"), encoding="utf-8")  # a real change: a flag dropped
    assert mcptape(tmp_path, "ci").returncode == 2
    unmanaged = tmp_path / "unmanaged"
    unmanaged.mkdir()
    with background(start, port):
        warned = ok(mcptape(unmanaged, "init", "--url", url))
        assert "mcptape init --url URL -- <command>" in warned.stderr
        assert "(?<=visits: )" in (unmanaged / "mcptape.yml").read_text(encoding="utf-8")  # the count, hidden


BARE_SERVER = """\
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        out = {"result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "bare", "version": "1"}}}
    elif msg["method"] == "ping":
        out = {"result": {}}
    else:
        out = {"error": {"code": -32601, "message": "Method not found"}}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **out}), flush=True)
"""


def test_a_server_that_lists_nothing_gets_a_session_that_pings_it_and_hostile_names_stay_inert(tmp_path: Path) -> None:
    (tmp_path / "bare.py").write_text(BARE_SERVER, encoding="utf-8")
    ok(mcptape(tmp_path, "init", "--no-trial", "--", sys.executable, "bare.py"))
    text = (tmp_path / "mcptape.yml").read_text(encoding="utf-8")
    assert "# - list_tools        # not offered: the server answered 'Method not found'" in text
    assert [s for s in yaml.safe_load(text)["sessions"][0]["steps"]] == ["ping"]
    ok(mcptape(tmp_path, "ci", "-u"))
    ok(mcptape(tmp_path, "ci"))
    # Tool names with terminal escapes, bidi and zero-width characters, and a newline: escaped in the
    # comments, exact in the (commented) steps, and the file still loads.
    out = tmp_path / "hostile.yml"
    ok(mcptape(tmp_path, "init", "--no-trial", "-o", str(out), "--", *calc_command("hostile_names")))
    hostile = out.read_text(encoding="utf-8")
    assert not [c for c in hostile if not c.isprintable() and c != "\n"]
    assert '# - call: "two\\n::error::forged by a tool name"' in hostile
    again = tmp_path / "again.yml"
    again.write_text(uncommented(hostile), encoding="utf-8")
    assert "two\n::error::forged by a tool name" in [s.target for s in load_config(again).config.sessions[0].steps]


def test_a_config_written_elsewhere_starts_the_server_where_init_did(tmp_path: Path) -> None:
    """`-o sub/mcptape.yml` with a relative server command: ci runs the server from init's directory
    (cwd: relative to the config file), wherever ci itself is run from."""
    shutil.copy(NOTES_SERVER, tmp_path / "server.py")
    (tmp_path / "gate").mkdir()
    proc = ok(mcptape(tmp_path, "init", "-o", "gate/mcptape.yml", "--", sys.executable, "server.py"))
    assert "mcptape ci -c gate/mcptape.yml --update-golden" in proc.stdout and "git add gate/mcptape.yml gate/tapes/" in proc.stdout
    written = (tmp_path / "gate" / "mcptape.yml").read_text(encoding="utf-8")
    assert yaml.safe_load(written)["servers"]["server"]["cwd"] == ".."
    assert "#   mcptape ci -c gate/mcptape.yml --update-golden\n" in written  # the header's commands name the file too
    ok(mcptape(tmp_path, "ci", "-c", "gate/mcptape.yml", "-u"))
    assert (tmp_path / "gate" / "tapes" / "server.tape.jsonl").is_file()
    ok(mcptape(tmp_path / "gate", "ci"))


def test_a_trial_run_that_fails_is_said_and_written_into_the_file(tmp_path: Path) -> None:
    """A read-only tool that kills its server: the listing works, the trial run does not. The file is
    still written (exit 0: it is a draft to fix), with the failure on stderr and in a comment."""
    server = BARE_SERVER.replace(
        '''    elif msg["method"] == "ping":''',
        '''    elif msg["method"] == "tools/list":
        out = {"result": {"tools": [{"name": "explode", "annotations": {"readOnlyHint": True},
                                     "inputSchema": {"type": "object"}}]}}
    elif msg["method"] == "tools/call":
        sys.exit(3)
    elif msg["method"] == "ping":''')
    (tmp_path / "explode.py").write_text(server, encoding="utf-8")
    # By default init's probe calls it first, and it is written commented out with what happened.
    probed = tmp_path / "probed"
    probed.mkdir()
    ok(mcptape(probed, "init", "--", sys.executable, "../explode.py"))
    assert re.search(r"# not run: init's call with these example arguments failed .*\n\s+# - call: explode\n",
                     (probed / "mcptape.yml").read_text(encoding="utf-8"))
    # --no-probe calls nothing before the user says so: the read-only tool is written active, unchecked.
    proc = ok(mcptape(tmp_path, "init", "--no-probe", "--", sys.executable, "explode.py"))
    assert proc.stderr.count("warning: a trial run of the session failed") == 1
    assert "the trial run failed (see the warning)" in proc.stdout
    text = (tmp_path / "mcptape.yml").read_text(encoding="utf-8")
    assert "# init's trial run of the session failed; fix the step it names before recording:" in text
    assert "      - call: explode\n" in text
    assert ok(mcptape(tmp_path, "ci", "-u"), 3).returncode == 3  # what the warning said: it cannot record yet


def test_init_over_http_keeps_a_header_variable_a_variable_and_refuses_a_literal_secret(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://{LOOPBACK}:{port}/mcp"
    secret = "sk-live-" + "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
    env = user_env(NOTES_KEY=secret)
    with background(calc_http_cmd(port), port):
        refused = ok(mcptape(tmp_path, "init", "--url", url, "-H", f"Authorization: Bearer {secret}"), 3)
        assert "--header Authorization: its value is a secret" in refused.stderr and secret not in refused.stderr
        assert not (tmp_path / "mcptape.yml").exists()
        ok(mcptape(tmp_path, "init", "--no-trial", "--url", url, "-H", "X-Api-Key: ${NOTES_KEY}", env=env))
        text = (tmp_path / "mcptape.yml").read_text(encoding="utf-8")
        assert secret not in text
        assert yaml.safe_load(text)["servers"]["http-calc-fixture"]["headers"] == {"X-Api-Key": "${NOTES_KEY}"}
        ok(mcptape(tmp_path, "ci", "-u", env=env))
        ok(mcptape(tmp_path, "ci", env=env))
        assert secret not in "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "tapes").iterdir())
        unset = ok(mcptape(tmp_path, "ci"), 3)  # what the variable is for: ci needs it
        assert "NOTES_KEY is not set" in unset.stderr
