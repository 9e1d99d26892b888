"""The suite as `make test` runs it: in parallel, a test module per unit of work (tests/conftest.py),
and the modules that share one RUNNER_TEMP (its venv built once) on one worker."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT, SHARED_RUNNER_MODULES, unit_of_work


def test_make_test_runs_the_suite_in_parallel_by_module() -> None:
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8").split("\ntest: install\n", 1)[1].split("\n\n", 1)[0]
    assert "-n $(TEST_WORKERS)" in recipe and "--dist loadscope" in recipe


def test_every_module_that_shares_the_runner_venv_is_grouped() -> None:
    sharing = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*.py")
                     if re.search(r"\bshared_runner_temp\b|^from tests\.test_github_action import", path.read_text(encoding="utf-8"), re.M))
    assert sharing == sorted(SHARED_RUNNER_MODULES)


def test_a_module_runs_whole_on_one_worker() -> None:
    # Two modules of several tests each, on two workers: each module's tests all on one worker. Split
    # by test (what a scheduling that lost its units does), a module lands on both nearly always.
    modules = ["tests/verdict/test_drift_table.py", "tests/tape/test_seal.py"]
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",  # 0.6 s a process
                          "-n", "2", "--dist", "loadscope",
                          "-v", *modules], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    workers: dict[str, set[str]] = {}
    for worker, nodeid in re.findall(r"^\[(gw\d+)\] .*?(?:PASSED|SKIPPED) (\S+)", run.stdout, re.M):
        workers.setdefault(unit_of_work(nodeid), set()).add(worker)
    assert sorted(workers) == sorted(modules) and all(len(w) == 1 for w in workers.values()), run.stdout


def test_the_modules_sharing_a_runner_are_one_unit() -> None:
    assert unit_of_work("tests/test_github_action.py::test_x") == unit_of_work("tests/test_attest_action.py::test_y[a]")
    assert unit_of_work("tests/tape/test_seal.py::test_z") == "tests/tape/test_seal.py"
