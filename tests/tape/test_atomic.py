"""tape.atomic.write_atomic: all or nothing, temp files git never stages, OSError as WriteError (exit 3).

Temp files live in `.mcptape-tmp/` beside the target, a directory whose own .gitignore says `*`;
a killed writer's temp file is removed by the next write (tests/integration/test_golden_kill.py
kills a real `mcptape ci --update-golden` mid-write inside a git repository).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcptape.errors import EXIT_COULD_NOT_RUN, WriteError
from mcptape.tape.atomic import TEMP_DIR, write_atomic


def test_writes_replace_the_file_and_leave_nothing_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "golden" / "g.tape.jsonl"
    write_atomic(path, b"one\n")
    write_atomic(path, b"two\n")
    assert path.read_bytes() == b"two\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["g.tape.jsonl"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_next_write_removes_temp_files_no_live_writer_owns(tmp_path: Path) -> None:
    temp_dir = tmp_path / TEMP_DIR
    temp_dir.mkdir()
    (temp_dir / ".gitignore").write_bytes(b"*\n")
    dead = temp_dir / f"a.tape.jsonl.{_dead_pid()}.abcdefgh.tmp"  # its writer was killed
    dead.write_bytes(b"half a tape")
    ours_before = temp_dir / f"b.tape.jsonl.{os.getpid()}.abcdefgh.tmp"  # an earlier process with our pid
    ours_before.write_bytes(b"half a tape")
    past = time.time() - 3600
    os.utime(ours_before, (past, past))
    live = temp_dir / f"c.tape.jsonl.{os.getppid()}.abcdefgh.tmp"  # a live process may be writing it
    live.write_bytes(b"in flight")

    write_atomic(tmp_path / "d.tape.jsonl", b"d\n")
    assert sorted(p.name for p in temp_dir.iterdir()) == [".gitignore", live.name]

    live.unlink()
    write_atomic(tmp_path / "d.tape.jsonl", b"d\n")
    assert not temp_dir.exists()  # nothing in flight: the directory goes too
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.tape.jsonl"]


@pytest.mark.parametrize("case", ["target is a directory", "directory is a file", "parent is a file"])
def test_an_os_error_is_a_write_error_naming_path_and_cause(tmp_path: Path, case: str) -> None:
    blocker = tmp_path / "tapes"
    if case == "target is a directory":
        target = blocker / "g.tape.jsonl"
        target.mkdir(parents=True)
        cause = "Is a directory"
    elif case == "directory is a file":
        blocker.write_text("x", encoding="utf-8")
        target = blocker / "g.tape.jsonl"
        cause = "File exists"
    else:
        blocker.write_text("x", encoding="utf-8")
        target = blocker / "deeper" / "g.tape.jsonl"
        cause = "Not a directory"
    with pytest.raises(WriteError) as info:
        write_atomic(target, b"x\n", what="golden tape of session g")
    assert info.value.exit_code == EXIT_COULD_NOT_RUN
    assert str(info.value).startswith(f"{target}: cannot write the golden tape of session g: ")
    assert cause in info.value.message
    assert TEMP_DIR not in info.value.message  # the temp file is ours; the user's path is named
    assert isinstance(info.value.__cause__, OSError)


def test_a_pipe_or_device_is_written_into_not_replaced(tmp_path: Path) -> None:
    """`--json /dev/stdout` must not rename a file over /dev/stdout; a FIFO stands in for it here."""
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen([sys.executable, "-c", f"import sys; sys.stdout.write(open({str(fifo)!r}).read())"],
                              stdout=subprocess.PIPE, text=True)
    write_atomic(fifo, b'{"result": "none"}\n', what="JSON report")
    out, _ = reader.communicate(timeout=30)
    assert out == '{"result": "none"}\n'
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.fifo"]


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_a_new_file_gets_the_mode_an_ordinary_file_gets_under_the_umask(tmp_path: Path, umask: int) -> None:
    # A golden tape is committed: 0600 (mkstemp's mode) made git store it unreadable to the
    # others on a shared checkout. The umask is read in a child so this process's stays untouched.
    path = tmp_path / "g.tape.jsonl"
    plain = tmp_path / "plain.txt"
    code = (
        "import os, sys; from mcptape.tape.atomic import write_atomic; "
        "write_atomic(sys.argv[1], b'x'); open(sys.argv[2], 'w', encoding='utf-8').close()"
    )
    subprocess.run([sys.executable, "-c", code, str(path), str(plain)], check=True,
                   preexec_fn=lambda: os.umask(umask))  # noqa: PLW1509
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask == stat.S_IMODE(plain.stat().st_mode)


def test_rewriting_a_file_keeps_the_mode_its_owner_gave_it(tmp_path: Path) -> None:
    path = tmp_path / "g.tape.jsonl"
    write_atomic(path, b"one\n")
    path.chmod(0o640)
    write_atomic(path, b"two\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
