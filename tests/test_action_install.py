"""How the Action installs itself, each way run through action.yml's own steps (tests/action_runner.py):
uv fetched with pip on a runner without it, uv found on PATH, the cached environment restored in a
new job, and the fallback to pip when uv fails, which installs the same pinned versions.

Nothing is mocked but the Actions cache service (a directory, see action_runner.py) and, in the
fallback test, a uv that fails: the installs are real, from the package registry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.action_runner import INSTALL_STEPS, ActionRun, ActionRunner, action_checkout, example_workspace
from tests.conftest import ROOT

# What a venv lists beyond the pins: the installer's own packages.
INSTALLERS = {"pip", "setuptools", "wheel"}


def installed(venv: Path) -> dict[str, str]:
    """name -> version of every distribution in `venv`, names normalized as PyPI does."""
    code = ("import importlib.metadata as m, json, re; print(json.dumps({re.sub(r'[-_.]+', '-', "
            "d.metadata['Name']).lower(): d.version for d in m.distributions()}))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True)
    return {k: v for k, v in json.loads(out.stdout).items() if k not in INSTALLERS}


def install(runner: ActionRunner, workspace: Path, **inputs: str) -> ActionRun:
    run = runner.run(workspace, inputs, only=INSTALL_STEPS)
    assert "Traceback" not in run.log, run.log
    return run


def fresh_runner(tmp_path: Path, name: str, cache_store: Path | None = None) -> ActionRunner:
    """A new job on a new machine: its own RUNNER_TEMP, the action downloaded anew."""
    runner_temp = tmp_path / name
    runner_temp.mkdir()
    return ActionRunner(runner_temp, None, action_dir=action_checkout(runner_temp), cache_store=cache_store)


@pytest.fixture(scope="module")
def uv_install(tmp_path_factory: pytest.TempPathFactory) -> tuple[ActionRunner, ActionRun, Path]:
    """The default (`installer: auto`) on a runner with no uv on PATH: uv is fetched with pip."""
    tmp = tmp_path_factory.mktemp("uv-install")
    store = tmp / "actions-cache"
    runner = fresh_runner(tmp, "job1", store)
    workspace = tmp / "ws"
    workspace.mkdir()
    return runner, install(runner, workspace), store


def test_auto_fetches_uv_with_pip_when_the_runner_has_none_and_saves_the_environment(uv_install) -> None:
    runner, run, store = uv_install
    assert run.result == "success", run.log
    assert run.step("install").outputs["installed-with"] == "uv"
    assert (runner.runner_temp / "mcptape-uv" / "bin" / "uv").is_file()  # fetched, not found
    key = run.step("key").outputs["key"]
    venv = Path(run.step("key").outputs["venv"])
    assert venv == runner.runner_temp / key and key.startswith("mcptape-venv-")
    assert "mcptape 0.1.0" in run.step("install").stdout
    assert (store / key / ".mcptape-installed").is_file()  # saved right after installing
    # Installed without extras: the pins, and nothing of the dev extra.
    names = installed(venv)
    assert {"mcptape", "pydantic", "rich", "ghapi", "jsonschema", "httpx"} <= set(names)
    assert not {"pytest", "mcp", "fastmcp", "ruff"} & set(names)


def test_a_new_job_restores_the_cached_environment_and_runs_the_gate_with_it(uv_install, tmp_path: Path) -> None:
    first, _, store = uv_install
    # The same runner image: RUNNER_TEMP at the same path, but empty (a fresh machine).
    shutil.rmtree(first.runner_temp / [p.name for p in first.runner_temp.iterdir() if p.name.startswith("mcptape-venv-")][0])
    runner = ActionRunner(first.runner_temp, None, action_dir=first.action_dir, cache_store=store)
    workspace = example_workspace(tmp_path)
    run = runner.run(workspace, {"working-directory": "fixtures/example", "comment": "false",
                                 "upload-artifact": "false"})
    assert run.result == "success", run.log
    assert run.step("install").outputs["installed-with"] == "present"
    assert "already installed" in run.step("install").stdout
    assert run.outputs["result"] == "none" and run.outputs["exit-code"] == "0"
    # The save step did not run again: nothing new was installed here.
    assert [s.id for s in run.steps if s.id == "save"] == []


def test_uv_on_the_runner_is_used_as_it_is(uv_install, tmp_path: Path) -> None:
    first, _, _ = uv_install
    runner = fresh_runner(tmp_path, "job-with-uv")
    env_path = f"{first.runner_temp / 'mcptape-uv' / 'bin'}{os.pathsep}{os.environ['PATH']}"
    run = runner.run(tmp_path, {"cache": "false"}, env={"PATH": env_path}, only=INSTALL_STEPS)
    assert run.result == "success", run.log
    assert run.step("install").outputs["installed-with"] == "uv"
    assert not (runner.runner_temp / "mcptape-uv").exists()  # nothing fetched
    assert not (runner.cache_store or tmp_path).exists()  # cache: false saves nothing


def test_when_uv_fails_auto_falls_back_to_pip_with_the_same_versions_and_uv_alone_fails_clearly(
        uv_install, tmp_path: Path) -> None:
    first, uv_run, _ = uv_install
    broken = tmp_path / "broken-uv"
    broken.mkdir()
    (broken / "uv").write_text("#!/bin/sh\necho 'uv: cannot reach the index' >&2\nexit 2\n", encoding="utf-8")
    (broken / "uv").chmod(0o755)
    env = {"PATH": f"{broken}{os.pathsep}{os.environ['PATH']}"}

    strict = fresh_runner(tmp_path, "job-uv-only")
    run = strict.run(tmp_path, {"installer": "uv", "cache": "false"}, env=env, only=INSTALL_STEPS)
    assert run.result == "failure" and run.step("install").returncode == 3
    assert any("installer: uv failed" in c.message for c in run.step("install").annotations("error"))

    runner = fresh_runner(tmp_path, "job-fallback")
    run = runner.run(tmp_path, {"cache": "false"}, env=env, only=INSTALL_STEPS)
    assert run.result == "success", run.log
    assert run.step("install").outputs["installed-with"] == "pip"
    assert "uv could not install; installing with pip" in run.step("install").stdout
    by_pip = installed(Path(run.step("key").outputs["venv"]))
    by_uv = installed(Path(uv_run.step("key").outputs["venv"]))
    assert by_pip == by_uv
    # ... and those are the versions constraints.txt pins.
    pins = dict(line.lower().split("==") for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
                if line and not line.startswith("#"))
    assert {"pydantic", "rich", "ghapi"} <= set(pins) & set(by_pip)
    assert {name: by_pip[name] for name in set(pins) & set(by_pip)} == {name: pins[name] for name in set(pins) & set(by_pip)}


def test_an_unknown_installer_is_refused(tmp_path: Path) -> None:
    runner = fresh_runner(tmp_path, "job")
    run = runner.run(tmp_path, {"installer": "conda", "cache": "false"}, only=INSTALL_STEPS)
    assert run.step("install").returncode == 3
    assert any("installer must be auto, uv or pip" in c.message for c in run.step("install").annotations("error"))


def test_the_key_follows_the_action_code_so_a_moved_tag_never_restores_old_code(tmp_path: Path) -> None:
    runner = fresh_runner(tmp_path, "job")
    key = runner.run(tmp_path, {}, only=("python", "key")).step("key").outputs["key"]
    assert key == runner.run(tmp_path, {}, only=("python", "key")).step("key").outputs["key"]  # stable
    assert runner.action_dir is not None
    module = runner.action_dir / "mcptape" / "errors.py"
    module.write_text(module.read_text(encoding="utf-8") + "# v1 moved\n", encoding="utf-8")
    assert runner.run(tmp_path, {}, only=("python", "key")).step("key").outputs["key"] != key
