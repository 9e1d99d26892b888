"""`mcptape ci --repeat N` against the real reference servers: it finds what is volatile, and its rules work.

One config with three sessions, run in parallel (`--jobs 3`), each session 5 times in a row:
  - time (mcp-server-time): its clock, `datetime`, which the built-in <TIMESTAMP> rule already
    handles — reported as "already normalized", not as work for the user;
  - everything (server-everything): `toggle-simulated-logging` sends one log message with a random
    level and text at once (toggled off again, so the server exits on EOF), and a dynamic resource
    says "created at <local time>";
  - filesystem (server-filesystem): writes a file into its sandbox each run (restored between runs),
    so `get_file_info` prints new created/modified/accessed times every run.
Then the printed rules are pasted into the config as they are, and 5 further `mcptape ci` runs
against freshly recorded goldens must all exit 0: no false drift.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, node_server, user_env
from tests.in_process import run_mcptape

pytestmark = pytest.mark.node

CONFIG = """\
version: 1
golden_dir: tapes
servers:
  time:
    command: [{python}, -m, mcp_server_time, --local-timezone, UTC]
  everything:
    command: [node, {everything}, stdio]
  filesystem:
    command: [node, {filesystem}, files]
sessions:
  - name: time
    server: time
    steps:
      - call: get_current_time
        arguments: {{timezone: Asia/Tokyo}}
  - name: everything
    server: everything
    steps:
      - call: toggle-simulated-logging
      - read_resource: demo://resource/dynamic/text/1
      - call: toggle-simulated-logging
  - name: filesystem
    server: filesystem
    sandbox: [files]
    steps:
      - call: write_file
        arguments: {{path: "{files}/out.txt", content: "written by the tool"}}
      - call: get_file_info
        arguments: {{path: "{files}/out.txt"}}
"""


def _already_normalized(report: str) -> list[str]:
    """The places `--repeat` lists as already handled by normalization, every session's: the
    lines indented under each "already normalized" header, up to the first line that is not."""
    out: list[str] = []
    indent: int | None = None
    for line in report.splitlines():
        if "already normalized" in line:
            indent = len(line) - len(line.lstrip())
        elif indent is not None and line.startswith(" " * (indent + 1)):
            out.append(line.strip())
        else:
            indent = None
    return out


def _ci(config: Path, *args: str, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    env = user_env(PYTHONPATH=str(ROOT))
    return run_mcptape(["ci", "-c", str(config), "--jobs", "3", *args], env=env, cwd=config.parent, timeout=timeout)


def test_repeat_finds_volatile_paths_and_its_rules_give_zero_false_drift(tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello\n", encoding="utf-8")
    config = tmp_path / "mcptape.yml"
    base = CONFIG.format(python=sys.executable, everything=node_server("everything"),
                         filesystem=node_server("filesystem"), files=files)
    config.write_text(base, encoding="utf-8")

    doctor = _ci(config, "--repeat", "5")
    out = doctor.stdout
    assert doctor.returncode == 1, out + doctor.stderr
    # time: the clock is found, in the structured result and inside the JSON text copy, and is already handled
    assert "result.structuredContent.datetime" in out and "result.content[0].text(json).datetime" in out
    assert "already normalized" in out
    # everything: the random log level and text; the resource's local time (`h:mm:ss AM/PM`) and
    # filesystem's file times (JavaScript Date.toString()) are found too, and are built-in rules'
    # work since issue 18: reported as already normalized, with no rule for the user to paste.
    assert '- path: "$..level"' in out
    assert "params.data" in out
    handled = "\n".join(_already_normalized(out))
    assert "resources/read demo://resource/dynamic/text/1" in handled and "result.contents[0].text" in handled, out
    assert "tools/call get_file_info" in handled, out
    assert "created at" not in out.split("\nnormalize:\n")[-1] and "(?<=created: )" not in out
    assert not (tmp_path / "tapes").exists()  # --repeat never writes goldens
    assert sorted(p.name for p in files.iterdir()) == ["hello.txt"]  # sandbox restored after every run
    assert str(tmp_path) not in out

    # Paste the block as printed, then record goldens and check 5 times.
    block = out[out.index("\nnormalize:\n") + 1:].split("\n\n")[0]
    pasted = yaml.safe_load(block)["normalize"]
    assert all(set(rule) == {"path", "replace", "reason"} or set(rule) == {"pattern", "replace", "reason"}
               for rule in pasted)
    config.write_text(base + block + "\n", encoding="utf-8")

    recorded = _ci(config, "--update-golden")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    for run in range(1, 6):
        proc = _ci(config)
        assert proc.returncode == 0, f"run {run} drifted:\n{proc.stdout}\n{proc.stderr}"

    # Positive control: the pasted rules do not hide a real change (the file written is longer now:
    # a different side effect, structural, and the size get_file_info prints).
    config.write_text(base.replace("written by the tool", "written by the changed tool") + block + "\n",
                      encoding="utf-8")
    changed = _ci(config, "--session", "filesystem")
    assert changed.returncode == 2, changed.stdout + changed.stderr
    assert "different side effect" in changed.stdout and '"size: 19' in changed.stdout
