"""The base side of `mcptape ci --baseline REF`: which commit REF is, and a checkout of it.

Owns talking to git: resolving `merge-base`, `previous-tag` or any ref to a commit, fetching what
a shallow checkout lacks (actions/checkout leaves depth 1: neither the base branch nor HEAD~1 is
there), and a temporary `git worktree` of that commit, removed afterwards. What runs in the
checkout is ci/baseline.py's. Git's own environment is kept (a fetch may need the credentials
actions/checkout configured); nothing here starts a server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import mcptape.environment as environment
from mcptape.errors import McptapeError

GIT_TIMEOUT = 300.0
DEEPEN_STEPS = (50, 200, 1000)  # commits fetched at a time while a merge base is not in reach
SPECIAL = ("merge-base", "previous-tag", "auto")


class GitError(McptapeError):
    """git could not give the base side (exit 3): which command, what git said, the fix."""


@dataclass(frozen=True)
class BaseRef:
    sha: str
    label: str  # how a report names it: "the merge base `abc1234` with `main`", "tag `v2.3.1`"


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, encoding="utf-8",
                              errors="replace", timeout=GIT_TIMEOUT, check=False)
    except FileNotFoundError as e:
        raise GitError("git is not installed: --baseline checks out the base commit with git") from e
    except subprocess.TimeoutExpired as e:
        raise GitError(f"`git {' '.join(args)}` took more than {GIT_TIMEOUT:.0f} s") from e
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise GitError(f"`git {' '.join(args)}` failed: {said[-1] if said else f'exit {done.returncode}'}")
    return done


def _out(repo: Path, *args: str) -> str | None:
    done = git(repo, *args, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def repo_root(where: Path) -> Path:
    top = _out(where, "rev-parse", "--show-toplevel")
    if top is None:
        raise GitError(f"{where} is not inside a git repository",
                       hint="--baseline compares with another commit of the repository: run it in a git checkout")
    return Path(top)


def _shallow(repo: Path) -> bool:
    return _out(repo, "rev-parse", "--is-shallow-repository") == "true"


def _has_origin(repo: Path) -> bool:
    return _out(repo, "remote", "get-url", "origin") is not None


def _commit(repo: Path, ref: str) -> str | None:
    return _out(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")


def _deepen(repo: Path, step: int) -> bool:
    """Fetch `step` more commits of history; False when there is nothing more to fetch."""
    if not _shallow(repo) or not _has_origin(repo):
        return False
    return git(repo, "fetch", "--no-tags", "--quiet", f"--deepen={step}", "origin", check=False).returncode == 0


def _base_branch(repo: Path, env: Mapping[str, str]) -> str:
    """The branch a pull request targets (GITHUB_BASE_REF), else the remote's default branch."""
    base = environment.get("GITHUB_BASE_REF", env)
    if base:
        return base
    head = _out(repo, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if head and head.startswith("origin/"):
        return head[len("origin/"):]
    if _has_origin(repo):  # a single-branch clone knows no origin/HEAD: ask the remote
        said = _out(repo, "ls-remote", "--symref", "origin", "HEAD") or ""
        first = said.splitlines()[0].split() if said else []
        if len(first) == 3 and first[0] == "ref:" and first[1].startswith("refs/heads/"):
            return first[1][len("refs/heads/"):]
    for name in ("main", "master"):
        if _commit(repo, f"origin/{name}") or _commit(repo, name):
            return name
    raise GitError("merge-base: no base branch known",
                   hint="outside a pull request set GITHUB_BASE_REF=main (the branch to compare with) or pass --baseline <ref>")


def _merge_base(repo: Path, env: Mapping[str, str]) -> BaseRef:
    branch = _base_branch(repo, env)
    target = f"refs/remotes/origin/{branch}"
    if _has_origin(repo):
        depth = ["--depth=50"] if _shallow(repo) else []
        fetched = git(repo, "fetch", "--no-tags", "--quiet", *depth, "origin", f"+refs/heads/{branch}:{target}", check=False)
        if fetched.returncode != 0 and not _commit(repo, target):  # offline, a local clone may still know it
            said = (fetched.stderr or "").strip().splitlines()
            raise GitError(f"merge-base: cannot fetch `{branch}` from origin: {said[-1] if said else 'git fetch failed'}",
                           hint="check the branch name (GITHUB_BASE_REF) and the checkout's credentials, or pass --baseline <ref>")
    if not _commit(repo, target):
        target = branch
    for step in (0, *DEEPEN_STEPS):
        if step and not _deepen(repo, step):
            break
        found = _out(repo, "merge-base", "HEAD", target)
        if found:
            return BaseRef(found, f"the merge base `{found[:7]}` with `{branch}`")
    if _shallow(repo) and _has_origin(repo):
        git(repo, "fetch", "--no-tags", "--quiet", "--unshallow", "origin")
        found = _out(repo, "merge-base", "HEAD", target)
        if found:
            return BaseRef(found, f"the merge base `{found[:7]}` with `{branch}`")
    raise GitError(f"merge-base: HEAD and `{branch}` share no commit", hint="pass --baseline <ref> to name the base")


def _previous_tag(repo: Path) -> BaseRef:
    """The newest tag before HEAD (on a tag push: the release before this one)."""
    if _shallow(repo) and _has_origin(repo):
        git(repo, "fetch", "--quiet", "--tags", "--unshallow", "origin")
    tag = _out(repo, "describe", "--tags", "--abbrev=0", "HEAD^")
    if tag is None:
        raise GitError("previous-tag: no tag before HEAD", hint="tag a release first, or pass --baseline <ref>")
    sha = _commit(repo, tag)
    assert sha is not None
    return BaseRef(sha, f"tag `{tag}`")


def _any_ref(repo: Path, ref: str) -> BaseRef:
    sha = _commit(repo, ref)
    if sha is None and _has_origin(repo):
        # A branch, tag or sha the checkout lacks: fetch that one commit; a relative ref (HEAD~1)
        # needs history instead, fetched a step at a time.
        if git(repo, "fetch", "--no-tags", "--quiet", "--depth=1", "origin", ref, check=False).returncode == 0:
            sha = _commit(repo, "FETCH_HEAD")
        for step in DEEPEN_STEPS:
            if sha is not None or not _deepen(repo, step):
                break
            sha = _commit(repo, ref)
    if sha is None:
        raise GitError(f"--baseline {ref}: no such commit in this repository",
                       hint="name a branch, tag or commit (e.g. main, v1.2.0, HEAD~1), or merge-base / previous-tag")
    label = f"`{ref}`" if ref.startswith(sha[:7]) else f"`{ref}` (`{sha[:7]}`)"
    return BaseRef(sha, label)


def resolve(repo: Path, spec: str, env: Mapping[str, str] | None = None) -> BaseRef:
    """`merge-base`, `previous-tag` or a ref -> the commit, fetched if the checkout lacks it."""
    env = os.environ if env is None else env
    if spec == "merge-base":
        return _merge_base(repo, env)
    if spec == "previous-tag":
        return _previous_tag(repo)
    return _any_ref(repo, spec)


@contextmanager
def worktree(repo: Path, sha: str) -> Iterator[Path]:
    """A detached checkout of `sha` in a temporary directory, removed afterwards."""
    parent = Path(tempfile.mkdtemp(prefix="mcptape-baseline-"))
    where = parent / "base"
    try:
        git(repo, "worktree", "add", "--quiet", "--detach", str(where), sha)
        yield where
    finally:
        git(repo, "worktree", "remove", "--force", str(where), check=False)
        shutil.rmtree(parent, ignore_errors=True)
        git(repo, "worktree", "prune", check=False)
