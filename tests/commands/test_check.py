"""`mcptape check`: every config the tests have, valid and broken, judged as `ci` judges it, and by the schema.

Valid configs (tests/configs/valid/, the example's) pass `check` and the shipped JSON Schema;
every broken one fails `check` with exit 3 and the message `ci` gives for it (file:line, field, the
fix: tests/configs/broken/ files state theirs). The schema rejects every broken file but those
whose fault only the loader can see (BEYOND_THE_SCHEMA, each with its reason), and the test holds
that list exact. No server is started: a config whose server would leave a mark passes, unmarked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from mcptape.cli import main
from mcptape.config.json_schema import SCHEMA_ID, schema_text, shipped_schema_text
from mcptape.errors import EXIT_COULD_NOT_RUN
from tests.config.test_errors import BROKEN_FILES, assert_one_paragraph_with_the_fix, expected
from tests.conftest import FIXTURES, ROOT, mcptape_command, user_env

VALID_FILES = [*sorted((ROOT / "tests" / "configs" / "valid").glob("*.yml")), FIXTURES / "example" / "mcptape.yml"]

# Broken files the schema accepts, and why only the loader can tell.
BEYOND_THE_SCHEMA = {
    "bad_variable_syntax": "${...} is interpolated before validation; the schema sees a plain string",
    "missing_variable": "whether a variable is set is the environment's, not the file's",
    "missing_variable_in_arguments": "whether a variable is set is the environment's, not the file's",
    "duplicate_key": "YAML parsers keep the last of two equal keys; the loader refuses them",
    "duplicate_session": "unique session names: a rule across array items JSON Schema cannot state",
    "unknown_server": "a session names a key of `servers`: a cross-reference",
    "yaml_nested_too_deep": "the loader's nesting bound, against a hostile file",
    "drift_ignore_typo_category": "a category may be a glob, so the schema cannot enumerate it",
    "nul_in_command": "a NUL byte is a valid JSON string character; only what goes to the OS cannot hold one",
}
# Broken files that are not a YAML document at all: no schema sees them.
NOT_YAML = {"bad_yaml_indent", "bad_yaml_unclosed_bracket", "custom_tag", "not_utf8", "two_documents", "nul_byte",
            "python_tag", "python_tag_scalar", "merge_key_scalar"}


def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(shipped_schema_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def document(path: Path) -> Any:
    return yaml.safe_load(path.read_bytes().decode("utf-8"))


def test_the_shipped_schema_is_the_models_with_its_id() -> None:
    assert shipped_schema_text() == schema_text()
    schema = json.loads(shipped_schema_text())
    assert schema["$id"] == SCHEMA_ID
    assert SCHEMA_ID.startswith("https://raw.githubusercontent.com/mcptape/action/v1/")
    assert SCHEMA_ID.endswith("/mcptape/mcptape.schema.json")  # the path of the shipped file in the repository
    assert (ROOT / SCHEMA_ID.split("/v1/", 1)[1]).is_file()


@pytest.mark.parametrize("path", VALID_FILES, ids=lambda p: p.stem)
def test_a_valid_config_passes_check_and_the_schema(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("API_TOKEN", "tok-for-check")  # http_and_interpolation.yml needs it
    monkeypatch.setenv("CALC_TOKEN", "tok-for-check")
    monkeypatch.setenv("SHARED_SECRET", "tok-for-check")
    assert main(["check", "-c", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ok: ") and " session" in out and " server" in out, out + err
    assert [e.message for e in validator().iter_errors(document(path))] == []


@pytest.mark.parametrize("path", BROKEN_FILES, ids=lambda p: p.stem)
def test_a_broken_config_fails_check_as_it_fails_ci(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [n for n in os.environ if n.startswith("MCPTAPE_TEST_SURELY_UNSET")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(ROOT)
    rel = str(path.relative_to(ROOT))
    assert main(["check", "-c", rel]) == EXIT_COULD_NOT_RUN
    checked = capsys.readouterr()
    assert checked.out == ""
    assert_one_paragraph_with_the_fix(checked.err, rel, expected(path))
    assert main(["ci", "-c", rel]) == EXIT_COULD_NOT_RUN
    ran = capsys.readouterr()
    assert checked.err.replace("mcptape check:", "mcptape ci:", 1) == ran.err


@pytest.mark.parametrize("path", BROKEN_FILES, ids=lambda p: p.stem)
def test_the_schema_rejects_a_broken_config_unless_only_the_loader_can_tell(path: Path) -> None:
    if path.stem in NOT_YAML:
        with pytest.raises((yaml.YAMLError, UnicodeDecodeError)):
            document(path)
        return
    errors = list(validator().iter_errors(document(path)))
    if path.stem in BEYOND_THE_SCHEMA:
        assert errors == [], f"the schema now rejects {path.name}: take it off BEYOND_THE_SCHEMA"
    else:
        assert errors, f"the schema accepts {path.name}, which the loader rejects"


def test_check_starts_no_server_and_checks_what_ci_checks_before_starting_one(tmp_path: Path) -> None:
    mark = tmp_path / "started"
    config = tmp_path / "mcptape.yml"
    config.write_text(
        "version: 1\nservers:\n  s:\n    command: [sh, -c, 'touch started; exec cat']\n"
        "sessions:\n  - name: one\n    server: s\n    steps: [list_tools]\n  - name: two\n    server: s\n"
        "    steps: [ping]\n",
        encoding="utf-8",
    )
    proc = subprocess.run(mcptape_command("check"), cwd=tmp_path, env=user_env(), capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stdout.split(" (")[0]) == (0, "ok: 2 sessions, 1 server"), proc.stderr
    assert not mark.exists()
    # A working directory that does not exist: check and ci refuse it alike, naming the line.
    config.write_text(config.read_text(encoding="utf-8").replace("    command:", "    cwd: nowhere\n    command:"),
                      encoding="utf-8")
    checked = subprocess.run(mcptape_command("check"), cwd=tmp_path, env=user_env(), capture_output=True,
                             text=True, timeout=60)
    ran = subprocess.run(mcptape_command("ci"), cwd=tmp_path, env=user_env(), capture_output=True, text=True,
                         timeout=60)
    assert (checked.returncode, ran.returncode) == (3, 3)
    assert "mcptape.yml:4: servers.s.cwd:" in checked.stderr and "nowhere is not a directory" in checked.stderr
    assert checked.stderr.replace("mcptape check:", "mcptape ci:") == ran.stderr
    assert not mark.exists()
    # golden_dir that is a file.
    config.write_text(config.read_text(encoding="utf-8").replace("    cwd: nowhere\n", "")
                      .replace("version: 1\n", "version: 1\ngolden_dir: taken\n"), encoding="utf-8")
    (tmp_path / "taken").write_text("", encoding="utf-8")
    assert main(["check", "-c", str(config)]) == EXIT_COULD_NOT_RUN


def test_the_pre_commit_hook_runs_check_on_configs() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = [h for h in hooks if h["id"] == "mcptape-check"]
    assert hook["entry"].split("#")[0].split() == ["mcptape", "check", "--allow-unset"]
    assert hook["language"] == "python"
    assert hook.get("pass_filenames", True)  # pre-commit appends the changed configs
    files = re.compile(hook["files"])
    assert files.search("mcptape.yml") and files.search("sub/mcptape.yaml") and not files.search("other.yml")
    assert not files.search("not-mcptape.yml")


def test_check_with_files_checks_each_and_fails_if_one_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the hook runs: `mcptape check FILE...`."""
    monkeypatch.chdir(ROOT)
    good = str((FIXTURES / "example" / "mcptape.yml").relative_to(ROOT))
    bad = "tests/configs/broken/unknown_server.yml"
    assert main(["check", good, good]) == 0
    assert capsys.readouterr().out.count("ok: 3 sessions, 1 server") == 2
    assert main(["check", good, bad]) == EXIT_COULD_NOT_RUN
    out, err = capsys.readouterr()
    assert out.count("ok: ") == 1 and f"{bad}:" in err and 'unknown server' in err


def test_allow_unset_names_the_variables_a_commit_lacks_and_still_checks_the_rest(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [n for n in os.environ if n.startswith("MCPTAPE_TEST_SURELY_UNSET")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(ROOT)
    missing = "tests/configs/broken/missing_variable.yml"
    assert main(["check", missing]) == EXIT_COULD_NOT_RUN  # what ci says without the variable
    capsys.readouterr()
    assert main(["check", "--allow-unset", missing]) == 0
    assert "not set here, ci needs them: MCPTAPE_TEST_SURELY_UNSET_TOKEN" in capsys.readouterr().out
    # A ${NAME:-default} keeps its default and is not named; a ${NAME} is.
    for name in ("API_TOKEN", "SHARED_SECRET", "GOLDEN_DIR", "MCP_PORT", "USER_NAME"):
        monkeypatch.delenv(name, raising=False)
    assert main(["check", "--allow-unset", "tests/configs/valid/http_and_interpolation.yml"]) == 0
    assert capsys.readouterr().out.endswith("; not set here, ci needs them: API_TOKEN, SHARED_SECRET\n")
    # Everything else is still checked.
    assert main(["check", "--allow-unset", "tests/configs/broken/unknown_server.yml"]) == EXIT_COULD_NOT_RUN


def test_schema_prints_the_shipped_file() -> None:
    proc = subprocess.run(mcptape_command("schema"), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == shipped_schema_text()
