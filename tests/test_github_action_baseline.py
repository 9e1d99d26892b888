"""The Action with `baseline: merge-base` on a shallow checkout, through action.yml's own steps.

A bare repository stands in for GitHub's: `main` holds the server (fixtures/servers/release_server.py
and its behaviour.json) and mcptape.yml, a pull request branch changes a result. The workspace is
cloned from it with `--depth 1`, as actions/checkout leaves a pull request's checkout, so the base
branch and the merge base are not there: mcptape must fetch them. tests/action_runner.py runs the
action's steps (a real venv install of this checkout, no extras) against the loopback GitHub.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.action_runner import ActionRunner, shared_runner_temp
from tests.conftest import FIXTURES
from tests.github_fake import ACTIONS_BOT, FakeGitHub, Token
from tests.integration.test_ci_baseline import commit, git

TOKEN = "ghs_job_token"
CONFIG = """\
version: 1
servers:
  rel:
    command: [{python}, release_server.py]
sessions:
  - name: basic
    server: rel
    steps:
      - list_tools
      - call: add
        arguments: {{a: 2, b: 3}}
      - call: ticket
"""

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed")


@pytest.fixture(scope="session")
def runner_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_runner_temp(tmp_path_factory)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(tokens={TOKEN: Token(ACTIONS_BOT, app=True)}).start()
    try:
        yield fake
    finally:
        fake.stop()


def pull_request(tmp_path: Path, head_behaviour: dict[str, int]) -> tuple[Path, str]:
    """origin.git with `main` (3 commits) and `feature` (2 more); a depth-1 clone of `feature`."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True, timeout=60)
    dev = tmp_path / "dev"
    dev.mkdir()
    git(dev, "init", "-q", "-b", "main")
    shutil.copy(FIXTURES / "servers" / "release_server.py", dev / "release_server.py")
    (dev / "mcptape.yml").write_text(CONFIG.format(python=sys.executable), encoding="utf-8")
    commit(dev, "the server", {})
    commit(dev, "docs")
    commit(dev, "more docs")
    base = git(dev, "rev-parse", "HEAD")
    git(dev, "checkout", "-q", "-b", "feature")
    commit(dev, "the change", head_behaviour)
    commit(dev, "a follow-up")
    git(dev, "checkout", "-q", "main")
    commit(dev, "main moves on after the branch")  # the merge base is not main's tip
    git(dev, "push", "-q", str(origin), "main", "feature")
    ws = tmp_path / "ws"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", "feature", origin.as_uri(), str(ws)],
                   check=True, timeout=60)
    assert git(ws, "rev-parse", "--is-shallow-repository") == "true"
    return ws, base


def test_merge_base_on_a_shallow_checkout_compares_the_pull_request_with_its_base(
    runner_temp: Path, github: FakeGitHub, tmp_path: Path
) -> None:
    ws, base = pull_request(tmp_path, {"offset": 1})
    runner = ActionRunner(runner_temp, github, token=TOKEN)
    run = runner.run(ws, {"baseline": "merge-base"}, env={"GITHUB_BASE_REF": "main"})
    assert run.result == "failure" and run.outputs["result"] == "output", run.log
    report = json.loads(Path(run.outputs["report"]).read_text(encoding="utf-8"))
    assert report["compared"] == f"against the merge base `{base[:7]}` with `main`"
    [comment] = run.comments
    body = comment["body"]
    assert f"against the merge base ` {base[:7]} ` with ` main `" in body
    drifts = report["sessions"][0]["diff"]["drifts"]
    assert [f["message"] for d in drifts for f in d["findings"]] == ['"5" → "6"']
    assert "How to accept it" not in body and "--update-golden" not in body  # nothing to accept
    assert f"against the merge base ` {base[:7]} `" in run.summary


def test_merge_base_on_an_unchanged_pull_request_passes(runner_temp: Path, github: FakeGitHub, tmp_path: Path) -> None:
    ws, base = pull_request(tmp_path, {})
    runner = ActionRunner(runner_temp, github, token=TOKEN)
    run = runner.run(ws, {"baseline": "merge-base"}, env={"GITHUB_BASE_REF": "main"})
    assert run.result == "success" and run.outputs["result"] == "none", run.log
    # The ticket's random token differed between the base's own runs: learned, shown, not drift.
    report = json.loads(Path(run.outputs["report"]).read_text(encoding="utf-8"))
    assert any("$..ticket" in line for line in report["comparison"]), report["comparison"]
    assert "$..ticket" in run.summary


def test_auto_without_goldens_is_the_merge_base(runner_temp: Path, github: FakeGitHub, tmp_path: Path) -> None:
    ws, base = pull_request(tmp_path, {"offset": 1})
    run = ActionRunner(runner_temp, github, token=TOKEN).run(ws, {"baseline": "auto"}, env={"GITHUB_BASE_REF": "main"})
    assert run.outputs["result"] == "output", run.log
    assert f"against the merge base ` {base[:7]} `" in run.summary
