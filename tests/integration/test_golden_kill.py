"""`kill -9` during `mcptape ci --update-golden`: nothing `git add tapes/` stages but real tapes.

A real mcptape process in a real git repository is SIGKILLed between writing a golden's temp file
and renaming it into place: the launcher below holds `os.replace` of the second golden (and says
so on stderr), so the kill lands there every time, without timing. The temp file is on disk, in
the git-ignored `.mcptape-tmp/`; the next run removes it.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CALC_SERVER, ROOT, user_env

# `mcptape ci` as the console script runs it, except that the second golden tape's rename waits
# for the test to kill the process.
PAUSING_LAUNCHER = """\
import os, sys, time
real_replace = os.replace
renames = []
def replace(src, dst, *args, **kwargs):
    if str(dst).endswith(".tape.jsonl"):
        renames.append(dst)
        if len(renames) == 2:
            print(f"PAUSED {src}", file=sys.stderr, flush=True)
            time.sleep(300)
    return real_replace(src, dst, *args, **kwargs)
os.replace = replace
from mcptape.cli import main
raise SystemExit(main(sys.argv[1:]))
"""

CONFIG = """\
version: 1
golden_dir: tapes
servers:
  calc:
    command: [{python}, {calc}]
sessions:
  - name: first
    server: calc
    steps: [list_tools]
  - name: second
    server: calc
    steps: [{{call: add, arguments: {{a: 2, b: 3}}}}]
  - name: third
    server: calc
    steps: [ping]
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.fail("git is needed for this test")
    git(tmp_path, "init", "-q")
    (tmp_path / "mcptape.yml").write_text(
        CONFIG.format(python=json.dumps(sys.executable), calc=json.dumps(str(CALC_SERVER))), encoding="utf-8")
    return tmp_path


def update_golden(repo: Path, *launcher: str) -> subprocess.Popen[str]:
    command = [*launcher] if launcher else [sys.executable, "-m", "mcptape"]
    return subprocess.Popen([*command, "ci", "--update-golden", "--jobs", "1"], cwd=repo,
                            env=user_env(PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def staged(repo: Path) -> list[str]:
    git(repo, "add", "tapes/")
    return sorted(git(repo, "status", "--porcelain", "--untracked-files=all").splitlines())


def test_a_kill_between_temp_file_and_rename_leaves_nothing_git_stages(repo: Path) -> None:
    proc = update_golden(repo, sys.executable, "-c", PAUSING_LAUNCHER)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # blocks until the launcher holds the second rename
        assert line.startswith("PAUSED "), line + proc.stderr.read()
        temp = Path(line.split(" ", 1)[1].strip())
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    tapes = repo / "tapes"
    assert temp.is_file() and temp.parent == tapes / ".mcptape-tmp"  # killed mid-write, for real
    assert temp.read_bytes().startswith(b'{"mcptape":"tape"')
    # A written tape comes with its review view (tape/view.py), written right after it.
    assert staged(repo) == ["?? mcptape.yml", "A  tapes/first.tape.jsonl", "A  tapes/first.tape.view.txt"]

    # The next run writes every golden and removes what the killed one left.
    again = update_golden(repo)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, out + err
    assert not (tapes / ".mcptape-tmp").exists()
    tapes_and_views = [f"{n}{suffix}" for n in ("first", "second", "third") for suffix in (".tape.jsonl", ".tape.view.txt")]
    assert sorted(p.name for p in tapes.iterdir()) == tapes_and_views
    assert staged(repo) == ["?? mcptape.yml", *(f"A  tapes/{n}" for n in tapes_and_views)]

    # The control: a temp file beside the tapes, where write_atomic used to put it, is staged.
    (tapes / ".second.tape.jsonl.k2j4x9.tmp").write_bytes(temp.name.encode())
    assert "A  tapes/.second.tape.jsonl.k2j4x9.tmp" in staged(repo)
