"""Publishing a ci run to GitHub, end to end against a loopback GitHub (tests/github_fake.py).

Each run is a real process with the environment the Actions runner gives a step: a real
`pull_request` event file, GITHUB_STEP_SUMMARY and GITHUB_OUTPUT files, GITHUB_API_URL pointed
at the fake. The verdicts are RunReports built from the model, so these tests do not depend on
ci.py; the outputs file is parsed back the way the runner parses it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcptape.publish.github import command, escape_data, escape_property, format_outputs
from mcptape.verdict.model import (
    CallRef,
    DiffResult,
    Drift,
    Finding,
    RunReport,
    SessionResult,
    SurfaceChanges,
)
from tests.action_runner import parse_file_commands
from tests.conftest import ROOT, mcptape_command
from tests.github_fake import ACTIONS_BOT, FakeGitHub, Token

REPO = "acme/calc-server"
PR = 42
MARKER = "<!-- mcptape:mcptape.yml -->"
TIMEOUT = 60

PUBLISH = (
    "import json, sys\n"
    "from mcptape.verdict.model import RunReport\n"
    "from mcptape.publish.github import publish_run\n"
    "from mcptape.publish.outlet import Outlet\n"
    "report = RunReport.from_dict(json.load(open(sys.argv[1], encoding='utf-8')))\n"
    "code = report.exit_code  # what ci exits with; publishing must not change it\n"
    "publish_run(report, config_path=sys.argv[2], outlet=Outlet.for_config(None))  # ci hands in its run's\n"
    "sys.exit(code)\n"
)

CONFIG = """\
version: 1
servers:
  calc:
    command: [python, calc.py]
sessions:
  - name: arith
    server: calc
    steps:
      - list_tools
"""


# --- reports built straight from the model ------------------------------------------------------


def drifted_report(result_text: str = "6", config: str = "mcptape.yml") -> RunReport:
    first = Drift(
        CallRef("tools/call", "add", {"a": 2, "b": 3}, step=3),
        [
            Finding("result", "output", "result.content[0].text", f'"5" → "{result_text}"', "5", result_text, golden_line=7),
        ],
    )
    second = Drift(
        CallRef("tools/list", step=1),
        [Finding("surface", "structural", "result.tools[multiply]", "tool `multiply` added", None, "multiply", kind="added",
                 golden_line=3)],
    )
    diff = DiffResult("structural", drifts=[first, second], surface=SurfaceChanges(added=["multiply"]))
    return RunReport(
        config=config,
        sessions=[
            SessionResult("arith", "structural", diff=diff, golden="tapes/arith.tape.jsonl"),
            SessionResult("strings", "same", diff=DiffResult("same"), golden="tapes/strings.tape.jsonl"),
        ],
    )


def clean_report() -> RunReport:
    return RunReport(
        config="mcptape.yml",
        sessions=[
            SessionResult("arith", "same", diff=DiffResult("same"), golden="tapes/arith.tape.jsonl"),
            SessionResult("strings", "same", diff=DiffResult("same"), golden="tapes/strings.tape.jsonl"),
        ],
    )


# --- the runner's side ---------------------------------------------------------------------------


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(
        tokens={
            "actions-token": Token(ACTIONS_BOT, app=True),
            "pat-token": Token("release-bot"),
            "read-only": Token(ACTIONS_BOT, app=True, write=False),
        }
    ).start()
    try:
        yield fake
    finally:
        fake.stop()


class Runner:
    """One Actions step: its own GITHUB_OUTPUT and summary files, the shared event and workspace."""

    def __init__(self, workspace: Path, github: FakeGitHub) -> None:
        self.workspace = workspace
        self.github = github
        self.temp = workspace / "_runner_temp"
        self.temp.mkdir(parents=True, exist_ok=True)
        (workspace / "mcptape.yml").write_text(CONFIG, encoding="utf-8")
        self.event = self.temp / "event.json"
        self.write_event()
        self.steps = 0

    def write_event(self, *, head_repo: str | None = REPO, name: str = "pull_request") -> None:
        self.event_name = name
        head = {"repo": {"full_name": head_repo}} if head_repo else {"repo": None}
        event = {
            "action": "synchronize",
            "number": PR,
            "pull_request": {"number": PR, "head": {**head, "sha": "abc123"}, "base": {"repo": {"full_name": REPO}}},
            "repository": {"full_name": REPO},
        }
        self.event.write_text(json.dumps(event), encoding="utf-8")

    def env(self, token: str, **extra: str) -> dict[str, str]:
        self.steps += 1
        self.output = self.temp / f"output-{self.steps}"
        self.summary = self.temp / f"summary-{self.steps}"
        self.output.write_text("", encoding="utf-8")
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", str(self.workspace)),
            "PYTHONPATH": str(ROOT),
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": self.event_name,
            "GITHUB_EVENT_PATH": str(self.event),
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_RUN_ID": "4242",
            "GITHUB_SHA": "f" * 40,  # the merge commit: links use the PR's head (the event's) instead
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_API_URL": self.github.url,
            "GITHUB_OUTPUT": str(self.output),
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "RUNNER_TEMP": str(self.temp),
            "MCPTAPE_GITHUB_TOKEN": token,
        }
        env.update(extra)
        return env

    def publish(self, report: RunReport, *, token: str = "actions-token", config: str = "mcptape.yml", **extra: str
                ) -> subprocess.CompletedProcess[str]:
        path = self.temp / f"report-{self.steps + 1}.json"
        path.write_text(json.dumps(report.to_dict()), encoding="utf-8")
        return subprocess.run(
            [sys.executable, "-c", PUBLISH, str(path), config],
            cwd=self.workspace,
            env=self.env(token, **extra),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )

    def outputs(self) -> dict[str, str]:
        return parse_file_commands(self.output.read_text(encoding="utf-8"))


@pytest.fixture
def runner(tmp_path: Path, github: FakeGitHub) -> Runner:
    return Runner(tmp_path / "workspace", github)


def ours(github: FakeGitHub) -> list[dict[str, Any]]:
    return [c for c in github.thread(REPO, PR) if c["body"].startswith(MARKER)]


# --- end to end ---------------------------------------------------------------------------------


def test_first_run_creates_one_comment_summary_annotation_and_outputs(runner: Runner, github: FakeGitHub) -> None:
    proc = runner.publish(drifted_report())
    assert proc.returncode == 2, proc.stderr

    [comment] = github.thread(REPO, PR)
    assert comment["user"]["login"] == ACTIONS_BOT
    body = comment["body"]
    assert body.split("\n", 1)[0] == MARKER
    assert "structural drift" in body
    # The headline says in words what changed for a client, once: the structural drift that decided
    # the exit, though an output drift comes first in the session (that one is listed below it); the
    # run and the commit are linked, and the session links its golden tape at the headline's line.
    assert body.count("new tool ` multiply `: clients see it when they list") == 1
    assert 'tools/call add {"a":2,"b":3} · result.content[0].text "5" → "6" (output)' in body
    assert "[workflow run](https://github.com/acme/calc-server/actions/runs/4242)" in body
    assert "at commit [` abc123 `](https://github.com/acme/calc-server/commit/abc123)" in body
    assert "[` arith `](https://github.com/acme/calc-server/blob/abc123/tapes/arith.tape.jsonl#L3)" in body
    assert "mcptape ci -c mcptape.yml --update-golden\ngit add tapes/\n" in body

    summary = runner.summary.read_text(encoding="utf-8")
    assert "| session | verdict | first drifted call |" in summary
    assert "| Added | ` multiply ` |" in summary
    assert "<details>" in summary and summary.count("<details>") == summary.count("</details>")

    # The annotation points at the golden tape and the line of the first drifted event.
    ann = [line for line in proc.stdout.splitlines() if line.startswith("::error ")]
    assert len(ann) == 1
    assert ann[0].startswith("::error file=tapes/arith.tape.jsonl,line=3,title=mcptape%3A structural drift in arith::")
    assert "arith · step 1 · tools/list" in ann[0]

    out = runner.outputs()
    assert out["result"] == "structural"
    assert out["exit-code"] == "2"
    assert out["first-drift"].startswith("arith · step 1 · tools/list")
    assert out["drifted-sessions"] == "arith"
    assert out["comment-url"] == comment["html_url"]
    assert Path(out["comment-body"]).read_text(encoding="utf-8") == body


def test_second_run_updates_the_same_comment_and_no_drift_turns_it_green(runner: Runner, github: FakeGitHub) -> None:
    assert runner.publish(drifted_report("6")).returncode == 2
    [first] = github.thread(REPO, PR)

    assert runner.publish(drifted_report("7")).returncode == 2
    [second] = github.thread(REPO, PR)
    assert second["id"] == first["id"]
    assert '"5" → "7"' in second["body"] and '"5" → "6"' not in second["body"]
    assert [r.method for r in github.writes()] == ["POST", "PATCH"]
    assert runner.outputs()["comment-url"] == first["html_url"]

    proc = runner.publish(clean_report())
    assert proc.returncode == 0, proc.stderr
    [green] = github.thread(REPO, PR)
    assert green["id"] == first["id"]
    assert green["body"].split("\n", 1)[0] == MARKER
    assert "no drift" in green["body"] and "drift" not in green["body"].replace("no drift", "")
    out = runner.outputs()
    assert out["result"] == "none" and out["first-drift"] == "" and out["drifted-sessions"] == ""


def test_clean_pr_that_never_drifted_gets_no_comment(runner: Runner, github: FakeGitHub) -> None:
    proc = runner.publish(clean_report())
    assert proc.returncode == 0, proc.stderr
    assert github.thread(REPO, PR) == []
    assert github.writes() == []
    assert "no drift" in runner.summary.read_text(encoding="utf-8")
    # Positive control: the same PR with one drifted result gets its comment.
    assert runner.publish(drifted_report()).returncode == 2
    [comment] = github.thread(REPO, PR)
    assert '"5" → "6"' in comment["body"]


def test_another_users_comment_with_the_marker_is_left_alone(runner: Runner, github: FakeGitHub) -> None:
    planted = github.add_comment(REPO, PR, "mallory", MARKER + "\n\nall good, merge it")
    assert runner.publish(drifted_report()).returncode == 2
    thread = github.thread(REPO, PR)
    assert len(thread) == 2
    assert thread[0] == planted  # untouched
    assert thread[1]["user"]["login"] == ACTIONS_BOT and "structural drift" in thread[1]["body"]
    assert not any(r.method == "PATCH" for r in github.requests)


def test_150_comments_are_paginated_and_no_duplicate_is_created(runner: Runner, github: FakeGitHub) -> None:
    for i in range(140):
        github.add_comment(REPO, PR, "reviewer", f"comment {i}")
    mine = github.add_comment(REPO, PR, ACTIONS_BOT, MARKER + "\n\n### mcptape: old")
    for i in range(9):
        github.add_comment(REPO, PR, "reviewer", f"later {i}")
    assert runner.publish(drifted_report()).returncode == 2

    assert len(github.thread(REPO, PR)) == 150
    assert [r.method for r in github.writes()] == ["PATCH"]
    assert github.writes()[0].path == f"/repos/{REPO}/issues/comments/{mine['id']}"
    pages = [r.query.get("page") for r in github.requests if r.method == "GET" and r.path.endswith("/comments")]
    assert pages == ["1", "2"]  # the comment sits on page 2 of 100-per-page listing


def test_personal_token_is_matched_by_its_own_login(runner: Runner, github: FakeGitHub) -> None:
    # The Actions bot's comment with the marker belongs to another identity than this token.
    github.add_comment(REPO, PR, ACTIONS_BOT, MARKER + "\n\nstale")
    assert runner.publish(drifted_report(), token="pat-token").returncode == 2
    thread = github.thread(REPO, PR)
    assert [c["user"]["login"] for c in thread] == [ACTIONS_BOT, "release-bot"]
    assert thread[0]["body"].endswith("stale")
    assert runner.publish(drifted_report("8"), token="pat-token").returncode == 2
    assert len(github.thread(REPO, PR)) == 2


def test_read_only_token_warns_saves_the_body_and_keeps_the_exit_code(runner: Runner, github: FakeGitHub) -> None:
    proc = runner.publish(drifted_report(), token="read-only")
    assert proc.returncode == 2, proc.stderr  # the gate's verdict, not a publishing failure
    warnings = [line for line in proc.stdout.splitlines() if line.startswith("::warning")]
    assert len(warnings) == 1 and "HTTP 403" in warnings[0] and "pull-requests%3A write" not in warnings[0]
    assert "pull-requests: write" in warnings[0]
    out = runner.outputs()
    assert out["comment-url"] == "" and out["result"] == "structural"
    saved = Path(out["comment-body"]).read_text(encoding="utf-8")
    assert saved.startswith(MARKER + "\n") and "tools/call add" in saved
    assert github.thread(REPO, PR) == []


def test_fork_pull_request_is_not_attempted(runner: Runner, github: FakeGitHub) -> None:
    runner.write_event(head_repo="mallory/calc-server")
    proc = runner.publish(drifted_report())
    assert proc.returncode == 2, proc.stderr
    assert github.requests == []
    assert any(line.startswith("::warning") and "fork" in line for line in proc.stdout.splitlines())
    assert Path(runner.outputs()["comment-body"]).exists()


def test_comment_false_and_push_event_post_nothing(runner: Runner, github: FakeGitHub) -> None:
    assert runner.publish(drifted_report(), MCPTAPE_COMMENT="false").returncode == 2
    runner.write_event(name="push")
    assert runner.publish(drifted_report()).returncode == 2
    assert github.requests == []
    assert runner.outputs()["result"] == "structural"


def test_config_in_a_subdirectory_gets_its_own_comment_and_annotation_path(runner: Runner, github: FakeGitHub) -> None:
    sub = runner.workspace / "servers" / "calc"
    sub.mkdir(parents=True)
    (sub / "mcptape.yml").write_text(CONFIG, encoding="utf-8")
    assert runner.publish(drifted_report()).returncode == 2
    proc = runner.publish(drifted_report(config="servers/calc/mcptape.yml"), config="servers/calc/mcptape.yml")
    assert proc.returncode == 2
    firsts = sorted(c["body"].split("\n", 1)[0] for c in github.thread(REPO, PR))
    assert firsts == [MARKER, "<!-- mcptape:servers/calc/mcptape.yml -->"]
    assert "::error file=servers/calc/tapes/arith.tape.jsonl,line=3," in proc.stdout


# --- mcptape comment (second stage of the fork pattern) -----------------------------------------


def run_comment(runner: Runner, *args: str, token: str = "actions-token") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        mcptape_command("comment", *args),
        cwd=runner.workspace,
        env=runner.env(token, GITHUB_EVENT_NAME="workflow_run"),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def test_comment_command_posts_a_json_report_checked_against_the_head_sha(runner: Runner, github: FakeGitHub) -> None:
    github.pulls[(REPO, PR)] = {"number": PR, "head": {"sha": "abc123"}}
    report = runner.temp / "mcptape-report.json"
    report.write_text(json.dumps(drifted_report().to_dict()), encoding="utf-8")

    wrong = run_comment(runner, "--body", str(report), "--pr", str(PR), "--head-sha", "fff999")
    assert wrong.returncode == 3 and "not at commit fff999" in wrong.stderr
    assert github.writes() == []

    ok = run_comment(runner, "--body", str(report), "--pr", str(PR), "--head-sha", "abc123")
    assert ok.returncode == 0, ok.stderr
    [c] = github.thread(REPO, PR)
    assert c["body"].startswith(MARKER + "\n") and "tools/call add" in c["body"]
    assert parse_file_commands(runner.output.read_text(encoding="utf-8"))["comment-url"] == c["html_url"]

    # A saved markdown body updates the same comment; a read-only token is an error here (exit 3).
    body = runner.temp / "body.md"
    body.write_text(c["body"].replace('"6"', '"9"'), encoding="utf-8")
    assert run_comment(runner, "--body", str(body), "--pr", str(PR)).returncode == 0
    assert len(github.thread(REPO, PR)) == 1 and '"9"' in github.thread(REPO, PR)[0]["body"]
    body.write_text(c["body"].replace('"6"', '"10"'), encoding="utf-8")
    denied = run_comment(runner, "--body", str(body), "--pr", str(PR), token="read-only")
    assert denied.returncode == 3 and "403" in denied.stderr and "pull-requests: write" in denied.stderr


def test_comment_command_in_a_workflow_run_links_the_run_and_commit_that_wrote_the_report(
    runner: Runner, github: FakeGitHub
) -> None:
    report = runner.temp / "report.json"
    report.write_text(json.dumps(drifted_report().to_dict()), encoding="utf-8")
    head = "c0ffee" + "0" * 34
    runner.event.write_text(json.dumps({"workflow_run": {"id": 555, "head_sha": head, "event": "pull_request"}}),
                            encoding="utf-8")
    proc = run_comment(runner, "--body", str(report), "--pr", str(PR), "--marker", "servers/calc/mcptape.yml")
    assert proc.returncode == 0, proc.stderr
    [c] = github.thread(REPO, PR)
    body = c["body"]
    assert body.startswith("<!-- mcptape:servers/calc/mcptape.yml -->\n")
    assert "[workflow run](https://github.com/acme/calc-server/actions/runs/555)" in body  # not this job's run
    assert f"(https://github.com/acme/calc-server/blob/{head}/servers/calc/tapes/arith.tape.jsonl#L3)" in body
    assert "mcptape ci -c servers/calc/mcptape.yml --update-golden\ngit add servers/calc/tapes/\n" in body  # from the root


def test_three_racing_runs_leave_exactly_one_comment(runner: Runner, github: FakeGitHub) -> None:
    report = runner.temp / "mcptape-report.json"
    report.write_text(json.dumps(drifted_report().to_dict()), encoding="utf-8")
    github.hold_lists(3)  # all three list the thread before any of them creates
    racers = [
        subprocess.Popen(mcptape_command("comment", "--body", str(report), "--pr", str(PR)), cwd=runner.workspace,
                         env=runner.env("actions-token", GITHUB_EVENT_NAME="workflow_run"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    for p in racers:
        _, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 0, err
    # The race happened (each saw no comment and created one), and it converged on the oldest.
    posts = [r for r in github.requests if r.method == "POST"]
    deletes = [r for r in github.requests if r.method == "DELETE"]
    assert len(posts) == 3 and len(deletes) >= 2
    [kept] = ours(github)
    assert kept["id"] == 1001  # the first comment the fake created: the one every racer keeps

    # A duplicate an earlier race left behind is cleaned up by the next run, which updates the oldest.
    github.add_comment(REPO, PR, ACTIONS_BOT, kept["body"])
    assert len(ours(github)) == 2
    assert run_comment(runner, "--body", str(report), "--pr", str(PR)).returncode == 0
    assert [c["id"] for c in ours(github)] == [1001]


def test_comment_command_refuses_a_body_without_exactly_one_marker(runner: Runner, github: FakeGitHub) -> None:
    body = runner.temp / "body.md"
    body.write_text("hello @everyone\n", encoding="utf-8")
    proc = run_comment(runner, "--body", str(body), "--pr", str(PR))
    assert proc.returncode == 3 and "does not start with an mcptape marker" in proc.stderr
    body.write_text(MARKER + "\n\n<!-- mcptape:other -->\n", encoding="utf-8")
    proc = run_comment(runner, "--body", str(body), "--pr", str(PR))
    assert proc.returncode == 3 and "more than one mcptape marker" in proc.stderr
    assert github.requests == []


# --- workflow command and output formats ---------------------------------------------------------


@pytest.mark.parametrize(("fail_on", "level"), [("never", "warning"), ("output", "error"), ("structural", "error")])
def test_annotations_are_warnings_when_fail_on_lets_the_job_pass(runner: Runner, github: FakeGitHub, fail_on: str,
                                                                 level: str) -> None:
    proc = runner.publish(drifted_report(), MCPTAPE_FAIL_ON=fail_on)  # structural drift: exit 2
    assert proc.returncode == 2, proc.stderr
    ann = [line for line in proc.stdout.splitlines() if line.startswith(("::error ", "::warning "))]
    assert len(ann) == 1 and ann[0].startswith(f"::{level} file=tapes/arith.tape.jsonl,line=3,"), ann


def test_workflow_command_escaping() -> None:
    assert escape_data("100%\r\nnext") == "100%25%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    line = command("error", "x\n::warning::forged", file="t,a:pe.jsonl", line=3)
    assert line == "::error file=t%2Ca%3Ape.jsonl,line=3::x%0A::warning::forged"
    assert "\n" not in line


def test_outputs_use_heredoc_with_a_random_delimiter_for_multiline_values() -> None:
    text = format_outputs({"result": "output", "drifted-sessions": "a\nb", "first-drift": "x=y"})
    lines = text.split("\n")
    assert lines[0] == "result=output"
    name, delim = lines[1].split("<<")
    assert name == "drifted-sessions" and delim.startswith("ghadelimiter_") and len(delim) > 20
    assert parse_file_commands(text) == {"result": "output", "drifted-sessions": "a\nb", "first-drift": "x=y"}
    again = format_outputs({"drifted-sessions": "a\nb"}).split("\n")[0]
    assert again.split("<<")[1] != delim


def test_a_run_that_exited_4_posts_only_the_sentence_that_says_so(runner: Runner, github: FakeGitHub) -> None:
    """A secret survived in one session: the comment, the summary and the annotation say that and
    nothing else (no drift of the other sessions, no detail of where); the outputs say `secret`.
    An earlier drift comment is replaced, not left standing beside it."""
    assert runner.publish(drifted_report("6")).returncode == 2
    report = drifted_report("7")
    report.sessions.append(SessionResult("keys", "secret", error="fresh tape of session keys: a github-token value "
                                         "survived redaction (at $.msg.result); nothing was written"))
    proc = runner.publish(report)
    assert proc.returncode == 4, proc.stderr
    [comment] = github.thread(REPO, PR)
    body = comment["body"]
    assert body.split("\n", 1)[0] == MARKER and "a secret survived redaction in session `keys` (exit 4)" in body
    assert "arith" not in body and "multiply" not in body and '"7"' not in body and "github-token" not in body
    summary = runner.summary.read_text(encoding="utf-8")
    assert "a secret survived redaction" in summary and "arith" not in summary
    [error] = [line for line in proc.stdout.splitlines() if line.startswith("::")]
    assert error.startswith("::error title=mcptape%3A a secret survived redaction::")
    out = runner.outputs()
    assert out["result"] == "secret" and out["exit-code"] == "4" and out["first-drift"] == "" and out["drifted-sessions"] == ""
    assert Path(out["comment-body"]).read_text(encoding="utf-8") == body
