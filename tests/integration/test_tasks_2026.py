"""Issue 29 item 1: the tasks extension of 2026-07-28 (`io.modelcontextprotocol/tasks`) end to end.

The server is fixtures/servers/sdk2_tasks_server.py, on the official Python SDK 2.x (`MCPServer`
with an `Extension`: the SDK has the hooks, not a tasks runtime). `mcptape ci` calls its two
task-only tools with `task: true`: the client declares the extension in the request's
capabilities, polls tasks/get at the server's pollIntervalMs, answers the order task's
mid-way elicitation with tasks/update from `client.elicitation`, and records the status path
and the inlined result under the step. A call without `task: true` records the server's
-32021. Then, in the same test: a checked green run, a slower server (three times the polls)
still green, a changed result drifting (exit 1), and play serving the golden back to the same
scripted session (the status path and the result replayed, green against the golden).
The second test records a hand-written client that polls faster than the server asks behind
`rec`: recordings holding different numbers of polls diff the same, a changed result drifts,
and play serves a recording back to that client with the same path and results. The third
runs a task over streamable HTTP, where tasks/* are routed by `Mcp-Name` = taskId.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcptape.replay.tasks import SERVED_POLL_MS
from tests.conftest import FIXTURES, ROOT, mcptape_command, user_env
from tests.integration.http_helpers import background, free_port
from tests.integration.real_servers import mcptape

SERVER = FIXTURES / "servers" / "sdk2_tasks_server.py"
TASKS = "io.modelcontextprotocol/tasks"

CONFIG = """\
version: 1
golden_dir: tapes
client:
  capabilities: {{elicitation: {{}}}}
  elicitation: {{action: accept, content: {{quantity: 3}}}}
servers:
  tasks:
    {where}
    protocol: "2026-07-28"
sessions:
  - name: tasks
    server: tasks
    step_timeout: 30
    steps:
      - call: order
        arguments: {{item: pens}}
        task: true
"""
STEPS = """      - call: research
        arguments: {topic: tapes}
        task: true
      - call: order
        arguments: {item: pens}
        task: true
      - call: research
        arguments: {topic: plain}
"""


def write(root: Path, command: list[str] | None = None, *, url: str | None = None) -> None:
    """mcptape.yml for the server run by `command` (all three steps) or at `url` (the order only)."""
    if url is not None:
        text = CONFIG.format(where=f"url: {url}")
    else:
        text = CONFIG.format(where=f"command: {json.dumps(command)}")
        text = text[: text.index("      - call: order")] + STEPS
    (root / "mcptape.yml").write_text(text, encoding="utf-8")


def server(variant: str) -> list[str]:
    return [sys.executable, str(SERVER), "--variant", variant]


def events(golden: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines()[1:-1]]


def test_an_extension_task_records_its_status_path_and_result_and_checks_green(tmp_path: Path) -> None:
    write(tmp_path, server("identical"))
    created = mcptape("ci", "--update-golden", cwd=tmp_path)
    assert created.returncode == 0, created.text()
    golden = tmp_path / "tapes" / "tasks.tape.jsonl"
    tape = events(golden)
    sent = [e for e in tape if e.get("dir") == "c2s" and e.get("kind") == "request" and e.get("step")]
    by_step = {n: [(e["method"], e["id"]) for e in sent if e.get("step") == n] for n in (1, 2, 3)}
    assert by_step[1] == [("tools/list", 1), ("tools/call", 2), ("tasks/get", "mcptape-poll-1")], by_step
    assert by_step[2] == [("tools/call", 3), ("tasks/get", "mcptape-poll-2"), ("tasks/update", 4),
                          ("tasks/get", "mcptape-poll-3"), ("tasks/get", "mcptape-poll-4")], by_step
    assert by_step[3] == [("tools/call", 5)], by_step
    # The task calls declare the extension in their per-request capabilities; the plain one does not.
    caps = [e["msg"]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] for e in sent]
    assert [TASKS in (c.get("extensions") or {}) for c in caps] == [False, True, True, True, True, True, True, True, False]
    answers = {e["id"]: e["msg"] for e in tape if e.get("dir") == "s2c" and e.get("kind") in ("response", "error")}
    made = answers[2]["result"]
    assert made["resultType"] == "task" and made["taskId"] == "<TASK_ID>" and made["status"] == "working"
    assert made["pollIntervalMs"] == "<POLL_INTERVAL>" and made["createdAt"] == "<TIMESTAMP>"
    # The status path: working (the task made) → completed; working → input_required → working → completed.
    assert answers["mcptape-poll-1"]["result"]["status"] == "completed"
    assert answers["mcptape-poll-1"]["result"]["result"]["content"][0]["text"] == "Report on tapes: 3 sources"
    asked = answers["mcptape-poll-2"]["result"]
    assert asked["status"] == "input_required" and "How many pens?" in json.dumps(asked["inputRequests"])
    update = next(e["msg"]["params"] for e in sent if e["method"] == "tasks/update")
    assert update["taskId"] == "<TASK_ID>" and update["inputResponses"] == {
        "quantity-1": {"action": "accept", "content": {"quantity": 3}}}
    assert [answers[f"mcptape-poll-{n}"]["result"]["status"] for n in (3, 4)] == ["working", "completed"]
    assert answers["mcptape-poll-4"]["result"]["result"]["content"][0]["text"] == "Ordered 3 x pens"
    assert answers[5]["error"]["code"] == -32021  # task-only, and this request did not declare the extension
    before = golden.read_bytes()

    check = mcptape("ci", cwd=tmp_path)
    assert check.returncode == 0, check.text()
    assert mcptape("ci", "--update-golden", cwd=tmp_path).returncode == 0
    assert golden.read_bytes() == before  # polls, ids and times differ run to run; the golden does not

    # Only timing changed (three times the work, so about three times the polls): no drift.
    write(tmp_path, server("slow"))
    slow = mcptape("ci", cwd=tmp_path)
    assert slow.returncode == 0, slow.text()

    # The result changed: output drift, named at the research call's poll.
    write(tmp_path, server("changed_result"))
    drifted = mcptape("ci", cwd=tmp_path)
    assert drifted.returncode == 1, drifted.text()
    assert "4 sources" in drifted.stdout and "tasks/get" in drifted.stdout, drifted.text()
    assert golden.read_bytes() == before

    # play serves the golden: the same session replayed from it reads the same path and result.
    write(tmp_path, [sys.executable, "-m", "mcptape", "play", "--keep-placeholders", str(golden)])
    replayed = mcptape("ci", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.text()


POLL_S = 0.02  # the raw client's own cadence: faster than the server's 100 ms, so it polls repeats


def drive(command: list[str]) -> dict[str, Any]:
    """A hand-written JSON-RPC client (as small agents have) behind `command`: discover, then both
    task tools, polling tasks/get every POLL_S whatever the server suggests until the task ends,
    answering the order's question with 3. Returns per tool the statuses seen and the result,
    and the poll intervals it was told."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=user_env(PYTHONPATH=str(ROOT)))
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    ids = iter(range(1, 1000))
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}}}

    def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        msg_id = next(ids)
        stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method,
                                "params": {"_meta": meta, **params}}) + "\n")
        stdin.flush()
        while True:
            answer: dict[str, Any] = json.loads(stdout.readline())
            if answer.get("id") == msg_id:
                return answer

    seen: dict[str, Any] = {"intervals": set()}
    try:
        assert "result" in ask("server/discover", {})
        for tool, arguments in (("research", {"topic": "tapes"}), ("order", {"item": "pens"})):
            task = ask("tools/call", {"name": tool, "arguments": arguments})["result"]
            path, got = [task["status"]], task
            while got["status"] not in ("completed", "failed", "cancelled"):
                seen["intervals"].add(got["pollIntervalMs"])
                if got["status"] == "input_required" and path.count("input_required") == 1 and "answered" not in seen:
                    seen["answered"] = ask("tasks/update", {"taskId": task["taskId"], "inputResponses": {
                        key: {"action": "accept", "content": {"quantity": 3}} for key in got["inputRequests"]}})
                time.sleep(POLL_S)
                got = ask("tasks/get", {"taskId": task["taskId"]})["result"]
                path.append(got["status"])
            seen[tool] = ([s for i, s in enumerate(path) if i == 0 or s != path[i - 1]], len(path),
                          got["result"]["content"][0]["text"])
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return seen


def test_rec_tapes_of_one_task_compare_by_their_status_path_and_play_serves_them(tmp_path: Path) -> None:
    """Behind `rec`, a client polls as often as it likes: two recordings of the same server differ
    in how many polls they hold, which `diff` reads as timing; a changed result still drifts; and
    play serves a recording back to the client: the same path and results, the waits short."""
    tapes = {}
    for name, variant in (("a", "identical"), ("b", "identical"), ("slow", "slow"), ("changed", "changed_result")):
        tapes[name] = tmp_path / f"{name}.tape.jsonl"
        seen = drive(mcptape_command("rec", "--out", str(tapes[name]), "--", *server(variant)))
        assert seen["order"][0] == ["working", "input_required", "working", "completed"], seen
        assert seen["intervals"] == {100}
    polls = {name: tape.read_text(encoding="utf-8").count('"method":"tasks/get"') for name, tape in tapes.items()}
    assert polls["slow"] > polls["a"], polls  # the same path, polled more times (three times the work)
    for other in ("b", "slow"):
        same = mcptape("diff", str(tapes["a"]), str(tapes[other]), cwd=tmp_path)
        assert same.returncode == 0, same.text()
    changed = mcptape("diff", str(tapes["a"]), str(tapes["changed"]), cwd=tmp_path)
    assert changed.returncode == 1 and "4 sources" in changed.stdout, changed.text()

    recorded = drive(mcptape_command("rec", "--out", str(tmp_path / "live.tape.jsonl"), "--", *server("slow")))
    replayed = drive(mcptape_command("play", str(tapes["slow"])))
    for tool in ("research", "order"):
        assert replayed[tool][0] == recorded[tool][0] and replayed[tool][2] == recorded[tool][2], (replayed, recorded)
    assert replayed["research"][2] == "Report on tapes: 3 sources"
    assert replayed["intervals"] == {SERVED_POLL_MS}  # recorded: 100 ms; the replay does not wait for it


def test_an_extension_task_over_streamable_http_is_routed_by_its_task_id(tmp_path: Path) -> None:
    """Over HTTP the tasks/* requests carry `Mcp-Name` = taskId (the fixture refuses them with
    -32020 otherwise): the task runs to its result, and checks green against its golden."""
    port = free_port()
    with background([*server("identical"), "--http", str(port)], port, timeout=60):
        write(tmp_path, url=f"http://127.0.0.1:{port}/mcp")
        created = mcptape("ci", "--update-golden", cwd=tmp_path)
        assert created.returncode == 0, created.text()
        check = mcptape("ci", cwd=tmp_path)
        assert check.returncode == 0, check.text()
    tape = events(tmp_path / "tapes" / "tasks.tape.jsonl")
    assert [e["kind"] for e in tape if e.get("dir") == "s2c" and e.get("method", "").startswith("tasks/")] == [
        "response"] * 4
    done = [e["msg"]["result"] for e in tape if e.get("method") == "tasks/get" and e["kind"] == "response"][-1]
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "Ordered 3 x pens"
