"""Attested goldens through action.yml's own steps (tests/action_runner.py): the fresh tapes of the
artifact are attested (actions/attest-build-provenance, stubbed at the GitHub boundary: the fake
GitHub stores the statement), and the PR comment's accept-from-artifact commands verify each file
with `gh attestation verify` before copying it; `attest: false` leaves both out."""

from __future__ import annotations

import hashlib
import json
import urllib.request
from pathlib import Path

from tests.action_runner import ActionRunner
from tests.github_fake import FakeGitHub
from tests.test_github_action import (
    EXAMPLE,
    TOKEN,
    github,
    one_command_a_line,
    runner,
    runner_temp,
    workspace,
)

__all__ = ["github", "runner", "runner_temp", "workspace"]  # the fixtures, shared with test_github_action.py

DRIFT = {"MCPTAPE_FIXTURE_VARIANT": "changed_result"}


def _lookup(github: FakeGitHub, digest: str) -> int:
    """What `gh attestation verify` asks GitHub for a file: attestations by its sha256 (HTTP status)."""
    request = urllib.request.Request(f"{github.url}/repos/acme/calc/attestations/sha256:{digest}",
                                     headers={"Authorization": f"token {TOKEN}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as e:
        return e.code


def test_a_drift_attests_the_fresh_tapes_and_the_comment_verifies_before_copying(
    runner: ActionRunner, github: FakeGitHub, workspace: Path
) -> None:
    run = runner.run(workspace, EXAMPLE, env=DRIFT)
    assert run.result == "failure" and run.outputs["result"] == "output", run.log  # the drift fails the job
    [artifact] = run.artifacts
    fresh = {name.removeprefix("fresh/"): data for name, data in artifact.files.items() if name.startswith("fresh/")}
    # Every fresh tape and view of the artifact, attested with the digest of the bytes uploaded.
    assert run.attested == {name: hashlib.sha256(data).hexdigest() for name, data in fresh.items()}
    assert "arithmetic.tape.jsonl" in run.attested
    assert _lookup(github, run.attested["arithmetic.tape.jsonl"]) == 200
    assert _lookup(github, hashlib.sha256(b"a tape edited after the run").hexdigest()) == 404  # the control

    [comment] = run.comments
    commands = one_command_a_line(comment["body"])
    verify = "gh attestation verify mcptape-artifact/fresh/arithmetic.tape.jsonl --repo acme/calc &&"
    assert verify in commands
    assert commands.index(verify) < commands.index("cp mcptape-artifact/fresh/arithmetic.tape.jsonl")
    assert "gh attestation verify mcptape-artifact/fresh/arithmetic.tape.view.txt --repo acme/calc &&" in commands


def test_attest_false_attests_nothing_and_asks_no_verification(
    runner: ActionRunner, github: FakeGitHub, workspace: Path
) -> None:
    runner.id_token = False  # a workflow without `id-token: write`: fine when attestation is off
    run = runner.run(workspace, {**EXAMPLE, "attest": "false"}, env=DRIFT)
    assert run.outputs["result"] == "output" and run.artifacts, run.log
    assert run.attested == {} and github.attestations == {}
    [comment] = run.comments
    assert "gh attestation verify" not in comment["body"] and "cp mcptape-artifact/fresh/" in one_command_a_line(comment["body"])


def test_the_attestation_step_needs_the_id_token_permission(runner: ActionRunner, workspace: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "run" / "fresh"
    fresh.mkdir(parents=True)
    (fresh / "a.tape.jsonl").write_text(json.dumps({"mcptape": "tape"}) + "\n", encoding="utf-8")
    outputs = {"run": {"attest-subjects": f"{fresh}/*.tape.*", "result": "output"}}
    assert runner.run(workspace, EXAMPLE, only=["attest"], prior_outputs=outputs).result == "success"
    runner.id_token = False
    assert runner.run(workspace, EXAMPLE, only=["attest"], prior_outputs=outputs).result == "failure"
