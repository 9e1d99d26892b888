"""mcptape's commands run inside the test's own process, as `python -m mcptape` runs them.

A test of what a command judges, writes and says runs it here: `mcptape.cli.main` with the
command's own stdout and stderr (real files), working directory, environment and an empty stdin,
its exit code as the console script takes it. The servers `ci`, `init` and `check` start are real
processes over real pipes and sockets, as always. What this saves is a new interpreter's imports
for each run (mcp_types' models, pydantic, the rule set: about 0.5 s of CPU of the 0.7 s a small
`ci` costs, and the suite runs hundreds). tests/test_in_process.py holds it to a process's word.
tests/test_doors.py's sweep runs every command through `run_main` as well.

The process door itself stays tested with real processes: the installed console script
(tests/integration/test_installed.py, the Action's own steps, the README's commands), signals and
kills (test_golden_kill, test_ci_concurrency), peak memory (test_hostile_faults), a full disk
(test_ci_faults), hostile tapes (tests/tape/test_hostile.py), the fuzz campaign. `rec` and `play`
always run as processes here: they speak the MCP wire on their own stdio. So does any command
given stdin.

A worker runs its tests one after another (pytest-xdist), so swapping the process's environment
and working directory for the call is safe; a run that outlives `timeout` ends the worker with
every thread's stack (faulthandler), where a hung child would have been killed by subprocess's
timeout.
"""

from __future__ import annotations

import faulthandler
import gc
import io
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import mcptape_command

IN_PROCESS = frozenset({"ci", "init", "check", "merge", "comment", "diff", "show", "ls"})


def run_mcptape(args: Sequence[str], *, cwd: Path | str, env: Mapping[str, str] | None = None,
                input: str | bytes | None = None, timeout: float = 600, text: bool = True,
                ) -> subprocess.CompletedProcess[Any]:
    """`mcptape ARGS` in `cwd` with `env` (None: this process's), as subprocess.run(capture_output=True)
    returns it; in this process for the commands of IN_PROCESS, given no stdin."""
    argv = [str(a) for a in args]
    if not argv or argv[0] not in IN_PROCESS or input:
        return subprocess.run(mcptape_command(*argv), cwd=cwd, env=None if env is None else dict(env), input=input,
                              capture_output=True, text=text, timeout=timeout)
    ran = run_main(argv, Path(cwd), env, timeout)
    # What a process would have dropped at its end, an in-process run must not leave behind.
    assert not ran.left_gc_off, f"mcptape {' '.join(argv)} left the garbage collector off"
    if text:
        return subprocess.CompletedProcess(argv, ran.code, ran.out.decode("utf-8", "replace"),
                                           ran.err.decode("utf-8", "replace"))
    return subprocess.CompletedProcess(argv, ran.code, ran.out, ran.err)


@dataclass
class MainRun:
    code: int
    out: bytes
    err: bytes
    left_gc_off: bool  # the run left the garbage collector off (turned back on here)


def run_main(argv: list[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 600) -> MainRun:
    """`mcptape.cli.main(argv)` in `cwd` with `env` (None: this process's), its streams real files
    (play reads and writes file descriptors) and stdin empty; the process's own given back after."""
    from mcptape.cli import main

    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file, \
            open(os.devnull, "rb") as null:  # noqa: SIM115 - three streams, one block
        out = io.TextIOWrapper(out_file, encoding="utf-8", write_through=True)
        err = io.TextIOWrapper(err_file, encoding="utf-8", write_through=True)
        stdin = io.TextIOWrapper(null, encoding="utf-8")
        saved_streams, saved_cwd, saved_env = (sys.stdin, sys.stdout, sys.stderr), os.getcwd(), dict(os.environ)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = stdin, out, err
        faulthandler.dump_traceback_later(timeout, exit=True, file=sys.__stderr__ or 2)
        try:
            try:
                code = main(argv)
            except SystemExit as e:  # argparse: --help, or a usage error
                code = e.code if isinstance(e.code, int) else 3
        finally:
            faulthandler.cancel_dump_traceback_later()
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            os.chdir(saved_cwd)
            if env is not None:
                os.environ.clear()
                os.environ.update(saved_env)
            out.flush()
            err.flush()
        said = []
        for f in (out_file, err_file):
            f.seek(0)
            said.append(f.read())
        for stream in (out, err, stdin):
            stream.detach()
    left_gc_off = not gc.isenabled()
    if left_gc_off:
        gc.enable()
    return MainRun(code, said[0], said[1], left_gc_off)
