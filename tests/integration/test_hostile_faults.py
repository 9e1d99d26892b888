"""Hostile input and faults (issue 27), as users meet them: real mcptape processes over real pipes.

- A 1 MB anchored string used 200 times in call arguments: exit 3 with file:line, in bounded memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, mcptape_command, user_env
from tests.integration.test_hostile import _PEAK_RSS, WAIT, write_config


def peak_run(*args: str, cwd: Path) -> tuple[int, bytes, float]:
    """Exit code, stderr and peak RSS in MB of one `mcptape` process (os.wait4, see _PEAK_RSS)."""
    proc = subprocess.Popen([sys.executable, "-c", _PEAK_RSS, *mcptape_command(*args)], cwd=cwd,
                            env=user_env(PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        raise AssertionError(f"mcptape {args[0]} still running after {WAIT}s") from None
    return proc.returncode, stderr, int(stdout.decode().strip().splitlines()[-1]) / 1024


def test_a_large_anchored_string_repeated_by_aliases_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    aliases = "\n".join(f"          a{i}: *big" for i in range(200))
    sessions = (
        "  - name: big\n    server: calc\n    steps:\n      - call: echo\n        arguments:\n"
        f"          seed: &big \"{'x' * 1024 * 1024}\"\n{aliases}\n"
    )
    config = write_config(tmp_path, sessions)
    line = config.read_text(encoding="utf-8").splitlines().index("        arguments:") + 1
    for command in ("check", "ci"):
        code, stderr, peak_mb = peak_run(command, "-c", str(config), cwd=tmp_path)
        assert code == 3, stderr.decode(errors="replace")[-2000:]
        assert b"Traceback" not in stderr
        assert f"{config}:{line}: sessions[0].steps[0].arguments: YAML aliases (`*name`) here expand the file to more than 4 MB of repeated text".encode() in stderr, stderr[-2000:]
        assert b"write the repeated parts out" in stderr
        assert peak_mb < 100, f"{command}: peak RSS {peak_mb:.0f} MB"
    assert not (tmp_path / "tapes").exists()


def test_an_anchored_string_repeated_a_few_times_is_fine(tmp_path: Path) -> None:
    # The bound is on repeated text, not on aliases: shared arguments stay usable.
    aliases = "\n".join(f"          a{i}: *small" for i in range(50))
    sessions = (
        "  - name: small\n    server: calc\n    steps:\n      - call: echo\n        arguments:\n"
        f"          seed: &small {json.dumps('y' * 1000)}\n{aliases}\n"
    )
    config = write_config(tmp_path, sessions)
    code, stderr, _ = peak_run("check", "-c", str(config), cwd=tmp_path)
    assert code == 0, stderr.decode(errors="replace")
