"""mcptape/ci/baseline.py on plain data: release honesty, learned volatility, and how a report
without goldens reads (the processes and git repositories are in tests/integration/test_ci_baseline.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcptape.ci.baseline import Learned, against_server, learn, release_finding
from mcptape.ci.merge import load_report, merge_reports
from mcptape.ci.repeat import LiveRun
from mcptape.config.models import Config, DriftSettings, HttpServer, StdioServer
from mcptape.errors import ConfigError
from mcptape.live.client import Recording
from mcptape.report.markdown import render_comment, render_summary
from mcptape.verdict.model import DiffResult, Drift, Finding, RunReport, SessionResult, SurfaceChanges


def removed(tool: str) -> DiffResult:
    finding = Finding(category="surface", kind="removed", severity="structural", path=f"result.tools[{tool}]",
                      message=f"tool `{tool}` removed")
    return DiffResult(verdict="structural", drifts=[Drift(call=None, findings=[finding])],
                      surface=SurfaceChanges(removed=[tool]))


@pytest.mark.parametrize(("old", "new", "kind"), [("2.3.1", "2.3.2", "patch"), ("v1.4.0", "v1.5.0", "minor"),
                                                  ("1.0.0", "1.0.1-beta.1", "patch")])
def test_a_structural_drift_under_a_patch_or_minor_bump_is_named(old: str, new: str, kind: str) -> None:
    f = release_finding(old, new, removed("search"), DriftSettings())
    assert f is not None
    assert (f.category, f.kind, f.severity) == ("release", kind, "info")
    assert f.message == f"{old} → {new} removes tool `search`: a breaking change in a {kind} release"


@pytest.mark.parametrize(("old", "new"), [("2.3.1", "3.0.0"), ("2.3.1", "2.3.1"), ("2.3.2", "2.3.1"),
                                          ("2.3.1", None), ("nightly", "2.3.2")])
def test_a_major_bump_the_same_version_a_downgrade_or_no_semver_is_not_a_release_finding(old: str, new: str | None) -> None:
    assert release_finding(old, new, removed("search"), DriftSettings()) is None


def test_output_drift_is_not_a_release_finding_and_fail_on_sets_the_severity() -> None:
    output = DiffResult(verdict="output")
    assert release_finding("1.0.0", "1.0.1", output, DriftSettings()) is None
    strict = DriftSettings(fail_on={"release.patch": "structural"})
    assert release_finding("1.0.0", "1.0.1", removed("x"), strict).severity == "structural"  # type: ignore[union-attr]
    assert release_finding("1.0.0", "1.1.0", removed("x"), strict).severity == "info"  # type: ignore[union-attr]


def run(*events: dict[str, Any]) -> LiveRun:
    return LiveRun(normalized=list(events), raw=list(events), recording=Recording(events=list(events)))


def answer(step: int, text: str) -> dict[str, Any]:
    return {"kind": "response", "dir": "s2c", "method": "tools/call", "name": "ticket", "step": step,
            "msg": {"jsonrpc": "2.0", "id": step, "result": {"content": [{"type": "text", "text": text}]}}}


def test_what_varies_between_the_reference_runs_becomes_a_rule_and_what_does_not_stays() -> None:
    learned = learn([run(answer(1, "ticket abcdefgh12 for you"), answer(2, "stable")),
                     run(answer(1, "ticket zyxwvuts98 for you"), answer(2, "stable"))])
    assert len(learned.rules) == 1 and learned.ignore == []
    rule = learned.rules[0]
    assert "pattern" in rule or "path" in rule
    assert learn([run(answer(1, "a"), answer(2, "b")), run(answer(1, "a"), answer(2, "b"))]) == Learned([], [])
    lines = learned.lines("s")
    assert len(lines) == 1 and lines[0].startswith("s: normalized `")


def test_against_names_a_server_a_url_or_a_command(tmp_path: Path) -> None:
    cfg = Config.model_validate({"servers": {"py": {"command": ["python", "calc.py"]}},
                                 "sessions": [{"name": "s", "server": "py", "steps": ["list_tools"]}]})
    assert against_server(cfg, "py") == ("py", cfg.servers["py"])
    name, server = against_server(cfg, "http://127.0.0.1:9/mcp")
    assert isinstance(server, HttpServer) and name == "http://127.0.0.1:9/mcp"
    name, server = against_server(cfg, "node port/dist/index.js --stdio")
    assert isinstance(server, StdioServer) and name == "index.js" and server.command[-1] == "--stdio"
    with pytest.raises(ConfigError, match="neither a server of mcptape.yml"):
        against_server(cfg, "pyy")


def compared_report(verdict: str = "output") -> RunReport:
    finding = Finding(category="result", kind="changed", severity="output", path="result.content[0].text",
                      message='"5" → "6"', before="5", after="6")
    diff = DiffResult(verdict="output", drifts=[Drift(call=None, findings=[finding])], a="base", b="head")
    return RunReport(config="mcptape.yml",
                     sessions=[SessionResult(name="arith", verdict=verdict, diff=diff if verdict != "same" else None)],  # type: ignore[arg-type]
                     compared="against the merge base `abc1234` with `main`",
                     comparison=["arith: normalized `$..ticket` → <TICKET> (2 different values in 2 runs)"])


def test_the_comment_says_what_was_compared_and_offers_no_accept_flow() -> None:
    report = compared_report()
    for doc in (render_comment(report, "<!-- mcptape:mcptape.yml -->"), render_summary(report)):
        assert "against the merge base ` abc1234 ` with ` main `" in doc
        assert "$..ticket" in doc
        assert "How to accept it" not in doc and "--update-golden" not in doc
    golden = RunReport(config="mcptape.yml", sessions=report.sessions)  # the same drift against goldens
    assert "How to accept it" in render_summary(golden)


def test_json_reports_and_merged_shards_keep_what_was_compared(tmp_path: Path) -> None:
    report = compared_report()
    assert RunReport.from_dict(json.loads(json.dumps(report.to_dict()))) == report
    paths = []
    for i, name in enumerate(("a", "b"), start=1):
        shard = compared_report("same")
        shard.sessions[0].name, shard.shard = name, f"{i}/2"
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps(shard.to_dict()), encoding="utf-8")
    merged = merge_reports([load_report(str(p)) for p in paths])
    assert merged.compared == report.compared and len(merged.comparison) == 2


def test_a_baseline_section_naming_an_unknown_server_fails_at_its_line(tmp_path: Path) -> None:
    from mcptape.config.load import load_config

    config = tmp_path / "mcptape.yml"
    config.write_text("version: 1\nservers:\n  calc: {command: [python, calc.py]}\nsessions:\n"
                      "  - {name: s, server: calc, steps: [list_tools]}\nbaseline:\n  setup: [npm ci]\n"
                      "  servers:\n    clac: [make]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_config(config)
    assert f"{config}:9" in str(e.value) and 'unknown server "clac"' in str(e.value) and "calc" in str(e.value)
    config.write_text(config.read_text(encoding="utf-8").replace("clac", "calc"), encoding="utf-8")
    baseline = load_config(config).config.baseline
    assert baseline.setup == [["npm", "ci"]] and baseline.servers == {"calc": [["make"]]} and baseline.runs == 2
