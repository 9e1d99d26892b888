"""Play of a tape written verbatim: lines not parsed until needed, byte-identical requests matched
without parsing. Whatever the shortcut, the answers must be the ones the general path gives.

Each case records a random session (ids of several shapes, repeats, progress tokens, nested
"msg" keys, non-ASCII and lone-surrogate text, non-compact `raw` lines, server notifications and
requests, unanswered calls), writes it with tape_bytes (so its crc32 marks it verbatim), and
replays random client scripts four ways: streamed with LazyEvents and byte-identical lines (the
fast path), streamed with each line followed by a space (same message, never byte-identical: the
general path), and from the whole tape loaded as plain dicts, with and without the space (`raw`
lines match by bytes there). All four must answer alike.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcptape.jsonrpc import dumps  # as MCP peers write JSON: compact, ASCII-escaped only for lone surrogates
from mcptape.replay.engine import ReplayEngine, load_tape
from mcptape.tape.events import EventBuilder
from mcptape.tape.format import make_header, tape_bytes
from mcptape.tape.reader import LazyEvent, TapeStream, lazy_event, written_verbatim
from tests.conftest import mcptape_command

IDS: list[Any] = [1, 2, 7, 10**20, -3, "a", 'q"uote', "back\\slash", "é", "\u2028"]
TEXTS = ["3", "héllo", "tab\there", "nul\u0000", "\ud800lone", '{"msg":1}', "line\nbreak"]


def _random_session(rng: random.Random) -> tuple[list[tuple[str, str]], list[str]]:
    """(direction, wire text) lines of a random session, and the client's request lines in order."""
    wire: list[tuple[str, str]] = []
    requests: list[str] = []
    used: set[str] = set()
    for n in range(rng.randint(1, 9)):
        msg_id = rng.choice([i for i in IDS if json.dumps(i) not in used] or [1000 + n])
        used.add(json.dumps(msg_id))
        method = rng.choice(["tools/call", "tools/call", "resources/read", "prompts/get"])
        params: dict[str, Any] = {"name": rng.choice(["add", "echo"]), "arguments": {"a": rng.randint(0, 2)}}
        if rng.random() < 0.2:
            params["arguments"]["msg"] = rng.choice(TEXTS)  # a nested "msg" key in the echoed params
        if rng.random() < 0.3:
            params["arguments"]["t"] = rng.choice(TEXTS)  # a lone surrogate here escapes the whole answer line
        if rng.random() < 0.2:
            params["_meta"] = {"progressToken": rng.choice(["tok", 5])}
        msg = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        text = dumps(msg) if rng.random() < 0.8 else json.dumps(msg)  # json.dumps: spaced, a `raw` line
        wire.append(("c2s", text))
        requests.append(text)
        if rng.random() < 0.3:
            token = params.get("_meta", {}).get("progressToken", "other")
            note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1}}
            wire.append(("s2c", dumps(note)))
        if rng.random() < 0.15:
            sampling = {"jsonrpc": "2.0", "id": f"s{n}", "method": "sampling/createMessage", "params": {"n": n}}
            wire.append(("s2c", dumps(sampling)))
            wire.append(("c2s", dumps({"jsonrpc": "2.0", "id": f"s{n}", "result": {"ok": n}})))
        if rng.random() < 0.1:
            continue  # never answered
        if rng.random() < 0.2:
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32602, "message": "bad"}}
        else:
            result: dict[str, Any] = {"content": [{"type": "text", "text": rng.choice(TEXTS)}]}
            if rng.random() < 0.2:
                result["msg"] = {"msg": 1}  # "msg" keys inside the answer, too
            answer = {"jsonrpc": "2.0", "id": msg_id, "result": result}
        wire.append(("s2c", dumps(answer) if rng.random() < 0.9 else json.dumps(answer)))
        if rng.random() < 0.2:
            wire.append(("s2c", dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}})))
    return wire, requests


def _write(path: Path, wire: list[tuple[str, str]], steps: bool = False) -> None:
    """The tape of `wire`; with `steps`, every event carries `step` after msg, as the scripted client writes them."""
    builder = EventBuilder()
    events = [builder.line(d, t.encode("utf-8", "surrogatepass")) for d, t in wire]
    if steps:
        for n, event in enumerate(events):
            event["step"] = n // 3 + 1
    path.write_bytes(tape_bytes(make_header("v"), events))


def _script(rng: random.Random, requests: list[str]) -> list[str]:
    """A client's lines: the recorded requests in order, shuffled, with other ids, repeated, or missing."""
    lines = list(requests)
    style = rng.randrange(4)
    if style == 1:
        rng.shuffle(lines)
    elif style == 2:
        lines = [dumps({**json.loads(x), "id": 500 + k}) if rng.random() < 0.5 else x for k, x in enumerate(lines)]
    elif style == 3:
        lines += rng.sample(lines, k=min(2, len(lines)))  # asked twice: the second is a miss
    if rng.random() < 0.3:
        lines.append(dumps({"jsonrpc": "2.0", "id": 99, "result": {"ok": 0}}))  # answers a server request
        lines.append(dumps({"jsonrpc": "2.0", "id": "s0", "result": {"ok": 0}}))
    return lines


def _replay(engine: ReplayEngine, lines: list[str], suffix: str) -> tuple[list[list[str]], dict[str, Any]]:
    answers = [engine.pending_startup()]
    for line in lines:
        answers.append(engine.handle(line + suffix))
    return answers, engine.report().to_dict()


@pytest.mark.parametrize("seed", range(40))
def test_verbatim_play_answers_exactly_as_the_general_path(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    # Tiny batches, so requests and answers land on both sides of a batch's end.
    monkeypatch.setattr(TapeStream, "FIRST_BATCH", rng.randint(1, 3))
    monkeypatch.setattr(TapeStream, "MAX_BATCH", 4)
    for case in range(15):
        wire, requests = _random_session(rng)
        path = tmp_path / f"{case}.tape.jsonl"
        _write(path, wire, steps=rng.random() < 0.3)
        assert written_verbatim(path.read_bytes())
        script = _script(rng, requests)

        stream = TapeStream(str(path))
        assert stream.verbatim
        if not stream.streamable:
            continue  # the engine names what is wrong with it from the whole tape (tested elsewhere)
        fast = _replay(ReplayEngine(stream.tape, stream=stream), script, "")
        slow_stream = TapeStream(str(path))
        general = _replay(ReplayEngine(slow_stream.tape, stream=slow_stream), script, " ")
        loaded = _replay(ReplayEngine(load_tape(str(path))), script, " ")
        loaded_fast = _replay(ReplayEngine(load_tape(str(path))), script, "")  # `raw` lines match by bytes
        assert fast == general == loaded == loaded_fast, (seed, case, wire, script)


def test_requests_in_recorded_order_take_the_fast_path_without_parsing(tmp_path: Path) -> None:
    rng = random.Random(1)
    wire: list[tuple[str, str]] = []
    for i in range(1, 201):
        wire.append(("c2s", dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"n": rng.random()}})))
        wire.append(("s2c", dumps({"jsonrpc": "2.0", "id": i, "result": {"n": i}})))
    path = tmp_path / "t.tape.jsonl"
    _write(path, wire)
    stream = TapeStream(str(path))
    engine = ReplayEngine(stream.tape, stream=stream)
    for direction, text in wire:
        if direction == "c2s":
            [answer] = engine.handle(text)
            assert json.loads(answer)["id"] == json.loads(text)["id"]
    events = stream.tape.events
    assert len(events) == 400 and all(type(ev) is LazyEvent for ev in events)
    assert not any(ev.line is None for ev in events if type(ev) is LazyEvent)  # none was parsed
    assert not engine.index.exact  # nor a request keyed
    assert engine.report().to_dict()["answered"] == 200


def test_lazy_event_reads_the_head_and_parses_the_rest_at_first_use() -> None:
    builder = EventBuilder()
    request = {"jsonrpc": "2.0", "id": "x\"1", "method": "tools/call", "params": {"msg": "a", "b": "é"}}
    builder.line("c2s", dumps(request).encode())
    answer = {"jsonrpc": "2.0", "id": "x\"1", "result": {"ok": True}}
    event = builder.line("s2c", dumps(answer).encode())
    line = json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()
    lazy = lazy_event(line)
    assert lazy is not None and lazy.wire == dumps(answer)
    assert dict.copy(lazy) == {"kind": "response", "dir": "s2c", "id": 'x"1', "method": "tools/call"}
    assert lazy.line is not None and lazy.get("kind") == "response"  # the head: still unparsed
    assert lazy.get("params") == request["params"] and lazy.line is None
    assert lazy == event and "msg" in lazy and lazy["msg"] == answer
    # The answer holds a "msg" key of its own after a comma: ambiguous by bytes, so that line is parsed.
    event["msg"]["result"] = {"ok": 1, "msg": 1}
    assert lazy_event(json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()) is None
    event["msg"]["result"] = {"msg": 1}  # a first key follows `{`, not `,`: no doubt where msg starts
    again = lazy_event(json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode())
    assert again is not None and again.wire == dumps(event["msg"])
    # Lines that are not request or answer heads in the writer's order are parsed as before.
    assert lazy_event(b'{"kind":"notification","dir":"s2c","method":"x","msg":{"jsonrpc":"2.0","method":"x"}}') is None
    assert lazy_event(b'{"kind":"request","dir":"c2s","id":1.5,"method":"x","msg":{}}') is None
    assert lazy_event(b'{"kind":"request","dir":"c2s","id":1,"method":"x","msg":{},"raw":"{ }"}') is None
    # The scripted client's step follows msg; a nested "step" inside msg is part of it.
    stepped = lazy_event(b'{"kind":"request","dir":"c2s","id":1,"method":"x","msg":{"p":{"q":{},"step":2}},"step":12}')
    assert stepped is not None and stepped.wire == '{"p":{"q":{},"step":2}}'
    assert lazy_event(b'{"kind":"request","dir":"c2s","id":1,"method":"x","msg":{"p":{},"step":2},"raw":"{}","step":1}') is None


def test_message_events_keep_msg_last_but_for_raw_and_step(tmp_path: Path) -> None:
    """The key order lazy_event relies on, in tapes the scripted client recorded (fixtures/example)."""
    tapes = sorted((Path(__file__).parents[2] / "fixtures" / "example" / "tapes").glob("*.tape.jsonl"))
    assert tapes
    seen = 0
    for tape in tapes:
        for line in tape.read_text(encoding="utf-8").splitlines()[1:-1]:
            event = json.loads(line)
            if "msg" in event:
                keys = list(event)
                assert set(keys[keys.index("msg") + 1 :]) <= {"raw", "step"}, (tape.name, keys)
                seen += 1
        # ... and play reads these goldens' requests and answers off their bytes, step and all.
        stream = TapeStream(str(tape))
        assert stream.verbatim
        while stream.read_batch():
            pass
        messages = [ev for ev in stream.tape.events if ev.get("kind") in ("request", "response", "error")]
        assert messages and all(type(ev) is LazyEvent for ev in messages)
    assert seen > 10


def test_only_an_unedited_tape_is_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "t.tape.jsonl"
    _write(path, [("c2s", dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}))])
    data = path.read_bytes()
    assert written_verbatim(data)
    assert not written_verbatim(data.replace(b'"ping"', b'"Ping"'))  # edited by hand
    assert not written_verbatim(data.rstrip(b"\n"))
    assert not written_verbatim(data + b'{"kind":"note","what":"after the footer"}\n')
    lines = data.split(b"\n")
    assert not written_verbatim(b"\n".join(lines[:-2]) + b"\n")  # no footer: cut short


def test_play_sends_the_same_bytes_whether_or_not_the_tape_is_verbatim(tmp_path: Path) -> None:
    """`mcptape play` end to end: the verbatim tape and the same tape edited (so parsed) answer alike."""
    rng = random.Random(7)
    wire: list[tuple[str, str]] = [
        ("c2s", dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})),
        ("s2c", dumps({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18"}})),
    ]
    for i in range(1, 60):
        wire.append(("c2s", dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"a": i}})))
        wire.append(("s2c", dumps({"jsonrpc": "2.0", "id": i, "result": {"text": rng.choice(TEXTS)}})))
    verbatim = tmp_path / "v.tape.jsonl"
    _write(verbatim, wire)
    edited = tmp_path / "e.tape.jsonl"
    edited.write_bytes(verbatim.read_bytes().replace(b'"sha256":"', b'"sha256":"0'))
    assert written_verbatim(verbatim.read_bytes()) and not written_verbatim(edited.read_bytes())
    client = "".join(text + "\n" for d, text in wire if d == "c2s")
    outs = [
        subprocess.run(mcptape_command("play", str(p), *flags), input=client.encode("utf-8", "surrogatepass"),
                       capture_output=True, timeout=60)
        for p, flags in ((verbatim, ()), (edited, ("--allow-edited",)))
    ]
    assert [o.returncode for o in outs] == [0, 0], [o.stderr for o in outs]
    assert outs[0].stdout == outs[1].stdout
    assert outs[0].stdout.count(b"\n") == 60
