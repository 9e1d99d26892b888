"""Broken mcptape.yml files: each gives one paragraph with file:line, the field and the fix.

Every file under tests/configs/broken/ states what its message must say in its first comment
lines (`# line:`, `# field:`, `# says:`), so adding a case is adding a file. Each is checked
through load_config and through `mcptape ci -c FILE` (exit 3, stderr, no traceback): the command
line in-process for all, and a few as a real process (REAL_PROCESS).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcptape.cli import main
from mcptape.config.load import load_config
from mcptape.errors import EXIT_COULD_NOT_RUN, ConfigError
from tests.conftest import ROOT, mcptape_command

BROKEN = Path(__file__).parents[1] / "configs" / "broken"
BROKEN_FILES = sorted(BROKEN.glob("*.yml"))


@dataclass
class Expected:
    line: int
    field: str | None
    says: list[str]


def expected(path: Path) -> Expected:
    header = path.read_bytes().decode("utf-8", errors="replace")
    line = re.search(r"^# line: (\d+)$", header, re.M)
    assert line, f"{path.name} lacks its `# line:` expectation"
    field = re.search(r"^# field: (.+)$", header, re.M)
    says = re.findall(r"^# says: (.+)$", header, re.M)
    assert says, f"{path.name} lacks `# says:` expectations"
    return Expected(int(line.group(1)), field.group(1) if field else None, says)


def assert_one_paragraph_with_the_fix(message: str, path: str, exp: Expected) -> None:
    prefix = f"{path}:{exp.line}:"
    assert prefix in message, f"expected {prefix!r} in: {message}"
    after = message.split(prefix, 1)[1]
    if exp.field is not None:
        # `file:line: field: ...` (a YAML syntax error adds the column instead of a field)
        assert after.lstrip().startswith(f"{exp.field}:"), f"expected field {exp.field!r} in: {message}"
    for text in exp.says:
        assert text in message, f"expected {text!r} in: {message}"
    assert "\n" not in message.strip(), f"not one paragraph: {message}"
    for leak in ("Traceback", "pydantic", "Input should be", "validation error", "errors.pydantic.dev"):
        assert leak not in message, f"{leak!r} leaked into: {message}"


def test_there_are_at_least_twenty_broken_configs() -> None:
    assert len(BROKEN_FILES) >= 20


@pytest.mark.parametrize("path", BROKEN_FILES, ids=lambda p: p.stem)
def test_load_config_reports_the_broken_config(path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load_config(path, env={})  # no ${VAR} is set
    assert e.value.exit_code == EXIT_COULD_NOT_RUN
    assert_one_paragraph_with_the_fix(str(e.value), str(path), expected(path))


# --- as a user meets them: `mcptape ci -c FILE` ----------------------------------------------

# These go through a real `mcptape ci` process as well: the exit code and stderr of the installed
# command line are the point for them (a YAML syntax error, an unset variable, bytes that are not
# UTF-8, an alias bomb the process must survive). The rest runs the same command line in-process.
REAL_PROCESS = ("bad_yaml_indent", "missing_variable", "not_utf8", "yaml_alias_bomb")


def _user_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("MCPTAPE_TEST_SURELY_UNSET")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("CI", raising=False)  # the message must not depend on the CI mode
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


@pytest.mark.parametrize("path", BROKEN_FILES, ids=lambda p: p.stem)
def test_ci_exits_3_with_the_message_on_stderr(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _user_env(monkeypatch)
    monkeypatch.chdir(ROOT)
    rel = str(path.relative_to(ROOT))
    assert main(["ci", "-c", rel]) == EXIT_COULD_NOT_RUN
    out, err = capsys.readouterr()
    assert out == ""
    assert_one_paragraph_with_the_fix(err, rel, expected(path))


@pytest.mark.parametrize("path", [BROKEN / f"{name}.yml" for name in REAL_PROCESS], ids=lambda p: p.stem)
def test_a_real_ci_process_exits_3_with_the_message_on_stderr(path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPTAPE_TEST_SURELY_UNSET")}
    env.pop("CI", None)
    rel = str(path.relative_to(ROOT))
    proc = subprocess.run(mcptape_command("ci", "-c", rel), cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == EXIT_COULD_NOT_RUN, proc.stderr
    assert proc.stdout == ""
    assert_one_paragraph_with_the_fix(proc.stderr, rel, expected(path))


# --- the file itself -------------------------------------------------------------------------


def test_missing_file_says_how_to_create_one(tmp_path: Path) -> None:
    missing = tmp_path / "mcptape.yml"
    with pytest.raises(
        ConfigError, match=rf"no mcptape.yml at {re.escape(str(missing))}; create one \(see README\)"
    ):
        load_config(missing)


def test_missing_file_through_ci(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # run from another directory, as a user would
    proc = subprocess.run(
        mcptape_command("ci"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == EXIT_COULD_NOT_RUN
    assert "no mcptape.yml at mcptape.yml; create one (see README)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory, not a config file; pass the file with -c FILE$"):
        load_config(tmp_path)
    (tmp_path / "mcptape.yml").write_text("servers: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"did you mean -c {re.escape(str(tmp_path / 'mcptape.yml'))}\?"):
        load_config(tmp_path)


def test_whitespace_only_file_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "mcptape.yml"
    path.write_text("\n   \n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"mcptape.yml:1: the file is empty; start with `version: 1`"):
        load_config(path)


def test_first_problem_in_file_order_is_named_and_the_rest_counted(tmp_path: Path) -> None:
    path = tmp_path / "mcptape.yml"
    path.write_text(
        "servers:\n"
        "  calc:\n"
        "    command: [python, calc.py]\n"
        "sessions:\n"
        "  - name: a\n"
        "    server: calc\n"
        "    timeout: soon\n"  # line 7
        "    steps:\n"
        "      - call: add\n"
        "        timeout: -1\n"  # line 10
        "drift:\n"
        "  conformance: maybe\n",  # line 12
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value).startswith(f"{path}:7: sessions[0].timeout: expected a number, got 'soon'")
    assert str(e.value).endswith("(2 more problems after this one)")


def test_unset_variable_is_looked_up_in_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPTAPE_TEST_TOKEN", raising=False)
    path = tmp_path / "mcptape.yml"
    path.write_text(
        "servers:\n"
        "  remote:\n"
        "    url: http://127.0.0.1:1/mcp\n"
        "    headers: {Authorization: 'Bearer ${MCPTAPE_TEST_TOKEN}'}\n"
        "sessions: [{name: s, server: remote, steps: [ping]}]\n",
        encoding="utf-8",
    )
    with pytest.raises(
        ConfigError,
        match=r"mcptape.yml:4: servers.remote.headers.Authorization: environment variable "
        r"MCPTAPE_TEST_TOKEN is not set; set it \(export MCPTAPE_TEST_TOKEN=\.\.\.",
    ):
        load_config(path)
    monkeypatch.setenv("MCPTAPE_TEST_TOKEN", "t0ken")
    assert load_config(path).secrets["env.MCPTAPE_TEST_TOKEN"] == "t0ken"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("${1BAD}", '"${1BAD}" is not a variable reference; write ${NAME} or ${NAME:-default}'),
        ("${A:-${B}}", "nested variables"),
        ("${}", '"${}" is not a variable reference'),
    ],
)
def test_malformed_variable_references(tmp_path: Path, value: str, says: str) -> None:
    path = tmp_path / "mcptape.yml"
    path.write_text(
        f"servers:\n  calc:\n    command: [python, calc.py, '{value}']\nsessions: [{{name: s, server: calc, steps: [ping]}}]\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as e:
        load_config(path, env={"A": "", "B": "b"})
    assert str(e.value).startswith(f"{path}:3: servers.calc.command[2]: ")
    assert says in str(e.value)


def test_variables_in_normalize_and_redact_are_left_alone(tmp_path: Path) -> None:
    # Regexes and JSON paths are not interpolated: "${" there is literal text, not a missing variable.
    path = tmp_path / "mcptape.yml"
    path.write_text(
        "servers: {calc: {command: [python, calc.py]}}\n"
        "sessions: [{name: s, server: calc, steps: [ping]}]\n"
        "normalize: [{pattern: 'x\\$\\{UNSET\\}', replace: '${UNSET}'}]\n"
        "redact: {patterns: ['tok-\\$\\{UNSET\\}']}\n",
        encoding="utf-8",
    )
    cfg = load_config(path, env={}).config
    assert cfg.normalize[0].replace == "${UNSET}"


# --- drift: the names the diff engine emits, and nothing else -------------------------------------


def test_every_drift_class_and_ignore_key_loads_and_the_published_schema_lists_the_same(tmp_path: Path) -> None:
    from mcptape.config.json_schema import json_schema
    from mcptape.verdict.vocabulary import IGNORE_KEYS, drift_classes

    path = tmp_path / "mcptape.yml"
    fail_on = "".join(f"    {name}: info\n" for name in drift_classes())
    path.write_text(
        "servers: {calc: {command: [python, calc.py]}}\n"
        "sessions: [{name: s, server: calc, steps: [ping]}]\n"
        "drift:\n  fail_on:\n" + fail_on
        + "  ignore:\n    - {path: 'result.*', category: 'notification*', method: tools/call, name: add}\n"
        "    - {category: schema.cosmetic}\n",
        encoding="utf-8",
    )
    drift = load_config(path, env={}).config.drift
    assert list(drift.fail_on) == drift_classes() and len(drift.ignore) == 2
    # The same file with one name misspelt is refused (the broken/drift_*.yml files say how).
    path.write_text(path.read_text(encoding="utf-8").replace("    error.code: info\n", "    error.cod: info\n"),
                    encoding="utf-8")
    with pytest.raises(ConfigError, match=r'drift.fail_on: unknown drift class "error.cod"; did you mean "error.code"\?'):
        load_config(path, env={})
    published = json_schema()["$defs"]["DriftSettings"]["properties"]
    assert list(published["fail_on"]["properties"]) == drift_classes()
    assert published["fail_on"]["additionalProperties"] is False
    assert list(published["ignore"]["items"]["properties"]) == list(IGNORE_KEYS)
