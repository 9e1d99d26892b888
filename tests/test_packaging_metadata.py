"""The distributions as they would be published: a wheel and an sdist built from a clean checkout.

`python -m build` runs as pip and PyPI's builders run it (an isolated build environment with the
`[build-system]` requirements, the wheel built from the sdist), on a copy of the files a fresh
clone has, so neither a local cache nor a stale egg-info can hide a defect. One build serves the
module. What a publisher relies on: no warnings, the license as an SPDX expression with its file,
the project's URLs and classifiers, `py.typed` and every file of the package in the wheel, and an
sdist a downstream packager can build and test from.
"""

from __future__ import annotations

import email.parser
import email.policy
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

import pytest
import yaml

from tests.checkout import checkout_files, clean_copy
from tests.conftest import ROOT

BUILD_TIMEOUT = 300
REPOSITORY = "https://github.com/mcptape/action"
# Tracked files that only serve this repository's own CI or git, not a build or a test run.
NOT_SHIPPED = (".ci/", ".gitignore")


def warnings_in(build_output: str) -> list[str]:
    """The lines of a build's output that warn (setuptools' `WARNING`/`warning:`, SetuptoolsDeprecationWarning, ...)."""
    return [line for line in build_output.splitlines() if re.search(r"warn", line, re.IGNORECASE)]


def build_env() -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE makes setuptools say "byte-compiling is disabled": a fact of this
    # shell, not of the project, and not what a publisher's build would print.
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_build(source: Path, outdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "build", *args, "--outdir", str(outdir), str(source)],
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT, env=build_env())


@dataclass
class Built:
    output: str
    wheel: Path
    sdist: Path

    def wheel_names(self) -> list[str]:
        with zipfile.ZipFile(self.wheel) as whl:
            return whl.namelist()

    def sdist_names(self) -> list[str]:
        """The sdist's files, without its top directory (`mcptape-0.1.0/`)."""
        with tarfile.open(self.sdist) as tar:
            return [m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile() and "/" in m.name]

    def metadata(self) -> Message:
        with zipfile.ZipFile(self.wheel) as whl:
            name = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
            return email.parser.BytesParser(policy=email.policy.compat32).parsebytes(whl.read(name))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    source = clean_copy(tmp_path_factory.mktemp("checkout"))
    out = tmp_path_factory.mktemp("dist")
    proc = run_build(source, out)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    return Built(output, wheels[0], sdists[0])


def project() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]  # type: ignore[no-any-return]


def test_the_build_prints_no_warning(built: Built) -> None:
    assert "Successfully built" in built.output
    assert warnings_in(built.output) == []


def test_the_warning_check_sees_the_old_license_table(tmp_path: Path) -> None:
    """The control: `license = { text = "MIT" }`, as pyproject.toml had it, warns on every build."""
    source = clean_copy(tmp_path / "checkout")
    pyproject = source / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    assert 'license = "MIT"\nlicense-files = ["LICENSE"]\n' in text
    pyproject.write_text(text.replace('license = "MIT"\nlicense-files = ["LICENSE"]\n', 'license = { text = "MIT" }\n'),
                         encoding="utf-8")
    proc = run_build(source, tmp_path / "dist", "--sdist")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert any("project.license" in line for line in warnings_in(proc.stdout + proc.stderr)), proc.stdout + proc.stderr


def test_the_license_is_an_spdx_expression_shipped_with_its_text(built: Built) -> None:
    meta = built.metadata()
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert not [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]  # PEP 639: the expression replaces them
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License") and "the mcptape authors" in license_text
    with zipfile.ZipFile(built.wheel) as whl:
        shipped = [n for n in whl.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert len(shipped) == 1 and whl.read(shipped[0]).decode("utf-8") == license_text
    assert "LICENSE" in built.sdist_names()


def test_the_metadata_names_the_repository_and_what_the_package_is(built: Built) -> None:
    meta = built.metadata()
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert set(urls) == {"Homepage", "Repository", "Issues", "Documentation"}
    assert all(url.startswith(REPOSITORY) for url in urls.values()), urls
    assert urls["Issues"] == f"{REPOSITORY}/issues"
    assert "mcp" in (meta["Keywords"] or "").split(",")
    classifiers = set(meta.get_all("Classifier") or [])
    assert {
        "Operating System :: POSIX", "Operating System :: POSIX :: Linux", "Operating System :: MacOS",
        "Topic :: Software Development :: Testing", "Typing :: Typed",
    } <= classifiers
    assert [c for c in classifiers if c.startswith("Development Status :: ")]
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta["Requires-Python"] == project()["requires-python"]


def test_the_python_versions_declared_are_the_ones_ci_tests(built: Built) -> None:
    declared = sorted(c.rsplit(" :: ", 1)[1] for c in built.metadata().get_all("Classifier") or []
                      if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    assert declared == ["3.11", "3.12", "3.13"]
    assert project()["requires-python"] == f">={declared[0]}"
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    assert workflow["jobs"]["test"]["strategy"]["matrix"]["python-version"] == declared


def test_the_wheel_holds_py_typed_and_every_file_of_the_package(built: Built) -> None:
    """Everything under mcptape/ a checkout has (modules, py.typed, data the package reads) and nothing else."""
    package = sorted(p for p in checkout_files() if p.startswith("mcptape/"))
    assert "mcptape/py.typed" in package and "mcptape/mcptape.schema.json" in package  # `mcptape schema` reads it
    names = built.wheel_names()
    in_wheel = {n for n in names if not n.startswith("mcptape-")}
    assert {"missing": sorted(set(package) - in_wheel), "extra": sorted(in_wheel - set(package))} == \
        {"missing": [], "extra": []}
    assert {n.split("/")[0] for n in names} == {"mcptape", built.wheel.name.split("-py3")[0] + ".dist-info"}
    with zipfile.ZipFile(built.wheel) as whl:
        entry_points = next(whl.read(n) for n in names if n.endswith("entry_points.txt")).decode("utf-8")
    assert "mcptape = mcptape.cli:console" in entry_points


def test_the_sdist_is_the_checkout_a_packager_builds_and_tests_from(built: Built) -> None:
    shipped = set(built.sdist_names())
    wanted = [p for p in checkout_files() if not p.startswith(NOT_SHIPPED)]
    assert {"LICENSE", "README.md", "action.yml", "Makefile", "pyproject.toml", "MANIFEST.in",
            "mcptape/mcptape.schema.json", "fixtures/example/mcptape.yml", "fixtures/node/package.json",
            "tests/conftest.py", "docs/github-action.md", ".github/workflows/ci.yml"} <= set(wanted)
    assert [p for p in wanted if p not in shipped] == []
    assert not [p for p in shipped if "__pycache__" in p or "node_modules" in p or p.endswith(".pyc")]


def test_checkout_files_without_git_skips_what_a_clone_does_not_have(tmp_path: Path) -> None:
    """The fallback used in an unpacked sdist: caches, venvs and node_modules are not source."""
    for rel in ("pkg/mod.py", "pkg/__pycache__/mod.cpython-311.pyc", ".venv/bin/python",
                "fixtures/node/node_modules/x/index.js", "fixtures/node/package.json", "x.egg-info/PKG-INFO"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    assert checkout_files(tmp_path) == ["fixtures/node/package.json", "pkg/mod.py"]
