"""mcptape/ci/gitref.py on real git repositories: refs, tags and merge bases, fetched into shallow clones."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mcptape.ci import gitref
from mcptape.errors import EXIT_COULD_NOT_RUN
from tests.integration.test_ci_baseline import commit, git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed")


def history(tmp_path: Path) -> tuple[Path, list[str]]:
    """A bare origin with main: c1 (tag v1.0.0), c2, c3 (tag v1.1.0), c4; returns it and the shas."""
    dev = tmp_path / "dev"
    dev.mkdir()
    git(dev, "init", "-q", "-b", "main")
    shas = []
    for i in range(1, 5):
        (dev / "n.txt").write_text(str(i), encoding="utf-8")
        commit(dev, f"c{i}")
        shas.append(git(dev, "rev-parse", "HEAD"))
    git(dev, "tag", "v1.0.0", shas[0])
    git(dev, "tag", "v1.1.0", shas[2])
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(dev), str(origin)], check=True, timeout=60)
    return origin, shas


def shallow(origin: Path, where: Path, branch: str = "main") -> Path:
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--no-tags", "--branch", branch, origin.as_uri(), str(where)],
                   check=True, timeout=60)
    assert git(where, "rev-parse", "--is-shallow-repository") == "true"
    return where


def test_a_relative_ref_in_a_shallow_clone_is_fetched(tmp_path: Path) -> None:
    origin, shas = history(tmp_path)
    ws = shallow(origin, tmp_path / "ws")
    ref = gitref.resolve(ws, "HEAD~2", env={})
    assert ref.sha == shas[1]
    assert ref.label == f"`HEAD~2` (`{shas[1][:7]}`)"


def test_a_sha_the_clone_lacks_is_fetched(tmp_path: Path) -> None:
    origin, shas = history(tmp_path)
    ws = shallow(origin, tmp_path / "ws")
    assert gitref.resolve(ws, shas[0], env={}).sha == shas[0]
    assert gitref.resolve(ws, "v1.0.0", env={}).label == f"`v1.0.0` (`{shas[0][:7]}`)"


def test_previous_tag_is_the_release_before_head(tmp_path: Path) -> None:
    origin, shas = history(tmp_path)
    ws = shallow(origin, tmp_path / "ws")
    ref = gitref.resolve(ws, "previous-tag", env={})
    assert (ref.sha, ref.label) == (shas[2], "tag `v1.1.0`")


def test_merge_base_outside_a_pull_request_uses_the_remote_default_branch(tmp_path: Path) -> None:
    origin, shas = history(tmp_path)
    dev = tmp_path / "dev"
    git(dev, "checkout", "-q", "-b", "topic", shas[1])
    commit(dev, "topic work")
    git(dev, "push", "-q", str(origin), "topic")
    ws = shallow(origin, tmp_path / "ws", branch="topic")
    ref = gitref.resolve(ws, "merge-base", env={})
    assert ref.sha == shas[1]
    assert ref.label == f"the merge base `{shas[1][:7]}` with `main`"


def test_an_unknown_ref_and_a_directory_outside_git_are_exit_3_with_the_fix(tmp_path: Path) -> None:
    origin, _ = history(tmp_path)
    ws = shallow(origin, tmp_path / "ws")
    with pytest.raises(gitref.GitError) as e:
        gitref.resolve(ws, "no-such-branch", env={})
    assert e.value.exit_code == EXIT_COULD_NOT_RUN and "no such commit" in e.value.message and e.value.hint
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(gitref.GitError, match="not inside a git repository"):
        gitref.repo_root(plain)


def test_the_worktree_is_the_commit_and_is_removed_afterwards(tmp_path: Path) -> None:
    origin, shas = history(tmp_path)
    dev = tmp_path / "dev"
    with gitref.worktree(dev, shas[0]) as checkout:
        assert (checkout / "n.txt").read_text(encoding="utf-8") == "1"
    assert not checkout.exists()
    assert len(git(dev, "worktree", "list").splitlines()) == 1


def test_merge_base_with_a_base_branch_origin_does_not_have_names_it(tmp_path: Path) -> None:
    origin, _ = history(tmp_path)
    ws = shallow(origin, tmp_path / "ws")
    with pytest.raises(gitref.GitError, match="cannot fetch `release-9` from origin") as e:
        gitref.resolve(ws, "merge-base", env={"GITHUB_BASE_REF": "release-9"})
    assert e.value.hint and "GITHUB_BASE_REF" in e.value.hint
    assert gitref.resolve(ws, "merge-base", env={"GITHUB_BASE_REF": "main"}).label.endswith("with `main`")
