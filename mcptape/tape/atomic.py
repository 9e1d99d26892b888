"""Atomic file writes: readers see the old bytes or the new, never a mix (temp file, fsync, rename).

Every file mcptape writes whole goes through `write_atomic` (golden and fresh tapes, reports,
summaries), and every OSError on the way is a WriteError naming the path and the cause (exit 3).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
import time
from pathlib import Path

from mcptape.errors import WriteError

# Atomic writes go through a temp file in this subdirectory of the target's directory: the same
# filesystem, so the rename is atomic, and a directory git ignores (its .gitignore says `*`, which
# ignores the .gitignore too), so a writer killed between the temp file and the rename leaves
# nothing `git add tapes/` would stage. The directory is removed once no write is in flight.
TEMP_DIR = ".mcptape-tmp"
TEMP_GITIGNORE = b"*\n"
TEMP_SUFFIX = ".tmp"
# Temp files are named `<target>.<pid>.<random>.tmp`; one whose writer is gone is stale. A temp
# carrying our own pid but older than this process was left by an earlier process with that pid.
_STARTED = time.time()
_temp_dir_lock = threading.Lock()  # parallel ci sessions write goldens into one directory


def _read_umask() -> int:
    """This process's umask, read once: os.umask can only be read by setting it, which races threads."""
    try:
        with open("/proc/self/status", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # at import time, before any thread of ours writes a file
    os.umask(mask)
    return mask


# mkstemp creates 0600; a golden tape is committed, and git stores what it finds, so a new file
# gets the mode open() would give it (0666 less the umask) and a rewritten one keeps its own.
_NEW_FILE_MODE = 0o666 & ~_read_umask()


def write_atomic(path: str | os.PathLike[str], data: bytes, *, what: str = "file") -> None:
    """Write a file so readers see the old bytes or the new, never a mix: temp, fsync, rename.

    Any OSError (disk full, read-only, a file where a directory should be, a directory where
    the file should be) is a WriteError naming the path, `what` it is and the cause: exit 3.
    """
    p = Path(path)
    try:
        _write_atomic(p, data)
    except OSError as e:
        raise WriteError(
            f"{p}: cannot write the {what}: {_cause(e, p)}",
            hint="check that the directory is a writable directory and the disk is not full",
        ) from e


def _cause(e: OSError, target: Path) -> str:
    """The OSError's reason, with the path it is about when that is not the target (nor our temp file)."""
    reason = e.strerror or str(e)
    where = Path(os.fsdecode(e.filename)) if e.filename is not None else None
    if where is None or where == target or TEMP_DIR in where.parts:
        return reason
    return f"{where}: {reason}"


def _write_atomic(p: Path, data: bytes) -> None:
    try:
        mode = p.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # not there yet (mkdir below says why, if it cannot be)
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        # `--json /dev/stdout`, a FIFO: renaming over it would replace the device or pipe with a
        # file (as root, /dev/stdout itself). There is nothing to keep atomic: write into it.
        with open(p, "wb") as fh:
            fh.write(data)
        return
    p.parent.mkdir(parents=True, exist_ok=True)
    temp_dir = p.parent / TEMP_DIR
    with _temp_dir_lock:
        _open_temp_dir(temp_dir)
        fd, tmp = tempfile.mkstemp(prefix=f"{p.name}.{os.getpid()}.", suffix=TEMP_SUFFIX, dir=temp_dir)
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                os.fchmod(fh.fileno(), stat.S_IMODE(mode) if mode is not None else _NEW_FILE_MODE)
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, p)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    finally:
        with _temp_dir_lock:
            _close_temp_dir(temp_dir)
    try:  # make the rename itself durable
        dir_fd = os.open(p.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _open_temp_dir(temp_dir: Path) -> None:
    """The temp directory, ignored by git before any temp file exists in it; stale temps removed."""
    temp_dir.mkdir(exist_ok=True)
    ignore = temp_dir / ".gitignore"
    try:
        current = ignore.read_bytes()
    except FileNotFoundError:
        current = None
    if current != TEMP_GITIGNORE:
        ignore.write_bytes(TEMP_GITIGNORE)
    for entry in os.scandir(temp_dir):
        if entry.name != ".gitignore" and _stale_temp(entry):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)


def _stale_temp(entry: os.DirEntry[str]) -> bool:
    """A temp file no live writer owns (see TEMP_DIR)."""
    try:
        older = entry.stat(follow_symlinks=False).st_mtime < _STARTED
    except FileNotFoundError:
        return False
    parts = entry.name.removesuffix(TEMP_SUFFIX).rsplit(".", 2)
    pid = int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None
    if pid is None or pid == os.getpid():
        return older
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, someone else's
        return False
    return False


def _close_temp_dir(temp_dir: Path) -> None:
    """Remove the temp directory when nothing but its .gitignore is left in it."""
    try:
        if os.listdir(temp_dir) != [".gitignore"]:
            return
        os.unlink(temp_dir / ".gitignore")
        os.rmdir(temp_dir)
    except FileNotFoundError:
        return
    except OSError:
        # Another process put a temp file in it meanwhile: it must stay ignored.
        with contextlib.suppress(OSError):
            (temp_dir / ".gitignore").write_bytes(TEMP_GITIGNORE)
