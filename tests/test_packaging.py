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
# Modules whose third-party imports an optional extra provides: publish/telemetry.py imports the
# OpenTelemetry SDK only under --otel, and says `pip install 'mcptape[otel]'` when it is missing
# (tests/publish/test_telemetry.py). Each such import must come from a distribution of that extra.
# The library's client side (api/endpoint.py, serving.py, sdk_streams.py) imports the official SDK (and anyio) only
# where it hands out the SDK's objects, and says `pip install mcp` when it is missing.
OPTIONAL = {"mcptape/publish/telemetry.py": "otel", "mcptape/api/serving.py": "sdk", "mcptape/api/endpoint.py": "sdk",
            "mcptape/api/sdk_streams.py": "sdk"}


def extra_import_names(extra: str) -> set[str]:
    """The top-level import names the distributions of an optional extra provide (as installed here)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = project["optional-dependencies"][extra]
    wanted = {_normal(re.match(r"[A-Za-z0-9._-]+", spec).group(0)) for spec in specs}  # type: ignore[union-attr]
    return {name for name, dists in packages_distributions().items() if any(_normal(d) in wanted for d in dists)}


def undeclared(sources: dict[str, str]) -> dict[str, list[str]]:
    """Import name -> files importing it, for every import no declared dependency provides."""
    provided = packages_distributions()
    declared = declared_distributions()
    missing: dict[str, list[str]] = {}
    for where, source in sources.items():
        allowed = HOSTED.get(where, set()) | (extra_import_names(OPTIONAL[where]) if where in OPTIONAL else set())
        for name in third_party_imports(source) - allowed:
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


def test_an_optional_extras_import_is_accepted_only_in_the_module_it_is_for() -> None:
    """publish/telemetry.py may import the OpenTelemetry SDK (the otel extra); another module may not."""
    source = "def f():\n    from opentelemetry.sdk.trace import TracerProvider\n"
    assert undeclared({"mcptape/publish/telemetry.py": source}) == {}
    assert undeclared({"mcptape/live/client.py": source}) == {"opentelemetry": ["mcptape/live/client.py"]}
    assert undeclared({"mcptape/publish/telemetry.py": source + "    import pytest\n"}) == {"pytest": ["mcptape/publish/telemetry.py"]}
