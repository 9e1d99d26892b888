"""The surface review through `mcptape ci` and the Action: the calc fixture poisoned, reworded, renamed.

Goldens are recorded once from the fixture as it is (`identical`); each test then runs `ci` with
the server in another variant (fixtures/servers/calc_server.py: `poisoned` adds Invariant Labs'
<IMPORTANT> instructions, a sensitive path and a zero-width space to `add`'s description;
`reworded` rewrites it at length in ordinary prose that says "ignore case"; `renamed` lists
`divide` as `div`). The same goldens checked against the unchanged server are green, which is
what makes each finding the change's. The bundled example (fixtures/example) gives the coverage
and context-cost lines of its job summary.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.action_runner import ActionRunner, shared_runner_temp
from tests.conftest import CALC_SERVER, ROOT, mcptape_command, user_env
from tests.github_fake import FakeGitHub, Token

# test_ci's goldens, recorded once per module from the unchanged fixture, copied per test
from tests.integration.test_ci import CONFIG, ci, recorded, recorded_once, write_config  # noqa: F401


def run(config: Path, variant: str | None, *extra: str) -> tuple[int, dict, str, dict]:
    """ci with --json, --summary and --sarif: (exit code, JSON report, summary, SARIF log)."""
    out = config.parent / "out"
    # VARIANT for the configs here, MCPTAPE_FIXTURE_VARIANT for the bundled example's
    env = {"MCPTAPE_FIXTURE_VARIANT": variant} if variant else {}
    proc = ci(config, f"--json={out / 'r.json'}", f"--summary={out / 's.md'}", f"--sarif={out / 'r.sarif'}",
              *extra, variant=variant, env=env)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return (proc.returncode, json.loads((out / "r.json").read_text(encoding="utf-8")),
            (out / "s.md").read_text(encoding="utf-8"), json.loads((out / "r.sarif").read_text(encoding="utf-8")))


def security_kinds(report: dict) -> list[str]:
    return sorted(f["kind"] for s in report["sessions"] if s["diff"] for d in s["diff"]["drifts"]
                  for f in d["findings"] if f["category"] == "security")


def test_a_poisoned_description_fails_the_gate_and_is_named_in_the_summary_and_sarif(recorded: Path) -> None:  # noqa: F811
    code, report, summary, sarif = run(recorded, None)
    assert code == 0 and security_kinds(report) == [] and sarif["runs"][0]["results"] == []  # the control
    code, report, summary, sarif = run(recorded, "poisoned")
    assert code == 2, summary
    # One finding per rule and field, in both sessions (the client lists the tools before it calls one)
    assert security_kinds(report) == ["instruction", "instruction", "invisible", "invisible", "sensitive", "sensitive"]
    assert "⚠️ security review" in summary.splitlines()[0]
    head = next(line for line in summary.splitlines() if line.startswith("**Security review: 3 findings**"))
    assert '"<IMPORTANT>", "Before using any other tool", "Do not tell the user" and 1 more' in head
    assert "(` security.instruction `)" in head
    assert "\\u200b" in summary and "\u200b" not in summary  # the invisible character shown as an escape
    results = sarif["runs"][0]["results"]
    assert len(results) == 6 and {r["level"] for r in results} == {"error"}
    location = results[0]["locations"][0]["physicalLocation"]
    golden = recorded.parent / "tapes" / "surface.tape.jsonl"
    assert (recorded.parent / "out").resolve().parent / location["artifactLocation"]["uri"] == golden.resolve()
    line = golden.read_text(encoding="utf-8").splitlines()[location["region"]["startLine"] - 1]
    assert '"method":"tools/list"' in line and '"result"' in line  # the golden tape's answer the finding is about


def test_fail_on_sets_the_security_category(recorded: Path) -> None:  # noqa: F811
    text = recorded.read_text(encoding="utf-8") + "drift:\n  fail_on: {security: output}\n"
    recorded.write_text(text, encoding="utf-8")
    code, report, _, sarif = run(recorded, "poisoned")
    assert code == 1 and len(security_kinds(report)) == 6
    assert {r["level"] for r in sarif["runs"][0]["results"]} == {"warning"}


def test_an_ordinary_rewording_is_cosmetic_not_security(recorded: Path) -> None:  # noqa: F811
    code, report, summary, _ = run(recorded, "reworded")
    assert code == 1, summary  # output drift: a description reworded
    assert security_kinds(report) == [] and "Security review" not in summary


def test_a_rename_is_one_structural_finding(recorded: Path) -> None:  # noqa: F811
    code, report, summary, _ = run(recorded, "renamed")
    assert code == 2
    surface = next(s for s in report["sessions"] if s["name"] == "surface")
    findings = [(f["category"], f["kind"]) for d in surface["diff"]["drifts"] for f in d["findings"]]
    assert findings == [("surface", "renamed")]
    assert "renamed to `div`" in summary or "renamed to div" in summary


def test_the_budget_fails_when_exceeded_and_not_otherwise(recorded: Path) -> None:  # noqa: F811
    base = recorded.read_text(encoding="utf-8")
    code, report, summary, _ = run(recorded, None)
    surface = next(s for s in report["sessions"] if s["name"] == "surface")
    total = sum(surface["surface_facts"]["size"].values())
    assert total > 1000 and f"{total:,}".replace(",", "\u202f") + " bytes" in summary
    recorded.write_text(base + f"drift:\n  budget: {total}\n", encoding="utf-8")
    assert run(recorded, None)[0] == 0  # exactly at the budget: not exceeded
    recorded.write_text(base + f"drift:\n  budget: {total - 1}\n", encoding="utf-8")
    code, report, summary, _ = run(recorded, None)
    assert code == 2
    kinds = [(f["category"], f["kind"]) for s in report["sessions"] if s["diff"] for d in s["diff"]["drifts"]
             for f in d["findings"]]
    assert kinds == [("context", "budget")] * 2  # each session lists the tools (the client does before a call)
    # and the delta a growing description costs every agent, named per tool
    recorded.write_text(base, encoding="utf-8")
    code, report, summary, _ = run(recorded, "reworded")
    cost = next(line for line in summary.splitlines() if line.startswith("Context cost of"))
    grown = len("Add two numbers and return their sum. Both may be integers or decimals; matching of units can "
                "ignore case. Very large values lose precision the way floating point numbers do, so compare "
                "results with a tolerance when the operands come from measurements.") - len("Add two numbers.")
    assert f"(+{grown} bytes: ` add ` +{grown})" in cost


def test_coverage_of_the_bundled_example(tmp_path: Path) -> None:
    work = tmp_path / "example"
    shutil.copytree(ROOT / "fixtures" / "example", work, ignore=shutil.ignore_patterns("demo.py", "__pycache__"))
    shutil.copytree(ROOT / "fixtures" / "servers", tmp_path / "servers", ignore=shutil.ignore_patterns("__pycache__"))
    config = work / "mcptape.yml"
    junit = config.parent / "out" / "r.xml"
    code, report, summary, sarif = run(config, None, f"--junit={junit}")
    assert code == 0, summary
    coverage = next(line for line in summary.splitlines() if line.startswith("Coverage of"))
    assert "3 of 9 tools, 1 of 1 prompts, 1 of 1 resources called by a session" in coverage
    assert "not called: ` crash `, ` garbage `, ` big `" in coverage
    # Every report gives coverage and context cost, not the markdown alone: JSON and SARIF as data,
    # JUnit as the suite's properties, the terminal as a line per server.
    [server] = report["surface"]
    assert server["coverage"]["tools"]["called"] == 3 and server["coverage"]["tools"]["listed"] == 9
    assert server["coverage"]["tools"]["not_called"][:3] == ["crash", "garbage", "big"]
    assert server["context_cost"]["total"] > 0 and server["context_cost"]["unit"] == "bytes"
    assert sarif["runs"][0]["properties"]["mcptape"]["surface"] == report["surface"]
    properties = {p.get("name"): p.get("value", "") for p in ET.parse(junit).iter("property")}
    assert "3 of 9 tools, 1 of 1 prompts, 1 of 1 resources called by a session; not called: crash, garbage, big" \
        in properties[f"mcptape.coverage.{server['server']}"]
    assert "bytes of tools and instructions" in properties[f"mcptape.context_cost.{server['server']}"]
    terminal = ci(config, variant=None).stdout
    assert f"coverage of {server['server']}: 3 of 9 tools, 1 of 1 prompts, 1 of 1 resources called" in terminal
    assert f"context cost of {server['server']}: " in terminal
    code, _, summary, _ = run(config, "added_tool")
    assert code == 2
    assert "New tool ` multiply ` is called by no session" in summary


# --- through action.yml's own steps ----------------------------------------------------------------


def test_the_action_uploads_the_sarif_of_a_poisoned_description(tmp_path_factory: pytest.TempPathFactory,
                                                                  tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(ROOT / "fixtures" / "example", ws / "fixtures" / "example",
                    ignore=shutil.ignore_patterns("demo.py", "__pycache__"))
    shutil.copytree(ROOT / "fixtures" / "servers", ws / "fixtures" / "servers", ignore=shutil.ignore_patterns("__pycache__"))
    github = FakeGitHub(tokens={"ghs_job_token": Token("github-actions[bot]", app=True)}).start()
    try:
        runner = ActionRunner(shared_runner_temp(tmp_path_factory), github)
        inputs = {"config": "fixtures/example/mcptape.yml", "sarif": "true"}
        clean = runner.run(ws, inputs)
        assert clean.result == "success", clean.log
        [sarif] = [u for u in clean.artifacts if "upload-sarif" in u.uses]
        assert json.loads(sarif.files["mcptape.sarif"])["runs"][0]["results"] == []
        poisoned = runner.run(ws, inputs, env={"MCPTAPE_FIXTURE_VARIANT": "poisoned"})
        assert poisoned.result == "failure" and poisoned.outputs["result"] == "structural", poisoned.log
        [sarif] = [u for u in poisoned.artifacts if "upload-sarif" in u.uses]
        assert sarif.inputs["category"] == "mcptape"
        results = json.loads(sarif.files["mcptape.sarif"])["runs"][0]["results"]
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
        # relative to the workspace; arithmetic's client lists the tools before its first call
        assert uris == {"fixtures/example/tapes/surface.tape.jsonl", "fixtures/example/tapes/arithmetic.tape.jsonl"}
        [comment] = poisoned.comments
        assert "Security review" in comment["body"] and "\u200b" not in comment["body"].replace("<\u200b!--", "")
        off = runner.run(ws, {"config": "fixtures/example/mcptape.yml"}, env={"MCPTAPE_FIXTURE_VARIANT": "poisoned"})
        assert not [u for u in off.artifacts if "upload-sarif" in u.uses]  # only when asked
    finally:
        github.stop()


# --- first contact: check --surface and init ---------------------------------------------------------


def check_surface(config: Path, variant: str | None) -> subprocess.CompletedProcess[str]:
    env = user_env(PYTHONPATH=str(ROOT))
    env.pop("VARIANT", None)
    env.update({"VARIANT": variant} if variant else {})
    return subprocess.run(mcptape_command("check", "--surface", "-c", str(config)), capture_output=True, text=True,
                          env=env, cwd=config.parent, timeout=120, check=False)


def test_check_surface_reviews_a_live_servers_whole_surface(tmp_path: Path) -> None:
    config = write_config(tmp_path, CONFIG)
    clean = check_surface(config, None)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "server calc: 9 tools, 1 prompt, 1 resource, 0 resource templates" in clean.stdout
    assert "security review: no findings" in clean.stdout
    poisoned = check_surface(config, "poisoned")
    assert poisoned.returncode == 2, poisoned.stdout + poisoned.stderr
    rows = [line.split() for line in poisoned.stdout.splitlines() if line.startswith(("instruction", "sensitive",
                                                                                     "invisible"))]
    assert [(r[0], r[2], r[3], r[4]) for r in rows] == [
        ("instruction", "tool", "add", "description"), ("sensitive", "tool", "add", "description"),
        ("invisible", "tool", "add", "description")]
    assert "\\u200b" in poisoned.stdout and "\u200b" not in poisoned.stdout
    hostile = check_surface(config, "hostile_names")
    assert hostile.returncode == 2 and "add\\u202e" in hostile.stdout and "\x1b" not in hostile.stdout
    (tmp_path / "relaxed").mkdir()
    relaxed = write_config(tmp_path / "relaxed", CONFIG + "drift:\n  fail_on: {{security: info}}\n")
    shown = check_surface(relaxed, "poisoned")
    assert shown.returncode == 0 and "instruction [info]" in shown.stdout


def test_init_prints_the_review_of_what_it_listed(tmp_path: Path) -> None:
    env = user_env(PYTHONPATH=str(ROOT))
    proc = subprocess.run(mcptape_command("init", "--no-trial", "--", sys.executable, str(CALC_SERVER), "--variant",
                                          "poisoned"), capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    review = proc.stdout.split("security review of the listed surface", 1)[1]
    assert "instruction" in review and "tool add" in review and "<IMPORTANT>" in review
    clean = subprocess.run(mcptape_command("init", "-o", "clean.yml", "--no-trial", "--", sys.executable,
                                           str(CALC_SERVER)), capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=120, check=False)
    assert clean.returncode == 0 and "security review: no findings" in clean.stdout
