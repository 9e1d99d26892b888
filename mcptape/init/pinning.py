"""Pin the package an `npx pkg` / `uvx pkg` server command runs, so a release is not drift.

`npx -y some-server` runs whatever the registry published last: the golden tape was recorded against
one version, the next `ci` may run another. init writes the version it found instead: the one
installed here (node_modules up from the working directory), else the registry's latest (`npm view`,
`pip index versions`), when the registry answers within LOOKUP_TIMEOUT. A command that already names
a version, or one whose package cannot be resolved, is left as it was (and said).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

LOOKUP_TIMEOUT = 30.0
_NPX_OPTIONS_WITH_VALUE = frozenset({"-p", "--package", "-c", "--call", "--node-options", "--registry", "--cache"})
_PY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?")


def _package_index(argv: list[str], start: int, with_value: frozenset[str]) -> int | None:
    i = start
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return i + 1 if i + 1 < len(argv) else None
        if arg in with_value:
            return None  # `npx -p pkg cmd`, `uvx --from pkg cmd`: the package is named apart; left alone
        if not arg.startswith("-"):
            return i
        i += 1
    return None


def _local_npm_version(name: str, cwd: Path) -> str | None:
    for directory in (cwd, *cwd.parents):
        manifest = directory / "node_modules" / name / "package.json"
        if manifest.is_file():
            try:
                version = json.loads(manifest.read_text(encoding="utf-8")).get("version")
            except (OSError, ValueError):
                return None
            return version if isinstance(version, str) else None
    return None


def _run(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=LOOKUP_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _npm_version(name: str, cwd: Path) -> tuple[str, str] | None:
    local = _local_npm_version(name, cwd)
    if local:
        return local, "installed here"
    npm = shutil.which("npm")
    out = _run([npm, "view", name, "version"]) if npm else None
    version = (out or "").strip().splitlines()[-1:] if out else []
    return (version[0].strip("'\" "), "npm view") if version and version[0].strip() else None


def _pypi_version(name: str) -> tuple[str, str] | None:
    out = _run([sys.executable, "-m", "pip", "index", "versions", name, "--disable-pip-version-check"])
    match = re.search(r"\(([^)\s]+)\)", out or "")
    return (match.group(1), "pip index") if match else None


def pin_packages(command: list[str], cwd: Path) -> tuple[list[str], list[str]]:
    """(the command with its npx/uvx package pinned, lines saying what was done)."""
    if not command:
        return command, []
    program = Path(command[0]).name
    if program in ("npx", "npx.cmd"):
        at = _package_index(command, 1, _NPX_OPTIONS_WITH_VALUE)
        if at is None:
            return command, []
        spec = command[at]
        name_end = spec.find("@", 1)  # a scope's own @ is first
        if name_end > 0 or spec.startswith((".", "/")) or ":" in spec:
            return command, []  # a version (or a path, a git URL) is given already
        found = _npm_version(spec, cwd)
        if found is None:
            return command, [f"could not find the version of {spec} (npm view did not answer): the command runs "
                             f"whatever is newest; pin it as {spec}@x.y.z in mcptape.yml"]
        pinned = f"{spec}@{found[0]}"
    elif program == "uvx" or command[:3] in (["uv", "tool", "run"], ["uv", "x"]):
        start = 1 if program == "uvx" else 3
        at = _package_index(command, start, frozenset({"--from", "--with", "-w", "--python", "-p", "--index"}))
        if at is None:
            return command, []
        spec = command[at]
        if not _PY_NAME.fullmatch(spec):
            return command, []  # `pkg==1.2`, `pkg@1.2`, a path or URL: already what it is
        found = _pypi_version(spec.split("[", 1)[0])
        if found is None:
            return command, [f"could not find the version of {spec} (pip index did not answer): the command runs "
                             f"whatever is newest; pin it as {spec}@x.y.z in mcptape.yml"]
        pinned = f"{spec}@{found[0]}"
    else:
        return command, []
    out = [*command[:at], pinned, *command[at + 1:]]
    return out, [f"pinned {spec} to {found[0]} ({found[1]}): `{pinned}` in mcptape.yml, so a new release is not "
                 "drift; change the version there to upgrade, then `mcptape ci -u`"]
