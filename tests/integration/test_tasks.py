"""Issue 29 item 1: a `call` step with `task: true` against a real task-capable server.

server-everything's `simulate-research-query` (taskSupport "required", ~4 s in four stages,
pollInterval 1000 ms, random task ids): `mcptape ci` calls it with `params.task`, polls
tasks/get to completion within the step's timeout and fetches tasks/result, all as step 1.
The golden holds the status path (a poll is kept only when the status changed) and the
final result, with the task id normalized, so an unchanged server checks green (twice, and
`--update-golden` leaves the golden byte-identical), while another topic drifts, and play
serves the golden back to the same session green. With `ambiguous: true` the task asks for
input mid-way (input_required): the client fetches tasks/result, on whose stream the server's
elicitation arrives and gets the canned answer.
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


def task_exchange(events: list[dict[str, Any]], more: tuple[str, ...] = ()) -> list[Any]:
    """The step's task traffic: tools/call, tasks/get polls and tasks/result (and `more`), requests and answers."""
    methods = ("tools/call", "tasks/get", "tasks/result", *more)
    return [(e["dir"], e["kind"], e.get("method"), e["msg"].get("params"), e["msg"].get("result"))
            for e in events if e.get("method") in methods and e.get("kind") in ("request", "response")]


ASKING = """\
version: 1
golden_dir: tapes
client:
  capabilities: {{elicitation: {{}}}}
  elicitation: {{action: accept, content: {{interpretation: {answer}}}}}
servers:
  everything:
    command: {command}
    protocol: "2025-11-25"
sessions:
  - name: ambiguous
    server: everything
    step_timeout: 30
    steps:
      - call: simulate-research-query
        arguments: {{topic: tapes, ambiguous: true}}
        task: true
"""


def test_a_task_that_asks_for_input_gets_the_canned_answer_on_the_tasks_result_stream(tmp_path: Path) -> None:
    """2025-11-25's input_required: the client stops polling and calls tasks/result, on whose
    stream the server's elicitation/create arrives (answered from `client.elicitation`) before
    the result. A changed answer is a changed result (the positive control)."""
    def write_asking(answer: str, command: list[str] | None = None) -> None:
        command = command or ["node", str(node_release("everything")), "stdio"]
        text = ASKING.format(command=json.dumps(command), answer=answer)
        (tmp_path / "mcptape.yml").write_text(text, encoding="utf-8")

    write_asking("technical")
    created = mcptape("ci", "--update-golden", cwd=tmp_path)
    assert created.returncode == 0, created.stdout + created.stderr
    golden = tmp_path / "tapes" / "ambiguous.tape.jsonl"
    events = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines()[1:-1]]
    step = [(e["dir"], e["kind"], e.get("method")) for e in events if e.get("step") == 1 and e["kind"] != "notification"]
    assert step[-6:] == [("c2s", "request", "tasks/get"), ("s2c", "response", "tasks/get"),
                         ("c2s", "request", "tasks/result"), ("s2c", "request", "elicitation/create"),
                         ("c2s", "response", "elicitation/create"), ("s2c", "response", "tasks/result")], step
    polled = [e["msg"]["result"]["status"] for e in events if e["kind"] == "response" and e.get("method") == "tasks/get"]
    assert polled[-1] == "input_required"
    assert "Research Report: tapes (technical)" in golden.read_text(encoding="utf-8")
    check = mcptape("ci", cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    write_asking("historical")
    drifted = mcptape("ci", cwd=tmp_path)
    assert drifted.returncode == 1 and "(historical)" in drifted.stdout, drifted.stdout + drifted.stderr
    # play serves it back: the polls, the tasks/result whose stream asks, the answer, the result.
    write_asking("technical", [sys.executable, "-m", "mcptape", "play", "--keep-placeholders", str(golden)])
    mcptape("ci", "--out-dir", "fresh", cwd=tmp_path)
    replayed = [json.loads(line) for line in (tmp_path / "fresh" / "ambiguous.tape.jsonl").read_text(
        encoding="utf-8").splitlines()[1:-1]]
    asked = ("elicitation/create",)
    assert task_exchange(replayed, asked) == task_exchange(events, asked) and len(task_exchange(events, asked)) == 8
