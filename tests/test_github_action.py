"""The GitHub Action as a workflow runs it: action.yml's own steps through tests/action_runner.py.

The install step really creates a venv and pip-installs this checkout with no extras (once per
pytest session: the runner temp dir is shared, as by several uses of the action in one job);
`mcptape ci` then runs the bundled example (fixtures/example) against the calc fixture server,
whose drift variant MCPTAPE_FIXTURE_VARIANT selects (as .github/workflows/ci.yml does), and
publishes to the loopback GitHub. Each test checks the outputs, the job summary, the PR comment
and the job result. These tests never skip: under CI they are the proof the Action works.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.action_runner import (
    ActionRun,
    ActionRunner,
    example_workspace,
    load_action,
    shared_runner_temp,
    workflow_commands,
)
from tests.conftest import ROOT
from tests.github_fake import ACTIONS_BOT, FakeGitHub, Token

TOKEN = "ghs_job_token"
EXAMPLE = {"working-directory": "fixtures/example"}
MARKER = "<!-- mcptape:fixtures/example/mcptape.yml -->"
ACTION = load_action()


@pytest.fixture(scope="session")
def runner_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_runner_temp(tmp_path_factory)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(tokens={TOKEN: Token(ACTIONS_BOT, app=True)}).start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def runner(runner_temp: Path, github: FakeGitHub) -> ActionRunner:
    return ActionRunner(runner_temp, github, token=TOKEN)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A checkout of a repository that uses the action: the example config, its golden tapes, the server."""
    return example_workspace(tmp_path)


def report_of(run: ActionRun) -> dict:
    return json.loads(Path(run.outputs["report"]).read_text(encoding="utf-8"))


def one_command_a_line(markdown: str) -> str:
    """Shell commands as the shell reads them: `\\` continuation lines joined."""
    return markdown.replace(" \\\n  ", " ")


def assert_no_traceback(run: ActionRun) -> None:
    assert "Traceback" not in run.log, run.log


# --- the action's shape ----------------------------------------------------------------------------


def test_inputs_never_reach_a_script_as_an_expression() -> None:
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]
        assert step.get("shell") == "bash" or step["uses"].startswith(("actions/upload-artifact@", "actions/cache/",
                                                                       "github/codeql-action/upload-sarif@",
                                                                       "actions/attest-build-provenance@"))
    for name, out in ACTION["outputs"].items():
        assert out["value"].startswith("${{ steps.run.outputs."), name
    assert set(ACTION["outputs"]) >= {"result", "exit-code", "first-drift", "drifted-sessions", "comment-url", "report"}
    assert ACTION["inputs"]["github-token"]["default"] == "${{ github.token }}"
    assert ACTION["branding"]["icon"] and ACTION["branding"]["color"]


def test_action_metadata_fits_the_marketplace_and_pins_what_it_uses() -> None:
    assert len(ACTION["description"]) < 125  # the Marketplace cuts longer descriptions
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    uses = re.findall(r"(?m)^\s+uses: (\S+)(.*)", text)
    assert uses, "the artifact step is part of the action"
    for ref, comment in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+(/[\w.-]+)?@[0-9a-f]{40}", ref), ref  # a tag can move; a commit cannot
        assert re.fullmatch(r"\s+# v\d+\.\d+\.\d+", comment), comment  # which release that commit is
    assert {"upload-artifact", "artifact-name"} <= set(ACTION["inputs"])
    constraints = (ROOT / "constraints.txt").read_text(encoding="utf-8")
    pins = dict(line.split("==") for line in constraints.splitlines() if line and not line.startswith("#"))
    assert {"pydantic", "ghapi", "pyyaml", "jsonschema", "rich"} <= set(pins)
    # Every way of installing takes the same pins (uv, pip, and the fallback from one to the other).
    assert 'constraints="$GITHUB_ACTION_PATH/constraints.txt"' in text
    assert text.count('--constraint "$constraints"') == 2


# --- the bundled example, installed and run as a workflow does ----------------------------------------


def test_unchanged_server_then_a_drift_then_the_fix(runner: ActionRunner, workspace: Path) -> None:
    clean = runner.run(workspace, EXAMPLE)
    assert clean.result == "success", clean.log
    assert clean.step("install").outputs["mcptape"].startswith(str(runner.runner_temp / "mcptape-venv-"))
    assert "mcptape 0.1.0" in clean.step("install").stdout
    assert clean.outputs["result"] == "none" and clean.outputs["exit-code"] == "0", clean.log
    assert clean.outputs["first-drift"] == "" and clean.outputs["drifted-sessions"] == ""
    assert report_of(clean)["result"] == "none"
    assert clean.summary.startswith("## mcptape: ✅ no drift · ` fixtures/example/mcptape.yml `\n\n<sub>3 sessions, 3 unchanged")
    assert clean.comments == []  # a PR that never drifted gets no comment
    assert_no_traceback(clean)

    # The same job, the same setup, one real change: `add` answers 6.
    drift = runner.run(workspace, EXAMPLE, env={"MCPTAPE_FIXTURE_VARIANT": "changed_result"})
    assert drift.result == "failure", drift.log  # fail-on: output (the default)
    assert drift.step("run").returncode == 1
    assert drift.outputs["result"] == "output" and drift.outputs["exit-code"] == "1", drift.log
    assert drift.outputs["drifted-sessions"] == "arithmetic"
    assert "tools/call add" in drift.outputs["first-drift"]
    assert report_of(drift)["result"] == "output"
    assert "🟡 output drift" in drift.summary
    [error] = drift.step("run").annotations("error")
    assert error.properties["file"] == "fixtures/example/tapes/arithmetic.tape.jsonl"
    assert error.properties["title"] == "mcptape: output drift in arithmetic"
    [comment] = drift.comments
    assert comment["body"].startswith(MARKER + "\n") and "🟡 output drift" in comment["body"]
    assert drift.outputs["comment-url"] == comment["html_url"]

    fixed = runner.run(workspace, EXAMPLE)
    assert fixed.result == "success" and fixed.outputs["result"] == "none", fixed.log
    [comment] = fixed.comments  # the same comment, turned green in place
    assert comment["body"].startswith(MARKER + "\n") and "### mcptape: ✅ no drift" in comment["body"]


def test_structural_drift_shared_by_two_sessions_and_accepting_it_from_the_artifact(
    runner_temp: Path, github: FakeGitHub, workspace: Path
) -> None:
    """The comment a reviewer reads for a breaking change, and the accept flow it offers."""
    runner = ActionRunner(runner_temp, github, token=TOKEN, action_repository="acme/mcptape-action", action_ref="v1.2.3")
    drift = runner.run(workspace, EXAMPLE, env={"MCPTAPE_FIXTURE_VARIANT": "required_param"})
    assert drift.result == "failure" and drift.outputs["result"] == "structural", drift.log
    [comment] = drift.comments
    body = comment["body"]
    head = "1" * 40  # the PR's head commit in the runner's event (GITHUB_SHA is the merge commit)
    blob = f"https://github.com/acme/calc/blob/{head}/fixtures/example/tapes"
    # One headline in words, said once, with the sessions it affects linked at the drifted line.
    assert "### mcptape: 🔴 structural drift · ` fixtures/example/mcptape.yml `" in body
    assert body.count("now requires") == 1 and "**` add ` now requires ` c `: calls without it break.**" in body
    assert f"affects: [` surface `]({blob}/surface.tape.jsonl#L6), [` arithmetic `]({blob}/arithmetic.tape.jsonl#L6)" in body
    assert f"at commit [` 1111111 `](https://github.com/acme/calc/commit/{head})" in body
    assert "[workflow run](https://github.com/acme/calc/actions/runs/1)" in body
    # Commands correct from the repository root, installing the release this workflow runs.
    assert 'pip install "git+https://github.com/acme/mcptape-action@v1.2.3"' in body
    assert "(cd fixtures/example && mcptape ci -c mcptape.yml --update-golden)\ngit add fixtures/example/tapes/\n" in body

    # The artifact: this step's report and fresh tapes, under the name the comment gives.
    [upload] = drift.artifacts
    name = drift.outputs["artifact-name"]
    assert upload.uses.startswith("actions/upload-artifact@") and upload.inputs["name"] == name
    assert f"gh run download 1 -n {name} -D mcptape-artifact" in body
    sessions = ("surface", "arithmetic", "resources-and-prompts")
    assert set(upload.files) == {"report.json", "report.html",
                                 *(f"fresh/{s}{suffix}" for s in sessions
                                   for suffix in (".tape.jsonl", ".tape.view.txt", ".tape.timing.json"))}
    assert json.loads(upload.files["report.json"])["result"] == "structural"
    # The page a reviewer opens (tests/integration/test_html_browser.py opens it in a browser), named
    # by the comment with each session's place in it, and linked to this commit and run.
    page = upload.files["report.html"].decode()
    assert '<h1 id="verdict">structural drift</h1>' in page and 'id="session-surface"' in page
    assert f'href="https://github.com/acme/calc/commit/{head}"' in page
    assert f"HTML report ` report.html ` in artifact ` {name} `" in body
    assert "In the HTML report: ` report.html#session-surface `" in body
    assert drift.outputs["html-report"].endswith("/report.html")
    tapes = workspace / "fixtures" / "example" / "tapes"
    assert ("cp mcptape-artifact/fresh/arithmetic.tape.jsonl mcptape-artifact/fresh/arithmetic.tape.view.txt "
            "mcptape-artifact/fresh/surface.tape.jsonl mcptape-artifact/fresh/surface.tape.view.txt "
            "fixtures/example/tapes/\n") in one_command_a_line(body)
    assert upload.files["fresh/resources-and-prompts.tape.jsonl"] == (tapes / "resources-and-prompts.tape.jsonl").read_bytes()

    # Accepting from the artifact as the comment says (an output drift: `add` answers 6) turns the gate
    # green and the same comment with it.
    changed = runner.run(workspace, EXAMPLE, env={"MCPTAPE_FIXTURE_VARIANT": "changed_result"})
    assert changed.outputs["result"] == "output", changed.log
    [upload] = changed.artifacts
    assert ("cp mcptape-artifact/fresh/arithmetic.tape.jsonl mcptape-artifact/fresh/arithmetic.tape.view.txt "
            "fixtures/example/tapes/\n") in one_command_a_line(changed.comments[0]["body"])
    for name in ("arithmetic.tape.jsonl", "arithmetic.tape.view.txt"):
        (tapes / name).write_bytes(upload.files[f"fresh/{name}"])
    accepted = runner.run(workspace, EXAMPLE, env={"MCPTAPE_FIXTURE_VARIANT": "changed_result"})
    assert accepted.result == "success" and accepted.outputs["result"] == "none", accepted.log
    [green] = accepted.comments
    assert green["id"] == comment["id"] and "### mcptape: ✅ no drift" in green["body"]
    assert "[workflow run](https://github.com/acme/calc/actions/runs/1)" in green["body"]


def test_a_config_in_a_subfolder_named_from_the_repository_root(runner: ActionRunner, workspace: Path) -> None:
    run = runner.run(workspace, {"config": "fixtures/example/mcptape.yml"}, env={"MCPTAPE_FIXTURE_VARIANT": "changed_result"})
    assert run.outputs["result"] == "output", run.log
    [comment] = run.comments
    body = comment["body"]
    assert body.startswith(MARKER + "\n")  # the same comment as with working-directory: the same config
    assert "### mcptape: 🟡 output drift · ` fixtures/example/mcptape.yml `" in body
    assert "**` add(a=2, b=3) ` now returns ` 6 `, was ` 5 `.**" in body
    assert "\nmcptape ci -c fixtures/example/mcptape.yml --update-golden\ngit add fixtures/example/tapes/\n" in body
    assert "/blob/" + "1" * 40 + "/fixtures/example/tapes/arithmetic.tape.jsonl#L8)" in body
    assert "## mcptape: 🟡 output drift · ` fixtures/example/mcptape.yml `" in run.summary
    [error] = run.step("run").annotations("error")  # fail-on: output, the default: the job fails for it
    assert error.properties["file"] == "fixtures/example/tapes/arithmetic.tape.jsonl"


def test_artifact_upload_can_be_turned_off_and_two_uses_keep_their_own_reports(runner: ActionRunner,
                                                                              workspace: Path) -> None:
    off = runner.run(workspace, {**EXAMPLE, "upload-artifact": "false"})
    assert off.result == "success" and off.artifacts == [] and off.outputs["artifact-name"] == "", off.log
    first = runner.run(workspace, EXAMPLE)
    second = runner.run(workspace, {**EXAMPLE, "artifact-name": "mcptape-second"},
                        env={"MCPTAPE_FIXTURE_VARIANT": "changed_result"})
    assert first.outputs["report"] != second.outputs["report"]
    assert report_of(first)["result"] == "none" and report_of(second)["result"] == "output"  # neither overwritten
    assert [a.inputs["name"] for a in first.artifacts + second.artifacts] == [first.outputs["artifact-name"],
                                                                             "mcptape-second"]
    assert first.outputs["artifact-name"].startswith("mcptape-mcptape-1-")
    bad = runner.run(workspace, {**EXAMPLE, "upload-artifact": "maybe"})
    assert bad.result == "failure" and bad.artifacts == []


def test_output_drift_passes_with_fail_on_structural(runner: ActionRunner, workspace: Path) -> None:
    run = runner.run(workspace, {**EXAMPLE, "fail-on": "structural"}, env={"MCPTAPE_FIXTURE_VARIANT": "changed_result"})
    assert run.result == "success", run.log
    assert run.outputs["result"] == "output" and run.outputs["exit-code"] == "1"
    assert run.outputs["drifted-sessions"] == "arithmetic"
    [notice] = run.step("run").annotations("notice")
    assert notice.message == "mcptape exited 1; not failing the job (fail-on: structural)"
    # The drift is annotated where it is, as a warning: the job passes for it.
    [warning] = run.step("run").annotations("warning")
    assert warning.properties["file"] == "fixtures/example/tapes/arithmetic.tape.jsonl"
    assert run.step("run").annotations("error") == []
    assert "🟡 output drift" in run.summary
    [comment] = run.comments  # drift is still reported where the reviewer looks
    assert "🟡 output drift" in comment["body"]


def test_structural_drift_fails_with_fail_on_structural(runner: ActionRunner, workspace: Path) -> None:
    run = runner.run(workspace, {**EXAMPLE, "fail-on": "structural"}, env={"MCPTAPE_FIXTURE_VARIANT": "removed_tool"})
    assert run.result == "failure", run.log
    assert run.step("run").returncode == 2
    assert run.outputs["result"] == "structural" and run.outputs["exit-code"] == "2"
    assert "surface" in run.outputs["drifted-sessions"].split("\n")
    assert "divide" in run.outputs["first-drift"]
    assert report_of(run)["result"] == "structural"
    assert "🔴 structural drift" in run.summary
    [comment] = run.comments
    assert "🔴 structural drift" in comment["body"] and "divide" in comment["body"]
    assert run.step("run").annotations("notice") == []


def _invalid_config(ws: Path) -> str:
    (ws / "fixtures" / "example" / "mcptape.yml").write_text("version: 1\nservers: {}\nsessions: oops\n", encoding="utf-8")
    return "mcptape.yml:3"


def _golden_dir_is_a_file(ws: Path) -> str:
    tapes = ws / "fixtures" / "example" / "tapes"
    shutil.rmtree(tapes)
    tapes.write_text("not a directory\n", encoding="utf-8")
    return "is a file, not a directory"


@pytest.mark.parametrize("fault", [_invalid_config, _golden_dir_is_a_file], ids=["invalid-config", "golden-dir-is-a-file"])
@pytest.mark.parametrize("fail_on", ["never", "structural"])
def test_mcptape_that_cannot_run_fails_the_step_whatever_fail_on_says(
    runner: ActionRunner, workspace: Path, fault: object, fail_on: str
) -> None:
    # An earlier use of the action in this job left its report in RUNNER_TEMP.
    earlier = runner.run(workspace, EXAMPLE)
    assert earlier.result == "success" and Path(earlier.outputs["report"]).is_file(), earlier.log
    expected = fault(workspace)  # type: ignore[operator]

    run = runner.run(workspace, {**EXAMPLE, "fail-on": fail_on})
    assert run.result == "failure", run.log
    assert run.step("run").returncode == 3
    assert run.outputs["result"] == "error" and run.outputs["exit-code"] == "3", run.log
    assert run.outputs["report"] == ""  # not the earlier use's report: each use has its own directory
    assert expected in run.step("run").stderr
    [error] = run.step("run").annotations("error")
    assert error.message == f"mcptape exited 3 without writing its report; fail-on: {fail_on} relaxes drift, not this"
    assert "### mcptape: could not run" in run.summary
    assert run.comments == []
    assert_no_traceback(run)


def test_a_session_that_cannot_run_is_reported_and_fails_with_fail_on_never(runner: ActionRunner, workspace: Path) -> None:
    config = workspace / "fixtures" / "example" / "mcptape.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("../servers/calc_server.py", "../servers/missing.py"),
                      encoding="utf-8")
    run = runner.run(workspace, {**EXAMPLE, "fail-on": "never"})
    assert run.result == "failure", run.log
    assert run.outputs["result"] == "error" and run.outputs["exit-code"] == "3"
    assert report_of(run)["result"] == "error"  # mcptape got as far as its report: it is kept
    assert "⛔ could not run" in run.summary
    [comment] = run.comments
    assert "⛔ could not run" in comment["body"]
    assert any(a.message.endswith("fail-on: never relaxes drift, not this") for a in run.step("run").annotations("error"))
    assert_no_traceback(run)


def _stand_in(directory: Path, body: str) -> str:
    """An executable where the venv's `mcptape` would be, for the outcomes mcptape itself never has."""
    path = directory / "mcptape-stand-in"
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.parametrize(("code", "result"), [(1, "error"), (2, "error"), (4, "secret"), (139, "error")])
def test_an_exit_without_a_report_is_never_a_verdict(runner: ActionRunner, tmp_path: Path, code: int, result: str) -> None:
    """A crash that exits 1 (a traceback before mcptape starts, say) must not read as output drift."""
    mcptape = _stand_in(tmp_path, f"echo 'Traceback (most recent call last):' >&2\nexit {code}")
    run = runner.run(tmp_path, {"fail-on": "never"}, only=["run"], prior_outputs={"install": {"mcptape": mcptape}})
    assert run.result == "failure"
    assert run.step("run").returncode == (code if code >= 3 else 3)
    assert run.outputs["result"] == result and run.outputs["exit-code"] == str(code)
    assert run.outputs["report"] == ""
    [error] = run.step("run").annotations("error")
    assert error.message.endswith("fail-on: never relaxes drift, not this")


def test_a_report_next_to_a_drift_exit_code_is_a_verdict(runner: ActionRunner, tmp_path: Path) -> None:
    """The positive control of the test above: the same stand-in, writing its report, is a verdict."""
    mcptape = _stand_in(tmp_path, 'echo \'{"result": "output"}\' > "$MCPTAPE_REPORT"\nexit 1')
    run = runner.run(tmp_path, {"fail-on": "never"}, only=["run"], prior_outputs={"install": {"mcptape": mcptape}})
    assert run.result == "success", run.log
    assert run.outputs["result"] == "output" and run.outputs["exit-code"] == "1"
    report = Path(run.outputs["report"])
    assert report.name == "report.json" and report.parent.parent == runner.runner_temp and report.is_file()


@pytest.mark.parametrize(("body", "uploaded"), [
    ('echo \'{"result": "output"}\' > "$MCPTAPE_REPORT"\nexit 1', ["report.json"]),  # a drift: uploaded
    ('echo \'{"result": "secret"}\' > "$MCPTAPE_REPORT"\nexit 4', None),  # a secret survived: nothing leaves
])
def test_the_artifact_is_never_uploaded_after_a_secret_survived(runner: ActionRunner, tmp_path: Path, body: str,
                                                               uploaded: list[str] | None) -> None:
    mcptape = _stand_in(tmp_path, body)
    run = runner.run(tmp_path, {"fail-on": "never"}, only=["run", "upload"], prior_outputs={"install": {"mcptape": mcptape}})
    if uploaded is None:
        assert run.outputs["result"] == "secret" and run.artifacts == [], run.log
    else:
        [upload] = run.artifacts
        assert sorted(upload.files) == uploaded and upload.inputs["name"] == run.outputs["artifact-name"]


@pytest.mark.parametrize("args", ["--jobs 2 --json mine.json", "--html=mine.html"])
def test_args_cannot_take_the_report_away(runner: ActionRunner, tmp_path: Path, args: str) -> None:
    mcptape = _stand_in(tmp_path, "exit 0")
    run = runner.run(tmp_path, {"args": args}, only=["run"], prior_outputs={"install": {"mcptape": mcptape}})
    assert run.result == "failure"
    [error] = run.step("run").annotations("error")
    flag = args.split()[-2] if " --json" in args else "--html"
    assert error.message.startswith(f"input args must not contain {flag}")


def test_unknown_fail_on_is_rejected(runner: ActionRunner, tmp_path: Path) -> None:
    run = runner.run(tmp_path, {"fail-on": "sometimes"}, only=["run"], prior_outputs={"install": {"mcptape": "/nonexistent"}})
    assert run.result == "failure" and run.step("run").returncode == 3
    [error] = run.step("run").annotations("error")
    assert error.message == "input fail-on must be output, structural or never"


def _fake_python(bin_dir: Path, version: str) -> None:
    script = bin_dir / "python3"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo "Python {version}"; exit 0; fi\n'
        f'v="{version}"\n'
        'case "$v" in 3.1[1-9].*) exit 0 ;; *) exit 1 ;; esac\n',
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_python_check_fails_clearly_without_python_311(runner: ActionRunner, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_python(bin_dir, "3.8.10")
    # Only the fake interpreter and the tools bash needs: no other python on this PATH.
    for tool in ("cat", "env"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    env = {"PATH": str(bin_dir)}
    run = runner.run(tmp_path, env=env, only=["python"])
    assert run.result == "failure" and run.step("python").returncode == 1
    [error] = run.step("python").annotations("error")
    assert error.message.startswith("mcptape needs Python 3.11 or newer")
    assert run.step("python").outputs == {}

    _fake_python(bin_dir, "3.12.1")
    run = runner.run(tmp_path, env=env, only=["python"])
    assert run.result == "success", run.log
    assert run.step("python").outputs == {"python": str(bin_dir / "python3")}


# --- the runner itself --------------------------------------------------------------------------------


def test_the_runner_reads_workflow_commands_as_the_runner_does() -> None:
    out = "::error file=a%2Cb.txt,line=3::one%0Atwo\n::stop-commands::tok\n::error::ignored\n::tok::\n::notice::back"
    commands = workflow_commands(out)
    assert [(c.name, c.properties, c.message) for c in commands] == [
        ("error", {"file": "a,b.txt", "line": "3"}, "one\ntwo"), ("notice", {}, "back")]
