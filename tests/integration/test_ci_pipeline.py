"""One pipeline per job (issue 26): what `mcptape ci` does once per run or once per session stays once.

Each test drives the real command (cli.main, in this process so the counters see every thread)
on fixture servers over real pipes, and counts what must not be done twice:

- the config's Redactor is compiled once per run, whatever the job (a gate run, --update-golden,
  --repeat, --against), while every session still keeps its own redaction counts;
- under --update-golden the fresh recording's conformance check and its canonical order are
  made once per session, and the note about a nonconformant server still lists every violation;
- `ci` and `merge` leave through one path: the same job summary, step outputs and PR comment
  for an unsharded run and for its shards merged.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcptape.conformance.check
from mcptape.ci import session as session_module
from mcptape.cli import main
from mcptape.redact.redactor import Redactor
from mcptape.tape.format import Tape
from tests.conftest import CALC_SERVER, FIXTURES
from tests.github_fake import ACTIONS_BOT, FakeGitHub, Token

NONCONFORMANT = FIXTURES / "servers" / "nonconformant_server.py"
TOKEN = "ghp_" + "k7Qm2Zp9Xw4Rt6Yb8Nc1Vd3Fg5Hj0Ls2Ae4Uo"  # a GitHub token's shape: the built-in detector finds it

CALC_CONFIG = """\
version: 1
golden_dir: tapes
servers:
  calc:
    command: [{python}, {calc}]
    env:
      MCPTAPE_FIXTURE_VARIANT: "${{VARIANT:-identical}}"
sessions:
  - name: leaky
    server: calc
    steps:
      - call: echo
        arguments: {{text: "token {token}"}}
  - name: arithmetic
    server: calc
    steps:
      - call: add
        arguments: {{a: 2, b: 3}}
  - name: surface
    server: calc
    steps:
      - list_tools
"""


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CI", "GITHUB_ACTIONS", "VARIANT", "MCPTAPE_REPORT", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        monkeypatch.delenv(name, raising=False)


def calc_project(directory: Path) -> Path:
    config = directory / "mcptape.yml"
    config.write_text(CALC_CONFIG.format(python=json.dumps(sys.executable), calc=json.dumps(str(CALC_SERVER)),
                                         token=TOKEN), encoding="utf-8")
    return config


def json_report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.fixture
def compilations(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How many Redactors were built (each compiles its detectors twice) and forked."""
    seen: Counter[str] = Counter()
    built, forked = Redactor.__init__, Redactor.fork

    def counting_init(self: Redactor, *args: Any, **kwargs: Any) -> None:
        seen["built"] += 1
        built(self, *args, **kwargs)

    def counting_fork(self: Redactor) -> Redactor:
        seen["forked"] += 1
        return forked(self)

    monkeypatch.setattr(Redactor, "__init__", counting_init)
    monkeypatch.setattr(Redactor, "fork", counting_fork)
    yield seen


def test_a_run_compiles_the_configs_redactor_once_and_each_session_keeps_its_own_counts(
    tmp_path: Path, compilations: Counter[str], capsys: pytest.CaptureFixture[str]
) -> None:
    config = calc_project(tmp_path)
    jobs: list[tuple[list[str], int]] = [
        (["-u"], 0),
        ([f"--json={tmp_path / 'gate.json'}"], 0),
        (["--repeat", "2"], 0),
        (["--against", f"{sys.executable} {CALC_SERVER}", "--reference-runs", "2"], 0),
    ]
    for args, code in jobs:
        compilations.clear()
        assert main(["ci", "-c", str(config), *args]) == code, (args, capsys.readouterr())
        # Once per run, not once per session (3 here), per --repeat run or per reference run.
        assert compilations["built"] == 1, (args, compilations)
        assert compilations["forked"] >= 3, (args, compilations)  # every session scrubs with its own
    capsys.readouterr()
    sessions = {s["name"]: s for s in json_report(tmp_path / "gate.json")["sessions"]}
    # The counts are each session's: only the session that echoed the token redacted one.
    assert sessions["leaky"]["redactions"] == {"github-token": 1}, sessions["leaky"]
    assert sessions["arithmetic"]["redactions"] == {} and sessions["surface"]["redactions"] == {}
    assert TOKEN not in (tmp_path / "tapes" / "leaky.tape.jsonl").read_text(encoding="utf-8")


WEATHER_CONFIG = """\
version: 1
golden_dir: tapes
servers:
  weather:
    command: [{python}, {server}]
    env:
      MCPTAPE_FIXTURE_VARIANT: bad_structured
sessions:
  - name: paris
    server: weather
    steps:
      - list_tools
      - call: weather
        arguments: {{city: {city}}}
  - name: rome
    server: weather
    steps:
      - call: weather
        arguments: {{city: R{city}}}
"""


def test_update_golden_checks_conformance_and_orders_each_session_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mcptape.yml"

    def write(city: str) -> None:
        config.write_text(WEATHER_CONFIG.format(python=json.dumps(sys.executable), server=json.dumps(str(NONCONFORMANT)),
                                                city=city), encoding="utf-8")

    write("Paris")
    assert main(["ci", "-c", str(config), "-u"]) == 0  # goldens of a server that breaks the MCP schema
    capsys.readouterr()

    checked: Counter[str] = Counter()
    check = mcptape.conformance.check.check_tape_placed

    def counting_check(tape: Tape, **kwargs: Any) -> Any:
        checked["golden" if tape.path is not None else "fresh"] += 1
        return check(tape, **kwargs)

    ordered: Counter[str] = Counter()
    order = session_module.canonical_order

    def counting_order(events: Any, *args: Any, **kwargs: Any) -> Any:
        ordered["calls"] += 1
        return order(events, *args, **kwargs)

    monkeypatch.setattr(mcptape.conformance.check, "check_tape_placed", counting_check)
    monkeypatch.setattr(session_module, "canonical_order", counting_order)
    write("Lyon")  # each session's request changes: both goldens are rewritten, compared with the old ones first
    assert main(["ci", "-c", str(config), "-u", f"--json={tmp_path / 'update.json'}"]) == 0
    out = capsys.readouterr().out
    sessions = json_report(tmp_path / "update.json")["sessions"]
    assert [s["verdict"] for s in sessions] == ["updated", "updated"]
    # The fresh recording is checked once per session (the comparison and the note share it);
    # each old golden once, as the comparison's baseline of known violations.
    assert checked == {"fresh": 2, "golden": 2}, checked
    # Two orders a session: the normalized events (the tape) and the redacted ones (the check's).
    assert ordered["calls"] == 4, ordered
    # The comparison marks the violations the old golden holds too as known; the note still
    # lists every violation of the new recording (the shared check was not changed by judging it).
    for s in sessions:
        diff_conformance = [f for d in s["diff"]["drifts"] for f in d["findings"] if f["category"] == "conformance"]
        assert diff_conformance and all(f["message"].startswith("known: ") for f in diff_conformance), s["diff"]
        assert any(n.startswith("conformance: the server broke the MCP schema in 1 message(s)") for n in s["notes"]), s
    assert "structuredContent" in out


def test_ci_and_merge_publish_a_run_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = calc_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["ci", "-c", str(config), "-u"]) == 0
    monkeypatch.setenv("VARIANT", "changed_result")  # drift, so there is a first drift and a comment to post

    repo, pr = "octo/calc", 7
    github = FakeGitHub(tokens={"actions-token": Token(ACTIONS_BOT, app=True)}).start()
    try:
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"number": pr, "pull_request": {
            "number": pr, "head": {"repo": {"full_name": repo}}, "base": {"repo": {"full_name": repo}}}}),
            encoding="utf-8")
        for name, value in {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
                            "GITHUB_EVENT_PATH": str(event), "GITHUB_REPOSITORY": repo,
                            "GITHUB_WORKSPACE": str(tmp_path), "GITHUB_API_URL": github.url,
                            "RUNNER_TEMP": str(tmp_path), "MCPTAPE_GITHUB_TOKEN": "actions-token"}.items():
            monkeypatch.setenv(name, value)

        def published(command: list[str], label: str) -> dict[str, Any]:
            summary, outputs = tmp_path / f"{label}-summary.md", tmp_path / f"{label}-outputs.txt"
            monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
            monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
            code = main(command)
            lines = outputs.read_text(encoding="utf-8")
            body = Path(next(v for v in _outputs(lines).values() if v.endswith(".md"))).read_text(encoding="utf-8")
            return {"code": code, "summary": summary.read_text(encoding="utf-8"), "outputs": _outputs(lines),
                    "body": body, "terminal": capsys.readouterr().out}

        whole = published(["ci", "-c", str(config), "--json=whole.json", "--summary=whole.md"], "ci")
        for i in (1, 2):
            assert main(["ci", "-c", str(config), "--shard", f"{i}/2", f"--json=shard-{i}.json"]) in (0, 1, 2)
        capsys.readouterr()
        merged = published(["merge", "shard-1.json", "shard-2.json", "-c", str(config), "--json=merged.json",
                            "--summary=merged.md"], "merge")
    finally:
        github.stop()

    assert whole["code"] == merged["code"] == 1
    assert "leaky" in whole["summary"] and whole["summary"] == merged["summary"]
    assert whole["body"] == merged["body"] and "arithmetic" in whole["body"]
    assert (tmp_path / "whole.md").read_bytes() == (tmp_path / "merged.md").read_bytes()
    # The step outputs name each command's own JSON report, and are otherwise the same.
    assert whole["outputs"].pop("report") == "whole.json" and merged["outputs"].pop("report") == "merged.json"
    assert whole["outputs"] == merged["outputs"] and whole["outputs"]["first-drift"]
    assert [c["body"] for c in github.thread(repo, pr)] == [merged["body"]]  # one comment, updated in place
    assert TOKEN not in whole["summary"] + whole["body"] + whole["terminal"] + merged["terminal"]


def _outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT's `name=value` and `name<<EOF ... EOF` lines, read back."""
    out: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line:
            name, _, marker = line.partition("<<")
            held: list[str] = []
            for more in lines:
                if more == marker:
                    break
                held.append(more)
            out[name] = "\n".join(held)
        elif "=" in line:
            name, _, value = line.partition("=")
            out[name] = value
    return out
