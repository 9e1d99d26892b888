"""No printed or written path carries a secret: usage errors, server start failures, config errors
with interpolated values, init's mcptape.yml, and the command line of play's rec child.

Each case runs mcptape as a user does (a real process) and looks for the secret on stderr, stdout
and in every file; and each shows the message still says what went wrong.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcptape.config.load import load_config
from mcptape.init.config_file import render_config
from mcptape.init.server import Surface
from mcptape.replay import fallback
from tests.conftest import FIXTURES, mcptape_command, user_env

GH = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
SK = "sk-" + "abcdefghijklmnopqrstuvwx123"
PLAIN_PW = "hunter22secret"
RANDOM = "k9Xv2Lq7Pz4Rt6WmB3abc"  # no shape, no telling name: only knowing it finds it


def run(tmp_path: Path, *args: str, stdin: bytes = b"", **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mcptape_command(*args), input=stdin.decode(), capture_output=True, text=True,
                          cwd=tmp_path, env=user_env(**env), timeout=60)


def written(tmp_path: Path) -> str:
    return "\n".join(p.read_text("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    ("argv", "secret"),
    [
        (["rec", "--", "/nonexistent", "--token", GH], GH),
        (["rec", "--", "/nonexistent", "--api-key", SK], SK),
        (["rec", "--", "/nonexistent", f"--password={PLAIN_PW}"], PLAIN_PW),
        (["rec", "--", "/nonexistent", "--token", RANDOM], RANDOM),
        (["ls", f"--token={GH}", "x"], GH),  # a usage error quotes what was typed
        (["ls", f"--password={PLAIN_PW}", "x"], PLAIN_PW),
    ],
)
def test_a_command_line_secret_is_not_printed_by_an_error(tmp_path: Path, argv: list[str], secret: str) -> None:
    done = run(tmp_path, *argv)
    assert done.returncode == 3, done.stderr
    assert secret not in done.stderr + done.stdout + written(tmp_path)
    assert "failed to start" in done.stderr or "unrecognized arguments" in done.stderr


def test_a_server_file_that_is_not_executable_fails_without_printing_the_token(tmp_path: Path) -> None:
    server = tmp_path / "server.py"
    server.write_text("print('hi')\n")
    server.chmod(server.stat().st_mode & ~(stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    done = run(tmp_path, "rec", "--", str(server), "--token", GH)
    assert done.returncode == 3 and "Permission denied" in done.stderr
    assert GH not in done.stderr + written(tmp_path)


def test_play_fallback_does_not_print_the_servers_token(tmp_path: Path) -> None:
    tape = FIXTURES / "example" / "tapes" / "surface.tape.jsonl"
    ask = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
           b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
           b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{}}}\n')
    done = run(tmp_path, "play", str(tape), "--fallback", "--", "/nonexistent", "--token", GH, stdin=ask)
    assert "failed to start" in done.stderr
    assert GH not in done.stderr + done.stdout + written(tmp_path)


CONFIG = """version: 1
servers:
  calc:
    command: [python3, {server}]
{url}sessions:
  - name: s
    server: {name}
    steps:
      - call: add
        arguments: {{a: 1, b: 2}}
{timeout}"""


@pytest.mark.parametrize("value", [RANDOM, GH, PLAIN_PW])
def test_a_config_error_does_not_quote_an_interpolated_value(tmp_path: Path, value: str) -> None:
    (tmp_path / "mcptape.yml").write_text(CONFIG.format(
        server=FIXTURES / "servers" / "calc_server.py", url="", name="calc", timeout='        timeout: "${MY_VALUE}"\n'))
    done = run(tmp_path, "ci", MY_VALUE=value)
    assert done.returncode == 3
    assert "mcptape.yml:11" in done.stderr and "timeout" in done.stderr and "${MY_VALUE}" in done.stderr
    assert value not in done.stderr + done.stdout + written(tmp_path)


def test_a_config_error_does_not_quote_a_urls_password(tmp_path: Path) -> None:
    (tmp_path / "mcptape.yml").write_text(CONFIG.format(
        server=FIXTURES / "servers" / "calc_server.py", url="  web:\n    url: ${DB_URL}\n", name="web", timeout=""))
    done = run(tmp_path, "ci", DB_URL=f"postgres://app:{RANDOM}@db/x")
    assert done.returncode == 3 and "servers.web.url" in done.stderr
    assert RANDOM not in done.stderr + done.stdout


@pytest.mark.parametrize(
    "url", [f"http://user:{RANDOM}@127.0.0.1:1/mcp", f"http://127.0.0.1:1/mcp?access_token={GH}"]
)
def test_init_refuses_a_url_with_a_credential_and_writes_nothing(tmp_path: Path, url: str) -> None:
    done = run(tmp_path, "init", "--url", url)
    assert done.returncode == 3 and "--url" in done.stderr and "${" in done.stderr  # the fix: a variable
    assert not (tmp_path / "mcptape.yml").exists()
    assert RANDOM not in done.stderr and GH not in done.stderr


def test_init_escapes_what_a_server_lists_so_ci_never_interpolates_it(tmp_path: Path) -> None:
    name = "${MCPTAPE_GITHUB_TOKEN}"
    surface = Surface(tools=[{"name": name, "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object", "properties": {
        "q": {"type": "string", "default": "${HOME}"}}, "required": ["q"]}}],
        resources=[{"uri": "file:///${USER}/x"}], prompts=[{"name": "p${X}"}])
    text = render_config("srv", {"command": ["python3", "server.py"]}, surface)
    assert "$${MCPTAPE_GITHUB_TOKEN}" in text
    (tmp_path / "mcptape.yml").write_text(text)
    loaded = load_config(tmp_path / "mcptape.yml", env={"MCPTAPE_GITHUB_TOKEN": GH, "HOME": "/h", "USER": "u", "X": "x"})
    steps = yaml.safe_load(text)["sessions"][0]["steps"]
    assert GH not in repr(loaded.config)
    session = loaded.config.sessions[0]
    targets = [getattr(s, "target", None) for s in session.steps]
    assert name in targets and "file:///${USER}/x" in targets and "p${X}" in targets, (targets, steps)
    call = next(s for s in session.steps if getattr(s, "target", None) == name)
    assert call.arguments == {"q": "${HOME}"}
    # ... and without the escape the same text would have sent the token: the test can fail.
    unescaped = text.replace("$${", "${")
    (tmp_path / "mcptape.yml").write_text(unescaped)
    assert GH in repr(load_config(tmp_path / "mcptape.yml", env={"MCPTAPE_GITHUB_TOKEN": GH, "HOME": "/h",
                                                                 "USER": "u", "X": "x"}).config)


def test_play_fallback_url_passes_the_url_to_its_rec_child_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://user:{RANDOM}@127.0.0.1:9/mcp"
    seen: dict[str, Any] = {}

    class Refused(OSError):
        pass

    def popen(argv: list[str], **kw: Any) -> Any:
        seen["argv"], seen["env"] = argv, kw.get("env") or {}
        raise Refused("stop here")

    monkeypatch.setattr(fallback.subprocess, "Popen", popen)
    fb = fallback.LiveFallback(FIXTURES / "example" / "tapes" / "surface.tape.jsonl", (), lambda _: None, url=url)
    assert fb._start_http(["mcptape", "rec"]) is False
    assert not any(RANDOM in a for a in seen["argv"]), seen["argv"]
    assert seen["env"][fallback.UPSTREAM_VARIABLE] == url
    assert "${" + fallback.UPSTREAM_VARIABLE + "}" in seen["argv"]


def test_rec_reads_its_upstream_from_the_environment(tmp_path: Path) -> None:
    done = run(tmp_path, "rec", "--listen", "127.0.0.1:0", "--upstream", "${NOT_SET_HERE}")
    assert done.returncode == 3 and "NOT_SET_HERE is not set" in done.stderr
    assert os.environ.get("NOT_SET_HERE") is None
