"""mcptape.diff and mcptape.run (mcptape/api/judging.py): the models the --json reports serialize, one
source for both, so what the library returns is what `mcptape diff --json` and `mcptape ci --json`
write (compared with a real `mcptape` process); failures are exceptions, drift is a value, and
nothing is printed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import mcptape
from tests.conftest import mcptape_command, user_env

GOLDEN = "tapes/arithmetic.tape.jsonl"


def command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mcptape_command(*args), cwd=cwd, env=user_env(), capture_output=True, text=True, timeout=120)


def test_diff_returns_the_document_diff_json_writes(example: Path, capfd: pytest.CaptureFixture[str]) -> None:
    fork = example / "fork.tape.jsonl"
    assert command("fork", GOLDEN, "--at", "3", "--drop", "-o", str(fork), cwd=example).returncode == 0
    pairs = [(GOLDEN, GOLDEN, 0), (GOLDEN, "tapes/surface.tape.jsonl", 2), (GOLDEN, str(fork), 0)]
    capfd.readouterr()
    for a, b, code in pairs:
        verdict = mcptape.diff(a, b)
        assert capfd.readouterr() == ("", "")
        done = command("diff", a, b, "--json", "-", cwd=example)
        assert done.returncode == verdict.exit_code == code
        assert verdict.to_dict() == json.loads(done.stdout), (a, b)
        assert mcptape.Verdict.from_dict(verdict.to_dict()).to_dict() == verdict.to_dict()
    assert [mcptape.diff(a, b).verdict for a, b, _ in pairs] == ["same", "structural", "fork"]
    with pytest.raises(mcptape.TapeError):
        mcptape.diff(GOLDEN, "tapes/missing.tape.jsonl")
    with pytest.raises(mcptape.ConfigError):
        mcptape.diff(GOLDEN, GOLDEN, config="missing.yml")


def _without_timings(report: dict[str, Any]) -> dict[str, Any]:
    for session in report["sessions"]:
        session["duration_s"] = None
    return report


def test_run_returns_the_report_ci_json_writes(example: Path, capfd: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    capfd.readouterr()
    report = mcptape.run(sessions=["arithmetic", "surface"])
    assert capfd.readouterr() == ("", "")
    done = command("ci", "--session", "arithmetic", "--session", "surface", "--json", "ci.json", cwd=example)
    assert done.returncode == report.exit_code == 0
    written = json.loads((example / "ci.json").read_text(encoding="utf-8"))
    assert _without_timings(report.to_dict()) == _without_timings(written)
    # The control: a server that drifts is a drifted report, not an exception.
    monkeypatch.setenv("MCPTAPE_FIXTURE_VARIANT", "changed_result")
    drifted = mcptape.run(sessions=["arithmetic"])
    assert drifted.exit_code == 1 and drifted.sessions[0].verdict == "output"
    first = drifted.first_drift()
    assert first is not None and first[1].one_line().startswith("step 1 · tools/call add")


def test_run_keeps_the_commands_promises(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    goldens = {p.name: p.read_bytes() for p in (example / "tapes").iterdir()}
    monkeypatch.setenv("CI", "true")
    with pytest.raises(mcptape.McptapeError, match="refusing --update-golden with CI=true"):
        mcptape.run(update_golden=True)
    monkeypatch.delenv("CI")
    with pytest.raises(mcptape.ConfigError, match="no mcptape.yml at missing.yml"):
        mcptape.run("missing.yml")
    with pytest.raises(mcptape.ConfigError, match="a list of session names"):
        mcptape.run(sessions="arithmetic")  # type: ignore[arg-type]
    assert {p.name: p.read_bytes() for p in (example / "tapes").iterdir()} == goldens
    report = mcptape.run(update_golden=True, sessions=["surface"])  # unchanged server: goldens unchanged
    assert report.updated_golden and report.sessions[0].verdict in ("same", "updated")
    assert {p.name: p.read_bytes() for p in (example / "tapes").iterdir()} == goldens


def test_a_gate_weaker_than_its_minimum_raises_rather_than_read_green(example: Path) -> None:
    report = mcptape.run(sessions=["surface"], strength=True)
    assert report.exit_code == 0 and report.strength is not None and report.strength.startswith("gate strength ")
    config = example / "mcptape.yml"
    config.write_text(config.read_text(encoding="utf-8") + "drift:\n  min_strength: 100\n", encoding="utf-8")
    with pytest.raises(mcptape.McptapeError, match="min_strength") as weak:
        mcptape.run(sessions=["surface"])
    assert weak.value.exit_code == 3
