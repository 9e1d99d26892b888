"""The library as a user gets it: mcptape installed as action.yml's install step installs it (a
fresh venv, `pip install` of the checkout, no extras: no official SDK either), and a user's program
that uses it, type-checked with mypy --strict against that installed package (its py.typed and
annotations) and then run with that venv's Python, outside the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.action_runner import INSTALL_STEPS, ActionRunner, shared_runner_temp
from tests.conftest import CALC_SERVER, FIXTURES

USER_PROGRAM = '''\
"""A user's program: it type-checks against mcptape with mypy --strict, and runs."""

import json
import warnings

import mcptape


def check(a: str, b: str) -> tuple[str, int, str | None]:
    verdict: mcptape.Verdict = mcptape.diff(a, b)
    first = verdict.first
    where = first.call.one_line() if first is not None and first.call is not None else None
    return verdict.verdict, verdict.exit_code, where


def gate(sessions: list[str]) -> str:
    report: mcptape.RunReport = mcptape.run("mcptape.yml", sessions=sessions)
    return f"{report.result}: " + ", ".join(f"{s.name} {s.verdict}" for s in report.sessions)


def serve(tape: str) -> list[str]:
    options: mcptape.PlayOptions = {"faults": ["tool=add,error=-32000:quota"], "lenient": True}
    try:
        with mcptape.replay(tape, record_mode=mcptape.RecordMode.NONE, **options) as endpoint:
            argv: list[str] = endpoint.argv
            endpoint.stdio_parameters()  # the official SDK's object: not installed here
    except mcptape.ReplayMiss as e:
        return e.misses
    except mcptape.McptapeError as e:
        return [type(e).__name__, e.message, e.hint or "", str(len(argv))]
    return argv


if __name__ == "__main__":
    warnings.simplefilter("error", mcptape.McptapeWarning)  # none of these calls has one to give
    print(json.dumps({
        "same": check("tapes/arithmetic.tape.jsonl", "tapes/arithmetic.tape.jsonl"),
        "drift": check("tapes/arithmetic.tape.jsonl", "tapes/surface.tape.jsonl"),
        "gate": gate(["surface"]),
        "serve": serve("tapes/arithmetic.tape.jsonl"),
        "mode": mcptape.RecordMode("once").action(tape_exists=False),
    }))
'''


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runner = ActionRunner(shared_runner_temp(tmp_path_factory))
    run = runner.run(tmp_path_factory.mktemp("install-ws"), only=INSTALL_STEPS)
    assert run.result == "success", run.log
    return Path(run.step("install").outputs["mcptape"]).parent / "python"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "example", tmp_path / "example", ignore=shutil.ignore_patterns("agent", "frameworks"))
    (tmp_path / "servers").mkdir()
    shutil.copy(CALC_SERVER, tmp_path / "servers" / "calc_server.py")
    (tmp_path / "example" / "user.py").write_text(USER_PROGRAM, encoding="utf-8")
    return tmp_path / "example"


def user_shell() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CI", "GITHUB_ACTIONS", "MCPTAPE_FIXTURE_VARIANT", "MYPYPATH")}


def mypy(program: Path, python: Path) -> subprocess.CompletedProcess[str]:
    """The dev install's mypy, checking `program` against the packages of `python` (PEP 561)."""
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(program.parent / ".mypy"),
                           "--python-executable", str(python), str(program)], cwd=program.parent, env=user_shell(),
                          capture_output=True, text=True, timeout=300)


def test_a_users_program_type_checks_strictly_against_the_installed_package(venv_python: Path, project: Path) -> None:
    program = project / "user.py"
    checked = mypy(program, venv_python)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # The control: the types are read, so a program that misuses them fails.
    wrong = project / "wrong.py"
    wrong.write_text("import mcptape\n\ncode: str = mcptape.diff('a', 'b').exit_code\n"
                     "mcptape.replay('t', pace=2)\n", encoding="utf-8")
    failed = mypy(wrong, venv_python)
    assert failed.returncode == 1, failed.stdout
    assert 'Incompatible types in assignment (expression has type "int", variable has type "str")' in failed.stdout
    assert 'Argument "pace" to "replay" has incompatible type "int"' in failed.stdout


def test_the_users_program_runs_on_the_installed_package(venv_python: Path, project: Path) -> None:
    import json

    done = subprocess.run([str(venv_python), "user.py"], cwd=project, env=user_shell(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the library printed nothing
    out = json.loads(done.stdout)
    assert out["same"] == ["same", 0, None]
    assert out["drift"] == ["structural", 2, "step 1 · tools/call add {\"a\":2,\"b\":3}"]
    assert out["gate"] == "none: surface same"
    kind, message, hint, argc = out["serve"]
    assert (kind, hint) == ("McptapeError", "pip install mcp") and "official MCP SDK" in message and int(argc) > 3
    assert out["mode"] == "record"
