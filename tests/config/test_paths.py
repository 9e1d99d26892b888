"""Paths mcptape.yml names outside the repository it lives in: a warning from `check` and `ci`, file:line.

A warning, not an error: a scratch golden_dir can be meant. But goldens written outside the
checkout are not committed with the config, which is never what a gate wants silently.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcptape.cli import main

CONFIG = """\
version: 1
golden_dir: {golden}
servers:
  calc:
    command: [python, calc.py]
sessions:
  - name: a
    server: calc
    sandbox: [{sandbox}]
    steps: [list_tools]
"""


@pytest.mark.parametrize("command", ["check", "ci"])
def test_a_golden_dir_outside_the_repository_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "work").mkdir()
    config = repo / "mcptape.yml"
    config.write_text(CONFIG.format(golden="../elsewhere", sandbox="../../outside"), encoding="utf-8")
    args = [command, "-c", str(config)] + (["--session", "nothing-matches"] if command == "ci" else [])
    main(args)
    err = capsys.readouterr().err
    assert f"mcptape {command}: warning: {config}:2: golden_dir: '../elsewhere' is {tmp_path / 'elsewhere'}, " \
           f"outside the repository ({repo})" in err
    assert f"{config}:9: sessions[0].sandbox[0]: '../../outside'" in err
    # Inside the repository: no warning.
    config.write_text(CONFIG.format(golden="tapes", sandbox="work"), encoding="utf-8")
    main(args)
    assert "outside the repository" not in capsys.readouterr().err


def test_without_a_repository_there_is_nothing_to_be_outside_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mcptape.yml"
    config.write_text(CONFIG.format(golden="../elsewhere", sandbox="work"), encoding="utf-8")
    assert main(["check", "-c", str(config)]) == 0
    assert "outside the repository" not in capsys.readouterr().err
