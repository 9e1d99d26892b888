"""The files of a fresh clone: what the packaging and README tests hold the repository to.

A developer's tree also has a venv, node_modules, caches and an egg-info that a clone has not;
a check against the tree as it lies would pass on files no user gets.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT

# What is never part of a checkout (used where there is no git to ask, as in an unpacked sdist).
NOT_SOURCE = (".git", ".venv", "node_modules", "__pycache__", "*.egg-info", ".pytest_cache", ".mypy_cache",
              ".ruff_cache", "build", "dist", ".mcptape", "results.json", "*.pyc")


def checkout_files(root: Path = ROOT) -> list[str]:
    """The files a fresh clone has (tracked, or new and not ignored), relative to `root`."""
    if (root / ".git").exists() and shutil.which("git"):
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=root, capture_output=True, check=True, timeout=60).stdout
        return sorted(p for p in out.decode("utf-8").split("\0") if p and (root / p).is_file())
    files = []
    for top, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not _not_source(d)]
        files += [(Path(top) / n).relative_to(root).as_posix() for n in names if not _not_source(n)]
    return sorted(files)


def _not_source(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in NOT_SOURCE)


def clean_copy(dest: Path) -> Path:
    """Copy the checkout's files (as a fresh clone has them) into `dest`."""
    for rel in checkout_files():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)
    return dest
