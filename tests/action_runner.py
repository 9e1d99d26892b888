"""A composite-action runner for the tests: action.yml's own steps, run as the Actions runner runs them.

Reads `action.yml` and executes each `run:` step the way GitHub's runner does for `shell: bash`:
the script is written to a file under RUNNER_TEMP and run as `bash --noprofile --norc -eo
pipefail FILE`, in `working-directory` (relative to GITHUB_WORKSPACE), with the step's `env:` on
top of the job's environment. Expressions (`${{ inputs.x }}` with the inputs' defaults, `${{
steps.<id>.outputs.<name> }}`, `${{ github.token }}` ...) are substituted into `env:`,
`working-directory:` and `run:` as Actions does before the shell sees them; an expression this
runner does not know fails the run instead of reading as "" (a silent difference from GitHub).

Each step gets its own GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH and GITHUB_STEP_SUMMARY files,
read back after it the way the runner reads them (`name=value` and `name<<DELIM` blocks; for a
name set twice the last value wins); GITHUB_ENV and GITHUB_PATH apply to the later steps. The
job environment is what a hosted runner gives a step: GITHUB_ACTIONS=true, CI=true,
GITHUB_WORKSPACE, GITHUB_ACTION_PATH (this checkout), GITHUB_EVENT_PATH (a `pull_request`
event), GITHUB_REPOSITORY, GITHUB_API_URL pointing at the loopback GitHub stand-in
(tests/github_fake.py), RUNNER_TEMP. A failing step fails the job and the later steps are
skipped unless their `if:` holds a status function (`!cancelled()`, `always()`), as in a composite
action. `if:` conditions are evaluated for the few forms action.yml uses (`&&` of `!cancelled()`,
`always()`, `a == 'x'`, `a != 'x'`); anything else fails the run rather than guess.

The `uses:` steps are Node actions talking to GitHub's services, which cannot be reached here;
each must be pinned to a full commit SHA. actions/upload-artifact is not run: what it was given
(`with:`, evaluated) and the files under its `path` at that moment are recorded as an
ArtifactUpload, which is what a test can check about an artifact. actions/cache/restore and
actions/cache/save are emulated over a directory that stands in for the Actions cache service
(`cache_store`, one per runner unless a test shares it between jobs): save copies `path` under
its `key` (an existing key is kept, as the service keeps the first save), restore copies it back
on an exact key match and sets `cache-hit` to `true` (on a miss the output stays unset).
github/codeql-action/upload-sarif is not run either: what it was given and the SARIF file it
names are recorded as an ArtifactUpload (its `files` hold that one file).
actions/attest-build-provenance is stubbed at the GitHub boundary: its `subject-path` globs are
resolved and each file's sha256 put in an in-toto statement, which is POSTed to the fake GitHub's
attestations endpoint with the job token as the real action does (no Sigstore signing: no OIDC
issuer here); without `id_token` (the job's `id-token: write`) the step fails as the real one does.

Nothing here is mocked: the install step really creates a venv and pip-installs the checkout with
no extras. GITHUB_ACTION_PATH is a copy of this checkout's sources under RUNNER_TEMP, as the
runner downloads an action (pip builds in the source tree: the working copy stays clean, and a
stale build/ there cannot leak into the install). RUNNER_TEMP lives as long as a job does; tests
share one per pytest session (`shared_runner_temp`), like several uses of the action in one job,
so the venv is built once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.github_fake import FakeGitHub

ACTION_FILE = ROOT / "action.yml"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
BASH = shutil.which("bash") or "/bin/bash"
# The runner's command line for `shell: bash` ({0} is the script file).
BASH_COMMAND = [BASH, "--noprofile", "--norc", "-eo", "pipefail"]
STEP_TIMEOUT = 600  # the install step runs pip
STATUS_FUNCTION = re.compile(r"\b(always|cancelled|failure)\(\)")
UPLOAD_ARTIFACT = re.compile(r"actions/upload-artifact@[0-9a-f]{40}")
# The steps of action.yml that install mcptape: a test that needs only the installed mcptape runs these.
INSTALL_STEPS = ("python", "key", "cache", "install", "save")
REGISTRY_ACCESS = frozenset({"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "PIP_CERT", "PIP_INDEX_URL",
                             "UV_INDEX_URL", "UV_DEFAULT_INDEX", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
                             "http_proxy", "https_proxy", "no_proxy"})
CACHE_ACTION = re.compile(r"actions/cache/(restore|save)@[0-9a-f]{40}")
# actions/cache v4's restore and save inputs (their action.yml files).
CACHE_INPUTS = {"restore": {"path", "key", "restore-keys", "fail-on-cache-miss", "lookup-only", "enableCrossOsArchive"},
                "save": {"path", "key", "upload-chunk-size", "enableCrossOsArchive"}}
UPLOAD_SARIF = re.compile(r"github/codeql-action/upload-sarif@[0-9a-f]{40}")
# github/codeql-action/upload-sarif's inputs (its action.yml), those a composite action would set.
UPLOAD_SARIF_INPUTS = {"sarif_file", "category", "checkout_path", "ref", "sha", "token", "wait-for-processing"}
# actions/upload-artifact v4's inputs (its action.yml).
UPLOAD_ARTIFACT_INPUTS = {"name", "path", "if-no-files-found", "retention-days", "compression-level", "overwrite",
                          "include-hidden-files"}
ATTEST = re.compile(r"actions/attest-build-provenance@[0-9a-f]{40}")
# actions/attest-build-provenance's inputs (its action.yml).
ATTEST_INPUTS = {"subject-path", "subject-digest", "subject-name", "subject-checksums", "push-to-registry",
                 "show-summary", "github-token"}


def load_action(path: Path = ACTION_FILE) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")))


def shared_runner_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One RUNNER_TEMP for the whole pytest session (the action's venv is built in it once)."""
    path = tmp_path_factory.getbasetemp() / "runner-temp"
    path.mkdir(exist_ok=True)
    return path


# What a checkout of the action does not hold: local installs, caches, build output.
NOT_IN_A_CHECKOUT = shutil.ignore_patterns(
    ".git", ".venv", "node_modules", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "bench")


def example_workspace(parent: Path) -> Path:
    """A checkout of a repository that uses the action: the bundled example's config, golden tapes and server."""
    ws = parent / "ws"
    shutil.copytree(ROOT / "fixtures" / "example", ws / "fixtures" / "example",
                    ignore=shutil.ignore_patterns("demo.py", "__pycache__", ".mcptape"))
    shutil.copytree(ROOT / "fixtures" / "servers", ws / "fixtures" / "servers", ignore=shutil.ignore_patterns("__pycache__"))
    return ws


def action_checkout(runner_temp: Path) -> Path:
    """The action's sources as the runner would download them, copied once per RUNNER_TEMP."""
    path = runner_temp / "_actions" / "mcptape"
    if not path.is_dir():
        shutil.copytree(ROOT, path, ignore=NOT_IN_A_CHECKOUT)
    return path


def parse_file_commands(text: str) -> dict[str, str]:
    """A GITHUB_OUTPUT or GITHUB_ENV file as the runner reads it: `k=v` lines and `k<<DELIM` blocks."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            value: list[str] = []
            while i < len(lines) and lines[i] != delim:
                value.append(lines[i])
                i += 1
            if i == len(lines):
                raise AssertionError(f"{name}<<{delim}: the delimiter never comes (the runner fails the step)")
            i += 1
            out[name] = "\n".join(value)
        else:
            name, sep, value_text = line.partition("=")
            if not sep:
                raise AssertionError(f"invalid file command line {line!r} (the runner fails the step)")
            out[name] = value_text
    return out


@dataclass
class WorkflowCommand:
    """One `::name key=value,...::message` line a step printed (and the runner acted on)."""

    name: str
    properties: dict[str, str]
    message: str


def _unescape(value: str, *, property_value: bool = False) -> str:
    value = value.replace("%0D", "\r").replace("%0A", "\n")
    if property_value:
        value = value.replace("%3A", ":").replace("%2C", ",")
    return value.replace("%25", "%")


def workflow_commands(stdout: str) -> list[WorkflowCommand]:
    """The workflow commands in a step's stdout, as the runner sees them: nothing between
    `::stop-commands::TOKEN` and `::TOKEN::` counts."""
    found: list[WorkflowCommand] = []
    stopped: str | None = None
    for line in stdout.splitlines():
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        m = re.match(r"::([A-Za-z-]+)(?: ([^:]*))?::(.*)$", line)
        if not m:
            continue
        name, props, message = m.group(1), m.group(2) or "", m.group(3)
        if name == "stop-commands":
            stopped = message
            continue
        properties = {}
        for part in filter(None, props.split(",")):
            key, _, value = part.partition("=")
            properties[key] = _unescape(value, property_value=True)
        found.append(WorkflowCommand(name, properties, _unescape(message)))
    return found


@dataclass
class StepRun:
    id: str
    name: str
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    commands: list[WorkflowCommand]
    seconds: float = 0.0  # wall time of the step's script (bench/bench_action.py reads it)

    def annotations(self, name: str) -> list[WorkflowCommand]:
        return [c for c in self.commands if c.name == name]


@dataclass
class ArtifactUpload:
    """What the upload-artifact step was asked to upload: its inputs, and the files then under `path`."""

    uses: str
    inputs: dict[str, str]
    files: dict[str, bytes]  # path relative to `path` -> content


@dataclass
class ActionRun:
    steps: list[StepRun]
    outputs: dict[str, str]  # the action's own outputs (action.yml `outputs:`), evaluated
    summary: str  # the job summary: every step's GITHUB_STEP_SUMMARY, in order
    comments: list[dict[str, Any]]  # the PR's comment thread on the fake GitHub after the run
    result: str  # "success" or "failure", as the job would end
    artifacts: list[ArtifactUpload] = field(default_factory=list)
    attested: dict[str, str] = field(default_factory=dict)  # subject name -> sha256, as the attest step stored them

    def step(self, step_id: str) -> StepRun:
        return next(s for s in self.steps if s.id == step_id)

    @property
    def log(self) -> str:
        """Everything the steps printed, for assertion messages."""
        return "\n".join(f"--- step {s.id} (exit {s.returncode})\n{s.stdout}{s.stderr}" for s in self.steps)


@dataclass
class ActionRunner:
    """Runs action.yml's steps for one job: a workspace, a runner temp dir, a PR on a fake GitHub."""

    runner_temp: Path
    github: FakeGitHub | None = None
    token: str = "ghs_job_token"  # what `${{ github.token }}` evaluates to
    repo: str = "acme/calc"
    pr: int | None = 7  # None: a push event
    action_dir: Path | None = None  # GITHUB_ACTION_PATH; None: a copy of this checkout (action_checkout)
    action: dict[str, Any] = field(default_factory=load_action)
    # What `${{ github.action_repository }}`/`action_ref` are: empty for a local `uses: ./`.
    action_repository: str = ""
    action_ref: str = ""
    cache_store: Path | None = None  # the Actions cache service; None: one of this runner's own
    id_token: bool = True  # the job has `permissions: id-token: write` (the attestation step needs it)

    def __post_init__(self) -> None:
        if self.action_dir is None:
            self.action_dir = action_checkout(self.runner_temp)
        if self.cache_store is None:
            self.cache_store = self.runner_temp / "_actions_cache"

    def run(
        self,
        workspace: Path,
        inputs: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        only: Sequence[str] | None = None,
        prior_outputs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> ActionRun:
        """Run the action (the steps named in `only`, with `prior_outputs` standing in for the
        outputs of steps left out) as one `uses:` step whose `env:` is `env`."""
        inputs = dict(inputs or {})
        unknown = set(inputs) - set(self.action.get("inputs") or {})
        if unknown:
            raise AssertionError(f"inputs not declared in action.yml: {sorted(unknown)}")
        job_env = self._job_env(workspace)
        job_env.update(env or {})
        step_outputs: dict[str, dict[str, str]] = {k: dict(v) for k, v in (prior_outputs or {}).items()}
        runs: list[StepRun] = []
        uploads: list[ArtifactUpload] = []
        attested: dict[str, str] = {}
        result = "success"
        for index, step in enumerate(self.action["runs"]["steps"]):
            step_id = str(step.get("id") or f"step{index}")
            if only is not None and step_id not in only:
                continue
            condition = str(step.get("if", ""))
            if result == "failure" and not STATUS_FUNCTION.search(condition):
                continue  # a failed step skips the rest, except steps that ask to run anyway
            if condition and not _Context(self, inputs, step_outputs).condition(condition):
                continue
            if "uses" in step and CACHE_ACTION.fullmatch(str(step["uses"])):
                step_outputs[step_id] = self._cache(step_id, step, inputs, step_outputs)
                continue
            if "uses" in step and ATTEST.fullmatch(str(step["uses"])):
                ok = self._attest(step_id, step, inputs, step_outputs, workspace, attested)
                result = result if ok else "failure"
                continue
            if "uses" in step:
                uploads.append(self._upload(step_id, step, inputs, step_outputs, workspace))
                continue
            if step.get("shell") != "bash" or "run" not in step:
                raise AssertionError(f"step {step_id}: only `run:` steps with `shell: bash` are emulated")
            run = self._run_step(step_id, step, inputs, step_outputs, job_env, workspace)
            runs.append(run)
            step_outputs[step_id] = run.outputs
            if run.returncode != 0:
                result = "failure"
        context = _Context(self, inputs, step_outputs)
        outputs = {name: context.evaluate(str(spec.get("value", ""))) for name, spec in (self.action.get("outputs") or {}).items()}
        comments = self.github.thread(self.repo, self.pr) if self.github is not None and self.pr is not None else []
        return ActionRun(runs, outputs, "".join(r.summary for r in runs), comments, result, uploads, attested)

    def _attest(self, step_id: str, step: dict[str, Any], inputs: dict[str, str],
                step_outputs: dict[str, dict[str, str]], workspace: Path, attested: dict[str, str]) -> bool:
        """actions/attest-build-provenance, stubbed at the GitHub boundary (module doc); False: it failed."""
        import base64
        import glob
        import hashlib
        import urllib.request

        context = _Context(self, inputs, step_outputs)
        given = {k: context.evaluate(str(v)) for k, v in (step.get("with") or {}).items()}
        unknown = set(given) - ATTEST_INPUTS
        if unknown:
            raise AssertionError(f"step {step_id}: attest-build-provenance has no input {sorted(unknown)}")
        if not self.id_token:
            return False  # "Unable to get ACTIONS_ID_TOKEN_REQUEST_URL env variable"
        patterns = [p.strip() for p in re.split(r"[\n,]", given.get("subject-path", "")) if p.strip()]
        files = sorted({f for p in patterns for f in glob.glob(p if Path(p).is_absolute() else str(workspace / p))})
        if not files:
            raise AssertionError(f"step {step_id}: subject-path {given.get('subject-path')!r} matches no file "
                                 "(the real action fails the job)")
        digests = {Path(f).name: hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in files}
        subjects = [{"name": name, "digest": {"sha256": digest}} for name, digest in digests.items()]
        statement = {"_type": "https://in-toto.io/Statement/v1", "subject": subjects,
                     "predicateType": "https://slsa.dev/provenance/v1", "predicate": {}}
        bundle = {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                  "dsseEnvelope": {"payload": base64.b64encode(json.dumps(statement).encode()).decode(),
                                   "payloadType": "application/vnd.in-toto+json", "signatures": []}}
        assert self.github is not None, "the attestation step posts to GitHub"
        request = urllib.request.Request(f"{self.github.url}/repos/{self.repo}/attestations", method="POST",
                                         data=json.dumps({"bundle": bundle}).encode(),
                                         headers={"Authorization": f"token {given.get('github-token') or self.token}",
                                                  "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30):
                pass
        except OSError:
            return False
        attested.update(digests)
        return True

    def _upload(self, step_id: str, step: dict[str, Any], inputs: dict[str, str],
                step_outputs: dict[str, dict[str, str]], workspace: Path) -> ArtifactUpload:
        uses = str(step["uses"])
        if UPLOAD_SARIF.fullmatch(uses):
            return self._upload_sarif(step_id, uses, step, inputs, step_outputs, workspace)
        if not UPLOAD_ARTIFACT.fullmatch(uses):
            raise AssertionError(f"step {step_id}: `uses: {uses}` is not emulated (only upload-artifact pinned to a SHA)")
        context = _Context(self, inputs, step_outputs)
        given = {k: context.evaluate(str(v)) for k, v in (step.get("with") or {}).items()}
        unknown = set(given) - UPLOAD_ARTIFACT_INPUTS
        if unknown:
            raise AssertionError(f"step {step_id}: upload-artifact has no input {sorted(unknown)}")
        if not given.get("name") or not given.get("path"):
            raise AssertionError(f"step {step_id}: upload-artifact without a name or a path: {given}")
        root = Path(given["path"]) if Path(given["path"]).is_absolute() else workspace / given["path"]
        files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
        if not files and given.get("if-no-files-found", "warn") == "error":
            raise AssertionError(f"step {step_id}: no files under {root}")
        return ArtifactUpload(uses, given, files)

    def _cache(self, step_id: str, step: dict[str, Any], inputs: dict[str, str],
               step_outputs: dict[str, dict[str, str]]) -> dict[str, str]:
        """actions/cache/restore or /save over `cache_store` (module docstring); the step's outputs."""
        m = CACHE_ACTION.fullmatch(str(step["uses"]))
        assert m is not None and self.cache_store is not None
        context = _Context(self, inputs, step_outputs)
        given = {k: context.evaluate(str(v)) for k, v in (step.get("with") or {}).items()}
        unknown = set(given) - CACHE_INPUTS[m.group(1)]
        if unknown:
            raise AssertionError(f"step {step_id}: actions/cache/{m.group(1)} has no input {sorted(unknown)}")
        if not given.get("key") or not given.get("path") or "\n" in given["path"]:
            raise AssertionError(f"step {step_id}: one absolute path and a key are what this runner emulates: {given}")
        path, stored = Path(given["path"]), self.cache_store / given["key"]
        if m.group(1) == "save":
            if not path.is_dir():
                raise AssertionError(f"step {step_id}: nothing to save at {path} (the action fails: path does not exist)")
            if not stored.exists():
                shutil.copytree(path, stored, symlinks=True)
            return {}
        if not stored.is_dir():
            return {}
        if path.exists():
            shutil.rmtree(path)
        shutil.copytree(stored, path, symlinks=True)
        return {"cache-hit": "true", "cache-primary-key": given["key"], "cache-matched-key": given["key"]}

    def _upload_sarif(self, step_id: str, uses: str, step: dict[str, Any], inputs: dict[str, str],
                      step_outputs: dict[str, dict[str, str]], workspace: Path) -> ArtifactUpload:
        given = {k: _Context(self, inputs, step_outputs).evaluate(str(v)) for k, v in (step.get("with") or {}).items()}
        unknown = set(given) - UPLOAD_SARIF_INPUTS
        if unknown:
            raise AssertionError(f"step {step_id}: upload-sarif has no input {sorted(unknown)}")
        path = Path(given.get("sarif_file", ""))
        path = path if path.is_absolute() else workspace / path
        if not path.is_file():  # the real action fails the step on a missing file
            raise AssertionError(f"step {step_id}: upload-sarif: no SARIF file at {path}")
        return ArtifactUpload(uses, given, {path.name: path.read_bytes()})

    # --- the job ----------------------------------------------------------------------------------

    def _job_env(self, workspace: Path) -> dict[str, str]:
        """What a hosted runner gives every step: a plain PATH and HOME, GITHUB_* and RUNNER_*."""
        env = {
            "PATH": _user_path(),
            "HOME": os.environ.get("HOME", str(self.runner_temp)),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_ACTION_PATH": str(self.action_dir),
            "GITHUB_REPOSITORY": self.repo,
            "GITHUB_REPOSITORY_OWNER": self.repo.split("/")[0],
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_API_URL": self.github.url if self.github is not None else "http://127.0.0.1:9",
            "GITHUB_SHA": "0" * 40,
            "GITHUB_RUN_ID": "1",
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_JOB": "mcptape",
            "GITHUB_WORKFLOW": "ci",
            "RUNNER_OS": "Linux",
            "RUNNER_TEMP": str(self.runner_temp),
        }
        # How this machine reaches the package registry (a proxy, its certificates): a hosted runner
        # needs none of it, but the install steps here must reach the registry as the tests do.
        env.update({k: v for k, v in os.environ.items() if k in REGISTRY_ACCESS})
        events = self.runner_temp / "_github_workflow"
        events.mkdir(exist_ok=True)
        event_path = events / f"event-{uuid.uuid4().hex}.json"
        if self.pr is not None:
            event = {"action": "synchronize", "number": self.pr, "pull_request": {
                "number": self.pr, "head": {"sha": "1" * 40, "repo": {"full_name": self.repo}},
                "base": {"repo": {"full_name": self.repo}}}}
            env.update(GITHUB_EVENT_NAME="pull_request", GITHUB_REF=f"refs/pull/{self.pr}/merge")
        else:
            event = {"ref": "refs/heads/main"}
            env.update(GITHUB_EVENT_NAME="push", GITHUB_REF="refs/heads/main")
        event_path.write_text(json.dumps(event), encoding="utf-8")
        env["GITHUB_EVENT_PATH"] = str(event_path)
        return env

    def _run_step(
        self,
        step_id: str,
        step: dict[str, Any],
        inputs: dict[str, str],
        step_outputs: dict[str, dict[str, str]],
        job_env: dict[str, str],
        workspace: Path,
    ) -> StepRun:
        context = _Context(self, inputs, step_outputs)
        commands_dir = self.runner_temp / "_runner_file_commands"
        commands_dir.mkdir(exist_ok=True)
        unique = uuid.uuid4().hex
        files = {name: commands_dir / f"{name.lower()}_{unique}" for name in
                 ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")}
        for path in files.values():
            path.write_text("", encoding="utf-8")
        env = dict(job_env)
        env.update({k: context.evaluate(str(v)) for k, v in (step.get("env") or {}).items()})
        env.update({k: str(v) for k, v in files.items()})
        script = self.runner_temp / f"{unique}.sh"
        script.write_text(context.evaluate(str(step["run"])), encoding="utf-8")
        workdir = workspace / context.evaluate(str(step.get("working-directory", ".")))
        started = time.perf_counter()
        proc = subprocess.run([*BASH_COMMAND, str(script)], cwd=workdir, env=env, capture_output=True,
                              text=True, timeout=STEP_TIMEOUT)
        seconds = time.perf_counter() - started
        # GITHUB_ENV and GITHUB_PATH reach the steps after this one.
        job_env.update(parse_file_commands(files["GITHUB_ENV"].read_text(encoding="utf-8")))
        added = [line for line in files["GITHUB_PATH"].read_text(encoding="utf-8").splitlines() if line]
        if added:
            job_env["PATH"] = os.pathsep.join([*reversed(added), job_env["PATH"]])
        return StepRun(
            id=step_id,
            name=str(step.get("name", step_id)),
            returncode=proc.returncode,
            stdout=proc.stdout,
            stderr=proc.stderr,
            outputs=parse_file_commands(files["GITHUB_OUTPUT"].read_text(encoding="utf-8")),
            summary=files["GITHUB_STEP_SUMMARY"].read_text(encoding="utf-8"),
            commands=workflow_commands(proc.stdout),
            seconds=seconds,
        )


@dataclass
class _Context:
    """The expression contexts a composite action's steps can read, evaluated as Actions does."""

    runner: ActionRunner
    inputs: dict[str, str]
    steps: dict[str, dict[str, str]]

    def evaluate(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self._one(m.group(1)), text)

    def condition(self, text: str) -> bool:
        """An `if:` as action.yml writes them: `${{ a && b }}` of `!cancelled()`, `always()`,
        `x == 'lit'` and `x != 'lit'`; any other form fails the run."""
        m = re.fullmatch(r"\s*\$\{\{\s*(.*?)\s*\}\}\s*", text)
        expr = m.group(1) if m else text
        ok = True
        for term in (t.strip() for t in expr.split("&&")):
            if term in ("!cancelled()", "always()"):
                continue  # this runner never cancels
            cmp = re.fullmatch(r"([\w.-]+)\s*(==|!=)\s*'([^']*)'", term)
            if cmp is None:
                raise AssertionError(f"if: {text}: {term!r} is a form this runner does not emulate")
            value = self._one(cmp.group(1))
            ok = ok and ((value == cmp.group(3)) if cmp.group(2) == "==" else (value != cmp.group(3)))
        return ok

    def _one(self, expr: str) -> str:
        if expr.startswith("inputs."):
            name = expr[len("inputs."):]
            declared = self.runner.action.get("inputs") or {}
            if name not in declared:
                raise AssertionError(f"${{{{ {expr} }}}}: no such input in action.yml")
            if name in self.inputs:
                return self.inputs[name]
            return self.evaluate(str(declared[name].get("default", "")))  # a default may be an expression
        m = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
        if m:
            return self.steps.get(m.group(1), {}).get(m.group(2), "")  # unset outputs read as ""
        known = {
            "github.token": self.runner.token,
            "github.action_path": str(self.runner.action_dir),
            "github.repository": self.runner.repo,
            "github.action_repository": self.runner.action_repository,
            "github.action_ref": self.runner.action_ref,
            "runner.temp": str(self.runner.runner_temp),
            "runner.os": "Linux",
        }
        if expr in known:
            return known[expr]
        raise AssertionError(f"${{{{ {expr} }}}}: an expression this runner does not emulate")


def _user_path() -> str:
    """This machine's PATH without the test run's own virtualenv: a runner has no mcptape on it."""
    venv = Path(sys.prefix).resolve() if sys.prefix != sys.base_prefix else None
    keep = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry:
            continue
        resolved = Path(entry).resolve()
        if venv is not None and (resolved == venv or venv in resolved.parents):
            continue
        keep.append(entry)
    return os.pathsep.join(keep)
