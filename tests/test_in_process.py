"""tests/in_process.py's promise: `mcptape ci` run in the test's process says, writes and exits as
`python -m mcptape ci` does, with the environment and working directory it was given, and leaves
the test's own as they were.

Both ways on the bundled example, unchanged (exit 0) and with the calc server drifted by an
environment variable only the run is given (exit 1): the same exit code, the same stdout, the
same JSON report.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import FIXTURES, ROOT, mcptape_command, user_env
from tests.in_process import run_mcptape


def _example(tmp_path: Path, name: str) -> Path:
    work = tmp_path / name
    shutil.copytree(FIXTURES / "example", work, ignore=shutil.ignore_patterns("__pycache__", "agent", "frameworks"))
    # The example's config starts ../servers/calc_server.py: the copy keeps that path working.
    shutil.copytree(FIXTURES / "servers", tmp_path / "servers", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return work


def _report(work: Path) -> dict[str, object]:
    data = json.loads((work / "report.json").read_text(encoding="utf-8"))
    for session in data["sessions"]:  # how long a run took is the one thing two runs do not share
        session.pop("duration_s", None)
    return data


def test_ci_in_process_exits_says_and_writes_as_a_process_does(tmp_path: Path) -> None:
    cwd, environ = os.getcwd(), dict(os.environ)
    for variant, code in (("identical", 0), ("changed_result", 1)):
        env = user_env(PYTHONPATH=str(ROOT), MCPTAPE_FIXTURE_VARIANT=variant)
        process_work, here_work = _example(tmp_path, f"process-{variant}"), _example(tmp_path, f"here-{variant}")
        process = subprocess.run(mcptape_command("ci", "--json=report.json"), cwd=process_work, env=env,
                                 capture_output=True, text=True, timeout=120)
        here = run_mcptape(["ci", "--json=report.json"], cwd=here_work, env=env, timeout=120)
        assert (process.returncode, here.returncode) == (code, code), process.stdout + here.stdout + here.stderr
        assert here.stdout == process.stdout
        assert _report(here_work) == _report(process_work)
        assert os.getcwd() == cwd and dict(os.environ) == environ
