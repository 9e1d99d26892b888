"""cli.py's exit-code contract: every way a command ends maps to the table, never to a traceback.

The top level is exercised in-process through `cli.main` with a stand-in command (a function
that raises what a bug would raise), since a real command that crashes would be a bug to fix;
the usage-error and platform cases also run as real processes.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading

import pytest

from mcptape import __version__, cli
from mcptape.errors import EXIT_COULD_NOT_RUN, EXIT_SECRET, SecretLeak
from tests.conftest import ROOT, mcptape_command, user_env

# A GitHub token shape the built-in detectors redact: an exception message quoting it must not print it.
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _raise_runtime(options: object) -> int:
    raise RuntimeError(f"unexpected state\nwhile holding {TOKEN}")


def _raise_os_error(options: object) -> int:
    raise PermissionError(13, "Permission denied", "/var/lib/mcptape/x.json")


def _raise_secret(options: object) -> int:
    raise SecretLeak("a secret survived in the JSON report")


def _crash_a_thread(options: object) -> int:
    thread = threading.Thread(target=lambda: 1 / 0, name="reader-1")
    thread.start()
    thread.join()
    return 1  # what the command itself would have said: output drift


def _forge_a_workflow_command(options: object) -> int:
    raise ValueError("x\n::error title=forged::from a tool result")


def _no_drift(options: object) -> int:
    return 0


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Make `mcptape ls` run one of the functions above (the dispatch, handler and hooks stay the real ones)."""
    monkeypatch.delenv(cli.DEBUG_VARIABLE, raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)

    def use(function) -> None:  # type: ignore[no-untyped-def]
        monkeypatch.setattr(importlib.import_module(cli.COMMANDS["ls"]), "run", function)

    return use


def test_an_unexpected_exception_is_one_redacted_line_and_exit_3(stand_in, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    stand_in(_raise_runtime)
    assert cli.main(["ls"]) == EXIT_COULD_NOT_RUN
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mcptape: internal error in ls: RuntimeError: unexpected state while holding ")
    assert err.endswith("; MCPTAPE_DEBUG=1 shows the traceback\n")
    assert TOKEN not in err and "Traceback" not in err


def test_mcptape_debug_shows_the_traceback_and_still_exits_3(stand_in, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    stand_in(_raise_runtime)
    monkeypatch.setenv(cli.DEBUG_VARIABLE, "1")
    assert cli.main(["ls"]) == EXIT_COULD_NOT_RUN
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and "in _raise_runtime" in err
    assert err.splitlines()[-1].startswith("mcptape: internal error in ls: RuntimeError: unexpected state")
    assert TOKEN not in err


def test_under_github_actions_the_line_cannot_act_as_a_workflow_command(stand_in, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    stand_in(_forge_a_workflow_command)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert cli.main(["ls"]) == EXIT_COULD_NOT_RUN
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("::stop-commands::") and lines[-1] == f"::{lines[0].split('::')[2]}::"
    assert not any(line.startswith("::error") for line in lines)


def test_an_untranslated_os_error_names_the_path_and_the_cause(stand_in, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    stand_in(_raise_os_error)
    assert cli.main(["ls"]) == EXIT_COULD_NOT_RUN
    assert capsys.readouterr().err == (
        "mcptape ls: /var/lib/mcptape/x.json: Permission denied; MCPTAPE_DEBUG=1 shows the traceback\n")


def test_an_mcptape_error_keeps_its_own_exit_code(stand_in, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    stand_in(_raise_secret)
    assert cli.main(["ls"]) == EXIT_SECRET
    assert capsys.readouterr().err == "mcptape ls: a secret survived in the JSON report\n"


def test_a_crash_in_another_thread_is_one_line_and_turns_the_verdict_into_exit_3(
    stand_in, capsys: pytest.CaptureFixture[str]  # type: ignore[no-untyped-def]
) -> None:
    hook = threading.excepthook
    stand_in(_crash_a_thread)
    assert cli.main(["ls"]) == EXIT_COULD_NOT_RUN
    err = capsys.readouterr().err
    assert err == ("mcptape: internal error in ls (thread reader-1): ZeroDivisionError: division by zero; "
                   "MCPTAPE_DEBUG=1 shows the traceback\n")
    assert threading.excepthook is hook  # in-process callers get their hook back

    stand_in(_no_drift)  # the control: the same command path, nothing crashes, its own code stands
    assert cli.main(["ls"]) == 0


@pytest.mark.parametrize("argv", [["ci", "--bogus"], ["ci", "--jobs", "many"], ["nosuchcommand"]])
def test_a_usage_error_exits_3_not_argparse_2(argv: list[str]) -> None:
    """2 is structural drift to a CI system; a mistyped flag is `could not run`."""
    proc = subprocess.run(mcptape_command(*argv), capture_output=True, text=True, cwd=ROOT,
                          env=user_env(PYTHONPATH=str(ROOT)), timeout=60)
    assert proc.returncode == EXIT_COULD_NOT_RUN, proc.stderr
    assert "error:" in proc.stderr and "Traceback" not in proc.stderr


# --- platforms ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("os_name", "platform", "supported"), [
    ("posix", "linux", True), ("posix", "darwin", True), ("nt", "win32", False), ("posix", "win32", False)])
def test_the_platform_rule(os_name: str, platform: str, supported: bool) -> None:
    problem = cli.unsupported_platform(os_name, platform)
    assert (problem is None) is supported
    if not supported:
        assert "Linux and macOS" in problem and platform in problem  # type: ignore[operator]


@pytest.mark.parametrize("argv", [["ci"], ["rec", "--", "server"], ["play", "t.tape.jsonl"], ["diff", "a", "b"],
                                  ["ls"], ["show", "t"], ["schema"], ["comment", "--body", "b"], ["merge", "r"], []])
def test_on_windows_every_command_exits_3_at_once_with_one_line(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with monkeypatch.context() as m:
        m.setattr(os, "name", "nt")
        m.setattr(sys, "platform", "win32")
        code = cli.main(argv)
    assert code == EXIT_COULD_NOT_RUN
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mcptape runs on Linux and macOS (POSIX) only, not on win32: it needs process groups")


def test_on_windows_the_check_comes_before_the_command_is_imported() -> None:
    code = ("import os, sys; os.name = 'nt'; sys.platform = 'win32'\n"
            "from mcptape.cli import main\n"
            "code = main(['ci'])\n"
            "print(code, sorted(m for m in sys.modules if m in ('mcptape.ci', 'mcptape.config', 'mcptape.record')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.stdout == "3 []\n", proc.stderr
    assert proc.stderr.startswith("mcptape runs on Linux and macOS")


def test_on_windows_version_still_answers(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with monkeypatch.context() as m, pytest.raises(SystemExit) as info:
        m.setattr(os, "name", "nt")
        m.setattr(sys, "platform", "win32")
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"mcptape {__version__}\n"


def test_rec_without_a_server_command_names_itself_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rec", "--out", "x.tape.jsonl", "--"]) == EXIT_COULD_NOT_RUN
    assert capsys.readouterr().err == (
        "mcptape rec: no server command given\n  hint: mcptape rec [--out TAPE] [--name NAME] -- python server.py\n")
