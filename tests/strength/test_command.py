"""`mcptape check --strength` as a user types it: the report, `--json`, `drift.min_strength`'s exit 3,
the options it refuses, and the shell fixture's survivor. Offline: the CLI as a process, no server.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from mcptape.tape.format import tape_bytes
from tests.conftest import FIXTURES, mcptape_command, user_env
from tests.strength.goldens import CONFIG, SESSION, golden_events

SHELL = FIXTURES / "strength" / "shell"


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(mcptape_command(*args), cwd=cwd, env=user_env(), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    return proc


def _project(tmp_path: Path, extra: str = "", golden: bool = True) -> Path:
    (tmp_path / "mcptape.yml").write_text(CONFIG + extra, encoding="utf-8")
    if golden:
        (tmp_path / "tapes").mkdir()
        header = {"mcptape": "tape", "format": 2, "name": SESSION, "protocol": "2025-06-18"}
        (tmp_path / "tapes" / f"{SESSION}.tape.jsonl").write_bytes(tape_bytes(header, golden_events()))
    return tmp_path


def test_check_strength_reports_the_score_and_each_survivor_and_writes_json(tmp_path: Path) -> None:
    project = _project(tmp_path)
    proc = _run(project, "check", "--strength", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)  # the JSON alone on stdout; `ok:` and the text went to stderr
    assert report["mcptape_strength"] == 1 and report["survived"] == 2 and report["score"] < 100
    assert {m["verdict"] for m in report["mutants"]} == {"killed", "survived"}
    assert proc.stderr.startswith("ok: 1 session, 1 server")
    assert "gate strength " in proc.stderr and "demo · tool stats: a result's text changed; a result turned into an " \
        "error — no session of server s calls it" in proc.stderr


def test_a_gate_under_its_minimum_exits_3_naming_the_key_and_what_lets_changes_through(tmp_path: Path) -> None:
    project = _project(tmp_path, "drift:\n  min_strength: 100\n")
    proc = _run(project, "check", "--strength")
    assert proc.returncode == 3
    assert "mcptape.yml:10: drift.min_strength: the gate's strength is " in proc.stderr
    assert "under the minimum 100%" in proc.stderr and "no session asks for" in proc.stderr
    (project / "mcptape.yml").write_text(CONFIG + "drift:\n  min_strength: 50\n", encoding="utf-8")
    assert _run(project, "check", "--strength").returncode == 0  # the same gate meets a lower minimum


def test_what_strength_cannot_measure_or_was_not_asked_for_is_refused_with_exit_3(tmp_path: Path) -> None:
    project = _project(tmp_path, golden=False)
    proc = _run(project, "check", "--strength")
    assert proc.returncode == 3 and "mcptape ci --update-golden" in proc.stderr
    for args, said in [(("check", "--seed", "2"), "--seed belongs to the strength report"),
                       (("check", "--json=x.json"), "--json belongs to the strength report"),
                       (("check", "--strength", "mcptape.yml", "mcptape.yml"), "--strength measures one config's gate"),
                       (("check", "--strength", "--json=mcptape.yml"), "mcptape.yml is what this command reads"),
                       (("check", "--strength", "--json=tapes/s.json"), "that is among the golden tapes")]:
        proc = _run(project, *args)
        assert proc.returncode == 3 and said in proc.stderr, (args, proc.stderr)
    assert not (project / "x.json").exists()
    assert (project / "mcptape.yml").read_text(encoding="utf-8") == CONFIG  # never written onto


def test_the_shell_fixtures_placeholder_over_the_allowed_commands_is_named_as_a_survivor() -> None:
    proc = _run(SHELL, "check", "--strength")
    assert proc.returncode == 0
    assert ("shell · tool get_commands: a description changed (description: the value <COMMANDS> stands for) — "
            "masked by mcptape.yml:18: normalize rule `pattern: (?<=Allowed commands: ).+` → `<COMMANDS>`") in proc.stdout
