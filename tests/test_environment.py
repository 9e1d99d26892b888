"""environment.py: the one table of the variables mcptape reads, and the one yes/no parser.

The table is checked against the code: a read of a variable by name (`os.environ[...]`,
`os.environ.get(...)`, `os.getenv(...)`, `env.get(...)` on a mapping of the environment, or
environment.get/flag) anywhere in mcptape/ must name a variable of the table; a read whose name
is computed is allowed only where the table's docstring says why (the user's `${NAME}`, the
server allowlist, `init --env NAME`).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptape import environment
from mcptape.environment import VARIABLES, in_ci, parse_flag
from tests.conftest import ROOT, mcptape_command

PACKAGE = ROOT / "mcptape"
ENVIRONMENT_MAPPINGS = {"os.environ", "environ", "env", "self.env", "run_env", "environment"}
# (module, the key expression): reads whose name is not mcptape's choice (environment.py says why)
COMPUTED = {
    ("mcptape/transports/stdio.py", "k"),  # ENV_ALLOWLIST: handed on to the server
    ("mcptape/config/interpolate.py", "name"),  # `${NAME}` in mcptape.yml
    ("mcptape/commands/init.py", "name"),  # `init --env NAME`
    ("mcptape/environment.py", "name"),  # get() itself
    ("mcptape/commands/check.py", "name"),  # check's view of os.environ for `${NAME}`
    ("mcptape/commands/rec.py", "m.group(1)"),  # `rec --upstream '${NAME}'`: the user names the variable
}


def _reads(path: Path) -> list[tuple[int, ast.expr]]:
    """(line, key expression) of every read of an environment variable by name in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            receiver = ast.unparse(node.func.value)
            if (node.func.attr in ("get", "flag", "pop") and receiver in ENVIRONMENT_MAPPINGS) or (
                node.func.attr == "getenv" and receiver == "os"
            ):
                found.append((node.lineno, node.args[0]))
        elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
              and ast.unparse(node.value) in ENVIRONMENT_MAPPINGS - {"environment"}):
            found.append((node.lineno, node.slice))
    return found


def _constants(path: Path) -> dict[str, str]:
    """Module-level NAME = "string" assignments of `path` and of the mcptape modules it imports them from."""
    out: dict[str, str] = {}
    for p in [path, *PACKAGE.rglob("usage.py")]:
        for node in ast.parse(p.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = node.value.value
    return out


def test_every_variable_mcptape_reads_by_name_is_in_the_table() -> None:
    unknown: list[str] = []
    computed: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        constants = _constants(path)
        for line, key in _reads(path):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                name = key.value
            elif isinstance(key, ast.Name) and key.id in constants:
                name = constants[key.id]
            else:
                if (rel, ast.unparse(key)) not in COMPUTED:
                    computed.append(f"{rel}:{line}: {ast.unparse(key)}")
                continue
            if not name.isupper():
                continue  # a mapping key of another kind (a header, a JSON field), not a variable
            if name not in VARIABLES:
                unknown.append(f"{rel}:{line}: {name}")
    assert not unknown, f"environment variables read but not in environment.VARIABLES: {unknown}"
    assert not computed, f"environment reads by a computed name, not in this test's COMPUTED: {computed}"


def test_the_scan_sees_a_read_of_a_variable_not_in_the_table(tmp_path: Path) -> None:
    # The check above can fail: the reads it looks for, written the ways the code writes them.
    module = tmp_path / "m.py"
    module.write_text(
        'import os\nX = "MCPTAPE_SECRET_KNOB"\na = os.environ.get("NEW_ONE")\nb = os.getenv("OTHER")\n'
        'c = os.environ["THIRD"]\nd = env.get(X)\ne = environment.flag("FOURTH")\n',
        encoding="utf-8",
    )
    consts = _constants(module)
    names = [str(k.value) if isinstance(k, ast.Constant) else consts[ast.unparse(k)] for _, k in _reads(module)]
    assert sorted(names) == sorted(["NEW_ONE", "OTHER", "THIRD", "MCPTAPE_SECRET_KNOB", "FOURTH"])
    assert not set(names) & set(VARIABLES)


def test_get_refuses_a_variable_not_in_the_table() -> None:
    with pytest.raises(KeyError, match="add it to environment.VARIABLES"):
        environment.get("MCPTAPE_NOT_A_THING", {})


@pytest.mark.parametrize(("text", "default", "expected"), [
    (None, False, False), ("", False, False), ("  ", True, True), (None, True, True),
    ("true", False, True), ("1", False, True), ("yes", False, True), ("TRUE", False, True), ("on", False, True),
    ("0", True, False), ("false", True, False), (" No ", True, False), ("OFF", True, False),
])
def test_one_parser_for_yes_and_no(text: str | None, default: bool, expected: bool) -> None:
    assert parse_flag(text, default) is expected


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("1", True), ("yes", True), ("false", False),
                                                 ("0", False), ("", False)])
def test_running_in_ci_is_one_rule(value: str, expected: bool) -> None:
    assert in_ci({"CI": value}) is expected


def test_the_docs_table_lists_every_variable() -> None:
    text = (ROOT / "docs" / "environment.md").read_text(encoding="utf-8")
    missing = [name for name in VARIABLES if f"`{name}`" not in text]
    assert not missing, f"docs/environment.md does not list {missing}"


@pytest.mark.parametrize("value", ["1", "yes", "true"])
def test_ci_update_golden_is_refused_under_every_ci_value_the_plugin_refuses(tmp_path: Path, value: str) -> None:
    # `CI=1` let `ci --update-golden` go ahead while the pytest plugin refused to record.
    config = tmp_path / "mcptape.yml"
    config.write_text("version: 1\nservers: {}\nsessions: []\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    proc = subprocess.run(mcptape_command("ci", "-c", str(config), "--update-golden"), cwd=tmp_path,
                          env={**env, "CI": value, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert f"refusing --update-golden with CI={value}" in proc.stderr
    allowed = subprocess.run(mcptape_command("ci", "-c", str(config), "--update-golden"), cwd=tmp_path,
                             env={**env, "CI": "false", "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                             timeout=60)
    assert "refusing --update-golden" not in allowed.stderr


def test_a_columns_value_that_is_not_a_number_is_not_a_crash() -> None:
    code = "from mcptape.report.terminal import make_console; import io; print(make_console(io.StringIO()).width)"
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "COLUMNS": "wide"}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "160", proc.stderr
