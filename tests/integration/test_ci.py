"""`mcptape ci` end to end: real mcptape processes, the drifting calc fixture over real pipes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mcptape.verdict.model import RunReport
from tests.conftest import CALC_SERVER, ROOT, user_env
from tests.in_process import run_mcptape

CONFIG = """\
version: 1
golden_dir: tapes
servers:
  calc:
    command: [{python}, {calc}]
    env:
      MCPTAPE_FIXTURE_VARIANT: "${{VARIANT:-identical}}"
sessions:
  - name: surface
    server: calc
    steps:
      - list_tools
  - name: arithmetic
    server: calc
    steps:
      - call: add
        arguments: {{a: 2, b: 3}}
      - call: divide
        arguments: {{a: 1, b: 0}}
"""


def write_config(directory: Path, text: str | None = None, extra_sessions: str = "") -> Path:
    path = directory / "mcptape.yml"
    body = (text or CONFIG).format(python=json.dumps(sys.executable), calc=json.dumps(str(CALC_SERVER)))
    path.write_text(body + extra_sessions, encoding="utf-8")
    return path


def ci(config: Path, *args: str, variant: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    run_env = user_env(PYTHONPATH=str(ROOT))
    run_env.pop("VARIANT", None)
    if variant:
        run_env["VARIANT"] = variant
    run_env.update(env or {})
    return run_mcptape(["ci", "-c", str(config), *args], env=run_env, cwd=config.parent, timeout=120)


def goldens(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((directory / "tapes").glob("*.tape.jsonl"))}


@pytest.fixture(scope="module")
def recorded_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = write_config(tmp_path_factory.mktemp("recorded"))
    proc = ci(config, "--update-golden")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return config.parent


@pytest.fixture
def recorded(recorded_once: Path, tmp_path: Path) -> Path:
    """A config with freshly recorded goldens, copied per test (recording once keeps the file fast)."""
    work = tmp_path / "work"
    shutil.copytree(recorded_once, work)
    return work / "mcptape.yml"


def test_identical_server_passes_and_drift_fails_with_its_exit_code(recorded: Path) -> None:
    same = ci(recorded)
    assert same.returncode == 0, same.stdout + same.stderr
    changed = ci(recorded, variant="changed_result")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert '"5" → "6"' in changed.stdout and "arithmetic" in changed.stdout
    removed = ci(recorded, variant="removed_tool")
    assert removed.returncode == 2, removed.stdout + removed.stderr
    assert "divide" in removed.stdout and "removed" in removed.stdout


def test_update_golden_twice_is_byte_identical_and_says_unchanged(recorded: Path) -> None:
    first = goldens(recorded.parent)
    assert set(first) == {"surface.tape.jsonl", "arithmetic.tape.jsonl"}
    again = ci(recorded, "--update-golden")
    assert again.returncode == 0
    assert goldens(recorded.parent) == first
    assert again.stdout.count("unchanged") >= 2
    text = first["arithmetic.tape.jsonl"].decode()
    assert str(recorded.parent) not in text and "duration" not in text  # no absolute paths, no timings
    # Positive control: the same update on a server whose add answers 6 rewrites that golden only,
    # and in it only the answer's line (and the footer's checksum).
    assert ci(recorded, "--update-golden", variant="changed_result").returncode == 0
    changed = goldens(recorded.parent)
    assert changed["surface.tape.jsonl"] == first["surface.tape.jsonl"]
    old, new = (t["arithmetic.tape.jsonl"].splitlines() for t in (first, changed))
    assert [(a, b) for a, b in zip(old, new, strict=True) if a != b][0][1].count(b'"text":"6"') == 1
    assert sum(a != b for a, b in zip(old, new, strict=True)) == 2


def test_update_golden_reports_what_changed(recorded: Path) -> None:
    proc = ci(recorded, "--update-golden", variant="changed_result")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "updated" in proc.stdout and "tapes/arithmetic.tape.jsonl" in proc.stdout
    assert ci(recorded, variant="changed_result").returncode == 0  # the change is now accepted
    assert ci(recorded).returncode == 1  # positive control: the old answer is now the drift


def test_a_session_without_golden_is_structural_drift_that_says_how_to_record_it(tmp_path: Path) -> None:
    proc = ci(write_config(tmp_path))
    assert proc.returncode == 2
    assert "--update-golden" in proc.stdout
    assert not (tmp_path / "tapes").exists()  # checking never writes goldens


def test_server_that_fails_to_start_exits_3_with_its_stderr_tail(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        'version: 1\nservers:\n  broken:\n    command: [{python}, -c, "import sys; sys.stderr.write(\'cannot bind socket\\\\n\'); sys.exit(1)"]\n'
        "sessions:\n  - name: s\n    server: broken\n    steps: [list_tools]\n",
    )
    proc = ci(config)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "cannot bind socket" in proc.stdout
    missing = write_config(tmp_path, "version: 1\nservers:\n  x:\n    command: [no-such-program-mcptape]\nsessions:\n  - name: s\n    server: x\n    steps: [ping]\n")
    proc = ci(missing)
    assert proc.returncode == 3 and "no-such-program-mcptape" in proc.stdout


def test_a_timed_out_session_exits_3_while_the_others_still_run(recorded: Path) -> None:
    hang = "  - name: hangs\n    server: calc\n    steps:\n      - call: hang\n        timeout: 1\n"
    config = write_config(recorded.parent, extra_sessions=hang)
    report_path = recorded.parent / "report.json"
    proc = ci(config, f"--json={report_path}")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = RunReport.from_dict(json.loads(report_path.read_text(encoding="utf-8")))
    verdicts = {s.name: s.verdict for s in report.sessions}
    assert verdicts == {"surface": "same", "arithmetic": "same", "hangs": "error"}
    hangs = next(s for s in report.sessions if s.name == "hangs")
    assert hangs.error is not None and "step 1 (call hang)" in hangs.error and "timeout" in hangs.error


def test_golden_is_untouched_when_the_session_errors(recorded: Path) -> None:
    before = goldens(recorded.parent)
    crashing = CONFIG.replace("      - call: divide\n", "      - call: crash\n      - call: divide\n")
    config = write_config(recorded.parent, crashing)
    proc = ci(config, "--update-golden")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "crashing on purpose" in proc.stdout
    assert goldens(recorded.parent) == before
    assert "not written" in proc.stdout


def test_update_golden_is_refused_in_ci_unless_allowed(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    refused = ci(config, "--update-golden", env={"CI": "true"})
    assert refused.returncode == 3 and "--allow-update-in-ci" in refused.stderr
    assert not (tmp_path / "tapes").exists()
    allowed = ci(config, "--update-golden", "--allow-update-in-ci", env={"CI": "true"})
    assert allowed.returncode == 0 and len(goldens(tmp_path)) == 2


def test_json_and_junit_reports_parse_back(recorded: Path) -> None:
    json_path, junit_path = recorded.parent / "out" / "r.json", recorded.parent / "out" / "r.xml"
    proc = ci(recorded, f"--json={json_path}", f"--junit={junit_path}", variant="changed_result")
    assert proc.returncode == 1
    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert data["exit_code"] == 1 and data["result"] == "output"
    report = RunReport.from_dict(data)
    arithmetic = next(s for s in report.sessions if s.name == "arithmetic")
    assert arithmetic.diff is not None and arithmetic.diff.first is not None
    assert arithmetic.diff.first.call is not None and arithmetic.diff.first.call.step == 1
    root = ET.parse(junit_path).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"surface", "arithmetic"}
    failure = cases["arithmetic"].find("failure")
    assert failure is not None and "tools/call add" in (failure.get("message") or "")
    assert cases["surface"].find("failure") is None


def test_breaking_schema_change_is_structural_and_bad_arguments_without_golden_are_config_errors(recorded: Path) -> None:
    proc = ci(recorded, "--session", "arithmetic", variant="required_param")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "'c' is a required property" in proc.stdout
    bad = CONFIG.replace("arguments: {{a: 2, b: 3}}", 'arguments: {{a: "two", b: 3}}')
    fresh_dir = recorded.parent / "fresh"
    fresh_dir.mkdir()
    proc = ci(write_config(fresh_dir, bad), "--session", "arithmetic")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "tool `add`" in proc.stdout and "step 1" in proc.stdout and "rule `type`" in proc.stdout
    assert "mcptape.yml:16: session arithmetic: step 1 (call add)" in proc.stdout  # file:line of the step


def test_orphan_goldens_are_reported_and_out_dir_keeps_fresh_tapes(recorded: Path) -> None:
    (recorded.parent / "tapes" / "old-session.tape.jsonl").write_bytes(
        (recorded.parent / "tapes" / "surface.tape.jsonl").read_bytes()
    )
    out = recorded.parent / "fresh-tapes"
    proc = ci(recorded, "--out-dir", str(out), f"--json={recorded.parent / 'r.json'}")
    assert proc.returncode == 0
    assert "old-session.tape.jsonl" in proc.stdout
    assert json.loads((recorded.parent / "r.json").read_text(encoding="utf-8"))["orphans"] == ["tapes/old-session.tape.jsonl"]
    # The golden's bytes (accepting a change copies them), the timing beside them (tape/timing.py).
    fresh = (out / "arithmetic.tape.jsonl").read_bytes()
    assert fresh == (recorded.parent / "tapes" / "arithmetic.tape.jsonl").read_bytes()
    assert b'"timing"' in (out / "arithmetic.tape.timing.json").read_bytes()
    # Positive control: --out-dir keeps the fresh tape, not a copy of the golden.
    assert ci(recorded, "--out-dir", str(out), variant="changed_result").returncode == 1
    assert b'"text":"6"' in (out / "arithmetic.tape.jsonl").read_bytes()


def test_session_and_shard_selection(recorded: Path) -> None:
    report_path = recorded.parent / "r.json"

    def names(*args: str) -> list[str]:
        proc = ci(recorded, f"--json={report_path}", *args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return [s["name"] for s in json.loads(report_path.read_text(encoding="utf-8"))["sessions"]]

    assert names("--session", "surface") == ["surface"]
    assert names("--shard", "1/2") == ["arithmetic"]  # sorted by name: arithmetic, surface
    assert names("--shard", "2/2") == ["surface"]
    typo = ci(recorded, "--session", "surfce")
    assert typo.returncode == 3 and "surface" in typo.stderr
