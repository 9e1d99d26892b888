"""Seals end to end: `mcptape ci` refusing a tampered golden with its line (and --allow-edited,
and -u replacing it), and a real `mcptape rec` killed mid-session whose tape verifies up to its
last complete event and still plays."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from mcptape.tape.reader import read_tape
from tests.conftest import ROOT, mcptape_command, user_env
from tests.integration.test_ci import ci, write_config
from tests.integration.test_rec import killed_rec


def verify(*tapes: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(mcptape_command("verify", *map(str, tapes)), capture_output=True, text=True, timeout=60,
                          env=user_env(PYTHONPATH=str(ROOT)))


def test_ci_refuses_a_tampered_golden_naming_its_line(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    assert ci(config, "--update-golden").returncode == 0
    golden = tmp_path / "tapes" / "arithmetic.tape.jsonl"
    sealed = golden.read_bytes()
    assert verify(golden).returncode == 0
    assert ci(config).returncode == 0  # the control: sealed and unchanged, no drift

    lines = sealed.split(b"\n")
    [number] = [n for n, line in enumerate(lines, start=1) if b'"text":"5"' in line]
    lines[number - 1] = lines[number - 1].replace(b'"text":"5"', b'"text":"6"')
    golden.write_bytes(b"\n".join(lines))
    checked = verify(golden)
    assert checked.returncode == 3 and checked.stdout.startswith(f"{golden}:{number}: this line is not the one sealed")

    refused = ci(config, "--json")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    [session] = [s for s in json.loads(refused.stdout)["sessions"] if s["name"] == "arithmetic"]
    assert f"arithmetic.tape.jsonl:{number}: this line is not the one sealed" in session["error"]
    assert "--allow-edited" in session["error"]

    allowed = ci(config, "--json", "--allow-edited")  # read anyway: the edit is drift, and said
    assert allowed.returncode == 1, allowed.stdout + allowed.stderr
    [session] = [s for s in json.loads(allowed.stdout)["sessions"] if s["name"] == "arithmetic"]
    assert session["verdict"] == "output"
    assert any(note.startswith("--allow-edited: ") and f":{number}: " in note for note in session["notes"])

    assert ci(config, "--update-golden").returncode == 0  # accepting replaces it, sealed again
    assert golden.read_bytes() == sealed
    assert ci(config, "--update-golden").returncode == 0 and golden.read_bytes() == sealed  # unchanged: same bytes


def test_rec_killed_mid_session_verifies_up_to_its_last_complete_event_and_plays(tmp_path: Path) -> None:
    tape = tmp_path / "killed.tape.jsonl"
    killed_rec(tape)
    t = read_tape(tape)
    assert not t.complete and b'{"mcptape":"seal"' in tape.read_bytes()
    checked = verify(tape)
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout == f"{tape}: cut short; verified up to line {t.event_lines[-1]}, its last complete event\n"

    request = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                          "params": {"name": "add", "arguments": {"a": 2, "b": 2}}}) + "\n"
    played = subprocess.run(mcptape_command("play", str(tape)), input=request, capture_output=True, text=True,
                            timeout=60, env=user_env(PYTHONPATH=str(ROOT)))
    assert played.returncode == 0, played.stderr
    assert json.loads(played.stdout)["id"] == 7 and "cut short" in played.stderr

    # The same tape with a line changed is refused, by verify and by play.
    lines = tape.read_bytes().split(b"\n")
    [number] = [n for n, line in enumerate(lines, start=1) if b'"arguments":{"a":2,"b":2}' in line and b"c2s" in line]
    lines[number - 1] = lines[number - 1].replace(b'"a":2,"b":2', b'"a":3,"b":2')
    tape.write_bytes(b"\n".join(lines))
    checked = verify(tape)
    assert checked.returncode == 3 and checked.stdout.startswith(f"{tape}:{number}: ")
