"""Every shipped command, installed as users install it: a fresh venv, `pip install` of the checkout, no extras.

The venv is the one action.yml's install step builds (run through tests/action_runner.py, shared
with tests/test_github_action.py for the pytest session). Each command runs once from that venv,
outside the checkout and without PYTHONPATH, so a module only the dev extra brings fails here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.action_runner import INSTALL_STEPS, ActionRunner, shared_runner_temp
from tests.conftest import FIXTURES
from tests.github_fake import ACTIONS_BOT, FakeGitHub, Token

TIMEOUT = 120
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}


@pytest.fixture(scope="module")
def venv_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runner = ActionRunner(shared_runner_temp(tmp_path_factory))
    run = runner.run(tmp_path_factory.mktemp("install-ws"), only=INSTALL_STEPS)
    assert run.result == "success", run.log
    return Path(run.step("install").outputs["mcptape"]).parent


@pytest.fixture
def example(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "example", tmp_path / "example", ignore=shutil.ignore_patterns("demo.py"))
    shutil.copytree(FIXTURES / "servers", tmp_path / "servers", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "example"


def user_shell(**extra: str) -> dict[str, str]:
    """A user's shell: no PYTHONPATH, no virtualenv, no CI variables."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CI", "GITHUB_ACTIONS", "MCPTAPE_FIXTURE_VARIANT")}
    env.update(extra)
    return env


def installed(venv_bin: Path, *args: str, cwd: Path, stdin: str | None = None,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(venv_bin / "mcptape"), *args], cwd=cwd, env=env or user_shell(), input=stdin,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_the_venv_holds_mcptape_without_the_dev_extra(venv_bin: Path, tmp_path: Path) -> None:
    code = ("import importlib.util, mcptape; print(mcptape.__file__); "
            "print([m for m in ('mcp', 'pytest', 'fastmcp') if importlib.util.find_spec(m)])")
    proc = subprocess.run([str(venv_bin / "python"), "-c", code], cwd=tmp_path, env=user_shell(),
                          capture_output=True, text=True, timeout=TIMEOUT, check=True)
    where, extras = proc.stdout.splitlines()
    assert Path(where).is_relative_to(venv_bin.parent)  # the installed copy, not the checkout
    assert extras == "[]"


def test_every_shipped_command_runs_installed(venv_bin: Path, example: Path, tmp_path: Path) -> None:
    version = installed(venv_bin, "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("mcptape ")

    clean = installed(venv_bin, "ci", f"--json={tmp_path / 'clean.json'}", cwd=example)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    drift = installed(venv_bin, "ci", "--out-dir", str(tmp_path / "fresh"), f"--json={tmp_path / 'drift.json'}",
                      cwd=example, env=user_shell(MCPTAPE_FIXTURE_VARIANT="changed_result"))
    assert drift.returncode == 1, drift.stdout + drift.stderr
    assert "tools/call add" in drift.stdout

    golden = example / "tapes" / "arithmetic.tape.jsonl"
    assert installed(venv_bin, "diff", str(golden), str(golden), cwd=tmp_path).returncode == 0
    diff = installed(venv_bin, "diff", str(golden), str(tmp_path / "fresh" / "arithmetic.tape.jsonl"), "--json", cwd=tmp_path)
    assert diff.returncode == 1 and json.loads(diff.stdout)["verdict"] == "output"

    show = installed(venv_bin, "show", str(golden), cwd=tmp_path)
    assert show.returncode == 0 and "tools/call" in show.stdout
    listing = installed(venv_bin, "ls", str(example / "tapes"), cwd=tmp_path)
    assert listing.returncode == 0
    assert all(name in listing.stdout for name in ("surface", "arithmetic", "resources-and-prompts"))

    schema = installed(venv_bin, "schema", cwd=tmp_path)
    assert schema.returncode == 0 and "sessions" in json.loads(schema.stdout)["properties"]
    assert json.loads(schema.stdout)["$id"].endswith("/mcptape/mcptape.schema.json")  # the shipped file
    check = installed(venv_bin, "check", cwd=example)
    assert check.returncode == 0 and check.stdout.startswith("ok: 3 sessions, 1 server"), check.stderr
    first = tmp_path / "first.yml"
    init = installed(venv_bin, "init", "--no-trial", "-o", str(first), "--", "python3",
                     str(example.parent / "servers" / "calc_server.py"), cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert first.read_text(encoding="utf-8").startswith("# yaml-language-server: $schema=https://")

    play = installed(venv_bin, "play", str(example / "tapes" / "surface.tape.jsonl"), cwd=tmp_path,
                     stdin=json.dumps(INITIALIZE) + "\n")
    assert play.returncode == 0, play.stderr
    answer = json.loads(play.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["protocolVersion"]

    tape = tmp_path / "recorded.tape.jsonl"
    server = ["python3", str(example.parent / "servers" / "calc_server.py")]
    rec = installed(venv_bin, "rec", "--out", str(tape), "--", *server, cwd=tmp_path, stdin=json.dumps(INITIALIZE) + "\n")
    assert rec.returncode == 0, rec.stderr
    assert json.loads(rec.stdout.splitlines()[0])["id"] == 1
    events = [json.loads(line) for line in tape.read_text(encoding="utf-8").splitlines()
              if not line.startswith('{"mcptape"')]  # not the header, the footer, nor rec's seal lines
    assert [e.get("method") for e in events[:2]] == ["initialize", "initialize"]

    merge = installed(venv_bin, "merge", str(tmp_path / "drift.json"), cwd=example)
    assert merge.returncode == 1, merge.stdout + merge.stderr

    github = FakeGitHub(tokens={"t": Token(ACTIONS_BOT, app=True)}).start()
    try:
        comment = installed(venv_bin, "comment", "--body", str(tmp_path / "drift.json"), "--pr", "7", "--repo", "acme/calc",
                            cwd=example, env=user_shell(GITHUB_TOKEN="t", GITHUB_API_URL=github.url))
        assert comment.returncode == 0, comment.stderr
        [posted] = github.thread("acme/calc", 7)
    finally:
        github.stop()
    assert posted["body"].startswith("<!-- mcptape:mcptape.yml -->") and "🟡 output drift" in posted["body"]
