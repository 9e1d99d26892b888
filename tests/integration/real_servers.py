"""The reference MCP servers as issue 18's tests run them: current and older published releases.

Owns where each server comes from and how a workspace for them is laid out; the tests own
what they assert. Everything here drives mcptape as a user does, through its command line
(`mcptape ...`, run as `python -m mcptape` runs it: tests/in_process.py), reading its exit code,
its stdout and its JSON report (never mcptape's inner modules, so these tests hold whatever shape
the package takes inside).

Releases, side by side:
- npm: `fixtures/node/package.json` installs the current release of each server under its own
  name and older ones under aliases `server-NAME-VERSION` (npm ci, from package-lock.json).
- PyPI: mcp-server-time and mcp-server-git come current in the dev venv (on the `mcp` 2.x
  line); older releases are installed, with `mcp<2` as their users had them, into venvs built
  once under `.mcptape-test-cache/` at the checkout's root (gitignored) and reused while their
  requirements stay the same. A venv that cannot be built fails the test under CI=true (CI
  must not pass by not running it) and skips it elsewhere.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, ROOT, node_server, user_env
from tests.in_process import run_mcptape

NODE_DIR = FIXTURES / "node"
CACHE = ROOT / ".mcptape-test-cache"
SDK2_SERVER = FIXTURES / "servers" / "sdk2_server.py"
TIMEOUT = 240  # one mcptape process on a loaded 2-core machine; a hang still ends the test

# Older npm releases installed beside the current one (fixtures/node/package.json's aliases),
# chosen for what changed after them:
#   filesystem 2025.7.1   12 tools: read_text_file and read_media_file came later; no annotations
#   filesystem 2025.8.21  the same 14 tools as now, before titles, annotations and outputSchema
#   memory     2025.8.4   protocol 2024-11-05, no titles or outputSchema
#   memory     2026.1.26  outputSchema, no annotations, no resources capability yet
#   everything 2025.9.25  the old tool names (add, printEnv, ...), 100 resources paginated 10 a page
#   everything 2026.1.26  today's tools and resources, before annotations
NPM_RELEASES: dict[str, tuple[str, ...]] = {
    "filesystem": ("2025.7.1", "2025.8.21"),
    "memory": ("2025.8.4", "2026.1.26"),
    "everything": ("2025.9.25", "2026.1.26"),
}

# Older PyPI releases, one venv per set (a set holds one release of each server), with mcp<2:
#   2024-12  time 0.6.2, git 0.6.2 (8 tools: git_diff, git_checkout, git_show, git_branch came later)
#   2026-01  time 2026.1.26, git 2026.1.14: today's tools, before annotations and the mcp 2.x line
PYTHON_RELEASES: dict[str, tuple[str, ...]] = {
    "2024-12": ("mcp-server-time==0.6.2", "mcp-server-git==0.6.2", "mcp<2"),
    "2026-01": ("mcp-server-time==2026.1.26", "mcp-server-git==2026.1.14", "mcp<2"),
}
# Published servers nobody here wrote, each in a venv of its own (built as the release sets are), for
# the behaviour a test reproduces from them (issue 41):
#   shell   mcp-shell-server 1.1.14: its description lists the allowed commands from a Python set,
#           in another order each start
PUBLISHED: dict[str, tuple[str, ...]] = {
    "shell": ("mcp-shell-server==1.1.14", "mcp<2"),
}
CURRENT = "current"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Tape Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Tape Author",
    "GIT_COMMITTER_EMAIL": "author@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-02T03:04:05+00:00",
    "GIT_COMMITTER_DATE": "2024-01-02T03:04:05+00:00",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what}: .ci/run must install it (make install, then this suite's release venvs)")
    pytest.skip(what)


def node_release(name: str, version: str = CURRENT) -> Path:
    """The entry point of an npm reference server: the current release, or an aliased older one."""
    if version == CURRENT:
        return node_server(name)
    entry = NODE_DIR / "node_modules" / f"server-{name}-{version}" / "dist" / "index.js"
    if not entry.exists():
        _missing(f"{entry} is missing (npm ci in fixtures/node installs the older releases)")
    return entry


@functools.cache
def python_release(release: str) -> Path:
    """The python of a venv holding one older PyPI release set (PYTHON_RELEASES) or one published
    server (PUBLISHED), built once.

    `current` is the dev venv itself. A venv is built under a lock (two pytest processes may
    start at once) and marked complete only after pip succeeded, so a killed build is redone.
    """
    if release == CURRENT:
        return Path(sys.executable)
    requirements = PYTHON_RELEASES[release] if release in PYTHON_RELEASES else PUBLISHED[release]
    venv = CACHE / "venvs" / release
    python = venv / "bin" / "python"
    marker = venv / ".requirements"
    wanted = "\n".join(requirements) + "\n"
    CACHE.mkdir(exist_ok=True)
    with open(CACHE / f"{release}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists() and marker.read_text(encoding="utf-8") == wanted and python.exists():
            return python
        shutil.rmtree(venv, ignore_errors=True)
        # The dev venv's pip installs into the new venv (--python): no pip of its own to bootstrap.
        steps = (
            [sys.executable, "-m", "venv", "--without-pip", str(venv)],
            [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile",
             "--disable-pip-version-check", *requirements],
        )
        for cmd in steps:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                _missing(f"could not build the {release} release venv ({' '.join(requirements)}): "
                         f"{proc.stderr.strip().splitlines()[-1:]}")
        marker.write_text(wanted, encoding="utf-8")
    return python


# --- the workspace -------------------------------------------------------------------------------


def git(repo: Path, *args: str, date: str | None = None) -> None:
    env = {**os.environ, **GIT_ENV}
    if date is not None:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, timeout=30, capture_output=True)


def make_git_repo(repo: Path) -> None:
    """A repository whose hashes are the same on every machine: author, committer and dates pinned."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# fixture repo\n", encoding="utf-8")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "first commit")


def add_commit(repo: Path, date: str, message: str = "second commit") -> None:
    """A real change: one more commit, on a pinned date of its own."""
    (repo / "CHANGES.md").write_text(f"{message}\n", encoding="utf-8")
    git(repo, "add", "CHANGES.md")
    git(repo, "commit", "-q", "-m", message, date=date)


def make_files(files: Path) -> None:
    """The filesystem server's scratch dir, its file dates pinned (a checkout's would vary)."""
    files.mkdir()
    hello = files / "hello.txt"
    hello.write_text("hello from a fixture file\n", encoding="utf-8")
    (files / "notes").mkdir()
    (files / "notes" / "todo.md").write_text("- record\n- replay\n", encoding="utf-8")
    for path in (hello, files / "notes" / "todo.md"):
        os.utime(path, (1735689600, 1735689600))  # 2025-01-01T00:00:00Z


def need_tools() -> None:
    if shutil.which("git") is None or shutil.which("node") is None:
        _missing("git and node are needed for the reference servers")


# --- running mcptape ----------------------------------------------------------------------------


@dataclass
class Run:
    """One mcptape process: exit code, output, and the JSON report when one was asked for."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any] | None = None

    def session(self, name: str) -> dict[str, Any]:
        assert self.report is not None, self.text()
        found = [s for s in self.report["sessions"] if s["name"] == name]
        assert found, f"no session {name} in the report:\n{self.text()}"
        return found[0]

    def verdicts(self) -> dict[str, str]:
        assert self.report is not None, self.text()
        return {s["name"]: s["verdict"] for s in self.report["sessions"]}

    def headline(self) -> str:
        """The first line mcptape printed (stdout, else stderr): what a reviewer reads first."""
        for line in (self.stdout + "\n" + self.stderr).splitlines():
            if line.strip():
                return line.strip()
        return ""

    def text(self) -> str:
        return f"$ mcptape {' '.join(self.args)}\nexit {self.returncode}\n{self.stdout}\n{self.stderr}"


def mcptape(*args: str, cwd: Path, env: Mapping[str, str] | None = None, json_report: bool = False,
            timeout: float = TIMEOUT) -> Run:
    """Run `mcptape ARGS` from the checkout, as a developer's shell (not CI mode) would (tests/in_process.py)."""
    run_env = user_env(PYTHONPATH=str(ROOT), **dict(env or {}))
    extra: tuple[str, ...] = ()
    report_path = cwd / f".report-{os.getpid()}-{id(args)}.json"
    if json_report:
        report_path.unlink(missing_ok=True)
        extra = (f"--json={report_path}",)
    proc = run_mcptape([*args, *extra], cwd=cwd, env=run_env, timeout=timeout)
    report = None
    if json_report and report_path.exists():
        report = json.loads(report_path.read_text(encoding="utf-8"))
        report_path.unlink()
    return Run(tuple(args), proc.returncode, proc.stdout, proc.stderr, report)


def first_drift(session: Mapping[str, Any]) -> str | None:
    """The first drifted call of a session in the JSON report, as `call · path message (severity)`.

    Built from the report's own fields (drifts[0]: its call and its first finding of the
    drift's worst severity), which is what the terminal and the PR comment print.
    """
    diff = session.get("diff") or {}
    drifts = diff.get("drifts") or []
    if not drifts:
        return session.get("error")
    drift = drifts[0]
    findings = drift["findings"]
    order = ("structural", "output", "info")
    worst = min((f["severity"] for f in findings), key=order.index)
    finding = next(f for f in findings if f["severity"] == worst)
    call = drift.get("call") or {}
    head = " ".join(str(p) for p in (call.get("method"), call.get("name")) if p)
    where = f"{finding['path']} {finding['message']}".strip() if finding["path"] else finding["message"]
    return " · ".join(p for p in (head, where) if p) + f" ({worst})"


def findings(session: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every finding of a session's diff, each with the call it belongs to under `call`."""
    diff = session.get("diff") or {}
    return [{**f, "call": d.get("call")} for d in diff.get("drifts") or [] for f in d["findings"]]
