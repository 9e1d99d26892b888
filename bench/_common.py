"""Helpers shared by the benchmarks: idle-state spinners and robust statistics.

Microsecond and millisecond figures on these small shared machines are dominated by how long
an idle core takes to wake up unless the cores are kept busy; the spinner is a lowest-priority
busy loop per core, which real work always preempts. bench_rec.py and bench_replay.py carry
their own copy of the same spinner (written before this module existed).
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
SPIN_CODE = "import os\nos.nice(19)\nwhile True: pass\n"


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


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def mcptape_env() -> dict[str, str]:
    """The environment a benchmark runs mcptape in: importable from the repo root, no CI flags."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env
