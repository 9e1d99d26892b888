"""Scripted conversations for the server's own requests (issue 29, item 2): mcptape/config/answers.py
and the scripted client answering a real server's sampling loop with tools (fixtures/servers/asking_server.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcptape.config.answers import DECLINE, NoAnswer, Script, holds
from mcptape.config.models import ClientSettings, Step
from mcptape.diff.compare import diff_tapes
from mcptape.errors import ConfigError
from mcptape.live.client import record_session
from mcptape.tape.format import Tape, make_header
from mcptape.transports.stdio import StdioTransport, minimal_env

ASKING = [sys.executable, str(Path(__file__).parents[2] / "fixtures" / "servers" / "asking_server.py")]
TOOL_USE = {"role": "assistant", "model": "scripted", "stopReason": "toolUse",
            "content": [{"type": "tool_use", "id": "u1", "name": "add", "input": {"a": 2, "b": 3}}]}
FINAL = {"role": "assistant", "model": "scripted", "stopReason": "endTurn", "content": {"type": "text", "text": "It is 5."}}


def test_answers_are_chosen_in_order_or_by_what_the_request_holds() -> None:
    script = Script("sampling/createMessage", [TOOL_USE, FINAL])
    assert [script.answer({"n": 1}), script.answer({"n": 2})] == [TOOL_USE, FINAL]
    with pytest.raises(NoAnswer, match=r'sampling/createMessage request #3 \{"n":3\} fits no answer in `client.sampling`'):
        script.answer({"n": 3})
    matched = Script("sampling/createMessage", [
        {"contains": "tool_result", "answer": FINAL},
        {"when": {"messages": [{"role": "user"}]}, "answer": TOOL_USE},
    ])
    first = {"messages": [{"role": "user", "content": {"type": "text", "text": "q"}}]}
    later = {"messages": [*first["messages"], {"role": "user", "content": [{"type": "tool_result", "toolUseId": "u1"}]}]}
    assert matched.answer(first) == TOOL_USE and matched.answer(later) == FINAL and matched.answer(first) == TOOL_USE
    with pytest.raises(NoAnswer):
        matched.answer({"messages": [{"role": "assistant"}]})  # no item holds it, none in order
    assert Script("elicitation/create", [{"contains": "secret", "decline": True}, {"action": "accept"}]).answer(
        {"message": "a secret?"}) == DECLINE
    assert Script("sampling/createMessage", FINAL).answer({}) == FINAL  # one answer serves every request, as before
    assert holds({"a": [1]}, {"a": [2, 1], "b": 0}) and not holds({"a": True}, {"a": 1})


def test_a_matched_answer_of_the_wrong_shape_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="unknown key 'answr'"):
        ClientSettings(sampling=[{"when": {}, "answr": {}}])
    with pytest.raises(ValueError, match="needs `answer"):
        ClientSettings(sampling=[{"when": {}}])


def agent_session(settings: ClientSettings, *args: str) -> Any:
    transport = StdioTransport([*ASKING, *args], env=minimal_env())
    return record_session(transport, [Step(action="call", target="agent")], settings, session="agent", step_timeout=10.0)


def sampling_requests(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["msg"]["params"] for e in events if e.get("dir") == "s2c" and e.get("method") == "sampling/createMessage"
            and e.get("kind") == "request"]


def answer_text(events: list[dict[str, Any]]) -> str:
    [answer] = [e for e in events if e.get("kind") == "response" and e.get("method") == "tools/call"]
    return str(answer["msg"]["result"]["content"][0]["text"])


def as_tape(rec: Any) -> Tape:
    return Tape(make_header("agent", protocol=rec.protocol), rec.events, {"mcptape": "end", "events": len(rec.events)})


CONVERSATION = ClientSettings(capabilities={"sampling": {"tools": {}}}, sampling=[TOOL_USE, FINAL])


def test_a_sampling_loop_with_tools_is_answered_turn_by_turn_and_recorded() -> None:
    rec = agent_session(CONVERSATION)
    assert rec.error is None, rec.error
    assert answer_text(rec.events) == "It is 5. (2 rounds)"
    first, second = sampling_requests(rec.events)
    assert first["tools"][0]["name"] == "add" and first["toolChoice"] == {"mode": "auto"}
    assert second["messages"][-1]["content"] == [{"type": "tool_result", "toolUseId": "u1", "content": [{"type": "text", "text": "5"}]}]
    # The same conversation again: the same tape (no drift); the server asking another question is drift.
    assert diff_tapes(as_tape(rec), as_tape(agent_session(CONVERSATION))).verdict == "same"
    changed = diff_tapes(as_tape(rec), as_tape(agent_session(CONVERSATION, "--question", "What is 2+4?")))
    assert changed.verdict != "same"
    # Each turn asked another question: said as what changed in each request, not as requests gone and new.
    asked = [(f.path, f.before, f.after) for d in changed.drifts for f in d.findings if f.kind == "server_request_changed"]
    assert asked == [("server_request[sampling/createMessage].params.messages[0].content.text", "What is 2+3?", "What is 2+4?")] * 2
    assert not [f for d in changed.drifts for f in d.findings if f.kind in ("server_request_added", "server_request_removed")]


def test_a_request_no_answer_fits_stops_the_session_naming_it() -> None:
    rec = agent_session(ClientSettings(capabilities={"sampling": {"tools": {}}}, sampling=[TOOL_USE]))
    assert isinstance(rec.error, ConfigError)
    message = str(rec.error)
    assert "sampling/createMessage request #2" in message and "tool_result" in message and "client.sampling" in message
    # Matched on content instead of order: the loop runs to its end.
    matched = ClientSettings(capabilities={"sampling": {"tools": {}}}, sampling=[
        {"contains": "tool_result", "answer": FINAL}, {"contains": "What is", "answer": TOOL_USE}])
    done = agent_session(matched)
    assert done.error is None and answer_text(done.events) == "It is 5. (2 rounds)"


def connect_session(settings: ClientSettings, *args: str) -> Any:
    transport = StdioTransport([*ASKING, *args], env=minimal_env())
    return record_session(transport, [Step(action="call", target="connect")], settings, session="connect", step_timeout=10.0)


SIGN_IN = ClientSettings(capabilities={"elicitation": {"url": {}}},
                         elicitation=[{"when": {"mode": "url"}, "answer": {"action": "accept"}}])


def test_url_elicitation_required_is_answered_and_the_call_sent_again() -> None:
    rec = connect_session(SIGN_IN)
    assert rec.error is None, rec.error
    answers = [e for e in rec.events if e.get("method") == "tools/call" and e.get("kind") in ("response", "error")]
    assert [a["kind"] for a in answers] == ["error", "response"] and all(a.get("step") == 1 for a in answers)
    assert answers[0]["msg"]["error"]["code"] == -32042 and answer_text(rec.events) == "connected"
    assert diff_tapes(as_tape(rec), as_tape(connect_session(SIGN_IN))).verdict == "same"
    # Another URL to visit is the server's change.
    moved = diff_tapes(as_tape(rec), as_tape(connect_session(SIGN_IN, "--sign-in", "https://auth.example/other")))
    assert moved.verdict != "same" and "auth.example/other" in json.dumps([d.one_line() for d in moved.drifts])
    # Not accepted (no elicitation answer: declined): the -32042 is the step's answer, and a note says why.
    declined = connect_session(ClientSettings())
    assert declined.error is None
    assert [e["kind"] for e in declined.events if e.get("method") == "tools/call" and e.get("kind") != "request"] == ["error"]
    assert any(e.get("kind") == "note" and e.get("what") == "url_elicitation" for e in declined.events)
