"""Side effects end to end: a server that writes into its declared sandbox, through `mcptape ci`.

The calc fixture's `note` tool writes notes.txt into $CALC_SANDBOX in variant `side_effect`
(with other content in `side_effect_changed`; variant `notes` writes nothing), and the real
server-filesystem writes with its `write_file` tool. The golden tape records the write once,
as a `side_effect` event right after the step's traffic; reruns are stable because mcptape puts
the sandbox back after each session; a new or different write is structural drift naming the
file and the step.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, calc_command, node_server, user_env
from tests.in_process import run_mcptape

CALC = """\
version: 1
golden_dir: tapes
servers:
  calc:
    command: {command}
    env: {{CALC_SANDBOX: "{sandbox}"}}
sessions:
  - name: notes
    server: calc
    sandbox: [work]
    steps:
      - call: add
        arguments: {{a: 2, b: 3}}
      - call: note
        arguments: {{text: remember the milk}}
"""


def _ci(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = user_env(PYTHONPATH=str(ROOT))
    return run_mcptape(["ci", "-c", str(config), *args], env=env, cwd=config.parent, timeout=120)


def _side_effects(tape: Path) -> list[dict]:
    events = [json.loads(line) for line in tape.read_text(encoding="utf-8").splitlines()]
    return [e for e in events if e.get("kind") == "side_effect"]


def _findings(report: Path) -> list[dict]:
    data = json.loads(report.read_text(encoding="utf-8"))
    return [f for s in data["sessions"] for d in (s["diff"] or {}).get("drifts", []) for f in d["findings"]]


def test_calc_writing_into_its_sandbox_is_a_side_effect_naming_file_and_step(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    config = tmp_path / "mcptape.yml"

    def use(variant: str) -> None:
        config.write_text(CALC.format(command=json.dumps(calc_command(variant)), sandbox=work), encoding="utf-8")

    use("notes")
    assert _ci(config, "--update-golden").returncode == 0
    assert _side_effects(tmp_path / "tapes" / "notes.tape.jsonl") == []

    use("side_effect")  # the tool starts writing where it did not
    proc = _ci(config, f"--json={tmp_path / 'r1.json'}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [finding] = [f for f in _findings(tmp_path / "r1.json") if f["category"] == "side_effect"]
    assert finding["severity"] == "structural" and finding["kind"] == "added"
    assert finding["path"] == "side_effects[notes.txt]"
    assert "step 2 (tools/call note)" in finding["message"] and "created" in finding["message"]
    assert "notes.txt" in proc.stdout
    assert list(work.iterdir()) == []  # the sandbox was put back

    assert _ci(config, "--update-golden").returncode == 0
    [event] = _side_effects(tmp_path / "tapes" / "notes.tape.jsonl")
    assert event["step"] == 2
    assert event["changes"] == [{"path": "notes.txt", "change": "created", "size": 18,
                                 "sha256": event["changes"][0]["sha256"]}]
    for _ in range(2):
        again = _ci(config)
        assert again.returncode == 0, again.stdout + again.stderr

    use("side_effect_changed")
    proc = _ci(config, f"--json={tmp_path / 'r2.json'}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [finding] = [f for f in _findings(tmp_path / "r2.json") if f["category"] == "side_effect"]
    assert finding["kind"] == "changed" and "notes.txt" in finding["message"]
    assert finding["before"]["size"] == 18 and finding["after"]["size"] == 19


FILESYSTEM = """\
version: 1
golden_dir: tapes
servers:
  fs:
    command: [node, {server}, files]
sessions:
  - name: write
    server: fs
    sandbox: [files]
    steps:
      - call: write_file
        arguments: {{path: "{files}/out.txt", content: "{content}"}}
      - call: read_text_file
        arguments: {{path: "{files}/out.txt"}}
"""


@pytest.mark.node
def test_server_filesystem_write_is_recorded_once_stable_and_a_changed_content_drifts(tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    config = tmp_path / "mcptape.yml"
    server = node_server("filesystem")
    config.write_text(FILESYSTEM.format(server=server, files=files, content="first"), encoding="utf-8")

    recorded = _ci(config, "--update-golden")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    golden = tmp_path / "tapes" / "write.tape.jsonl"
    [event] = _side_effects(golden)
    assert event["step"] == 1 and [(c["path"], c["change"], c["size"]) for c in event["changes"]] == [
        ("out.txt", "created", 5)
    ]
    assert str(tmp_path) not in golden.read_text(encoding="utf-8")
    for run in range(3):
        proc = _ci(config)
        assert proc.returncode == 0, f"run {run}: {proc.stdout}{proc.stderr}"
    assert list(files.iterdir()) == []

    config.write_text(FILESYSTEM.format(server=server, files=files, content="second!"), encoding="utf-8")
    proc = _ci(config, f"--json={tmp_path / 'r.json'}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    side = [f for f in _findings(tmp_path / "r.json") if f["category"] == "side_effect"]
    assert [f["kind"] for f in side] == ["changed"]
    assert side[0]["severity"] == "structural" and "out.txt" in side[0]["message"]
    assert "step 1 (tools/call write_file)" in side[0]["message"]
