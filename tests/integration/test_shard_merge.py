"""`mcptape ci --shard I/N` + `mcptape merge`: 4 shards merged equal one unsharded run.

Real mcptape processes against the calc fixture over real pipes; two of its servers drift through
variants (output drift on one, structural on the other) while a third stays identical, so the
shards end with different exit codes and the merge must pick the worst. The PR comment of the
merge job goes to the loopback stand-in for GitHub (tests/github_fake.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CALC_SERVER, ROOT, user_env
from tests.github_fake import ACTIONS_BOT, FakeGitHub, Token
from tests.in_process import run_mcptape

TIMEOUT = 120
SHARDS = 4

CONFIG = """\
version: 1
golden_dir: tapes
servers:
  calc:
    command: [{python}, {calc}]
  calc_b:
    command: [{python}, {calc}]
    env:
      MCPTAPE_FIXTURE_VARIANT: "${{VARIANT_B:-identical}}"
  calc_c:
    command: [{python}, {calc}]
    env:
      MCPTAPE_FIXTURE_VARIANT: "${{VARIANT_C:-identical}}"
sessions:
  - name: surface
    server: calc
    steps:
      - list_tools
  - name: arithmetic
    server: calc
    steps:
      - call: add
        arguments: {{a: 2, b: 3}}
      - call: divide
        arguments: {{a: 1, b: 0}}
  - name: echo
    server: calc
    steps:
      - call: echo
        arguments: {{text: hello}}
  - name: b-add
    server: calc_b
    steps:
      - call: add
        arguments: {{a: 1, b: 2}}
  - name: b-echo
    server: calc_b
    steps:
      - call: echo
        arguments: {{text: same}}
  - name: b-divide
    server: calc_b
    steps:
      - call: divide
        arguments: {{a: 1, b: 0}}
  - name: c-surface
    server: calc_c
    steps:
      - list_tools
  - name: c-echo
    server: calc_c
    steps:
      - call: echo
        arguments: {{text: still here}}
"""
NAMES = ["surface", "arithmetic", "echo", "b-add", "b-echo", "b-divide", "c-surface", "c-echo"]
DRIFT = {"VARIANT_B": "changed_result", "VARIANT_C": "removed_tool"}


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    run_env = {k: v for k, v in user_env(PYTHONPATH=str(ROOT)).items() if k not in ("VARIANT_B", "VARIANT_C")}
    run_env.update(env or {})
    return run_mcptape(args, env=run_env, cwd=cwd, timeout=TIMEOUT)


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """The report without what legitimately differs between two runs: timings."""
    out = json.loads(json.dumps(report))
    for s in out["sessions"]:
        s.pop("duration_s", None)
    return out


class Runs:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.full: dict[str, Any] = {}
        self.full_exit = -1
        self.shard_exits: dict[int, int] = {}
        self.shard_paths: dict[int, Path] = {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Goldens recorded on the identical server, then one unsharded run and 4 shards, all drifting."""
    work = tmp_path_factory.mktemp("shards")
    config = CONFIG.format(python=json.dumps(sys.executable), calc=json.dumps(str(CALC_SERVER)))
    (work / "mcptape.yml").write_text(config, encoding="utf-8")
    rec = run(["ci", "--update-golden"], work)
    assert rec.returncode == 0, rec.stdout + rec.stderr
    r = Runs(work)
    full = run(["ci", "--json=full.json"], work, DRIFT)
    r.full_exit = full.returncode
    r.full = json.loads((work / "full.json").read_text(encoding="utf-8"))
    for i in range(1, SHARDS + 1):
        path = work / f"report-{i}.json"
        proc = run(["ci", "--shard", f"{i}/{SHARDS}", f"--json={path.name}"], work, DRIFT)
        assert path.exists(), proc.stdout + proc.stderr
        r.shard_exits[i] = proc.returncode
        r.shard_paths[i] = path
    return r


def reports(r: Runs, *indexes: int) -> list[str]:
    return [str(r.shard_paths[i]) for i in indexes]


def test_the_unsharded_run_drifts_as_set_up(runs: Runs) -> None:
    verdicts = {s["name"]: s["verdict"] for s in runs.full["sessions"]}
    assert [s["name"] for s in runs.full["sessions"]] == NAMES
    assert verdicts["b-add"] == "output" and verdicts["c-surface"] == verdicts["c-echo"] == "structural"
    assert verdicts["surface"] == verdicts["b-echo"] == verdicts["b-divide"] == "same"
    assert runs.full_exit == 2


def test_shards_split_by_sorted_name_deterministically_and_cover_every_session_once(runs: Runs) -> None:
    ordered = sorted(NAMES)
    seen: list[str] = []
    for i in range(1, SHARDS + 1):
        data = json.loads(runs.shard_paths[i].read_text(encoding="utf-8"))
        names = [s["name"] for s in data["sessions"]]
        assert data["shard"] == f"{i}/{SHARDS}"
        # Round robin over the sorted names, each shard keeping the config's order.
        assert sorted(names) == sorted(ordered[i - 1 :: SHARDS])
        assert names == [n for n in NAMES if n in names]
        assert runs.shard_exits[i] == data["exit_code"]
        seen += names
    assert sorted(seen) == ordered
    # A shard run again picks the same sessions.
    again = run(["ci", "--shard", f"3/{SHARDS}", "--json=again.json"], runs.work, DRIFT)
    assert again.returncode == runs.shard_exits[3]
    names_again = [s["name"] for s in json.loads((runs.work / "again.json").read_text(encoding="utf-8"))["sessions"]]
    assert names_again == [s["name"] for s in json.loads(runs.shard_paths[3].read_text(encoding="utf-8"))["sessions"]]


def test_four_merged_shards_equal_one_unsharded_run(runs: Runs, tmp_path: Path) -> None:
    assert len(set(runs.shard_exits.values())) > 1  # the shards really disagree; the merge must take the worst
    merged_path = tmp_path / "merged.json"
    summary = tmp_path / "summary.md"
    # Out of order on purpose: the merge restores the config's session order.
    proc = run(["merge", *reports(runs, 3, 1, 4, 2), f"--json={merged_path}", f"--summary={summary}"], runs.work)
    assert proc.returncode == runs.full_exit, proc.stdout + proc.stderr
    merged = json.loads(merged_path.read_text(encoding="utf-8"))
    assert comparable(merged) == comparable(runs.full)
    assert "warning" not in proc.stderr
    text = summary.read_text(encoding="utf-8")
    assert all(name in text for name in NAMES) and "shard" not in text.split("\n", 1)[0]
    assert "b-add" in proc.stdout and "c-surface" in proc.stdout


def test_merge_job_posts_one_pr_comment_for_all_shards(runs: Runs, tmp_path: Path) -> None:
    repo, pr = "octo/calc-server", 7
    github = FakeGitHub(tokens={"actions-token": Token(ACTIONS_BOT, app=True)}).start()
    try:
        event = tmp_path / "event.json"
        event.write_text(json.dumps({
            "number": pr,
            "pull_request": {"number": pr, "head": {"repo": {"full_name": repo}}, "base": {"repo": {"full_name": repo}}},
        }), encoding="utf-8")
        step_summary = tmp_path / "step-summary.md"
        env = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": repo,
            "GITHUB_WORKSPACE": str(runs.work),
            "GITHUB_API_URL": github.url,
            "GITHUB_STEP_SUMMARY": str(step_summary),
            "RUNNER_TEMP": str(tmp_path),
            "MCPTAPE_GITHUB_TOKEN": "actions-token",
        }
        proc = run(["merge", *reports(runs, 1, 2, 3, 4)], runs.work, env)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        comments = [c for c in github.thread(repo, pr) if c["body"].startswith("<!-- mcptape:")]
        assert len(comments) == 1
        body = comments[0]["body"]
        assert body.startswith("<!-- mcptape:mcptape.yml -->")  # the marker an unsharded run uses
        assert "b-add" in body and "c-surface" in body and "structural" in body
        assert "b-add" in step_summary.read_text(encoding="utf-8")
    finally:
        github.stop()


def test_a_missing_shard_is_named_with_its_sessions(runs: Runs, tmp_path: Path) -> None:
    proc = run(["merge", *reports(runs, 1, 2, 4), f"--json={tmp_path / 'm.json'}"], runs.work)
    assert "shard 3/4 is missing" in proc.stderr
    shard3 = [s["name"] for s in json.loads(runs.shard_paths[3].read_text(encoding="utf-8"))["sessions"]]
    assert all(name in proc.stderr for name in shard3)
    merged = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert {s["name"] for s in merged["sessions"]} == set(NAMES) - set(shard3)
    present = [runs.shard_exits[i] for i in (1, 2, 4)]
    assert proc.returncode == max(present)


def test_overlapping_reports_are_refused(runs: Runs) -> None:
    twice = run(["merge", *reports(runs, 1, 2, 2, 3, 4)], runs.work)
    assert twice.returncode == 3 and "report-2.json" in twice.stderr
    with_full = run(["merge", *reports(runs, 1), str(runs.work / "full.json")], runs.work)
    assert with_full.returncode == 3
    assert "full.json" in with_full.stderr and "report-1.json" in with_full.stderr


def test_unreadable_or_invalid_reports_exit_3_naming_the_file(runs: Runs, tmp_path: Path) -> None:
    missing = run(["merge", str(tmp_path / "nope.json")], runs.work)
    assert missing.returncode == 3 and "nope.json" in missing.stderr
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json", encoding="utf-8")
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}', encoding="utf-8")
    for bad in (garbage, other):
        proc = run(["merge", *reports(runs, 1), str(bad)], runs.work)
        assert proc.returncode == 3 and bad.name in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr


def test_reports_of_different_configs_or_splits_are_refused(runs: Runs, tmp_path: Path) -> None:
    data = json.loads(runs.shard_paths[2].read_text(encoding="utf-8"))
    data["config"] = "other.yml"
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps(data), encoding="utf-8")
    proc = run(["merge", *reports(runs, 1), str(foreign)], runs.work)
    assert proc.returncode == 3 and "different configs" in proc.stderr and "foreign.json" in proc.stderr

    data = json.loads(runs.shard_paths[2].read_text(encoding="utf-8"))
    data["sessions"][0]["name"] = "not-in-this-config"
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps(data), encoding="utf-8")
    proc = run(["merge", *reports(runs, 1), str(renamed)], runs.work)
    assert proc.returncode == 3 and "not-in-this-config" in proc.stderr

    data = json.loads(runs.shard_paths[2].read_text(encoding="utf-8"))
    data["shard"] = "2/3"
    split = tmp_path / "split.json"
    split.write_text(json.dumps(data), encoding="utf-8")
    proc = run(["merge", *reports(runs, 1), str(split)], runs.work)
    assert proc.returncode == 3 and "different splits" in proc.stderr


@pytest.mark.parametrize("value", ["0/4", "5/4", "2", "a/b", "1/0"])
def test_a_bad_shard_value_exits_3_with_the_fix(runs: Runs, value: str) -> None:
    proc = run(["ci", "--shard", value], runs.work)
    assert proc.returncode == 3
    assert f"--shard {value}" in proc.stderr and "I/N" in proc.stderr and "--shard 1/" in proc.stderr


@pytest.fixture
def copy_without_config(runs: Runs, tmp_path: Path) -> Iterator[Path]:
    for i in range(1, SHARDS + 1):
        shutil.copy(runs.shard_paths[i], tmp_path / f"report-{i}.json")
    yield tmp_path


def test_merge_without_the_config_still_gives_the_verdict(runs: Runs, copy_without_config: Path) -> None:
    files = [f"report-{i}.json" for i in range(1, SHARDS + 1)]
    proc = run(["merge", *files, "--json=m.json"], copy_without_config)
    assert proc.returncode == runs.full_exit, proc.stdout + proc.stderr
    merged = json.loads((copy_without_config / "m.json").read_text(encoding="utf-8"))
    # Without the config the order is by name; the verdicts are the same.
    assert {s["name"]: s["verdict"] for s in merged["sessions"]} == {s["name"]: s["verdict"] for s in runs.full["sessions"]}
    wrong = run(["merge", *files, "--config", str(copy_without_config / "absent.yml")], copy_without_config)
    assert wrong.returncode == 3 and "absent.yml" in wrong.stderr
