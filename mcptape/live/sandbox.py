"""Side effects: snapshot a session's sandbox directories and name what each step changed in them.

A session may declare `sandbox:` directories its server is allowed to touch (config.Session).
This module owns what a change there is: a snapshot is every regular file (and symlink) under
each root as `relative path -> (size, sha256)`; comparing two snapshots gives `created`,
`modified` and `deleted` entries, sorted by path, with paths relative to the sandbox root (never
absolute: a golden tape must not know where the checkout lives). `Sandbox` strings that into
one `side_effect` event per step that changed something, and puts the directories back as they
were after the session, so the next run (or the next `--repeat` run) starts from the same state.

Tape event (an optional kind, format v1 readers keep it like any other event):
    {"kind": "side_effect", "step": 3, "changes": [{"path": "notes.txt", "change": "created",
     "size": 5, "sha256": "..."}]}
`deleted` entries carry no size or hash. With several sandbox roots, paths are prefixed with
`sandbox[i]/` (i: position in the config, 0-based).

`PrivateHome` is the other isolation a session may ask for (`private_home: true` on a server): a
fresh HOME and temp dir per run, removed after it, so a server's own state (a usage counter in
~/.config, a cache) does not carry from one run into the next.

Recording the event in a step is client.py's hook, wiring it into a session is ci.py's, and
judging a new, missing or different side effect is diff/side_effects.py's. Writes outside the
declared directories are not detected (that would need tracing the server process).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

KIND = "side_effect"
Entry = tuple[int, str]  # (size in bytes, sha256 hex)
Snapshot = dict[str, Entry]  # "relative/path" -> entry, "/" separators on every platform


def _digest(path: Path, st: os.stat_result) -> Entry:
    if stat.S_ISLNK(st.st_mode):
        # A symlink is recorded as where it points, not followed: it may point out of the sandbox.
        target = os.readlink(path).encode("utf-8", "surrogateescape")
        return len(target), hashlib.sha256(b"symlink:" + target).hexdigest()
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return st.st_size, h.hexdigest()


def snapshot(root: Path) -> Snapshot:
    """Every file under `root` (a missing root is an empty sandbox). Unreadable files are skipped."""
    out: Snapshot = {}
    if not root.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted(filenames):
            path = base / name
            try:
                st = path.lstat()
                if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                    continue  # sockets, fifos: not content
                entry = _digest(path, st)
            except OSError:
                continue  # vanished or unreadable between listing and reading: not this step's to name
            out[path.relative_to(root).as_posix()] = entry
    return out


def compare(before: Mapping[str, Entry], after: Mapping[str, Entry]) -> list[dict[str, Any]]:
    """What changed from `before` to `after`, as tape change entries sorted by path."""
    out: list[dict[str, Any]] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if new is None:
            out.append({"path": path, "change": "deleted"})
            continue
        change = "created" if old is None else "modified"
        out.append({"path": path, "change": change, "size": new[0], "sha256": new[1]})
    return out


def side_effect_event(step: int | None, changes: list[dict[str, Any]]) -> dict[str, Any]:
    event: dict[str, Any] = {"kind": KIND}
    if step is not None:
        event["step"] = step
    event["changes"] = changes
    return event


class Sandbox:
    """The sandbox directories of one session run: snapshot, per-step changes, restore.

    `label` maps a change path before it is recorded (ci.py passes the session's normalizer,
    so a timestamp in a file name is not drift).
    """

    def __init__(self, roots: Sequence[Path], *, label: Callable[[str], str] = lambda p: p) -> None:
        self.roots = [Path(r) for r in roots]
        self.label = label
        self._initial: Snapshot = {}
        self._last: Snapshot = {}
        self._dirs: set[str] = set()
        self._backup: Path | None = None

    def _key(self, index: int, rel: str) -> str:
        return rel if len(self.roots) == 1 else f"sandbox[{index}]/{rel}"

    def _snapshot(self) -> Snapshot:
        out: Snapshot = {}
        for i, root in enumerate(self.roots):
            for rel, entry in snapshot(root).items():
                out[self._key(i, rel)] = entry
        return out

    def start(self) -> None:
        """Before the server starts: remember the state, and keep a copy to restore it from."""
        self._initial = self._snapshot()
        self._last = dict(self._initial)
        self._dirs = set()
        self._backup = Path(tempfile.mkdtemp(prefix="mcptape-sandbox-"))
        for i, root in enumerate(self.roots):
            if root.is_dir():
                for dirpath, _dirs, _files in os.walk(root):
                    self._dirs.add(str(Path(dirpath)))
                shutil.copytree(root, self._backup / str(i), symlinks=True, dirs_exist_ok=True)

    def step(self, number: int | None) -> list[dict[str, Any]]:
        """The side_effect event of what changed since the last snapshot ([] if nothing did)."""
        now = self._snapshot()
        changes = compare(self._last, now)
        self._last = now
        if not changes:
            return []
        for change in changes:
            change["path"] = self.label(change["path"])
        return [side_effect_event(number, changes)]

    def restore(self) -> None:
        """Put every root back as it was at `start` (files the session created go, others return)."""
        if self._backup is None:
            return
        try:
            for i, root in enumerate(self.roots):
                current = snapshot(root)
                prefix = f"sandbox[{i}]/" if len(self.roots) > 1 else ""
                mine = {k[len(prefix):]: e for k, e in self._initial.items() if k.startswith(prefix)}
                for rel in current:
                    if rel not in mine:
                        (root / rel).unlink(missing_ok=True)
                for rel, entry in mine.items():
                    if current.get(rel) != entry:
                        target = root / rel
                        target.parent.mkdir(parents=True, exist_ok=True)
                        if target.is_symlink() or target.exists():
                            target.unlink()
                        shutil.copy2(self._backup / str(i) / rel, target, follow_symlinks=False)
                if root.is_dir():
                    for dirpath, _dirs, _files in sorted(os.walk(root), key=lambda t: -len(t[0])):
                        if str(Path(dirpath)) not in self._dirs:
                            with contextlib.suppress(OSError):  # not empty: something we do not own lives there
                                os.rmdir(dirpath)
        finally:
            shutil.rmtree(self._backup, ignore_errors=True)
            self._backup = None


# Package managers keep their download caches under HOME: a private HOME keeps pointing at the real
# ones, or `npx -y pkg` / `uvx pkg` would download the package again on every run (and fail offline).
_PACKAGE_CACHES = (("npm_config_cache", ".npm"), ("UV_CACHE_DIR", ".cache/uv"),
                   ("UV_PYTHON_INSTALL_DIR", ".local/share/uv/python"), ("PIP_CACHE_DIR", ".cache/pip"))


class PrivateHome:
    """A fresh HOME and temp dir for one server run (`private_home: true`); `remove()` after it."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="mcptape-home-"))
        (self.root / "home").mkdir()
        (self.root / "tmp").mkdir()

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """`base` (the server's environment) with HOME and the temp variables moved here."""
        env = dict(base)
        real_home = Path(base.get("HOME") or os.path.expanduser("~"))
        for name, rel in _PACKAGE_CACHES:
            if name not in env and (real_home / rel).is_dir():
                env[name] = str(real_home / rel)
        home, tmp = str(self.root / "home"), str(self.root / "tmp")
        env.update({"HOME": home, "USERPROFILE": home, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp})
        return env

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
