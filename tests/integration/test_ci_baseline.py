"""`mcptape ci --baseline REF` and `--against SERVER`: a gate without goldens, on real git repositories.

Each test makes a git repository holding fixtures/servers/release_server.py (its behaviour is the
committed behaviour.json) and an mcptape.yml, commits changes the way a pull request would, and
runs `mcptape ci --baseline ...` (tests/in_process.py), reading the exit code and the JSON
report. Two implementations: calc_server.py (Python) against its JavaScript port calc_port.mjs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, ROOT, user_env
from tests.in_process import run_mcptape

SERVERS = FIXTURES / "servers"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

CONFIG = """\
version: 1
servers:
  rel:
    command: [{python}, server.py]
    cwd: build
baseline:
  setup:
    - [{python}, build.py]
sessions:
  - name: basic
    server: rel
    steps:
      - list_tools
      - call: add
        arguments: {{a: 2, b: 3}}
      - call: search
        arguments: {{query: x}}
      - call: about
      - call: ticket
"""

# The "build" a setup command does: the server runs from build/, which is not committed, so the
# base side's server can only start if `baseline: setup:` ran in its checkout.
BUILD = """\
import pathlib, shutil
pathlib.Path("build").mkdir(exist_ok=True)
shutil.copy("release_server.py", "build/server.py")
shutil.copy("behaviour.json", "build/behaviour.json")
"""

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, capture_output=True, text=True,
                          check=True, timeout=60)
    return done.stdout.strip()


def commit(repo: Path, message: str, behaviour: dict[str, Any] | None = None) -> None:
    if behaviour is not None:
        (repo / "behaviour.json").write_text(json.dumps(behaviour), encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)


def make_repo(root: Path, behaviour: dict[str, Any], config: str = CONFIG) -> Path:
    repo = root / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shutil.copy(SERVERS / "release_server.py", repo / "release_server.py")
    (repo / "build.py").write_text(BUILD, encoding="utf-8")
    (repo / ".gitignore").write_text("build/\n", encoding="utf-8")
    (repo / "mcptape.yml").write_text(config.format(python=sys.executable), encoding="utf-8")
    commit(repo, "the server", behaviour)
    return repo


def ci(repo: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    """`mcptape ci ARGS` in the repository, after building the head as its CI job would."""
    subprocess.run([sys.executable, "build.py"], cwd=repo, check=True, timeout=60)
    report = repo.parent / "report.json"
    report.unlink(missing_ok=True)
    done = run_mcptape(["ci", f"--json={report}", *args], cwd=repo, env=user_env(PYTHONPATH=str(ROOT), **(env or {})),
                       timeout=300)
    data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return done.returncode, data, done.stdout + done.stderr


def findings(report: dict[str, Any], category: str | None = None) -> list[dict[str, Any]]:
    out = [f for s in report.get("sessions", []) for d in ((s.get("diff") or {}).get("drifts") or [])
           for f in d["findings"]]
    return [f for f in out if category is None or f["category"] == category]


_last_stamp: list[datetime] = []


def now() -> str:
    """A build time as a build writes it (whole seconds), later than the last one given: two commits
    made within one second must still differ in their stamp."""
    stamp = datetime.now(UTC).replace(microsecond=0)
    if _last_stamp and stamp <= _last_stamp[-1]:
        stamp = _last_stamp[-1] + timedelta(seconds=1)
    _last_stamp.append(stamp)
    return stamp.isoformat()


def test_head_minus_one_gives_1_for_a_result_2_for_a_removed_tool_0_for_a_timestamp(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, {"version": "2.3.1", "built": now()})
    worktrees = len(git(repo, "worktree", "list").splitlines())

    commit(repo, "add is off by one", {"version": "2.3.1", "offset": 1, "built": now()})
    code, report, out = ci(repo, "--baseline", "HEAD~1")
    assert code == 1, out
    assert [f["message"] for f in findings(report)] == ['"5" → "6"']
    sha = git(repo, "rev-parse", "--short=7", "HEAD~1")
    assert report["compared"] == f"against `HEAD~1` (`{sha}`)"
    # What the reference's two runs taught: the ticket's random token, shown in the report.
    assert any("$..ticket" in line for line in report["comparison"]), report["comparison"]
    assert "setup: " in report["comparison"][0]

    commit(repo, "divide removed", {"version": "2.3.1", "offset": 1, "tools": ["add", "search", "about", "ticket"],
                                    "built": now()})
    code, report, out = ci(repo, "--baseline", "HEAD~1")
    assert code == 2, out
    assert "tool `divide` removed" in [f["message"] for f in findings(report, "surface")]

    commit(repo, "rebuilt: only the build time changes", {"version": "2.3.1", "offset": 1,
                                                          "tools": ["add", "search", "about", "ticket"], "built": now()})
    assert git(repo, "diff", "HEAD~1", "--stat")  # the commit does change the build stamp
    code, report, out = ci(repo, "--baseline", "HEAD~1")
    assert code == 0, out
    assert report["sessions"][0]["verdict"] == "same"
    # The worktree of the base side is gone afterwards.
    assert len(git(repo, "worktree", "list").splitlines()) == worktrees == 1


def test_release_honesty_names_a_break_in_a_patch_release_and_fails_only_when_configured(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, {"version": "2.3.1"})
    commit(repo, "2.3.2 drops search", {"version": "2.3.2", "tools": ["add", "divide", "about", "ticket"]})
    code, report, out = ci(repo, "--baseline", "HEAD~1", f"--summary={tmp_path / 'summary.md'}")
    assert code == 2, out
    release = findings(report, "release")
    headline = "2.3.1 → 2.3.2 removes tool `search`: a breaking change in a patch release"
    assert [(f["message"], f["kind"], f["severity"]) for f in release] == [(headline, "patch", "info")]
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    # The drift that decided exit 2 heads the summary and the terminal; the release note is info
    # (off the exit code here), so it is said below, never as the headline.
    head = summary.split("\n\n")[2]  # the headline paragraph
    assert '` search(query="x") ` now fails' in head and "release" not in head, summary
    assert "2.3.1 → 2.3.2 removes tool `search`" in summary
    assert '│ structural │ basic   │ step 3 · tools/call search {"query":"x"} · ' in out, out
    assert "How to accept it" not in summary  # there is no golden to accept
    assert "against ` HEAD~1 `" in summary

    # A minor bump that only changes a result: no release finding (the drift is not structural).
    commit(repo, "2.4.0 changes add", {"version": "2.4.0", "tools": ["add", "divide", "about", "ticket"], "offset": 1})
    code, report, out = ci(repo, "--baseline", "HEAD~1")
    assert code == 1 and findings(report, "release") == [], out

    # One line of config makes it fail the gate by itself.
    config = (repo / "mcptape.yml").read_text(encoding="utf-8")
    (repo / "mcptape.yml").write_text(config + "drift:\n  fail_on: {release: structural}\n", encoding="utf-8")
    commit(repo, "2.4.1 removes divide", {"version": "2.4.1", "tools": ["add", "about", "ticket"], "offset": 1})
    code, report, out = ci(repo, "--baseline", "HEAD~1")
    assert code == 2, out
    assert [(f["kind"], f["severity"]) for f in findings(report, "release")] == [("patch", "structural")]


ALL = ["add", "divide", "search", "about", "ticket"]


def test_a_tool_new_in_the_change_and_a_session_the_base_cannot_run_are_reported_not_crashes(tmp_path: Path) -> None:
    config = CONFIG + """\
  - name: newer
    server: rel
    steps:
      - call: search
        arguments: {{query: y}}
"""
    repo = make_repo(tmp_path, {"tools": ["add", "divide", "about", "ticket"]}, config)
    commit(repo, "search is new", {"tools": ALL})
    code, report, out = ci(repo, "--baseline", "HEAD~1")
    assert code == 2, out
    assert "Traceback" not in out
    newer = next(s for s in report["sessions"] if s["name"] == "newer")
    assert newer["verdict"] == "structural"
    assert [(f["category"], f["kind"]) for f in findings({"sessions": [newer]})] == [("error", "error_to_result"), ("surface", "added")]  # a changed answer heads an added tool (verdict/model.py: headline_priority)

    # A server the base commit does not have at all: the base side cannot run the session.
    (repo / "mcptape.yml").write_text(config.format(python=sys.executable).replace(
        "cwd: build", "cwd: build2"), encoding="utf-8")
    (repo / "build.py").write_text(BUILD.replace('"build', '"build2'), encoding="utf-8")
    (repo / ".gitignore").write_text("build/\nbuild2/\n", encoding="utf-8")
    commit(repo, "the server moves to build2")
    code, report, out = ci(repo, "--baseline", "HEAD~1")
    assert code == 2, out
    assert all("cannot run on the reference (base)" in s["diff"]["drifts"][0]["findings"][0]["message"]
               for s in report["sessions"]), out


def test_a_failing_setup_is_exit_3_and_its_output_is_redacted(tmp_path: Path) -> None:
    config = CONFIG.replace("    - [{python}, build.py]\n", "    - [sh, -c, 'echo token=$DEPLOY_TOKEN; exit 7']\n"
                            "  env:\n    DEPLOY_TOKEN: ${{DEPLOY_TOKEN}}\n")
    repo = make_repo(tmp_path, {}, config)
    commit(repo, "nothing")
    secret = "dpl_9fK2mQ7vX4bN8cR1tY6wZ3hJ"
    code, report, out = ci(repo, "--baseline", "HEAD~1", env={"DEPLOY_TOKEN": secret})
    assert code == 3, out
    assert "baseline setup `sh -c 'echo token=$DEPLOY_TOKEN; exit 7'` failed (exit 7)" in out
    assert "token=" in out and secret not in out


def test_latency_a_server_50ms_slower_is_reported_an_unchanged_one_is_not(tmp_path: Path) -> None:
    # 10 interleaved runs a side: a regression needs p < 0.01 *and* a shift of 2 ms beyond the
    # base's own spread. A 50 ms sleep clears that even if a few base runs hit a hiccup, and an
    # unchanged server's sub-millisecond calls cannot shift by 2 ms in their median by noise.
    repo = make_repo(tmp_path, {})
    commit(repo, "unchanged")
    code, report, out = ci(repo, "--baseline", "HEAD~1", "--latency", "10")
    assert code == 0, out
    assert findings(report, "latency") == []
    assert sum("within noise" in line or "no slower" in line for line in report["comparison"]) == 5, report["comparison"]

    commit(repo, "every call sleeps 50 ms", {"sleep_ms": 50})
    code, report, out = ci(repo, "--baseline", "HEAD~1", "--latency", "10")
    assert code == 0, out  # latency is off the exit code by default
    slow = findings(report, "latency")
    assert len(slow) == 4 and all(f["severity"] == "info" for f in slow), out  # the four tools/call steps
    assert sum("REGRESSION" in line for line in report["comparison"]) == 4

    config = (repo / "mcptape.yml").read_text(encoding="utf-8")
    (repo / "mcptape.yml").write_text(config + "drift:\n  fail_on: {latency: output}\n", encoding="utf-8")
    commit(repo, "latency fails the gate; calls still slow")
    commit(repo, "back to fast", {})
    code, report, out = ci(repo, "--baseline", "HEAD~2", "--latency", "10", "--session", "basic")
    assert code == 0, out  # head faster than base: not a regression
    commit(repo, "slow again", {"sleep_ms": 50})
    code, report, out = ci(repo, "--baseline", "HEAD~1", "--latency", "10")
    assert code == 1, out


def test_latency_needs_a_reference_and_enough_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, {})
    code, _, out = ci(repo, "--latency", "10")
    assert code == 3 and "--latency does not work in golden mode: --latency times both live sides" in out
    code, _, out = ci(repo, "--baseline", "HEAD", "--latency", "3")
    assert code == 3 and "at least 5 runs a side" in out


CALC_CONFIG = """\
version: 1
servers:
  py:
    command: [{python}, {calc}]
  ts:
    command: [node, {port}]
sessions:
  - name: arithmetic
    server: ts
    steps:
      - list_tools
      - call: add
        arguments: {{a: 2, b: 3}}
      - call: divide
        arguments: {{a: 1, b: 0}}
      - call: divide
        arguments: {{a: 1, b: 4}}
      - read_resource: calc://constants
      - get_prompt: explain
        arguments: {{topic: sums}}
      - list_resources
      - list_prompts
"""


@pytest.mark.node
def test_two_implementations_the_javascript_port_against_the_python_calc(tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is needed for the port")
    (tmp_path / "mcptape.yml").write_text(CALC_CONFIG.format(
        python=sys.executable, calc=SERVERS / "calc_server.py", port=SERVERS / "calc_port.mjs"), encoding="utf-8")
    env = user_env(PYTHONPATH=str(ROOT))

    def run(*args: str) -> tuple[int, dict[str, Any], str]:
        report = tmp_path / "report.json"
        done = run_mcptape(["ci", f"--json={report}", f"--summary={tmp_path / 's.md'}", *args], cwd=tmp_path, env=env,
                           timeout=300)
        return done.returncode, json.loads(report.read_text(encoding="utf-8")), done.stdout + done.stderr

    code, report, out = run("--against", "py")
    assert code == 0, out
    assert report["compared"] == "`ts` vs `py` (the reference)"

    code, report, out = run("--against", f"node {SERVERS / 'calc_port.mjs'} --off-by-one")
    assert code == 1, out
    assert report["compared"] == "`ts` vs `calc_port.mjs` (the reference)"
    assert [f["message"] for f in findings(report)] == ['"6" → "5"']
    summary = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "` ts ` vs ` calc_port.mjs ` (the reference)" in summary
    assert "How to accept it" not in summary


def test_auto_uses_the_goldens_when_the_repository_has_them_else_the_merge_base(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, {})
    subprocess.run([sys.executable, "build.py"], cwd=repo, check=True, timeout=60)
    done = run_mcptape(["ci", "--update-golden"], cwd=repo, env=user_env(PYTHONPATH=str(ROOT)), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (repo / "mcptape.yml").write_text((repo / "mcptape.yml").read_text(encoding="utf-8")
                                      + "normalize:\n  - path: $..ticket\n  - path: $..issued\n", encoding="utf-8")
    commit(repo, "goldens", {"offset": 1})
    code, report, out = ci(repo, "--baseline", "auto")
    assert code == 1 and report["compared"] is None, out  # the golden tape is the reference
    assert report["sessions"][0]["golden"] == "tapes/basic.tape.jsonl"

    shutil.rmtree(repo / "tapes")
    code, report, out = ci(repo, "--baseline", "auto")
    head = git(repo, "rev-parse", "--short=7", "HEAD")
    assert code == 0 and report["compared"] == f"against the merge base `{head}` with `main`", out
