"""Every command's --help says what it does, its exit codes and the variables it reads; the conventions
that hold across commands (`-u`, `--json FILE` with `-` for stdout) hold in each command that has them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcptape.cli import COMMANDS, build_parser, main
from mcptape.commands.usage import SERVER_ALLOWLIST, USAGE, exit_code_text
from mcptape.tape.reader import read_tape
from mcptape.transports.stdio import ENV_ALLOWLIST
from tests.conftest import FIXTURES, ROOT, mcptape_command, user_env

EXAMPLE = FIXTURES / "example"
TAPE = EXAMPLE / "tapes" / "arithmetic.tape.jsonl"


def help_of(command: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[command].format_help()  # type: ignore[index]


def test_every_command_has_a_usage_row() -> None:
    assert set(USAGE) == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_help_has_a_description_its_exit_codes_and_its_environment(command: str) -> None:
    text = help_of(command)
    usage = USAGE[command]
    assert " ".join(usage.description.split()[:6]) in " ".join(text.split())
    codes = text.split("exit codes:\n", 1)[1].split("\n\n", 1)[0]
    assert [line.split()[0].rstrip(",") for line in codes.splitlines()] == [exit_code_text(c).split(",")[0] for c, _ in usage.exit_codes]
    environment = text.split("environment:\n", 1)[1]
    assert "MCPTAPE_DEBUG" in environment
    for name, _ in usage.environment:
        assert name in environment


def test_ci_help_as_a_user_sees_it_names_every_exit_code_and_the_ci_variables() -> None:
    proc = subprocess.run(mcptape_command("ci", "--help"), capture_output=True, text=True, timeout=60, env=user_env())
    assert proc.returncode == 0
    codes = proc.stdout.split("exit codes:\n", 1)[1].split("\n\n", 1)[0]
    assert [line.split()[0] for line in codes.splitlines()] == ["0", "1", "2", "3", "4"]
    assert "-u, --update-golden" in proc.stdout
    for name in ("CI", "GITHUB_ACTIONS", "GITHUB_TOKEN", "GITHUB_STEP_SUMMARY", "MCPTAPE_DEBUG"):
        assert f"  {name}" in proc.stdout


def test_the_server_allowlist_said_in_help_is_the_one_servers_get() -> None:
    assert SERVER_ALLOWLIST == ENV_ALLOWLIST


def test_u_is_update_golden(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.chdir(EXAMPLE)
    for flag in ("-u", "--update-golden"):
        assert main(["ci", flag]) == 3
        assert "refusing --update-golden with CI=true" in capsys.readouterr().err
    monkeypatch.delenv("CI")
    assert main(["ci", "-u", "--repeat", "2"]) == 3  # -u reaches what --update-golden reaches
    assert "--update-golden does not work in --repeat" in capsys.readouterr().err


def test_ci_json_dash_is_stdout_and_the_report_moves_to_stderr(tmp_path: Path) -> None:
    work = tmp_path / "fixtures" / "example"  # its config runs ../servers/calc_server.py
    shutil.copytree(EXAMPLE, work)
    shutil.copytree(FIXTURES / "servers", tmp_path / "fixtures" / "servers")
    to_stdout = subprocess.run(mcptape_command("ci", "--json"), cwd=work, capture_output=True, text=True,
                               timeout=120, env=user_env())
    assert to_stdout.returncode == 0, to_stdout.stderr
    report = json.loads(to_stdout.stdout)
    assert [s["verdict"] for s in report["sessions"]] == ["same", "same", "same"]
    assert "result: none (exit 0)" in to_stdout.stderr
    to_file = subprocess.run(mcptape_command("ci", "--json=report.json"), cwd=work, capture_output=True,
                             text=True, timeout=120, env=user_env())
    assert to_file.returncode == 0 and "result: none (exit 0)" in to_file.stdout
    written = json.loads((work / "report.json").read_text(encoding="utf-8"))
    assert [(s["name"], s["verdict"]) for s in written["sessions"]] == [(s["name"], s["verdict"]) for s in report["sessions"]]
    assert not (work / "-").exists()


def test_ls_and_show_json_say_what_their_tables_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    broken = tmp_path / "broken.tape.jsonl"
    broken.write_text("not a tape\n", encoding="utf-8")
    assert main(["ls", str(EXAMPLE / "tapes"), str(broken), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    tape = read_tape(TAPE)
    row = next(r for r in listed if r["name"] == "arithmetic")
    assert (row["events"], row["protocol"], row["complete"]) == (len(tape.events), tape.protocol, True)
    assert [r["name"] for r in listed] == ["arithmetic", "resources-and-prompts", "surface", "broken.tape.jsonl"]
    assert "error" in listed[-1] and "events" not in listed[-1]

    out = tmp_path / "show.json"
    assert main(["show", str(TAPE), f"--json={out}"]) == 0
    assert "arithmetic" in capsys.readouterr().out  # with a file, the table still goes to stdout
    shown = json.loads(out.read_text(encoding="utf-8"))
    assert [e["event"] for e in shown["events"]] == tape.events
    assert [e["line"] for e in shown["events"]] == [tape.line_of(i) for i in range(len(tape.events))]
    assert main(["show", str(TAPE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == shown


def test_diff_json_is_a_file_or_dash_for_stdout_like_the_other_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changed = tmp_path / "changed.tape.jsonl"
    changed.write_text(TAPE.read_text(encoding="utf-8").replace('"text":"5"', '"text":"6"'), encoding="utf-8")
    assert changed.read_text(encoding="utf-8") != TAPE.read_text(encoding="utf-8")  # a real change to find

    assert main(["diff", str(TAPE), str(changed), "--json", "--allow-edited"]) == 1
    verdict = json.loads(capsys.readouterr().out)  # only JSON on stdout
    assert verdict["exit_code"] == 1 and "add" in verdict["first_drift"]

    out = tmp_path / "verdict.json"
    assert main(["diff", str(TAPE), str(changed), f"--json={out}", "--allow-edited"]) == 1
    assert "drift" in capsys.readouterr().out  # with a file, the report still goes to stdout
    assert json.loads(out.read_text(encoding="utf-8")) == verdict

    assert main(["diff", str(TAPE), str(TAPE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["first_drift"] is None


def test_diff_judges_a_rec_tapes_clock_dates_by_when_it_was_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two rec tapes of a clock made a week ago: their dates are the clock's then, not pinned ones.
    (Made by editing a sealed tape, so read with --allow-edited.)"""
    week_ago = time.time() - 7 * 86400
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(week_ago))
    later = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(week_ago + 61))
    a, b = tmp_path / "a.tape.jsonl", tmp_path / "b.tape.jsonl"
    a.write_text(TAPE.read_text(encoding="utf-8").replace('"text":"5"', f'"text":"{stamp}Z"'), encoding="utf-8")
    b.write_text(TAPE.read_text(encoding="utf-8").replace('"text":"5"', f'"text":"{later}Z"'), encoding="utf-8")

    # Judged by today's clock alone, a week-old date looks pinned, so the two differ (the control).
    assert main(["diff", str(a), str(b), "--json", "--allow-edited"]) == 1
    assert stamp in json.loads(capsys.readouterr().out)["first_drift"]
    for tape in (a, b):  # written when they were recorded
        os.utime(tape, (week_ago, week_ago))
    assert main(["diff", str(a), str(b), "--json", "--allow-edited"]) == 0
    capsys.readouterr()
    assert main(["diff", str(a), str(b), "--raw", "--json", "--allow-edited"]) == 1  # the dates do differ


# --- the exit-code table has one home: errors.py ------------------------------------------------


def markdown_exit_table(text: str) -> dict[int, str]:
    """The `| code | meaning |` table of a markdown document, as code -> meaning."""
    block = text.split("| code | meaning |\n|---|---|\n", 1)[1].split("\n\n", 1)[0]
    return {int(code): meaning for code, meaning in
            (line.strip("|").split(" | ", 1) for line in block.strip().splitlines())}


def test_the_readme_the_contract_and_mcptape_help_show_the_exit_codes_of_errors_py() -> None:
    from mcptape.errors import EXIT_CODES

    meanings = {code: meaning for code, (_, meaning) in EXIT_CODES.items()}
    for document in (ROOT / "README.md", ROOT / "docs" / "design.md"):
        table = markdown_exit_table(document.read_text(encoding="utf-8"))
        assert {code: meaning.strip() for code, meaning in table.items()} == meanings, document
    top = " ".join(build_parser().format_help().split())
    assert "exit codes: 0 no drift, 1 output drift, 2 structural drift, 3 could not run, 4 a secret survived" in top


def test_every_exit_code_a_help_names_is_one_errors_py_defines() -> None:
    from mcptape.errors import EXIT_CODES

    for command, usage in USAGE.items():
        for code, _ in usage.exit_codes:
            text = exit_code_text(code)
            assert text in {str(c) for c in EXIT_CODES} or not text[0].isdigit() or "," in text, (command, text)


def test_play_help_says_the_exit_code_an_unplayable_tape_really_gets(tmp_path: Path) -> None:
    """`play --help` once said an unplayable tape exits 2 (structural drift) while it exits 3."""
    codes = help_of("play").split("exit codes:\n", 1)[1].split("\n\n", 1)[0]
    said = next(line.split()[0] for line in codes.splitlines() if "cannot be replayed" in line)
    tape = tmp_path / "future.tape.jsonl"
    tape.write_text('{"mcptape":"tape","format":99,"version":"9.0.0","name":"x"}\n', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mcptape", "play", str(tape)], capture_output=True, text=True,
                          input="", timeout=60)
    assert said == str(proc.returncode) == "3", (said, proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
