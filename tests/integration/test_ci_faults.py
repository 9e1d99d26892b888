"""Every write that fails is exit 3 with the path and the cause, never a traceback or exit 1.

Real `mcptape ci`, `merge` and `comment` processes on the calc fixture. A full disk is the
process's RLIMIT_FSIZE (writes past it fail with EFBIG, for root too, which ignores file modes:
a read-only directory cannot be staged here portably, and the failure takes the same path).
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, mcptape_command, user_env
from tests.in_process import run_mcptape
from tests.integration.test_ci import recorded, recorded_once, write_config  # noqa: F401  (fixtures)

FULL_AT = 200  # bytes a file may grow to before the "disk" is full: more than a config, less than a tape


def run(cwd: Path, *args: str, full: bool = False) -> subprocess.CompletedProcess[str]:
    def fill_the_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (FULL_AT, FULL_AT))  # Python ignores SIGXFSZ: EFBIG

    if full:  # a process of its own, whose file size limit is the full disk
        proc = subprocess.run(mcptape_command(*args), cwd=cwd, env=user_env(PYTHONPATH=str(ROOT)), capture_output=True,
                              text=True, timeout=120, preexec_fn=fill_the_disk)
    else:
        proc = run_mcptape(args, cwd=cwd, env=user_env(PYTHONPATH=str(ROOT)), timeout=120)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc


def test_a_full_disk_fails_the_sessions_whose_golden_cannot_be_written(recorded: Path) -> None:  # noqa: F811
    golden = recorded.parent / "tapes" / "arithmetic.tape.jsonl"
    before = golden.read_bytes()
    golden.unlink()
    proc = run(recorded.parent, "ci", "--update-golden", "--jobs", "1", full=True)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert f"{golden}: cannot write the golden tape of session arithmetic: File too large" in proc.stdout
    assert "not written  tapes/arithmetic.tape.jsonl  (session arithmetic: error)" in proc.stdout
    assert "unchanged    tapes/surface.tape.jsonl" in proc.stdout  # the other session is unaffected
    assert not golden.exists() and not (golden.parent / ".mcptape-tmp").exists()

    again = run(recorded.parent, "ci", "--update-golden", "--jobs", "1")  # the control: room on the disk
    assert again.returncode == 0, again.stdout + again.stderr
    assert golden.read_bytes() == before


def test_a_report_that_cannot_be_written_fails_the_run(recorded: Path, tmp_path: Path) -> None:  # noqa: F811
    report = tmp_path / "report.json"
    proc = run(recorded.parent, "ci", f"--json={report}", full=True)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stderr == (f"mcptape ci: {report}: cannot write the JSON report: File too large\n"
                           "  hint: check that the directory is a writable directory and the disk is not full\n")
    assert not report.exists()


@pytest.mark.parametrize(("flag", "where", "message"), [
    ("--json", "afile/report.json", "--json=afile/report.json: afile is a file, not a directory"),
    ("--json", "adir", "--json=adir: adir is a directory"),
    ("--junit", "afile/junit.xml", "--junit=afile/junit.xml: afile is a file, not a directory"),
    ("--summary", "afile/deeper/summary.md", "--summary=afile/deeper/summary.md: afile is a file, not a directory"),
    ("--out-dir", "afile", "is a file, not a directory"),
    ("--out-dir", "afile/fresh", "afile is a file, not a directory"),
])
def test_an_output_path_that_cannot_be_written_is_refused_before_any_server_starts(
    recorded: Path, flag: str, where: str, message: str  # noqa: F811
) -> None:
    work = recorded.parent
    (work / "afile").write_text("in the way\n", encoding="utf-8")
    (work / "adir").mkdir()
    proc = run(work, "ci", *([flag, where] if flag == "--out-dir" else [f"{flag}={where}"]))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout == ""  # refused at once: no session ran, no report
    assert message in proc.stderr.splitlines()[0]


@pytest.mark.parametrize("update", [False, True])
def test_a_golden_dir_that_is_a_file_is_a_config_error_with_its_line(recorded: Path, update: bool) -> None:  # noqa: F811
    tapes = recorded.parent / "tapes"
    shutil.rmtree(tapes)
    tapes.write_text("not a directory\n", encoding="utf-8")
    proc = run(recorded.parent, "ci", *(["--update-golden"] if update else []))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"mcptape ci: mcptape.yml:2: golden_dir 'tapes': {tapes} is a file, not a directory")
    assert tapes.read_text(encoding="utf-8") == "not a directory\n"


def test_a_directory_where_a_golden_tape_should_be_fails_that_session(recorded: Path) -> None:  # noqa: F811
    golden = recorded.parent / "tapes" / "surface.tape.jsonl"
    golden.unlink()
    golden.mkdir()
    for args in (["ci"], ["ci", "--update-golden"]):
        proc = run(recorded.parent, *args, "--json=r.json")
        assert proc.returncode == 3, proc.stdout + proc.stderr
        sessions = {s["name"]: s for s in json.loads((recorded.parent / "r.json").read_text(encoding="utf-8"))["sessions"]}
        assert sessions["surface"]["verdict"] == "error" and "Is a directory" in sessions["surface"]["error"]
        assert sessions["arithmetic"]["verdict"] == "same"


def test_merge_that_cannot_write_its_report_exits_3(recorded: Path) -> None:  # noqa: F811
    work = recorded.parent
    assert run(work, "ci", "--json=full.json").returncode == 0
    (work / "afile").write_text("in the way\n", encoding="utf-8")
    proc = run(work, "merge", "full.json", "--json=afile/merged.json")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "--json=afile/merged.json: afile is a file, not a directory" in proc.stderr  # refused before merging
    assert run(work, "merge", "full.json", "--json=merged.json").returncode == 0  # the control


MALFORMED_REPORTS = {
    "sessions is not a list": {"mcptape_report": 1, "config": "mcptape.yml", "sessions": "all"},
    "a session is not an object": {"mcptape_report": 1, "config": "mcptape.yml", "sessions": [1]},
    "unknown verdict": {"mcptape_report": 1, "config": "mcptape.yml", "sessions": [{"name": "a", "verdict": "meh"}]},
    "a finding of the wrong type": {"mcptape_report": 1, "config": "mcptape.yml", "sessions": [
        {"name": "a", "verdict": "output", "diff": {"verdict": "output", "drifts": [
            {"call": None, "findings": [{"category": 5, "severity": "output", "path": [], "message": {"x": 1}}]}]}}]},
    "an unknown call field": {"mcptape_report": 1, "config": "mcptape.yml", "sessions": [
        {"name": "a", "verdict": "output", "diff": {"verdict": "output", "drifts": [{"call": {"bogus": 1}}]}}]},
    "config is not a string": {"mcptape_report": 1, "config": 5, "sessions": []},
}


@pytest.mark.parametrize("case", sorted(MALFORMED_REPORTS))
def test_a_malformed_report_given_to_comment_is_exit_3_naming_the_file(tmp_path: Path, case: str) -> None:
    body = tmp_path / "report.json"
    body.write_text(json.dumps(MALFORMED_REPORTS[case]), encoding="utf-8")
    proc = run(tmp_path, "comment", "--body", str(body), "--pr", "1", "--repo", "acme/calc")
    assert proc.returncode == 3
    assert proc.stderr.startswith(f"mcptape comment: {body}: not a valid mcptape JSON report: "), proc.stderr


@pytest.mark.parametrize("command", ["merge", "comment"])
def test_a_report_nested_past_what_json_reads_is_exit_3_naming_the_file(tmp_path: Path, command: str) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"mcptape_report": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    args = ["merge", str(deep)] if command == "merge" else ["comment", "--body", str(deep), "--pr", "1", "--repo", "acme/calc"]
    proc = run(tmp_path, *args)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith(f"mcptape {command}: {deep}: not a JSON report: nested too deep to read"), proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
