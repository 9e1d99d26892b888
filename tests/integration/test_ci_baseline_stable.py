"""`mcptape ci --baseline HEAD` on unchanged servers: no false drift, 5 runs in a row, with no normalize rules.

The five reference servers (time, git, everything, filesystem, memory) and our fixture servers
(calc, notes, release, the SDK 2.x one) in one mcptape.yml committed to a git repository. The
base side is the same commit, so every difference is volatility: the clock, random tokens, file
access times, timer-driven traffic. The config carries no `normalize:` rules at all: what the
base side's own runs vary in is learned per comparison (ci/baseline.py). The test then commits
a real change and sees it reported, so "nothing differs" is not the only thing it can say.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, node_server, user_env
from tests.in_process import run_mcptape
from tests.integration.real_servers import GIT_ENV
from tests.integration.test_ci_baseline import commit, git

pytestmark = pytest.mark.node
SERVERS = FIXTURES / "servers"
RUNS = 5

CONFIG = """\
version: 1
servers:
  time:
    command: [{python}, -m, mcp_server_time, --local-timezone, UTC]
  git:
    command: [{python}, -m, mcp_server_git, --repository, {repo}]
  everything:
    command: [node, {everything}, stdio]
  filesystem:
    command: [node, {filesystem}, {files}]
  memory:
    command: [sh, -c, 'rm -f "$MEMORY_FILE_PATH"; exec node {memory}']
    env:
      MEMORY_FILE_PATH: {memory_file}
  calc:
    command: [{python}, {servers}/calc_server.py]
  notes:
    command: [{python}, {servers}/notes_server.py]
  release:
    command: [{python}, release_server.py]
  sdk2:
    command: [{python}, {servers}/sdk2_server.py]
client:
  capabilities: {{roots: {{}}, sampling: {{}}, elicitation: {{}}}}
  roots: [{{uri: "file://{files}", name: files}}]
  sampling: {{role: assistant, content: {{type: text, text: "a canned answer"}}, model: mcptape-canned}}
  elicitation: decline
sessions:
  - name: time
    server: time
    steps:
      - list_tools
      - call: get_current_time
        arguments: {{timezone: Asia/Tokyo}}
      - call: convert_time
        arguments: {{source_timezone: UTC, time: "12:00", target_timezone: Asia/Tokyo}}
  - name: git
    server: git
    steps:
      - list_tools
      - call: git_status
        arguments: {{repo_path: {repo}}}
      - call: git_log
        arguments: {{repo_path: {repo}}}
  - name: everything
    server: everything
    steps:
      - list_tools
      - list_prompts
      - call: echo
        arguments: {{message: hello tape}}
      - call: get-sum
        arguments: {{a: 2, b: 3}}
      - get_prompt: simple-prompt
      - listen:
        duration: 1.5
  - name: filesystem
    server: filesystem
    steps:
      - list_tools
      - call: list_directory
        arguments: {{path: "{files}"}}
      - call: read_text_file
        arguments: {{path: "{files}/hello.txt"}}
      - call: get_file_info
        arguments: {{path: "{files}/hello.txt"}}
  - name: memory
    server: memory
    steps:
      - list_tools
      - call: create_entities
        arguments: {{entities: [{{name: tape, entityType: thing, observations: [recorded]}}]}}
      - call: read_graph
  - name: calc
    server: calc
    steps:
      - list_tools
      - call: add
        arguments: {{a: 2, b: 3}}
      - call: divide
        arguments: {{a: 1, b: 0}}
      - read_resource: calc://constants
  - name: notes
    server: notes
    steps:
      - list_tools
      - call: clock
      - call: count_notes
  - name: release
    server: release
    steps:
      - list_tools
      - call: add
        arguments: {{a: 2, b: 3}}
      - call: ticket
      - call: about
  - name: sdk2
    server: sdk2
    steps:
      - list_tools
      - call: add
        arguments: {{a: 2, b: 3}}
      - call: divide
        arguments: {{a: 1, b: 0}}
"""


def test_unchanged_servers_give_no_false_drift_in_5_runs_and_a_real_change_is_seen(tmp_path: Path) -> None:
    if shutil.which("git") is None or shutil.which("node") is None:
        pytest.skip("git and node are needed")
    files = tmp_path / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello from a fixture file\n", encoding="utf-8")
    fixture_repo = tmp_path / "fixture-repo"
    fixture_repo.mkdir()
    env = {**os.environ, **GIT_ENV}
    (fixture_repo / "README.md").write_text("# fixture repo\n", encoding="utf-8")
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "first commit"]):
        subprocess.run(["git", *args], cwd=fixture_repo, env=env, check=True, timeout=30)
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    shutil.copy(SERVERS / "release_server.py", project / "release_server.py")
    (project / "mcptape.yml").write_text(CONFIG.format(
        python=sys.executable, repo=fixture_repo, files=files, servers=SERVERS, memory_file=tmp_path / "memory.jsonl",
        everything=node_server("everything"), filesystem=node_server("filesystem"), memory=node_server("memory"),
    ), encoding="utf-8")
    commit(project, "servers", {"version": "1.0.0"})

    def ci(*args: str) -> tuple[int, dict[str, str], str]:
        report = tmp_path / "report.json"
        done = run_mcptape(["ci", f"--json={report}", "--jobs", "3", *args], cwd=project,
                           env=user_env(PYTHONPATH=str(ROOT)), timeout=600)
        data = json.loads(report.read_text(encoding="utf-8"))
        return done.returncode, {s["name"]: s["verdict"] for s in data["sessions"]}, done.stdout + done.stderr

    false_drift = []
    for run in range(RUNS):
        code, verdicts, out = ci("--baseline", "HEAD")
        assert len(verdicts) == 9
        false_drift += [(run, name, verdict) for name, verdict in verdicts.items() if verdict != "same"]
        assert code == 0, out
    assert false_drift == []

    commit(project, "add is off by one", {"version": "1.0.0", "offset": 1})
    code, verdicts, out = ci("--baseline", "HEAD~1", "--session", "release", "--session", "calc")
    assert code == 1, out
    assert verdicts == {"calc": "same", "release": "output"}
