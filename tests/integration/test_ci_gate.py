"""What the ci gate judges beyond plain drift, end to end with real mcptape processes and servers:

- a secret found by its shape is redacted with a keyed tag, so a rotated token gets a new
  placeholder; that must not fail the gate (diff compares placeholders without their tags);
- the fresh tape's MCP conformance (mcptape/conformance/): a nonconformant server fails
  `mcptape ci` (exit 2, the finding's path in the report) even when its golden tape was
  recorded from the same broken server; `--update-golden` writes the golden anyway but says so.
"""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path

from mcptape.verdict.model import RunReport
from tests.conftest import FIXTURES, ROOT
from tests.in_process import run_mcptape

SECRET_ECHO = FIXTURES / "servers" / "secret_echo_server.py"
NONCONFORMANT = FIXTURES / "servers" / "nonconformant_server.py"


def ci(config: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    run_env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "VARIANT")}
    run_env["PYTHONPATH"] = str(ROOT)
    run_env.update(env or {})
    return run_mcptape(["ci", "-c", str(config), *args], env=run_env, cwd=config.parent, timeout=180)


def report(path: Path) -> RunReport:
    return RunReport.from_dict(json.loads(path.read_text(encoding="utf-8")))


# --- rotated secrets ---------------------------------------------------------------------------

# The token reaches the server's environment through a file, not through mcptape.yml's `env:`
# (values there are known secrets, redacted by name without a tag), so only its shape finds it.
ECHO_CONFIG = """\
version: 1
golden_dir: tapes
servers:
  echo:
    command: [sh, -c, 'GH_TOKEN="$(cat token.txt)" exec "$0" "$1"', {python}, {server}]
sessions:
  - name: token
    server: echo
    steps:
      - call: echo_env
        arguments: {{name: GH_TOKEN}}
      - call: echo_result
        arguments: {{text: "static"}}
"""


def github_token(rng: random.Random) -> str:
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


def test_a_rotated_token_is_not_drift(tmp_path: Path) -> None:
    config = tmp_path / "mcptape.yml"
    config.write_text(ECHO_CONFIG.format(python=json.dumps(sys.executable), server=json.dumps(str(SECRET_ECHO))),
                      encoding="utf-8")
    rng = random.Random(7)
    old, new = github_token(rng), github_token(rng)
    (tmp_path / "token.txt").write_text(old, encoding="utf-8")
    proc = ci(config, "--update-golden")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    golden = (tmp_path / "tapes" / "token.tape.jsonl").read_text(encoding="utf-8")
    assert old not in golden and "<REDACTED:github-token#" in golden  # a tagged placeholder was recorded

    (tmp_path / "token.txt").write_text(new, encoding="utf-8")
    proc = ci(config, f"--json={tmp_path / 'report.json'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert new not in proc.stdout and report(tmp_path / "report.json").sessions[0].verdict == "same"

    # A different text around the placeholder is still drift.
    (tmp_path / "token.txt").write_text("prefix-" + new, encoding="utf-8")
    assert ci(config).returncode == 1


# --- conformance ---------------------------------------------------------------------------------

NONCONFORMANT_CONFIG = """\
version: 1
golden_dir: tapes
servers:
  weather:
    command: [{python}, {server}]
    env:
      MCPTAPE_FIXTURE_VARIANT: "${{VARIANT:-clean}}"
sessions:
  - name: weather
    server: weather
    steps:
      - list_tools
      - call: weather
        arguments: {{city: Paris}}
"""


def write_nonconformant(directory: Path, extra: str = "") -> Path:
    config = directory / "mcptape.yml"
    body = NONCONFORMANT_CONFIG.format(python=json.dumps(sys.executable), server=json.dumps(str(NONCONFORMANT)))
    config.write_text(body + extra, encoding="utf-8")
    return config


def conformance_paths(run: RunReport) -> list[str]:
    return [f.path for s in run.sessions if s.diff for d in s.diff.drifts for f in d.findings
            if f.category == "conformance" and f.severity != "info"]


def test_a_server_that_breaks_the_schema_fails_the_gate_and_its_known_violations_are_a_baseline(tmp_path: Path) -> None:
    # Issue 18: conformance findings the golden already holds are known (reported, info) and do not
    # fail an unchanged server every run; a violation the golden does not hold fails the gate.
    config = write_nonconformant(tmp_path)
    broken = {"VARIANT": "bad_structured"}
    assert ci(config, "--update-golden").returncode == 0  # a golden of the clean server

    proc = ci(config, f"--json={tmp_path / 'report.json'}", env=broken)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    run = report(tmp_path / "report.json")
    assert run.sessions[0].verdict == "structural"
    paths = conformance_paths(run)
    # "<tape line>:<path in the message>": the weather call's response, its two broken fields.
    assert any(p.endswith(":result.structuredContent.temp_c") for p in paths), paths
    assert any(p.endswith(":result.structuredContent.unit") for p in paths), paths
    assert "result.structuredContent.temp_c" in proc.stdout

    # The project can decide conformance only informs: what is left is the changed output (exit 1).
    relaxed = write_nonconformant(tmp_path, "drift:\n  conformance: info\n")
    proc = ci(relaxed, f"--json={tmp_path / 'relaxed.json'}", env=broken)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert conformance_paths(report(tmp_path / "relaxed.json")) == []
    config = write_nonconformant(tmp_path)

    # Accepting the broken server's golden is not blocked, but the person accepting it is told.
    proc = ci(config, "--update-golden", env=broken)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "conformance" in proc.stdout and "structuredContent" in proc.stdout
    # Against that golden the same violations are known: reported, not failing.
    proc = ci(config, f"--json={tmp_path / 'report.json'}", env=broken)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    known = [f for s in report(tmp_path / "report.json").sessions if s.diff for d in s.diff.drifts
             for f in d.findings if f.category == "conformance"]
    assert known and all(f.severity == "info" and f.message.startswith("known: ") for f in known), known


def test_without_a_golden_the_conformance_findings_are_in_the_report(tmp_path: Path) -> None:
    config = write_nonconformant(tmp_path)
    proc = ci(config, f"--json={tmp_path / 'report.json'}", env={"VARIANT": "no_input_schema"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    paths = conformance_paths(report(tmp_path / "report.json"))
    assert any(p.endswith(":result.tools[0].inputSchema") for p in paths), paths


def test_a_conformant_server_and_the_bundled_example_pass(tmp_path: Path) -> None:
    config = write_nonconformant(tmp_path)
    proc = ci(config, "--update-golden")
    assert proc.returncode == 0 and "conformance" not in proc.stdout, proc.stdout + proc.stderr
    assert ci(config).returncode == 0
    assert ci(config, env={"VARIANT": "bad_structured"}).returncode == 2  # positive control: the server breaks
    example = ci(FIXTURES / "example" / "mcptape.yml")
    assert example.returncode == 0, example.stdout + example.stderr
    changed = ci(FIXTURES / "example" / "mcptape.yml", env={"MCPTAPE_FIXTURE_VARIANT": "changed_result"})
    assert changed.returncode == 1 and '"5" → "6"' in changed.stdout, changed.stdout + changed.stderr
