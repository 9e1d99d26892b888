"""`mcptape init` on published servers nobody here wrote, where the behaviour a fix is about comes from
one of them (issue 41): init → `ci -u` → `ci` green, and the server's real change named with its exit.

Each server comes from PyPI into a venv of its own (real_servers.PUBLISHED, built once and cached).
"""

from __future__ import annotations

from pathlib import Path

from mcptape.config.load import load_config
from tests.integration.real_servers import mcptape, python_release


def test_a_shell_servers_allowed_commands_in_random_order_get_an_order_and_a_removed_command_drifts(
        tmp_path: Path) -> None:
    # mcp-shell-server prints its allowlist from a Python set: another order each start. A placeholder
    # over the list would make the first gate green and hide a command removed from it.
    server = python_release("shell").parent / "mcp-shell-server"
    env = {"ALLOW_COMMANDS": "ls,cat,echo,pwd,wc,head"}
    init = mcptape("init", "--env", "ALLOW_COMMANDS", "--", str(server), cwd=tmp_path, env=env)
    assert init.returncode == 0, init.text()
    rules = load_config(tmp_path / "mcptape.yml", env=env).config.normalize
    assert [(r.pattern, r.order) for r in rules] == [("(?<=Allowed commands: ).+", "sorted")]
    assert mcptape("ci", "-u", cwd=tmp_path, env=env).returncode == 0
    for _ in range(2):
        gate = mcptape("ci", cwd=tmp_path, env=env)
        assert gate.returncode == 0, gate.text()
    removed = mcptape("ci", cwd=tmp_path, env={"ALLOW_COMMANDS": "ls,cat,echo,pwd,head"}, json_report=True)
    assert removed.returncode == 1, removed.text()
    assert "result.tools[shell_execute].description" in removed.stdout
