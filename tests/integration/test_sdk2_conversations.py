"""Scripted conversations against the official SDK 2.x (issue 29, item 2): a sampling loop with
tools and URL-mode elicitation, served by `MCPServer` (fixtures/servers/sdk2_asking_server.py),
recorded by `mcptape ci` in both eras (`protocol: both`): on 2025-11-25 the questions are server
requests mid-call, on 2026-07-28 input_required round trips; the answers come from mcptape.yml's
`client.sampling` list (one matched on the request's content, one in order) and
`client.elicitation`.

Each feature: a golden per era; a re-run whose volatile values changed (the answer's time, the
uuid4 elicitationId) that must not drift; a changed question / sign-in URL that must drift, in
both eras.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, ROOT, user_env
from tests.in_process import run_mcptape

ASKING = FIXTURES / "servers" / "sdk2_asking_server.py"
ENV = user_env(PYTHONPATH=str(ROOT))
CONFIG = """\
version: 1
golden_dir: tapes
client:
  capabilities: {{sampling: {{tools: {{}}}}, elicitation: {{url: {{}}}}}}
  sampling:
    - contains: tool_result
      answer: {{role: assistant, model: scripted, stopReason: endTurn, content: {{type: text, text: "It is 5."}}}}
    - {{role: assistant, model: scripted, stopReason: toolUse,
       content: [{{type: tool_use, id: u1, name: add, input: {{a: 2, b: 3}}}}]}}
  elicitation: {{action: accept}}
servers:
  ask:
    command: [{python}, {server}{args}]
    protocol: both
sessions:
  - name: agent
    server: ask
    steps:
      - call: agent
  - name: connect
    server: ask
    steps:
      - call: connect
"""
ERAS = ("2026-07-28", "2025-11-25")


def mcptape(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_mcptape(args, cwd=cwd, env=ENV, timeout=180)


def write(path: Path, *args: str) -> None:
    extra = "".join(f", {json.dumps(a)}" for a in args)
    path.write_text(CONFIG.format(python=sys.executable, server=ASKING, args=extra), encoding="utf-8")


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:-1]]


def verdicts(path: Path) -> dict[str, str]:
    return {s["name"]: s["verdict"] for s in json.loads(path.read_text(encoding="utf-8"))["sessions"]}


def sampling_requests(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the server asked the client's LLM, in either era's form."""
    asked = [e["msg"]["params"] for e in evs if e.get("kind") == "request" and e.get("dir") == "s2c"
             and e.get("method") == "sampling/createMessage"]
    for e in evs:  # 2026-07-28: the questions ride an input_required result
        result = (e.get("msg") or {}).get("result")
        if e.get("dir") == "s2c" and isinstance(result, dict) and result.get("resultType") == "input_required":
            asked += [r["params"] for r in result["inputRequests"].values() if r["method"] == "sampling/createMessage"]
    return asked


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sdk2conv")
    write(root / "mcptape.yml")
    write(root / "question.yml", "--question", "What is 3+4?")
    write(root / "signin.yml", "--sign-in", "https://auth.example/v2/sign-in")
    update = mcptape("ci", "--update-golden", cwd=root)
    assert update.returncode == 0, update.stdout + update.stderr
    return root


def test_the_sampling_loop_with_tools_is_answered_and_recorded_in_both_eras(project: Path) -> None:
    for version in ERAS:
        evs = events(project / "tapes" / f"agent@{version}.tape.jsonl")
        first, second = sampling_requests(evs)
        assert first["tools"][0]["name"] == "add" and first["toolChoice"] == {"mode": "auto"}
        assert second["messages"][1]["content"][0]["type"] == "tool_use"  # tool_use → tool_result → answer
        assert second["messages"][2]["content"][0]["type"] == "tool_result"
        assert second["messages"][2]["content"][0]["content"][0]["text"] == "5.0"
        [answer] = [e for e in evs if e.get("kind") == "response" and e.get("method") == "tools/call"
                    and (e["msg"]["result"].get("resultType") or "complete") == "complete"]
        assert answer["msg"]["result"]["structuredContent"]["result"] == "It is 5. (answered <TIMESTAMP>)"


def test_url_elicitation_is_answered_and_the_call_sent_again_in_both_eras(project: Path) -> None:
    for version in ERAS:
        evs = events(project / "tapes" / f"connect@{version}.tape.jsonl")
        calls = [e for e in evs if e.get("method") == "tools/call" and e["dir"] == "s2c"]
        assert [e["kind"] for e in calls] == ["error", "response"]
        error = calls[0]["msg"]["error"]
        assert error["code"] == -32042
        assert error["data"]["elicitations"][0] == {"mode": "url", "message": "Sign in to continue.",
                                                    "url": "https://auth.example/sign-in", "elicitationId": "<UUID>"}
        assert calls[1]["msg"]["result"]["structuredContent"] == {"result": "connected"}


def test_volatile_values_do_not_drift_a_changed_question_or_url_does_in_both_eras(project: Path) -> None:
    # Every run the server stamps a new time and draws a new elicitationId (the goldens hold their
    # placeholders, above): the unchanged server is green.
    same = mcptape("ci", "--json=same.json", cwd=project)
    assert same.returncode == 0, same.stdout + same.stderr
    assert set(verdicts(project / "same.json").values()) == {"same"}

    question = mcptape("ci", "-c", "question.yml", "--json=question.json", cwd=project)
    assert question.returncode == 1, question.stdout + question.stderr
    got = verdicts(project / "question.json")
    assert {got[f"agent@{v}"] for v in ERAS} == {"output"}
    assert {got[f"connect@{v}"] for v in ERAS} == {"same"}
    # Each era says what the server asked differently: as a changed server request (2025-11-25) and a
    # changed input request of the input_required answer (2026-07-28).
    assert ('agent@2025-11-25 · step 1 · tools/call agent · server_request[sampling/createMessage].params.'
            'messages[0].content.text "What is 2+3?" → "What is 3+4?"') in question.stdout
    assert ('agent@2026-07-28 · step 1 · tools/call agent · result.inputRequests["__main__:first_turn"].params.'
            'messages[0].content.text "What is 2+3?" → "What is 3+4?"') in question.stdout

    signin = mcptape("ci", "-c", "signin.yml", "--json=signin.json", cwd=project)
    assert signin.returncode == 1, signin.stdout + signin.stderr
    got = verdicts(project / "signin.json")
    assert {got[f"connect@{v}"] for v in ERAS} == {"output"}
    assert {got[f"agent@{v}"] for v in ERAS} == {"same"}
    for version in ERAS:  # each era names the changed URL under its own session
        assert (f"connect@{version} · step 1 · tools/call connect · error.data.elicitations[0].url "
                '"https://auth.example/sign-in" → "https://auth.example/v2/sign-in"') in signin.stdout
