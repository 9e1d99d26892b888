"""The library's tests run where a user's code runs: a project directory with mcptape.yml, its
golden tapes and its server (the bundled example: fixtures/example and its calc server), as the
working directory, with a developer's environment (this suite runs under CI=true)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import CALC_SERVER, CI_MODE_VARIABLES, FIXTURES


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled example (mcptape.yml, tapes/, ../servers/calc_server.py), the working directory."""
    project = tmp_path / "example"
    shutil.copytree(FIXTURES / "example", project, ignore=shutil.ignore_patterns("agent"))
    (tmp_path / "servers").mkdir()
    shutil.copy(CALC_SERVER, tmp_path / "servers" / "calc_server.py")
    for name in (*CI_MODE_VARIABLES, "MCPTAPE_FIXTURE_VARIANT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(project)
    return project
