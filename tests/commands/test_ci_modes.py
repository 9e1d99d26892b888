"""`mcptape ci`'s modes (commands/ci.py): one table says which option works in which mode; an option a
mode cannot honour is refused with exit 3 and why, before anything starts; every mode loads, checks,
selects and reports through one path, so what a mode accepts it honours (issue 39 item 2, issue 40).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from mcptape.cli import main
from mcptape.commands.ci import MODE_FLAGS, Mode
from mcptape.report.sarif import sarif_log
from mcptape.verdict.model import DiffResult, Drift, Finding, RunReport, SessionResult
from tests.conftest import CALC_SERVER

# The words that choose each mode, and the words that give each option of MODE_FLAGS.
MODE_WORDS = {Mode.GOLDEN: [], Mode.BASELINE: ["--baseline", "HEAD"], Mode.AGAINST: ["--against", "calc"],
              Mode.REPEAT: ["--repeat", "2"]}
FLAG_WORDS = {"--update-golden": ["-u"], "--allow-update-in-ci": ["--allow-update-in-ci"],
              "--allow-edited": ["--allow-edited"], "--strength": ["--strength"], "--reference-runs": ["--reference-runs", "3"],
              "--latency": ["--latency", "5"], "--json": ["--json=r.json"], "--junit": ["--junit=r.xml"],
              "--summary": ["--summary=r.md"], "--sarif": ["--sarif=r.sarif"], "--html": ["--html=r.html"], "--out-dir": ["--out-dir", "fresh"],
              "--otel": ["--otel"], "--otel-payloads": ["--otel-payloads"]}

CONFIG = """\
version: 1
golden_dir: tapes
servers:
  calc:
    command: [{python}, {server}]
sessions:
  - name: arithmetic
    server: calc
    steps:
      - list_tools
      - call: add
        arguments: {{a: 2, b: 3}}
"""


def test_every_option_of_the_table_has_words_here() -> None:
    assert {f.spelling for f in MODE_FLAGS} == set(FLAG_WORDS)


OUTSIDE = [(row.spelling, mode) for row in MODE_FLAGS for mode in Mode if mode not in row.modes]


@pytest.mark.parametrize(("flag", "mode"), OUTSIDE, ids=[f"{f}-{m.value}" for f, m in OUTSIDE])
def test_an_option_outside_its_modes_is_refused_naming_both_before_anything_runs(
    flag: str, mode: Mode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no config here: a refusal comes before the config is read
    assert main(["ci", *MODE_WORDS[mode], *FLAG_WORDS[flag]]) == 3
    err = capsys.readouterr().err
    assert f"{flag} does not work in {mode.named}" in err and "hint: drop" in err
    assert "no such file" not in err.lower()  # refused for the combination, not for the missing config


def test_a_count_that_cannot_be_honoured_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """`--jobs -1` ran one session at a time, silently."""
    assert main(["ci", "--jobs", "-1"]) == 3
    assert "--jobs -1: run at least 1 session at a time" in capsys.readouterr().err
    assert main(["ci", "--repeat", "1"]) == 3
    assert "compare at least 2 runs" in capsys.readouterr().err


def test_two_modes_are_refused() -> None:
    assert main(["ci", "--against", "x", "--repeat", "3"]) == 3
    assert main(["ci", "--baseline", "HEAD", "--against", "x"]) == 3


def test_repeat_with_a_reference_is_the_reference_runs_for_one_more_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["ci", "--against", "calc", "--repeat", "3", "-c", "missing.yml"]) == 3  # read as --reference-runs 3
    err = capsys.readouterr().err
    assert "`--repeat 3 with --baseline/--against` is deprecated" in err and "`--reference-runs 3`" in err
    assert "missing.yml" in err  # it went on to the config: not refused as two modes


def test_baseline_auto_takes_only_what_both_modes_it_may_become_honour(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ci", "--baseline", "auto", "-u"]) == 3
    assert "--update-golden does not work in --baseline" in capsys.readouterr().err
    assert main(["ci", "--baseline", "auto", "--latency", "5"]) == 3
    assert "--latency does not work in golden mode" in capsys.readouterr().err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "mcptape.yml").write_text(CONFIG.format(python=sys.executable, server=CALC_SERVER), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name in ("CI", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_check_config_runs_in_every_mode(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`check_config` ran only for --repeat: a golden_dir that is a file passed --against until a session ran."""
    (project / "tapes").write_text("not a directory\n", encoding="utf-8")
    for mode in ([], ["--against", "calc"], ["--repeat", "2"]):
        assert main(["ci", *mode]) == 3, mode
        assert "golden_dir 'tapes'" in capsys.readouterr().err, mode


def test_out_dir_is_never_the_golden_directory(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ci", "--out-dir", "tapes"]) == 3
    assert "that is the golden directory" in capsys.readouterr().err


def test_against_mode_honours_out_dir_reports_coverage_and_context_cost(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under --against, --out-dir was accepted and ignored, and the report had no coverage nor context cost."""
    code = main(["ci", "--against", f"{sys.executable} {CALC_SERVER}", "--out-dir", "fresh", "--json=r.json",
                 "--summary=r.md"])
    assert code == 0, capsys.readouterr()
    fresh = project / "fresh" / "arithmetic.tape.jsonl"
    assert fresh.is_file() and (project / "fresh" / "arithmetic.tape.view.txt").is_file()
    report = json.loads((project / "r.json").read_text(encoding="utf-8"))
    session = report["sessions"][0]
    assert session["fresh"] == str(fresh)
    facts = session["surface_facts"]
    assert facts["size"] and "add" in facts["called"]["tools"]  # context cost and coverage, as golden mode has them
    assert "context cost" in (project / "r.md").read_text(encoding="utf-8").lower()
    # The control: golden mode writes the same fresh tape (no golden yet: structural, exit 2).
    shutil.rmtree(project / "fresh")
    assert main(["ci", "--out-dir", "fresh"]) == 2 and fresh.is_file()


def test_sarif_of_a_session_without_a_golden_points_at_the_config_line(tmp_path: Path) -> None:
    """In baseline mode SARIF pointed at "." and at a line of a tape that does not exist."""
    finding = Finding(category="security", kind="instruction", severity="structural", path="tools[0]",
                      message="a hidden instruction", golden_line=57)
    diff = DiffResult(verdict="structural", drifts=[Drift(call=None, findings=[finding])])
    live = SessionResult(name="arithmetic@2025-11-25", verdict="structural", diff=diff)  # --against: no golden
    golden = SessionResult(name="arithmetic", verdict="structural", diff=diff, golden="tapes/arithmetic.tape.jsonl")
    report = RunReport(config="mcptape.yml", sessions=[live, golden])
    results = sarif_log(report, config_dir=tmp_path / "srv", root=tmp_path, session_lines={"arithmetic": 12})["runs"][0]["results"]
    places = [r["locations"][0]["physicalLocation"] for r in results]
    assert places[0] == {"artifactLocation": {"uri": "srv/mcptape.yml"}, "region": {"startLine": 12}}
    assert places[1] == {"artifactLocation": {"uri": "srv/tapes/arithmetic.tape.jsonl"}, "region": {"startLine": 57}}



@pytest.mark.parametrize(("words", "said"), [
    (["--allow-update-in-ci"], "without --update-golden it allows nothing"),
    (["-u", "--allow-edited"], "--update-golden replaces them without reading their seals"),
    (["--against", "x", "--latency", "5", "--jobs", "2"], "--latency runs one session at a time"),
])
def test_an_option_that_needs_another_inside_a_mode_is_refused_with_why(
    words: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ci", *words]) == 3
    assert said in capsys.readouterr().err
