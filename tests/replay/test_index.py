"""What a tape holds (replay/index.py's TapeIndex) apart from what one replay did, and the typed
messages the engine sends (replay/outgoing.py), routed by HTTP play without parsing them again."""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any

from mcptape.replay.engine import ReplayEngine
from mcptape.replay.http import serve_http
from mcptape.replay.index import TapeIndex
from tests.replay.test_engine import ask, call, make_tape, note, req, res, text

PROGRESS = note("notifications/progress", {"progressToken": "t1", "progress": 1})
SAMPLING = req(0, "sampling/createMessage", {"messages": [], "maxTokens": 10})
SAMPLED = res(0, {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"})


def _tape() -> Any:
    return make_tape(
        ("c2s", req(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})),
        ("s2c", res(0, {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})),
        ("c2s", note("notifications/initialized")),
        ("c2s", call(1, "add", a=1, b=1)),
        ("s2c", res(1, text("2"))),
        ("c2s", call(2, "add", a=1, b=1)),
        ("s2c", res(2, text("2 again"))),
        ("c2s", req(3, "tools/call", {"name": "slow", "_meta": {"progressToken": "t1"}})),
        ("s2c", PROGRESS),
        ("s2c", res(3, text("done"))),
        ("c2s", call(4, "sample")),
        ("s2c", SAMPLING),
        ("c2s", SAMPLED),
        ("s2c", res(4, text("LLM said hi"))),
    )


def _fingerprint(index: TapeIndex) -> Any:
    """Everything the index says about the tape, as plain values."""
    calls = [(c.index, c.method, c.response, sorted(c.waits), c.key, c.progress_token) for c in index.calls]
    return (
        calls,
        {m: [c.index for c in cs] for m, cs in index.by_method.items()},
        {k: [c.index for c in cs] for k, cs in index.exact.items()},
        {t: [c.index for c in cs] for t, cs in index.verbatim.items()},
        dict(index.anchored),
        list(index.startup),
        dict(index.notifications),
        dict(index.answer_of),
        {i: c.index for i, c in index.progress_owner.items()},
        sorted(index.replayable_exits),
    )


def test_sessions_share_one_index_and_each_keeps_its_own_state() -> None:
    first = ReplayEngine(_tape())
    second = first.fresh()
    assert second.index is first.index and first.index.shared  # indexed once, not once per HTTP session
    assert ask(first, call(7, "add", a=1, b=1)) == [res(7, text("2"))]
    assert ask(first, call(8, "add", a=1, b=1)) == [res(8, text("2 again"))]
    assert ask(first, call(9, "add", a=1, b=1))[0]["error"]["data"]["mcptape"] == "replay-miss"
    # What the first session used is its own: the second starts from the first recording.
    assert ask(second, call(7, "add", a=1, b=1)) == [res(7, text("2"))]
    assert len(first.report().misses) == 1 and second.report().misses == []
    assert [u for u in second.report().unused if "add" in u] == ["tools/call add {\"a\":1,\"b\":1} (tape line 7)"]


def test_a_replay_changes_nothing_the_index_says() -> None:
    engine = ReplayEngine(_tape())
    for method in list(engine.index.by_method):
        engine.index.key_calls(method)  # keys are a cache filled at first need: fill them all first
    before = _fingerprint(engine.index)
    ask(engine, req(10, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}))
    engine.handle(json.dumps(note("notifications/initialized")))
    ask(engine, call(11, "add", a=1, b=1))
    ask(engine, call(12, "add", a=1, b=1))
    assert ask(engine, req(13, "tools/call", {"name": "slow", "_meta": {"progressToken": "live"}}))[0] == note(
        "notifications/progress", {"progressToken": "live", "progress": 1}
    )
    assert ask(engine, call(14, "sample")) == [SAMPLING]
    assert ask(engine, SAMPLED) == [res(14, text("LLM said hi"))]
    assert engine.report().exit_code == 0 and engine.report().unused == []
    assert _fingerprint(engine.index) == before
    # A new replay over that same index serves the whole session again.
    again = ReplayEngine(engine.tape, index=engine.index)
    assert ask(again, call(21, "add", a=1, b=1)) == [res(21, text("2"))]
    assert ask(again, req(22, "tools/call", {"name": "slow", "_meta": {"progressToken": 5}}))[0]["params"]["progressToken"] == 5


def test_exchange_says_which_message_answers_which_id() -> None:
    engine = ReplayEngine(_tape())
    sent = engine.exchange(json.dumps(req("é\n1", "tools/call", {"name": "slow", "_meta": {"progressToken": "x"}})))
    assert [(json.loads(o.line)["method"] if not o.answer else "answer", o.answer, o.id) for o in sent] == [
        ("notifications/progress", False, None),
        ("answer", True, "é\n1"),
    ]
    assert json.loads(sent[1].line)["id"] == "é\n1"
    # A server request goes out as no answer; the tool's answer follows the client's.
    [issued] = engine.exchange(json.dumps(call(5, "sample")))
    assert (json.loads(issued.line), issued.answer) == (SAMPLING, False)
    [answered] = engine.exchange(json.dumps(SAMPLED))
    assert (answered.answer, answered.id) == (True, 5)
    # Answers play makes up are typed too: a miss, a ping, a parse error.
    [miss] = engine.exchange(json.dumps(call(None, "nope")))
    [ping] = engine.exchange(json.dumps(req(6, "ping")))
    [parse] = engine.exchange("{not json")
    assert [(o.answer, o.id) for o in (miss, ping, parse)] == [(True, None), (True, 6), (True, None)]
    assert json.loads(ping.line) == res(6, {})
    # handle() is exchange() as lines.
    other = ReplayEngine(_tape())
    line = json.dumps(call(1, "add", a=1, b=1))
    assert other.handle(line) == [o.line for o in ReplayEngine(_tape()).exchange(line)]


def _post(port: int, msg: dict[str, Any], session: str | None = None) -> tuple[int, str, str, str | None]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", "/mcp", json.dumps(msg), headers)
    reply = conn.getresponse()
    body = reply.read().decode("utf-8")
    conn.close()
    return reply.status, reply.getheader("Content-Type") or "", body, reply.getheader("Mcp-Session-Id")


def test_http_play_routes_each_answer_to_the_request_it_answers_by_its_type() -> None:
    """A string id with non-ASCII and control characters (whose JSON key differs from its text)
    still finds its request's stream: the answer comes back as JSON, and a notification sent
    with it as an SSE event before it, the stream then ended."""
    urls: list[str] = []
    ready = threading.Event()
    stop = threading.Event()

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    engines: list[Any] = []
    server = threading.Thread(
        target=lambda: engines.extend(serve_http(ReplayEngine(_tape()), "127.0.0.1:0", on_ready=on_ready, stop=stop)),
        daemon=True,
    )
    server.start()
    try:
        assert ready.wait(10)
        port = int(urls[0].rsplit(":", 1)[1].split("/")[0])
        status, ctype, body, session = _post(port, req("init-é", "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}))
        assert (status, ctype) == (200, "application/json") and json.loads(body)["id"] == "init-é"
        status, ctype, body, _ = _post(port, call("ü\t2", "add", a=1, b=1), session)
        assert (status, ctype) == (200, "application/json") and json.loads(body) == res("ü\t2", text("2"))
        status, ctype, body, _ = _post(port, req("ß", "tools/call", {"name": "slow", "_meta": {"progressToken": 9}}), session)
        assert (status, ctype) == (200, "text/event-stream")
        events = [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]
        assert events == [note("notifications/progress", {"progressToken": 9, "progress": 1}), res("ß", text("done"))]
    finally:
        stop.set()
        server.join(10)
    assert not server.is_alive() and engines[0].report().exit_code == 0


# --- a tape of several HTTP sessions (rec --listen, format 3) ---------------------------------------


def _sessions_tape() -> Any:
    """Two HTTP sessions, interleaved, each numbering its requests (and its server its requests) from 0."""
    from mcptape.tape.events import EventBuilder
    from mcptape.tape.format import Tape, make_header

    builders = {1: EventBuilder(), 2: EventBuilder()}
    init = req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    hello = res(0, {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})
    lines = [
        (1, "c2s", init), (1, "s2c", hello), (2, "c2s", init), (2, "s2c", hello),
        (1, "c2s", call(1, "sample", prompt="a")), (2, "c2s", call(1, "sample", prompt="b")),
        (2, "s2c", req(0, "sampling/createMessage", {"messages": [{"role": "user", "content": "b"}]})),
        (1, "s2c", req(0, "sampling/createMessage", {"messages": [{"role": "user", "content": "a"}]})),
        (1, "c2s", res(0, {"content": {"type": "text", "text": "from a"}})),
        (2, "c2s", res(0, {"content": {"type": "text", "text": "from b"}})),
        (2, "s2c", res(1, text("LLM said: from b"))), (1, "s2c", res(1, text("LLM said: from a"))),
    ]
    events = []
    for session, direction, msg in lines:
        event = builders[session].line(direction, json.dumps(msg, separators=(",", ":")).encode())
        event["session"] = session
        if direction == "s2c":
            event["sse"] = True
        events.append(event)
    return Tape(header=make_header("t", transport="http", sessions=True), events=events,
                footer={"mcptape": "end", "events": len(events)})


def test_a_tape_of_sessions_pairs_ids_within_each_session_and_replays_each_from_its_own_slice() -> None:
    tape = _sessions_tape()
    assert tape.header["format"] == 3
    index = TapeIndex(tape)  # the same server request id in two sessions is no conflict
    answers = {index.events[c.response]["msg"]["result"]["content"][0]["text"]
               for c in index.by_method["tools/call"] if c.response is not None}
    assert len(answers) == len(index.by_method["tools/call"])
    assert answers == {"LLM said: from a", "LLM said: from b"}  # each call paired with its own session's answer

    first = ReplayEngine(tape, index=index)
    second = first.fresh()
    for engine, prompt, said in ((second, "b", "from b"), (first, "a", "from a")):
        ask(engine, req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}))
        out = ask(engine, call(7, "sample", prompt=prompt))
        assert [m.get("method") for m in out] == ["sampling/createMessage"]
        assert out[0]["params"]["messages"][0]["content"] == prompt  # this session's server request
        done = ask(engine, res(out[0]["id"], {"content": {"type": "text", "text": said}}))
        assert done == [{"jsonrpc": "2.0", "id": 7, "result": text(f"LLM said: {said}")}]
        assert engine.answered_in_sse(7)  # recorded in an SSE stream: HTTP play answers so
        assert engine.report().misses == []

    # Without the sessions (an older tape's reading), the same ids collide: the index refuses it.
    tape.header["format"] = 2
    import pytest

    from mcptape.errors import ReplayError

    with pytest.raises(ReplayError, match="reused request id 0"):
        TapeIndex(tape)


def test_diff_names_the_http_session_of_a_drifted_call_and_pairs_answers_within_sessions() -> None:
    from mcptape.diff.compare import diff_tapes

    golden, fresh = _sessions_tape(), _sessions_tape()
    assert diff_tapes(golden, fresh).exit_code == 0
    answer = next(e for e in fresh.events if e.get("session") == 2 and e["kind"] == "response" and e["id"] == 1)
    answer["msg"]["result"]["content"][0]["text"] = "LLM said: changed"
    result = diff_tapes(golden, fresh)
    assert result.exit_code == 1
    assert [d.call.session for d in result.drifts if d.call] == [2]
    assert result.drifts[0].one_line().startswith("HTTP session 2 · ")
    assert "session" in result.to_dict()["drifts"][0]["call"]
