"""The composite action's own bash, run as the runner would run it, against this checkout.

The steps are read from action.yml; their `env:` expressions are evaluated the way Actions
would (inputs and their defaults, earlier steps' outputs) and each `run:` script is executed
by bash with a fake RUNNER_TEMP and its own GITHUB_OUTPUT. The install step is left to the
repository workflow (`uses: ./`): it needs PyPI. Here `mcptape` is this checkout, spawned
as a real process by a wrapper where the venv's entry point would be.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.github_fake import ACTIONS_BOT, FakeGitHub, Token
from tests.test_github import parse_outputs

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS = {s["id"]: s for s in ACTION["runs"]["steps"]}
EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")
TIMEOUT = 180
BASH = shutil.which("bash") or "/bin/bash"


def evaluate(value: str, inputs: dict[str, str], steps: dict[str, dict[str, str]]) -> str:
    def one(m: re.Match[str]) -> str:
        expr = m.group(1)
        if expr.startswith("inputs."):
            name = expr[len("inputs."):]
            return inputs.get(name, str(ACTION["inputs"][name].get("default", "")))
        sm = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
        if sm:
            return steps[sm.group(1)][sm.group(2)]
        raise AssertionError(f"unexpected expression in action.yml: {expr}")

    return EXPR.sub(one, value)


def run_step(step_id: str, *, inputs: dict[str, str], steps: dict[str, dict[str, str]], base_env: dict[str, str],
             cwd: Path, temp: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    step = STEPS[step_id]
    output = temp / f"output-{step_id}"
    output.write_text("", encoding="utf-8")
    env = dict(base_env)
    env.update({k: evaluate(str(v), inputs, steps) for k, v in (step.get("env") or {}).items()})
    env.update({"GITHUB_OUTPUT": str(output), "RUNNER_TEMP": str(temp)})
    workdir = cwd / evaluate(step.get("working-directory", "."), inputs, steps)
    proc = subprocess.run([BASH, "-e", "-c", step["run"]], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)
    return proc, parse_outputs(output.read_text(encoding="utf-8"))


def test_inputs_never_reach_a_script_as_an_expression() -> None:
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]
        assert step.get("shell") == "bash"
    for name, out in ACTION["outputs"].items():
        assert out["value"].startswith("${{ steps.run.outputs."), name
    assert set(ACTION["outputs"]) >= {"result", "exit-code", "first-drift", "drifted-sessions", "comment-url", "report"}
    assert ACTION["inputs"]["github-token"]["default"] == "${{ github.token }}"
    assert ACTION["branding"]["icon"] and ACTION["branding"]["color"]


def _fake_python(bin_dir: Path, version: str) -> None:
    script = bin_dir / "python3"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo "Python {version}"; exit 0; fi\n'
        f'v="{version}"\n'
        'case "$v" in 3.1[1-9].*) exit 0 ;; *) exit 1 ;; esac\n',
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_python_check_fails_clearly_without_python_311(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_python(bin_dir, "3.8.10")
    # Only the fake interpreter and the tools bash needs: no other python on this PATH.
    for tool in ("cat", "env"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    env = {"PATH": str(bin_dir)}
    proc, out = run_step("python", inputs={}, steps={}, base_env=env, cwd=tmp_path, temp=tmp_path)
    assert proc.returncode == 1
    assert "::error title=mcptape::mcptape needs Python 3.11 or newer" in proc.stdout
    assert out == {}

    _fake_python(bin_dir, "3.12.1")
    proc, out = run_step("python", inputs={}, steps={}, base_env=env, cwd=tmp_path, temp=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out == {"python": str(bin_dir / "python3")}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A workspace holding a copy of the example config, its golden tapes and the fixture server."""
    ws = tmp_path / "ws"
    shutil.copytree(ROOT / "fixtures" / "example", ws / "fixtures" / "example")
    shutil.copytree(ROOT / "fixtures" / "servers", ws / "fixtures" / "servers")
    return ws


def _wrapper(temp: Path) -> Path:
    """Where the venv's `mcptape` would be: this checkout, as a real process."""
    path = temp / "venv-bin" / "mcptape"
    path.parent.mkdir(parents=True)
    path.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m mcptape "$@"\n', encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.mark.parametrize(
    ("fail_on", "step_exit"),
    [("output", 1), ("structural", 0), ("never", 0)],
)
def test_run_step_maps_the_exit_code_through_fail_on(checkout: Path, tmp_path: Path, fail_on: str, step_exit: int) -> None:
    github = FakeGitHub(tokens={"t": Token(ACTIONS_BOT, app=True)}).start()
    try:
        temp = tmp_path / "runner_temp"
        temp.mkdir()
        event = temp / "event.json"
        repo = "acme/calc"
        event.write_text(json.dumps({"number": 7, "pull_request": {
            "number": 7, "head": {"repo": {"full_name": repo}}, "base": {"repo": {"full_name": repo}}}}), encoding="utf-8")
        summary = temp / "summary.md"
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", str(tmp_path)),
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(checkout),
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": repo,
            "GITHUB_API_URL": github.url,
            "GITHUB_STEP_SUMMARY": str(summary),
            "MCPTAPE_FIXTURE_VARIANT": "changed_result",  # the calc server now answers 2+3=6
        }
        inputs = {"working-directory": "fixtures/example", "fail-on": fail_on, "github-token": "t", "args": "--jobs 1"}
        steps = {"install": {"mcptape": str(_wrapper(temp))}}
        proc, out = run_step("run", inputs=inputs, steps=steps, base_env=env, cwd=checkout, temp=temp)
    finally:
        github.stop()

    assert proc.returncode == step_exit, proc.stdout + proc.stderr
    assert out.get("result") == "output" and out["exit-code"] == "1", proc.stdout + proc.stderr
    assert out["drifted-sessions"] == "arithmetic"
    assert "tools/call add" in out["first-drift"]
    assert out["report"] == str(temp / "mcptape-report.json")
    assert json.loads(Path(out["report"]).read_text(encoding="utf-8"))["result"] == "output"
    [comment] = github.thread(repo, 7)
    assert comment["body"].startswith("<!-- mcptape:fixtures/example/mcptape.yml -->\n")
    assert out["comment-url"] == comment["html_url"]
    assert "::error file=fixtures/example/tapes/arithmetic.tape.jsonl,line=" in proc.stdout
    assert "🟡 output drift" in summary.read_text(encoding="utf-8")
    if step_exit == 0:
        assert f"not failing the job (fail-on: {fail_on})" in proc.stdout


def test_run_step_fills_outputs_when_mcptape_stops_early(tmp_path: Path) -> None:
    temp = tmp_path / "runner_temp"
    temp.mkdir()
    (tmp_path / "mcptape.yml").write_text("version: 1\nservers: {}\nsessions: oops\n", encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "GITHUB_ACTIONS": "true"}
    steps = {"install": {"mcptape": str(_wrapper(temp))}}
    proc, out = run_step("run", inputs={"fail-on": "never"}, steps=steps, base_env=env, cwd=tmp_path, temp=temp)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # could not run fails even with fail-on: never
    assert out["result"] == "error" and out["exit-code"] == "3"


def test_unknown_fail_on_is_rejected(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    steps: dict[str, Any] = {"install": {"mcptape": "/nonexistent"}}
    proc, _ = run_step("run", inputs={"fail-on": "sometimes"}, steps=steps, base_env=env, cwd=tmp_path, temp=tmp_path)
    assert proc.returncode == 3
    assert "::error title=mcptape::input fail-on must be output, structural or never" in proc.stdout
