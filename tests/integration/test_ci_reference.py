"""`mcptape ci` against the real reference servers: goldens are stable run after run.

For each of mcp-server-time, mcp-server-git, server-everything, server-filesystem and
server-memory: record goldens, run `mcptape ci` three times (exit 0 each time), and check
that `--update-golden` leaves the golden files byte-identical. All five sessions live in one
mcptape.yml and run in parallel in each mcptape process, which keeps this file short.

Where a server is nondeterministic, the config below carries the rule that makes it stable,
with its reason (the same rules a user would write):
  - time: the clock. Built-in normalization turns the ISO `datetime` into <TIMESTAMP>, also
    inside the JSON text copy; `day_of_week` is volatile too, so `$..day_of_week` handles it.
    `--local-timezone UTC` pins the zone that tool descriptions embed.
  - git: commit dates and author are pinned when the fixture repo is made, so hashes and logs
    are stable; the repository path becomes <CONFIG_DIR>.
  - everything: its `roots/list` fires on a ~350 ms timer and its log lines race responses;
    volatility/normalize.py moves such floating events to one canonical place. A `listen` step of 1.5 s
    makes sure the timer has fired in every run.
  - filesystem: absolute paths (built-in <CONFIG_DIR>), and get_file_info's created/modified/
    accessed times, which a regex rule replaces.
  - memory: state carries over between runs, so every run gets a fresh MEMORY_FILE_PATH
    through `${MEMORY_FILE}`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, mcptape_command, node_server, user_env
from tests.integration.real_servers import GIT_ENV

pytestmark = pytest.mark.node

CONFIG = """\
version: 1
golden_dir: tapes
servers:
  time:
    command: [{python}, -m, mcp_server_time, --local-timezone, UTC]
  git:
    command: [{python}, -m, mcp_server_git, --repository, repo]
  everything:
    command: [node, {everything}, stdio]
  filesystem:
    command: [node, {filesystem}, files]
  memory:
    command: [node, {memory}]
    env:
      MEMORY_FILE_PATH: "${{MEMORY_FILE}}"
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
      - call: get_current_time
        arguments: {{timezone: Not/AZone}}
  - name: git
    server: git
    steps:
      - list_tools
      - call: git_status
        arguments: {{repo_path: repo}}
      - call: git_log
        arguments: {{repo_path: repo}}
      - call: git_show
        arguments: {{repo_path: repo, revision: HEAD}}
      - call: git_branch
        arguments: {{repo_path: repo, branch_type: local}}
  - name: everything
    server: everything
    steps:
      - list_tools
      - list_prompts
      - call: echo
        arguments: {{message: hello tape}}
      - call: get-sum
        arguments: {{a: 2, b: 3}}
      - call: trigger-sampling-request
        arguments: {{prompt: "say hi", maxTokens: 10}}
      - get_prompt: simple-prompt
      - listen:
        duration: 1.5
  - name: filesystem
    server: filesystem
    steps:
      - list_tools
      - call: list_allowed_directories
      - call: list_directory
        arguments: {{path: "{files}"}}
      - call: read_text_file
        arguments: {{path: "{files}/hello.txt"}}
      - call: get_file_info
        arguments: {{path: "{files}/hello.txt"}}
      - list_resources
  - name: memory
    server: memory
    steps:
      - list_tools
      - call: create_entities
        arguments: {{entities: [{{name: tape, entityType: thing, observations: [recorded]}}]}}
      - call: create_relations
        arguments: {{relations: [{{from: tape, to: tape, relationType: loops}}]}}
      - call: read_graph
      - call: search_nodes
        arguments: {{query: tape}}
normalize:
  - path: "$..day_of_week"
    replace: "<DAY>"
    reason: "time: the weekday of the current date"
  - pattern: "(?m)^(created|modified|accessed): .*$"
    replace: "<FILE_TIME>"
    reason: "filesystem: get_file_info prints the file's times, which differ per checkout"
"""

def make_workspace(root: Path) -> Path:
    if shutil.which("git") is None or shutil.which("node") is None:
        pytest.skip("git and node are needed for the reference servers")
    files = root / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello from a fixture file\n", encoding="utf-8")
    repo = root / "repo"
    repo.mkdir()
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "first commit"]):
        if args[0] == "add":
            (repo / "README.md").write_text("# fixture repo\n", encoding="utf-8")
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, timeout=30)
    config = root / "mcptape.yml"
    config.write_text(
        CONFIG.format(
            python=sys.executable,
            everything=node_server("everything"),
            filesystem=node_server("filesystem"),
            memory=node_server("memory"),
            files=files,
        ),
        encoding="utf-8",
    )
    return config


def ci(config: Path, run: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = user_env(PYTHONPATH=str(ROOT))
    env["MEMORY_FILE"] = str(config.parent / f"memory-{run}.jsonl")  # fresh store per run
    return subprocess.run(
        mcptape_command("ci", "-c", str(config), "--jobs", "5", *args),
        capture_output=True,
        text=True,
        env=env,
        cwd=config.parent,
        timeout=180,
    )


def test_reference_servers_give_stable_goldens(tmp_path: Path) -> None:
    config = make_workspace(tmp_path)
    recorded = ci(config, 0, "--update-golden")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    tapes = tmp_path / "tapes"
    goldens = {p.name: p.read_bytes() for p in tapes.glob("*.tape.jsonl")}
    assert set(goldens) == {f"{n}.tape.jsonl" for n in ("time", "git", "everything", "filesystem", "memory")}

    for run in (1, 2, 3):
        proc = ci(config, run)
        assert proc.returncode == 0, f"run {run}:\n{proc.stdout}\n{proc.stderr}"

    again = ci(config, 4, "--update-golden")
    assert again.returncode == 0, again.stdout + again.stderr
    assert {p.name: p.read_bytes() for p in tapes.glob("*.tape.jsonl")} == goldens
    assert again.stdout.count("  unchanged    tapes/") == 5

    everything = goldens["everything.tape.jsonl"].decode()
    assert "a canned answer" in everything  # the sampling request was answered from the config
    assert '"method":"roots/list"' in everything  # the timer's request, in its canonical place
    for text in goldens.values():
        assert str(tmp_path) not in text.decode()  # no absolute paths of this machine

    # Positive control: the same filesystem session over a file whose text changed drifts.
    (tmp_path / "files" / "hello.txt").write_text("hello from a changed fixture file\n", encoding="utf-8")
    changed = ci(config, 5, "--session", "filesystem")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "hello from a changed fixture file" in changed.stdout
