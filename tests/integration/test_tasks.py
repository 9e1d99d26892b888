"""Issue 29 item 1: a `call` step with `task: true` against a real task-capable server.

server-everything's `simulate-research-query` (taskSupport "required", ~4 s in four stages,
pollInterval 1000 ms, random task ids): `mcptape ci` calls it with `params.task`, polls
tasks/get to completion within the step's timeout and fetches tasks/result, all as step 1.
The golden holds the status path (a poll is kept only when the status changed) and the
final result, with the task id normalized, so an unchanged server checks green (twice, and
`--update-golden` leaves the golden byte-identical), while another topic drifts, and play
serves the golden back to the same session green.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.integration.real_servers import mcptape, node_release

CONFIG = """\
version: 1
golden_dir: tapes
servers:
  everything:
    command: {command}
    protocol: "2025-11-25"
sessions:
  - name: research
    server: everything
    step_timeout: 30
    steps:
      - call: simulate-research-query
        arguments: {{topic: {topic}}}
        task: true
"""


def write(root: Path, topic: str, command: list[str] | None = None) -> None:
    command = command or ["node", str(node_release("everything")), "stdio"]
    (root / "mcptape.yml").write_text(CONFIG.format(command=json.dumps(command), topic=topic), encoding="utf-8")


def test_a_task_step_records_its_status_path_and_result_and_checks_green(tmp_path: Path) -> None:
    write(tmp_path, "tapes")
    created = mcptape("ci", "--update-golden", cwd=tmp_path)
    assert created.returncode == 0, created.stdout + created.stderr
    golden = tmp_path / "tapes" / "research.tape.jsonl"
    events = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines()[1:-1]]
    asked = [(e["method"], e["id"]) for e in events if e.get("kind") == "request" and e.get("dir") == "c2s"]
    assert asked[-3:] == [("tools/call", 3), ("tasks/get", "mcptape-poll-1"), ("tasks/result", 4)], asked
    polled = [e for e in events if e.get("kind") == "response" and e.get("method") == "tasks/get"]
    assert [p["msg"]["result"]["status"] for p in polled] == ["completed"]  # the path: working (created) → completed
    assert all(e.get("step") == 1 for e in events if e.get("method") in ("tools/call", "tasks/get", "tasks/result"))
    assert "<TASK_ID>" in golden.read_text(encoding="utf-8") and "Research Report: tapes" in golden.read_text(encoding="utf-8")
    before = golden.read_bytes()
    for _ in range(2):  # poll counts differ run to run; the verdict does not
        check = mcptape("ci", cwd=tmp_path)
        assert check.returncode == 0, check.stdout + check.stderr
    assert mcptape("ci", "--update-golden", cwd=tmp_path).returncode == 0
    assert golden.read_bytes() == before
    # Positive control: another topic is another result.
    write(tmp_path, "records")
    drifted = mcptape("ci", cwd=tmp_path)
    assert drifted.returncode == 1 and "tasks/result" in drifted.stdout, drifted.stdout + drifted.stderr
    # play serves the golden to the same session: the task made, its status path and its result
    # replayed (the recorded 1000 ms pollInterval served short: replay/tasks.py). The status pushes
    # the golden keeps after the last step (canonical order) come after the last answer, once the
    # client has stopped reading, so the comparison is of the task's own exchange.
    write(tmp_path, "tapes", [sys.executable, "-m", "mcptape", "play", "--keep-placeholders", str(golden)])
    mcptape("ci", "--out-dir", "fresh", cwd=tmp_path)
    replayed = [json.loads(line) for line in (tmp_path / "fresh" / "research.tape.jsonl").read_text(
        encoding="utf-8").splitlines()[1:-1]]
    assert task_exchange(replayed) == task_exchange(events) and len(task_exchange(events)) == 6
    assert golden.read_bytes() == before


def task_exchange(events: list[dict[str, Any]]) -> list[Any]:
    """The step's task traffic: tools/call, tasks/get polls and tasks/result, requests and answers."""
    methods = ("tools/call", "tasks/get", "tasks/result")
    return [(e["dir"], e["kind"], e.get("method"), e["msg"].get("params"), e["msg"].get("result"))
            for e in events if e.get("method") in methods and e.get("kind") in ("request", "response")]
