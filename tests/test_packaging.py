"""Every third-party module the package imports is a declared dependency (pyproject.toml).

The GitHub Action and `pip install .` install no extras, so a module that only the `dev` extra
brings (as `mcp_types` once was) is a ModuleNotFoundError for every user: exit 1, read as output
drift. The imports are read from the source (every `import` and `from ... import`, also inside
functions), mapped to their distributions with importlib.metadata, and compared with
`[project].dependencies`. tests/integration/test_installed.py runs the commands installed that way.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from tests.conftest import ROOT

PACKAGE = ROOT / "mcptape"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_distributions() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {_normal(re.match(r"[A-Za-z0-9._-]+", spec).group(0)) for spec in project["dependencies"]}  # type: ignore[union-attr]


def declared_import_names() -> set[str]:
    """The top-level import names the declared distributions provide (as installed here)."""
    declared = declared_distributions()
    return {name for name, dists in packages_distributions().items() if any(_normal(d) in declared for d in dists)}


def third_party_imports(source: str) -> set[str]:
    """Top-level names of the absolute imports in `source` that are neither stdlib nor mcptape."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in ("mcptape", "__future__")}


# Imports of a module that only its host loads: the pytest plugin runs inside pytest (its `pytest11`
# entry point), and imports the official SDK only in `stdio_parameters()`, which says to install it.
HOSTED = {"mcptape/pytest_plugin.py": {"pytest", "mcp"}}


def undeclared(sources: dict[str, str]) -> dict[str, list[str]]:
    """Import name -> files importing it, for every import no declared dependency provides."""
    provided = packages_distributions()
    declared = declared_distributions()
    missing: dict[str, list[str]] = {}
    for where, source in sources.items():
        for name in third_party_imports(source) - HOSTED.get(where, set()):
            if not any(_normal(d) in declared for d in provided.get(name, [])):
                missing.setdefault(name, []).append(where)
    return missing


def test_every_module_the_package_imports_is_a_declared_dependency() -> None:
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}
    assert len(sources) > 30
    found = set().union(*(third_party_imports(s) for s in sources.values()))
    assert {"mcp_types", "pydantic", "yaml", "httpx", "jsonschema", "rich", "ghapi"} <= found  # the walk sees them
    assert undeclared(sources) == {}


def test_an_import_only_the_dev_extra_brings_is_caught() -> None:
    """The control: what the dev extra installs (pytest, the mcp SDK) is not a dependency."""
    source = "def f():\n    import pytest\n    from mcp.client import stdio\n    import json, mcptape.cli\n"
    assert undeclared({"example.py": source}) == {"pytest": ["example.py"], "mcp": ["example.py"]}
