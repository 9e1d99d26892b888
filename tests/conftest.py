"""Shared test fixtures: paths to our fixture servers and the npm reference servers.

The npm servers are installed by `make install`; where they are missing a test skips locally
but fails under CI=true, so CI can never pass by silently not running them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist's workers export COLUMNS=80 and LINES=24, which every rich report the suite reads
    (in process, or from a `python -m mcptape` it starts) would obey, wrapping as on a small terminal.
    The suite reads reports as a CI log gets them, with no terminal size, however it is run."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)


# The suite runs in parallel (`make test`: pytest-xdist). A test module is one unit of work, so its
# module-scoped fixtures (a server recorded once, a release installed once) are built by one worker,
# once, not by each worker it would be split over; the modules that share one RUNNER_TEMP and its
# installed venv (tests/action_runner.py's shared_runner_temp) are one unit, so the venv is built once.
# Every test stays safe beside any other: its own tmp_path, OS-chosen ports, no shared HOME.
SHARED_RUNNER_MODULES = {
    "tests/test_github_action.py": "action-workflow", "tests/test_github_action_baseline.py": "action-workflow",
    "tests/test_attest_action.py": "action-workflow", "tests/integration/test_surface_review_ci.py": "action-workflow",
    "tests/integration/test_installed.py": "action-installed", "tests/integration/test_api_installed.py": "action-installed",
}


def unit_of_work(nodeid: str) -> str:
    """The unit of work a test belongs to: its module, or the group of modules sharing a runner."""
    module = nodeid.split("::", 1)[0]
    return SHARED_RUNNER_MODULES.get(module, module)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's, which a run without it does not know
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's scope scheduling (a unit's tests to one worker, the largest units first), with our
    units. Not `--dist loadgroup`'s markers: under pytest 9.2 xdist 3.8 reads them off `item._nodeid`,
    which pytest no longer reads back, so every group silently became per-test scheduling."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of_work(nodeid)

    return UnitScheduling(config, log)


FIXTURES = ROOT / "fixtures"
CALC_SERVER = FIXTURES / "servers" / "calc_server.py"
NODE_MODULES = FIXTURES / "node" / "node_modules" / "@modelcontextprotocol"


def calc_command(variant: str = "identical") -> list[str]:
    """The command line of the calc fixture server in one of its drift variants."""
    return [sys.executable, str(CALC_SERVER), "--variant", variant]


def mcptape_command(*args: str) -> list[str]:
    """Run mcptape as a user would: a real process, `python -m mcptape`."""
    return [sys.executable, "-m", "mcptape", *args]


# Variables that switch mcptape into CI mode (refusing --update-golden, publishing to GitHub).
# CI itself runs this suite with CI=true, so tests that act as a developer's shell drop them.
CI_MODE_VARIABLES = ("CI", "GITHUB_ACTIONS")


def user_env(**extra: str) -> dict[str, str]:
    """Our environment as a developer's shell would have it (no CI mode), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in CI_MODE_VARIABLES}
    env.update(extra)
    return env


def node_server(name: str) -> Path:
    """The entry point of an npm reference server (everything, filesystem, memory)."""
    entry = NODE_MODULES / f"server-{name}" / "dist" / "index.js"
    if not entry.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{entry} is missing: .ci/run must install the npm reference servers")
        pytest.skip(f"npm reference server {name} not installed (run make install)")
    return entry


@pytest.fixture
def calc() -> type:
    """Access to the calc fixture server's command line from tests."""

    class Calc:
        command = staticmethod(calc_command)

    return Calc
