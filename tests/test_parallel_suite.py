"""The suite as `make test` runs it: in parallel, a test module per unit of work (tests/conftest.py),
and the modules that share one RUNNER_TEMP (its venv built once) on one worker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED_RUNNER_MODULES


def test_make_test_runs_the_suite_in_parallel_by_module() -> None:
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8").split("\ntest: install\n", 1)[1].split("\n\n", 1)[0]
    assert "-n $(TEST_WORKERS)" in recipe and "--dist loadgroup" in recipe


def test_every_module_that_shares_the_runner_venv_is_grouped() -> None:
    sharing = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*.py")
                     if re.search(r"\bshared_runner_temp\b|^from tests\.test_github_action import", path.read_text(encoding="utf-8"), re.M))
    assert sharing == sorted(SHARED_RUNNER_MODULES)


def test_a_module_is_one_group(request: pytest.FixtureRequest) -> None:
    mark = request.node.get_closest_marker("xdist_group")
    assert mark is not None and mark.args == (str(Path(__file__).relative_to(ROOT)),)
