"""init/pinning.py: `npx pkg` / `uvx pkg` get the version they resolve to; a command naming one is left alone.

The registries are not asked here: the npm case resolves from a node_modules install (what init
does first), and the commands that already pin, or name no package, never reach a lookup.
"""

from __future__ import annotations

import json
from pathlib import Path

from mcptape.init.pinning import pin_packages


def test_npx_gets_the_version_installed_here_and_says_so(tmp_path: Path) -> None:
    package = tmp_path / "node_modules" / "@acme" / "server"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "@acme/server", "version": "1.4.2"}), encoding="utf-8")
    work = tmp_path / "sub"
    work.mkdir()
    command, said = pin_packages(["npx", "-y", "@acme/server", "--root", "."], work)
    assert command == ["npx", "-y", "@acme/server@1.4.2", "--root", "."]
    assert said and "pinned @acme/server to 1.4.2 (installed here)" in said[0]


def test_a_pinned_package_or_another_program_is_left_as_it_is(tmp_path: Path) -> None:
    for command in (["npx", "-y", "@acme/server@1.0.0"], ["npx", "-y", "plain@2"], ["uvx", "mcp-server-time==1.0"],
                    ["uvx", "mcp-server-time@1.0"], ["python", "server.py"], ["npx", "-p", "pkg", "bin"],
                    ["npx", "./local.js"]):
        assert pin_packages(command, tmp_path) == (command, [])
