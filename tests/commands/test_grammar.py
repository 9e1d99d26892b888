"""The command line's one grammar (commands/grammar.py), driven as users type it: reports as
`--json[=FILE]`, no output onto an input, values that start with a dash, options that need another,
old spellings kept one release. Each test here failed before issue 40's fix (bc91e60)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mcptape.cli import main
from mcptape.commands.grammar import Output, check_outputs, looks_like_input
from mcptape.errors import UsageError
from mcptape.tape.reader import read_tape
from tests.conftest import FIXTURES, ROOT, mcptape_command, user_env

GOLDEN = FIXTURES / "example" / "tapes" / "arithmetic.tape.jsonl"


@pytest.fixture
def tapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder as a user has it: two tapes and a config; the command runs there."""
    shutil.copy(GOLDEN, tmp_path / "a.tape.jsonl")
    shutil.copy(GOLDEN, tmp_path / "b.tape.jsonl")
    shutil.copy(FIXTURES / "example" / "mcptape.yml", tmp_path / "mcptape.yml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


# -- reports: `--json` alone is stdout, the next word is the command's ---------------------------


def test_ls_json_before_the_tapes_lists_them_and_writes_over_none(tapes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`mcptape ls --json b.tape.jsonl` wrote the JSON list over the tape and exited 0."""
    before = snapshot(tapes)
    assert main(["ls", "--json", "a.tape.jsonl", "b.tape.jsonl"]) == 0  # what `ls --json *.tape.jsonl` expands to
    listed = json.loads(capsys.readouterr().out)
    assert [row["path"] for row in listed] == ["a.tape.jsonl", "b.tape.jsonl"]
    assert snapshot(tapes) == before
    assert read_tape(tapes / "b.tape.jsonl").name == "arithmetic"


def test_json_alone_is_stdout_in_every_command_that_reports(tapes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["diff", "a.tape.jsonl", "b.tape.jsonl", "--json"], ["diff", "--json", "a.tape.jsonl", "b.tape.jsonl"],
                 ["show", "--json", "a.tape.jsonl"], ["ls", "--json"]):
        assert main(argv) == 0, argv
        json.loads(capsys.readouterr().out)  # one JSON document, nothing else


def test_json_equals_file_writes_the_file(tapes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "a.tape.jsonl", "--json=events.json"]) == 0
    assert json.loads((tapes / "events.json").read_text(encoding="utf-8"))["name"] == "arithmetic"
    assert "arithmetic" in capsys.readouterr().out  # the table still goes to stdout


@pytest.mark.parametrize("argv", [
    ["ls", "--json=b.tape.jsonl"],  # a tape
    ["ls", "--json=mcptape.yml"],  # a config
    ["show", "a.tape.jsonl", "--json=a.tape.jsonl"],  # what it reads
    ["diff", "a.tape.jsonl", "b.tape.jsonl", "--json=new.tape.jsonl"],  # a tape's name
    ["ls", "--json=trace.jsonl"],  # an input's name (a trace)
])
def test_a_report_onto_an_input_is_refused_with_the_fix(tapes: Path, argv: list[str],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(tapes)
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "a report never goes there" in err or "is what this command reads" in err
    assert "hint:" in err and "Traceback" not in err
    assert snapshot(tapes) == before
    # The control: the same report to a new file is written.
    assert main([*argv[:-1], "--json=fine.json"]) == 0 and (tapes / "fine.json").exists()


def test_the_old_spelling_json_file_keeps_working_one_release_and_says_so(
    tapes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", "a.tape.jsonl", "b.tape.jsonl", "--json", "verdict.json"]) == 0  # no place for a third tape
    assert json.loads((tapes / "verdict.json").read_text(encoding="utf-8"))["verdict"] == "same"
    err = capsys.readouterr().err
    assert "`--json verdict.json` is deprecated" in err and "write `--json=verdict.json`" in err
    assert main(["ls", "--json", "-"]) == 0  # `-` was stdout
    captured = capsys.readouterr()
    assert json.loads(captured.out) and "write `--json`" in captured.err


def test_two_outputs_never_share_a_file_or_stdout(tapes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["merge", "r.json", "--json=x.json", "--summary=x.json"]) == 3
    assert "--json and --summary both write x.json" in capsys.readouterr().err
    assert main(["merge", "r.json", "--json", "--summary"]) == 3
    assert "would both write to stdout" in capsys.readouterr().err


def test_check_outputs_rules() -> None:
    assert looks_like_input("x/a.tape.jsonl") and looks_like_input("mcptape.YML") and not looks_like_input("r.json")
    with pytest.raises(UsageError, match="is a file, not a directory"):
        check_outputs([Output("--junit", str(GOLDEN / "r.xml"))])
    with pytest.raises(UsageError, match="exists; mcptape never writes over it"):
        check_outputs([Output("--out", str(GOLDEN), artifact=True)])
    check_outputs([Output("--json", "-"), Output("--junit", "new.xml"), Output("--out-dir", "fresh", directory=True)])


# -- artifacts: a tape or a config is never written over ------------------------------------------


def test_fork_and_import_never_write_over_an_existing_file(tapes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(tapes)
    assert main(["fork", "a.tape.jsonl", "--at", "1", "--drop", "-o", "b.tape.jsonl"]) == 3
    assert "b.tape.jsonl exists; mcptape never writes over it" in capsys.readouterr().err
    assert main(["fork", "a.tape.jsonl", "--at", "1", "--drop", "-o", "a.tape.jsonl"]) == 3
    assert "is what this command reads" in capsys.readouterr().err
    assert snapshot(tapes) == before
    assert main(["fork", "a.tape.jsonl", "--at", "1", "--drop", "-o", "c.tape.jsonl"]) == 0  # the control


# -- values that start with a dash ----------------------------------------------------------------


def test_fork_error_takes_a_negative_code_as_users_type_it(tapes: Path) -> None:
    """Every JSON-RPC error code is negative: `--error -32603:boom` was refused ("expected one argument")."""
    assert main(["fork", "a.tape.jsonl", "--at", "2", "--error", "-32603:boom", "-o", "f.tape.jsonl"]) == 0
    answer = next(e for e in read_tape(tapes / "f.tape.jsonl").events if e.get("kind") == "error")
    assert answer["msg"]["error"] == {"code": -32603, "message": "boom"}


def test_a_dash_word_that_is_an_option_is_still_an_option(tapes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:  # -o is fork's own option: argparse's usage error, exit 3
        main(["fork", "a.tape.jsonl", "--at", "2", "--error", "-o", "f.tape.jsonl"])
    assert refused.value.code == 3 and "expected one argument" in capsys.readouterr().err


# -- options that need another: implied, or refused with the reason ------------------------------


def test_verify_allowed_signers_without_signature_checks_the_signature(tapes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`verify --allowed-signers F TAPE` passed an unsigned tape with exit 0."""
    (tapes / "allowed_signers").write_text('alice namespaces="mcptape" ssh-ed25519 AAAA\n', encoding="utf-8")
    assert main(["verify", "--allowed-signers", "allowed_signers", "a.tape.jsonl"]) == 3
    assert "a.tape.jsonl: signature: no signature" in capsys.readouterr().out
    assert main(["verify", "a.tape.jsonl"]) == 0  # the seal alone still passes, and says only that
    assert "sealed" in capsys.readouterr().out


def test_verify_says_a_signature_beside_the_tape_was_not_checked(tapes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tapes / "a.tape.jsonl.sig").write_text("-----BEGIN SSH SIGNATURE-----\n", encoding="utf-8")
    assert main(["verify", "a.tape.jsonl"]) == 0
    assert "signature not checked (a.tape.jsonl.sig; add --signature)" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "said"), [
    (["play", "a.tape.jsonl", "--fault-seed", "7"], "--fault-seed 7 seeds the p= draws of --fault rules"),
    (["play", "a.tape.jsonl", "--fallback"], "--fallback forwards to the live server given after `--`"),
    (["play", "a.tape.jsonl", "--json"], "stdio play's stdout is the MCP wire"),
    (["init", "--url", "http://127.0.0.1:9/mcp", "--env", "TOKEN=x", "-o", "new.yml"], "--env passes variables to a server init starts"),
    (["rec", "--upstream", "http://127.0.0.1:9/mcp"], "needs --listen HOST:PORT"),
])
def test_an_option_without_the_one_it_needs_is_refused_with_the_reason(
    tapes: Path, argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 3
    assert said in capsys.readouterr().err


def test_check_checks_the_c_config_and_the_files(tapes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`check -c a.yml b.yml` checked b.yml only: -c was accepted and ignored."""
    (tapes / "broken.yml").write_text("version: 1\nsessions: 3\n", encoding="utf-8")
    assert main(["check", "-c", "broken.yml", "mcptape.yml"]) == 3
    captured = capsys.readouterr()
    assert "broken.yml" in captured.err and "ok: 3 sessions" in captured.out


# -- one spelling per idea: the old ones still work, said on stderr ------------------------------


def test_renamed_flags_keep_working_one_release_with_a_warning(
    tapes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["comment", "--body", "missing.json", "--key", "mcptape.yml"]) == 3  # no body: it still reads --key
    err = capsys.readouterr().err
    assert "`--key mcptape.yml` is deprecated" in err and "`--marker mcptape.yml`" in err
    assert main(["init", "--safe", "-o", "new.yml"]) == 3  # no server given: but --safe was read as --no-probe
    err = capsys.readouterr().err
    assert "`--safe` is deprecated" in err and "`--no-probe`" in err
    played = subprocess.run(mcptape_command("play", "a.tape.jsonl", "--report", "replay.json"), input="", text=True,
                            capture_output=True, timeout=60, cwd=tapes, env=user_env())  # play serves real stdio
    assert played.returncode == 0 and json.loads((tapes / "replay.json").read_text(encoding="utf-8"))["sessions"]
    assert "`--report replay.json` is deprecated and goes in the next release: write `--json=replay.json`" \
        in played.stderr


def test_help_shows_reports_as_typed_and_flags_under_their_mode(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["ci", "--help"])
    text = capsys.readouterr().out
    assert "[--json[=FILE]]" in text and "--sarif[=FILE]" in text
    repeat = text.index("repeat mode:")
    assert text.index("  --repeat N") > repeat > text.index("  --reference-runs N") > text.index("baseline and against modes")


def test_no_command_reads_its_options_with_getattr() -> None:
    """Every option is declared in build_parser and read by name: a getattr with a default hid a flag's absence."""
    root = ROOT / "mcptape"
    found = [f"{p.name}:{n}" for p in [root / "cli.py", *(root / "commands").glob("*.py")]
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "getattr(args" in line or "getattr(namespace" in line]
    assert found == []
