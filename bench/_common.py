"""Helpers shared by the benchmarks: idle-state spinners and robust statistics.

Microsecond and millisecond figures on these small shared machines are dominated by how long
an idle core takes to wake up unless the cores are kept busy; the spinner is a lowest-priority
busy loop per core (SCHED_IDLE where the OS has it), which real work always preempts.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# SCHED_IDLE, not just nice 19: a nice-19 spinner still takes its share of a core from other
# nice-19 processes (rec's tape writer is one), and holding a core from a process that holds a
# pipe's lock showed up as millisecond p99s; a SCHED_IDLE task runs only when nothing else wants to.
SPIN_CODE = """\
import os
try:
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
except (AttributeError, OSError):
    os.nice(19)
while True:
    pass
"""


@contextmanager
def spinning(enabled: bool = True) -> Iterator[int]:
    """Keep every core out of idle for the duration; yields the number of spinners."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN_CODE]) for _ in range(os.cpu_count() or 1)] if enabled else []
    try:
        yield len(procs)
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(10)


def compile_package(root: Path = ROOT) -> None:
    """Byte-compile `root`/mcptape, as pip does on install: with PYTHONDONTWRITEBYTECODE set (this
    machine sets it) or a source file newer than its .pyc, every spawned mcptape would otherwise
    recompile what it imports, and start-up figures would measure the compiler."""
    import compileall

    compileall.compile_dir(str(root / "mcptape"), quiet=1)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def mcptape_env() -> dict[str, str]:
    """The environment a benchmark runs mcptape in: importable from the repo root, no CI flags."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env
